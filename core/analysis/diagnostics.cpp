// Finding codes (stable; tests and filters rely on them):
//
// errors (the checkpoint will not run, or runs wrongly)
//   unsupported-scheme     a group that targets Linears uses a scheme this version does not run
//   weight-missing         a Linear's weight tensor is absent
//   weight-shape           a Linear's weight shape contradicts the config's sizes
//   weight-not-fp8         a targeted Linear's weight is not F8_E4M3 although the status is "compressed"
//   fp8-not-targeted       an F8_E4M3 weight whose module is ignored or matches no group
//   weight-nan             an F8 weight holds NaN codes (S.1111.111)
//   scale-missing          an F8 weight without weight_scale
//   scale-not-float        a weight_scale or input_scale whose dtype is not a float type
//   scale-shape            weight_scale shape contradicts the declared strategy (or block grid)
//   scale-invalid          a scale value is zero, negative, NaN or infinite (per block for block weights)
//   input-scale-missing    static activations without input_scale
//   input-scale-shape      an input_scale that is not a single value
//   tensor-nonfinite       a float weight, bias or LayerNorm parameter holds NaN or infinity
//   transform-config       a non-empty transform_config (rotations): every run refuses the checkpoint
//   group-conflict         two groups pick a Linear at the same level of specificity and quantize
//                          differently (a warning when they quantize alike)
// warnings (runs, but with a risk or a portability problem)
//   scale-shape-nonstandard  [out] instead of [out, 1] (channel) or [1, 1] instead of [1] (tensor)
//   input-scale-unexpected an input_scale next to dynamic (or no) activation quantization
//   scale-dtype            a scale's dtype differs from the model dtype
//   fp16-overflow          values that overflow or flush to zero when cast to fp16 (the AIU's type)
//   bias-dtype             a Linear bias whose dtype differs from the model dtype
//   qkv-scales-differ      per-tensor q/k/v weight scales of one layer differ (blocks fusing them)
//   qkv-input-scales-differ static q/k/v input scales of one layer differ (blocks fusing them)
//   weight-clipping        many weight codes sit at +-448 (see scale_statistics.cpp for the rule)
//   weight-underflow       many weight codes are zero or subnormal
//   block-all-zero         a block-wise weight with blocks whose codes are all zero
//   group-size-partial     group activations whose group_size does not divide a Linear's width
//   aiu-unsupported        block weights or group activations: emulated here, not on the AIU
//   pattern-invalid        a "re:" target or ignore entry that is not a valid regular expression
//                          (or that is too long, nested or repetitive to compile safely)
//   scale-subnormal        a scale that is subnormal in its dtype (flushed to zero by FTZ hardware)
//   static-scale-flush     (diagnoseActivations) a static input scale so large that every input is 0
//   nothing-targeted       a quantization_config that quantizes no Linear at all
//   first-group-differs    llm-compressor's model-free path (first group in config order) picks
//                          another group than the loaders' most-specific-target rule
//   config-unknown-key     a key compressed-tensors does not define inside a group or args block
//   static-scale-clipping  (diagnoseActivations) a static input scale clips too many activations
//   unused-tensors         tensors of encoder layers past num_hidden_layers, which no run reads
//   tokenizer-vocab-size   the tokenizer holds ids past config.json's vocab_size
//   status-from-tensors    FP8 weights on disk labelled other than "compressed" (frozen, missing, ...): run as
//                          compressed here; names the consumers that misread the label (consumers.cpp)
//   embedding-not-fp8      a group targets the word embeddings (class "Embedding", their name or a
//                          pattern) under status "compressed", but the table is stored float: it
//                          runs float here, while compressed-tensors looks for codes and a weight_scale
// The word embeddings (a group may quantize them like a Linear's weight) get the checks that apply
// to a lookup table: fp8-not-targeted, unsupported-scheme (also a strategy other than per tensor or
// per row), weight-shape, weight-nan, scale-missing, scale-not-float, scale-shape(-nonstandard),
// scale-invalid, scale-subnormal, scale-dtype, weight-clipping, weight-underflow, and, as an info,
// embedding-activations-ignored (a group's input_activations, which a lookup does not have).
// info
//   not-quantized          no quantization_config: a float checkpoint
//   strategy-mismatch      weights and input activations declare different strategies
//   tied-decoder-unquantized  a targeted lm_head.decoder that is tied to the float word embeddings
//   ignore-dead            an exact ignore name that names a container module, so it ignores nothing
#include "analysis/diagnostics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <regex>

#include "analysis/consumers.h"
#include "model/quantization_config.h"
#include "numerics/fp8.h"
#include "numerics/half.h"
#include "numerics/mx.h"

namespace scalescope {
namespace {

bool endsWith(const std::string& text, const std::string& suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string numberText(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", value);
    return buffer;
}

std::string percentText(double share)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f%%", share * 100.0);
    return buffer;
}

// The dtype the model computes in, as config.json's torch_dtype declares it.
Dtype modelDtypeOf(const ModelConfig& config)
{
    const std::string& name = config.torchDtype;
    if (name == "bfloat16" || name == "bf16")
        return Dtype::BF16;
    if (name == "float16" || name == "half" || name == "fp16")
        return Dtype::F16;
    return Dtype::F32;
}

// Long hostile strings (a 40 KB pattern) are shortened where they name a finding's subject.
std::string boundedSubject(const std::string& text)
{
    constexpr std::size_t kMax = 120;
    if (text.size() <= kMax)
        return text;
    std::size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut; // not inside a UTF-8 sequence
    return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes)";
}

// Smallest normal value of a scale's dtype: below it a scale is subnormal, and hardware that
// flushes denormals to zero (FTZ/DAZ, common on accelerators) reads it as 0.
float smallestNormal(Dtype dtype)
{
    return dtype == Dtype::F16 ? 6.103515625e-05f : std::numeric_limits<float>::min();
}

bool isValidScale(float value)
{
    return value > 0 && std::isfinite(value);
}

// What a cast to fp16 does to a tensor's finite values: overflow past 65504 to infinity, or
// non-zero values that round to zero (at or below 2^-25). Non-finite values are someone else's
// finding.
struct Fp16CastDamage {
    int64_t overflow = 0;
    int64_t flushed = 0;
};

Fp16CastDamage fp16CastDamage(const TensorView& view)
{
    Fp16CastDamage damage;
    const int64_t count = view.numel();
    auto classify = [&](float value) {
        if (!std::isfinite(value) || value == 0.0f)
            return;
        const uint16_t bits = half::floatToF16(value);
        if ((bits & 0x7C00u) == 0x7C00u)
            ++damage.overflow;
        else if ((bits & 0x7FFFu) == 0)
            ++damage.flushed;
    };
    for (int64_t i = 0; i < count; ++i) {
        const uint8_t* element = view.data + static_cast<std::size_t>(i) * dtypeSize(view.dtype);
        if (view.dtype == Dtype::BF16) {
            uint16_t bits;
            std::memcpy(&bits, element, sizeof bits);
            classify(half::bf16ToFloat(bits));
        } else if (view.dtype == Dtype::F32) {
            float value;
            std::memcpy(&value, element, sizeof value);
            classify(value);
        } else if (view.dtype == Dtype::F64) {
            double value;
            std::memcpy(&value, element, sizeof value);
            classify(static_cast<float>(value));
        }
    }
    return damage;
}

class CheckpointDiagnoser {
public:
    CheckpointDiagnoser(const Checkpoint& checkpoint, const std::vector<LinearScaleStatistics>& statistics,
                        const DiagnosticsOptions& options)
        : checkpoint_(checkpoint), config_(checkpoint.config()), store_(checkpoint.tensors()), options_(options),
          layout_(checkpoint.layout()), modelDtype_(modelDtypeOf(config_)), modules_(layout_.linearModules())
    {
        for (const LinearScaleStatistics& stats : statistics)
            statistics_.emplace(stats.module, &stats);
    }

