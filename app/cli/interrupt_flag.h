#pragma once
// Ctrl-C for long commands (evaluate, noise-floor, check): the first raises a cancel flag that the
// task checks between inputs, so it stops cleanly (evaluate still reports what it finished); a
// second Ctrl-C ends the program the usual way. One at a time per process.
#include <atomic>

namespace scalescope::cli {

class InterruptFlag {
public:
    InterruptFlag();
    ~InterruptFlag();
    InterruptFlag(const InterruptFlag&) = delete;
    InterruptFlag& operator=(const InterruptFlag&) = delete;

    // For Progress::cancel.
    const std::atomic<bool>* flag() const;

private:
    void (*previous_)(int) = nullptr;
};

} // namespace scalescope::cli
