#pragma once
// The encoder's forward pass in LibTorch: embeddings, the attention and feed-forward blocks, the
// head, with FP8 activation quantization where the plan and the overrides say, and captures.
// The header is torch-free (an opaque handle) so that EncoderModel and its users never see LibTorch.
// Threading: run() is const and keeps no state between calls, but the engine is not meant to be
// used from two threads at once (LibTorch's pools are shared).
#include <memory>

#include "common/progress.h"
#include "model/forward_inputs.h"
#include "model/checkpoint.h"
#include "model/inference_backend.h"

namespace scalescope {

class EncoderGraph {
public:
    // Decodes the weights (see encoder_weights.h). Throws naming the tensor on bad input.
    static std::unique_ptr<EncoderGraph> load(std::shared_ptr<const Checkpoint> checkpoint, const Progress& progress);
    ~EncoderGraph();

    // inputs must have passed validateForwardInputs.
    ForwardResult run(const EncoderInputs& inputs, const ForwardOptions& options, const Progress& progress) const;

private:
    EncoderGraph();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace scalescope
