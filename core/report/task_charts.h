#pragma once
// The charts of the sequence tasks (embed, rerank, classify) as ChartData: both sides' similarity
// matrices and their difference as heat maps, the rerank scores of both sides against each other,
// and a classification's probabilities per label. The workbench's task panels and its report draw
// them; the labels are short forms of the inputs ("1: the cat sat..."), made by the caller.
#include <string>
#include <vector>

#include "report/chart_data.h"
#include "tasks/classify.h"
#include "tasks/embed.h"
#include "tasks/rerank.h"

namespace scalescope {

// The text a chart names an input by: its number (from 1) and its first words, at most maxChars.
std::string inputLabel(std::size_t index, const std::string& text, std::size_t maxChars = 24);

// One side's [n, n] cosine similarities as a heat map on a fixed linear scale from -1 to 1, so that
// the run's and the reference's colours compare cell by cell. side: "run" or "reference" (the id
// and title follow it); runName names the run in the title ("fp8").
ChartData similarityMatrixChart(const EmbedResult& result, bool reference, const std::string& runName);
// run - reference cell by cell, on a diverging scale symmetric about 0 (its bound the largest
// absolute difference, at least 1e-6 so that identical sides still draw).
ChartData similarityDifferenceChart(const EmbedResult& result, const std::string& runName);
// Each text's run-vs-reference cosine as bars.
ChartData embeddingCosineChart(const EmbedResult& result, const std::string& runName);

// Each passage's run score (y) against its reference score (x), with the line y = x: a point off
// the line moved; points are labelled by passage number in the CSV.
ChartData rerankScoresChart(const RerankResult& result, const std::string& runName);

// One input's probabilities per label, run and reference side by side (a score: the sigmoid of
// the raw score, as ClassSide holds it).
ChartData classProbabilitiesChart(const ClassifyResult& result, std::size_t input, const std::string& runName);

// An evaluation's metrics (names[i]: run[i] against reference[i]) as bars side by side, for the
// metrics of one scale (nDCG@10, MRR@10, recall@100; accuracy, macro F1; Spearman x 100).
ChartData taskMetricsChart(const std::string& id, const std::string& title, const std::vector<std::string>& names,
                           const std::vector<double>& run, const std::vector<double>& reference,
                           const std::string& runName);
// An STS evaluation's pair similarities: the run's (y) against the reference's (x), with y = x.
ChartData stsSimilarityChart(const std::vector<double>& run, const std::vector<double>& reference,
                             const std::string& runName);

} // namespace scalescope
