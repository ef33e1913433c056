#pragma once
// A Hugging Face model folder opened for reading: its config, its tensors (memory-mapped, never
// modified), its layout and per-Linear plan, and its tokenizer when it has one. Opening validates
// the config and maps the tensors; shape checks against the architecture happen when an
// EncoderModel is built from it; the tokenizer files are read when first asked for.
// Threading: immutable after open (the tokenizer's first read is guarded).
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/architecture.h"
#include "model/linear_plan.h"
#include "model/model_config.h"
#include "text/tokenizer.h"

namespace scalescope {

class Checkpoint {
public:
    // Throws scalescope::Error naming the folder or file and the problem.
    static std::shared_ptr<const Checkpoint> open(const std::string& dir);

    // The same checkpoint (the same mapped tensors) with another pooling or normalization: what
    // `embed --pooling` runs. Throws the sentence naming the folder when it is not an embedder.
    std::shared_ptr<const Checkpoint> withEmbedding(const SentenceEmbeddingConfig& embedding) const;

    const std::string& directory() const { return directory_; }
    const ModelConfig& config() const { return config_; }
    const TensorStore& tensors() const { return *tensors_; }
    const EncoderLayout& layout() const { return *layout_; }
    const LinearPlan& plan() const { return plan_; }
    // The tokenizer files are read on the first of these three calls, not at open: a run on token
    // ids, inspect's weights or a scales view never needs them (roberta-base's took a sixth of the
    // load). Thread-safe.
    bool hasTokenizer() const;
    // The folder's tokenizer, of the kind its family's entry names (WordPiece for BERT, byte-level
    // BPE for RoBERTa).
    // Throws the sentence naming the folder when it has none, or naming the file when it is broken.
    const Tokenizer& tokenizer() const;
    // When the tokenizer holds ids past config.json's vocab_size, the sentence saying so (then
    // tokenizer() throws it); "" otherwise. Inspect reports it.
    const std::string& tokenizerMismatch() const;
    // Tensors no run reads because they belong to encoder layers past config.json's
    // num_hidden_layers (a 4-layer checkpoint whose config says 2), sorted by name.
    const std::vector<std::string>& unusedLayerTensors() const { return unusedLayerTensors_; }
    // One sentence about them ("" when there are none): inspect warns with it, runs print it.
    std::string unusedTensorsNote() const;

    // What an analysis derives from this checkpoint's contents alone (they do not change while it
    // is open: a rewritten file is refused, TensorStore::checkUnchanged), made on first use by
    // `make` and kept under `key` for the checkpoint's life: compare's checkpoint findings scan
    // every weight, which cost 100 ms and 340 MB of zeroed memory at every compare. The model
    // layer does not know the analyses' types, so the value is type-erased; each key has one type,
    // given by the one function that uses it. Thread-safe.
    std::shared_ptr<const void> derived(const std::string& key,
                                        const std::function<std::shared_ptr<const void>()>& make) const;

private:
    Checkpoint() = default;
    std::string directory_;
    ModelConfig config_;
    std::shared_ptr<const TensorStore> tensors_; // shared with copies made by withEmbedding
    std::unique_ptr<EncoderLayout> layout_;
    LinearPlan plan_;
    void loadTokenizerOnce() const;
    mutable std::once_flag tokenizerLoaded_;
    mutable std::unique_ptr<Tokenizer> tokenizer_;
    mutable std::string tokenizerError_;
    mutable std::string tokenizerMismatch_;
    std::vector<std::string> unusedLayerTensors_;
    int unusedFirstLayer_ = 0, unusedLastLayer_ = 0;
    mutable std::mutex derivedMutex_;
    mutable std::map<std::string, std::shared_ptr<const void>> derived_;
};

} // namespace scalescope
