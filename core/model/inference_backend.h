#pragma once
// What the tasks (QA, fill-mask, comparison, evaluation) need from a model, whatever runs it: the
// checkpoint it was built from (config, tokenizer), its Linears, its capture points, and forward
// passes. EncoderModel runs in this process with LibTorch; a runner backend (core/device) sends the
// same requests to another process, possibly on an accelerator host.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/progress.h"
#include "common/tensor_data.h"
#include "model/checkpoint.h"
#include "model/linear_plan.h"

namespace scalescope {

struct EncoderInputs {
    // One row per sequence; rows may differ in length (they are padded with pad_token_id).
    std::vector<std::vector<int64_t>> inputIds;
    // Optional; 1 for real tokens, 0 for padding. Defaults to 1 for every given id.
    std::vector<std::vector<int64_t>> attentionMask;
    // MaskedLM only: when non-empty, logits are computed only at these (row, position) pairs and
    // "logits" has shape [count, vocab]; otherwise at every position, [batch, seq, vocab].
    std::vector<std::pair<int, int>> logitPositions;
    // Optional; token type ids (BERT's segment ids). Default 0 for every token.
    std::vector<std::vector<int64_t>> tokenTypeIds;

    // Appends a tokenizer's sequence: its ids, and its type ids once any row has a non-zero one
    // (so an all-zero batch, every RoBERTa input, sends none).
    void addSequence(const Encoding& encoding);
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
    // How FP8 x FP8 products are summed (linear_plan.h): Dl16 is the DL16 twin, with fp8 or fp16
    // only (accumulationProblem); a backend throws that sentence for dequant.
    Accumulation accumulation = Accumulation::Float32;
    // AIU FP8 attention (linear_plan.h attentionRunsFp8: the option, then the overrides per layer).
    // Where it runs, the K and V casts are capture points (EncoderLayout::keyCastModule) and
    // ForwardResult::attentionCasts records them. Honoured in-process; a runner refuses it.
    AttentionPrecision attention = AttentionPrecision::Float;
    // Record the K/V cast capture points in every layer even where attention stays float (there
    // ".output" equals ".input"): the reference of a comparison with an FP8-attention run, so the
    // two sides record the same points.
    bool attentionCastPoints = false;
    PrecisionOverrides overrides;
    CaptureRequest capture;
    bool activationStatistics = false;
    // Record max |x| over real tokens of every Linear's input (quantized or not), for calibration.
    bool linearInputAmax = false;
    // When set, each requested capture point is handed to this callback (row-major float32 data,
    // valid only during the call) instead of being copied into ForwardResult::captures: a
    // comparison measures the run against the stored reference without keeping a second copy.
    // Backends that cannot stream (a runner) call it once per capture after the forward.
    // `sameAs` names an earlier capture point of this forward that was the very same tensor (q, k
    // and v read one input, which is also the previous layer's output), or is "" when there is none
    // or the backend cannot tell: a caller may then share one copy and one set of metrics.
    std::function<void(const std::string& name, const std::vector<int64_t>& shape, const float* data,
                       const std::string& sameAs)>
        onCapture;
    // The "float" override runs the reference's float weights when a reference is loaded:
    // the float checkpoint whose Linears (weight and bias, same names and shapes) replace the
    // dequantized ones of every Linear the overrides run in float. Null: dequantized weights.
    // Honoured in-process; a runner has no reference and keeps the dequantized weights.
    const Checkpoint* floatWeightsFrom = nullptr;
    // Resuming, for runs that repeat a baseline up to a layer (the sensitivity sweep): the encoder
    // starts at layer startLayer (numLayers: only the head) with startHidden as that layer's input,
    // [batch, seq, hidden] as the inputs pad, from a run with the same inputs and mode whose
    // overrides agree on every earlier Linear. The embeddings and the layers before are skipped:
    // captures, checks and statistics cover only what ran. Honoured only where
    // InferenceBackend::resumesFromLayer() says so.
    int startLayer = 0;
    const FloatTensor* startHidden = nullptr;
    // Stopping, for runs measured a layer at a time (compare keeps one layer's reference captures
    // instead of the whole forward's): with stopLayer >= 0 the forward ends before layer stopLayer
    // (numLayers: before the head), puts that layer's input into ForwardResult::stoppedHidden and
    // has no outputs. Honoured where InferenceBackend::resumesFromLayer() says so.
    int stopLayer = -1;
    // Record each layer's input (the embeddings output for layer 0) and, last, the head's input
    // into ForwardResult::layerInputs: the cache a resumed run starts from.
    bool recordLayerInputs = false;
};

// A module whose output held inf or NaN on real tokens, and how many such values.
struct ModuleNonFinite {
    std::string module;
    int64_t count = 0;
};

// A module's output over real tokens against float16's limits (fp16 mode, docs/ARCHITECTURE.md): the largest
// |value| (inf when one overflowed; NaN left out), and how many non-zero values lie below half's
// smallest normal (2^-14), where a float16 device loses precision or flushes to zero.
struct ModuleOutputRange {
    std::string module;
    float maxAbs = 0;
    int64_t belowHalfNormal = 0;
    int64_t elements = 0;
};

// One layer's K or V cast to FP8 in one forward (AIU FP8 attention, numerics/attention_fp8.h), per
// sequence of the batch: what the headroom view (analysis/attention_headroom.h) summarises.
struct AttentionCastRecord {
    std::string module;           // EncoderLayout::keyCastModule or valueCastModule
    int layer = -1;
    bool key = true;              // K (range 200) or V (range 100)
    float range = 0;
    int64_t heads = 0;
    std::vector<float> scales;    // per sequence
    // [sequence * heads + head], over the sequence's real tokens: max |x|, values, values cast to 0
    // (x != 0), values cast to an E4M3 subnormal.
    std::vector<float> headAmax;
    std::vector<int64_t> values, zeros, subnormals;
};

struct ForwardResult {
    // QA: "start_logits", "end_logits" [batch, seq]; MaskedLM: "logits".
    std::vector<NamedTensor> outputs;
    std::vector<NamedTensor> captures; // in execution order; padded positions included
    std::vector<ActivationStatistics> activationStatistics;
    std::vector<std::pair<std::string, float>> linearInputAmax;
    // Modules whose output held inf/NaN on real tokens, in execution order (empty when all finite).
    // Always collected: a non-finite value is never passed on silently.
    std::vector<ModuleNonFinite> nonFinite;
    // Per batch row, the first module whose output held inf/NaN in that row ("" for none); empty
    // when the backend does not report rows (then only `nonFinite` is known).
    std::vector<std::string> firstNonFiniteByRow;
    // Every module output in execution order (in-process always; a runner when it reports them).
    std::vector<ModuleOutputRange> outputRanges;
    // ForwardOptions::recordLayerInputs: numLayers + 1 tensors [batch, seq, hidden] (those before a
    // resumed run's startLayer stay empty).
    std::vector<FloatTensor> layerInputs;
    // Every K/V cast of a forward with FP8 attention, in execution order (K then V per layer).
    std::vector<AttentionCastRecord> attentionCasts;
    // ForwardOptions::stopLayer: the input of the layer it stopped before ([batch, seq, hidden]).
    FloatTensor stoppedHidden;
    double elapsedMs = 0;

