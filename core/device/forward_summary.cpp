#include "device/forward_summary.h"

#include <cmath>
#include <limits>

namespace scalescope {

using json = nlohmann::json;

json forwardSummaryJson(const ForwardResult& result)
{
    json nonFinite = json::array();
    for (const ModuleNonFinite& module : result.nonFinite)
        nonFinite.push_back({{"module", module.module}, {"count", module.count}});
    json rows = json::array();
    for (const std::string& module : result.firstNonFiniteByRow)
        rows.push_back(module.empty() ? json(nullptr) : json(module));
    json ranges = json::array();
    for (const ModuleOutputRange& range : result.outputRanges)
        ranges.push_back({{"module", range.module},
                          {"max_abs", std::isfinite(range.maxAbs) ? json(range.maxAbs) : json(nullptr)},
                          {"below_half_normal", range.belowHalfNormal},
                          {"elements", range.elements}});
    return {{"nonfinite", nonFinite}, {"first_nonfinite_rows", rows}, {"output_ranges", ranges}};
}

void readForwardSummary(const json& reply, std::size_t rows, ForwardResult& result)
{
    const auto firstRows = reply.find("first_nonfinite_rows");
    if (firstRows != reply.end() && firstRows->is_array() && firstRows->size() == rows) {
        result.firstNonFiniteByRow.clear();
        for (const json& entry : *firstRows)
            result.firstNonFiniteByRow.push_back(entry.is_string() ? entry.get<std::string>() : std::string());
    }
    const auto ranges = reply.find("output_ranges");
    if (ranges == reply.end() || !ranges->is_array())
        return;
    for (const json& entry : *ranges) {
        if (!entry.is_object() || !entry.contains("module") || !entry["module"].is_string())
            continue;
        ModuleOutputRange range;
        range.module = entry["module"].get<std::string>();
        const json& maxAbs = entry.value("max_abs", json(nullptr));
        range.maxAbs = maxAbs.is_number() ? maxAbs.get<float>() : std::numeric_limits<float>::infinity();
        const json& below = entry.value("below_half_normal", json(0));
        const json& elements = entry.value("elements", json(0));
        range.belowHalfNormal = below.is_number_integer() ? below.get<int64_t>() : 0;
        range.elements = elements.is_number_integer() ? elements.get<int64_t>() : 0;
        result.outputRanges.push_back(range);
    }
}

} // namespace scalescope
