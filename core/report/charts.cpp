#include "report/charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "analysis/verdict.h"
#include "numerics/attention_fp8.h"
#include "numerics/half.h"
#include "report/decibel_text.h"
#include "tasks/sensitivity_words.h"

namespace scalescope {
namespace {

// A Linear's chart label, read from the comparison's capture points (each Linear's input point
// carries it); the module name when it has none.
std::string labelOf(const ComparisonResult& comparison, const std::string& module)
{
    for (const CapturePointMetrics& point : comparison.points)
        if (point.module == module)
            return point.label;
    return module;
}

// An infinite SQNR (identical outputs, e.g. the embeddings, which FP8 does not touch) has no bar;
// the title says so and the CSV keeps "inf".
void noteInfinite(ChartData& chart, const ChartSeries& series)
{
    for (double v : series.y)
        if (std::isinf(v)) {
            chart.title += " (no bar: identical)";
            return;
        }
}

std::vector<const CapturePointMetrics*> layerOutputs(const ComparisonResult& comparison)
{
    std::vector<const CapturePointMetrics*> out;
    for (const CapturePointMetrics& p : comparison.points)
        if (p.kind == CaptureKind::Embeddings || p.kind == CaptureKind::LayerOutput)
            out.push_back(&p);
    return out;
}

std::string layerLabel(const CapturePointMetrics& p)
{
    return p.kind == CaptureKind::Embeddings ? "emb" : "L" + std::to_string(p.layer);
}

std::string runName(const ComparisonResult& c)
{
    return c.runLabel == "dequant" ? "dequant" : c.runLabel == "fp16" ? "FP16 twin" : "FP8";
}

std::string referenceName(const ComparisonResult& c)
{
    return c.referenceIsStandIn ? "dequant (stand-in reference)" : "reference";
}

} // namespace

ChartData weightScaleRangesChart(const std::vector<LinearScaleStatistics>& statistics)
{
    ChartData chart;
    chart.id = "weight_scale_ranges";
    chart.title = "Weight scale range per Linear (min to max over channels)";
    chart.xLabel = "Linear module";
    chart.yLabel = "weight scale (log)";
    chart.logY = true;
    ChartSeries band{"scale range", SeriesStyle::Band, {}, {}, {}, "#0072B2"};
    ChartSeries median{"median", SeriesStyle::Points, {}, {}, {}, "#D55E00"};
    for (const LinearScaleStatistics& s : statistics) {
        if (!s.quantized || s.channelScales.empty())
            continue;
        const double x = double(chart.categories.size());
        chart.categories.push_back(s.label);
        band.x.push_back(x);
        band.y.push_back(s.scaleMin);
        band.yUpper.push_back(s.scaleMax);
        median.x.push_back(x);
        median.y.push_back(s.scaleMedian);
    }
    chart.series = {band, median};
    return chart;
}

ChartData blockScalesChart(const LinearScaleStatistics& linear)
{
    ChartData chart;
    chart.id = "block_scales";
    chart.title = "Block weight scales, " + linear.label;
    chart.xLabel = "input block";
    chart.yLabel = "output block";
    ChartSeries cells{"weight_scale", SeriesStyle::Cells, {}, {}, {}, "", {}};
    if (linear.gridRows > 0 && linear.gridColumns > 0 &&
        linear.channelScales.size() == static_cast<std::size_t>(linear.gridRows * linear.gridColumns)) {
        chart.title += " (" + std::to_string(linear.gridRows) + " x " + std::to_string(linear.gridColumns) +
                       " blocks of " + std::to_string(linear.blockRows) + " x " + std::to_string(linear.blockColumns) + ")";
        for (int64_t row = 0; row < linear.gridRows; ++row)
            for (int64_t column = 0; column < linear.gridColumns; ++column) {
                cells.x.push_back(double(column));
                cells.y.push_back(double(row));
                cells.z.push_back(linear.channelScales[static_cast<std::size_t>(row * linear.gridColumns + column)]);
            }
    }
    chart.series = {cells};
    return chart;
}

ChartData channelScalesChart(const LinearScaleStatistics& linear)
{
    ChartData chart;
    chart.id = "channel_scales";
    // The word embeddings' channels are their rows, one per token id.
    chart.title = (linear.embedding ? "Per-row embedding scales, " : "Per-channel weight scales, ") + linear.label;
    chart.xLabel = linear.embedding ? "row (token id)" : "output channel";
    chart.yLabel = "weight scale (log)";
    chart.logY = true;
    ChartSeries points{"weight_scale", SeriesStyle::Points, {}, {}, {}, "#0072B2"};
    // A log axis cannot show NaN, zero, negative or infinite scales; they are the ones that matter
    // most, so they get a red series of their own, drawn at the bottom of the valid range.
    ChartSeries invalid{"invalid scale (NaN, zero, negative or inf)", SeriesStyle::Points, {}, {}, {}, "#D00000"};
    double lowest = std::numeric_limits<double>::infinity();
    double highest = 0;
    for (float scale : linear.channelScales)
        if (std::isfinite(scale) && scale > 0) {
            lowest = std::min(lowest, double(scale));
            highest = std::max(highest, double(scale));
        }
    const double floor = std::isfinite(lowest) ? lowest : 1.0;
    for (std::size_t i = 0; i < linear.channelScales.size(); ++i) {
        const double scale = linear.channelScales[i];
        const bool valid = std::isfinite(scale) && scale > 0;
        (valid ? points : invalid).x.push_back(double(i));
        (valid ? points : invalid).y.push_back(valid ? scale : floor);
    }
    chart.series = {points};
    if (!invalid.x.empty()) {
        chart.title += " (" + std::to_string(invalid.x.size()) + " invalid)";
        chart.series.push_back(invalid);
    }
    // A spread of more than 10^4 between channels leaves the small-scale channels a handful of codes.
    if (std::isfinite(lowest) && highest / lowest > 1e4) {
        char ratio[32];
        std::snprintf(ratio, sizeof ratio, "%.3g", highest / lowest);
        chart.title += std::string(" (extreme max/min ratio ") + ratio + ")";
    }
    return chart;
}

ChartData weightCodeSharesChart(const std::vector<LinearScaleStatistics>& statistics)
{
    ChartData chart;
    chart.id = "weight_code_shares";
    chart.title = "FP8 weight codes at the range limits per Linear";
    chart.xLabel = "Linear module";
    chart.yLabel = "share of weight codes (%)";
    ChartSeries clipped{"at +-448 (clipped)", SeriesStyle::Bars, {}, {}, {}, "#D55E00"};
    ChartSeries underflow{"zero or subnormal (underflow)", SeriesStyle::Bars, {}, {}, {}, "#0072B2"};
    for (const LinearScaleStatistics& s : statistics) {
        if (!s.quantized)
            continue;
        const double x = double(chart.categories.size());
        chart.categories.push_back(s.label);
        clipped.x.push_back(x);
        clipped.y.push_back(100.0 * s.clippedShare);
        underflow.x.push_back(x);
        underflow.y.push_back(100.0 * s.underflowShare);
    }
    chart.series = {clipped, underflow};
    return chart;
}

ChartData exponentHistogramChart(const LinearScaleStatistics& linear)
{
    ChartData chart;
    chart.id = "exponent_histogram";
    char shares[96];
    std::snprintf(shares, sizeof shares, ": %.2f%% underflow, %.2f%% clipped", 100.0 * linear.underflowShare,
                  100.0 * linear.clippedShare);
    chart.title = "FP8 exponents, " + linear.label + shares;
    chart.xLabel = "E4M3 exponent field (0 = zero/subnormal, 15 = top incl. 448)";
    chart.yLabel = "weight codes";
    ChartSeries bars{"codes", SeriesStyle::Bars, {}, {}, {}, "#009E73"};
    for (int e = 0; e < 16; ++e) {
        chart.categories.push_back(std::to_string(e));
        bars.x.push_back(e);
        bars.y.push_back(double(linear.exponentHistogram[static_cast<std::size_t>(e)]));
    }
    chart.series = {bars};
    return chart;
}

namespace {

// SQNR axes are shaded by the verdict's bands (analysis/verdict.h), so a bar reads as good or poor
// without the user knowing the thresholds.
void addSqnrBands(ChartData& chart)
{
    const VerdictThresholds& t = verdictThresholds();
    const auto dB = [](double v) {
        char text[32];
        std::snprintf(text, sizeof text, "%g dB", v);
        return std::string(text);
    };
    chart.valueBands = {
        {t.goodSqnrDb, 1e6, "good (>= " + dB(t.goodSqnrDb) + ")", gradeColor(Grade::Good)},
        {t.poorSqnrDb, t.goodSqnrDb, "fair", gradeColor(Grade::Fair)},
        {-1e6, t.poorSqnrDb, "poor (< " + dB(t.poorSqnrDb) + ")", gradeColor(Grade::Poor)},
    };
}

// One value per layer output (embeddings first), for the per-layer charts.
ChartData perLayerChart(const ComparisonResult& comparison, const std::string& id, const std::string& what,
                        const std::string& yLabel, ChartSeries series, double (*value)(const ErrorMetrics&))
{
    ChartData chart;
    chart.id = id;
    chart.title = what + ", " + runName(comparison) + " vs " + referenceName(comparison);
    chart.xLabel = "encoder layer";
    chart.yLabel = yLabel;
    for (const CapturePointMetrics* p : layerOutputs(comparison)) {
        series.x.push_back(double(chart.categories.size()));
        chart.categories.push_back(layerLabel(*p));
        series.y.push_back(value(p->metrics));
    }
    noteInfinite(chart, series);
    chart.series = {series};
    return chart;
}

} // namespace

ChartData layerSqnrChart(const ComparisonResult& comparison)
{
    ChartData chart = perLayerChart(comparison, "layer_sqnr", "SQNR of each layer's output", "SQNR (dB)",
                                    {"SQNR", SeriesStyle::Bars, {}, {}, {}, "#0072B2"},
                                    [](const ErrorMetrics& m) { return m.sqnrDb; });
    addSqnrBands(chart);
    return chart;
}

ChartData layerCosineChart(const ComparisonResult& comparison)
{
    // Cosines of a working FP8 model are all 0.999...: bars of 1 - cos on a log axis show the
    // differences that bars of cos at 1.0 hide.
    ChartData chart = perLayerChart(comparison, "layer_cosine", "Cosine distance (1 - cos) of each layer's output",
                                    "1 - cosine similarity (log)", {"1 - cosine", SeriesStyle::Bars, {}, {}, {}, "#009E73"},
                                    [](const ErrorMetrics& m) { return 1.0 - m.cosine; });
    chart.logY = true;
    for (double v : chart.series.front().y)
        if (v <= 0.0) {
            chart.title += " (no bar: identical)";
            break;
        }
    return chart;
}

ChartData linearSqnrChart(const ComparisonResult& comparison)
{
    ChartData chart;
    chart.id = "linear_sqnr";
    chart.title = "SQNR of each Linear's output, " + runName(comparison) + " vs " + referenceName(comparison);
    chart.xLabel = "Linear module";
    chart.yLabel = "SQNR (dB)";
    ChartSeries bars{"SQNR", SeriesStyle::Bars, {}, {}, {}, "#0072B2"};
    for (const CapturePointMetrics& p : comparison.points) {
        if (p.kind != CaptureKind::LinearOutput)
            continue;
        bars.x.push_back(double(chart.categories.size()));
        chart.categories.push_back(p.label);
        bars.y.push_back(p.metrics.sqnrDb);
    }
    noteInfinite(chart, bars);
    chart.series = {bars};
    addSqnrBands(chart);
    return chart;
}

ChartData errorGrowthChart(const ComparisonResult& comparison)
{
    // A relative error that is infinite (a zero reference) is drawn at 0 rather than left out, so the
    // line stays connected.
    return perLayerChart(comparison, "error_growth", "Error growth through the layers", "relative L2 error",
                         {"relative L2 error", SeriesStyle::Line, {}, {}, {}, "#D55E00"},
                         [](const ErrorMetrics& m) { return std::isfinite(m.relativeL2) ? m.relativeL2 : 0.0; });
}

ChartData activationSharesChart(const ComparisonResult& comparison)
{
    ChartData chart;
    chart.id = "activation_shares";
    chart.title = "FP8 activation quantization per Linear input";
    chart.xLabel = "Linear module";
    chart.yLabel = "share of input elements (%)";
    ChartSeries clipped{"clipped (|x/s| > 448)", SeriesStyle::Bars, {}, {}, {}, "#D55E00"};
    ChartSeries flushed{"flushed to zero", SeriesStyle::Bars, {}, {}, {}, "#0072B2"};
    ChartSeries subnormal{"subnormal", SeriesStyle::Bars, {}, {}, {}, "#CC79A7"};
    for (const ActivationStatistics& a : comparison.activations) {
        const double x = double(chart.categories.size());
        chart.categories.push_back(labelOf(comparison, a.module));
        const double n = a.elements > 0 ? double(a.elements) : 1.0;
        clipped.x.push_back(x);
        clipped.y.push_back(100.0 * double(a.clipped) / n);
        flushed.x.push_back(x);
        flushed.y.push_back(100.0 * double(a.flushedToZero) / n);
        subnormal.x.push_back(x);
        subnormal.y.push_back(100.0 * double(a.subnormal) / n);
    }
    chart.series = {clipped, flushed, subnormal};
    return chart;
}

ChartData activationScaleChart(const ComparisonResult& comparison, bool scalesAreDynamic)
{
    ChartData chart;
    chart.id = "activation_range";
    chart.title = scalesAreDynamic ? "Observed input amax vs the dynamic per-token amax (448 x largest per-token scale)"
                                   : "Observed input amax vs the FP8 range of its scale";
    chart.xLabel = "Linear module";
    chart.yLabel = "magnitude (log)";
    chart.logY = true;
    ChartSeries amax{"observed amax", SeriesStyle::Bars, {}, {}, {}, "#0072B2"};
    ChartSeries range{scalesAreDynamic ? "dynamic per-token amax (448 x largest scale)" : "448 x scale",
        SeriesStyle::Points, {}, {}, {}, "#D55E00"};
    for (const ActivationStatistics& a : comparison.activations) {
        const double x = double(chart.categories.size());
        chart.categories.push_back(labelOf(comparison, a.module));
        amax.x.push_back(x);
        amax.y.push_back(a.amax);
        range.x.push_back(x);
        range.y.push_back(448.0 * a.inputScale);
    }
    chart.series = {amax, range};
    return chart;
}

ChartData fp16HeadroomChart(const ComparisonResult& comparison)
{
    ChartData chart;
    chart.id = "fp16_headroom";
    chart.title = "Largest |output| per module against fp16's limit, " + runName(comparison) + " run";
    chart.xLabel = "module";
    chart.yLabel = "max |output| (log)";
    chart.logY = true;
    ChartSeries within{"within fp16", SeriesStyle::Bars, {}, {}, {}, "#0072B2"};
    ChartSeries over{"overflows fp16", SeriesStyle::Bars, {}, {}, {}, "#D55E00"};
    constexpr double kInfDrawnAt = 131072.0; // 2^17: above the line, on the axis
    bool anyInf = false;
    for (std::size_t i = 0; i < comparison.outputRanges.size(); ++i) {
        const ModuleOutputRange& range = comparison.outputRanges[i];
        const double x = double(chart.categories.size());
        chart.categories.push_back(i < comparison.outputRangeLabels.size() ? comparison.outputRangeLabels[i] : range.module);
        ChartSeries& series = range.maxAbs > half::kHalfMax ? over : within;
        anyInf = anyInf || std::isinf(range.maxAbs);
        series.x.push_back(x);
        series.y.push_back(std::isinf(range.maxAbs) ? kInfDrawnAt : double(range.maxAbs));
    }
    if (anyInf)
        chart.title += " (inf drawn at 131,072)";
    chart.series = {within, over};
    chart.horizontalMarkers = {{double(half::kHalfMax), "fp16 max 65,504"}};
    return chart;
}

ChartData attentionHeadroomChart(const ComparisonResult& comparison, bool key)
{
    ChartData chart;
    chart.id = key ? "attention_headroom_k" : "attention_headroom_v";
    const double range = key ? double(attention_fp8::kKeyRange) : double(attention_fp8::kValueRange);
    chart.title = std::string(key ? "K" : "V") + " in FP8: top magnitude per head (range " + std::to_string(int(range)) +
                  " of E4M3's 448)";
    chart.xLabel = "head";
    chart.yLabel = "layer";
    ChartSeries cells{"top_median", SeriesStyle::Cells, {}, {}, {}, "", {}};
    for (const CastHeadroom& cast : comparison.attentionHeadroom) {
        if (cast.key != key)
            continue;
        for (const HeadHeadroom& head : cast.heads) {
            cells.x.push_back(double(head.head));
            cells.y.push_back(double(cast.layer));
            cells.z.push_back(head.topMedian);
        }
    }
    chart.series = {cells};
    return chart;
}

ChartData attentionSmallValuesChart(const ComparisonResult& comparison)
{
    ChartData chart;
    chart.id = "attention_small_values";
    chart.title = "K and V in FP8: values rounded to zero or to a subnormal";
    chart.xLabel = "layer and tensor";
    chart.yLabel = "share of values (%)";
    ChartSeries zero{"rounded to zero", SeriesStyle::Bars, {}, {}, {}, "#D55E00"};
    ChartSeries subnormal{"subnormal", SeriesStyle::Bars, {}, {}, {}, "#E69F00"};
    for (const CastHeadroom& cast : comparison.attentionHeadroom) {
        const double x = double(chart.categories.size());
        chart.categories.push_back("L" + std::to_string(cast.layer) + (cast.key ? ".k" : ".v"));
        zero.x.push_back(x);
        zero.y.push_back(100.0 * cast.zeroShare());
        subnormal.x.push_back(x);
        subnormal.y.push_back(100.0 * cast.subnormalShare());
    }
    chart.series = {zero, subnormal};
    return chart;
}

ChartData comparisonChart(ComparisonChart which, const ComparisonResult& comparison, bool scalesAreDynamic)
{
    switch (which) {
    case ComparisonChart::LayerSqnr:
        return layerSqnrChart(comparison);
    case ComparisonChart::LayerCosine:
        return layerCosineChart(comparison);
    case ComparisonChart::ErrorGrowth:
        return errorGrowthChart(comparison);
    case ComparisonChart::LinearSqnr:
        return linearSqnrChart(comparison);
    case ComparisonChart::ActivationShares:
        return activationSharesChart(comparison);
    case ComparisonChart::ActivationRange:
        return activationScaleChart(comparison, scalesAreDynamic);
    case ComparisonChart::Fp16Headroom:
        return fp16HeadroomChart(comparison);
    case ComparisonChart::AttentionKeys:
        return attentionHeadroomChart(comparison, true);
    case ComparisonChart::AttentionValues:
        return attentionHeadroomChart(comparison, false);
    case ComparisonChart::AttentionSmallValues:
        return attentionSmallValuesChart(comparison);
    }
    return {};
}

std::vector<ComparisonChart> comparisonChartsWithValues(const ComparisonResult& comparison)
{
    std::vector<ComparisonChart> charts = {ComparisonChart::LayerSqnr, ComparisonChart::LayerCosine,
        ComparisonChart::ErrorGrowth, ComparisonChart::LinearSqnr};
    if (!comparison.activations.empty())
        charts.insert(charts.end(), {ComparisonChart::ActivationShares, ComparisonChart::ActivationRange});
    if (!comparison.outputRanges.empty())
        charts.push_back(ComparisonChart::Fp16Headroom);
    if (!comparison.attentionHeadroom.empty())
        charts.insert(charts.end(),
            {ComparisonChart::AttentionKeys, ComparisonChart::AttentionValues, ComparisonChart::AttentionSmallValues});
    return charts;
}

std::vector<ChartData> comparisonPlots(const ComparisonResult& comparison, bool scalesAreDynamic)
{
    std::vector<ChartData> charts;
    for (ComparisonChart which : comparisonChartsWithValues(comparison))
        charts.push_back(comparisonChart(which, comparison, scalesAreDynamic));
    return charts;
}

ChartData errorHistogramChart(const std::string& point, const std::vector<float>& run,
                              const std::vector<float>& reference, int bins)
{
    ChartData chart;
    chart.id = "error_histogram";
    chart.title = "Error distribution at " + point;
    chart.xLabel = "FP8 - reference";
    chart.yLabel = "elements";
    const std::size_t n = std::min(run.size(), reference.size());
    double low = 0, high = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double e = double(run[i]) - double(reference[i]);
        low = std::min(low, e);
        high = std::max(high, e);
    }
    bins = std::max(1, bins);
    if (high <= low)
        high = low + 1e-12;
    const double width = (high - low) / bins;
    std::vector<double> counts(static_cast<std::size_t>(bins), 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        const double e = double(run[i]) - double(reference[i]);
        const int bin = std::min(bins - 1, static_cast<int>((e - low) / width));
        counts[static_cast<std::size_t>(bin)] += 1;
    }
    ChartSeries bars{"elements", SeriesStyle::Bars, {}, counts, {}, "#0072B2"};
    for (int b = 0; b < bins; ++b)
        bars.x.push_back(low + (b + 0.5) * width);
    chart.series = {bars};
    return chart;
}

