#pragma once
// Sequence classification: texts (or pairs) through a classifier on both sides of a RunPair; each
// side's logits, probabilities and label, whether the label flips, and KL(reference || run).
// config.json's problem type decides the probabilities: a softmax over the labels (single-label),
// a sigmoid per label (multi-label), a sigmoid of the raw score (regression, a reranker's one label).
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
    int64_t labelId = 0; // the most probable label
    std::string label;   // id2label[labelId], LABEL_<i> when config.json names none
};

struct ClassifiedInput {
    SequenceInput input;
    std::vector<int64_t> inputIds;
    bool truncated = false;
    ClassSide run, reference;
    // The sides decide differently: another label (single-label), another set of labels above 0.5
    // (multi-label), the score on the other side of 0 (a score): the final outputs' agreement rule.
    bool flip = false;
    double kl = 0; // KL(reference || run), natural log; multi-label and scores: the Bernoulli KLs summed
};

struct ClassifyResult {
    ClassificationProblem problem = ClassificationProblem::SingleLabel;
    std::vector<std::string> labels;
    std::vector<ClassifiedInput> inputs;
    RunSettings run;
    std::vector<std::string> notes;
    double runMs = 0;
};

// One side's probabilities, label and name from its logits, as the problem type says.
ClassSide classSide(const std::vector<float>& logits, ClassificationProblem problem,
                    const std::vector<std::string>& labels);
// KL(reference || run) of the two sides' probabilities, natural log, as ClassifiedInput::kl says.
double classificationKl(const ClassSide& reference, const ClassSide& run, ClassificationProblem problem);
// Whether the two sides decide differently (ClassifiedInput::flip).
bool classificationFlips(const ClassSide& reference, const ClassSide& run, ClassificationProblem problem);

// Throws scalescope::Error when the model is not a sequence classifier (naming its architecture),
// when there is no input, or when a run is not finite.
ClassifyResult classifyTexts(InferenceBackend& run, InferenceBackend* reference, const std::vector<SequenceInput>& inputs,
                             const RunPair& runs, const Progress& progress = {});

} // namespace scalescope
