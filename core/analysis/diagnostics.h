#pragma once
// Findings about a checkpoint's quantization: config/tensor disagreements, bad scales, dtype
// problems for the AIU's fp16 path, and (after a run) static scales that clip activations.
// Each finding has a severity, a stable code for tests and filters, the tensor or module it
// concerns, and one sentence of explanation and remedy.
#include <string>
#include <vector>

#include "analysis/scale_statistics.h"
#include "model/checkpoint.h"
#include "model/inference_backend.h"

namespace scalescope {

enum class Severity { Error, Warning, Info };
const char* severityName(Severity severity); // "error", "warning", "info"

struct Finding {
    Severity severity = Severity::Info;
    std::string code;     // e.g. "scale-shape"; see diagnostics.cpp for the list
    std::string subject;  // tensor or module name
    std::string message;  // one sentence: what is wrong and what to do
};

struct DiagnosticsOptions {
    double heavyWeightClippingShare = 0.01;    // warn when more weight codes than this sit at +-448
    double heavyWeightUnderflowShare = 0.25;   // warn when more weight codes than this are zero/subnormal
    double staticScaleClippingShare = 0.001;   // warn when a static input scale clips more activations
    double fp16FlushShare = 0.01;              // note module outputs with more values below half's normal range
};

std::vector<Finding> diagnoseCheckpoint(const Checkpoint& checkpoint,
                                        const std::vector<LinearScaleStatistics>& statistics,
                                        const DiagnosticsOptions& options = {});

// After an fp8 run with activation statistics: static input scales that clip too much.
std::vector<Finding> diagnoseActivations(const std::vector<ActivationStatistics>& activations,
                                         const std::vector<LinearInfo>& linears,
                                         const DiagnosticsOptions& options = {});

// After any run: module outputs against float16's limits (the AIU keeps activations in fp16).
// "fp16-activation-overflow" where |output| passed 65504 (in an fp16 run: became inf),
// "fp16-low-headroom" within a factor of 2 of it, "fp16-activation-flush" where more than
// fp16FlushShare of the non-zero outputs lie below half's smallest normal. Each names the module
// in words and says "on this input" (the run's input, which the caller shows).
std::vector<Finding> diagnoseOutputRanges(const std::vector<ModuleOutputRange>& ranges, const EncoderLayout& layout,
                                          RunMode mode, const DiagnosticsOptions& options = {});

} // namespace scalescope
