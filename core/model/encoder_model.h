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

#include "common/progress.h"
#include "common/tensor_data.h"
#include "model/checkpoint.h"

namespace scalescope {

enum class RunMode { Fp8, Dequant };
const char* runModeName(RunMode mode); // "fp8", "dequant"

// How a Linear runs in `fp8` mode.
enum class ActivationQuantization { None, DynamicPerToken, StaticPerTensor, DynamicPerTensor };

struct LinearInfo {
    std::string module;            // roberta.encoder.layer.0.attention.self.query
    int64_t inFeatures = 0;
    int64_t outFeatures = 0;
    bool quantized = false;        // FP8 weight
    std::string weightStrategy;    // channel | tensor | "" when not quantized
    ActivationQuantization activations = ActivationQuantization::None;
    float inputScale = 0;          // static per-tensor scale, 0 otherwise
    std::string group;             // config group name
};

struct EncoderInputs {
    // One row per sequence; rows may differ in length (they are padded with pad_token_id).
    std::vector<std::vector<int64_t>> inputIds;
    // Optional; 1 for real tokens, 0 for padding. Defaults to 1 for every given id.
    std::vector<std::vector<int64_t>> attentionMask;
    // MaskedLM only: when non-empty, logits are computed only at these (row, position) pairs and
    // "logits" has shape [count, vocab]; otherwise at every position, [batch, seq, vocab].
    std::vector<std::pair<int, int>> logitPositions;
};

// Which capture points a forward records. Names are capture point names ("<module>.input",
// "<module>.output", "roberta.embeddings.output", "roberta.encoder.layer.N.output") or module names,
// which select both of the module's points.
struct CaptureRequest {
    bool all = false;
    std::vector<std::string> names;
    bool any() const { return all || !names.empty(); }
};

// Per quantized Linear, in `fp8` mode, when ForwardOptions::activationStatistics is set.
struct ActivationStatistics {
    std::string module;
    float amax = 0;               // max |x| over the Linear's input (real tokens)
    float inputScale = 0;         // static scale, or the largest dynamic scale
    int64_t elements = 0;
    int64_t clipped = 0;          // |x / s| > 448
    int64_t flushedToZero = 0;    // x != 0 but the FP8 code is zero
    int64_t subnormal = 0;        // the FP8 code is subnormal and non-zero
};

struct ForwardOptions {
    RunMode mode = RunMode::Fp8;
    CaptureRequest capture;
    bool activationStatistics = false;
    // Record max |x| over real tokens of every Linear's input (quantized or not), for calibration.
    bool linearInputAmax = false;
};

struct ForwardResult {
    // QA: "start_logits", "end_logits" [batch, seq]; MaskedLM: "logits".
    std::vector<NamedTensor> outputs;
    std::vector<NamedTensor> captures; // in execution order; padded positions included
    std::vector<ActivationStatistics> activationStatistics;
    std::vector<std::pair<std::string, float>> linearInputAmax;
    double elapsedMs = 0;
};

class EncoderModel {
public:
    static std::unique_ptr<EncoderModel> load(const std::string& dir, const Progress& progress = {});
    static std::unique_ptr<EncoderModel> load(std::shared_ptr<const Checkpoint> checkpoint,
                                              const Progress& progress = {});
    ~EncoderModel();

    const Checkpoint& checkpoint() const;
    const ModelConfig& config() const;
    bool isQuantized() const;                 // has at least one FP8 Linear
    const std::vector<LinearInfo>& linears() const;
    // Every capture point in execution order.
    std::vector<std::string> capturePoints() const;

    ForwardResult forward(const EncoderInputs& inputs, const ForwardOptions& options,
                          const Progress& progress = {});

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
