#pragma once
// A Hugging Face model folder opened for reading: its config, its tensors (memory-mapped, never
// modified), its layout and per-Linear plan, and its tokenizer when it has one. Opening validates
// the config and maps the tensors; shape checks against the architecture happen when an
// EncoderModel is built from it.
// Threading: immutable after open.
#include <memory>
#include <string>

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

    const std::string& directory() const { return directory_; }
    const ModelConfig& config() const { return config_; }
    const TensorStore& tensors() const { return *tensors_; }
    const EncoderLayout& layout() const { return *layout_; }
    const LinearPlan& plan() const { return plan_; }
    bool hasTokenizer() const { return tokenizer_ != nullptr; }
    // The folder's tokenizer (see loadTokenizer: WordPiece for BERT, byte-level BPE for RoBERTa).
    // Throws the sentence naming the folder when it has none, or naming the file when it is broken.
    const Tokenizer& tokenizer() const;

private:
    Checkpoint() = default;
    std::string directory_;
    ModelConfig config_;
    std::unique_ptr<TensorStore> tensors_;
    std::unique_ptr<EncoderLayout> layout_;
    LinearPlan plan_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::string tokenizerError_;
};

} // namespace scalescope