ChartData referenceScatterChart(const std::string& point, const std::vector<float>& run,
                                const std::vector<float>& reference, std::size_t maxPoints)
{
    ChartData chart;
    chart.id = "reference_scatter";
    chart.title = "Reference vs FP8 values at " + point;
    chart.xLabel = "reference value";
    chart.yLabel = "FP8 value";
    const std::size_t n = std::min(run.size(), reference.size());
    const std::size_t step = std::max<std::size_t>(1, (n + maxPoints - 1) / std::max<std::size_t>(1, maxPoints));
    ChartSeries points{"elements", SeriesStyle::Points, {}, {}, {}, "#0072B2"};
    double low = 0, high = 0;
    for (std::size_t i = 0; i < n; i += step) {
        points.x.push_back(reference[i]);
        points.y.push_back(run[i]);
        low = std::min(low, double(reference[i]));
        high = std::max(high, double(reference[i]));
    }
    ChartSeries diagonal{"y = x", SeriesStyle::Line, {low, high}, {low, high}, {}, "#D55E00"};
    chart.series = {points, diagonal};
    return chart;
}

ChartData qaLogitsChart(const std::vector<std::string>& tokens, const std::vector<float>& runStart,
    const std::vector<float>& runEnd, const std::vector<float>& referenceStart, const std::vector<float>& referenceEnd,
    bool hasReference, std::pair<int, int> answerTokens)
{
    ChartData chart;
    chart.id = "qa_logits";
    chart.title = "Start and end logits over the window's tokens";
    chart.xLabel = "token";
    chart.yLabel = "logit";
    chart.categories = tokens;
    auto series = [&](const std::string& name, const std::vector<float>& values, const std::string& color) {
        ChartSeries s{name, SeriesStyle::Line, {}, {}, {}, color};
        for (std::size_t i = 0; i < values.size(); ++i) {
            s.x.push_back(double(i));
            s.y.push_back(values[i]);
        }
        return s;
    };
    chart.series = {series("start (FP8)", runStart, "#0072B2"), series("end (FP8)", runEnd, "#D55E00")};
    if (hasReference) {
        // Points in other hues: sky blue and orange next to blue and vermillion lines were told
        // apart by nobody.
        ChartSeries start = series("start (reference)", referenceStart, "#009E73");
        ChartSeries end = series("end (reference)", referenceEnd, "#CC79A7");
        start.style = end.style = SeriesStyle::Points;
        chart.series.push_back(start);
        chart.series.push_back(end);
    }
    const auto [first, last] = answerTokens;
    if (first >= 0 && first == last)
        chart.verticalMarkers = {{double(first), "answer (one token)"}};
    else if (first >= 0 && last > first)
        chart.verticalMarkers = {{double(first), "answer start"}, {double(last), "answer end"}};
    return chart;
}

