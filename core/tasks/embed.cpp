#include "tasks/embed.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "model/checkpoint.h"
#include "numerics/metrics.h"
#include "tasks/sequence_runs.h"

namespace scalescope {

std::shared_ptr<const Checkpoint> embeddingCheckpoint(const Checkpoint& checkpoint, std::optional<PoolingMode> pooling,
                                                      std::optional<bool> normalize)
{
    if (checkpoint.layout().head() != HeadKind::Embedding)
        throw Error((pooling ? "--pooling applies to a sentence embedder or a bare encoder; "
                             : "Embedding needs a sentence embedder or a bare encoder (" +
                                   architecturesWithHeadText(HeadKind::Embedding) + "); ") +
                    checkpoint.directory() + " is " + architectureName(checkpoint.config().architecture) + ".");
    SentenceEmbeddingConfig embedding = checkpoint.config().embedding;
    const bool changed = (pooling && *pooling != embedding.pooling) || (normalize && *normalize != embedding.normalize);
    if (!changed)
        return nullptr;
    if (pooling)
        embedding.pooling = *pooling;
    if (normalize)
        embedding.normalize = *normalize;
    embedding.fromModules = true; // chosen: the layout pools as it says
    return checkpoint.withEmbedding(embedding);
}

std::string promptText(const SentenceEmbeddingConfig& embedding, const std::string& prompt)
{
    const std::string& name = prompt.empty() ? embedding.defaultPromptName : prompt;
    for (const auto& [key, text] : embedding.prompts)
        if (key == name)
            return text;
    return prompt; // a literal text (or none)
}

double cosineSimilarity(const std::vector<float>& a, const std::vector<float>& b)
{
    // The one cosine (numerics/metrics): compare, check and the sweep measure vectors with it too.
    return computeErrorMetrics(a.data(), b.data(), std::min(a.size(), b.size())).cosine;
}

namespace {

std::vector<std::vector<double>> similarityMatrix(const std::vector<std::vector<float>>& vectors)
{
    std::vector<std::vector<double>> matrix(vectors.size(), std::vector<double>(vectors.size(), 0.0));
    for (std::size_t i = 0; i < vectors.size(); ++i)
        for (std::size_t j = i; j < vectors.size(); ++j)
            matrix[i][j] = matrix[j][i] = cosineSimilarity(vectors[i], vectors[j]);
    return matrix;
}

} // namespace

EmbeddedRows embedRows(InferenceBackend& run, InferenceBackend* reference, const std::vector<std::string>& texts,
                       const std::string& prompt, const RunPair& runs, const Progress& progress)
{
    const Checkpoint& checkpoint = run.checkpoint();
    if (checkpoint.layout().head() != HeadKind::Embedding)
        embeddingCheckpoint(checkpoint, std::nullopt, std::nullopt); // throws the sentence
    if (texts.empty())
        throw Error("There is no text to embed.");
    const SentenceEmbeddingConfig& embedding = checkpoint.config().embedding;
    EmbeddedRows rows;
    rows.maxSeqLength = sequenceTokenLimit(checkpoint);
    if (!embedding.fromModules)
        rows.notes.push_back(checkpoint.directory() + " has no sentence-transformers modules.json, so its embedding "
                             "is the first token's (" + checkpoint.layout().specialTokens().begin +
                             ") last hidden state, not normalized; --pooling and --normalize choose otherwise.");
    const std::string promptedWith = promptText(embedding, prompt);
    const Tokenizer& tokenizer = checkpoint.tokenizer();
    std::vector<Encoding> encodings;
    std::size_t truncated = 0;
    for (const std::string& text : texts) {
        SequenceEncoding encoded = encodeSequence(tokenizer, {promptedWith + text, std::nullopt}, rows.maxSeqLength);
        rows.inputIds.push_back(encoded.encoding.ids);
        rows.truncated.push_back(encoded.truncated);
        truncated += encoded.truncated ? 1 : 0;
        encodings.push_back(std::move(encoded.encoding));
    }
    if (truncated > 0)
        rows.notes.push_back(std::to_string(truncated) + " of " + std::to_string(texts.size()) +
                             " inputs were cut to max_seq_length " + std::to_string(rows.maxSeqLength) +
                             " tokens (special tokens included).");
    const std::string& output = checkpoint.layout().headDefinition().outputs.at(0).name;
    SequenceRows sides = runSequenceRows(run, reference, runs, encodings, output, progress);
    rows.run = std::move(sides.run);
    rows.reference = std::move(sides.reference);
    rows.runMs = sides.runMs;
    return rows;
}

EmbedResult embedTexts(InferenceBackend& run, InferenceBackend* reference, const EmbedOptions& options,
                       const Progress& progress)
{
    EmbeddedRows rows = embedRows(run, reference, options.texts, options.prompt, options.runs, progress);
    const SentenceEmbeddingConfig& embedding = run.checkpoint().config().embedding;
    EmbedResult result;
    result.pooling = embedding.pooling;
    result.normalized = embedding.normalize;
    result.run = options.runs.run;
    result.prompt = promptText(embedding, options.prompt);
    result.maxSeqLength = rows.maxSeqLength;
    result.notes = rows.notes;
    result.runMs = rows.runMs;
    for (std::size_t i = 0; i < options.texts.size(); ++i) {
        EmbeddedText item;
        item.text = options.texts[i];
        item.inputIds = rows.inputIds[i];
        item.truncated = rows.truncated[i];
        item.embedding = std::move(rows.run[i]);
        item.referenceEmbedding = std::move(rows.reference[i]);
        item.cosine = cosineSimilarity(item.embedding, item.referenceEmbedding);
        result.inputs.push_back(std::move(item));
    }
    result.dim = result.inputs.empty() ? 0 : static_cast<int64_t>(result.inputs[0].embedding.size());
    std::vector<std::vector<float>> runVectors, referenceVectors;
    for (const EmbeddedText& item : result.inputs) {
        runVectors.push_back(item.embedding);
        referenceVectors.push_back(item.referenceEmbedding);
    }
    result.similarity = similarityMatrix(runVectors);
    result.referenceSimilarity = similarityMatrix(referenceVectors);
    return result;
}

} // namespace scalescope
