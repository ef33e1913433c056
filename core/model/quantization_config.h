#pragma once
// compressed-tensors quantization_config (as llm-compressor writes it): config groups with targets,
// weight and input-activation schemes, and the ignore list. Answers "which scheme applies to this
// module" with compressed-tensors' matching rules: a target or ignore entry is a class name, an
// exact module name, or "re:<regex>" matched against the whole module name; a module belongs to the
// first group (in config order) whose targets match it, unless an ignore entry matches it.
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope {

struct QuantizationArgs {
    int numBits = 8;
    std::string type = "float";     // float | int
    std::string strategy;           // tensor | channel | token | group | block
    bool symmetric = true;
    bool dynamic = false;
    std::optional<int> groupSize;
    std::vector<int> blockStructure;
};

struct ConfigGroup {
    std::string name;
    std::vector<std::string> targets;
    std::optional<QuantizationArgs> weights;
    std::optional<QuantizationArgs> inputActivations;
    std::optional<QuantizationArgs> outputActivations;
    std::string format;             // the group's own format, else the config's
};

struct QuantizationConfig {
    std::string quantMethod;        // compressed-tensors | fp8 | ...
    std::string format;             // float-quantized | int-quantized | naive-quantized | ...
    std::string status;             // compressed | frozen | ...
    std::vector<ConfigGroup> groups;
    std::vector<std::string> ignore;
    nlohmann::json raw;
};

QuantizationConfig parseQuantizationConfig(const nlohmann::json& json, const std::string& source);

// False for a "re:" entry whose pattern the matcher cannot compile (it then matches nothing).
bool isValidTargetPattern(const std::string& entry);

// One target/ignore entry against a module (its full name and class name, e.g. "Linear").
bool matchesTarget(const std::string& entry, const std::string& moduleName, const std::string& className);
// Why the regular expression of a "re:" entry is refused before it is compiled (too long, nested
// too deep, or repeating into too many states for a matcher that recurses), or nullopt when it is
// within bounds. A refused pattern matches nothing, like an invalid one; inspect reports the reason.
std::optional<std::string> targetPatternProblem(const std::string& pattern);

// The group a module belongs to (null when it is ignored or no group targets it) and, in words,
// the entry that decided it: `group_0 target "Linear" (class name)`, `ignored by "qa_outputs"`.
struct GroupMatch {
    const ConfigGroup* group = nullptr;
    std::string rule;
};
GroupMatch matchGroup(const QuantizationConfig& config, const std::string& moduleName, const std::string& className);

// matchGroup(...).group.
const ConfigGroup* findGroupFor(const QuantizationConfig& config, const std::string& moduleName,
                                const std::string& className);

// Null when this version runs the group; otherwise one sentence naming the scheme that it does not
// run (block-wise weights, group activations, int-quantized, ...), for `inspect` to report and a run
// to refuse with the module name added.
std::optional<std::string> unsupportedSchemeReason(const QuantizationConfig& config, const ConfigGroup& group);

// Human-readable scheme: "FP8 weights per channel, dynamic per-token FP8 activations".
std::string describeScheme(const ConfigGroup& group);

} // namespace scalescope