ChartData maskProbabilitiesChart(const std::vector<std::string>& tokens, const std::vector<double>& run,
                                 const std::vector<double>& reference, bool hasReference)
{
    ChartData chart;
    chart.id = "mask_probabilities";
    chart.title = "Top predictions at the first mask";
    chart.xLabel = "token";
    chart.yLabel = "probability";
    chart.categories = tokens;
    ChartSeries runBars{"FP8", SeriesStyle::Bars, {}, run, {}, "#0072B2"};
    ChartSeries referenceBars{"reference", SeriesStyle::Bars, {}, reference, {}, "#E69F00"};
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        runBars.x.push_back(double(i));
        referenceBars.x.push_back(double(i));
    }
    chart.series = {runBars};
    if (hasReference)
        chart.series.push_back(referenceBars);
    return chart;
}

ChartData evaluationScoresChart(const EvaluationResult& result)
{
    ChartData chart;
    chart.id = "evaluation_scores";
    chart.title = "SQuAD scores of the " + result.runLabel + " run and its " +
                  (result.referenceIsStandIn ? std::string("dequant stand-in") : std::string("reference"));
    chart.xLabel = "metric";
    chart.yLabel = "score (%)";
    ChartSeries run{result.runLabel == "fp8" ? "FP8" : result.runLabel, SeriesStyle::Bars, {}, {}, {}, "#0072B2"};
    ChartSeries reference{"reference", SeriesStyle::Bars, {}, {}, {}, "#E69F00"};
    auto add = [&](const std::string& name, double runValue, double referenceValue) {
        const double x = double(chart.categories.size());
        chart.categories.push_back(name);
        run.x.push_back(x);
        run.y.push_back(runValue);
        reference.x.push_back(x);
        reference.y.push_back(referenceValue);
    };
    add("Exact match", result.runScores.exact, result.referenceScores.exact);
    add("F1", result.runScores.f1, result.referenceScores.f1);
    if (result.runScores.hasAnsTotal > 0 && result.runScores.noAnsTotal > 0) {
        add("HasAns F1", result.runScores.hasAnsF1, result.referenceScores.hasAnsF1);
        add("NoAns F1", result.runScores.noAnsF1, result.referenceScores.noAnsF1);
    }
    chart.series = {run, reference};
    return chart;
}

