#include "model/runtime_units.h"

#include "common/text_files.h"

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

std::vector<FusedUnitFloat> fusedUnitsFloat(const EncoderLayout& layout, const std::set<std::string>& floatAfter)
{
    std::vector<FusedUnitFloat> fused;
    for (RuntimeUnit& unit : runtimeUnits(layout)) {
        if (!unit.fused())
            continue;
        FusedUnitFloat state{unit, {}};
        for (const std::string& module : unit.linears)
            if (floatAfter.count(module))
                state.floatLinears.push_back(module);
        fused.push_back(std::move(state));
    }
    return fused;
}

std::string splitUnitText(const EncoderLayout& layout, const FusedUnitFloat& split)
{
    std::vector<std::string> kept, fp8;
    for (const std::string& module : split.unit.linears)
        (std::find(split.floatLinears.begin(), split.floatLinears.end(), module) != split.floatLinears.end() ? kept : fp8)
            .push_back(layout.shortLabel(module));
    return split.unit.label + " (float: " + joinedWords(kept, ", ") + "; FP8: " + joinedWords(fp8, ", ") + ")";
}

} // namespace scalescope
