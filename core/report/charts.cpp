#include "report/charts.h"

#include <algorithm>
#include <cmath>

namespace scalescope {
namespace {

bool endsWith(const std::string& s, const std::string& suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Infinite SQNR (identical outputs) cannot be drawn; show it at a ceiling well above any real value.
double drawableDb(double db)
{
    if (std::isinf(db))
        return db > 0 ? 200.0 : -50.0;
    return db;
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

std::string referenceName(const ComparisonResult& c)
{
    return c.referenceIsStandIn ? "dequant (stand-in reference)" : "reference";
}

} // namespace

std::string shortLinearLabel(const std::string& module)
{
    const int layer = [&] {
        const std::string prefix = "roberta.encoder.layer.";
        return module.rfind(prefix, 0) == 0 ? std::atoi(module.c_str() + prefix.size()) : -1;
    }();
    if (layer < 0)
        return module;
    const std::string l = "L" + std::to_string(layer) + ".";
    if (endsWith(module, "attention.self.query"))
        return l + "q";
    if (endsWith(module, "attention.self.key"))
        return l + "k";
    if (endsWith(module, "attention.self.value"))
        return l + "v";
    if (endsWith(module, "attention.output.dense"))
        return l + "attn.out";
    if (endsWith(module, "intermediate.dense"))
        return l + "ffn.in";
    if (endsWith(module, "output.dense"))
        return l + "ffn.out";
    return module;
}

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
        chart.categories.push_back(shortLinearLabel(s.module));
        band.x.push_back(x);
        band.y.push_back(s.scaleMin);
        band.yUpper.push_back(s.scaleMax);
        median.x.push_back(x);
        median.y.push_back(s.scaleMedian);
    }
    chart.series = {band, median};
    return chart;
}

ChartData channelScalesChart(const LinearScaleStatistics& linear)
{
    ChartData chart;
    chart.id = "channel_scales";
    chart.title = "Per-channel weight scales of " + linear.module;
    chart.xLabel = "output channel";
    chart.yLabel = "weight scale (log)";
    chart.logY = true;
    ChartSeries points{"weight_scale", SeriesStyle::Points, {}, {}, {}, "#0072B2"};
    for (std::size_t i = 0; i < linear.channelScales.size(); ++i) {
        points.x.push_back(double(i));
        points.y.push_back(linear.channelScales[i]);
    }
    chart.series = {points};
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
        chart.categories.push_back(shortLinearLabel(s.module));
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
    chart.title = "FP8 exponent fields used by " + linear.module;
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

ChartData layerSqnrChart(const ComparisonResult& comparison)
{
    ChartData chart;
    chart.id = "layer_sqnr";
    chart.title = "SQNR of each layer's output, FP8 vs " + referenceName(comparison);
    chart.xLabel = "encoder layer";
    chart.yLabel = "SQNR (dB)";
    ChartSeries bars{"SQNR", SeriesStyle::Bars, {}, {}, {}, "#0072B2"};
    for (const CapturePointMetrics* p : layerOutputs(comparison)) {
        bars.x.push_back(double(chart.categories.size()));
        chart.categories.push_back(layerLabel(*p));
        bars.y.push_back(drawableDb(p->metrics.sqnrDb));
    }
    chart.series = {bars};
    return chart;
}

ChartData layerCosineChart(const ComparisonResult& comparison)
{
    ChartData chart;
    chart.id = "layer_cosine";
    chart.title = "Cosine similarity of each layer's output, FP8 vs " + referenceName(comparison);
    chart.xLabel = "encoder layer";
    chart.yLabel = "cosine similarity";
    ChartSeries bars{"cosine", SeriesStyle::Bars, {}, {}, {}, "#009E73"};
    for (const CapturePointMetrics* p : layerOutputs(comparison)) {
        bars.x.push_back(double(chart.categories.size()));
        chart.categories.push_back(layerLabel(*p));
        bars.y.push_back(p->metrics.cosine);
    }
    chart.series = {bars};
    return chart;
}

ChartData linearSqnrChart(const ComparisonResult& comparison)
{
    ChartData chart;
    chart.id = "linear_sqnr";
    chart.title = "SQNR of each Linear's output, FP8 vs " + referenceName(comparison);
    chart.xLabel = "Linear module";
    chart.yLabel = "SQNR (dB)";
    ChartSeries bars{"SQNR", SeriesStyle::Bars, {}, {}, {}, "#0072B2"};
    for (const CapturePointMetrics& p : comparison.points) {
        if (p.kind != CaptureKind::LinearOutput)
            continue;
        bars.x.push_back(double(chart.categories.size()));
        chart.categories.push_back(shortLinearLabel(p.module));
        bars.y.push_back(drawableDb(p.metrics.sqnrDb));
    }
    chart.series = {bars};
    return chart;
}

ChartData errorGrowthChart(const ComparisonResult& comparison)
{
    ChartData chart;
    chart.id = "error_growth";
    chart.title = "Error growth through the layers, FP8 vs " + referenceName(comparison);
    chart.xLabel = "encoder layer";
    chart.yLabel = "relative L2 error";
    ChartSeries line{"relative L2 error", SeriesStyle::Line, {}, {}, {}, "#D55E00"};
    for (const CapturePointMetrics* p : layerOutputs(comparison)) {
        line.x.push_back(double(chart.categories.size()));
        chart.categories.push_back(layerLabel(*p));
        line.y.push_back(std::isfinite(p->metrics.relativeL2) ? p->metrics.relativeL2 : 0.0);
    }
    chart.series = {line};
    return chart;
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
        chart.categories.push_back(shortLinearLabel(a.module));
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

ChartData activationScaleChart(const ComparisonResult& comparison)
{
    ChartData chart;
    chart.id = "activation_range";
    chart.title = "Observed input amax vs the FP8 range of its scale";
    chart.xLabel = "Linear module";
    chart.yLabel = "magnitude (log)";
    chart.logY = true;
    ChartSeries amax{"observed amax", SeriesStyle::Bars, {}, {}, {}, "#0072B2"};
    ChartSeries range{"448 x scale", SeriesStyle::Points, {}, {}, {}, "#D55E00"};
    for (const ActivationStatistics& a : comparison.activations) {
        const double x = double(chart.categories.size());
        chart.categories.push_back(shortLinearLabel(a.module));
        amax.x.push_back(x);
        amax.y.push_back(a.amax);
        range.x.push_back(x);
        range.y.push_back(448.0 * a.inputScale);
    }
    chart.series = {amax, range};
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

} // namespace scalescope
