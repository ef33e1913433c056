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
};

std::vector<Finding> diagnoseCheckpoint(const Checkpoint& checkpoint,
                                        const std::vector<LinearScaleStatistics>& statistics,
                                        const DiagnosticsOptions& options = {});

// After an fp8 run with activation statistics: static input scales that clip too much.
std::vector<Finding> diagnoseActivations(const std::vector<ActivationStatistics>& activations,
                                         const std::vector<LinearInfo>& linears,
                                         const DiagnosticsOptions& options = {});

} // namespace scalescope
