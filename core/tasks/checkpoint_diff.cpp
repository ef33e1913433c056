#include "tasks/checkpoint_diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/consumers.h"
#include "analysis/scale_statistics.h"
#include "common/error.h"
#include "model/quantization_config.h"
#include "numerics/fp8.h"

namespace scalescope {
namespace {

using json = nlohmann::json;

constexpr const char* kAbsent = "(none)";

std::string jsonValueText(const json& value)
{
    if (value.is_string())
        return value.get<std::string>();
    return value.dump();
}

// Each leaf of a document by its dotted path ("quantization_config.config_groups.group_0.targets").
// Lists are leaves, shown whole: an entry removed from the front of "ignore" is one change, not one
// per shifted index. So are empty objects: json::flatten turns {} and [] into null, which showed {}
// as null and took [] against null for no change.
void collectLeaves(const json& value, const std::string& path, std::map<std::string, const json*>& out)
{
    if (value.is_object() && !value.empty()) {
        for (auto it = value.begin(); it != value.end(); ++it)
            collectLeaves(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
        return;
    }
    out[path] = &value;
}

// Every leaf whose value differs between the documents or exists on one side only.
void addJsonDifferences(const json& a, const json& b, const std::string& prefix, std::vector<FieldDifference>& out)
{
    std::map<std::string, const json*> leavesA, leavesB;
    if (!a.is_null())
        collectLeaves(a, "", leavesA);
    if (!b.is_null())
        collectLeaves(b, "", leavesB);
    std::set<std::string> keys;
    for (const auto& [key, value] : leavesA)
        keys.insert(key);
    for (const auto& [key, value] : leavesB)
        keys.insert(key);
    for (const std::string& key : keys) {
        const auto inA = leavesA.find(key), inB = leavesB.find(key);
        const bool bothSides = inA != leavesA.end() && inB != leavesB.end();
        if (bothSides && *inA->second == *inB->second)
            continue;
        out.push_back({prefix + key, inA != leavesA.end() ? jsonValueText(*inA->second) : kAbsent,
                       inB != leavesB.end() ? jsonValueText(*inB->second) : kAbsent});
    }
}

const char* activationText(ActivationQuantization activations)
{
    switch (activations) {
    case ActivationQuantization::None:
        return "none";
    case ActivationQuantization::DynamicPerToken:
        return "dynamic per token";
    case ActivationQuantization::StaticPerTensor:
        return "static per tensor";
    case ActivationQuantization::DynamicPerTensor:
        return "dynamic per tensor";
    case ActivationQuantization::DynamicPerGroup:
        return "dynamic per group";
    }
    return "none";
}

// The scheme fields of one Linear as text, by field name: what the plan runs and the group's args
// as inspect shows them. A Linear absent from a side has no fields there.
std::map<std::string, std::string> linearFields(const Checkpoint& checkpoint, const std::string& module)
{
    std::map<std::string, std::string> fields;
    const LinearPlan& plan = checkpoint.plan();
    const LinearInfo* info = plan.find(module);
    if (!info)
        return fields;
    const ConfigGroup* group = plan.targetGroup(module);
    fields["ignored"] = group ? "no" : "yes";
    fields["group"] = group ? group->name : kAbsent;
    fields["format"] = group ? group->format : kAbsent;
    const TensorView* weight = checkpoint.tensors().find(module + ".weight");
    fields["weight dtype"] = weight ? dtypeName(weight->dtype) : kAbsent;
    fields["runs"] = info->quantized ? "fp8" : "float";
    if (info->weightBlockRows > 0 || info->weightBlockColumns > 0)
        fields["weights block"]
            = std::to_string(info->weightBlockRows) + "x" + std::to_string(info->weightBlockColumns);
    fields["activations"] = activationText(info->activations);
    if (info->activationGroupSize > 0)
        fields["activations group size"] = std::to_string(info->activationGroupSize);
    auto addArgs = [&](const std::string& prefix, const std::optional<QuantizationArgs>& args) {
        if (!args) {
            fields[prefix] = "null";
            return;
        }
        const json summary = argsSummaryJson(*args);
        for (auto it = summary.begin(); it != summary.end(); ++it)
            fields[prefix + "." + it.key()] = jsonValueText(it.value());
    };
    if (group) {
        addArgs("weights", group->weights);
        addArgs("input_activations", group->inputActivations);
    }
    return fields;
}

// Per module, per consumer: the verdict of the findings that name the module.
std::map<std::string, std::map<std::string, std::string>> consumerVerdictsByModule(const Checkpoint& checkpoint)
{
    std::map<std::string, std::map<std::string, std::vector<ConsumerFinding>>> found;
    for (const ConsumerReport& report : assessConsumers(checkpoint))
        for (const ConsumerFinding& finding : report.findings)
            for (const std::string& module : finding.modules)
                found[module][consumerName(report.consumer)].push_back(finding);
    std::map<std::string, std::map<std::string, std::string>> verdicts;
    for (const auto& [module, byConsumer] : found)
        for (const auto& [consumer, findings] : byConsumer)
            verdicts[module][consumer] = verdictName(verdictOf(findings));
    return verdicts;
}

bool isNanCode(uint8_t code)
{
    return (code & 0x7F) == fp8::kE4M3NaN;
}

// The ordered integer of a float's bit pattern: adjacent representable values are adjacent
// integers, +0 and -0 both 0.
int64_t orderedBits(uint64_t bits, int width)
{
    const uint64_t signBit = uint64_t(1) << (width - 1);
    const int64_t magnitude = static_cast<int64_t>(bits & (signBit - 1));
    return (bits & signBit) ? -magnitude : magnitude;
}

uint64_t loadBits(const uint8_t* p, std::size_t size)
{
    uint64_t bits = 0;
    std::memcpy(&bits, p, size); // little-endian, as safetensors stores it
    return bits;
}

void compareCodes(const TensorView& a, const TensorView& b, TensorDifference& d)
{
    for (int64_t i = 0; i < d.elements; ++i) {
        const uint8_t ca = a.data[i], cb = b.data[i];
        if (ca == cb)
            continue;
        if (isNanCode(ca) || isNanCode(cb)) {
            if (!(isNanCode(ca) && isNanCode(cb)))
                ++d.nanMismatches;
            continue;
        }
        const int64_t steps = std::abs(fp8Step(cb) - fp8Step(ca));
        if (steps == 0) {
            ++d.signedZeroSwaps;
            continue;
        }
        ++d.codesDiffering;
        ++d.codeStepHistogram[steps];
    }
}

void compareValues(const TensorView& a, const TensorView& b, TensorDifference& d)
{
    const bool sameDtype = a.dtype == b.dtype;
    const bool ordered = sameDtype && isFloatDtype(a.dtype);
    const bool integer = sameDtype && !isFloatDtype(a.dtype);
    d.ulpUnit = sameDtype ? dtypeName(a.dtype) : "F32";
    const FloatTensor valuesA = a.toFloat(), valuesB = b.toFloat();
    std::vector<float> asF32(2);
    double ratioMin = std::numeric_limits<double>::infinity(), ratioMax = -ratioMin;
    const std::size_t size = dtypeSize(a.dtype);
    for (int64_t i = 0; i < d.elements; ++i) {
        const float va = valuesA.values[i], vb = valuesB.values[i];
        // A NaN has no ratio and no distance in ULPs (its bits are a payload, not a value): one
        // side's NaN is a NaN mismatch, both sides' is the same non-value.
        if (std::isnan(va) || std::isnan(vb)) {
            if (!(std::isnan(va) && std::isnan(vb)))
                ++d.nanMismatches;
            continue;
        }
        if (va != 0.0f && std::isfinite(va) && std::isfinite(vb)) {
            const double ratio = double(vb) / double(va);
            ratioMin = std::min(ratioMin, ratio);
            ratioMax = std::max(ratioMax, ratio);
        }
        uint64_t ulps = 0;
        if (ordered) {
            ulps = ulpDistance(a.data + i * size, b.data + i * size, a.dtype);
        } else if (integer) {
            const uint64_t ia = loadBits(a.data + i * size, size), ib = loadBits(b.data + i * size, size);
            ulps = ia > ib ? ia - ib : ib - ia;
        } else {
            ulps
                = ulpDistance(reinterpret_cast<const uint8_t*>(&va), reinterpret_cast<const uint8_t*>(&vb), Dtype::F32);
        }
        if (ulps == 0)
            continue;
        ++d.valuesDiffering;
        ++d.ulpHistogram[ulps];
        if (ulps == 1)
            ++d.valuesOneUlpApart;
        d.maxUlps = std::max(d.maxUlps, ulps);
    }
    d.hasRatio = ratioMin <= ratioMax;
    if (d.hasRatio) {
        d.ratioMin = ratioMin;
        d.ratioMax = ratioMax;
    }
}

TensorDifference compareTensors(const TensorView& a, const TensorView& b)
{
    TensorDifference d;
    d.name = a.name;
    d.dtypeA = dtypeName(a.dtype);
    d.dtypeB = dtypeName(b.dtype);
    d.shapeA = a.shape;
    d.shapeB = b.shape;
    d.verdict = kDiffDifferent;
    if (a.numel() != b.numel() || (a.shape != b.shape && a.numel() != 1))
        return d; // [1] and [] hold the same one scale; any other shape change has no element pairs
    d.elements = a.numel();
    const bool sameLayout = a.dtype == b.dtype && a.shape == b.shape;
    if (sameLayout && a.byteSize == b.byteSize && std::memcmp(a.data, b.data, a.byteSize) == 0) {
        d.verdict = kDiffIdentical;
        if (a.dtype == Dtype::F8_E4M3) {
            d.fp8Codes = true;
        } else {
            d.ulpUnit = dtypeName(a.dtype);
            const bool scale = a.name.size() >= 5 && a.name.compare(a.name.size() - 5, 5, "scale") == 0;
            if (scale && isFloatDtype(a.dtype))
                compareValues(a, b, d); // a scale's ratio range (1 here) is worth stating; a big weight's is not
        }
        return d;
    }
    if (a.dtype == Dtype::F8_E4M3 && b.dtype == Dtype::F8_E4M3) {
        d.fp8Codes = true;
        compareCodes(a, b, d);
        const bool withinOneStep = d.nanMismatches == 0
            && std::all_of(d.codeStepHistogram.begin(), d.codeStepHistogram.end(),
                [](const auto& entry) { return entry.first <= 1; });
        if (sameLayout && withinOneStep)
            d.verdict = kDiffWithinOneStep;
        return d;
    }
    if (a.dtype == Dtype::F8_E4M3 || b.dtype == Dtype::F8_E4M3)
        return d; // codes on one side, values on the other: not comparable element by element
    compareValues(a, b, d);
    if (sameLayout && d.maxUlps <= 1 && d.nanMismatches == 0)
        d.verdict = kDiffWithinOneStep;
    return d;
}

void diffLinears(const Checkpoint& a, const Checkpoint& b, CheckpointDiff& diff)
{
    std::vector<std::string> modules;
    std::set<std::string> seen;
    for (const Checkpoint* side : {&a, &b})
        for (const LinearInfo& linear : side->plan().linears())
            if (seen.insert(linear.module).second)
                modules.push_back(linear.module);
    const auto verdictsA = consumerVerdictsByModule(a), verdictsB = consumerVerdictsByModule(b);
    auto verdictOfModule = [](const auto& verdicts, const std::string& module, const std::string& consumer) {
        auto m = verdicts.find(module);
        if (m == verdicts.end())
            return std::string(verdictName(ConsumerVerdict::AsIntended));
        auto c = m->second.find(consumer);
        return c == m->second.end() ? std::string(verdictName(ConsumerVerdict::AsIntended)) : c->second;
    };
    for (const std::string& module : modules) {
        LinearDifference linear{module, {}};
        const auto fieldsA = linearFields(a, module), fieldsB = linearFields(b, module);
        if (fieldsA.empty() || fieldsB.empty()) {
            linear.differences.push_back({"present", fieldsA.empty() ? "no" : "yes", fieldsB.empty() ? "no" : "yes"});
        } else {
            std::set<std::string> keys;
            for (const auto& entry : fieldsA)
                keys.insert(entry.first);
            for (const auto& entry : fieldsB)
                keys.insert(entry.first);
            for (const std::string& key : keys) {
                auto ia = fieldsA.find(key), ib = fieldsB.find(key);
                const std::string va = ia == fieldsA.end() ? kAbsent : ia->second;
                const std::string vb = ib == fieldsB.end() ? kAbsent : ib->second;
                if (va != vb)
                    linear.differences.push_back({key, va, vb});
            }
        }
        for (Consumer consumer : {Consumer::Aiu, Consumer::Vllm, Consumer::CompressedTensors}) {
            const std::string name = consumerName(consumer);
            const std::string va = verdictOfModule(verdictsA, module, name),
                              vb = verdictOfModule(verdictsB, module, name);
            if (va != vb)
                linear.differences.push_back({"consumer " + name, va, vb});
        }
        if (!linear.differences.empty())
            diff.linears.push_back(std::move(linear));
    }
}

} // namespace

int fp8Step(uint8_t code)
{
    const int magnitude = code & 0x7F;
    return (code & 0x80) ? -magnitude : magnitude;
}

uint64_t ulpDistance(const uint8_t* a, const uint8_t* b, Dtype dtype)
{
    int width = 32;
    switch (dtype) {
    case Dtype::F32:
        width = 32;
        break;
    case Dtype::F16:
    case Dtype::BF16:
        width = 16;
        break;
    case Dtype::F64:
        width = 64;
        break;
    default:
        throw Error(std::string("ULP distance of a ") + dtypeName(dtype) + " element is not defined.");
    }
    const std::size_t size = static_cast<std::size_t>(width / 8);
    const int64_t oa = orderedBits(loadBits(a, size), width), ob = orderedBits(loadBits(b, size), width);
    // Differences of two 64-bit ordered values can overflow int64; go through unsigned.
    return oa > ob ? uint64_t(oa) - uint64_t(ob) : uint64_t(ob) - uint64_t(oa);
}

void checkSameModel(const Checkpoint& a, const Checkpoint& b)
{
    const ModelConfig& ca = a.config();
    const ModelConfig& cb = b.config();
    auto sizes = [](const ModelConfig& c) {
        return std::string(architectureName(c.architecture)) + ", hidden " + std::to_string(c.hiddenSize) + ", "
            + std::to_string(c.numLayers) + " layers, intermediate " + std::to_string(c.intermediateSize)
            + ", vocabulary " + std::to_string(c.vocabSize);
    };
    if (sizes(ca) != sizes(cb))
        throw Error(b.directory() + " is not the same model as " + a.directory() + " (" + sizes(cb) + " against "
            + sizes(ca) + "), so their runs cannot be compared.");
}

bool CheckpointDiff::identical() const
{
    return config.empty() && linears.empty() && onlyInA.empty() && onlyInB.empty()
        && std::all_of(
            tensors.begin(), tensors.end(), [](const TensorDifference& t) { return t.verdict == kDiffIdentical; });
}

CheckpointDiff diffCheckpoints(const Checkpoint& a, const Checkpoint& b)
{
    CheckpointDiff diff;
    diff.a = a.directory();
    diff.b = b.directory();
    a.tensors().checkUnchanged();
    b.tensors().checkUnchanged();
    addJsonDifferences(a.config().raw, b.config().raw, "config.", diff.config);
    const auto reportsA = assessConsumers(a), reportsB = assessConsumers(b);
    for (std::size_t i = 0; i < reportsA.size() && i < reportsB.size(); ++i)
        if (reportsA[i].verdict != reportsB[i].verdict)
            diff.config.push_back({std::string("consumer ") + consumerName(reportsA[i].consumer),
                verdictName(reportsA[i].verdict), verdictName(reportsB[i].verdict)});
    diffLinears(a, b, diff);

    for (const TensorView* ta : a.tensors().tensors()) {
        if (const TensorView* tb = b.tensors().find(ta->name))
            diff.tensors.push_back(compareTensors(*ta, *tb));
        else
            diff.onlyInA.push_back(ta->name);
    }
    for (const TensorView* tb : b.tensors().tensors())
        if (!a.tensors().find(tb->name))
            diff.onlyInB.push_back(tb->name);
    a.tensors().checkUnchanged();
    b.tensors().checkUnchanged();
    return diff;
}

std::string linearSchemeLine(const Checkpoint& checkpoint, const std::string& module)
{
    const LinearInfo* info = checkpoint.plan().find(module);
    if (!info)
        return "not a Linear of this checkpoint";
    std::ostringstream line;
    if (!info->quantized) {
        line << "float";
    } else {
        line << "FP8 weights " << info->weightStrategy << ", activations " << activationText(info->activations);
        if (const TensorView* scale = checkpoint.tensors().find(module + ".weight_scale");
            scale && isFloatDtype(scale->dtype)) {
            const FloatTensor values = scale->toFloat();
            if (!values.values.empty()) {
                const auto [lo, hi] = std::minmax_element(values.values.begin(), values.values.end());
                line << ", weight_scale " << *lo;
                if (*hi != *lo)
                    line << ".." << *hi;
            }
        }
        if (info->activations == ActivationQuantization::StaticPerTensor)
            line << ", input_scale " << info->inputScale;
    }
    const ConfigGroup* group = checkpoint.plan().targetGroup(module);
    line << " (" << (group ? group->name : std::string("ignored")) << ")";
    return line.str();
}

namespace {

const char* inputKindOf(const ComparisonInput& input)
{
    if (!input.question.empty() || !input.context.empty())
        return "qa";
    if (!input.text.empty())
        return "text";
    if (!input.texts.empty())
        return "texts";
    return "ids";
}

// Each point's metrics averaged over the samples (SQNR as the mean of the dB values, the others
// as plain means), in the first sample's point order.
ComparisonResult averageOver(std::vector<ComparisonResult>& samples)
{
    const double n = double(samples.size());
    double finalSqnr = 0, finalCosine = 0;
    for (const ComparisonResult& sample : samples) {
        finalSqnr += sample.finalLogits.sqnrDb;
        finalCosine += sample.finalLogits.cosine;
    }
    ComparisonResult mean = std::move(samples.front());
    if (samples.size() == 1)
        return mean;
    for (std::size_t p = 0; p < mean.points.size(); ++p) {
        ErrorMetrics sum = mean.points[p].metrics;
        for (std::size_t s = 1; s < samples.size(); ++s) {
            if (p >= samples[s].points.size() || samples[s].points[p].name != mean.points[p].name)
                throw Error("The questions recorded different capture points.");
            const ErrorMetrics& m = samples[s].points[p].metrics;
            sum.count += m.count;
            sum.mse += m.mse;
            sum.sqnrDb += m.sqnrDb;
            sum.cosine += m.cosine;
            sum.maxAbsError = maxKeepingNan(sum.maxAbsError, m.maxAbsError);
            sum.relativeL2 += m.relativeL2;
        }
        sum.mse /= n;
        sum.sqnrDb /= n;
        sum.cosine /= n;
        sum.relativeL2 /= n;
        mean.points[p].metrics = sum;
    }
    mean.finalLogits.sqnrDb = finalSqnr / n;
    mean.finalLogits.cosine = finalCosine / n;
    return mean;
}

double sqnrDifference(double a, double b)
{
    if (std::isinf(a) && std::isinf(b) && (a > 0) == (b > 0))
        return 0.0;
    return b - a;
}

} // namespace

DiffMetrics diffMetrics(InferenceBackend& a, InferenceBackend& b, InferenceBackend* reference,
    const ComparisonInput& input, const SquadDataset* squad, std::size_t maxSamples, const Progress& progress)
{
    checkSameModel(a.checkpoint(), b.checkpoint());
    DiffMetrics result;
    result.referenceIsStandIn = reference == nullptr;
    // Without a float reference, A's dequant run is the one yardstick for both sides.
    InferenceBackend* yardstick = reference ? reference : &a;
    ComparisonInput runInput = input;
    runInput.runs = RunPair{}; // each checkpoint's FP8 run against the dequant yardstick

    std::vector<ComparisonInput> inputs;
    if (squad) {
        const std::size_t count = maxSamples ? std::min(maxSamples, squad->examples.size()) : squad->examples.size();
        if (count == 0)
            throw Error("The SQuAD file " + squad->path + " holds no questions.");
        for (std::size_t i = 0; i < count; ++i) {
            ComparisonInput one = runInput;
            one.question = squad->examples[i].question;
            one.context = squad->examples[i].context;
            one.text.clear();
            one.inputIds.clear();
            inputs.push_back(std::move(one));
        }
        result.inputKind = "squad";
    } else {
        inputs.push_back(runInput);
        result.inputKind = inputKindOf(input);
    }
    result.samples = inputs.size();

    std::vector<ComparisonResult> sidesA, sidesB;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        Progress part = progress;
        const double total = double(inputs.size()) * 2.0;
        part.callback
            = [&, i](double f, const std::string& stage) { progress.report((2.0 * i + f) / total, "A: " + stage); };
        sidesA.push_back(compareRuns(a, yardstick == &a ? nullptr : yardstick, inputs[i], part));
        part.callback = [&, i](double f, const std::string& stage) {
            progress.report((2.0 * i + 1.0 + f) / total, "B: " + stage);
        };
        sidesB.push_back(compareRuns(b, yardstick, inputs[i], part));
    }
    result.runA = averageOver(sidesA);
    result.runB = averageOver(sidesB);
    result.referenceLabel
        = reference ? result.runA.referenceLabel : "dequant of A (" + a.checkpoint().directory() + ")";
    result.runA.referenceLabel = result.runB.referenceLabel = result.referenceLabel;
    result.runA.referenceIsStandIn = result.runB.referenceIsStandIn = result.referenceIsStandIn;