    // The first module whose output was not finite, or "" when every output was finite.
    std::string firstNonFinite() const { return nonFinite.empty() ? std::string() : nonFinite.front().module; }

    // The output of that name ("start_logits", "logits"); throws naming it when absent.
    const FloatTensor& output(const std::string& name) const;
};

class InferenceBackend {
public:
    virtual ~InferenceBackend() = default;

    virtual const Checkpoint& checkpoint() const = 0;
    const ModelConfig& config() const { return checkpoint().config(); }
    virtual const std::vector<LinearInfo>& linears() const = 0;
    // Every capture point in execution order.
    virtual std::vector<std::string> capturePoints() const = 0;
    virtual ForwardResult forward(const EncoderInputs& inputs, const ForwardOptions& options,
                                  const Progress& progress = {}) = 0;
    // "CPU (in-process)", or the runner's own name for itself.
    virtual std::string deviceName() const = 0;
    // Whether forward() honours ForwardOptions::startLayer/startHidden/recordLayerInputs.
    virtual bool resumesFromLayer() const { return false; }
};

// What a caller of ForwardOptions::onCapture keeps of one capture: `same`, the tensor it kept for
// the earlier point that `sameAs` names (null when there is none), when that has this shape, so
// q, k and v share one copy of their one input; otherwise a copy of the data.
std::shared_ptr<const FloatTensor> keptCapture(
    std::shared_ptr<const FloatTensor> same, const std::vector<int64_t>& shape, const float* data);

} // namespace scalescope
