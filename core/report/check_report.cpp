#include "report/check_report.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <unordered_set>

#include "common/error.h"
#include "common/text_files.h"
#include "report/result_json.h"

namespace scalescope {

using nlohmann::json;

namespace {

constexpr const char* kThresholdsFormat = "scalescope-thresholds";
constexpr int kThresholdsVersion = 1;

// A number as JSON: finite as it is, +-inf as the strings "inf" / "-inf", NaN as null.
json numberOrText(double value)
{
    if (std::isnan(value))
        return nullptr;
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    return value;
}

bool readNumberOrText(const json& value, double& out)
{
    if (value.is_number()) {
        out = value.get<double>();
        return true;
    }
    if (value.is_string()) {
        const std::string text = value.get<std::string>();
        if (text == "inf" || text == "-inf") {
            out = text == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
            return true;
        }
    }
    return false;
}

// A number in a sentence as the file spells it, to the last digit (1.0000000000000002 is not 1).
std::string exactNumberText(double value)
{
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    return json(value).dump();
}

json valuesJson(const CheckValues& values)
{
    json out = json::object();
    for (CheckMetric metric : allCheckMetrics())
        if (!std::isnan(values[std::size_t(metric)]))
            out[checkMetricName(metric)] = numberOrText(values[std::size_t(metric)]);
    return out;
}

json bootstrapJson(const BootstrapInterval& interval)
{
    return {{"mean", numberOrText(interval.mean)}, {"low", numberOrText(interval.low)},
            {"high", numberOrText(interval.high)}, {"confidence", interval.confidence},
            {"resamples", interval.resamples},    {"seed", interval.seed}};
}

std::string xmlEscaped(const std::string& text)
{
    std::string out;
    for (char c : escapeInvalidUtf8(text)) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default:
            // XML 1.0 allows no control characters but tab, newline and carriage return.
            if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
                out += ' ';
            else
                out += c;
        }
    }
    return out;
}

std::string formatted(const char* format, double a, double b = 0, double c = 0)
{
    char buffer[160];
    std::snprintf(buffer, sizeof buffer, format, a, b, c);
    return buffer;
}

} // namespace

json thresholdsJson(const ThresholdSet& thresholds)
{
    json points = json::array();
    for (const PointThresholds& point : thresholds.points)
        points.push_back({{"point", point.point}, {"samples", point.samples}, {"thresholds", valuesJson(point.thresholds)}});
    json provenance = json::object();
    for (const auto& [key, value] : thresholds.provenance)
        provenance[key] = value;
    return {{"format", kThresholdsFormat}, {"version", kThresholdsVersion}, {"percentile", thresholds.percentile},
            {"provenance", provenance}, {"points", points}};
}

