#include "tasks/classify.h"


#include "common/error.h"
#include "model/checkpoint.h"
#include "analysis/task_metrics.h"

namespace scalescope {
namespace {

std::vector<double> asDoubles(const std::vector<float>& values) { return {values.begin(), values.end()}; }

ClassSide side(const std::vector<float>& logits, std::vector<double> probabilities, std::size_t label,
               const std::vector<std::string>& labels)
{
    ClassSide out;
    out.logits = logits;
    out.probabilities = std::move(probabilities);
    out.labelId = static_cast<int64_t>(label);
    out.label = label < labels.size() ? labels[label] : "LABEL_" + std::to_string(label);
    return out;
}

} // namespace

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
    std::vector<std::vector<double>> runLogits, referenceLogits;
    for (std::size_t i = 0; i < rows.run.size(); ++i) {
        runLogits.push_back(asDoubles(rows.run[i]));
        referenceLogits.push_back(asDoubles(rows.reference[i]));
    }
    const ClassificationMetrics metrics = classificationMetrics(runLogits, referenceLogits, result.problem);
    for (std::size_t i = 0; i < result.inputs.size(); ++i) {
        ClassifiedInput& item = result.inputs[i];
        const ClassifiedSides& sides = metrics.inputs[i];
        item.run = side(rows.run[i], sides.probabilities, sides.label, result.labels);
        item.reference = side(rows.reference[i], sides.referenceProbabilities, sides.referenceLabel, result.labels);
        item.flip = sides.flip;
        item.kl = sides.kl;
    }
    result.flips = metrics.flips;
    result.meanKl = metrics.meanKl;
    result.runMs = rows.runMs;
    return result;
}

} // namespace scalescope
