#include "model/quantization_config.h"

#include <algorithm>
#include <cstdint>

#include "common/error.h"

namespace scalescope {
namespace {

// A hostile "re:" pattern such as "(.*)*x" sends a backtracking matcher into exponential time: minutes
// to forever on one 45-character module name. libstdc++ can match with its Thompson-NFA executor
// instead, in time polynomial in pattern and name; back-references, which compressed-tensors
// patterns do not use, are then refused like any invalid pattern (the entry matches nothing).
#if defined(__GLIBCXX__)
constexpr std::regex::flag_type kTargetRegexFlags = std::regex::ECMAScript | std::regex_constants::__polynomial;
#else
constexpr std::regex::flag_type kTargetRegexFlags = std::regex::ECMAScript;
#endif

// libstdc++ compiles and matches a regular expression by recursion: one level per term of a sequence
// and per nested group, and one state per repeated copy. Real targets are a few dozen characters; a
// 40 KB pattern of nested groups overflowed the stack. These bounds keep the recursion in the
// hundreds of frames and the state count in the thousands.
constexpr std::size_t kMaxPatternLength = 512;
constexpr int kMaxPatternNesting = 16;
constexpr std::uint64_t kMaxPatternStates = 10'000;

std::string stringOr(const nlohmann::json& object, const char* key, const std::string& fallback)
{
    auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return fallback;
    if (!it->is_string())
        throw Error(std::string("\"") + key + "\" must be a string");
    return it->get<std::string>();
}

std::vector<std::string> stringList(const nlohmann::json& object, const char* key)
{
    std::vector<std::string> out;
    auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return out;
    if (it->is_string()) // a single entry written without a list
        return {it->get<std::string>()};
    if (!it->is_array())
        throw Error(std::string("\"") + key + "\" must be a list of strings");
    for (const auto& entry : *it) {
        if (!entry.is_string())
            throw Error(std::string("\"") + key + "\" must be a list of strings");
        out.push_back(entry.get<std::string>());
    }
    return out;
}

std::optional<QuantizationArgs> parseArgs(const nlohmann::json& group, const char* key)
{
    auto it = group.find(key);
    if (it == group.end() || it->is_null())
        return std::nullopt;
    if (!it->is_object())
        throw Error(std::string("\"") + key + "\" must be an object or null");
    const nlohmann::json& args = *it;
    QuantizationArgs out;
    if (auto bits = args.find("num_bits"); bits != args.end() && !bits->is_null()) {
        if (!bits->is_number_integer())
            throw Error(std::string("\"") + key + ".num_bits\" must be an integer");
        out.numBits = bits->get<int>();
    }
    out.type = stringOr(args, "type", "int");
    out.strategy = stringOr(args, "strategy", "tensor");
    if (auto s = args.find("symmetric"); s != args.end() && s->is_boolean())
        out.symmetric = s->get<bool>();
    if (auto d = args.find("dynamic"); d != args.end()) {
        // llm-compressor writes true/false, and "local" for some schemes (dynamic in our sense).
        if (d->is_boolean())
            out.dynamic = d->get<bool>();
        else if (d->is_string())
            out.dynamic = d->get<std::string>() != "false";
    }
    if (auto g = args.find("group_size"); g != args.end() && g->is_number_integer())
        out.groupSize = g->get<int>();
    if (auto b = args.find("block_structure"); b != args.end() && b->is_array()) {
        for (const auto& v : *b)
            if (v.is_number_integer())
                out.blockStructure.push_back(v.get<int>());
    }
    return out;
}

} // namespace

QuantizationConfig parseQuantizationConfig(const nlohmann::json& json, const std::string& source)
{
    if (!json.is_object())
        throw Error(source + ": \"quantization_config\" must be an object.");
    QuantizationConfig config;
    config.raw = json;
    try {
        config.quantMethod = stringOr(json, "quant_method", "");
        config.format = stringOr(json, "format", "");
        config.status = stringOr(json, "quantization_status", "");
        config.ignore = stringList(json, "ignore");

        if (config.quantMethod == "fp8") {
            // DeepSeek-style block FP8 with weight_scale_inv: no config_groups; represented as one
            // group over all Linears so inspect can name it and a run can refuse it.
            ConfigGroup group;
            group.name = "fp8";
            group.targets = {"Linear"};
            group.format = "fp8";
            QuantizationArgs weights;
            weights.type = "float";
            weights.strategy = json.contains("weight_block_size") ? "block" : "tensor";
            group.weights = weights;
            config.groups.push_back(group);
            if (config.ignore.empty())
                config.ignore = stringList(json, "modules_to_not_convert");
            return config;
        }

        auto groups = json.find("config_groups");
        if (groups == json.end() || groups->is_null())
            return config;
        if (!groups->is_object())
            throw Error("\"config_groups\" must be an object");
        // nlohmann::json objects iterate in key order; llm-compressor names groups group_0,
        // group_1, ... so key order is config order up to group_9. Sort by the numeric suffix to be
        // right past that too.
        std::vector<std::pair<std::string, const nlohmann::json*>> ordered;
        for (auto it = groups->begin(); it != groups->end(); ++it)
            ordered.emplace_back(it.key(), &it.value());
        auto suffix = [](const std::string& name) {
            std::size_t i = name.size();
            while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
                --i;
            return i < name.size() && name.size() - i < 9 ? std::stol(name.substr(i)) : -1L;
        };
        std::stable_sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
            return suffix(a.first) < suffix(b.first);
        });
        for (const auto& [name, value] : ordered) {
            if (!value->is_object())
                throw Error("config group \"" + name + "\" must be an object");
            ConfigGroup group;
            group.name = name;
            group.targets = stringList(*value, "targets");
            group.weights = parseArgs(*value, "weights");
            group.inputActivations = parseArgs(*value, "input_activations");
            group.outputActivations = parseArgs(*value, "output_activations");
            group.format = stringOr(*value, "format", config.format);
            config.groups.push_back(std::move(group));
        }
    } catch (const Error& e) {
        const std::string what = e.what();
        if (what.rfind(source, 0) == 0)
            throw;
        throw Error(source + ": quantization_config: " + what + ".");
    }
    return config;
}

