#include "tasks/classify.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "model/checkpoint.h"
#include "tasks/fill_mask.h"

namespace scalescope {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Probabilities are clamped away from 0 and 1 so that a saturated side gives a large but finite KL.
double clampedProbability(double p) { return std::clamp(p, 1e-12, 1.0 - 1e-12); }

} // namespace

ClassSide classSide(const std::vector<float>& logits, ClassificationProblem problem, const std::vector<std::string>& labels)
{
    ClassSide side;
    side.logits = logits;
    if (problem == ClassificationProblem::SingleLabel) {
        const std::vector<float> p = softmax(logits.data(), logits.size());
        side.probabilities.assign(p.begin(), p.end());
    } else {
        for (float logit : logits)
            side.probabilities.push_back(sigmoid(logit));
    }
    std::size_t best = 0;
    for (std::size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best])
            best = i;
    side.labelId = static_cast<int64_t>(best);
    side.label = best < labels.size() ? labels[best] : "LABEL_" + std::to_string(best);
    return side;
}

double classificationKl(const ClassSide& reference, const ClassSide& run, ClassificationProblem problem)
{
    double kl = 0;
    const std::size_t n = std::min(reference.probabilities.size(), run.probabilities.size());
    for (std::size_t i = 0; i < n; ++i) {
        const double p = clampedProbability(reference.probabilities[i]);
        const double q = clampedProbability(run.probabilities[i]);
        kl += p * std::log(p / q);
        if (problem != ClassificationProblem::SingleLabel) // the label's "no" outcome too
            kl += (1 - p) * std::log((1 - p) / (1 - q));
    }
    return std::max(kl, 0.0); // rounding below 0 is 0
}

bool classificationFlips(const ClassSide& reference, const ClassSide& run, ClassificationProblem problem)
{
    if (problem == ClassificationProblem::SingleLabel)
        return reference.labelId != run.labelId;
    for (std::size_t i = 0; i < reference.logits.size() && i < run.logits.size(); ++i)
        if ((reference.logits[i] > 0.0f) != (run.logits[i] > 0.0f))
            return true;
    return false;
}

ClassifyResult classifyTexts(InferenceBackend& run, InferenceBackend* reference, const std::vector<SequenceInput>& inputs,
                             const RunPair& runs, const Progress& progress)
{
    requireHead(run, HeadKind::SequenceClassification, "Classification");
    if (inputs.empty())
        throw Error("There is no text to classify.");
    const Checkpoint& checkpoint = run.checkpoint();
    const ModelConfig& config = checkpoint.config();
    ClassifyResult result;
    result.problem = config.problem;
    result.labels = config.labels;
    result.run = runs.run;

    const Tokenizer& tokenizer = checkpoint.tokenizer();
    std::vector<Encoding> encodings;
    std::size_t truncated = 0;
    for (const SequenceInput& input : inputs) {
        SequenceEncoding encoded = encodeSequence(tokenizer, input, checkpoint.layout().maxSequenceLength());
        ClassifiedInput item;
        item.input = input;
        item.inputIds = encoded.encoding.ids;
        item.truncated = encoded.truncated;
        truncated += encoded.truncated ? 1 : 0;
        result.inputs.push_back(std::move(item));
        encodings.push_back(std::move(encoded.encoding));
    }
    if (truncated > 0)
        result.notes.push_back(std::to_string(truncated) + " of " + std::to_string(inputs.size()) +
                               " inputs were cut to the model's " +
                               std::to_string(checkpoint.layout().maxSequenceLength()) + " tokens.");

    const std::string& output = checkpoint.layout().headDefinition().outputs.at(0).name;
    const SequenceRows rows = runSequenceRows(run, reference, runs, encodings, output, progress);
    for (std::size_t i = 0; i < result.inputs.size(); ++i) {
        ClassifiedInput& item = result.inputs[i];
        item.run = classSide(rows.run[i], result.problem, result.labels);
        item.reference = classSide(rows.reference[i], result.problem, result.labels);
        item.flip = classificationFlips(item.reference, item.run, result.problem);
        item.kl = classificationKl(item.reference, item.run, result.problem);
    }
    result.runMs = rows.runMs;
    return result;
}

} // namespace scalescope
