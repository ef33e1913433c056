#pragma once
// Reranking: a query and passages scored on both sides of a RunPair, by a cross-encoder (a
// sequence classifier with one label: the logit of each (query, passage) pair) or by an embedder
// (the cosine of the query's and the passage's embeddings, each with its checkpoint prompt), and
// the two rankings compared: the same order, Kendall's tau-b.
#include <cstddef>
#include <string>
#include <vector>

#include "common/progress.h"
#include "model/inference_backend.h"
#include "model/run_settings.h"

namespace scalescope {

struct RerankOptions {
    std::string query;
    std::vector<std::string> passages;
    int topK = 0; // > 0: keep the K best of the run's ranking
    RunPair runs;
};

enum class RerankScorer { CrossEncoder, BiEncoder };
const char* rerankScorerName(RerankScorer scorer); // "cross-encoder", "bi-encoder"

struct RankedPassage {
    std::size_t index = 0; // position in the input
    double score = 0, referenceScore = 0;
};

struct RerankResult {
    RerankScorer scorer = RerankScorer::CrossEncoder;
    std::vector<RankedPassage> ranking;          // by the run's score, best first, ties by position
    std::vector<RankedPassage> referenceRanking; // the same entries by the reference's score
    bool sameOrder = true;  // the two full rankings are equal
    double kendallTau = 1;  // tau-b between the sides' scores
    RunSettings run;
    std::vector<std::string> notes;
    double runMs = 0;
};

// Every query's score of every document on both sides, as rerank scores a passage: a cross-encoder
// on each (query, document) pair, an embedder by the cosine of the query's embedding (its "query"
// prompt) and the document's (its "passage" prompt), each embedded once. [query][document].
struct DocumentScores {
    RerankScorer scorer = RerankScorer::CrossEncoder;
    std::vector<std::vector<double>> run, reference;
    std::vector<std::string> notes; // truncation
    double runMs = 0;
};
// A cross-encoder's (query, document) pairs are encoded and run this many at a time, so memory
// stays bounded on a large retrieval corpus (queries x documents pairs); the scores are the same
// whatever the chunk (each chunk runs in batches of runSequenceRows' size).
constexpr std::size_t kRerankPairsPerChunk = 1024;
// Throws as rerankPassages does.
DocumentScores scoreDocuments(InferenceBackend& run, InferenceBackend* reference, const std::vector<std::string>& queries,
                              const std::vector<std::string>& documents, const RunPair& runs,
                              const Progress& progress = {}, std::size_t pairsPerChunk = kRerankPairsPerChunk);

// Throws scalescope::Error when the model can score no pair (a QA or MLM model, a classifier with
// several labels), when there are no passages, or when a run is not finite.
RerankResult rerankPassages(InferenceBackend& run, InferenceBackend* reference, const RerankOptions& options,
                            const Progress& progress = {});

} // namespace scalescope
