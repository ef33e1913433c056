#pragma once
// A RoBERTa encoder with its head, built from a Checkpoint, that runs forward passes on CPU in the
// modes of DESIGN.md: `fp8` (quantized Linears quantize their inputs as the checkpoint declares)
// and `dequant` (dequantized weights, float activations). The `reference` mode is another
// EncoderModel built from the float checkpoint.
//
// Owns: the checkpoint (memory-mapped) and the compute weights, decoded once at load into float32
// in the layout the matmuls use; float32 tensors of the file are used in place, not copied.
// Threading: not to be used from two threads at once; compute uses LibTorch's intra-op pool
// (see setComputeThreads). Errors: scalescope::Error naming the tensor/module; Cancelled when the
// Progress cancel flag is raised.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/inference_backend.h"

namespace scalescope {

class EncoderModel : public InferenceBackend {
public:
    static std::unique_ptr<EncoderModel> load(const std::string& dir, const Progress& progress = {});
    static std::unique_ptr<EncoderModel> load(std::shared_ptr<const Checkpoint> checkpoint,
                                              const Progress& progress = {});
    ~EncoderModel();

    const Checkpoint& checkpoint() const override;
    bool isQuantized() const;                 // has at least one FP8 Linear
    const std::vector<LinearInfo>& linears() const override;
    std::vector<std::string> capturePoints() const override;
    ForwardResult forward(const EncoderInputs& inputs, const ForwardOptions& options,
                          const Progress& progress = {}) override;
    std::string deviceName() const override { return "CPU (in-process)"; }

private:
    EncoderModel();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Sets LibTorch's intra-op threads; 0 means one per core. Call once at start-up.
void setComputeThreads(int threads);
int computeThreads();

} // namespace scalescope

namespace scalescope {

// Times a float32 [m x k] x [k x n] matmul through the engine's BLAS and returns the best GFLOP/s
// over `repeats` runs: the machine's attainable rate for the forward's shapes (benchmarks, About).
double measureMatmulGflops(int64_t m, int64_t n, int64_t k, int repeats);

} // namespace scalescope
