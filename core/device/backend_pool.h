#pragma once
// Several devices serving one checkpoint as one backend: what `evaluate --device A --device B`
// runs on. A forward's rows are split into contiguous slices, one per member, run at the same
// time, and joined in input order; every slice is padded to the whole batch's length, so each
// row sees exactly the inputs it would on one device. A member that fails has its slice run again
// on another and is retired; the pool fails only when no member is left.
//
// Forwards that cannot be split row by row (MaskedLM logit positions, streamed captures,
// activation statistics, calibration maxima, one row) go whole to one member. Threads: forward()
// runs one thread per slice and joins them before it returns; it is not re-entrant. Members must
// share one checkpoint (the caller opens them on it).
#include <memory>
#include <string>
#include <vector>

#include "model/inference_backend.h"

namespace scalescope {

class BackendPool : public InferenceBackend {
public:
    // Throws Error when `members` is empty.
    explicit BackendPool(std::vector<std::unique_ptr<InferenceBackend>> members);
    ~BackendPool() override;

    const Checkpoint& checkpoint() const override;
    const std::vector<LinearInfo>& linears() const override;
    std::vector<std::string> capturePoints() const override;
    ForwardResult forward(const EncoderInputs& inputs, const ForwardOptions& options,
                          const Progress& progress = {}) override;
    // "pool of 2: <name>, <name>"; retired members are marked.
    std::string deviceName() const override;

    int memberCount() const;
    int liveMemberCount() const;
    // Why each retired member was retired, in retirement order.
    std::vector<std::string> retirements() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace scalescope
