#include "device/backend_pool.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "common/error.h"

namespace scalescope {
namespace {

struct Slice {
    std::size_t first = 0; // first row of the whole batch
    std::size_t rows = 0;
};

// Adds one slice's inf/NaN counts and output ranges to the whole batch's (per module: counts add
// up, the largest |value| wins); per-row first modules follow in slice order. rowsReported turns
// false when a slice of `rows` rows did not report its rows (the caller then drops the list: a
// partial one would misattribute rows).
void joinSummaries(ForwardResult& joined, const ForwardResult& part, std::size_t rows, bool& rowsReported)
{
    for (const ModuleNonFinite& module : part.nonFinite) {
        const auto known = std::find_if(joined.nonFinite.begin(), joined.nonFinite.end(),
                                        [&](const ModuleNonFinite& k) { return k.module == module.module; });
        if (known == joined.nonFinite.end())
            joined.nonFinite.push_back(module);
        else
            known->count += module.count;
    }
    for (const ModuleOutputRange& range : part.outputRanges) {
        const auto known = std::find_if(joined.outputRanges.begin(), joined.outputRanges.end(),
                                        [&](const ModuleOutputRange& k) { return k.module == range.module; });
        if (known == joined.outputRanges.end()) {
            joined.outputRanges.push_back(range);
        } else {
            known->maxAbs = std::max(known->maxAbs, range.maxAbs);
            known->belowHalfNormal += range.belowHalfNormal;
            known->elements += range.elements;
        }
    }
    joined.firstNonFiniteByRow.insert(joined.firstNonFiniteByRow.end(), part.firstNonFiniteByRow.begin(),
                                      part.firstNonFiniteByRow.end());
    rowsReported = rowsReported && part.firstNonFiniteByRow.size() == rows;
}

// Rows [first, first + rows) of `inputs`, each padded to `seq` tokens so that the slice has the
// whole batch's shape: padding is masked, so a row's real tokens see exactly the same inputs.
EncoderInputs sliceInputs(const EncoderInputs& inputs, const Slice& slice, std::size_t seq, int64_t padId)
{
    EncoderInputs part;
    for (std::size_t r = slice.first; r < slice.first + slice.rows; ++r) {
        std::vector<int64_t> ids = inputs.inputIds[r];
        std::vector<int64_t> mask =
            inputs.attentionMask.empty() ? std::vector<int64_t>(ids.size(), 1) : inputs.attentionMask[r];
        std::vector<int64_t> types =
            inputs.tokenTypeIds.empty() ? std::vector<int64_t>(ids.size(), 0) : inputs.tokenTypeIds[r];
        ids.resize(seq, padId);
        mask.resize(seq, 0);
        types.resize(seq, 0);
        part.inputIds.push_back(std::move(ids));
        part.attentionMask.push_back(std::move(mask));
        part.tokenTypeIds.push_back(std::move(types));
    }
    return part;
}

// Appends `part` (rows of the same trailing shape) to `whole` along the first dimension.
void appendRows(FloatTensor& whole, const FloatTensor& part)
{
    if (whole.shape.empty()) {
        whole = part;
        return;
    }
    if (part.shape.size() != whole.shape.size() ||
        !std::equal(part.shape.begin() + 1, part.shape.end(), whole.shape.begin() + 1))
        throw Error("The pool's devices returned slices of different shapes; they cannot be joined.");
    whole.shape[0] += part.shape[0];
    whole.values.insert(whole.values.end(), part.values.begin(), part.values.end());
}

void appendNamed(std::vector<NamedTensor>& whole, const std::vector<NamedTensor>& part)
{
    if (whole.empty()) {
        whole = part;
        return;
    }
    if (whole.size() != part.size())
        throw Error("The pool's devices returned different outputs for slices of one batch.");
    for (std::size_t i = 0; i < part.size(); ++i) {
        if (whole[i].name != part[i].name)
            throw Error("The pool's devices returned different outputs for slices of one batch.");
        appendRows(whole[i].tensor, part[i].tensor);
    }
}

bool splittable(const EncoderInputs& inputs, const ForwardOptions& options)
{
    return inputs.inputIds.size() > 1 && inputs.logitPositions.empty() && !options.onCapture &&
           !options.activationStatistics && !options.linearInputAmax;
}

} // namespace

struct BackendPool::Impl {
    std::vector<std::unique_ptr<InferenceBackend>> members;
    std::vector<bool> retired;
    std::vector<std::string> retirements;

    std::vector<std::size_t> live() const
    {
        std::vector<std::size_t> out;
        for (std::size_t m = 0; m < members.size(); ++m)
            if (!retired[m])
                out.push_back(m);
        return out;
    }

    void retire(std::size_t member, const std::string& why)
    {
        retired[member] = true;
        retirements.push_back(members[member]->deviceName() + ": " + why);
    }

