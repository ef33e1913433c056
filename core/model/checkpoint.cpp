#include "model/checkpoint.h"

#include "common/error.h"
#include "common/text_files.h"

namespace scalescope {

std::shared_ptr<const Checkpoint> Checkpoint::open(const std::string& dir)
{
    if (!directoryExists(dir))
        throw Error(dir + " is not a folder; a checkpoint is a folder with config.json and model.safetensors.");
    const std::string configPath = joinPath(dir, "config.json");
    if (!fileExists(configPath))
        throw Error("No config.json in " + dir + ".");

    std::shared_ptr<Checkpoint> checkpoint(new Checkpoint());
    checkpoint->directory_ = dir;
    checkpoint->config_ = loadModelConfig(configPath);
    checkpoint->tensors_ = TensorStore::openDirectory(dir);
    checkpoint->layout_ = std::make_unique<EncoderLayout>(checkpoint->config_);
    checkpoint->plan_ = LinearPlan(checkpoint->config_, *checkpoint->layout_, *checkpoint->tensors_);

    // A broken tokenizer is reported when a command needs text, so that `forward --input-ids` and
    // `inspect` still work on a folder whose tokenizer files are damaged or missing.
    try {
        checkpoint->tokenizer_ = loadTokenizer(dir);
    } catch (const Error& e) {
        checkpoint->tokenizerError_ = e.what();
    }
    return checkpoint;
}

const Tokenizer& Checkpoint::tokenizer() const
{
    if (!tokenizer_)
        throw Error(tokenizerError_);
    return *tokenizer_;
}

} // namespace scalescope
