#pragma once
// Extractive QA with a model: windows of the context, one batched forward, n-best post-processing.
#include <string>
#include <vector>

#include "model/inference_backend.h"
#include "model/run_settings.h"
#include "tasks/question_answering.h"

namespace scalescope {

struct QaResult {
    std::vector<QaWindow> windows;
    std::vector<std::vector<float>> startLogits; // per window, one per token
    std::vector<std::vector<float>> endLogits;
    std::vector<QaAnswer> answers;
    double elapsedMs = 0;                        // forward time
    std::vector<ModuleNonFinite> nonFinite;      // over all windows (empty when every output was finite)
};

// The model runs as `run` says (its device is the model's own). Throws scalescope::Error when the
// model is not a QA model or the options are invalid, and when a module's output is inf or NaN
// (naming the first such module: no answer can be ranked then).
QaResult answerQuestion(InferenceBackend& model, const std::string& question, const std::string& context,
                        const RunSettings& run, const QaOptions& options, const Progress& progress = {});

} // namespace scalescope
