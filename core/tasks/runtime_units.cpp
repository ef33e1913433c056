#include "tasks/runtime_units.h"

#include <algorithm>
#include <map>
#include <set>

namespace scalescope {
namespace {

// The longest common prefix of dotted names that ends at a dot boundary, without the dot:
// ...attention.self for ...attention.self.query, .key and .value.
std::string commonModulePrefix(const std::vector<std::string>& names)
{
    std::string prefix = names.front();
    for (const std::string& name : names) {
        std::size_t same = 0;
        while (same < prefix.size() && same < name.size() && prefix[same] == name[same])
            ++same;
        prefix.resize(same);
    }
    const bool wholeName = std::all_of(names.begin(), names.end(), [&](const std::string& n) {
        return n.size() == prefix.size() || n[prefix.size()] == '.';
    });
    if (!wholeName) {
        const std::size_t dot = prefix.rfind('.');
        prefix.resize(dot == std::string::npos ? 0 : dot);
    } else if (!prefix.empty() && prefix.back() == '.') {
        prefix.pop_back();
    }
    return prefix;
}

// The chart label of a role ("q"), from the family table.
std::string roleLabel(const EncoderLayout& layout, LinearRole role)
{
    for (const EncoderLinearPattern& pattern : layout.family().encoderLinears)
        if (pattern.role == role)
            return pattern.label;
    return {};
}

// L3.qkv: the layer and its members' role labels.
std::string fusedLabel(const EncoderLayout& layout, const RuntimeUnit& unit)
{
    const LayoutLinear& first = *layout.findLinear(unit.linears.front());
    std::string label = "L" + std::to_string(first.layer) + ".";
    for (const std::string& module : unit.linears)
        label += roleLabel(layout, layout.findLinear(module)->role);
    return label;
}

std::string joined(const std::vector<std::string>& items, const std::string& last)
{
    std::string text;
    for (std::size_t i = 0; i < items.size(); ++i)
        text += (i == 0 ? "" : i + 1 == items.size() ? last : ", ") + items[i];
    return text;
}

// "L0.qkv (float: L0.v; FP8: L0.q, L0.k)".
std::string splitText(const EncoderLayout& layout, const RuntimeUnit& unit, const std::set<std::string>& floatAfter)
{
    std::vector<std::string> kept, fp8;
    for (const std::string& module : unit.linears)
        (floatAfter.count(module) ? kept : fp8).push_back(layout.shortLabel(module));
    return unit.label + " (float: " + joined(kept, ", ") + "; FP8: " + joined(fp8, ", ") + ")";
}

} // namespace

std::vector<RuntimeUnit> runtimeUnits(const EncoderLayout& layout)
{
    std::vector<RuntimeUnit> units;
    std::map<std::string, std::size_t> unitOfFusedName;
    for (const LayoutLinear& linear : layout.linears()) {
        const auto [at, isNew] = unitOfFusedName.emplace(linear.fmsFusedName, units.size());
        if (isNew)
            units.push_back({linear.module, linear.shortLabel, {}});
        units[at->second].linears.push_back(linear.module);
    }
    for (RuntimeUnit& unit : units)
        if (unit.fused()) {
            unit.module = commonModulePrefix(unit.linears);
            unit.label = fusedLabel(layout, unit);
        }
    return units;
}

KeepFloatValidity keepFloatValidity(const EncoderLayout& layout, const std::vector<LinearInfo>& linears,
                                    const std::vector<std::string>& keptFloat)
{
    std::set<std::string> floatAfter(keptFloat.begin(), keptFloat.end());
    for (const LinearInfo& linear : linears)
        if (!linear.quantized)
            floatAfter.insert(linear.module);
    KeepFloatValidity validity;
    std::vector<std::string> splits;
    for (const RuntimeUnit& unit : runtimeUnits(layout)) {
        if (!unit.fused())
            continue;
        const auto floats = std::count_if(unit.linears.begin(), unit.linears.end(),
                                          [&](const std::string& m) { return floatAfter.count(m) > 0; });
        if (floats > 0 && std::size_t(floats) < unit.linears.size()) {
            validity.splitUnits.push_back(unit.label);
            splits.push_back(splitText(layout, unit, floatAfter));
        }
    }
    if (splits.empty()) {
        validity.consumers = {kConsumerAiuFused, kConsumerAiuUnfused, kConsumerVllm, kConsumerCompressedTensors};
        validity.sentence = "Valid for every consumer (AIU with fused or unfused q/k/v, vLLM, compressed-tensors): "
                            "no Linear that a runtime fuses is kept float without its partners.";
        return validity;
    }
    validity.consumers = {kConsumerAiuUnfused, kConsumerCompressedTensors};
    validity.sentence = "Valid only for the AIU with unfused q/k/v (fused_weights=False, --unfuse_weights) and "
                        "compressed-tensors/transformers: it splits " + joined(splits, " and ") +
                        ", which fms's fused q/k/v Linear cannot hold and vLLM refuses (q, k, v in different "
                        "schemes); a sweep per unit (--granularity unit) keeps them together.";
    return validity;
}

} // namespace scalescope
