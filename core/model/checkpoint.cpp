#include "model/checkpoint.h"

#include <algorithm>

#include "common/error.h"
#include "common/text_files.h"
#include "model/sentence_transformers.h"

namespace scalescope {
namespace {

// A bare encoder saved by sentence-transformers (or by transformers' base model) names its tensors
// without the family prefix (embeddings.*, encoder.layer.N.*); transformers loads both, and so does
// ScaleScope: the layout then names every module without it, as the quantization config does.
std::string modulePrefixOf(const TensorStore& tensors, const std::string& familyPrefix)
{
    bool prefixed = false, bare = false;
    for (const TensorView* view : tensors.tensors()) {
        prefixed = prefixed || view->name.compare(0, familyPrefix.size() + 1, familyPrefix + ".") == 0;
        bare = bare || view->name.compare(0, 11, "embeddings.") == 0 || view->name.compare(0, 8, "encoder.") == 0;
    }
    return bare && !prefixed ? std::string() : familyPrefix;
}

} // namespace

std::shared_ptr<const Checkpoint> Checkpoint::open(const std::string& dir)
{
    if (!directoryExists(dir))
        throw Error(dir + " is not a folder; a checkpoint is a folder with config.json and model.safetensors.");
    const std::string configPath = joinPath(dir, "config.json");
    if (!fileExists(configPath) && !nonFileKind(configPath)) // a folder or a FIFO gets its own sentence
        throw Error("No config.json in " + dir + ".");

    std::shared_ptr<Checkpoint> checkpoint(new Checkpoint());
    checkpoint->directory_ = dir;
    checkpoint->config_ = loadModelConfig(configPath);
    checkpoint->tensors_ = TensorStore::openDirectory(dir);
    checkpoint->config_.modulePrefix = modulePrefixOf(*checkpoint->tensors_, checkpoint->config_.architecture.family->prefix);
    if (checkpoint->config_.architecture.modelClass->head == HeadKind::Embedding)
        checkpoint->config_.embedding = readSentenceEmbedding(dir);
    checkpoint->layout_ = std::make_unique<EncoderLayout>(checkpoint->config_);
    checkpoint->plan_ = LinearPlan(checkpoint->config_, *checkpoint->layout_, *checkpoint->tensors_);

    const int layers = static_cast<int>(checkpoint->config_.numLayers);
    for (const TensorView* view : checkpoint->tensors_->tensors()) {
        const int layer = checkpoint->layout_->layerOf(view->name);
        if (layer < layers)
            continue;
        if (checkpoint->unusedLayerTensors_.empty())
            checkpoint->unusedFirstLayer_ = checkpoint->unusedLastLayer_ = layer;
        checkpoint->unusedFirstLayer_ = std::min(checkpoint->unusedFirstLayer_, layer);
        checkpoint->unusedLastLayer_ = std::max(checkpoint->unusedLastLayer_, layer);
        checkpoint->unusedLayerTensors_.push_back(view->name);
    }

    return checkpoint;
}

std::shared_ptr<const Checkpoint> Checkpoint::withEmbedding(const SentenceEmbeddingConfig& embedding) const
{
    if (config_.architecture.modelClass->head != HeadKind::Embedding)
        throw Error(std::string("Pooling applies to a sentence embedder or a bare encoder; ") + directory_ + " is " +
                    architectureName(config_.architecture) + ".");
    std::shared_ptr<Checkpoint> copy(new Checkpoint());
    copy->directory_ = directory_;
    copy->config_ = config_;
    copy->config_.embedding = embedding;
    copy->tensors_ = tensors_;
    copy->layout_ = std::make_unique<EncoderLayout>(copy->config_);
    copy->plan_ = LinearPlan(copy->config_, *copy->layout_, *copy->tensors_);
    copy->unusedLayerTensors_ = unusedLayerTensors_;
    copy->unusedFirstLayer_ = unusedFirstLayer_;
    copy->unusedLastLayer_ = unusedLastLayer_;
    return copy;
}

std::shared_ptr<const void> Checkpoint::derived(const std::string& key,
                                                const std::function<std::shared_ptr<const void>()>& make) const
{
    {
        const std::lock_guard<std::mutex> lock(derivedMutex_);
        if (const auto it = derived_.find(key); it != derived_.end())
            return it->second;
    }
    // Made outside the lock (it may take a while, and may itself derive another key); a race makes
    // it twice and keeps the first.
    std::shared_ptr<const void> made = make();
    const std::lock_guard<std::mutex> lock(derivedMutex_);
    return derived_.emplace(key, std::move(made)).first->second;
}

std::string Checkpoint::unusedTensorsNote() const
{
    if (unusedLayerTensors_.empty())
        return {};
    const std::string layers = unusedFirstLayer_ == unusedLastLayer_
        ? "layer " + std::to_string(unusedFirstLayer_)
        : "layers " + std::to_string(unusedFirstLayer_) + " to " + std::to_string(unusedLastLayer_);
    return std::to_string(unusedLayerTensors_.size()) + " tensors of " + directory_ + " (" + layers + ", e.g. " +
           unusedLayerTensors_.front() + ") are not used: config.json's num_hidden_layers is " +
           std::to_string(config_.numLayers) + ", so a run computes " + std::to_string(config_.numLayers) +
           " layers; check that config.json belongs to these weights.";
}

void Checkpoint::loadTokenizerOnce() const
{
    std::call_once(tokenizerLoaded_, [this] {
        const std::string& dir = directory_;
        // A broken tokenizer is reported when a command needs text, so that `forward --input-ids` and
        // `inspect` still work on a folder whose tokenizer files are damaged or missing.
        try {
            tokenizer_ = loadTokenizer(dir, layout_->family().tokenizer);
        } catch (const Error& e) {
            tokenizerError_ = e.what();
        }
        // Ids past the embedding table would otherwise surface at the first forward as "token id N is
        // outside the vocabulary", naming neither file.
        if (tokenizer_ && tokenizer_->vocabSize() > config_.vocabSize) {
            std::string file = "the tokenizer files in " + dir;
            for (const char* name : {"tokenizer.json", "vocab.txt", "vocab.json"})
                if (fileExists(joinPath(dir, name))) {
                    file = joinPath(dir, name);
                    break;
                }
            tokenizerMismatch_ = file + " holds token ids up to " + std::to_string(tokenizer_->vocabSize() - 1) +
                                 ", beyond vocab_size " + std::to_string(config_.vocabSize) +
                                 " in config.json: the tokenizer does not belong to this model.";
            tokenizerError_ = tokenizerMismatch_;
            tokenizer_.reset();
        }
    });
}

bool Checkpoint::hasTokenizer() const
{
    loadTokenizerOnce();
    return tokenizer_ != nullptr;
}

const std::string& Checkpoint::tokenizerMismatch() const
{
    loadTokenizerOnce();
    return tokenizerMismatch_;
}

const Tokenizer& Checkpoint::tokenizer() const
{
    loadTokenizerOnce();
    if (!tokenizer_)
        throw Error(tokenizerError_);
    return *tokenizer_;
}

} // namespace scalescope
