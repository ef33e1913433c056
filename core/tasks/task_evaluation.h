#pragma once
// Evaluation of the sequence tasks on a dataset, on both sides of a RunPair (DESIGN.md CLI table
// "Tasks beyond QA and fill-mask", `evaluate --sts | --retrieval | --classification`): each side's
// metric (analysis/task_metrics.h) and the inputs whose result differs between the sides. The
// datasets come from tasks/task_datasets.h. No LibTorch.
#include <optional>
#include <string>
#include <vector>

#include "common/progress.h"
#include "model/inference_backend.h"
#include "model/run_settings.h"
#include "tasks/classify.h"
#include "tasks/rerank.h"
#include "tasks/task_datasets.h"

namespace scalescope {

// How many differing inputs a result lists (the largest differences first).
constexpr std::size_t kListedDifferences = 20;

// STS: each pair's similarity (an embedder's cosine, a cross-encoder's score of the pair) on both
// sides, Spearman x 100 against the gold scores per side.
struct StsEvaluation {
    RerankScorer scorer = RerankScorer::BiEncoder;
    double runSpearman = 0, referenceSpearman = 0;
    std::vector<double> run, reference; // per pair
    // The pairs whose similarity moves most between the sides, largest first.
    std::vector<std::size_t> differing;
    std::vector<std::string> notes;
    RunSettings settings;
};
StsEvaluation evaluateSts(InferenceBackend& run, InferenceBackend* reference, const StsDataset& dataset,
                          const RunPair& runs, const Progress& progress = {});

// Retrieval: every document scored for every query as rerank scores a passage; nDCG@10, MRR@10 and
// recall@100 per side over the judged queries, and the queries whose top-10 order changed.
struct RetrievalEvaluation {
    RerankScorer scorer = RerankScorer::BiEncoder;
    RetrievalMetrics run, reference;
    std::vector<std::size_t> changedQueries; // indices into the dataset's queries
    DocumentScores scores;
    std::vector<std::string> notes;
    RunSettings settings;
};
RetrievalEvaluation evaluateRetrieval(InferenceBackend& run, InferenceBackend* reference, const BeirDataset& dataset,
                                      const RunPair& runs, const Progress& progress = {});

// Classification: every row classified on both sides; accuracy (and macro F1) against the labels
// when the file gives them, label flips, the mean KL.
struct ClassificationEvaluation {
    ClassifyResult classified;
    std::optional<double> runAccuracy, referenceAccuracy, runMacroF1, referenceMacroF1;
    std::size_t flips = 0;
    std::optional<double> meanKl;
    std::vector<std::size_t> differing; // the rows that flip
};
ClassificationEvaluation evaluateClassification(InferenceBackend& run, InferenceBackend* reference,
                                                const ClassificationDataset& dataset, const RunPair& runs,
                                                const Progress& progress = {});

} // namespace scalescope
