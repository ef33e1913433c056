#pragma once
// A backend that passes every call on to another (the in-process engine) and counts its forwards,
// resuming from a layer only when told it may: with `resumes` false it is the engine as a runner is,
// every run a whole forward, which is how the tests and the bench set what resuming saves against
// what it must not change. A run that does not resume and is still asked to (a start layer, or a
// record of layer inputs) is a caller's bug and throws.
#include <stdexcept>
#include <string>
#include <vector>

#include "model/inference_backend.h"

namespace scalescope::testing {

class ForwardingBackend : public InferenceBackend {
public:
    ForwardingBackend(InferenceBackend& inner, bool resumes) : inner_(inner), resumes_(resumes) {}
    bool resumesFromLayer() const override { return resumes_ && inner_.resumesFromLayer(); }
    const Checkpoint& checkpoint() const override { return inner_.checkpoint(); }
    const std::vector<LinearInfo>& linears() const override { return inner_.linears(); }
    std::vector<std::string> capturePoints() const override { return inner_.capturePoints(); }
    ForwardResult forward(const EncoderInputs& inputs, const ForwardOptions& options, const Progress& progress) override
    {
        if (!resumesFromLayer() && (options.startHidden || options.recordLayerInputs))
            throw std::logic_error("a backend that does not resume was asked to");
        ++forwards;
        return inner_.forward(inputs, options, progress);
    }
    std::string deviceName() const override { return inner_.deviceName(); }
    int forwards = 0;

private:
    InferenceBackend& inner_;
    bool resumes_;
};

} // namespace scalescope::testing