    std::vector<Finding> run()
    {
        if (!config_.quantization)
            add(Severity::Info, "not-quantized", checkpoint_.directory(),
                "The checkpoint in " + checkpoint_.directory() +
                    " has no quantization_config, so it runs in float: use it as a reference, or quantize it "
                    "with `scalescope-cli quantize`.");
        else
            checkConfig(*config_.quantization);
        for (const std::string& module : modules_)
            checkLinear(module);
        checkWordEmbeddings();
        for (int layer = 0; layer < static_cast<int>(config_.numLayers); ++layer)
            checkFusableQkv(layer);
        checkFp16Casts();
        checkNonFiniteTensors();
        if (!checkpoint_.tokenizerMismatch().empty())
            add(Severity::Warning, "tokenizer-vocab-size", checkpoint_.directory(),
                checkpoint_.tokenizerMismatch() + " Commands that take text refuse it; --input-ids still runs.");
        if (const std::string note = checkpoint_.unusedTensorsNote(); !note.empty())
            add(Severity::Warning, "unused-tensors", checkpoint_.unusedLayerTensors().front(), note);
        return std::move(findings_);
    }

private:
    void add(Severity severity, const std::string& code, const std::string& subject, const std::string& message)
    {
        findings_.push_back({severity, code, subject, message});
    }

    const ConfigGroup* groupOf(const std::string& module) const
    {
        return checkpoint_.plan().targetGroup(module);
    }

    bool groupRuns(const ConfigGroup& group) const
    {
        return !unsupportedSchemeReason(*config_.quantization, group).has_value();
    }

    void checkPattern(const std::string& entry, const std::string& where)
    {
        if (entry.rfind("re:", 0) == 0)
            if (const auto problem = targetPatternProblem(entry.substr(3))) {
                add(Severity::Warning, "pattern-invalid", boundedSubject(entry),
                    "The " + where + " entry \"" + boundedSubject(entry) + "\" in quantization_config is refused: " +
                        *problem + ", so it matches no module; simplify the pattern.");
                return;
            }
        if (!isValidTargetPattern(entry))
            add(Severity::Warning, "pattern-invalid", entry,
                "The " + where + " entry \"" + entry +
                    "\" in quantization_config is not a valid regular expression, so it matches no module; "
                    "fix the pattern.");
    }

    // Same-level overlaps and the model-free writer's other pick, one finding per pair of groups.
    void checkGroupMatching()
    {
        std::map<std::pair<std::string, std::string>, std::vector<std::string>> conflicts, differing;
        std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> rules;
        std::map<std::pair<std::string, std::string>, bool> alike;
        for (const std::string& module : modules_) {
            const GroupMatch* match = checkpoint_.plan().groupMatch(module);
            if (!match || !match->group)
                continue;
            for (const GroupCandidate& other : match->conflicts) {
                const auto key = std::make_pair(match->group->name, other.group->name);
                conflicts[key].push_back(module);
                rules[key] = {match->rule, other.rule};
                alike[key] = sameScheme(*match->group, *other.group);
            }
            if (match->conflicts.empty() && match->firstInOrder.group && match->firstInOrder.group != match->group) {
                const auto key = std::make_pair(match->group->name, match->firstInOrder.group->name);
                differing[key].push_back(module);
                rules[key] = {match->rule, match->firstInOrder.rule};
            }
        }
        auto modulesText = [](const std::vector<std::string>& modules) {
            return "module '" + modules.front() + "'" +
                   (modules.size() > 1 ? " and " + std::to_string(modules.size() - 1) + " other Linears" : "");
        };
        for (const auto& [key, modules] : conflicts)
            add(alike[key] ? Severity::Warning : Severity::Error, "group-conflict", modules.front(),
                "Groups " + key.first + " and " + key.second + " both pick " + modulesText(modules) +
                    " at the same level of specificity (" + rules[key].first + "; " + rules[key].second + "), " +
                    (alike[key] ? "though they quantize alike so the run is defined"
                                : "and they quantize differently, so the run refuses") +
                    "; make one target more specific or drop it.");
        for (const auto& [key, modules] : differing)
            add(Severity::Warning, "first-group-differs", modules.front(),
                "For " + modulesText(modules) + " compressed-tensors and vLLM pick the most specific target (" +
                    rules[key].first + "), but llm-compressor's model-free path takes the first group in config order (" +
                    rules[key].second + "); this workbench runs " + key.first +
                    ", so give the groups targets that do not overlap.");
    }