ThresholdSet thresholdsFromJson(const json& document, const std::string& sourceName)
{
    const auto fail = [&](const std::string& problem) { return Error(sourceName + " " + problem); };
    if (!document.is_object() || document.value("format", json()) != kThresholdsFormat)
        throw fail("is not a thresholds file (noise-floor writes one; its \"format\" is \"" +
                   std::string(kThresholdsFormat) + "\").");
    if (document.value("version", json()) != kThresholdsVersion)
        throw fail("is a thresholds file of another version (this program reads version " +
                   std::to_string(kThresholdsVersion) + ").");
    ThresholdSet set;
    if (!document.contains("percentile") || !document["percentile"].is_number())
        throw fail("has no numeric \"percentile\".");
    set.percentile = document["percentile"].get<double>();
    if (!(set.percentile >= 0 && set.percentile <= 100))
        throw fail("has a \"percentile\" of " + document["percentile"].dump() + ", outside 0 to 100.");
    if (document.contains("provenance")) {
        if (!document["provenance"].is_object())
            throw fail("has a \"provenance\" that is not an object.");
        for (const auto& [key, value] : document["provenance"].items())
            set.provenance[key] = value.is_string() ? value.get<std::string>() : value.dump();
    }
    if (!document.contains("points") || !document["points"].is_array() || document["points"].empty())
        throw fail("lists no \"points\".");
    std::unordered_set<std::string> names; // a second look-up per point through set.find made reading quadratic
    for (const json& entry : document["points"]) {
        if (!entry.is_object() || !entry.contains("point") || !entry["point"].is_string())
            throw fail("has a point without a \"point\" name.");
        PointThresholds point;
        point.point = entry["point"].get<std::string>();
        point.thresholds.fill(std::numeric_limits<double>::quiet_NaN());
        if (entry.contains("samples")) {
            if (!entry["samples"].is_number_unsigned())
                throw fail("gives point " + point.point + " a \"samples\" that is not a count.");
            point.samples = entry["samples"].get<std::size_t>();
        }
        if (!entry.contains("thresholds") || !entry["thresholds"].is_object())
            throw fail("gives point " + point.point + " no \"thresholds\" object.");
        for (const auto& [name, value] : entry["thresholds"].items()) {
            CheckMetric metric;
            if (!parseCheckMetric(name, metric))
                throw fail("names the unknown metric \"" + name + "\" at point " + point.point + ".");
            double number = 0;
            if (!readNumberOrText(value, number))
                throw fail("gives " + name + " at point " + point.point + " a value that is not a number.");
            // A threshold no run can reach (a cosine above 1) would fail even a run identical to its twin.
            if (const MetricRange range = checkMetricRange(metric); !range.contains(number))
                throw fail("gives " + name + " at point " + point.point + " the threshold " + exactNumberText(number) +
                           ", outside the metric's range " + exactNumberText(range.low) + " to " + exactNumberText(range.high) + ".");
            point.thresholds[std::size_t(metric)] = number;
        }
        if (!names.insert(point.point).second)
            throw fail("lists point " + point.point + " twice.");
        set.points.push_back(std::move(point));
    }
    return set;
}

ThresholdSet readThresholdsFile(const std::string& path)
{
    return readingUserFile(path, [&] { return thresholdsFromJson(readJsonFile(path), path); });
}

json checkResultJson(const CheckResult& result)
{
    const RunMeasurements& m = result.measurements;
    json twins = json::array();
    for (const TwinCheck& twin : result.twins) {
        json points = json::array();
        for (const PointCheck& point : twin.points) {
            json metricFailures = json::object();
            for (CheckMetric metric : allCheckMetrics())
                if (point.metricFailures[std::size_t(metric)] > 0)
                    metricFailures[checkMetricName(metric)] = point.metricFailures[std::size_t(metric)];
            points.push_back({{"point", point.point},
                              {"label", point.label},
                              {"layer", point.layer},
                              {"checked", point.checked},
                              {"inputs", point.inputs},
                              {"failures", point.failures},
                              {"failure_rate", point.failureRate},
                              {"failed", point.failed},
                              {"departures_start_here", point.departuresStartHere},
                              {"failures_by_metric", metricFailures},
                              {"median", valuesJson(point.median)},
                              {"worst", valuesJson(point.worst)}});
        }
        json entry = {{"name", twin.twin},
                      {"description", twin.description},
                      {"failing_inputs", twin.failingInputs},
                      {"failed_points", twin.failedPoints},
                      {"departure_start", twin.departureStart.empty() ? json(nullptr) : json(twin.departureStart)},
                      {"departure_start_inputs", twin.departureStartInputs},
                      {"points", points}};
        if (twin.twinScores)
            entry["scores"] = squadScoresJson(*twin.twinScores);
        if (twin.f1Difference)
            entry["f1_difference"] = bootstrapJson(*twin.f1Difference);
        twins.push_back(std::move(entry));
    }
    json inputs = json::array();
    for (std::size_t i = 0; i < m.inputs.size(); ++i) {
        const InputMeasurement& input = m.inputs[i];
        json first = json::object();
        for (const TwinCheck& twin : result.twins)
            first[twin.twin] = twin.firstFailingPoint[i].empty() ? json(nullptr) : json(twin.firstFailingPoint[i]);
        json entry = {{"id", input.id}, {"skipped", input.skipped}, {"first_failing_point", first}};
        if (input.skipped)
            entry["skip_reason"] = input.skipReason;
        else if (m.kind == CheckInputSet::Kind::Squad) {
            entry["run_prediction"] = input.runPrediction;
            entry["run_f1"] = input.runScore.f1;
            entry["twin_predictions"] = input.twinPredictions;
        }
        inputs.push_back(std::move(entry));
    }
    json gate = {{"max_failure_rate", result.gate.maxFailureRate}, {"max_f1_drop", result.gate.maxF1Drop}};
    json provenance = json::object();
    for (const auto& [key, value] : result.thresholds.provenance)
        provenance[key] = value;
    json document = {{"verdict", result.passed ? "pass" : "fail"},
                     {"passed", result.passed},
                     {"sentence", result.verdictSentence},
                     {"reasons", result.reasons},
                     {"gate", gate},
                     {"run", {{"name", m.runName}, {"description", m.runDescription}}},
                     {"inputs_measured", m.measuredInputs()},
                     {"inputs_skipped", m.inputs.size() - m.measuredInputs()},
                     {"twins", twins},
                     {"best_twin_per_point", json::array()},
                     {"inputs", inputs},
                     {"thresholds_percentile", result.thresholds.percentile},
                     {"thresholds_provenance", provenance},
                     {"timing", {{"seconds", m.seconds}, {"run_forward_ms", m.runForwardMs}, {"twin_forward_ms", m.twinForwardMs}}}};
    for (std::size_t p = 0; p < result.bestTwinPerPoint.size(); ++p)
        document["best_twin_per_point"].push_back({{"point", m.points[p]}, {"twin", result.bestTwinPerPoint[p]}});
    if (result.runScores)
        document["scores"] = squadScoresJson(*result.runScores);
    return document;
}