ChartData agreementSqnrChart(const EvaluationResult& result, int bins)
{
    ChartData chart;
    chart.id = "agreement_sqnr";
    chart.title = "Logits SQNR per question: same answer vs different answer";
    chart.xLabel = "SQNR of the start/end logits (dB)";
    chart.yLabel = "questions";
    double low = INFINITY, high = -INFINITY;
    for (const EvaluatedExample& e : result.examples)
        if (std::isfinite(e.logits.sqnrDb)) {
            low = std::min(low, e.logits.sqnrDb);
            high = std::max(high, e.logits.sqnrDb);
        }
    if (!std::isfinite(low))
        return chart;
    bins = std::max(1, bins);
    if (high <= low)
        high = low + 1.0;
    const double width = (high - low) / bins;
    ChartSeries agree{"same answer", SeriesStyle::Bars, {}, std::vector<double>(static_cast<std::size_t>(bins), 0.0), {}, "#009E73"};
    ChartSeries differ{"different answer", SeriesStyle::Bars, {}, std::vector<double>(static_cast<std::size_t>(bins), 0.0), {}, "#D55E00"};
    for (int b = 0; b < bins; ++b) {
        agree.x.push_back(low + (b + 0.5) * width);
        differ.x.push_back(low + (b + 0.5) * width);
    }
    for (const EvaluatedExample& e : result.examples) {
        if (!std::isfinite(e.logits.sqnrDb))
            continue;
        const int bin = std::min(bins - 1, static_cast<int>((e.logits.sqnrDb - low) / width));
        (e.agree ? agree : differ).y[static_cast<std::size_t>(bin)] += 1;
    }
    chart.series = {agree, differ};
    return chart;
}

