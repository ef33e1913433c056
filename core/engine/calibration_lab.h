#pragma once
// The calibration lab (`scalescope-cli calibrate`, the Calibration view): how the static per-tensor
// input scales that static_minmax calibration gives (engine/quantize.h: the running max of |x| over
// the calibration texts, through scaleForAmax) depend on how many texts are used and in which
// order; which evaluation tokens would clip under them; and what they do to the final logits.
//
// Cost: one float forward per calibration text gives every size and order (the running max is a
// prefix max); with evaluation texts, one float forward per text, then one quantized checkpoint
// (in a temporary folder) and one FP8 forward per evaluation text for each distinct set of scales
// among the sizes and orders and the bootstrap draws of the spread (CalibrationLabResult). Deterministic: order 0 is the file order, order k > 0 a Fisher-Yates
// shuffle driven by std::mt19937_64 seeded with k. Torch-free header.
// Errors: scalescope::Error naming the checkpoint or file; Cancelled on the Progress flag.
#include <cstdint>
#include <string>
#include <vector>

#include "common/progress.h"
#include "engine/quantize.h"
#include "tasks/calibration_lab_result.h"

namespace scalescope {

struct CalibrationLabOptions {
    std::vector<std::string> calibrationTexts; // readCalibrationTexts: one text per line
    std::vector<std::string> evalTexts;        // empty: no clip shares and no end-to-end SQNR
    // Sample counts to look at; empty: 8, 16, 32, ... below the set size. The full set is always
    // added, and sizes at or above it are dropped.
    std::vector<int64_t> sizes;
    int orders = 5;                            // sample orders, order 0 = file order
};

CalibrationLabResult runCalibrationLab(const std::string& floatDir, const CalibrationLabOptions& options,
                                       const Progress& progress = {});

// What writes the checkpoint a size stands for: channel weights, static per-tensor activations
// calibrated on the first n texts in file order (order 0's scales after n), float32 scales.
QuantizeOptions calibratedQuantizeOptions(const std::vector<std::string>& calibrationTexts, int64_t n);

constexpr uint64_t kResampleSeed = 1000;

// The sample order k (0: 0, 1, ..., count - 1).
std::vector<std::size_t> calibrationSampleOrder(std::size_t count, int order);

} // namespace scalescope
