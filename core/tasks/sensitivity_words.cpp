#include "tasks/sensitivity_words.h"

#include <cmath>
#include <cstdio>

namespace scalescope {

const char* const kRecoveredMeasure = "dB recovered when kept float";
const char* const kLostAloneMeasure = "dB lost when alone in FP8";
const char* const kNoMeasurableEffect = "no measurable effect";

bool sensitivityNoMeasurableEffect(const SensitivityEntry& entry, const SensitivitySpread& spread)
{
    return spread.estimated && std::isfinite(entry.recoveredDb) && std::abs(entry.recoveredDb) <= spread.db;
}

std::string sensitivityTieMark(const SensitivityEntry& entry)
{
    return entry.tieRank > 0 ? "=" + std::to_string(entry.tieRank) : std::string();
}

std::string sensitivityMarkedLabel(const SensitivityEntry& entry)
{
    const std::string label = entry.label.empty() ? entry.module : entry.label;
    const std::string mark = sensitivityTieMark(entry);
    return mark.empty() ? label : label + " " + mark;
}

std::string keepFloatHeadline(const SensitivityResult& result)
{
    const std::size_t count = result.suggestedFloat.size();
    if (count == 0)
        return {};
    std::string text = "Keep " + std::to_string(count) + (count == 1 ? " Linear" : " Linears") + " float";
    if (!result.suggestedTied.empty()) {
        char spread[32];
        std::snprintf(spread, sizeof spread, "%.2f", result.spread.db);
        text += ", " + std::to_string(result.suggestedTied.size()) + " of them tied within the spread of +-" + spread +
                " dB: kept together, the sweep does not pick among them";
    }
    return text;
}

} // namespace scalescope
