#pragma once
// The metrics of the encoder tasks beyond QA and fill-mask (DESIGN.md "Encoder tasks beyond QA and
// fill-mask", "Task metrics"): rank correlations for STS and reranking, BEIR's retrieval metrics,
// and the classification metrics between a run and its reference. Pure functions on doubles, no
// LibTorch, no Qt.
//
// Errors: lengths that do not match (two score lists, labels and predictions) are the caller's
// mistake and throw std::invalid_argument; no input file is read here. A metric that has no value
// for its input (a correlation of a constant list, an accuracy over nothing) is NaN, which
// nlohmann::json writes as null.
#include <cstddef>
#include <map>
#include <optional>
#include <vector>

#include "model/model_config.h"

namespace scalescope {

// ---- Rank correlations -------------------------------------------------------------------------

// 1-based ranks with ties given the average of the ranks they span ({10, 20, 20, 30} -> {1, 2.5,
// 2.5, 4}), as scipy.stats.rankdata(method="average"). NaN values rank after every number, as
// equals among themselves.
std::vector<double> averageRanks(const std::vector<double>& values);
// Pearson's r; NaN when either list is constant or the lists hold fewer than 2 values.
double pearsonCorrelation(const std::vector<double>& x, const std::vector<double>& y);
// Spearman's rho x 100: Pearson's r of the average ranks (scipy.stats.spearmanr), scaled as MTEB
// reports STS. NaN when either list is constant (scipy's nan).
double spearmanTimes100(const std::vector<double>& x, const std::vector<double>& y);
// Kendall's tau-b (scipy.stats.kendalltau's default): (concordant - discordant) /
// sqrt((pairs - pairs tied in x) (pairs - pairs tied in y)); a pair tied in both lists counts in
// neither sum but in both tie counts. NaN with fewer than 2 values or when a list is constant.
// O(n^2) pairs: rerank lists are at most thousands long.
double kendallTauB(const std::vector<double>& x, const std::vector<double>& y);

// ---- Rankings ----------------------------------------------------------------------------------

// Indices of scores best (largest) first; equal scores keep their input order (the lower index
// first), the tie rule DESIGN gives rerank and retrieval. NaN scores go last, in input order, so a
// broken run still yields a ranking and never breaks the sort's ordering.
std::vector<std::size_t> rankingOrder(const std::vector<double>& scores);

// ---- Retrieval (BEIR's definitions, ties broken by document order) ------------------------------

// The relevance judgements of one query: a corpus document's index -> its grade (qrels "score").
// Grades <= 0 are judged not relevant.
struct QueryQrels {
    std::map<std::size_t, int> grades;
    // Grades of judged documents that are not in the corpus. pytrec_eval (what BEIR calls) counts
    // them: in the ideal DCG and in recall's denominator, as relevant documents never retrieved.
    std::vector<int> absentDocumentGrades;
    // A query without any judgement is dropped from every average (BEIR evaluates only the
    // queries of its qrels).
    bool judged() const { return !grades.empty() || !absentDocumentGrades.empty(); }
};

// One query's scores: scores[i] is corpus document i's (any length; documents past the end are
// not retrieved). Ranks are 1-based, in rankingOrder.
// nDCG@k: sum over the top k of grade / log2(rank + 1) (grades > 0 only), over the same sum for
// the query's grades sorted from the highest (absent documents included). A query none of whose
// grades is > 0 has an ideal DCG of 0 and scores 0, as pytrec_eval's ndcg_cut does.
double ndcgAtK(const std::vector<double>& scores, const QueryQrels& qrels, std::size_t k);
// 1 / rank of the first document with grade > 0 within the top k; 0 when none is there.
double reciprocalRankAtK(const std::vector<double>& scores, const QueryQrels& qrels, std::size_t k);
// Documents with grade >= 1 within the top k, over all documents with grade >= 1 (absent ones
// included); 0 for a query without one (pytrec_eval's recall leaves it at 0).
double recallAtK(const std::vector<double>& scores, const QueryQrels& qrels, std::size_t k);
// True when the k best documents, in order, differ between the two score lists.
bool topKOrderDiffers(const std::vector<double>& run, const std::vector<double>& reference, std::size_t k);

constexpr std::size_t kNdcgCutoff = 10;
constexpr std::size_t kMrrCutoff = 10;
constexpr std::size_t kRecallCutoff = 100;
constexpr std::size_t kChangedOrderCutoff = 10;

struct QueryRetrievalScores {
    double ndcgAt10 = 0, mrrAt10 = 0, recallAt100 = 0;
};

struct RetrievalMetrics {
    // Means over the judged queries (QueryQrels::judged); NaN when no query is judged. A judged
    // query whose grades are all <= 0 counts, with 0 in each metric (pytrec_eval's per-query
    // values, averaged by BEIR over every query of its qrels).
    double ndcgAt10 = 0, mrrAt10 = 0, recallAt100 = 0;
    std::size_t queriesEvaluated = 0;
    // Per query, in input order; nullopt for a query that was dropped.
    std::vector<std::optional<QueryRetrievalScores>> perQuery;
};

// scores[q]: query q's scores in corpus order; qrels[q]: its judgements (the two lists equally
// long).
RetrievalMetrics retrievalMetrics(const std::vector<std::vector<double>>& scores, const std::vector<QueryQrels>& qrels);
// The judged queries whose top-10 order differs between run and reference (indices, ascending).
std::vector<std::size_t> queriesWithChangedTop10(const std::vector<std::vector<double>>& run,
                                                 const std::vector<std::vector<double>>& reference,
                                                 const std::vector<QueryQrels>& qrels);

// ---- Classification -----------------------------------------------------------------------------

// The problem type is config.json's, settled by parseModelConfig (model/model_config.h
// ClassificationProblem): SingleLabel, MultiLabel, or Score (regression, or num_labels == 1).

// The probabilities a user reads: softmax (SingleLabel), a sigmoid per label (MultiLabel), or the
// raw logits as scores (Score). Computed from log-probabilities (log-sum-exp), so logits of
// any size stay finite; +inf logits share the mass, NaN in any logit makes every value NaN.
std::vector<double> probabilitiesFromLogits(const std::vector<double>& logits, ClassificationProblem type);
// The index of the largest value, the first of equals; NaN values are never the largest unless
// every value is NaN (then 0). 0 for an empty list.
std::size_t argmaxLabel(const std::vector<double>& values);
// KL(reference || run) in nats, computed from the logits in log space:
//   SingleLabel: sum_i p_i (log p_i - log q_i) of the two softmaxes;
//   MultiLabel:  the sum over labels of the Bernoulli KLs of the two sigmoids;
//   Score:       nullopt, as a raw score is no distribution (0 would claim the sides agree).
// A run probability of exactly 0 where the reference's is not is floored at the smallest normal
// double (log = -708.4), so the value stays finite. NaN when a logit is NaN.
std::optional<double> klDivergenceFromLogits(const std::vector<double>& referenceLogits,
                                             const std::vector<double>& runLogits, ClassificationProblem type);

// The fraction (0..1) of predictions equal to their gold label; NaN for no predictions.
double accuracy(const std::vector<std::size_t>& predicted, const std::vector<std::size_t>& gold);
// Macro F1 as scikit-learn's f1_score(average="macro"): the unweighted mean over the labels that
// occur in gold or predicted of 2 TP / (2 TP + FP + FN). NaN for no predictions.
double macroF1(const std::vector<std::size_t>& predicted, const std::vector<std::size_t>& gold);
// Positions where the two sides' labels differ.
std::size_t countFlips(const std::vector<std::size_t>& runLabels, const std::vector<std::size_t>& referenceLabels);

// One input's classification on both sides.
struct ClassifiedSides {
    std::vector<double> probabilities, referenceProbabilities; // probabilitiesFromLogits
    std::size_t label = 0, referenceLabel = 0;                 // argmax of the logits
    bool flip = false;
    std::optional<double> kl;                                  // klDivergenceFromLogits
};

struct ClassificationMetrics {
    std::vector<ClassifiedSides> inputs;
    std::size_t flips = 0;
    std::optional<double> meanKl;            // over the inputs; nullopt for Score
    // Against gold labels, when given (nullopt otherwise).
    std::optional<double> accuracy, referenceAccuracy, macroF1, referenceMacroF1;
};

// logits[i] / referenceLogits[i]: input i's logits on each side; gold: one label per input, or
// empty when the file gave none.
ClassificationMetrics classificationMetrics(const std::vector<std::vector<double>>& logits,
                                            const std::vector<std::vector<double>>& referenceLogits,
                                            ClassificationProblem type, const std::vector<std::size_t>& gold = {});

} // namespace scalescope
