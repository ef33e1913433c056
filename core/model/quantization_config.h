#pragma once
// compressed-tensors quantization_config (as llm-compressor writes it): config groups with targets,
// weight and input-activation schemes, and the ignore list. Answers "which scheme applies to this
// module" with the loaders' matching rules (docs/ARCHITECTURE.md "Configs as they appear in the wild"): a
// target or ignore entry is a class name, an exact module name, or "re:<regex>" matched as Python's
// re.match does (anchored at the start of the module name, open at the end unless the pattern says
// `$`). An ignore entry that matches drops the module; otherwise the most specific target wins
// (exact name, then pattern, then class name), and two groups at that same level are a conflict.
// This file holds the one matcher: the plan, diagnostics and the fuzzers all call it.
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope {

struct QuantizationArgs {
    int numBits = 8;
    std::string type = "float";     // float | int
    // tensor | channel | token | group | block (inferred when absent); compressed-tensors 0.13+ also
    // writes tensor_group (NVFP4) and attn_head, which this version names and refuses.
    std::string strategy;
    bool symmetric = true;
    bool dynamic = false;
    // dynamic: "local" (compressed-tensors 0.13+, NVFP4 activations): the per-group scales are
    // dynamic under a calibrated static global scale. `dynamic` is then true too; a run refuses it.
    bool dynamicLocal = false;
    std::optional<int> groupSize;
    // [rows, columns]; the legacy string "128x128" reads as [128, 128] (a part that is not a number
    // reads as 0, which the scheme check refuses).
    std::vector<int> blockStructure;
    // "torch.<dtype>" as compressed-tensors 0.13+ serialises torch dtypes, "" when null (FP8 scales
    // then have the model dtype). MXFP8 writes "torch.uint8" (E8M0 exponents, isMxfp8Args).
    std::string scaleDtype;
    std::string zpDtype;            // zero-point dtype: null for symmetric args (0.18 writes it only when asymmetric)
    // Calibration only, shown by inspect, never read by a run: "memoryless_minmax" (0.18's default for
    // static args), "static_minmax", "minmax", "mse", ...; "" when null (dynamic args).
    std::string observer;
    nlohmann::json observerKwargs = nlohmann::json::object();
};

// The args block as inspect shows it: every key read or shown (strategy, dynamic as written
// (true, false or "local"), group_size, block_structure, scale_dtype, zp_dtype, observer,
// observer_kwargs), nulls where the config has none.
nlohmann::json argsSummaryJson(const QuantizationArgs& args);
// One line of the keys that do not show in describeScheme: "scale_dtype torch.bfloat16, observer
// memoryless_minmax"; "" when none is set.
std::string describeArgsExtras(const QuantizationArgs& args);

struct ConfigGroup {
    std::string name;
    std::vector<std::string> targets;
    std::optional<QuantizationArgs> weights;
    std::optional<QuantizationArgs> inputActivations;
    std::optional<QuantizationArgs> outputActivations;
    std::string format;             // the group's own format, else the config's
    // Keys compressed-tensors does not define, inside the group or one of its args blocks
    // ("group_0.weights.scale_bits"): accepted, and reported by inspect.
    std::vector<std::string> unknownKeys;
};

// Whether two groups quantize alike (same format, weights, input and output activations): a
// same-level overlap of two such groups leaves the run defined.
bool sameScheme(const ConfigGroup& a, const ConfigGroup& b);

// One entry of compressed-tensors' transform_config.config_groups (0.13+): rotations that are part of
// the model (QuIP/SpinQuant-style Hadamards). Only named here: no run applies them.
struct TransformScheme {
    std::string name;               // the config_groups key ("u", "v", "R1", ...)
    std::string type;               // "hadamard", "random-hadamard", "matrix-mul", ...
    std::vector<std::string> locations; // each apply entry's location: "input", "weight_output", ...
    std::vector<std::string> targets;   // the apply entries' targets, in order
    std::optional<int> headDim;
    bool randomize = false;
};

struct QuantizationConfig {
    std::string quantMethod;        // compressed-tensors | fp8 | ...
    // float-quantized | int-quantized | naive-quantized | mixed-precision (groups carry their own) | ...
    std::string format;
    std::string status;             // compressed | frozen | calibration | initialized | decompressed | ""
    std::vector<ConfigGroup> groups;
    std::vector<std::string> ignore;
    std::vector<std::string> unknownKeys; // see ConfigGroup::unknownKeys
    // transform_config's schemes; empty for a missing, null or {} transform_config (and for one with
    // no config_groups), which is how checkpoints without rotations carry it.
    std::vector<TransformScheme> transforms;
    nlohmann::json raw;
};

// Null when the config carries no transforms; otherwise the one sentence a run refuses with, naming
// the transforms: `transform_config holds rotations (scheme "u": type "hadamard" at weight_input
// and input of ["Linear"]) that are part of the model; this version does not apply them, so it
// does not run this checkpoint.` (shown by inspect as well).
std::optional<std::string> transformRefusal(const QuantizationConfig& config);

// `key` names the block in errors: "quantization_config", or "compression_config" (2024 checkpoints).
QuantizationConfig parseQuantizationConfig(const nlohmann::json& json, const std::string& source,
                                           const std::string& key = "quantization_config");

// False for a "re:" entry whose pattern the matcher cannot compile (it then matches nothing).
bool isValidTargetPattern(const std::string& entry);

// How a target/ignore entry matched, in the loaders' order of precedence (most specific first).
enum class TargetKind { ModuleName, Pattern, ClassName };
const char* targetKindName(TargetKind kind); // "module name", "pattern", "class name"

// One target/ignore entry against a module (its full name and class name, e.g. "Linear"): how it
// matched, or nullopt. A "re:" entry matches when its regex matches a prefix of the name
// (re.match); an exact entry when it equals the name (module name) or the class name.
std::optional<TargetKind> matchTarget(const std::string& entry, const std::string& moduleName,
                                      const std::string& className);
bool matchesTarget(const std::string& entry, const std::string& moduleName, const std::string& className);
// Why the regular expression of a "re:" entry is refused before it is compiled (too long, nested
// too deep, or repeating into too many states for a matcher that recurses), or nullopt when it is
// within bounds. A refused pattern matches nothing, like an invalid one; inspect reports the reason.
std::optional<std::string> targetPatternProblem(const std::string& pattern);

// The group a module belongs to (null when it is ignored or no group targets it) and, in words,
// the entry that decided it: `group_0 target "Linear" (class name)`, `ignored by "qa_outputs"`.
// `conflicts` lists the other groups whose best target for the module is as specific as the
// chosen one's (the loaders have no rule between them); `group` is then the first of them in
// config order. `firstInOrder` is what llm-compressor's model-free path picks instead: the first
// group in config order with any matching target.
struct GroupCandidate {
    const ConfigGroup* group = nullptr;
    std::string rule;
};
struct GroupMatch {
    const ConfigGroup* group = nullptr;
    std::string rule;
    std::vector<GroupCandidate> conflicts;
    GroupCandidate firstInOrder;
};
GroupMatch matchGroup(const QuantizationConfig& config, const std::string& moduleName, const std::string& className);

// matchGroup(...).group.
const ConfigGroup* findGroupFor(const QuantizationConfig& config, const std::string& moduleName,
                                const std::string& className);

// compressed-tensors' rule for power-of-two E8M0 scales (mxfp_utils.py should_generate_mx_scales):
// 8-bit float args, strategy group, group_size 32, scale_dtype torch.uint8. Weights with such args
// are stored as format "mxfp8-quantized"; dynamic activations with them take numerics/mx.h's scales.
bool isMxfp8Args(const QuantizationArgs& args);

// Null when this version runs the group; otherwise one sentence naming the scheme that it does not
// run (int-quantized, 4-bit groups, static group activations, a block_structure that is not two
// positive sizes, ...), for `inspect` to report and a run to refuse with the module name added.
std::optional<std::string> unsupportedSchemeReason(const QuantizationConfig& config, const ConfigGroup& group);

// False for block-wise weights or group activations: the AIU's FP8 Linear takes tensor or channel
// weights (and per-token or per-tensor activations) only.
bool runsOnAiu(const ConfigGroup& group);

// Human-readable scheme: "FP8 weights per channel, dynamic per-token FP8 activations".
std::string describeScheme(const ConfigGroup& group);

} // namespace scalescope
