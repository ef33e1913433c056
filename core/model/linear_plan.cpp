#include "model/linear_plan.h"

#include <algorithm>
#include <optional>

#include "common/error.h"
#include "io/safetensors.h"
#include "model/quantization_config.h"
#include "numerics/mx.h"

namespace scalescope {
namespace {

ActivationQuantization activationSchemeOf(const ConfigGroup& group)
{
    if (!group.inputActivations)
        return ActivationQuantization::None;
    const QuantizationArgs& a = *group.inputActivations;
    if (a.dynamic && a.strategy == "token")
        return ActivationQuantization::DynamicPerToken;
    if (a.dynamic && a.strategy == "group")
        return ActivationQuantization::DynamicPerGroup;
    if (a.dynamic)
        return ActivationQuantization::DynamicPerTensor;
    return ActivationQuantization::StaticPerTensor;
}

// Block sizes and run widths as the plan's numbers (validated by unsupportedSchemeReason).
void describeGranularity(const ConfigGroup& group, LinearInfo& info)
{
    if (group.weights && group.weights->strategy == "block" && group.weights->blockStructure.size() == 2) {
        info.weightBlockRows = group.weights->blockStructure[0];
        info.weightBlockColumns = group.weights->blockStructure[1];
    }
    if (group.weights && group.format == "mxfp8-quantized" && isMxfp8Args(*group.weights)) {
        info.mxfp8Weights = true;
        info.weightBlockRows = 1;
        info.weightBlockColumns = mx::kBlock;
    }
    if (info.activations == ActivationQuantization::DynamicPerGroup && group.inputActivations->groupSize)
        info.activationGroupSize = *group.inputActivations->groupSize;
    info.mxfp8Activations =
        info.activations == ActivationQuantization::DynamicPerGroup && isMxfp8Args(*group.inputActivations);
}

// The stored static scale when it is one readable float value; the engine checks it in full.
float staticInputScale(const TensorStore& tensors, const std::string& module)
{
    const TensorView* inputScale = tensors.find(module + ".input_scale");
    if (!inputScale || inputScale->numel() != 1 || !isFloatDtype(inputScale->dtype))
        return 0;
    float value = 0;
    inputScale->toFloat(&value);
    return value;
}

// Two groups at the same level of specificity: the loaders have no rule between them. When they
// quantize alike the run is still defined; otherwise it refuses rather than guess.
std::string conflictProblem(const std::string& module, const GroupMatch& match)
{
    for (const GroupCandidate& other : match.conflicts)
        if (!sameScheme(*match.group, *other.group))
            return "Module '" + module + "' is picked by " + match.rule + " and by " + other.rule +
                   " at the same level of specificity, and the two groups quantize differently; make one "
                   "target more specific (an exact module name beats a re: pattern, which beats a class name).";
    return {};
}

// An F8_E4M3 word-embedding table decodes only through a group that picks it, runs, and scales
// per tensor or per row (what compressed-tensors writes for an Embedding); the sentence that stops
// a run otherwise, "" when it loads.
std::string embeddingProblem(const QuantizationConfig* quantization, const TensorView& weight, const GroupMatch& match,
                             const std::string& module)
{
    if (!match.group)
        return "Tensor '" + weight.name + "' in " + weight.file +
               " is F8_E4M3, but quantization_config does not quantize module '" + module +
               "' (it is ignored or no group targets it by the class name \"" + kEmbeddingClassName +
               "\", its name or a re: pattern).";
    if (std::string conflict = conflictProblem(module, match); !conflict.empty())
        return conflict;
    if (auto reason = unsupportedSchemeReason(*quantization, *match.group))
        return "Module '" + module + "' uses " + *reason + ".";
    const std::string& strategy = match.group->weights->strategy;
    if (strategy != "channel" && strategy != "tensor")
        return "Module '" + module + "' (the word embeddings) has weight strategy \"" + strategy + "\" in group " +
               match.group->name + "; an FP8 embedding is decoded per tensor or per row (strategy tensor or channel).";
    return "";
}

} // namespace

std::string embeddingScaleText(const std::string& weightStrategy)
{
    return weightStrategy == "channel" ? "per row" : weightStrategy == "tensor" ? "per tensor" : weightStrategy;
}

const char* runModeName(RunMode mode)
{
    switch (mode) {
    case RunMode::Fp8: return "fp8";
    case RunMode::Dequant: return "dequant";
    case RunMode::Fp16: return "fp16";
    }
    return "fp8";
}

bool parseRunMode(const std::string& name, RunMode& mode)
{
    for (RunMode candidate : {RunMode::Fp8, RunMode::Dequant, RunMode::Fp16})
        if (name == runModeName(candidate)) {
            mode = candidate;
            return true;
        }
    return false;
}

bool runsFp8(RunMode mode)
{
    return mode != RunMode::Dequant;
}

const char* accumulationName(Accumulation accumulation)
{
    return accumulation == Accumulation::Dl16 ? "dl16" : "float32";
}

bool parseAccumulation(const std::string& name, Accumulation& accumulation)
{
    for (Accumulation candidate : {Accumulation::Float32, Accumulation::Dl16})
        if (name == accumulationName(candidate)) {
            accumulation = candidate;
            return true;
        }
    return false;
}

std::string accumulationProblem(RunMode mode, Accumulation accumulation)
{
    if (accumulation == Accumulation::Dl16 && !runsFp8(mode))
        return std::string("DL16 accumulation models FP8 x FP8 products, which the ") + runModeName(mode) +
               " mode does not have; use it with fp8 or fp16.";
    return "";
}

std::string runLabel(RunMode mode, Accumulation accumulation)
{
    std::string label = runModeName(mode);
    if (accumulation == Accumulation::Dl16)
        label += "+dl16";
    return label;
}

bool parseRunLabel(const std::string& label, RunMode& mode, Accumulation& accumulation)
{
    const std::size_t plus = label.find('+');
    Accumulation parsedAccumulation = Accumulation::Float32;
    if (plus != std::string::npos &&
        (!parseAccumulation(label.substr(plus + 1), parsedAccumulation) || parsedAccumulation == Accumulation::Float32))
        return false;
    RunMode parsedMode = RunMode::Fp8;
    if (!parseRunMode(label.substr(0, plus), parsedMode) || !accumulationProblem(parsedMode, parsedAccumulation).empty())
        return false;
    mode = parsedMode;
    accumulation = parsedAccumulation;
    return true;
}

bool accumulatesInDl16(const LinearInfo& linear)
{
    const bool weightFactors = linear.weightStrategy == "channel" || linear.weightStrategy == "tensor";
    const bool rowScaled = linear.activations == ActivationQuantization::DynamicPerToken ||
                           linear.activations == ActivationQuantization::StaticPerTensor ||
                           linear.activations == ActivationQuantization::DynamicPerTensor;
    return linear.quantized && weightFactors && rowScaled;
}

std::string dl16Problem(const LinearInfo& linear)
{
    if (!linear.quantized || linear.activations == ActivationQuantization::None || accumulatesInDl16(linear))
        return "";
    const std::string why = linear.mxfp8Weights || linear.mxfp8Activations
        ? "MXFP8 scales (a power of two per 32 input channels)"
        : linear.activations == ActivationQuantization::DynamicPerGroup
        ? "group activation scales"
        : "\"" + linear.weightStrategy + "\" weight scales";
    return "Linear " + linear.module + " has " + why +
           ", which vary along the reduction; DL16 accumulation models only per-tensor or per-channel weight "
           "scales with per-token or per-tensor activation scales.";
}

LinearPlan::LinearPlan(const ModelConfig& config, const EncoderLayout& layout, const TensorStore& tensors)
{
    // Rotations (transform_config) act across Linears and activations: without them no Linear's
    // output is the model's, so every Linear carries the one sentence that refuses them.
    const std::optional<std::string> transforms =
        config.quantization ? transformRefusal(*config.quantization) : std::nullopt;
    for (const LayoutLinear& linear : layout.linears()) {
        LinearInfo info;
        info.module = linear.module;
        info.inFeatures = linear.inFeatures;
        info.outFeatures = linear.outFeatures;
        std::string problem, cause;
        const GroupMatch match = config.quantization ? matchGroup(*config.quantization, linear.module, "Linear")
                                                     : GroupMatch{nullptr, "no quantization_config", {}, {}};
        info.rule = match.rule;
        const TensorView* weight = tensors.find(linear.module + ".weight");
        const bool fp8Weight = weight && weight->dtype == Dtype::F8_E4M3;
        if (fp8Weight && !match.group) {
            cause = "untargeted FP8";
            problem = "Tensor '" + weight->name + "' in " + weight->file +
                      " is F8_E4M3, but quantization_config does not quantize module '" + linear.module +
                      "' (it is ignored or matches no group).";
        } else if (fp8Weight) {
            const ConfigGroup& group = *match.group;
            problem = conflictProblem(linear.module, match);
            cause = problem.empty() ? "" : "conflict " + match.rule;
            if (auto reason = unsupportedSchemeReason(*config.quantization, group); reason && problem.empty()) {
                problem = "Module '" + linear.module + "' uses " + *reason + ".";
                cause = *reason;
            }
            info.quantized = true;
            info.weightStrategy = group.weights ? group.weights->strategy : "";
            info.group = group.name;
            info.activations = activationSchemeOf(group);
            describeGranularity(group, info);
            if (info.activations == ActivationQuantization::StaticPerTensor)
                info.inputScale = staticInputScale(tensors, linear.module);
        } else if (weight && match.group && config.quantization->status == "compressed") {
            cause = "float targeted by " + match.group->name;
            problem = "Tensor '" + weight->name + "' in " + weight->file + " has dtype " + dtypeName(weight->dtype) +
                      ", but quantization_config group " + match.group->name + " targets module '" + linear.module +
                      "', so it should be F8_E4M3.";
        }
        if (transforms)
            problem = cause = *transforms;
        index_[info.module] = linears_.size();
        linears_.push_back(std::move(info));
        problems_.push_back(std::move(problem));
        causes_.push_back(std::move(cause));
        targetGroups_.push_back(match.group);
        matches_.push_back(config.quantization ? std::make_shared<const GroupMatch>(match) : nullptr);
    }

    embedding_.module = layout.wordEmbeddingsModule();
    const GroupMatch match = config.quantization ? matchGroup(*config.quantization, embedding_.module, kEmbeddingClassName)
                                                 : GroupMatch{nullptr, "no quantization_config", {}, {}};
    embedding_.rule = match.rule;
    embeddingGroup_ = match.group;
    // A float table runs as stored even when a group targets it: checkpoints that loaded before
    // embeddings could be quantized load as they did.
    const TensorView* table = tensors.find(layout.wordEmbeddingsTensor());
    embeddingFloatTargeted_ = table && table->dtype != Dtype::F8_E4M3 && match.group &&
                              config.quantization->status == "compressed" &&
                              !unsupportedSchemeReason(*config.quantization, *match.group);
    if (table && table->dtype == Dtype::F8_E4M3) {
        embeddingProblem_ = embeddingProblem(config.quantization ? &*config.quantization : nullptr, *table, match,
                                             embedding_.module);
        if (embeddingProblem_.empty()) {
            embedding_.quantized = true;
            embedding_.weightStrategy = match.group->weights->strategy;
            embedding_.group = match.group->name;
        }
    }
}

std::vector<PlanRefusal> LinearPlan::refusals() const
{
    // The sentences of one cause differ only in the module they name; the first one stands for all.
    std::vector<PlanRefusal> out;
    std::vector<std::string> causes;
    for (std::size_t i = 0; i < linears_.size(); ++i) {
        if (problems_[i].empty())
            continue;
        const auto known = std::find(causes.begin(), causes.end(), causes_[i]);
        if (known == causes.end()) {
            causes.push_back(causes_[i]);
            out.push_back({problems_[i], {linears_[i].module}});
        } else {
            out[static_cast<std::size_t>(known - causes.begin())].modules.push_back(linears_[i].module);
        }
    }
    if (!embeddingProblem_.empty())
        out.push_back({embeddingProblem_, {embedding_.module}});
    return out;
}

const LinearInfo* LinearPlan::find(const std::string& module) const
{
    const auto it = index_.find(module);
    return it == index_.end() ? nullptr : &linears_[it->second];
}

bool LinearPlan::anyQuantized() const
{
    for (const LinearInfo& linear : linears_)
        if (linear.quantized)
            return true;
    return false;
}

const std::string& LinearPlan::problem(const std::string& module) const
{
    static const std::string none;
    const auto it = index_.find(module);
    return it == index_.end() ? none : problems_[it->second];
}

const ConfigGroup* LinearPlan::targetGroup(const std::string& module) const
{
    const auto it = index_.find(module);
    return it == index_.end() ? nullptr : targetGroups_[it->second];
}

const GroupMatch* LinearPlan::groupMatch(const std::string& module) const
{
    const auto it = index_.find(module);
    return it == index_.end() ? nullptr : matches_[it->second].get();
}

void validateOverrides(const PrecisionOverrides& overrides, const EncoderLayout& layout)
{
    for (const auto& [module, precision] : overrides.modules)
        if (!layout.findLinear(module) && layout.fp8AttentionLayer(module) < 0)
            throw Error("The precision override names '" + module +
                        "', which is not a Linear of this model (nor a layer's FP8 attention, such as " +
                        layout.fp8AttentionUnit(0) + ").");
}

bool quantizesActivations(const LinearInfo& linear, RunMode mode, const PrecisionOverrides& overrides)
{
    if (!linear.quantized || linear.activations == ActivationQuantization::None)
        return false;
    const auto it = overrides.modules.find(linear.module);
    if (it != overrides.modules.end())
        return it->second == Precision::Fp8;
    return runsFp8(mode) && !overrides.othersFloat;
}

const char* attentionPrecisionName(AttentionPrecision attention)
{
    return attention == AttentionPrecision::Fp8Aiu ? "fp8-aiu" : "float";
}

bool parseAttentionPrecision(const std::string& name, AttentionPrecision& attention)
{
    for (AttentionPrecision candidate : {AttentionPrecision::Float, AttentionPrecision::Fp8Aiu})
        if (name == attentionPrecisionName(candidate)) {
            attention = candidate;
            return true;
        }
    return false;
}

bool attentionRunsFp8(const EncoderLayout& layout, int layer, AttentionPrecision attention,
                      const PrecisionOverrides& overrides)
{
    const auto it = overrides.modules.find(layout.fp8AttentionUnit(layer));
    if (it != overrides.modules.end())
        return it->second == Precision::Fp8;
    return attention == AttentionPrecision::Fp8Aiu && !overrides.othersFloat;
}

bool anyAttentionRunsFp8(const EncoderLayout& layout, int layers, AttentionPrecision attention,
                         const PrecisionOverrides& overrides)
{
    for (int layer = 0; layer < layers; ++layer)
        if (attentionRunsFp8(layout, layer, attention, overrides))
            return true;
    return false;
}

} // namespace scalescope