    rankPointDifferences(result);
    progress.report(1.0, "Compared A and B");
    return result;
}

void rankPointDifferences(DiffMetrics& result)
{
    result.points.clear();
    if (result.runA.points.size() != result.runB.points.size())
        throw Error("A and B recorded different capture points.");
    for (std::size_t p = 0; p < result.runA.points.size(); ++p) {
        const CapturePointMetrics& pa = result.runA.points[p];
        const CapturePointMetrics& pb = result.runB.points[p];
        if (pa.name != pb.name)
            throw Error("A and B recorded different capture points (" + pa.name + " vs " + pb.name + ").");
        result.points.push_back(
            {pa.name, pa.label, pa.kind, pa.metrics, pb.metrics, sqnrDifference(pa.metrics.sqnrDb, pb.metrics.sqnrDb)});
    }
    result.ranked.resize(result.points.size());
    for (std::size_t i = 0; i < result.ranked.size(); ++i)
        result.ranked[i] = i;
    auto magnitude = [&](std::size_t i) {
        const double d = std::fabs(result.points[i].sqnrDifferenceDb);
        return std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
    };
    std::stable_sort(result.ranked.begin(), result.ranked.end(),
        [&](std::size_t x, std::size_t y) { return magnitude(x) > magnitude(y); });
}

} // namespace scalescope
