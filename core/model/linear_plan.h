#pragma once
// The per-Linear plan: for every Linear of the layout, the quantization_config group that picked it
// and the rule that did, what the checkpoint stores for it (FP8 codes or float), and how it runs in
// each mode, with optional precision overrides (docs/ARCHITECTURE.md "Precision overrides"). Built once per
// checkpoint from the config and the tensor headers; the engine, the runner client, diagnostics,
// scale statistics, quantize, inspect and the GUI all read it instead of deriving schemes again.
// Building never throws for a checkpoint that can be inspected: what would stop a run is kept as
// the Linear's problem sentence, which a run throws. Threading: immutable after build.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/architecture.h"

namespace scalescope {

class TensorStore;
struct ConfigGroup;
struct GroupMatch;

// docs/ARCHITECTURE.md "Run modes": Fp16 is the fp8 run as a float16 device (the AIU) stores it.
enum class RunMode { Fp8, Dequant, Fp16 };
const char* runModeName(RunMode mode); // "fp8", "dequant", "fp16"
// The mode of that name; false for any other text.
bool parseRunMode(const std::string& name, RunMode& mode);
// Whether quantized Linears quantize their activations in this mode (fp8 and fp16 do).
bool runsFp8(RunMode mode);

// How an FP8 Linear's FP8 x FP8 products are summed (docs/ARCHITECTURE.md "Run modes"): in float32
// (the ideal kernel), or as the DL16 twin (numerics/dl16.h: DL8 flush, chunks of 32 rounded to
// DL16). Any FP8 mode (fp8, fp16) takes either; dequant has no FP8 products and refuses dl16.
enum class Accumulation { Float32, Dl16 };
const char* accumulationName(Accumulation accumulation); // "float32", "dl16"
// The accumulation of that name; false for any other text.
bool parseAccumulation(const std::string& name, Accumulation& accumulation);
// The sentence that refuses this pairing ("" when the mode takes the accumulation).
std::string accumulationProblem(RunMode mode, Accumulation accumulation);
// A run's label: the mode's name, with "+dl16" appended for the DL16 twin ("fp8+dl16").
std::string runLabel(RunMode mode, Accumulation accumulation);
// The mode and accumulation of a run label ("fp8", "fp16+dl16", ...); false for any other text.
bool parseRunLabel(const std::string& label, RunMode& mode, Accumulation& accumulation);

// How a quantized Linear treats its input in `fp8` (and `fp16`) mode.
// DynamicPerGroup: each token row in runs of LinearInfo::activationGroupSize channels (the last run
// may be shorter), each run with its own dynamic scale.
enum class ActivationQuantization { None, DynamicPerToken, StaticPerTensor, DynamicPerTensor, DynamicPerGroup };

struct LinearInfo {
    std::string module;            // roberta.encoder.layer.0.attention.self.query
    int64_t inFeatures = 0;
    int64_t outFeatures = 0;
    bool quantized = false;        // FP8 weight
    std::string weightStrategy;    // channel | tensor | block | group (MXFP8) | "" when not quantized
    int64_t weightBlockRows = 0;   // block: block_structure [rows, columns] of one weight_scale entry;
    int64_t weightBlockColumns = 0; // MXFP8: [1, 32]
    // MXFP8 (format mxfp8-quantized): weight_scale holds uint8 E8M0 exponents, one per 32 input
    // channels of a row, W = decode(q) * 2^(e - 127) (numerics/mx.h).
    bool mxfp8Weights = false;
    // DynamicPerGroup runs of 32 channels whose scales are compressed-tensors' MXFP8 powers of two
    // (mx::activationScale) instead of amax / 448.
    bool mxfp8Activations = false;
    ActivationQuantization activations = ActivationQuantization::None;
    int64_t activationGroupSize = 0; // DynamicPerGroup: input channels per run
    float inputScale = 0;          // static per-tensor scale, 0 otherwise
    std::string group;             // config group name
    std::string rule;              // why that group (or none): "group_0 target \"Linear\" (class name)"
};

// DL16 accumulation (Accumulation::Dl16) for one Linear. It applies where the scheme factors as the
// twin models it: an FP8 weight with per-tensor or per-channel scales times FP8 activations with one
// scale per token row (dynamic per token, static or dynamic per tensor). A Linear without FP8 x FP8
// products (float, weight-only FP8, or run in float by an override) runs as without dl16. Block
// and MXFP8 weight scales and group activation scales vary along the reduction, which the twin does
// not model: such a Linear's problem sentence is returned ("" otherwise), and a dl16 run throws it.
bool accumulatesInDl16(const LinearInfo& linear);
std::string dl16Problem(const LinearInfo& linear);

// The class name a config group targets the word embeddings by (torch.nn.Embedding), as "Linear"
// targets the Linears; exact names and re: patterns match the module name as for Linears.
inline const char* const kEmbeddingClassName = "Embedding";

// The word embeddings as the plan sees them (docs/ARCHITECTURE.md "Configs written since 2025"): a
// [vocab, hidden] lookup table that a config group may quantize like a Linear's weight. Quantized,
// it holds F8_E4M3 codes with a weight_scale per tensor ([1] or [], strategy "tensor") or per row
// ([vocab, 1], strategy "channel", compressed-tensors' channel scale of an Embedding), and row id is
// decode(q[id]) * scale. A lookup has no input to quantize, so it reads the same in every mode and
// a group's input_activations do not apply to it.
struct EmbeddingInfo {
    std::string module;         // roberta.embeddings.word_embeddings
    bool quantized = false;     // stored F8_E4M3 and picked by a group that runs
    std::string weightStrategy; // channel (one scale per row) | tensor; "" when float
    std::string group;          // the picking group's name, "" when none
    std::string rule;           // why that group (or none): "group_1 target \"Embedding\" (class name)"
};
// "per row" for channel, "per tensor" for tensor: how inspect names an embedding's scales.
std::string embeddingScaleText(const std::string& weightStrategy);

// Per-Linear what-if precision, by exact module name. `Float` runs the Linear on its dequantized
// (or reference) weights with float activations; `Fp8` runs it as the checkpoint declares even when
// the rest runs float. `othersFloat` is "fp8-only": every Linear not named runs float.
enum class Precision { Float, Fp8 };

struct PrecisionOverrides {
    std::map<std::string, Precision> modules;
    bool othersFloat = false;
    bool empty() const { return modules.empty() && !othersFloat; }
};

// One reason a run refuses the checkpoint and the modules it stops (Linears in layout order, then
// the word embeddings). `sentence` is what a run throws for the first of them; the others' differ
// only in the module they name. Whoever judges the checkpoint (the consumer rules) reads these, so
// that nothing a run refuses is called loadable.
struct PlanRefusal {
    std::string sentence;
    std::vector<std::string> modules;
};

class LinearPlan {
public:
    LinearPlan() = default;
    LinearPlan(const ModelConfig& config, const EncoderLayout& layout, const TensorStore& tensors);

