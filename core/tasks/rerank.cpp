#include "tasks/rerank.h"

#include <algorithm>

#include "analysis/task_metrics.h"
#include "common/error.h"
#include "model/checkpoint.h"
#include "tasks/embed.h"
#include "tasks/sequence_runs.h"

namespace scalescope {

const char* rerankScorerName(RerankScorer scorer)
{
    return scorer == RerankScorer::CrossEncoder ? "cross-encoder" : "bi-encoder";
}

namespace {

// Every (query, document) pair through the cross-encoder, pairsPerChunk pairs at a time (pair k is
// query k / documents, document k % documents): its one logit is the score.
void crossEncoderScores(InferenceBackend& run, InferenceBackend* reference, const std::vector<std::string>& queries,
                        const std::vector<std::string>& documents, const RunPair& runs, const Progress& progress,
                        std::size_t pairsPerChunk, DocumentScores& scores)
{
    const Checkpoint& checkpoint = run.checkpoint();
    if (checkpoint.config().numLabels != 1)
        throw Error("Reranking needs a cross-encoder (a sequence classifier with one label) or a sentence embedder; " +
                    checkpoint.directory() + " is a classifier with " + std::to_string(checkpoint.config().numLabels) +
                    " labels.");
    const std::size_t pairs = queries.size() * documents.size();
    const std::string& output = checkpoint.layout().headDefinition().outputs.at(0).name;
    scores.run.assign(queries.size(), {});
    scores.reference.assign(queries.size(), {});
    Progress chunkProgress;
    chunkProgress.cancel = progress.cancel;
    std::size_t truncated = 0;
    pairsPerChunk = std::max<std::size_t>(pairsPerChunk, 1);
    for (std::size_t first = 0; first < pairs; first += pairsPerChunk) {
        progress.report(double(first) / double(pairs), "Scoring pairs");
        const std::size_t last = std::min(pairs, first + pairsPerChunk);
        std::vector<Encoding> encodings;
        for (std::size_t k = first; k < last; ++k) {
            SequenceEncoding encoded = encodeSequence(checkpoint.tokenizer(), {queries[k / documents.size()],
                                                      documents[k % documents.size()]},
                                                      checkpoint.layout().maxSequenceLength());
            truncated += encoded.truncated ? 1 : 0;
            encodings.push_back(std::move(encoded.encoding));
        }
        const SequenceRows rows = runSequenceRows(run, reference, runs, encodings, output, chunkProgress);
        for (std::size_t k = first; k < last; ++k) {
            scores.run[k / documents.size()].push_back(rows.run[k - first].at(0));
            scores.reference[k / documents.size()].push_back(rows.reference[k - first].at(0));
        }
        scores.runMs += rows.runMs;
    }
    progress.report(1.0, "Scoring pairs");
    if (truncated > 0)
        scores.notes.push_back(std::to_string(truncated) + " of " + std::to_string(pairs) +
                               " (query, passage) pairs were cut to the model's " +
                               std::to_string(checkpoint.layout().maxSequenceLength()) + " tokens.");
}

// The checkpoint's prompt of that name ("query", "passage"), or none: a name that is not one of its
// prompts would otherwise be prepended literally.
std::string namedPrompt(const SentenceEmbeddingConfig& embedding, const std::string& name)
{
    for (const auto& [key, text] : embedding.prompts)
        if (key == name)
            return name;
    return "";
}

void biEncoderScores(InferenceBackend& run, InferenceBackend* reference, const std::vector<std::string>& queries,
                     const std::vector<std::string>& documents, const RunPair& runs, const Progress& progress,
                     DocumentScores& scores)
{
    const SentenceEmbeddingConfig& embedding = run.checkpoint().config().embedding;
    const EmbeddedRows q = embedRows(run, reference, queries, namedPrompt(embedding, "query"), runs, progress);
    const EmbeddedRows d = embedRows(run, reference, documents, namedPrompt(embedding, "passage"), runs, progress);
    for (std::size_t i = 0; i < queries.size(); ++i) {
        scores.run.emplace_back();
        scores.reference.emplace_back();
        for (std::size_t j = 0; j < documents.size(); ++j) {
            scores.run.back().push_back(cosineSimilarity(q.run[i], d.run[j]));
            scores.reference.back().push_back(cosineSimilarity(q.reference[i], d.reference[j]));
        }
    }
    scores.notes = d.notes;
    scores.runMs = q.runMs + d.runMs;
}

} // namespace

DocumentScores scoreDocuments(InferenceBackend& run, InferenceBackend* reference, const std::vector<std::string>& queries,
                              const std::vector<std::string>& documents, const RunPair& runs, const Progress& progress,
                              std::size_t pairsPerChunk)
{
    const HeadKind head = run.checkpoint().layout().head();
    if (head != HeadKind::SequenceClassification && head != HeadKind::Embedding)
        throw Error("Reranking needs a cross-encoder (a sequence classifier with one label) or a sentence embedder; " +
                    run.checkpoint().directory() + " is " + architectureName(run.config().architecture) + ".");
    if (documents.empty())
        throw Error("There are no passages to rerank.");
    DocumentScores scores;
    scores.scorer = head == HeadKind::SequenceClassification ? RerankScorer::CrossEncoder : RerankScorer::BiEncoder;
    if (scores.scorer == RerankScorer::CrossEncoder)
        crossEncoderScores(run, reference, queries, documents, runs, progress, pairsPerChunk, scores);
    else
        biEncoderScores(run, reference, queries, documents, runs, progress, scores);
    return scores;
}

RerankResult rerankPassages(InferenceBackend& run, InferenceBackend* reference, const RerankOptions& options,
                            const Progress& progress)
{
    const DocumentScores all = scoreDocuments(run, reference, {options.query}, options.passages, options.runs, progress);
    const std::vector<double>& runScores = all.run.at(0);
    const std::vector<double>& referenceScores = all.reference.at(0);
    RerankResult result;
    result.scorer = all.scorer;
    result.run = options.runs.run;
    result.notes = all.notes;
    result.runMs = all.runMs;
    auto entries = [&](const std::vector<std::size_t>& order) {
        std::vector<RankedPassage> ranked;
        for (std::size_t index : order)
            ranked.push_back({index, runScores[index], referenceScores[index]});
        return ranked;
    };
    const std::vector<std::size_t> runOrder = rankingOrder(runScores);
    const std::vector<std::size_t> referenceOrder = rankingOrder(referenceScores);
    result.sameOrder = runOrder == referenceOrder;
    result.kendallTau = kendallTauB(runScores, referenceScores);
    result.ranking = entries(runOrder);
    result.referenceRanking = entries(referenceOrder);
    if (options.topK > 0 && result.ranking.size() > static_cast<std::size_t>(options.topK))
        result.ranking.resize(static_cast<std::size_t>(options.topK));
    return result;
}

} // namespace scalescope
