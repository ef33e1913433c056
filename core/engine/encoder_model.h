#pragma once
// An encoder with its head, built from a Checkpoint, that runs forward passes on CPU in the modes
// of docs/ARCHITECTURE.md: `fp8` (quantized Linears quantize their inputs as the plan declares) and `dequant`
// (dequantized weights, float activations), with per-Linear precision overrides. The `reference`
// mode is another EncoderModel built from the float checkpoint.
//
// Owns: the checkpoint (memory-mapped) and the encoder graph (core/engine) with its weights.
// Threading: not to be used from two threads at once; compute uses the threads set by
// setComputeThreads (engine/compute_threads.h). Errors: scalescope::Error naming the tensor/module;
// Cancelled when the Progress cancel flag is raised.
#include <memory>
#include <string>
#include <vector>

#include "model/inference_backend.h"

namespace scalescope {

class EncoderGraph;

class EncoderModel : public InferenceBackend {
public:
    static std::unique_ptr<EncoderModel> load(const std::string& dir, const Progress& progress = {});
    static std::unique_ptr<EncoderModel> load(std::shared_ptr<const Checkpoint> checkpoint,
                                              const Progress& progress = {});
    ~EncoderModel() override;

    const Checkpoint& checkpoint() const override;
    bool isQuantized() const;                 // has at least one FP8 Linear
    const std::vector<LinearInfo>& linears() const override;
    std::vector<std::string> capturePoints() const override;
    ForwardResult forward(const EncoderInputs& inputs, const ForwardOptions& options,
                          const Progress& progress = {}) override;
    std::string deviceName() const override { return "CPU (in-process)"; }
    bool resumesFromLayer() const override { return true; }

private:
    EncoderModel() = default;
    std::shared_ptr<const Checkpoint> checkpoint_;
    std::unique_ptr<EncoderGraph> graph_;
};

} // namespace scalescope
