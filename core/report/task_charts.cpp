#include "report/task_charts.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tasks/final_outputs.h"

namespace scalescope {
namespace {

// The same colours as every run-against-reference chart (charts.cpp): the run blue, the reference orange.
const char* const kRunColor = "#0072B2";
const char* const kReferenceColor = "#E69F00";

std::vector<std::string> numberedCategories(std::size_t count)
{
    std::vector<std::string> categories;
    for (std::size_t i = 0; i < count; ++i)
        categories.push_back(std::to_string(i + 1));
    return categories;
}

// An [n, n] matrix as one cells series, cell (column j, row i) = matrix[i][j].
ChartSeries matrixCells(const std::string& name, const std::vector<std::vector<double>>& matrix)
{
    ChartSeries cells{name, SeriesStyle::Cells, {}, {}, {}, "", {}};
    for (std::size_t row = 0; row < matrix.size(); ++row)
        for (std::size_t column = 0; column < matrix[row].size(); ++column) {
            cells.x.push_back(double(column));
            cells.y.push_back(double(row));
            cells.z.push_back(matrix[row][column]);
        }
    return cells;
}

ChartData matrixChart(std::string id, std::string title, std::size_t inputs)
{
    ChartData chart;
    chart.id = std::move(id);
    chart.title = std::move(title);
    chart.xLabel = "text";
    chart.yLabel = "text";
    chart.categories = numberedCategories(inputs);
    chart.rowsAreCategories = true;
    return chart;
}

// Each input's run value (y) against its reference value (x), with the line y = x over their range.
ChartData sidesScatter(const std::vector<double>& run, const std::vector<double>& reference, const std::string& pointName)
{
    ChartSeries points{pointName, SeriesStyle::Points, reference, run, {}, kRunColor};
    double low = 0, high = 0;
    bool first = true;
    for (const std::vector<double>* side : {&run, &reference})
        for (double value : *side)
            if (std::isfinite(value)) {
                low = first ? value : std::min(low, value);
                high = first ? value : std::max(high, value);
                first = false;
            }
    if (high - low < 1e-9) {
        low -= 0.5;
        high += 0.5;
    }
    ChartSeries diagonal{"y = x", SeriesStyle::Line, {low, high}, {low, high}, {}, "#999999"};
    ChartData chart;
    chart.series = {diagonal, points};
    return chart;
}

} // namespace

std::string inputLabel(std::size_t index, const std::string& text, std::size_t maxChars)
{
    std::string label = std::to_string(index + 1) + ": ";
    if (text.size() <= maxChars)
        return label + text;
    // Cut at a UTF-8 character boundary, never inside a multi-byte sequence.
    std::size_t cut = maxChars;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;
    return label + text.substr(0, cut) + "...";
}

ChartData similarityMatrixChart(const EmbedResult& result, bool reference, const std::string& runName)
{
    ChartData chart = matrixChart(reference ? "similarity_reference" : "similarity_run",
                                  // Short: three of these share a row on a laptop screen.
                                  reference ? "Cosine similarity, reference" : "Cosine similarity, " + runName,
                                  result.inputs.size());
    chart.cellLower = -1;
    chart.cellUpper = 1;
    chart.series = {matrixCells("cosine", reference ? result.referenceSimilarity : result.similarity)};
    return chart;
}

ChartData similarityDifferenceChart(const EmbedResult& result, const std::string& runName)
{
    ChartData chart = matrixChart("similarity_difference",
                                  "Difference, " + runName + " - reference", result.inputs.size());
    std::vector<std::vector<double>> difference = result.similarity;
    double largest = 1e-6;
    for (std::size_t i = 0; i < difference.size() && i < result.referenceSimilarity.size(); ++i)
        for (std::size_t j = 0; j < difference[i].size() && j < result.referenceSimilarity[i].size(); ++j) {
            difference[i][j] -= result.referenceSimilarity[i][j];
            if (std::isfinite(difference[i][j]))
                largest = std::max(largest, std::abs(difference[i][j]));
        }
    chart.cellLower = -largest;
    chart.cellUpper = largest;
    chart.divergingCells = true;
    chart.series = {matrixCells("difference", difference)};
    return chart;
}

// An FP8 embedding's cosine with its reference is 0.99 and more for every text, so bars of the
// cosine itself all look full; its distance from 1, on a log axis, tells 0.9999 from 0.999 from
// 0.99 at a glance, the worst text the tallest bar. A distance below float32's resolution (an
// identical embedding) is drawn at that floor, which the table's exact cosines make plain.
ChartData embeddingCosineChart(const EmbedResult& result, const std::string& runName)
{
    constexpr double kDistanceFloor = 1e-7; // about float32's resolution near 1
    ChartData chart;
    chart.id = "embedding_cosine";
    chart.title = "Each text's " + runName + " embedding: distance from its reference (1 - cosine, lower is closer)";
    chart.xLabel = "text";
    chart.yLabel = "1 - cosine";
    chart.logY = true;
    chart.categories = numberedCategories(result.inputs.size());
    ChartSeries bars{"1 - cosine", SeriesStyle::Bars, {}, {}, {}, kRunColor};
    for (std::size_t i = 0; i < result.inputs.size(); ++i) {
        bars.x.push_back(double(i));
        const double distance = 1.0 - result.inputs[i].cosine;
        bars.y.push_back(std::isfinite(distance) ? std::max(distance, kDistanceFloor) : distance);
    }
    chart.series = {bars};
    std::ostringstream bound;
    bound << "agreement bound (cosine " << kVectorAgreementCosine << ")";
    chart.horizontalMarkers = {{1.0 - kVectorAgreementCosine, bound.str()}};
    return chart;
}

ChartData rerankScoresChart(const RerankResult& result, const std::string& runName)
{
    // The entries in input order, so that the CSV's rows are the passages' numbers.
    std::vector<RankedPassage> byIndex = result.ranking;
    std::sort(byIndex.begin(), byIndex.end(),
              [](const RankedPassage& a, const RankedPassage& b) { return a.index < b.index; });
    std::vector<double> run, reference;
    for (const RankedPassage& passage : byIndex) {
        run.push_back(passage.score);
        reference.push_back(passage.referenceScore);
    }
    ChartData chart = sidesScatter(run, reference, "passage");
    chart.id = "rerank_scores";
    chart.title = "Passage scores, " + runName + " against the reference";
    chart.xLabel = "reference score";
    chart.yLabel = runName + " score";
    return chart;
}

ChartData classProbabilitiesChart(const ClassifyResult& result, std::size_t input, const std::string& runName)
{
    ChartData chart;
    chart.id = "class_probabilities";
    const bool score = result.problem == ClassificationProblem::Score;
    chart.title = score ? "Score (sigmoid of the raw score), " + runName + " and reference"
                        : "Probability of each label, " + runName + " and reference";
    chart.xLabel = "label";
    chart.yLabel = score ? "sigmoid(score)" : "probability";
    if (input >= result.inputs.size())
        return chart;
    const ClassifiedInput& classified = result.inputs[input];
    chart.categories = result.labels;
    chart.categories.resize(classified.run.probabilities.size());
    for (std::size_t i = 0; i < chart.categories.size(); ++i)
        if (chart.categories[i].empty())
            chart.categories[i] = "LABEL_" + std::to_string(i);
    ChartSeries run{runName, SeriesStyle::Bars, {}, classified.run.probabilities, {}, kRunColor};
    ChartSeries reference{"reference", SeriesStyle::Bars, {}, classified.reference.probabilities, {}, kReferenceColor};
    for (std::size_t i = 0; i < chart.categories.size(); ++i) {
        run.x.push_back(double(i));
        reference.x.push_back(double(i));
    }
    chart.series = {run, reference};
    if (result.problem == ClassificationProblem::MultiLabel || score)
        chart.horizontalMarkers = {{0.5, "decision 0.5"}};
    return chart;
}

ChartData taskMetricsChart(const std::string& id, const std::string& title, const std::vector<std::string>& names,
                           const std::vector<double>& run, const std::vector<double>& reference,
                           const std::string& runName)
{
    ChartData chart;
    chart.id = id;
    chart.title = title;
    chart.xLabel = "metric";
    chart.yLabel = "value";
    chart.categories = names;
    ChartSeries runBars{runName, SeriesStyle::Bars, {}, run, {}, kRunColor};
    ChartSeries referenceBars{"reference", SeriesStyle::Bars, {}, reference, {}, kReferenceColor};
    for (std::size_t i = 0; i < names.size(); ++i) {
        runBars.x.push_back(double(i));
        referenceBars.x.push_back(double(i));
    }
    chart.series = {runBars, referenceBars};
    return chart;
}

ChartData stsSimilarityChart(const std::vector<double>& run, const std::vector<double>& reference,
                             const std::string& runName)
{
    ChartData chart = sidesScatter(run, reference, "pair");
    chart.id = "sts_similarities";
    chart.title = "Pair similarities, " + runName + " against the reference";
    chart.xLabel = "reference similarity";
    chart.yLabel = runName + " similarity";
    return chart;
}

} // namespace scalescope