    // An exact ignore name matches one module by its whole name; one that names a module holding
    // Linears (RoBERTa's lm_head) ignores none of them.
    void checkDeadIgnoreEntries(const QuantizationConfig& quantization)
    {
        for (const std::string& entry : quantization.ignore) {
            if (entry.empty() || entry.rfind("re:", 0) == 0 || layout_.findLinear(entry))
                continue;
            const auto inside = std::find_if(modules_.begin(), modules_.end(), [&](const std::string& module) {
                return module.rfind(entry + ".", 0) == 0;
            });
            if (inside != modules_.end())
                add(Severity::Info, "ignore-dead", entry,
                    "The ignore entry \"" + entry + "\" names a module that holds Linears (such as '" + *inside +
                        "') rather than a Linear, and exact names match whole module names, so it ignores nothing; "
                        "list the Linears or use \"re:" + entry + "\\.\" to ignore them.");
        }
    }

    void checkUnknownKeys(const QuantizationConfig& quantization)
    {
        if (quantization.unknownKeys.empty())
            return;
        std::string listed;
        for (const std::string& key : quantization.unknownKeys)
            listed += (listed.empty() ? "" : ", ") + boundedSubject(key);
        add(Severity::Warning, "config-unknown-key", boundedSubject(quantization.unknownKeys.front()),
            "quantization_config holds keys compressed-tensors does not define (" + boundedSubject(listed) +
                "); they are ignored here, but compressed-tensors refuses to load such a config, so remove them.");
    }

    // A label that disagrees with the tensors: the run reads the tensors (the plan takes an FP8 weight
    // as compressed whatever the label); the consumers that read the label are named.
    void checkStatusLabel(const QuantizationConfig& quantization)
    {
        const std::vector<StatusMisreading> misreadings = statusMisreadings(checkpoint_);
        if (misreadings.empty())
            return;
        std::string first, consequences;
        int fp8 = 0;
        for (const std::string& module : modules_) {
            const TensorView* weight = store_.find(module + ".weight");
            if (weight && weight->dtype == Dtype::F8_E4M3 && fp8++ == 0)
                first = module;
        }
        for (const StatusMisreading& m : misreadings)
            consequences += (consequences.empty() ? "" : ", and ") + m.consequence;
        const std::string label = quantization.status.empty() ? "missing" : "\"" + quantization.status + "\"";
        add(Severity::Warning, "status-from-tensors", first,
            "quantization_status is " + label + " but " + std::to_string(fp8) +
                " Linears (such as '" + first + "') hold F8_E4M3 weights on disk, so this workbench runs them as "
                "compressed, read from the tensors; the label is misread elsewhere: " + consequences +
                " (vLLM does not read the label); set quantization_status to \"compressed\".");
    }

    // Findings about groups as a whole, once per group rather than once per module.
    void checkConfig(const QuantizationConfig& quantization)
    {
        checkStatusLabel(quantization);
        if (const auto refusal = transformRefusal(quantization))
            add(Severity::Error, "transform-config", checkpoint_.directory(),
                refusal->substr(0, refusal->size() - 1) +
                    "; serve it with a runtime that applies them (compressed-tensors, vLLM) or quantize the model "
                    "again without transforms.");
        checkGroupMatching();
        checkDeadIgnoreEntries(quantization);
        checkUnknownKeys(quantization);
        for (const std::string& entry : quantization.ignore)
            checkPattern(entry, "ignore");
        std::map<const ConfigGroup*, std::vector<std::string>> targeted;
        for (const std::string& module : modules_)
            if (const ConfigGroup* group = groupOf(module))
                targeted[group].push_back(module);
        if (targeted.empty() && !checkpoint_.plan().wordEmbeddingsTargetGroup())
            add(Severity::Warning, "nothing-targeted", checkpoint_.directory(),
                "The quantization_config of " + checkpoint_.directory() + " quantizes none of the " +
                    std::to_string(modules_.size()) +
                    " Linear modules (each is ignored or matches no target), so the checkpoint runs in float; "
                    "fix the targets and ignore lists or remove quantization_config.");

        for (const ConfigGroup& group : quantization.groups) {
            for (const std::string& target : group.targets)
                checkPattern(target, "target");
            const auto modules = targeted.find(&group);
            if (modules == targeted.end())
                continue;
            const std::string& first = modules->second.front();
            const std::size_t others = modules->second.size() - 1;
            if (auto reason = unsupportedSchemeReason(quantization, group)) {
                // The reason may end in "; only ... run", which the remedy below says in full.
                std::string scheme = *reason;
                if (const std::size_t clause = scheme.find("; "); clause != std::string::npos)
                    scheme.erase(clause);
                add(Severity::Error, "unsupported-scheme", first,
                    "Module '" + first + "'" +
                        (others ? " and " + std::to_string(others) + " other Linears of group " + group.name : "") +
                        " cannot run here because " + scheme +
                        "; fix the group in config.json or requantize with FP8 weights per tensor, channel or "
                        "block and dynamic per-token or per-group, or static per-tensor, FP8 activations.");
                continue;
            }
            checkGroupRuns(group, modules->second);
            if (!runsOnAiu(group))
                add(Severity::Warning, "aiu-unsupported", group.name,
                    "Group " + group.name + " (" + describeScheme(group) + ", module '" + first + "'" +
                        (others ? " and " + std::to_string(others) + " others" : "") +
                        ") runs here in emulation but cannot run on AIU (its FP8 Linear takes tensor or channel "
                        "weights only); requantize with per-channel weights and per-token activations for the AIU.");
            if (group.weights && group.inputActivations
                && group.weights->strategy != group.inputActivations->strategy) {
                // Information, not a defect: channel + token is the standard FP8_DYNAMIC scheme.
                const bool standard
                    = group.weights->strategy == "channel" && group.inputActivations->strategy == "token";
                add(Severity::Info, "strategy-mismatch", group.name,
                    "For information: group " + group.name + " quantizes weights per " + group.weights->strategy
                        + " and input activations per " + group.inputActivations->strategy
                        + (standard ? " (llm-compressor's standard FP8_DYNAMIC scheme)" : "")
                        + ", which runs here as declared. Only for a loader written for another device (an AIU "
                          "runner): it must read the weight strategy from weights.strategy, not from the "
                          "activation settings.");
            }
        }
    }