std::optional<std::string> targetPatternProblem(const std::string& pattern)
{
    if (pattern.size() > kMaxPatternLength)
        return "it is " + std::to_string(pattern.size()) + " characters long, more than the limit of " +
               std::to_string(kMaxPatternLength);
    // States per open group; each atom adds one, a counted repetition {n,m} multiplies what it repeats.
    std::vector<std::uint64_t> groupStates = {0};
    std::uint64_t lastAtom = 0; // states of the atom or group a quantifier would repeat
    auto saturatingMultiply = [](std::uint64_t a, std::uint64_t b) {
        std::uint64_t product = 0;
        return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
    };
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '(') {
            if (static_cast<int>(groupStates.size()) > kMaxPatternNesting)
                return "it nests groups more than " + std::to_string(kMaxPatternNesting) + " levels deep";
            groupStates.push_back(0);
            lastAtom = 0;
            continue;
        }
        if (c == ')' && groupStates.size() > 1) {
            lastAtom = groupStates.back() + 1;
            groupStates.pop_back();
            groupStates.back() = std::min<std::uint64_t>(UINT64_MAX - lastAtom, groupStates.back()) + lastAtom;
            continue;
        }
        if (c == '{') {
            std::size_t close = pattern.find('}', i);
            std::uint64_t count = 0;
            bool digits = false;
            for (std::size_t k = i + 1; close != std::string::npos && k < close; ++k) {
                if (pattern[k] >= '0' && pattern[k] <= '9') {
                    count = std::min<std::uint64_t>(count * 10 + std::uint64_t(pattern[k] - '0'), 1'000'000'000);
                    digits = true;
                } else if (pattern[k] == ',') {
                    count = std::max<std::uint64_t>(count, 1);
                    digits = true;
                    // {n,m}: the larger bound counts; {n,} repeats n copies plus a loop
                    std::uint64_t upper = 0;
                    for (std::size_t u = k + 1; u < close && pattern[u] >= '0' && pattern[u] <= '9'; ++u)
                        upper = std::min<std::uint64_t>(upper * 10 + std::uint64_t(pattern[u] - '0'), 1'000'000'000);
                    count = std::max(count, upper) + 1;
                    break;
                } else {
                    digits = false;
                    break;
                }
            }
            if (digits && close != std::string::npos) {
                const std::uint64_t extra = saturatingMultiply(lastAtom, count);
                groupStates.back() = std::min<std::uint64_t>(UINT64_MAX - extra, groupStates.back()) + extra;
                lastAtom = 0;
                i = close;
                if (groupStates.back() > kMaxPatternStates)
                    return "its repetitions expand to more than " + std::to_string(kMaxPatternStates) + " states";
                continue;
            }
        }
        if (c == '\\')
            ++i;
        if (c == '[') { // a bracket expression is one atom whatever it holds
            std::size_t k = i + 1;
            if (k < pattern.size() && pattern[k] == '^')
                ++k;
            if (k < pattern.size() && pattern[k] == ']')
                ++k;
            while (k < pattern.size() && pattern[k] != ']')
                k += pattern[k] == '\\' ? 2 : 1;
            i = k;
        }
        lastAtom = 1;
        groupStates.back() += 1;
        if (groupStates.back() > kMaxPatternStates)
            return "its repetitions expand to more than " + std::to_string(kMaxPatternStates) + " states";
    }
    return std::nullopt;
}