int widestScaleSpread(const std::vector<LinearScaleStatistics>& statistics)
{
    int best = -1;
    for (std::size_t i = 0; i < statistics.size(); ++i) {
        if (!statistics[i].quantized || statistics[i].channelScales.empty())
            continue;
        if (best < 0 || statistics[i].scaleRatio > statistics[static_cast<std::size_t>(best)].scaleRatio)
            best = static_cast<int>(i);
    }
    return best;
}

namespace {

std::string granularityNoun(const std::string& granularity)
{
    if (granularity == "linear")
        return "Linear";
    if (granularity == "unit")
        return "unit (q/k/v together)";
    if (granularity == "layer")
        return "layer";
    return {};
}

// "reference (DIR)" as the folder's own name: the full path is the stamp's business.
std::string sweepReferenceName(const SensitivityResult& result)
{
    if (result.referenceIsStandIn)
        return "dequant (stand-in reference)";
    const std::string& label = result.referenceLabel;
    const std::string prefix = "reference (";
    if (label.rfind(prefix, 0) == 0 && label.size() > prefix.size() + 1 && label.back() == ')') {
        std::string dir = label.substr(prefix.size(), label.size() - prefix.size() - 1);
        while (dir.size() > 1 && (dir.back() == '/' || dir.back() == '\\'))
            dir.pop_back();
        const std::size_t slash = dir.find_last_of("/\\");
        return "reference " + (slash == std::string::npos ? dir : dir.substr(slash + 1));
    }
    return label;
}

} // namespace

