#include "tasks/task_evaluation.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"
#include "model/checkpoint.h"
#include "tasks/embed.h"
#include "tasks/sequence_runs.h"

namespace scalescope {
namespace {

// Indices of the largest |run - reference| first, at most kListedDifferences of those that differ.
std::vector<std::size_t> largestDifferences(const std::vector<double>& run, const std::vector<double>& reference)
{
    std::vector<std::size_t> order(run.size());
    std::iota(order.begin(), order.end(), 0);
    auto gap = [&](std::size_t i) { return std::abs(run[i] - reference[i]); };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return gap(a) > gap(b); });
    std::vector<std::size_t> listed;
    for (std::size_t i : order)
        if (gap(i) > 0 && listed.size() < kListedDifferences)
            listed.push_back(i);
    return listed;
}

} // namespace

StsEvaluation evaluateSts(InferenceBackend& run, InferenceBackend* reference, const StsDataset& dataset,
                          const RunPair& runs, const Progress& progress)
{
    if (dataset.pairs.empty())
        throw Error(dataset.path + " holds no sentence pair.");
    StsEvaluation result;
    result.settings = runs.run;
    std::vector<double> gold;
    for (const StsPair& pair : dataset.pairs)
        gold.push_back(pair.score);
    const HeadKind head = run.checkpoint().layout().head();
    if (head == HeadKind::Embedding) {
        std::vector<std::string> first, second;
        for (const StsPair& pair : dataset.pairs) {
            first.push_back(pair.sentence1);
            second.push_back(pair.sentence2);
        }
        const EmbeddedRows a = embedRows(run, reference, first, "", runs, progress);
        const EmbeddedRows b = embedRows(run, reference, second, "", runs, progress);
        for (std::size_t i = 0; i < first.size(); ++i) {
            result.run.push_back(cosineSimilarity(a.run[i], b.run[i]));
            result.reference.push_back(cosineSimilarity(a.reference[i], b.reference[i]));
        }
        result.notes = a.notes;
    } else {
        // A cross-encoder scores each pair as one input.
        std::vector<SequenceInput> inputs;
        for (const StsPair& pair : dataset.pairs)
            inputs.push_back({pair.sentence1, pair.sentence2});
        const ClassifyResult classified = classifyTexts(run, reference, inputs, runs, progress);
        if (classified.labels.size() != 1)
            throw Error("STS needs a sentence embedder or a cross-encoder with one score; " +
                        run.checkpoint().directory() + " is a classifier with " +
                        std::to_string(classified.labels.size()) + " labels.");
        result.scorer = RerankScorer::CrossEncoder;
        for (const ClassifiedInput& item : classified.inputs) {
            result.run.push_back(item.run.logits.at(0));
            result.reference.push_back(item.reference.logits.at(0));
        }
        result.notes = classified.notes;
    }
    result.runSpearman = spearmanTimes100(result.run, gold);
    result.referenceSpearman = spearmanTimes100(result.reference, gold);
    result.differing = largestDifferences(result.run, result.reference);
    return result;
}

RetrievalEvaluation evaluateRetrieval(InferenceBackend& run, InferenceBackend* reference, const BeirDataset& dataset,
                                      const RunPair& runs, const Progress& progress)
{
    if (dataset.queries.empty())
        throw Error(dataset.folder + " has no query with relevance judgements in qrels/test.tsv.");
    std::vector<std::string> queries, documents;
    std::vector<QueryQrels> qrels;
    for (const BeirQuery& query : dataset.queries) {
        queries.push_back(query.text);
        qrels.push_back(query.qrels);
    }
    for (const BeirDocument& document : dataset.corpus)
        documents.push_back(document.text);
    RetrievalEvaluation result;
    result.settings = runs.run;
    result.scores = scoreDocuments(run, reference, queries, documents, runs, progress);
    result.scorer = result.scores.scorer;
    result.notes = result.scores.notes;
    result.run = retrievalMetrics(result.scores.run, qrels);
    result.reference = retrievalMetrics(result.scores.reference, qrels);
    result.changedQueries = queriesWithChangedTop10(result.scores.run, result.scores.reference, qrels);
    return result;
}

ClassificationEvaluation evaluateClassification(InferenceBackend& run, InferenceBackend* reference,
                                                const ClassificationDataset& dataset, const RunPair& runs,
                                                const Progress& progress)
{
    if (dataset.examples.empty())
        throw Error(dataset.path + " holds no example.");
    std::vector<SequenceInput> inputs;
    for (const ClassificationExample& example : dataset.examples)
        inputs.push_back({example.text, example.pair});
    ClassificationEvaluation result;
    result.classified = classifyTexts(run, reference, inputs, runs, progress);
    std::vector<std::vector<double>> runLogits, referenceLogits;
    std::vector<std::size_t> gold;
    for (std::size_t i = 0; i < result.classified.inputs.size(); ++i) {
        const ClassifiedInput& item = result.classified.inputs[i];
        runLogits.emplace_back(item.run.logits.begin(), item.run.logits.end());
        referenceLogits.emplace_back(item.reference.logits.begin(), item.reference.logits.end());
        if (item.flip)
            result.differing.push_back(i);
        if (dataset.hasLabels)
            gold.push_back(*dataset.examples[i].label);
    }
    const ClassificationMetrics metrics =
        classificationMetrics(runLogits, referenceLogits, result.classified.problem, gold);
    result.flips = metrics.flips;
    result.meanKl = metrics.meanKl;
    result.runAccuracy = metrics.accuracy;
    result.referenceAccuracy = metrics.referenceAccuracy;
    result.runMacroF1 = metrics.macroF1;
    result.referenceMacroF1 = metrics.referenceMacroF1;
    return result;
}

} // namespace scalescope
