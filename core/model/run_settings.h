#pragma once
// How one side of a run computes, as one value: the mode, how FP8 products are summed, the
// attention's precision, the per-Linear what-if overrides and the device. Every task, the GUI's
// result stamp, the runner's load request and the CLI take it whole, so a new option (a task's
// pooling, a device) is one field here and its parser, not an assignment in every front
// end. RunPair holds the two sides a comparison measures against each other. No LibTorch, no Qt.
#include <string>

#include "model/linear_plan.h"

namespace scalescope {

struct ForwardOptions;

struct RunSettings {
    // Constructors rather than aggregate initialization: GCC 12 warns of a maybe-uninitialized
    // std::map (the overrides) in every braced temporary of an aggregate that holds one.
    RunSettings() = default;
    // A mode and accumulation with everything else at its default (the named runs of a check).
    explicit RunSettings(RunMode mode, Accumulation accumulation = Accumulation::Float32);

    RunMode mode = RunMode::Fp8;
    // Dl16 (the DL16 twin) with an FP8 mode only: problem() says so otherwise.
    Accumulation accumulation = Accumulation::Float32;
    AttentionPrecision attention = AttentionPrecision::Float;
    PrecisionOverrides overrides; // docs/ARCHITECTURE.md "Precision overrides"
    // A device spec (device/device_spec.h): "cpu" is the in-process engine, "runner:COMMAND" a
    // runner process. Where a task runs on several devices it holds their list apart from this.
    std::string device = "cpu";

    // "fp8", "fp16+dl16": runLabel of the mode and accumulation.
    std::string label() const;
    // The sentence that refuses this combination ("" when it can run).
    std::string problem() const;
    // The same side with other per-Linear overrides: what a sweep or a runner's forward varies
    // from one forward to the next.
    RunSettings withOverrides(PrecisionOverrides other) const;
    friend bool operator==(const RunSettings& a, const RunSettings& b);
    friend bool operator!=(const RunSettings& a, const RunSettings& b) { return !(a == b); }
};

// The reference side's default: dequantized weights on float activations (a float checkpoint
// runs the same either way).
RunSettings referenceRunSettings();

// A run and the reference it is measured against.
struct RunPair {
    RunSettings run;
    RunSettings reference = referenceRunSettings();
    friend bool operator==(const RunPair& a, const RunPair& b)
    {
        return a.run == b.run && a.reference == b.reference;
    }
    friend bool operator!=(const RunPair& a, const RunPair& b) { return !(a == b); }
};

// The one place a side's settings become a forward's: mode, accumulation, attention and overrides
// (captures, statistics and resuming stay the caller's).
ForwardOptions forwardOptions(const RunSettings& settings);

} // namespace scalescope