std::string checkJunitXml(const CheckResult& result)
{
    std::ostringstream out;
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    std::size_t tests = 0, failures = 0;
    for (const TwinCheck& twin : result.twins)
        for (const PointCheck& point : twin.points)
            if (point.checked) {
                ++tests;
                failures += point.failed ? 1 : 0;
            }
    tests += 1;
    failures += result.passed ? 0 : 1;
    out << "<testsuites name=\"scalescope check\" tests=\"" << tests << "\" failures=\"" << failures << "\">\n";
    for (std::size_t t = 0; t < result.twins.size(); ++t) {
        const TwinCheck& twin = result.twins[t];
        std::size_t suiteTests = 0, suiteFailures = 0;
        for (const PointCheck& point : twin.points)
            if (point.checked) {
                ++suiteTests;
                suiteFailures += point.failed ? 1 : 0;
            }
        const bool primary = t == 0;
        if (primary) {
            ++suiteTests;
            suiteFailures += result.passed ? 0 : 1;
        }
        const std::string suite = "check " + result.measurements.runName + " against " + twin.twin;
        out << "  <testsuite name=\"" << xmlEscaped(suite) << "\" tests=\"" << suiteTests << "\" failures=\""
            << suiteFailures << "\">\n";
        for (const PointCheck& point : twin.points) {
            if (!point.checked)
                continue;
            out << "    <testcase classname=\"" << xmlEscaped(suite) << "\" name=\"" << xmlEscaped(point.point) << "\"";
            if (!point.failed) {
                out << "/>\n";
                continue;
            }
            const std::string message = "failure rate " + formatted("%.2f %%", 100 * point.failureRate) + " (" +
                                        std::to_string(point.failures) + " of " + std::to_string(point.inputs) +
                                        " inputs) above the allowed " +
                                        formatted("%.2f %%", 100 * result.gate.maxFailureRate);
            out << ">\n      <failure message=\"" << xmlEscaped(message) << "\">" << xmlEscaped(message);
            if (point.departuresStartHere > 0)
                out << xmlEscaped("; departures start here on " + std::to_string(point.departuresStartHere) + " inputs");
            out << "</failure>\n    </testcase>\n";
        }
        if (primary) {
            out << "    <testcase classname=\"" << xmlEscaped(suite) << "\" name=\"end to end\"";
            if (result.passed) {
                out << "/>\n";
            } else {
                std::string reasons;
                for (const std::string& reason : result.reasons)
                    reasons += (reasons.empty() ? "" : " ") + reason;
                out << ">\n      <failure message=\"" << xmlEscaped(result.verdictSentence) << "\">"
                    << xmlEscaped(reasons) << "</failure>\n    </testcase>\n";
            }
        }
        out << "  </testsuite>\n";
    }
    out << "</testsuites>\n";
    return out.str();
}