    void checkLinear(const std::string& module)
    {
        const ConfigGroup* group = groupOf(module);
        const TensorView* weight = store_.find(module + ".weight");
        const LayoutLinear& linear = *layout_.findLinear(module);
        if (!weight) {
            if (!linear.tiedWeight.empty()) {
                // Tied to the word embeddings: the engine runs it in float whatever the config says.
                if (group && config_.quantization->status == "compressed" && groupRuns(*group))
                    add(Severity::Info, "tied-decoder-unquantized", module,
                        "Module '" + module + "' is tied to the word embeddings, so it runs in float although "
                        "group " + group->name + " targets it; add " + module.substr(0, module.find('.')) +
                            " to the ignore list to say so, or store a quantized decoder.");
            } else {
                add(Severity::Error, "weight-missing", module + ".weight",
                    "Tensor '" + module + ".weight' is missing from " + store_.location() +
                        "; the checkpoint is incomplete, so export it again.");
            }
            return;
        }
        const std::vector<int64_t> expected = {linear.outFeatures, linear.inFeatures};
        const bool shapeOk = weight->shape == expected;
        if (!shapeOk)
            add(Severity::Error, "weight-shape", weight->name,
                "Tensor '" + weight->name + "' has shape " + shapeText(weight->shape) + " but config.json implies " +
                    shapeText(expected) + "; the weights and config.json belong to different models.");

        checkBias(linear);

        const bool isFp8 = weight->dtype == Dtype::F8_E4M3;
        if (!group) {
            if (isFp8)
                add(Severity::Error, "fp8-not-targeted", module,
                    "Tensor '" + weight->name + "' is F8_E4M3 but " +
                        (config_.quantization ? "quantization_config ignores module '" + module +
                                                    "' or no config group targets it"
                                              : std::string("config.json has no quantization_config")) +
                        ", so nothing says how to dequantize it; add the module to a config group's targets.");
            return;
        }
        if (!groupRuns(*group))
            return; // reported once for the group; its tensors follow another layout
        if (!isFp8) {
            if (config_.quantization->status == "compressed")
                add(Severity::Error, "weight-not-fp8", module,
                    "Tensor '" + weight->name + "' is " + dtypeName(weight->dtype) + " but group " + group->name +
                        " targets module '" + module +
                        "' and quantization_status is \"compressed\", so it should be F8_E4M3; quantize it or add "
                        "the module to the ignore list.");
            return;
        }
        checkNanCodes(*weight);
        const bool scaleOk = group->format == "mxfp8-quantized" ? checkMxfp8Scale(module, expected)
                             : group->weights->strategy == "block" ? checkBlockScale(module, *group, expected)
                                                                   : checkWeightScale(module, *group, expected[0]);
        checkInputScale(module, *group);
        // The clipping estimate groups codes by the scale layout; with a wrong weight or scale
        // shape that grouping is a guess, and its share would only echo the error already reported.
        if (shapeOk && scaleOk)
            checkCodeShares(module);
    }

    // The word-embedding table when a group quantizes it or it is stored FP8: the weight and scale
    // checks of a Linear, with rows (token ids) in place of output channels.
    void checkWordEmbeddings()
    {
        const TensorView* table = store_.find(layout_.wordEmbeddingsTensor());
        if (!table)
            return; // the run names the missing tensor; no quantization question to answer
        const std::string& module = checkpoint_.plan().wordEmbeddings().module;
        const ConfigGroup* group = checkpoint_.plan().wordEmbeddingsTargetGroup();
        if (table->dtype != Dtype::F8_E4M3) {
            if (checkpoint_.plan().wordEmbeddingsFloatButTargeted())
                add(Severity::Warning, "embedding-not-fp8", module,
                    "Tensor '" + table->name + "' is " + dtypeName(table->dtype) + " but group " + group->name +
                        " targets module '" + module + "' (" + checkpoint_.plan().wordEmbeddings().rule +
                        ") and quantization_status is \"compressed\": it runs float here, but compressed-tensors "
                        "looks for F8_E4M3 codes with a weight_scale; quantize the table or add the module to the "
                        "ignore list.");
            return;
        }
        if (!group) {
            add(Severity::Error, "fp8-not-targeted", module,
                "Tensor '" + table->name + "' is F8_E4M3 but " +
                    (config_.quantization ? "quantization_config ignores module '" + module +
                                                "' or no config group targets it"
                                          : std::string("config.json has no quantization_config")) +
                    ", so nothing says how to dequantize the word embeddings; add a group that targets \"" +
                    kEmbeddingClassName + "\" (or the module's name) with FP8 weights per row or per tensor.");
            return;
        }
        if (const std::string& problem = checkpoint_.plan().wordEmbeddingsProblem(); !problem.empty()) {
            add(Severity::Error, "unsupported-scheme", module,
                problem + " Fix the group in config.json or store the word embeddings float.");
            return;
        }
        const std::vector<int64_t> expected = {config_.vocabSize, config_.hiddenSize};
        const bool shapeOk = table->shape == expected;
        if (!shapeOk)
            add(Severity::Error, "weight-shape", table->name,
                "Tensor '" + table->name + "' has shape " + shapeText(table->shape) + " but config.json implies " +
                    shapeText(expected) + "; the weights and config.json belong to different models.");
        checkNanCodes(*table);
        const bool scaleOk = checkWeightScale(module, *group, expected[0]);
        if (group->inputActivations)
            add(Severity::Info, "embedding-activations-ignored", module,
                "Group " + group->name + " declares input activations, which the word embeddings (a lookup of "
                "token ids) do not have, so they are ignored for module '" + module + "'.");
        if (shapeOk && scaleOk)
            checkCodeShares(module);
    }

    void checkBias(const LayoutLinear& linear)
    {
        const TensorView* bias = findStoredBias(store_, linear);
        if (!bias || bias->dtype == modelDtype_)
            return;
        add(Severity::Warning, "bias-dtype", bias->name,
            "Tensor '" + bias->name + "' is " + dtypeName(bias->dtype) + " but the model computes in " +
                dtypeName(modelDtype_) + " (torch_dtype \"" + config_.torchDtype +
                "\"), so loaders cast it and may lose precision; store biases in the model dtype.");
    }

    void checkNanCodes(const TensorView& weight)
    {
        int64_t nanCodes = 0;
        const int64_t count = weight.numel();
        for (int64_t i = 0; i < count; ++i)
            nanCodes += (weight.data[i] & 0x7F) == 0x7F;
        if (nanCodes > 0)
            add(Severity::Error, "weight-nan", weight.name,
                "Tensor '" + weight.name + "' holds " + std::to_string(nanCodes) +
                    (nanCodes == 1 ? " NaN code, which makes" : " NaN codes, which make") +
                    " every output it reaches NaN; quantize the layer again from its float weights.");
    }

