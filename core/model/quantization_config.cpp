#include "model/quantization_config.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>

#include "common/error.h"
#include "common/json_values.h"

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

// The largest group_size or block_structure entry read, either sign: far beyond any layer's width
// (a Linear of 2^30 input channels would hold gigabytes per row), small enough for an int. Within
// it, the scheme check (unsupportedSchemeReason) judges zero and negative sizes, so inspect shows them.
constexpr int64_t kMaxQuantizationBlock = int64_t(1) << 30;

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

// The keys compressed-tensors' QuantizationArgs and QuantizationScheme define (across versions);
// anything else is kept as an unknown key for inspect to report.
bool isKnownArgsKey(const std::string& key)
{
    static const char* const known[] = {"num_bits", "type", "symmetric", "group_size", "strategy",
                                        "block_structure", "dynamic", "actorder", "observer", "observer_kwargs",
                                        "scale_dtype", "zp_dtype"};
    return std::find(std::begin(known), std::end(known), key) != std::end(known);
}

bool isKnownGroupKey(const std::string& key)
{
    static const char* const known[] = {"targets", "weights", "input_activations", "output_activations", "format"};
    return std::find(std::begin(known), std::end(known), key) != std::end(known);
}

std::string lowerCase(std::string text)
{
    for (char& c : text)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

// "128x128" -> {128, 128}. Two whole numbers within the bound, zero and negative ones included, go
// to the scheme check as a list's would, which shows them as written. Any other text is refused
// here quoting it as written: a part past the bound or not a number used to read as 0, so that
// "-99999999999x16" was reported as [0, 16].
std::vector<int> blockStructureFromText(const std::string& text, const std::string& where)
{
    const auto refused = [&] {
        return Error(where + "block_structure\" is " + quotedJsonValue(nlohmann::json(text)) +
                     "; written as text it must be \"RxC\", two whole numbers from 1 to " +
                     std::to_string(kMaxQuantizationBlock) + " joined by x");
    };
    const std::size_t cross = text.find_first_of("xX");
    if (cross == std::string::npos || text.find_first_of("xX", cross + 1) != std::string::npos)
        throw refused();
    std::vector<int> sizes;
    for (const std::string& part : {text.substr(0, cross), text.substr(cross + 1)}) {
        const std::size_t sign = !part.empty() && (part[0] == '-' || part[0] == '+') ? 1 : 0;
        const std::size_t firstDigit = std::min(part.find_first_not_of('0', sign), part.size());
        const bool digits = part.size() > sign &&
                            std::all_of(part.begin() + sign, part.end(), [](char c) { return c >= '0' && c <= '9'; });
        // Past 10 significant digits it is beyond the bound; within, std::stoll cannot overflow.
        if (!digits || part.size() - firstDigit > 10)
            throw refused();
        const int64_t magnitude = firstDigit == part.size() ? 0 : std::stoll(part.substr(firstDigit));
        if (magnitude > kMaxQuantizationBlock)
            throw refused();
        sizes.push_back(static_cast<int>(part[0] == '-' ? -magnitude : magnitude));
    }
    return sizes;
}

// compressed-tensors infers a missing strategy from group_size: null -> tensor, -1 -> channel,
// a positive size -> group.
std::string inferredStrategy(const std::optional<int>& groupSize)
{
    if (!groupSize)
        return "tensor";
    return *groupSize == -1 ? "channel" : "group";
}

std::optional<QuantizationArgs> parseArgs(const nlohmann::json& group, const char* key, const std::string& groupName,
                                          std::vector<std::string>& unknownKeys)
{
    auto it = group.find(key);
    if (it == group.end() || it->is_null())
        return std::nullopt;
    if (!it->is_object())
        throw Error(std::string("\"") + key + "\" must be an object or null");
    const nlohmann::json& args = *it;
    QuantizationArgs out;
    const std::string where = std::string("\"") + groupName + "." + key + ".";
    // A key present with another type than its own is refused naming it (null is absent): read as
    // a default, "dynamic": "yes" ran as dynamic per-token.
    const auto present = [&](const char* name, bool (nlohmann::json::*isType)() const noexcept,
                             const char* expected) -> const nlohmann::json* {
        const auto it = args.find(name);
        if (it == args.end() || it->is_null())
            return nullptr;
        if (!((*it).*isType)())
            throw Error(where + name + "\" is " + quotedJsonValue(*it) + "; it must be " + expected);
        return &*it;
    };
    const auto text = [&](const char* name, const std::string& fallback) {
        const nlohmann::json* value = present(name, &nlohmann::json::is_string, "a string");
        return value ? value->get<std::string>() : fallback;
    };
    if (auto bits = args.find("num_bits"); bits != args.end() && !bits->is_null())
        out.numBits = static_cast<int>(checkedJsonInteger(*bits, where + "num_bits\"", 1, 64));
    out.type = text("type", "int");
    if (const nlohmann::json* symmetric = present("symmetric", &nlohmann::json::is_boolean, "true or false"))
        out.symmetric = symmetric->get<bool>();
    if (auto d = args.find("dynamic"); d != args.end() && !d->is_null()) {
        // true/false, or "local" (compressed-tensors 0.13+, NVFP4 activations): truthy there too,
        // but only the per-group scales are dynamic, which the scheme check names and refuses.
        const std::string spelled = d->is_string() ? lowerCase(d->get<std::string>()) : std::string();
        if (d->is_boolean())
            out.dynamic = d->get<bool>();
        else if (spelled == "true" || spelled == "false" || spelled == "local")
            out.dynamic = spelled != "false";
        else
            throw Error(where + "dynamic\" is " + quotedJsonValue(*d) + "; it must be true, false or \"local\"");
        out.dynamicLocal = spelled == "local";
    }
    // -1 is compressed-tensors' "whole row" (channel); any other value is a run of input channels.
    if (auto g = args.find("group_size"); g != args.end() && !g->is_null())
        out.groupSize = static_cast<int>(checkedJsonInteger(*g, where + "group_size\"", -kMaxQuantizationBlock, kMaxQuantizationBlock));
    out.strategy = text("strategy", inferredStrategy(out.groupSize));
    out.scaleDtype = text("scale_dtype", out.scaleDtype);
    out.zpDtype = text("zp_dtype", out.zpDtype);
    out.observer = text("observer", out.observer);
    if (const nlohmann::json* kwargs = present("observer_kwargs", &nlohmann::json::is_object, "an object"))
        out.observerKwargs = *kwargs;
    if (auto b = args.find("block_structure"); b != args.end() && b->is_string()) {
        // The legacy form "128x128", which compressed-tensors still accepts: rows "x" columns.
        out.blockStructure = blockStructureFromText(b->get<std::string>(), where);
    } else if (b != args.end() && b->is_array()) {
        for (const auto& v : *b) // a non-integer entry is refused quoting it (read as 0, 1.5 was shown as 0)
            out.blockStructure.push_back(static_cast<int>(
                checkedJsonInteger(v, where + "block_structure\" entry", -kMaxQuantizationBlock, kMaxQuantizationBlock)));
    } else if (b != args.end() && !b->is_null()) {
        throw Error(where + "block_structure\" is " + quotedJsonValue(*b) + "; it must be a list of two sizes or \"RxC\"");
    }
    for (auto entry = args.begin(); entry != args.end(); ++entry)
        if (!isKnownArgsKey(entry.key()))
            unknownKeys.push_back(groupName + "." + key + "." + entry.key());
    return out;
}

// transform_config (compressed-tensors 0.13+): {"config_groups": {name: {"type", "apply": [{"targets",
// "location", "inverse", "ignore"}], "randomize", "requires_grad", "head_dim", "precision"}}}. Read
// leniently, for naming only: whatever is not empty is a transform, and what cannot be read still
// counts as one (type "unreadable") so that a run refuses it rather than run without it.
std::vector<TransformScheme> parseTransforms(const nlohmann::json& config)
{
    std::vector<TransformScheme> out;
    const auto transform = config.find("transform_config");
    if (transform == config.end() || transform->is_null() || transform->empty())
        return out;
    const auto groups = transform->is_object() ? transform->find("config_groups") : transform->end();
    if (groups == transform->end() || !groups->is_object()) {
        const bool onlyEmptyGroups = transform->is_object() && transform->size() == 1 && groups != transform->end() &&
                                     groups->is_null();
        if (!onlyEmptyGroups)
            out.push_back({"", "unreadable", {}, {}, std::nullopt, false});
        return out;
    }
    for (auto entry = groups->begin(); entry != groups->end(); ++entry) {
        TransformScheme scheme;
        scheme.name = entry.key();
        scheme.type = "unreadable";
        if (entry->is_object()) {
            scheme.type = stringOr(*entry, "type", "unnamed");
            if (auto r = entry->find("randomize"); r != entry->end() && r->is_boolean())
                scheme.randomize = r->get<bool>();
            if (auto h = entry->find("head_dim"); h != entry->end() && h->is_number_integer())
                scheme.headDim = static_cast<int>(checkedJsonInteger(*h, "\"transform_config." + entry.key() + ".head_dim\"",
                                                                     0, kMaxQuantizationBlock));
            if (auto apply = entry->find("apply"); apply != entry->end() && apply->is_array())
                for (const auto& args : *apply) {
                    if (!args.is_object())
                        continue;
                    if (auto l = args.find("location"); l != args.end() && l->is_string())
                        scheme.locations.push_back(l->get<std::string>());
                    for (const std::string& target : stringList(args, "targets"))
                        scheme.targets.push_back(target);
                }
        }
        out.push_back(std::move(scheme));
    }
    return out;
}

} // namespace

