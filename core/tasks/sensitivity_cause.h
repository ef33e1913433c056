#pragma once
// The cause label of one quantized Linear for the sensitivity sweep (tasks/sensitivity.h): its
// FP8 floor and isolated error measured on sampled rows of its own input, with its activation and
// weight-scale shares and the diagnostics that name it. Torch-free, plain loops (the rows are few).
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "io/safetensors.h"
#include "model/inference_backend.h"

namespace scalescope {

constexpr double kBeyondFloorDb = 6.0;

// Why a quantized Linear costs what it costs, from what is measured on its own tensors.
struct SensitivityCause {
    std::string module;
    bool inputQuantized = false;
    double inputClippedShare = 0;     // |x / s| > 448 (baseline FP8 run)
    double inputFlushedShare = 0;     // x != 0 but its code is zero
    double inputSubnormalShare = 0;   // the code is subnormal
    double weightClippedShare = 0;    // scale_statistics: codes at +-448 beyond what an amax scale puts there
    double weightUnderflowShare = 0;  // codes zero or subnormal
    // The output's SQNR on the same input (sampled rows) when only E4M3 rounding with ideal scales
    // acts (per-token amax input scales, per-channel amax weight scales), and with the checkpoint's
    // own scales and scheme; both against the float product (reference weight when given).
    double floorSqnrDb = 0;
    double isolatedSqnrDb = 0;
    // The isolated error split in two, on the same rows: only the weight as the checkpoint stores
    // it (input exact), and only the input as the checkpoint quantizes it (weight exact). Which
    // one is larger says whether the weights' or the activations' FP8 costs this Linear more.
    double weightOnlySqnrDb = 0;
    double inputOnlySqnrDb = 0;
    // Static activations: the input-only SQNR had each row used its own amax scale instead (what
    // the floor assumes); far above inputOnlySqnrDb means the static scale is much wider than the
    // rows need (a scale too large: the values use few of E4M3's codes).
    double inputPerTokenSqnrDb = 0;
    bool beyondFloor = false;         // isolated is more than kBeyondFloorDb below the floor
    // What the label says, as a stable code: "input-clipping", "weight-clipping", "input-flush",
    // "weight-underflow", "coarse-static-scale", "weight-rounding", "activation-rounding",
    // "rounding" (weights and activations alike), "unmeasured" (no sample or no weight layout).
    std::string kind;
    std::string label;                // "FP8 rounding, mostly the weights", "beyond FP8 rounding: input clipping (input scale too small)", ...
    std::string explanation;          // the diagnostic sentence that explains it, "" when none
};

// Within this many dB the weight-only and input-only errors count as alike (a factor of two in
// noise power).
constexpr double kAlikeDb = 3.0;

// Rows of a Linear's input as the baseline FP8 run saw it (before its own quantization).
struct LinearInputSample {
    int64_t rows = 0;
    int64_t features = 0;
    std::vector<float> values; // rows x features
};

// Up to maxRows real-token rows of a [batch, seq, features] capture, spread evenly.
LinearInputSample sampleRealRows(const std::vector<int64_t>& shape, const float* data,
                                 const std::vector<std::size_t>& lengths, int64_t maxRows);

struct LinearCauseInputs {
    const LinearInfo* info = nullptr;
    const LinearScaleStatistics* scales = nullptr;     // null when unknown
    const ActivationStatistics* activations = nullptr; // null when its input is not quantized
    const LinearInputSample* sample = nullptr;         // null when not captured
    const TensorView* codes = nullptr;                 // the checkpoint's FP8 weight
    const TensorView* referenceWeight = nullptr;       // the float weight, null without a reference
    const std::vector<Finding>* findings = nullptr;    // checkpoint and activation diagnostics
};

// decode(codes) * weight_scale for per-channel and per-tensor weights, row-major float32; empty
// for other scale layouts or when the sizes do not fit.
std::vector<float> dequantizedWeight(const LinearScaleStatistics& scales, const TensorView& codes);

SensitivityCause explainLinear(const LinearCauseInputs& inputs);

} // namespace scalescope