    // Counts scale values that are zero, negative, NaN or infinite; one finding per tensor.
    void checkScaleValues(const TensorView& scale)
    {
        const FloatTensor values = scale.toFloat();
        int64_t invalid = 0;
        std::size_t firstInvalid = 0;
        for (std::size_t i = 0; i < values.values.size(); ++i)
            if (!isValidScale(values.values[i]) && invalid++ == 0)
                firstInvalid = i;
        if (invalid > 0)
            add(Severity::Error, "scale-invalid", scale.name,
                "Tensor '" + scale.name + "' holds " + std::to_string(invalid) + " of " +
                    std::to_string(values.values.size()) + " scales that are zero, negative, NaN or infinite (" +
                    numberText(values.values[firstInvalid]) + " at index " + std::to_string(firstInvalid) +
                    "); quantize or calibrate the module again.");
    }

    void checkScaleDtype(const TensorView& scale)
    {
        if (scale.dtype == modelDtype_)
            return;
        add(Severity::Warning, "scale-dtype", scale.name,
            "Tensor '" + scale.name + "' is " + dtypeName(scale.dtype) + " but the model dtype is " +
                dtypeName(modelDtype_) + " (torch_dtype \"" + config_.torchDtype +
                "\"), and compressed-tensors stores scales in the model dtype; requantize with --scale-dtype "
                "matching the model or set torch_dtype to match.");
    }

    bool checkScaleIsFloat(const TensorView& scale)
    {
        if (isFloatDtype(scale.dtype))
            return true;
        add(Severity::Error, "scale-not-float", scale.name,
            "Tensor '" + scale.name + "' has dtype " + dtypeName(scale.dtype) +
                ", but scales must be F32, BF16 or F16; export the checkpoint again.");
        return false;
    }

    // The module's weight_scale when it exists and holds floats; otherwise reports why and returns null.
    const TensorView* floatWeightScale(const std::string& module)
    {
        const TensorView* scale = store_.find(module + ".weight_scale");
        if (!scale) {
            add(Severity::Error, "scale-missing", module + ".weight_scale",
                "Tensor '" + module + ".weight_scale' is missing, so the F8_E4M3 weight of module '" + module +
                    "' cannot be dequantized; export the checkpoint again with its scales.");
            return nullptr;
        }
        return checkScaleIsFloat(*scale) ? scale : nullptr;
    }

    // True when the scale's layout matches the strategy (values may still be invalid).
    bool checkWeightScale(const std::string& module, const ConfigGroup& group, int64_t outFeatures)
    {
        const TensorView* scale = floatWeightScale(module);
        if (!scale)
            return false;
        const std::string& strategy = group.weights->strategy;
        const bool perChannel = strategy == "channel";
        const std::vector<int64_t>& shape = scale->shape;
        const std::vector<int64_t> standard = perChannel ? std::vector<int64_t>{outFeatures, 1} : std::vector<int64_t>{1};
        // Shapes the engine runs but other compressed-tensors loaders may not.
        const bool nonstandard = perChannel ? shape == std::vector<int64_t>{outFeatures}
                                            : shape == std::vector<int64_t>{1, 1};
        const bool layoutOk = shape == standard || nonstandard || (!perChannel && shape.empty());
        if (nonstandard)
            add(Severity::Warning, "scale-shape-nonstandard", scale->name,
                "Tensor '" + scale->name + "' has shape " + shapeText(shape) +
                    "; it runs here, but compressed-tensors loaders expect " + shapeText(standard) + " for per-" +
                    strategy + " weights, so reshape it.");
        else if (!layoutOk)
            add(Severity::Error, "scale-shape", scale->name,
                "Tensor '" + scale->name + "' has shape " + shapeText(shape) + ", but group " + group.name +
                    " declares per-" + strategy + " weights, which need " + shapeText(standard) +
                    "; fix the weights strategy in config.json or export the scales again.");
        checkScaleValues(*scale);
        checkSubnormalScales(*scale);
        checkScaleDtype(*scale);
        return layoutOk;
    }

    // Block-wise weights: weight_scale must be the block grid [ceil(out / bo), ceil(in / bi)];
    // invalid scales are named by their block, and blocks of all-zero codes are pointed out.
    bool checkBlockScale(const std::string& module, const ConfigGroup& group, const std::vector<int64_t>& weightShape)
    {
        const TensorView* scale = floatWeightScale(module);
        if (!scale)
            return false;
        const std::vector<int>& block = group.weights->blockStructure;
        const std::vector<int64_t> grid = {(weightShape[0] + block[0] - 1) / block[0],
                                           (weightShape[1] + block[1] - 1) / block[1]};
        if (scale->shape != grid) {
            add(Severity::Error, "scale-shape", scale->name,
                "Tensor '" + scale->name + "' has shape " + shapeText(scale->shape) + ", but group " + group.name +
                    " declares block_structure [" + std::to_string(block[0]) + ", " + std::to_string(block[1]) +
                    "], which over the weight " + shapeText(weightShape) + " needs the block grid " +
                    shapeText(grid) + "; fix block_structure in config.json or export the scales again.");
            return false;
        }
        checkBlockScaleValues(*scale, grid[1]);
        checkSubnormalScales(*scale);
        checkScaleDtype(*scale);
        const auto stats = statistics_.find(module);
        if (stats != statistics_.end() && stats->second->zeroBlocks > 0)
            add(Severity::Warning, "block-all-zero", module + ".weight",
                "Tensor '" + module + ".weight' has " + std::to_string(stats->second->zeroBlocks) + " of " +
                    std::to_string(grid[0] * grid[1]) + " blocks whose codes are all zero, so those parts of the "
                    "weight are lost; check the float weights or quantize the module again.");
        return true;
    }