bool isValidTargetPattern(const std::string& entry)
{
    if (entry.rfind("re:", 0) != 0)
        return true;
    if (targetPatternProblem(entry.substr(3)))
        return false;
    try {
        std::regex pattern(entry.substr(3), kTargetRegexFlags);
        return true;
    } catch (const std::regex_error&) {
        return false;
    }
}

bool matchesTarget(const std::string& entry, const std::string& moduleName, const std::string& className)
{
    if (entry.rfind("re:", 0) == 0) {
        if (targetPatternProblem(entry.substr(3)))
            return false; // refused before it reaches the recursive compiler; inspect reports it
        try {
            return std::regex_match(moduleName, std::regex(entry.substr(3), kTargetRegexFlags));
        } catch (const std::regex_error&) {
            return false; // an unparsable pattern matches nothing; inspect reports it
        }
    }
    return entry == moduleName || entry == className;
}

namespace {

std::string entryKind(const std::string& entry, const std::string& moduleName)
{
    if (entry.rfind("re:", 0) == 0)
        return "pattern";
    return entry == moduleName ? "module name" : "class name";
}

} // namespace

GroupMatch matchGroup(const QuantizationConfig& config, const std::string& moduleName, const std::string& className)
{
    for (const std::string& entry : config.ignore)
        if (matchesTarget(entry, moduleName, className))
            return {nullptr, "ignored by \"" + entry + "\" (" + entryKind(entry, moduleName) + ")"};
    for (const ConfigGroup& group : config.groups)
        for (const std::string& target : group.targets)
            if (matchesTarget(target, moduleName, className))
                return {&group, group.name + " target \"" + target + "\" (" + entryKind(target, moduleName) + ")"};
    return {nullptr, "no group targets it"};
}

const ConfigGroup* findGroupFor(const QuantizationConfig& config, const std::string& moduleName,
                                const std::string& className)
{
    return matchGroup(config, moduleName, className).group;
}

std::optional<std::string> unsupportedSchemeReason(const QuantizationConfig& config, const ConfigGroup& group)
{
    if (config.quantMethod == "fp8")
        return std::string("quant_method \"fp8\" (block-wise weights with weight_scale_inv) is not supported");
    if (!config.quantMethod.empty() && config.quantMethod != "compressed-tensors")
        return "quant_method \"" + config.quantMethod + "\" is not supported";
    if (group.format != "float-quantized" && group.format != "naive-quantized")
        return "format \"" + group.format + "\" (group " + group.name + ") is not supported; only float-quantized FP8 runs";
    if (group.weights) {
        const QuantizationArgs& w = *group.weights;
        if (w.type != "float" || w.numBits != 8)
            return "weights of type " + w.type + " with " + std::to_string(w.numBits) + " bits (group " + group.name +
                   ") are not supported; only 8-bit float weights run";
        if (w.strategy != "channel" && w.strategy != "tensor")
            return "weight strategy \"" + w.strategy + "\" (group " + group.name +
                   ") is not supported; only channel and tensor run";
        if (!w.symmetric)
            return "asymmetric weights (group " + group.name + ") are not supported";
    } else {
        return "group " + group.name + " quantizes no weights; only FP8 weight quantization runs";
    }
    if (group.inputActivations) {
        const QuantizationArgs& a = *group.inputActivations;
        if (a.type != "float" || a.numBits != 8)
            return "input activations of type " + a.type + " with " + std::to_string(a.numBits) + " bits (group " +
                   group.name + ") are not supported";
        const bool dynamicToken = a.dynamic && a.strategy == "token";
        const bool staticTensor = !a.dynamic && a.strategy == "tensor";
        const bool dynamicTensor = a.dynamic && a.strategy == "tensor";
        if (!dynamicToken && !staticTensor && !dynamicTensor)
            return "input activation strategy \"" + a.strategy + "\"" + (a.dynamic ? " (dynamic)" : " (static)") +
                   " (group " + group.name + ") is not supported; only dynamic token and static tensor run";
    }
    if (group.outputActivations)
        return "output activation quantization (group " + group.name + ") is not supported";
    return std::nullopt;
}

std::string describeScheme(const ConfigGroup& group)
{
    std::string out;
    if (group.weights)
        out = "FP" + std::to_string(group.weights->numBits) + " weights per " + group.weights->strategy;
    else
        out = "float weights";
    if (!group.inputActivations) {
        out += ", float activations";
    } else {
        const QuantizationArgs& a = *group.inputActivations;
        out += std::string(", ") + (a.dynamic ? "dynamic" : "static") + " per-" + a.strategy + " activations";
    }
    return out;
}

} // namespace scalescope
