#pragma once
// Progress and cancellation for long core calls. The core starts no threads of its own (the one
// exception, a device pool's forward, joins them before it returns and reports from the calling
// thread only); a caller on another thread raises the cancel flag and the call throws
// scalescope::Cancelled at its next check.
#include <atomic>
#include <functional>
#include <string>

namespace scalescope {

// fraction in [0, 1]; stage is a short human-readable label ("Loading weights").
using ProgressCallback = std::function<void(double fraction, const std::string& stage)>;

struct Progress {
    ProgressCallback callback;                 // may be empty
    const std::atomic<bool>* cancel = nullptr; // may be null

    void report(double fraction, const std::string& stage) const
    {
        if (callback)
            callback(fraction, stage);
    }
    bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
    void throwIfCancelled() const;
};

} // namespace scalescope