    // MXFP8 weights (numerics/mx.h): weight_scale must be U8 E8M0 exponents [out, ceil(in / 32)],
    // none of them 255 (NaN).
    bool checkMxfp8Scale(const std::string& module, const std::vector<int64_t>& weightShape)
    {
        const TensorView* scale = store_.find(module + ".weight_scale");
        if (!scale) {
            add(Severity::Error, "scale-missing", module + ".weight_scale",
                "Tensor '" + module + ".weight_scale' is missing, so the MXFP8 weight of module '" + module +
                    "' cannot be dequantized; export the checkpoint again with its scales.");
            return false;
        }
        const std::vector<int64_t> grid = {weightShape[0], (weightShape[1] + mx::kBlock - 1) / mx::kBlock};
        if (scale->dtype != Dtype::U8) {
            add(Severity::Error, "scale-not-e8m0", scale->name,
                "Tensor '" + scale->name + "' has dtype " + dtypeName(scale->dtype) +
                    ", but format mxfp8-quantized stores U8 E8M0 exponents; export the checkpoint again.");
            return false;
        }
        if (scale->shape != grid) {
            add(Severity::Error, "scale-shape", scale->name,
                "Tensor '" + scale->name + "' has shape " + shapeText(scale->shape) + ", but MXFP8 over the weight " +
                    shapeText(weightShape) + " needs one scale per 32 input channels, " + shapeText(grid) +
                    "; export the scales again.");
            return false;
        }
        int64_t nanCodes = 0, first = 0;
        for (int64_t k = 0; k < scale->numel(); ++k)
            if (scale->data[k] == mx::kE8M0NaN && nanCodes++ == 0)
                first = k;
        if (nanCodes > 0)
            add(Severity::Error, "scale-invalid", scale->name,
                "Tensor '" + scale->name + "' holds " + std::to_string(nanCodes) +
                    " E8M0 scales of 255, which is NaN (row " + std::to_string(first / grid[1]) + ", column " +
                    std::to_string(first % grid[1]) + "); quantize the module again.");
        return true;
    }

    void checkBlockScaleValues(const TensorView& scale, int64_t gridColumns)
    {
        const FloatTensor values = scale.toFloat();
        int64_t invalid = 0;
        std::size_t first = 0;
        for (std::size_t i = 0; i < values.values.size(); ++i)
            if (!isValidScale(values.values[i]) && invalid++ == 0)
                first = i;
        if (invalid == 0)
            return;
        const auto column = static_cast<int64_t>(first) % gridColumns, row = static_cast<int64_t>(first) / gridColumns;
        add(Severity::Error, "scale-invalid", scale.name,
            "Tensor '" + scale.name + "' holds " + std::to_string(invalid) + " of " +
                std::to_string(values.values.size()) + " block scales that are zero, negative, NaN or infinite (" +
                numberText(values.values[first]) + " for the block at block row " + std::to_string(row) +
                ", block column " + std::to_string(column) + "); quantize the module again.");
    }

    // Group activations whose group_size does not divide a Linear's input width: emulated here
    // with a shorter last run, but compressed-tensors refuses such a config and no kernel runs it.
    void checkGroupRuns(const ConfigGroup& group, const std::vector<std::string>& modules)
    {
        const auto& a = group.inputActivations;
        if (!a || a->strategy != "group" || !a->groupSize || *a->groupSize <= 0)
            return;
        std::vector<std::string> partial;
        for (const std::string& module : modules)
            if (layout_.findLinear(module)->inFeatures % *a->groupSize != 0)
                partial.push_back(module);
        if (partial.empty())
            return;
        add(Severity::Warning, "group-size-partial", partial.front(),
            "Group " + group.name + " quantizes inputs in runs of " + std::to_string(*a->groupSize) +
                " channels, which does not divide the " +
                std::to_string(layout_.findLinear(partial.front())->inFeatures) + " input features of module '" +
                partial.front() + "'" +
                (partial.size() > 1 ? " and " + std::to_string(partial.size() - 1) + " other Linears" : "") +
                "; this workbench emulates a shorter last run, but compressed-tensors refuses the config and no "
                "runtime will load it, so choose a group_size that divides every Linear's width.");
    }

    void checkInputScale(const std::string& module, const ConfigGroup& group)
    {
        const TensorView* input = store_.find(module + ".input_scale");
        const bool isStatic = group.inputActivations && !group.inputActivations->dynamic;
        if (!isStatic) {
            if (input)
                add(Severity::Warning, "input-scale-unexpected", input->name,
                    "Tensor '" + input->name + "' exists but group " + group.name +
                        (group.inputActivations ? " quantizes input activations dynamically"
                                                : " does not quantize input activations") +
                        ", so it is ignored; check that config.json declares the scheme the checkpoint was "
                        "calibrated for.");
            return;
        }
        if (!input) {
            add(Severity::Error, "input-scale-missing", module + ".input_scale",
                "Tensor '" + module + ".input_scale' is missing, but group " + group.name +
                    " declares static per-tensor activations for module '" + module +
                    "'; calibrate the checkpoint again or declare dynamic activations.");
            return;
        }
        if (!checkScaleIsFloat(*input))
            return;
        if (input->numel() != 1) {
            add(Severity::Error, "input-scale-shape", input->name,
                "Tensor '" + input->name + "' has shape " + shapeText(input->shape) +
                    ", but a static per-tensor input scale is a single value of shape [1]; calibrate the "
                    "checkpoint again.");
            return;
        }
        checkScaleValues(*input);
        checkSubnormalScales(*input);
        checkScaleDtype(*input);
    }

    void checkSubnormalScales(const TensorView& scale)
    {
        const FloatTensor values = scale.toFloat();
        const float normal = smallestNormal(scale.dtype);
        int64_t subnormal = 0;
        float smallest = 0;
        for (float v : values.values)
            if (v > 0 && v < normal && (subnormal++ == 0 || v < smallest))
                smallest = v;
        if (subnormal > 0)
            add(Severity::Warning, "scale-subnormal", scale.name,
                "Tensor '" + scale.name + "' holds " + std::to_string(subnormal) + " of " +
                    std::to_string(values.values.size()) + " scales that are subnormal in " + dtypeName(scale.dtype) +
                    " (smallest " + numberText(smallest) + ", below " + numberText(normal) +
                    "), which hardware that flushes denormals reads as 0; rescale the module or keep it in float.");
    }

