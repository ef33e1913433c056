#pragma once
// The product's charts as ChartData, built from scale statistics and comparisons. The same builders
// feed the workbench's panels and the CLI's --plots exports.
#include <string>
#include <vector>

#include "tasks/compare_runs.h"
#include "analysis/scale_statistics.h"
#include "tasks/evaluate.h"
#include "tasks/sensitivity.h"
#include "report/chart_data.h"

namespace scalescope {

// Two runs on one chart (diff A B, File > Compare With...): `a`'s chart with every series of `b`
// added after its own, each series named "<label>: <name>", B's in kOverlayColorB (then further
// colours for B's further series), never in a colour A's series use (bars stand side by side). `b` must be the same chart built from the other run (same id and categories:
// B's values are placed by category name, a category A lacks is appended).
inline const char* const kOverlayColorB = "#D55E00";
ChartData overlayCharts(const ChartData& a, const ChartData& b, const std::string& labelA, const std::string& labelB);
// A chart of A while B is compared with it but has nothing for this chart (B never ran the job,
// or its run holds no such values): A's series named "<labelA>: <name>" and the title saying
// "(<labelA>; <labelB>: <why>)", so that the legend and title tell B's absence. A chart without
// series stays as it is.
ChartData overlayAbsent(const ChartData& a, const std::string& labelA, const std::string& labelB, const std::string& why);
// The one rule every compared chart view follows: b null -> overlayAbsent(.., "not run"); b without
// series -> overlayAbsent(.., "no values"); a heat map (Cells) on either side -> overlayAbsent(..,
// "heat map not overlaid"); otherwise overlayCharts. A without series stays as it is.
ChartData overlayOrAbsent(const ChartData& a, const ChartData* b, const std::string& labelA, const std::string& labelB);

// Inspect charts.
ChartData weightScaleRangesChart(const std::vector<LinearScaleStatistics>& statistics);   // log y, min..max per Linear
ChartData channelScalesChart(const LinearScaleStatistics& linear);                         // log y, per output channel
ChartData weightCodeSharesChart(const std::vector<LinearScaleStatistics>& statistics);     // % clipped / underflow
ChartData exponentHistogramChart(const LinearScaleStatistics& linear);                     // codes per exponent field
// Block-wise weights: the weight_scale grid as a heat map, output blocks (rows) by input blocks
// (columns). Empty series when the Linear has no block grid.
ChartData blockScalesChart(const LinearScaleStatistics& linear);

// Compare charts.
ChartData layerSqnrChart(const ComparisonResult& comparison);      // SQNR per encoder layer output (+ embeddings)
ChartData layerCosineChart(const ComparisonResult& comparison);    // cosine per layer output
ChartData linearSqnrChart(const ComparisonResult& comparison);     // SQNR per Linear output
ChartData errorGrowthChart(const ComparisonResult& comparison);    // relative L2 error through the layers
ChartData activationSharesChart(const ComparisonResult& comparison); // % clipped / flushed / subnormal per Linear input
// Observed amax vs 448 x each Linear's input scale. With dynamic scales only (`scalesAreDynamic`)
// that scale is computed per token from the token's own maximum, so the chart says so rather than
// pass the largest per-token amax off as a fixed range.
ChartData activationScaleChart(const ComparisonResult& comparison, bool scalesAreDynamic);
// fp16 headroom: max |output| of every module on a log axis with fp16's largest value (65,504) as a
// line, bars red where they pass it (an inf output is drawn at 2^17 and the title says so).
ChartData fp16HeadroomChart(const ComparisonResult& comparison);
// AIU FP8 attention (comparison.attentionHeadroom): per layer (rows) and head (columns), the largest
// E4M3 magnitude the head's K (key) or V values reach under the sequence's shared scale, median over
// the sequences, on a log colour scale (the range is 200 for K, 100 for V; E4M3 reaches 448).
ChartData attentionHeadroomChart(const ComparisonResult& comparison, bool key);
// Per layer's K and V: the share of values FP8 rounds to zero and to a subnormal (all heads).
ChartData attentionSmallValuesChart(const ComparisonResult& comparison);

// The compare charts by name, for every front end: `compare --plots` writes comparisonPlots(), the
// workbench's Errors, Scales and Attention panels draw each of theirs with comparisonChart().
enum class ComparisonChart {
    LayerSqnr,
    LayerCosine,
    ErrorGrowth,
    LinearSqnr,
    ActivationShares,
    ActivationRange,
    Fp16Headroom,
    AttentionKeys,
    AttentionValues,
    AttentionSmallValues
};
// One of them (the builders above); scalesAreDynamic is activationScaleChart's, the others ignore it.
ChartData comparisonChart(ComparisonChart which, const ComparisonResult& comparison, bool scalesAreDynamic = false);
// The charts a comparison has values for, in this order: layer SQNR, layer cosine, error growth,
// Linear SQNR; activation shares and range with activation statistics; fp16 headroom with output
// ranges; K, V and small values with FP8 attention.
std::vector<ComparisonChart> comparisonChartsWithValues(const ComparisonResult& comparison);
// Those charts built, as `compare --plots` writes them.
std::vector<ChartData> comparisonPlots(const ComparisonResult& comparison, bool scalesAreDynamic);

// Drill-down of one capture point: histogram of (run - reference), and reference vs run values
// (subsampled evenly to at most maxPoints).
ChartData errorHistogramChart(const std::string& point, const std::vector<float>& run,
                              const std::vector<float>& reference, int bins = 60);
ChartData referenceScatterChart(const std::string& point, const std::vector<float>& run,
                                const std::vector<float>& reference, std::size_t maxPoints = 20000);

// QA: start/end logits over the tokens of one window, run and reference. tokens label the x axis.
// answerTokens: the run's best answer's first and last token in this window, marked on the chart
// ({-1, -1}: none, e.g. the null answer).
ChartData qaLogitsChart(const std::vector<std::string>& tokens, const std::vector<float>& runStart,
    const std::vector<float>& runEnd, const std::vector<float>& referenceStart, const std::vector<float>& referenceEnd,
    bool hasReference, std::pair<int, int> answerTokens = {-1, -1});

// Fill-mask: probabilities of the top tokens, run and reference side by side.
ChartData maskProbabilitiesChart(const std::vector<std::string>& tokens, const std::vector<double>& run,
                                 const std::vector<double>& reference, bool hasReference);

// SQuAD evaluation: exact match and F1 (%) of the run and the reference, overall and by
// HasAns/NoAns; and the distribution of per-question logits SQNR for agreeing vs disagreeing answers.
ChartData evaluationScoresChart(const EvaluationResult& result);
ChartData agreementSqnrChart(const EvaluationResult& result, int bins = 24);

// Sensitivity sweep, in rank order, one bar pair per entry in dB of the final logits' SQNR: "dB
// recovered when kept float" (entry.recoveredDb) and "dB lost when alone in FP8"
// (entry.lostAloneDb), the same while the sweep runs (a partialSensitivityResult) and when it is
// done. An infinite measure is drawn as tall as the tallest finite bar and the legend says so; a
// dashed line marks the spread below the top entry (entries above it tie with it). The title
// names the granularity, the run, the reference and the target, and leaves out what is unknown.
ChartData sensitivityChart(const SensitivityResult& result);
std::string sensitivityChartTitle(const SensitivityResult& result);

// The Linear with the widest spread of channel scales (the one worth looking at first); -1 if none.
int widestScaleSpread(const std::vector<LinearScaleStatistics>& statistics);

} // namespace scalescope
