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

namespace scalescope {

struct CalibrationLabOptions {
    std::vector<std::string> calibrationTexts; // readCalibrationTexts: one text per line
    std::vector<std::string> evalTexts;        // empty: no clip shares and no end-to-end SQNR
    // Sample counts to look at; empty: 8, 16, 32, ... below the set size. The full set is always
    // added, and sizes at or above it are dropped.
    std::vector<int64_t> sizes;
    int orders = 5;                            // sample orders, order 0 = file order
};

// One Linear after n calibration texts, per order.
struct CalibrationSizeScales {
    int64_t n = 0;
    std::vector<float> scales;                 // per order: scaleForAmax(max of the first n amax)
    std::vector<double> ratioToFull;           // per order: scale / the full set's scale
    // Per order, over the evaluation texts' real tokens (empty without them): the share of tokens
    // with at least one element that clips under the scale (fp8::clipsE4M3), and of elements.
    std::vector<double> clipTokenShare;
    std::vector<double> clipElementShare;
};

struct CalibrationLinear {
    std::string module;
    std::string label;                         // LayoutLinear::shortLabel ("L3.ffn.in")
    int layer = -1;
    float fullScale = 0;                       // the scale after the whole set (any order)
    std::vector<CalibrationSizeScales> bySize; // in the order of CalibrationLabResult::sizes
    // Per order: the smallest n whose scale equals fullScale (1..calibrationSamples).
    std::vector<int64_t> convergedAt;
    int64_t evalTokens = 0, evalElements = 0;  // what the clip shares divide by
};

// Final logits (every output of the head, all evaluation texts) of the model quantized with the
// scales after n texts (channel weights, static per-tensor activations), against the float model.
struct CalibrationEndToEnd {
    int64_t n = 0;
    std::vector<double> sqnrDb;                // per order
};

struct CalibrationLabResult {
    int64_t calibrationSamples = 0, evalSamples = 0;
    std::vector<int64_t> sizes;                // ascending, the last is the full set
    int orders = 0;
    std::vector<CalibrationLinear> linears;    // the Linears quantize gives an input_scale, in execution order
    std::vector<CalibrationEndToEnd> endToEnd; // per size; empty without evaluation texts
    // The run-to-run spread of the full set's result. Every order of the full set gives the same
    // scales, so the spread is that of calibrating on another draw of as many samples: `orders`
    // bootstrap draws of the set (N texts with replacement, std::mt19937_64 seeded with
    // kResampleSeed + k), each quantized and measured like a size; the spread is the range of the
    // SQNR over the full set and those draws. spreadBasis says it in words.
    std::vector<double> resampledSqnrDb;       // per draw
    double spreadDb = 0;
    std::string spreadBasis;
    // The smallest size whose SQNR in every order is at least the full set's minus the spread;
    // without evaluation texts, the smallest size whose scales equal the full set's in every order.
    int64_t suggestedSize = 0;
    std::string sentence;                      // says the suggestion, with its numbers
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