    // Layout order.
    const std::vector<LinearInfo>& linears() const { return linears_; }
    const LinearInfo* find(const std::string& module) const;
    bool anyQuantized() const;
    // The sentence a run throws for this Linear ("" when it can run): an FP8 weight no group
    // targets, a scheme this version does not run, a float weight a compressed group targets, and
    // for every Linear a non-empty transform_config (rotations this version does not apply).
    const std::string& problem(const std::string& module) const;
    // Every problem of the plan (those of problem() and wordEmbeddingsProblem()), one per cause.
    std::vector<PlanRefusal> refusals() const;
    // The config group whose targets pick this module whatever its weight's dtype (LinearInfo::group
    // is set only for a weight stored as FP8); null when ignored or untargeted. Points into the
    // ModelConfig the plan was built from.
    const ConfigGroup* targetGroup(const std::string& module) const;
    // The whole matching outcome for this Linear (same-level conflicts, the model-free writer's
    // pick); null for a name that is not a Linear or a checkpoint without quantization_config.
    const GroupMatch* groupMatch(const std::string& module) const;

    // The word embeddings (EmbeddingInfo), the sentence a run throws for them ("" when they load: an
    // FP8 table no group picks, a scheme this version does not run, a strategy other than per
    // tensor or per row), and the group whose targets pick them whatever their dtype (null when none).
    const EmbeddingInfo& wordEmbeddings() const { return embedding_; }
    const std::string& wordEmbeddingsProblem() const { return embeddingProblem_; }
    const ConfigGroup* wordEmbeddingsTargetGroup() const { return embeddingGroup_; }
    // A float table that a group which runs targets under quantization_status "compressed": it runs
    // float here, but compressed-tensors builds a quantized Embedding and looks for codes and a scale.
    bool wordEmbeddingsFloatButTargeted() const { return embeddingFloatTargeted_; }

private:
    std::vector<LinearInfo> linears_;
    std::vector<const ConfigGroup*> targetGroups_;
    std::vector<std::shared_ptr<const GroupMatch>> matches_;
    std::unordered_map<std::string, std::size_t> index_;
    std::vector<std::string> problems_;
    std::vector<std::string> causes_; // what problems_ share when they differ only in the module named
    EmbeddingInfo embedding_;
    std::string embeddingProblem_;
    const ConfigGroup* embeddingGroup_ = nullptr;
    bool embeddingFloatTargeted_ = false;
};

// Throws naming the first overridden name that is neither a Linear of the layout nor a layer's
// FP8 attention unit (EncoderLayout::fp8AttentionUnit).
void validateOverrides(const PrecisionOverrides& overrides, const EncoderLayout& layout);
// Whether this Linear quantizes its input in a forward of `mode` with these overrides.
bool quantizesActivations(const LinearInfo& linear, RunMode mode, const PrecisionOverrides& overrides);

// How attention treats K and V (docs/ARCHITECTURE.md "Run modes", AIU FP8 attention): in the run's
// float dtype, or as fms_mo's math_fp8 does it (numerics/attention_fp8.h: K and V cast to E4M3 with
// one scale per sequence from fixed ranges, Q float). A run option, not a property of the checkpoint.
enum class AttentionPrecision { Float, Fp8Aiu };
const char* attentionPrecisionName(AttentionPrecision attention); // "float", "fp8-aiu"
// The option of that name; false for any other text.
bool parseAttentionPrecision(const std::string& name, AttentionPrecision& attention);
// Whether a layer's attention runs FP8 in a forward with this option and these overrides. An
// override on the layer's FP8 attention unit decides (Fp8: FP8 even in an all-float run); else
// `othersFloat` ("fp8-only") keeps it float; else the option.
bool attentionRunsFp8(const EncoderLayout& layout, int layer, AttentionPrecision attention,
                      const PrecisionOverrides& overrides);
// Whether any of the first `layers` encoder layers runs FP8 attention (attentionRunsFp8).
bool anyAttentionRunsFp8(const EncoderLayout& layout, int layers, AttentionPrecision attention,
                         const PrecisionOverrides& overrides);

} // namespace scalescope