std::string sensitivityChartTitle(const SensitivityResult& result)
{
    std::string title = "Final logits SQNR recovered and lost";
    const std::string noun = granularityNoun(result.granularity);
    if (!noun.empty())
        title += " per " + noun;
    const std::string reference = sweepReferenceName(result);
    if (!reference.empty())
        title += ", " + std::string(result.run.mode == RunMode::Fp16 ? "FP16 twin" : "FP8") + " vs " + reference;
    if (!result.target.empty())
        title += "; target: " + result.target;
    return title;
}

ChartData sensitivityChart(const SensitivityResult& result)
{
    ChartData chart;
    chart.id = "sensitivity";
    chart.title = sensitivityChartTitle(result);
    chart.xLabel = result.granularity == "layer"  ? "encoder layer (rank order)"
                   : result.granularity == "unit" ? "Linear or q/k/v unit (rank order)"
                                                  : "Linear module (rank order)";
    chart.yLabel = "dB of final logits SQNR";
    ChartSeries recovered{kRecoveredMeasure, SeriesStyle::Bars, {}, {}, {}, "#009E73"};
    ChartSeries lost{kLostAloneMeasure, SeriesStyle::Bars, {}, {}, {}, "#D55E00"};
    double tallest = 0;
    for (const SensitivityEntry& e : result.entries)
        for (double v : {e.recoveredDb, e.lostAloneDb})
            if (std::isfinite(v))
                tallest = std::max(tallest, v);
    if (!(tallest > 0))
        tallest = 1;
    bool recoveredCapped = false, lostCapped = false;
    auto drawn = [tallest](double v, bool& capped) {
        if (std::isinf(v) && v > 0) {
            capped = true;
            return tallest;
        }
        return std::isfinite(v) ? v : 0.0;
    };
    for (const SensitivityEntry& e : result.entries) {
        const double x = double(chart.categories.size());
        // Within the spread of zero there is nothing to draw: the axis says so in words.
        const bool noEffect = sensitivityNoMeasurableEffect(e, result.spread);
        chart.categories.push_back(noEffect ? (e.label.empty() ? e.module : e.label) + " (no effect)"
                                            : sensitivityMarkedLabel(e)); // a tie says so on the axis and in the tooltip
        recovered.x.push_back(x);
        recovered.y.push_back(noEffect ? 0.0 : drawn(e.recoveredDb, recoveredCapped));
        lost.x.push_back(x);
        lost.y.push_back(noEffect ? 0.0 : drawn(e.lostAloneDb, lostCapped));
    }
    if (recoveredCapped)
        recovered.name += " (exact: drawn at the top)";
    if (lostCapped)
        lost.name += " (as bad as all FP8: drawn at the top)";
    chart.series = {recovered, lost};
    if (!result.entries.empty() && result.spread.estimated && std::isfinite(result.entries.front().recoveredDb)) {
        const SensitivityEntry& top = result.entries.front();
        const std::string what = top.tieRank ? "ties with rank 1 above this line" : "nothing else within the spread";
        chart.horizontalMarkers.push_back(
            {top.recoveredDb - result.spread.db, what + " (spread +-" + spreadDecibelString(result.spread.db) + " dB)"});
    }
    return chart;
}

