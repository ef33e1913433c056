#include "engine/encoder_model.h"

#include <chrono>

#include "engine/encoder_graph.h"
#include "model/forward_inputs.h"

namespace scalescope {

EncoderModel::~EncoderModel() = default;

std::unique_ptr<EncoderModel> EncoderModel::load(const std::string& dir, const Progress& progress)
{
    return load(Checkpoint::open(dir), progress);
}

std::unique_ptr<EncoderModel> EncoderModel::load(std::shared_ptr<const Checkpoint> checkpoint, const Progress& progress)
{
    std::unique_ptr<EncoderModel> model(new EncoderModel());
    model->graph_ = EncoderGraph::load(checkpoint, progress);
    model->checkpoint_ = std::move(checkpoint);
    return model;
}

const Checkpoint& EncoderModel::checkpoint() const { return *checkpoint_; }
bool EncoderModel::isQuantized() const { return checkpoint_->plan().anyQuantized(); }
const std::vector<LinearInfo>& EncoderModel::linears() const { return checkpoint_->plan().linears(); }
std::vector<std::string> EncoderModel::capturePoints() const { return checkpoint_->layout().capturePoints(); }

ForwardResult EncoderModel::forward(const EncoderInputs& inputs, const ForwardOptions& options, const Progress& progress)
{
    const auto started = std::chrono::steady_clock::now();
    validateForwardInputs(inputs, checkpoint_->config(), checkpoint_->layout());
    validateOverrides(options.overrides, checkpoint_->layout());
    ForwardResult result = graph_->run(inputs, options, progress);
    // Numbers computed while the mapped file was rewritten in place are not to be reported.
    checkpoint_->tensors().checkUnchanged();
    result.elapsedMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return result;
}

} // namespace scalescope