    // NaN or infinity in a float parameter reaches every output downstream; the fp16 check below
    // skips non-finite values, and scales have their own finding. Each tensor is converted a slice
    // at a time: a whole copy of the largest (the word embeddings, 154 MB at roberta-base) added
    // that much to the peak memory of every compare.
    void checkNonFiniteTensors()
    {
        constexpr int64_t kSlice = int64_t(1) << 16;
        std::vector<float> values(static_cast<std::size_t>(kSlice));
        for (const TensorView* view : store_.tensors()) {
            if (!isFloatDtype(view->dtype) || endsWith(view->name, ".weight_scale") ||
                endsWith(view->name, ".input_scale"))
                continue;
            const int64_t count = view->numel();
            TensorView slice;
            slice.dtype = view->dtype;
            int64_t nan = 0, inf = 0, first = 0;
            for (int64_t begin = 0; begin < count; begin += kSlice) {
                const int64_t length = std::min(kSlice, count - begin);
                slice.data = view->data + static_cast<std::size_t>(begin) * dtypeSize(view->dtype);
                slice.shape = {length};
                slice.toFloat(values.data());
                for (int64_t i = 0; i < length; ++i) {
                    const float v = values[static_cast<std::size_t>(i)];
                    if (std::isfinite(v))
                        continue;
                    if (nan + inf == 0)
                        first = begin + i;
                    (std::isnan(v) ? nan : inf) += 1;
                }
            }
            if (nan + inf == 0)
                continue;
            add(Severity::Error, "tensor-nonfinite", view->name,
                "Tensor '" + view->name + "' in " + view->file + " holds " + std::to_string(nan) + " NaN and " +
                    std::to_string(inf) + " infinite values of " + std::to_string(count) +
                    " (first at index " + std::to_string(first) +
                    "), which make every output they reach NaN or infinite; export the checkpoint again from "
                    "finite weights.");
        }
    }

    void checkCodeShares(const std::string& module)
    {
        const auto found = statistics_.find(module);
        if (found == statistics_.end() || !found->second->quantized)
            return;
        const LinearScaleStatistics& stats = *found->second;
        if (stats.clippedShare > options_.heavyWeightClippingShare)
            add(Severity::Warning, "weight-clipping", module + ".weight",
                "Tensor '" + module + ".weight' has " + percentText(stats.clippedShare) +
                    " of its codes at +-448 beyond the two per scale group that an amax/448 scale puts there "
                    "(threshold " + percentText(options_.heavyWeightClippingShare) +
                    "), so its scales are too small and clip weights; requantize with amax/448 scales.");
        if (stats.underflowShare > options_.heavyWeightUnderflowShare)
            add(Severity::Warning, "weight-underflow", module + ".weight",
                "Tensor '" + module + ".weight' has " + percentText(stats.underflowShare) +
                    " of its codes zero or subnormal (threshold " +
                    percentText(options_.heavyWeightUnderflowShare) +
                    "), so outlier weights stretch its scales and the small weights lose their precision; use "
                    "per-channel scales or keep this module in float.");
    }

    // A single fused qkv projection has one weight scale and one input scale, so per-tensor q, k
    // and v can only be fused as they are when their scales agree.
    void checkFusableQkv(int layer)
    {
        const std::string prefix = layout_.attentionModule(layer);
        std::vector<float> weightScales, inputScales;
        for (LinearRole role : {LinearRole::Query, LinearRole::Key, LinearRole::Value}) {
            const LayoutLinear* linear = layout_.encoderLinear(layer, role);
            if (!linear)
                return;
            const std::string& module = linear->module;
            const ConfigGroup* group = groupOf(module);
            const TensorView* weight = store_.find(module + ".weight");
            if (!group || !groupRuns(*group) || !weight || weight->dtype != Dtype::F8_E4M3)
                return;
            if (group->weights->strategy == "tensor")
                if (float value; singleScale(module + ".weight_scale", &value))
                    weightScales.push_back(value);
            if (group->inputActivations && !group->inputActivations->dynamic)
                if (float value; singleScale(module + ".input_scale", &value))
                    inputScales.push_back(value);
        }
        auto differ = [](const std::vector<float>& scales) {
            return scales.size() == 3 && !(scales[0] == scales[1] && scales[1] == scales[2]);
        };
        auto listed = [](const std::vector<float>& scales) {
            return numberText(scales[0]) + ", " + numberText(scales[1]) + " and " + numberText(scales[2]);
        };
        if (differ(weightScales))
            add(Severity::Warning, "qkv-scales-differ", prefix,
                "The per-tensor weight scales of " + prefix + ".query, .key and .value differ (" +
                    listed(weightScales) +
                    "), so fusing them into one qkv projection needs the unfused weights or a requantization to "
                    "their largest scale.");
        if (differ(inputScales))
            add(Severity::Warning, "qkv-input-scales-differ", prefix,
                "The static input scales of " + prefix + ".query, .key and .value differ (" + listed(inputScales) +
                    ") although the three read the same input, so a fused qkv projection must pick one; "
                    "calibrate them to their largest value.");
    }

    // A readable, valid single-value scale; anything else is reported by the per-module checks.
    bool singleScale(const std::string& name, float* value) const
    {
        const TensorView* view = store_.find(name);
        if (!view || !isFloatDtype(view->dtype) || view->numel() != 1)
            return false;
        *value = view->toFloat().values[0];
        return isValidScale(*value);
    }

    // The AIU computes in fp16. Scales in any wider type and bfloat16 tensors can hold values fp16
    // cannot; float32 weights are left alone, as that is a reference checkpoint's normal form.
    void checkFp16Casts()
    {
        for (const TensorView* view : store_.tensors()) {
            const bool isScale = endsWith(view->name, ".weight_scale") || endsWith(view->name, ".input_scale");
            const bool relevant = isScale ? (view->dtype == Dtype::F32 || view->dtype == Dtype::BF16 ||
                                             view->dtype == Dtype::F64)
                                          : view->dtype == Dtype::BF16;
            if (!relevant)
                continue;
            const Fp16CastDamage damage = fp16CastDamage(*view);
            if (damage.overflow == 0 && damage.flushed == 0)
                continue;
            std::string what;
            if (damage.overflow > 0)
                what = std::to_string(damage.overflow) + " overflow (|x| > 65504)";
            if (damage.flushed > 0)
                what += (what.empty() ? "" : " and ") + std::to_string(damage.flushed) +
                        " flush to zero (below 2^-24)";
            add(Severity::Warning, "fp16-overflow", view->name,
                "Of the " + std::to_string(view->numel()) + " values of " + dtypeName(view->dtype) + " tensor '" +
                    view->name + "', " + what + " when cast to fp16 as the AIU computes; " +
                    (isScale ? "requantize so that scales fit fp16, or keep this module in float."
                             : "rescale the tensor or keep it out of the fp16 path."));
        }
    }