QuantizationConfig parseQuantizationConfig(const nlohmann::json& json, const std::string& source, const std::string& key)
{
    if (!json.is_object())
        throw Error(source + ": \"" + key + "\" must be an object.");
    QuantizationConfig config;
    config.raw = json;
    try {
        config.quantMethod = stringOr(json, "quant_method", "");
        config.format = stringOr(json, "format", "");
        config.status = stringOr(json, "quantization_status", "");
        config.ignore = stringList(json, "ignore");
        config.transforms = parseTransforms(json);

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
            group.weights = parseArgs(*value, "weights", name, group.unknownKeys);
            group.inputActivations = parseArgs(*value, "input_activations", name, group.unknownKeys);
            group.outputActivations = parseArgs(*value, "output_activations", name, group.unknownKeys);
            group.format = stringOr(*value, "format", config.format);
            for (auto entry = value->begin(); entry != value->end(); ++entry)
                if (!isKnownGroupKey(entry.key()))
                    group.unknownKeys.push_back(name + "." + entry.key());
            config.unknownKeys.insert(config.unknownKeys.end(), group.unknownKeys.begin(), group.unknownKeys.end());
            config.groups.push_back(std::move(group));
        }
    } catch (const Error& e) {
        const std::string what = e.what();
        if (what.rfind(source, 0) == 0)
            throw;
        throw Error(source + ": " + key + ": " + what + (what.empty() || what.back() != '.' ? "." : ""));
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

const char* targetKindName(TargetKind kind)
{
    switch (kind) {
    case TargetKind::ModuleName:
        return "module name";
    case TargetKind::Pattern:
        return "pattern";
    case TargetKind::ClassName:
        return "class name";
    }
    return "?";
}

std::optional<TargetKind> matchTarget(const std::string& entry, const std::string& moduleName,
                                      const std::string& className)
{
    if (entry.rfind("re:", 0) == 0) {
        if (targetPatternProblem(entry.substr(3)))
            return std::nullopt; // refused before it reaches the recursive compiler; inspect reports it
        try {
            // re.match: the match must start at the first character and may end anywhere.
            const std::regex pattern(entry.substr(3), kTargetRegexFlags);
            if (std::regex_search(moduleName, pattern, std::regex_constants::match_continuous))
                return TargetKind::Pattern;
            return std::nullopt;
        } catch (const std::regex_error&) {
            return std::nullopt; // an unparsable pattern matches nothing; inspect reports it
        }
    }
    if (entry == moduleName)
        return TargetKind::ModuleName;
    if (entry == className)
        return TargetKind::ClassName;
    return std::nullopt;
}

bool matchesTarget(const std::string& entry, const std::string& moduleName, const std::string& className)
{
    return matchTarget(entry, moduleName, className).has_value();
}

namespace {

bool sameArgs(const std::optional<QuantizationArgs>& a, const std::optional<QuantizationArgs>& b)
{
    if (!a || !b)
        return !a && !b;
    return a->numBits == b->numBits && a->type == b->type && a->strategy == b->strategy &&
           a->symmetric == b->symmetric && a->dynamic == b->dynamic && a->groupSize == b->groupSize &&
           a->blockStructure == b->blockStructure && a->scaleDtype == b->scaleDtype && a->dynamicLocal == b->dynamicLocal;
}

// A group's most specific target for a module, or nullopt when none matches.
struct TargetHit {
    TargetKind kind;
    std::string entry;
};

std::optional<TargetHit> bestTarget(const ConfigGroup& group, const std::string& moduleName, const std::string& className)
{
    std::optional<TargetHit> best;
    for (const std::string& target : group.targets)
        if (const auto kind = matchTarget(target, moduleName, className))
            if (!best || *kind < best->kind)
                best = TargetHit{*kind, target};
    return best;
}

std::string targetRule(const ConfigGroup& group, const TargetHit& hit)
{
    return group.name + " target \"" + hit.entry + "\" (" + targetKindName(hit.kind) + ")";
}

} // namespace

bool sameScheme(const ConfigGroup& a, const ConfigGroup& b)
{
    return a.format == b.format && sameArgs(a.weights, b.weights) && sameArgs(a.inputActivations, b.inputActivations) &&
           sameArgs(a.outputActivations, b.outputActivations);
}

GroupMatch matchGroup(const QuantizationConfig& config, const std::string& moduleName, const std::string& className)
{
    for (const std::string& entry : config.ignore)
        if (const auto kind = matchTarget(entry, moduleName, className))
            return {nullptr, "ignored by \"" + entry + "\" (" + targetKindName(*kind) + ")", {}, {}};
    GroupMatch match;
    std::optional<TargetKind> bestKind;
    for (const ConfigGroup& group : config.groups) {
        const auto hit = bestTarget(group, moduleName, className);
        if (!hit)
            continue;
        const GroupCandidate candidate{&group, targetRule(group, *hit)};
        if (!match.firstInOrder.group)
            match.firstInOrder = candidate;
        if (bestKind && *bestKind == hit->kind) {
            match.conflicts.push_back(candidate);
        } else if (!bestKind || hit->kind < *bestKind) {
            bestKind = hit->kind;
            match.group = candidate.group;
            match.rule = candidate.rule;
            match.conflicts.clear();
        }
    }
    if (!match.group)
        match.rule = "no group targets it";
    return match;
}

const ConfigGroup* findGroupFor(const QuantizationConfig& config, const std::string& moduleName,
                                const std::string& className)
{
    return matchGroup(config, moduleName, className).group;
}

namespace {

std::string sizesText(const std::vector<int>& sizes)
{
    std::string out = "[";
    for (std::size_t i = 0; i < sizes.size(); ++i)
        out += (i ? ", " : "") + std::to_string(sizes[i]);
    return out + "]";
}

// scale_dtype "torch.float8_e4m3fn" on FP8 args (compressed-tensors 0.13+, utils/helpers.py
// calculate_qparams): each scale is rounded to an E4M3 value, but the float-quantized and
// naive-quantized compressors store it in the model dtype, so stored scales (weights, static inputs)
// run as any float scale. A dynamic scale would be rounded at every forward, which is not emulated.
std::optional<std::string> e4m3ScaleReason(const QuantizationArgs& args, const char* what, const ConfigGroup& group)
{
    if (!args.dynamic)
        return std::nullopt;
    return std::string("dynamic ") + what + " with scale_dtype \"" + args.scaleDtype + "\" (group " + group.name +
           "), whose scales compressed-tensors rounds to FP8 E4M3 values at every forward, which this version does "
           "not emulate; only float dynamic scales run";
}

// What the strategies compressed-tensors 0.13+ added mean, for the sentence that refuses them.
std::string strategyMeaning(const std::string& strategy)
{
    if (strategy == "tensor_group")
        return " (NVFP4's per-group scales under one global scale)";
    if (strategy == "attn_head")
        return " (one scale per attention head)";
    return "";
}

// dynamic: "local": dynamic per-group scales under a calibrated global scale (NVFP4 activations).
std::optional<std::string> dynamicLocalReason(const QuantizationArgs& args, const char* what, const ConfigGroup& group)
{
    if (!args.dynamicLocal)
        return std::nullopt;
    return std::string(what) + " with dynamic \"local\" (group " + group.name +
           "), NVFP4's dynamic per-group scales under a static global scale, which this version does not run; "
           "only dynamic true or false runs";
}

bool isUint8Dtype(const std::string& d)
{
    return d == "torch.uint8" || d == "uint8";
}

// Scales stored in a float type run as usual; uint8 scales are MXFP8's E8M0 exponents, which run
// only in MXFP8's layout (isMxfp8Args) and, for weights, as format mxfp8-quantized stores them.
std::optional<std::string> scaleDtypeReason(const QuantizationArgs& args, const char* what, const ConfigGroup& group)
{
    const std::string& d = args.scaleDtype;
    if (d.find("float8_e4m3fn") != std::string::npos)
        return e4m3ScaleReason(args, what, group);
    if (d.empty() || d.find("float32") != std::string::npos || d.find("bfloat16") != std::string::npos ||
        d.find("float16") != std::string::npos)
        return std::nullopt;
    if (isUint8Dtype(d) && isMxfp8Args(args))
        return std::nullopt;
    return std::string(what) + " with scale_dtype \"" + d + "\" (group " + group.name +
           ") are not supported; only float scales, or torch.uint8 E8M0 scales of MXFP8 (8-bit float, strategy "
           "group, group_size 32), run";
}

std::optional<std::string> weightSchemeReason(const ConfigGroup& group)
{
    if (!group.weights)
        return "group " + group.name + " quantizes no weights; only FP8 weight quantization runs";
    const QuantizationArgs& w = *group.weights;
    const bool mxFormat = group.format == "mxfp8-quantized";
    if (mxFormat != isMxfp8Args(w))
        return mxFormat ? "format \"mxfp8-quantized\" (group " + group.name +
                              ") with weights that are not MXFP8 (8-bit float, strategy group, group_size 32, "
                              "scale_dtype torch.uint8), which is not a layout compressed-tensors writes"
                        : "MXFP8 weights (scale_dtype torch.uint8, group " + group.name + ") in format \"" +
                              group.format + "\", which does not store E8M0 scales; only mxfp8-quantized runs them";
    if (w.type != "float" || w.numBits != 8)
        return "weights of type " + w.type + " with " + std::to_string(w.numBits) + " bits (group " + group.name +
               ") are not supported; only 8-bit float weights run";
    if (w.strategy == "block") {
        const auto& b = w.blockStructure;
        if (b.size() != 2 || b[0] <= 0 || b[1] <= 0)
            return "weight strategy \"block\" with block_structure " + sizesText(b) + " (group " + group.name +
                   "), which is not two positive sizes [rows, columns]";
    } else if (w.strategy != "channel" && w.strategy != "tensor" && !mxFormat) {
        return "weight strategy \"" + w.strategy + "\"" + strategyMeaning(w.strategy) + " (group " + group.name +
               ") is not supported; only tensor, channel, block and MXFP8 run";
    }
    if (auto reason = dynamicLocalReason(w, "weights", group))
        return reason;
    if (!w.symmetric)
        return "asymmetric weights (group " + group.name + ") are not supported";
    return scaleDtypeReason(w, "weights", group);
}

std::optional<std::string> activationSchemeReason(const ConfigGroup& group)
{
    if (!group.inputActivations)
        return std::nullopt;
    const QuantizationArgs& a = *group.inputActivations;
    if (a.type != "float" || a.numBits != 8)
        return "input activations of type " + a.type + " with " + std::to_string(a.numBits) + " bits (group " +
               group.name + ") are not supported";
    if (auto reason = dynamicLocalReason(a, "input activations", group))
        return reason;
    if (auto reason = scaleDtypeReason(a, "input activations", group))
        return reason;
    if (a.strategy == "group" && a.dynamic) {
        if (!a.groupSize || *a.groupSize <= 0)
            return "input activation strategy \"group\" with group_size " +
                   (a.groupSize ? std::to_string(*a.groupSize) : std::string("null")) + " (group " + group.name +
                   "), which is not a positive number of channels";
        return std::nullopt;
    }
    const bool dynamicToken = a.dynamic && a.strategy == "token";
    const bool staticTensor = !a.dynamic && a.strategy == "tensor";
    const bool dynamicTensor = a.dynamic && a.strategy == "tensor";
    if (!dynamicToken && !staticTensor && !dynamicTensor)
        return "input activation strategy \"" + a.strategy + "\"" + strategyMeaning(a.strategy) +
               (a.dynamic ? " (dynamic)" : " (static)") +
               " (group " + group.name +
               ") is not supported; only dynamic token, dynamic group and static tensor run";
    return std::nullopt;
}

} // namespace

std::optional<std::string> unsupportedSchemeReason(const QuantizationConfig& config, const ConfigGroup& group)
{
    if (config.quantMethod == "fp8")
        return std::string("quant_method \"fp8\" (block-wise weights with weight_scale_inv) is not supported");
    if (!config.quantMethod.empty() && config.quantMethod != "compressed-tensors")
        return "quant_method \"" + config.quantMethod + "\" is not supported";
    if (group.format != "float-quantized" && group.format != "naive-quantized" && group.format != "mxfp8-quantized")
        return "format \"" + group.format + "\" (group " + group.name +
               ") is not supported; only float-quantized, naive-quantized and mxfp8-quantized FP8 run";
    if (auto reason = weightSchemeReason(group))
        return reason;
    if (auto reason = activationSchemeReason(group))
        return reason;
    if (group.outputActivations)
        return "output activation quantization (group " + group.name + ") is not supported";
    return std::nullopt;
}

bool isMxfp8Args(const QuantizationArgs& args)
{
    return args.numBits == 8 && args.type == "float" && args.strategy == "group" && args.groupSize == 32 &&
           isUint8Dtype(args.scaleDtype);
}

bool runsOnAiu(const ConfigGroup& group)
{
    const bool weightsOk = !group.weights || group.weights->strategy == "tensor" || group.weights->strategy == "channel";
    const bool activationsOk = !group.inputActivations || group.inputActivations->strategy != "group";
    return weightsOk && activationsOk;
}

std::string describeScheme(const ConfigGroup& group)
{
    std::string out;
    if (group.weights && group.format == "mxfp8-quantized" && isMxfp8Args(*group.weights))
        out = "MXFP8 weights per 32-channel block with E8M0 scales";
    else if (group.weights && group.weights->strategy == "block")
        out = "FP" + std::to_string(group.weights->numBits) + " weights per " + sizesText(group.weights->blockStructure) +
              " block";
    else if (group.weights)
        out = "FP" + std::to_string(group.weights->numBits) + " weights per " + group.weights->strategy;
    else
        out = "float weights";
    if (!group.inputActivations) {
        out += ", float activations";
    } else {
        const QuantizationArgs& a = *group.inputActivations;
        if (isMxfp8Args(a))
            return out + ", " + (a.dynamic ? "dynamic" : "static") + " MXFP8 activations (per 32 channels, E8M0 scales)";
        out += std::string(", ") + (a.dynamic ? "dynamic" : "static") + " per-" + a.strategy +
               (a.strategy == "group" && a.groupSize ? " (" + std::to_string(*a.groupSize) + " channels)" : "") +
               " activations";
    }
    return out;
}

std::optional<std::string> transformRefusal(const QuantizationConfig& config)
{
    if (config.transforms.empty())
        return std::nullopt;
    // At most three of anything, each at most 60 characters: hundreds of exact module names (or a
    // hostile config) would drown the sentence.
    auto quoted = [](const std::string& item) {
        return "\"" + (item.size() > 60 ? item.substr(0, 57) + "..." : item) + "\"";
    };
    auto quotedList = [&](const std::vector<std::string>& items) {
        std::vector<std::string> distinct;
        for (const std::string& item : items)
            if (std::find(distinct.begin(), distinct.end(), item) == distinct.end())
                distinct.push_back(item);
        std::string out;
        for (std::size_t i = 0; i < distinct.size() && i < 3; ++i)
            out += (i ? ", " : "") + quoted(distinct[i]);
        if (distinct.size() > 3)
            out += " and " + std::to_string(distinct.size() - 3) + " more";
        return out;
    };
    std::string named;
    for (std::size_t i = 0; i < config.transforms.size() && i < 3; ++i) {
        const TransformScheme& t = config.transforms[i];
        named += (i ? "; " : "") + ("scheme " + quoted(t.name) + ": type " + quoted(t.type));
        if (!t.targets.empty())
            named += " on " + quotedList(t.targets);
        if (!t.locations.empty())
            named += " at " + quotedList(t.locations);
    }
    if (config.transforms.size() > 3)
        named += "; and " + std::to_string(config.transforms.size() - 3) + " more schemes";
    return "quantization_config.transform_config holds rotations that are part of the model (" + named +
           "), and this version does not apply them, so it does not run this checkpoint.";
}

nlohmann::json argsSummaryJson(const QuantizationArgs& args)
{
    auto orNull = [](const std::string& text) { return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text); };
    return {{"num_bits", args.numBits},
            {"type", args.type},
            {"strategy", args.strategy},
            {"symmetric", args.symmetric},
            {"dynamic", args.dynamicLocal ? nlohmann::json("local") : nlohmann::json(args.dynamic)},
            {"group_size", args.groupSize ? nlohmann::json(*args.groupSize) : nlohmann::json(nullptr)},
            {"block_structure", args.blockStructure.empty() ? nlohmann::json(nullptr) : nlohmann::json(args.blockStructure)},
            {"scale_dtype", orNull(args.scaleDtype)},
            {"zp_dtype", orNull(args.zpDtype)},
            {"observer", orNull(args.observer)},
            {"observer_kwargs", args.observerKwargs}};
}

std::string describeArgsExtras(const QuantizationArgs& args)
{
    std::string out;
    auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
    if (args.dynamicLocal)
        add("dynamic \"local\"");
    if (!args.scaleDtype.empty())
        add("scale_dtype " + args.scaleDtype);
    if (!args.zpDtype.empty())
        add("zp_dtype " + args.zpDtype);
    if (!args.observer.empty())
        add("observer " + args.observer);
    if (!args.observerKwargs.empty())
        add("observer_kwargs " + args.observerKwargs.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return out;
}

} // namespace scalescope
