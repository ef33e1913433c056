#pragma once
// Sequence classification: texts (or pairs) through a classifier on both sides of a RunPair; each
// side's logits, probabilities and label, whether the label flips, and KL(reference || run), as
// analysis/task_metrics computes them: config.json's problem type decides the probabilities (a
// softmax over the labels, a sigmoid per label, or the raw score for regression and a reranker's one
// label, which has no KL).
#include <optional>
#include <string>
#include <vector>

#include "common/progress.h"
#include "model/inference_backend.h"
#include "model/run_settings.h"
#include "tasks/sequence_runs.h"

namespace scalescope {

struct ClassSide {
    std::vector<float> logits;
    std::vector<double> probabilities;
    int64_t labelId = 0; // the largest logit
    std::string label;   // id2label[labelId], LABEL_<i> when config.json names none
};

struct ClassifiedInput {
    SequenceInput input;
    std::vector<int64_t> inputIds;
    bool truncated = false;
    ClassSide run, reference;
    bool flip = false;         // the two sides' labels differ
    std::optional<double> kl;  // KL(reference || run), nats; none for a score (regression, reranker)
};

struct ClassifyResult {
    ClassificationProblem problem = ClassificationProblem::SingleLabel;
    std::vector<std::string> labels;
    std::vector<ClassifiedInput> inputs;
    std::size_t flips = 0;
    std::optional<double> meanKl;
    RunSettings run;
    std::vector<std::string> notes;
    double runMs = 0;
};

// Throws scalescope::Error when the model is not a sequence classifier (naming its architecture),
// when there is no input, or when a run is not finite.
ClassifyResult classifyTexts(InferenceBackend& run, InferenceBackend* reference, const std::vector<SequenceInput>& inputs,
                             const RunPair& runs, const Progress& progress = {});

} // namespace scalescope
