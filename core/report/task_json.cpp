#include "report/task_json.h"

#include "analysis/task_metrics.h"
#include "report/result_json.h"

namespace scalescope {
namespace {

using json = nlohmann::json;

template <typename T>
json numbers(const std::vector<T>& values)
{
    json out = json::array();
    for (T value : values)
        out.push_back(finiteOrNull(double(value)));
    return out;
}

json matrix(const std::vector<std::vector<double>>& rows)
{
    json out = json::array();
    for (const auto& row : rows)
        out.push_back(numbers(row));
    return out;
}

json notes(const std::vector<std::string>& sentences)
{
    return sentences.empty() ? json(nullptr) : json(sentences);
}

json classSideJson(const ClassSide& side)
{
    return {{"logits", numbers(side.logits)},
            {"probabilities", numbers(side.probabilities)},
            {"label", side.label},
            {"label_id", side.labelId}};
}

json rankingJson(const std::vector<RankedPassage>& ranking)
{
    json out = json::array();
    for (const RankedPassage& entry : ranking)
        out.push_back({{"index", entry.index},
                       {"score", finiteOrNull(entry.score)},
                       {"reference_score", finiteOrNull(entry.referenceScore)}});
    return out;
}

} // namespace

json embedJson(const EmbedResult& result)
{
    json inputs = json::array();
    for (const EmbeddedText& item : result.inputs)
        inputs.push_back({{"text", item.text},
                          {"input_ids", item.inputIds},
                          {"truncated", item.truncated},
                          {"embedding", numbers(item.embedding)},
                          {"reference_embedding", numbers(item.referenceEmbedding)},
                          {"cosine", finiteOrNull(item.cosine)}});
    return {{"pooling", poolingModeName(result.pooling)},
            {"normalized", result.normalized},
            {"dim", result.dim},
            {"max_seq_length", result.maxSeqLength},
            {"prompt", result.prompt.empty() ? json(nullptr) : json(result.prompt)},
            {"inputs", inputs},
            {"similarity", matrix(result.similarity)},
            {"reference_similarity", matrix(result.referenceSimilarity)},
            {"notes", notes(result.notes)}};
}

json classifyJson(const ClassifyResult& result)
{
    json inputs = json::array();
    for (const ClassifiedInput& item : result.inputs) {
        json entry = classSideJson(item.run);
        entry["text"] = item.input.text;
        entry["pair"] = item.input.pair ? json(*item.input.pair) : json(nullptr);
        entry["input_ids"] = item.inputIds;
        entry["truncated"] = item.truncated;
        entry["reference"] = classSideJson(item.reference);
        entry["flip"] = item.flip;
        entry["kl"] = item.kl ? finiteOrNull(*item.kl) : json(nullptr);
        inputs.push_back(std::move(entry));
    }
    return {{"problem_type", classificationProblemName(result.problem)},
            {"labels", result.labels},
            {"inputs", inputs},
            {"notes", notes(result.notes)}};
}

json rerankJson(const RerankResult& result)
{
    return {{"scorer", rerankScorerName(result.scorer)},
            {"ranking", rankingJson(result.ranking)},
            {"reference_ranking", rankingJson(result.referenceRanking)},
            {"same_order", result.sameOrder},
            {"kendall_tau", finiteOrNull(result.kendallTau)},
            {"notes", notes(result.notes)}};
}

namespace {

json sides(double run, double reference)
{
    return {{"run", finiteOrNull(run)}, {"reference", finiteOrNull(reference)}};
}

json optionalSides(const std::optional<double>& run, const std::optional<double>& reference)
{
    return run && reference ? sides(*run, *reference) : json(nullptr);
}

} // namespace

json stsJson(const StsEvaluation& result, const StsDataset& dataset)
{
    json differing = json::array();
    for (std::size_t i : result.differing)
        differing.push_back({{"index", i},
                             {"sentence1", dataset.pairs[i].sentence1},
                             {"sentence2", dataset.pairs[i].sentence2},
                             {"gold", dataset.pairs[i].score},
                             {"run", finiteOrNull(result.run[i])},
                             {"reference", finiteOrNull(result.reference[i])}});
    return {{"spearman", sides(result.runSpearman, result.referenceSpearman)},
            {"scorer", rerankScorerName(result.scorer)},
            {"pairs", dataset.pairs.size()},
            {"differences", differing}};
}

namespace {

json topTen(const std::vector<double>& scores, const BeirDataset& dataset)
{
    json ids = json::array();
    for (std::size_t index : rankingOrder(scores)) {
        if (ids.size() == 10)
            break;
        ids.push_back(dataset.corpus[index].id);
    }
    return ids;
}

} // namespace

json retrievalJson(const RetrievalEvaluation& result, const BeirDataset& dataset)
{
    json changed = json::array();
    for (std::size_t q : result.changedQueries) {
        if (changed.size() == kListedDifferences)
            break;
        changed.push_back({{"query_id", dataset.queries[q].id},
                           {"query", dataset.queries[q].text},
                           {"run_top10", topTen(result.scores.run[q], dataset)},
                           {"reference_top10", topTen(result.scores.reference[q], dataset)}});
    }
    return {{"ndcg_at_10", sides(result.run.ndcgAt10, result.reference.ndcgAt10)},
            {"mrr_at_10", sides(result.run.mrrAt10, result.reference.mrrAt10)},
            {"recall_at_100", sides(result.run.recallAt100, result.reference.recallAt100)},
            {"queries_changed", result.changedQueries.size()},
            {"queries", result.run.queriesEvaluated},
            {"documents", dataset.corpus.size()},
            {"scorer", rerankScorerName(result.scorer)},
            {"differences", changed}};
}

json classificationJson(const ClassificationEvaluation& result)
{
    json differing = json::array();
    for (std::size_t i : result.differing) {
        if (differing.size() == kListedDifferences)
            break;
        const ClassifiedInput& item = result.classified.inputs[i];
        differing.push_back({{"index", i},
                             {"text", item.input.text},
                             {"pair", item.input.pair ? json(*item.input.pair) : json(nullptr)},
                             {"label", item.run.label},
                             {"reference_label", item.reference.label},
                             {"kl", item.kl ? finiteOrNull(*item.kl) : json(nullptr)}});
    }
    return {{"accuracy", optionalSides(result.runAccuracy, result.referenceAccuracy)},
            {"macro_f1", optionalSides(result.runMacroF1, result.referenceMacroF1)},
            {"flips", result.flips},
            {"mean_kl", result.meanKl ? finiteOrNull(*result.meanKl) : json(nullptr)},
            {"examples", result.classified.inputs.size()},
            {"problem_type", classificationProblemName(result.classified.problem)},
            {"differences", differing}};
}


} // namespace scalescope