    // Runs `inputs` on live members, first `preferred`, retiring each that fails, until one succeeds.
    ForwardResult runWhole(const EncoderInputs& inputs, const ForwardOptions& options, const Progress& progress,
                           std::size_t preferred)
    {
        std::string lastError;
        std::vector<std::size_t> order = live();
        std::stable_partition(order.begin(), order.end(), [&](std::size_t m) { return m == preferred; });
        for (std::size_t member : order) {
            try {
                return members[member]->forward(inputs, options, progress);
            } catch (const Cancelled&) {
                throw;
            } catch (const Error& e) {
                lastError = e.what();
                retire(member, lastError);
            }
        }
        throw Error("Every device of the pool failed; the last said: " +
                    (lastError.empty() ? std::string("no device is left.") : lastError));
    }
};

BackendPool::BackendPool(std::vector<std::unique_ptr<InferenceBackend>> members) : impl_(std::make_unique<Impl>())
{
    if (members.empty())
        throw Error("A device pool needs at least one device.");
    impl_->members = std::move(members);
    impl_->retired.assign(impl_->members.size(), false);
}

BackendPool::~BackendPool() = default;

const Checkpoint& BackendPool::checkpoint() const { return impl_->members.front()->checkpoint(); }
const std::vector<LinearInfo>& BackendPool::linears() const { return impl_->members.front()->linears(); }
std::vector<std::string> BackendPool::capturePoints() const { return impl_->members.front()->capturePoints(); }

ForwardResult BackendPool::forward(const EncoderInputs& inputs, const ForwardOptions& options,
                                   const Progress& progress)
{
    Impl& m = *impl_;
    const std::vector<std::size_t> live = m.live();
    if (live.empty())
        throw Error("Every device of the pool has failed: " + m.retirements.back());
    if (live.size() == 1 || !splittable(inputs, options))
        return m.runWhole(inputs, options, progress, live.front());

    const std::size_t rows = inputs.inputIds.size();
    const std::size_t parts = std::min(live.size(), rows);
    std::size_t seq = 0;
    for (const auto& row : inputs.inputIds)
        seq = std::max(seq, row.size());
    std::vector<Slice> slices;
    for (std::size_t p = 0, first = 0; p < parts; ++p) {
        const std::size_t count = rows / parts + (p < rows % parts ? 1 : 0);
        slices.push_back({first, count});
        first += count;
    }

    // One thread per slice; a member that fails leaves its slice for the retry below. The slices
    // share the cancel flag but report no progress: callbacks expect one thread.
    Progress slicesProgress;
    slicesProgress.cancel = progress.cancel;
    progress.report(0.0, "Running on " + std::to_string(parts) + " devices");
    std::vector<ForwardResult> results(parts);
    std::vector<std::exception_ptr> failures(parts);
    std::vector<EncoderInputs> sliceInputsList;
    for (const Slice& slice : slices)
        sliceInputsList.push_back(sliceInputs(inputs, slice, seq, config().padTokenId));
    std::vector<std::thread> threads;
    for (std::size_t p = 0; p < parts; ++p)
        threads.emplace_back([&, p] {
            try {
                results[p] = m.members[live[p]]->forward(sliceInputsList[p], options, slicesProgress);
            } catch (...) {
                failures[p] = std::current_exception();
            }
        });
    for (std::thread& thread : threads)
        thread.join();

    ForwardResult joined;
    bool rowsReported = true;
    for (std::size_t p = 0; p < parts; ++p) {
        if (failures[p]) {
            try {
                std::rethrow_exception(failures[p]);
            } catch (const Cancelled&) {
                throw;
            } catch (const Error& e) {
                m.retire(live[p], e.what());
            }
            results[p] = m.runWhole(sliceInputsList[p], options, slicesProgress, live[(p + 1) % parts]);
        }
        appendNamed(joined.outputs, results[p].outputs);
        appendNamed(joined.captures, results[p].captures);
        joinSummaries(joined, results[p], slices[p].rows, rowsReported);
        joined.elapsedMs = std::max(joined.elapsedMs, results[p].elapsedMs);
    }
    if (!rowsReported)
        joined.firstNonFiniteByRow.clear();
    progress.report(1.0, "Done");
    return joined;
}

std::string BackendPool::deviceName() const
{
    std::string name = "pool of " + std::to_string(impl_->members.size()) + ":";
    for (std::size_t m = 0; m < impl_->members.size(); ++m)
        name += (m ? ", " : " ") + impl_->members[m]->deviceName() + (impl_->retired[m] ? " (failed)" : "");
    return name;
}

int BackendPool::memberCount() const { return static_cast<int>(impl_->members.size()); }
int BackendPool::liveMemberCount() const { return static_cast<int>(impl_->live().size()); }
std::vector<std::string> BackendPool::retirements() const { return impl_->retirements; }

} // namespace scalescope
