#pragma once
// What the calibration lab (engine/calibration_lab.h, runCalibrationLab) finds, as plain values:
// the static input scales after n calibration texts per order, the evaluation tokens they clip,
// the logits SQNR of each size quantized and the suggested size. Here rather than beside the lab
// so that what reads a result (its charts, the CLI's JSON, the Calibration view) needs no engine
// header.
#include <cstdint>
#include <string>
#include <vector>

namespace scalescope {

// One Linear after n calibration texts, per order.
struct CalibrationSizeScales {
    int64_t n = 0;
    std::vector<float> scales;                 // per order: scaleForAmax(max of the first n amax), engine/quantize.h
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
    // kResampleSeed + k, engine/calibration_lab.h), each quantized and measured like a size; the
    // spread is the range of the SQNR over the full set and those draws. spreadBasis says it in words.
    std::vector<double> resampledSqnrDb;       // per draw
    double spreadDb = 0;
    std::string spreadBasis;
    // The smallest size whose SQNR in every order is at least the full set's minus the spread;
    // without evaluation texts, the smallest size whose scales equal the full set's in every order.
    int64_t suggestedSize = 0;
    std::string sentence;                      // says the suggestion, with its numbers
};

} // namespace scalescope
