#pragma once
// Sentence embedding: texts through a sentence embedder (or a bare encoder) on both sides of a
// RunPair, each run embedding against its reference (cosine), and both sides' similarity matrices.
// Pooling, normalization, the longest input and the prompts come from the checkpoint's
// sentence-transformers modules (model/sentence_transformers.h) unless the options override them.
#include <optional>
#include <string>
#include <vector>

#include "common/progress.h"
#include "model/inference_backend.h"
#include "model/run_settings.h"

namespace scalescope {

struct EmbedOptions {
    std::vector<std::string> texts;
    // A prompt name of the checkpoint's prompts ("query", "passage"), else a literal text; prepended
    // to every text before tokenizing. Empty: the checkpoint's default prompt, if it names one.
    std::string prompt;
    std::optional<PoolingMode> pooling; // else the checkpoint's
    std::optional<bool> normalize;      // else the checkpoint's
    RunPair runs;
};

struct EmbeddedText {
    std::string text; // as given (without the prompt)
    std::vector<int64_t> inputIds;
    bool truncated = false;
    std::vector<float> embedding, referenceEmbedding;
    double cosine = 0; // run against reference
};

struct EmbedResult {
    PoolingMode pooling = PoolingMode::FirstToken;
    bool normalized = false;
    int64_t dim = 0;
    int64_t maxSeqLength = 0;
    std::string prompt; // the text prepended ("" for none)
    std::vector<EmbeddedText> inputs;
    std::vector<std::vector<double>> similarity, referenceSimilarity; // [n, n] cosines
    RunSettings run;
    // Sentences the user should read: the pooling chosen by default for a folder without modules,
    // how many inputs were truncated.
    std::vector<std::string> notes;
    double runMs = 0;
};

// The checkpoint the options describe: the model's own, or a copy with other pooling (shares the
// mapped tensors). Throws the sentence naming the folder when the model is not an embedder.
std::shared_ptr<const Checkpoint> embeddingCheckpoint(const Checkpoint& checkpoint, std::optional<PoolingMode> pooling,
                                                      std::optional<bool> normalize);

// The prompt text a --prompt value names in the checkpoint (a prompt name, else the literal text).
std::string promptText(const SentenceEmbeddingConfig& embedding, const std::string& prompt);

// Both sides' embeddings of texts, each with the prompt prepended and cut to the checkpoint's
// max_seq_length: what embed, a bi-encoder's rerank and retrieval share.
struct EmbeddedRows {
    std::vector<std::vector<float>> run, reference;
    std::vector<std::vector<int64_t>> inputIds;
    std::vector<bool> truncated;
    int64_t maxSeqLength = 0;
    std::vector<std::string> notes; // the default pooling of a folder without modules, truncation
    double runMs = 0;
};
EmbeddedRows embedRows(InferenceBackend& run, InferenceBackend* reference, const std::vector<std::string>& texts,
                       const std::string& prompt, const RunPair& runs, const Progress& progress = {});

// Throws scalescope::Error when the model is not an embedder (a task head: QA, MLM, classifier),
// when a text list is empty, or when a run is not finite. `run` and `reference` must already carry
// the pooling the options ask for (embeddingCheckpoint; the CLI loads them from it).
EmbedResult embedTexts(InferenceBackend& run, InferenceBackend* reference, const EmbedOptions& options,
                       const Progress& progress = {});

// Cosine of two vectors, as computeErrorMetrics (numerics/metrics.h) measures it: 1 when they are
// equal (both zero included), 0 when only one is zero.
double cosineSimilarity(const std::vector<float>& a, const std::vector<float>& b);

} // namespace scalescope
