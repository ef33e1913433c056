#include "report/calibration_charts.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace scalescope {
namespace {

// One line per Linear, or per layer when there are many: (name, indices into result.linears).
std::vector<std::pair<std::string, std::vector<std::size_t>>> calibrationLines(const CalibrationLabResult& result)
{
    std::vector<std::pair<std::string, std::vector<std::size_t>>> lines;
    const bool perLayer = result.linears.size() > 12;
    for (std::size_t l = 0; l < result.linears.size(); ++l) {
        const CalibrationLinear& linear = result.linears[l];
        const std::string name = !perLayer ? (linear.label.empty() ? linear.module : linear.label)
                                 : linear.layer >= 0 ? "layer " + std::to_string(linear.layer) : linear.module;
        if (lines.empty() || lines.back().first != name)
            lines.push_back({name, {}});
        lines.back().second.push_back(l);
    }
    return lines;
}

ChartData calibrationChart(const CalibrationLabResult& result, const std::string& id, const std::string& title,
                           const std::string& yLabel, const std::function<double(const CalibrationSizeScales&)>& value,
                           bool worstIsLowest)
{
    ChartData chart;
    chart.id = id;
    chart.title = title;
    chart.xLabel = "calibration samples n (one step per size: log2 for the doubling sizes, then the full set)";
    chart.yLabel = yLabel;
    for (int64_t n : result.sizes)
        chart.categories.push_back(n == result.calibrationSamples ? std::to_string(n) + " (all)" : std::to_string(n));
    for (const auto& [name, members] : calibrationLines(result)) {
        ChartSeries series{name, SeriesStyle::Line, {}, {}, {}, ""};
        for (std::size_t s = 0; s < result.sizes.size(); ++s) {
            double worst = worstIsLowest ? std::numeric_limits<double>::infinity()
                                         : -std::numeric_limits<double>::infinity();
            for (std::size_t l : members) {
                const double v = value(result.linears[l].bySize[s]);
                worst = worstIsLowest ? std::min(worst, v) : std::max(worst, v);
            }
            series.x.push_back(double(s));
            series.y.push_back(worst);
        }
        chart.series.push_back(series);
    }
    return chart;
}

} // namespace

ChartData calibrationConvergenceChart(const CalibrationLabResult& result)
{
    ChartData chart = calibrationChart(
        result, "calibration_convergence",
        "Static input scale after n samples / the full set's (worst of " + std::to_string(result.orders) + " orders)",
        "scale ratio to the full set",
        [](const CalibrationSizeScales& size) {
            return size.ratioToFull.empty() ? 0.0 : *std::min_element(size.ratioToFull.begin(), size.ratioToFull.end());
        },
        true);
    chart.horizontalMarkers.push_back({1.0, "full set"});
    return chart;
}

ChartData calibrationClipChart(const CalibrationLabResult& result)
{
    return calibrationChart(
        result, "calibration_clip_share",
        "Evaluation tokens that clip under the scale after n samples (worst of " + std::to_string(result.orders) +
            " orders)",
        "tokens with a clipped element (%)",
        [](const CalibrationSizeScales& size) {
            return size.clipTokenShare.empty()
                       ? 0.0
                       : 100.0 * *std::max_element(size.clipTokenShare.begin(), size.clipTokenShare.end());
        },
        false);
}

} // namespace scalescope