    const Checkpoint& checkpoint_;
    const ModelConfig& config_;
    const TensorStore& store_;
    const DiagnosticsOptions& options_;
    const EncoderLayout& layout_;
    const Dtype modelDtype_;
    const std::vector<std::string> modules_;
    std::map<std::string, const LinearScaleStatistics*> statistics_;
    std::vector<Finding> findings_;
};

// A static scale so large that even the largest observed input rounds to FP8 code 0: the module
// sees zeros only (|x / s| <= 2^-10, half the smallest E4M3 subnormal, rounds to 0).
std::optional<Finding> staticScaleFlushFinding(const ActivationStatistics& stats, float scale)
{
    constexpr double kHalfSmallestSubnormal = 1.0 / 1024.0;
    if (!(stats.amax > 0) || !(scale > 0) || double(stats.amax) / double(scale) > kHalfSmallestSubnormal)
        return std::nullopt;
    return Finding{Severity::Error, "static-scale-flush", stats.module,
        "The static input scale " + numberText(scale) + " of module '" + stats.module
            + "' is so large that every input (observed amax " + numberText(stats.amax)
            + ") rounds to FP8 zero, so the module computes only its bias; recalibrate input_scale "
              "(amax / 448 = "
            + numberText(double(stats.amax) / fp8::kE4M3Max) + ")."};
}

} // namespace

const char* severityName(Severity severity)
{
    switch (severity) {
    case Severity::Error:
        return "error";
    case Severity::Warning:
        return "warning";
    case Severity::Info:
        return "info";
    }
    return "?";
}

std::vector<Finding> diagnoseCheckpoint(const Checkpoint& checkpoint,
                                        const std::vector<LinearScaleStatistics>& statistics,
                                        const DiagnosticsOptions& options)
{
    return CheckpointDiagnoser(checkpoint, statistics, options).run();
}

std::vector<Finding> diagnoseActivations(const std::vector<ActivationStatistics>& activations,
                                         const std::vector<LinearInfo>& linears,
                                         const DiagnosticsOptions& options)
{
    std::map<std::string, const LinearInfo*> byModule;
    for (const LinearInfo& info : linears)
        byModule.emplace(info.module, &info);
    std::vector<Finding> findings;
    for (const ActivationStatistics& stats : activations) {
        const auto info = byModule.find(stats.module);
        if (info == byModule.end() || info->second->activations != ActivationQuantization::StaticPerTensor ||
            stats.elements <= 0)
            continue;
        if (auto flush = staticScaleFlushFinding(stats, stats.inputScale > 0 ? stats.inputScale : info->second->inputScale)) {
            findings.push_back(std::move(*flush));
            continue;
        }
        const double share = double(stats.clipped) / double(stats.elements);
        if (!(share > options.staticScaleClippingShare))
            continue;
        const float scale = stats.inputScale > 0 ? stats.inputScale : info->second->inputScale;
        // The same bound as the count (fp8.h): an amax within it cannot have clipped anything.
        if (stats.amax / scale <= fp8::kE4M3ClipThreshold)
            continue;
        findings.push_back({Severity::Warning, "static-scale-clipping", stats.module,
            "The static input scale " + numberText(scale) + " of module '" + stats.module + "' covers |x| up to "
                + numberText(double(fp8::kE4M3Max) * scale) + " but the observed amax is " + numberText(stats.amax)
                + ", so " + std::to_string(stats.clipped) + " of " + std::to_string(stats.elements) + " inputs ("
                + percentText(share)
                + ") were clipped; recalibrate input_scale on representative "
                  "data (amax / 448 = "
                + numberText(double(stats.amax) / fp8::kE4M3Max) + ")."});
    }
    return findings;
}

namespace {

// 71204.5 -> "71,204": magnitudes of activations are read by people, not parsed.
std::string groupedNumber(double value)
{
    std::string digits = std::to_string(static_cast<long long>(std::llround(value)));
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
        digits.insert(static_cast<std::size_t>(i), ",");
    return digits;
}

std::optional<Finding> headroomFinding(const ModuleOutputRange& range, const EncoderLayout& layout, RunMode mode)
{
    std::string who = layout.describeModule(range.module);
    who[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(who[0])));
    if (std::isinf(range.maxAbs) && mode == RunMode::Fp16)
        return Finding{Severity::Error, "fp16-activation-overflow", range.module,
                       who + " overflows to inf in the fp16 run on this input: on the AIU path "
                       "(float16) it passes 65,504; keep it below that (scale its weights, bias or LayerNorm down) or "
                       "run this module in float32."};
    if (range.maxAbs > half::kHalfMax)
        return Finding{Severity::Warning, "fp16-activation-overflow", range.module,
                       who + " reaches " +
                           (std::isinf(range.maxAbs) ? std::string("inf") : groupedNumber(range.maxAbs)) +
                           " on this input: it overflows in fp16 (the AIU path), whose largest value is 65,504; run "
                           "--mode fp16 to see where the overflow leads."};
    if (range.maxAbs > half::kHalfMax / 2)
        return Finding{Severity::Info, "fp16-low-headroom", range.module,
                       who + " reaches " + groupedNumber(range.maxAbs) +
                           " on this input, within a factor of 2 of fp16's largest value 65,504 (the AIU path): "
                           "another input may overflow it."};
    return std::nullopt;
}

} // namespace

std::vector<Finding> diagnoseOutputRanges(const std::vector<ModuleOutputRange>& ranges, const EncoderLayout& layout,
                                          RunMode mode, const DiagnosticsOptions& options)
{
    std::vector<Finding> findings;
    for (const ModuleOutputRange& range : ranges) {
        if (auto finding = headroomFinding(range, layout, mode)) {
            findings.push_back(std::move(*finding));
            continue;
        }
        const double flushed = range.elements > 0 ? double(range.belowHalfNormal) / double(range.elements) : 0.0;
        if (flushed > options.fp16FlushShare)
            findings.push_back({Severity::Info, "fp16-activation-flush", range.module,
                                percentText(flushed) + " of the values of " + layout.describeModule(range.module) +
                                    " on this input lie below fp16's smallest normal value (6.1e-5): on the AIU path "
                                    "they lose precision or flush to zero."});
    }
    return findings;
}

} // namespace scalescope