ChartData checkFailureRateChart(const CheckResult& result, std::size_t twinIndex)
{
    ChartData chart;
    chart.id = "check_failure_rate";
    const TwinCheck& twin = result.twins.at(twinIndex);
    // One line: on a laptop screen a second one takes the bars' height.
    chart.title = "Failure rate per point: " + result.measurements.runName + " vs " + twin.twin;
    chart.xLabel = "capture point (execution order)";
    chart.yLabel = "inputs failing (%)";
    ChartSeries passing{"within the allowed rate", SeriesStyle::Bars, {}, {}, {}, "#4c9a2a"};
    ChartSeries failing{"above the allowed rate", SeriesStyle::Bars, {}, {}, {}, "#c0392b"};
    for (std::size_t p = 0; p < twin.points.size(); ++p) {
        const PointCheck& point = twin.points[p];
        chart.categories.push_back(point.label.empty() ? point.point : point.label);
        ChartSeries& series = point.failed ? failing : passing;
        series.x.push_back(double(p));
        series.y.push_back(point.checked ? 100.0 * point.failureRate : 0.0);
        if (!twin.departureStart.empty() && point.point == twin.departureStart)
            chart.verticalMarkers.push_back({double(p), "departures start"});
    }
    chart.series = {passing, failing};
    chart.horizontalMarkers.push_back({100.0 * result.gate.maxFailureRate,
                                       "allowed " + formatted("%.2g %%", 100.0 * result.gate.maxFailureRate)});
    chart.valueBands.push_back({0.0, 100.0 * result.gate.maxFailureRate, "allowed", "#4c9a2a"});
    return chart;
}

ChartData checkDepartureStartChart(const CheckResult& result, std::size_t twinIndex)
{
    ChartData chart;
    chart.id = "check_departure_start";
    const TwinCheck& twin = result.twins.at(twinIndex);
    chart.title = "Where departures start: the first failing point of each input (" + twin.twin + ")";
    chart.xLabel = "capture point (execution order)";
    chart.yLabel = "inputs";
    ChartSeries series{"inputs whose first failing point this is", SeriesStyle::Bars, {}, {}, {}, "#d35400"};
    for (std::size_t p = 0; p < twin.points.size(); ++p) {
        const PointCheck& point = twin.points[p];
        chart.categories.push_back(point.label.empty() ? point.point : point.label);
        series.x.push_back(double(p));
        series.y.push_back(double(point.departuresStartHere));
    }
    chart.series = {series};
    return chart;
}

ChartData checkF1IntervalChart(const CheckResult& result)
{
    ChartData chart;
    chart.id = "check_f1_interval";
    chart.title = "F1 difference (run - twin), paired bootstrap 95 % interval";
    chart.xLabel = "twin";
    chart.yLabel = "F1 points";
    ChartSeries band{"95 % interval", SeriesStyle::Band, {}, {}, {}, "#2e86c1"};
    ChartSeries mean{"mean difference", SeriesStyle::Points, {}, {}, {}, "#1b4f72"};
    for (std::size_t t = 0; t < result.twins.size(); ++t) {
        const TwinCheck& twin = result.twins[t];
        chart.categories.push_back(twin.twin);
        if (!twin.f1Difference)
            continue;
        band.x.push_back(double(t));
        band.y.push_back(twin.f1Difference->low);
        band.yUpper.push_back(twin.f1Difference->high);
        mean.x.push_back(double(t));
        mean.y.push_back(twin.f1Difference->mean);
    }
    chart.series = {band, mean};
    chart.horizontalMarkers.push_back({0.0, "no difference"});
    chart.horizontalMarkers.push_back({-result.gate.maxF1Drop, "allowed drop " + formatted("%.2f", result.gate.maxF1Drop)});
    return chart;
}

} // namespace scalescope