ChartData overlayCharts(const ChartData& a, const ChartData& b, const std::string& labelA, const std::string& labelB)
{
    ChartData chart = a;
    chart.title = a.title + " (" + labelA + " and " + labelB + ")";
    for (ChartSeries& series : chart.series)
        series.name = labelA + ": " + series.name;
    // B's x positions follow A's categories by name, so that one layer's bars stand together.
    // Same categories (the same tokens, which may repeat): B's x stays; otherwise by first name.
    const bool sameCategories = a.categories == b.categories;
    auto positionOf = [&](double x) {
        if (sameCategories || chart.categories.empty() || b.categories.empty())
            return x;
        const std::size_t index = static_cast<std::size_t>(x);
        if (x < 0 || index >= b.categories.size())
            return x;
        const std::string& name = b.categories[index];
        auto found = std::find(chart.categories.begin(), chart.categories.end(), name);
        if (found == chart.categories.end()) {
            chart.categories.push_back(name);
            return double(chart.categories.size() - 1);
        }
        return double(found - chart.categories.begin());
    };
    // B's colours: the overlay colour first, then others, each unused by A's series (a chart whose
    // own second series is orange, the scale ranges' medians, must not give B the same orange).
    std::vector<std::string> freeColors;
    for (const char* color : {kOverlayColorB, "#CC79A7", "#E69F00", "#56B4E9", "#000000"})
        if (std::none_of(a.series.begin(), a.series.end(), [&](const ChartSeries& s) { return s.color == color; }))
            freeColors.push_back(color);
    std::size_t nextColor = 0;
    for (ChartSeries series : b.series) {
        series.name = labelB + ": " + series.name;
        if (series.style != SeriesStyle::Cells && !freeColors.empty())
            series.color = freeColors[std::min(nextColor++, freeColors.size() - 1)];
        for (double& x : series.x)
            x = positionOf(x);
        chart.series.push_back(std::move(series));
    }
    return chart;
}

ChartData overlayAbsent(const ChartData& a, const std::string& labelA, const std::string& labelB, const std::string& why)
{
    if (a.series.empty())
        return a;
    ChartData chart = a;
    chart.title = a.title + " (" + labelA + "; " + labelB + ": " + why + ")";
    for (ChartSeries& series : chart.series)
        series.name = labelA + ": " + series.name;
    return chart;
}

ChartData overlayOrAbsent(const ChartData& a, const ChartData* b, const std::string& labelA, const std::string& labelB)
{
    if (a.series.empty())
        return a;
    if (!b)
        return overlayAbsent(a, labelA, labelB, "not run");
    if (b->series.empty())
        return overlayAbsent(a, labelA, labelB, "no values");
    // A heat map's cells fill the plot: B's cells would cover A's, not stand beside them.
    auto cells = [](const ChartData& chart) {
        return std::any_of(chart.series.begin(), chart.series.end(),
                           [](const ChartSeries& s) { return s.style == SeriesStyle::Cells; });
    };
    if (cells(a) || cells(*b))
        return overlayAbsent(a, labelA, labelB, "heat map not overlaid");
    return overlayCharts(a, *b, labelA, labelB);
}

} // namespace scalescope
