#include "report/task_json.h"

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

} // namespace scalescope
