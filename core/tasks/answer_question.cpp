#include "tasks/answer_question.h"

#include <algorithm>

#include "common/error.h"
#include "tasks/non_finite.h"

namespace scalescope {

QaResult answerQuestion(InferenceBackend& model, const std::string& question, const std::string& context,
                        const RunSettings& run, const QaOptions& options, const Progress& progress)
{
    const ModelConfig& config = model.config();
    if (!model.checkpoint().layout().isQuestionAnswering())
        throw Error(wrongHeadSentence("Question answering needs", HeadKind::QuestionAnswering,
                                      model.checkpoint().directory(), config.architecture));
    const Tokenizer& tokenizer = model.checkpoint().tokenizer();

    // Windows are only as long as the text needs: a short text runs on a model shorter than
    // maxSeqLen, so the model's own limit is checked per window by the forward, not here.
    validateQaOptions(options, model.checkpoint().layout().specialTokensInPair());
    QaResult result;
    result.windows = buildQaWindows(tokenizer, question, context, options);
    requireWindowsFit(result.windows, options, model.checkpoint().layout().specialTokensInPair(),
                      model.checkpoint().layout().maxSequenceLength());

    // Windows run in batches: one batch keeps the matmuls large, a bounded batch keeps memory flat
    // for very long contexts.
    constexpr std::size_t kWindowsPerBatch = 8;
    const ForwardOptions runOptions = forwardOptions(run);
    for (std::size_t first = 0; first < result.windows.size(); first += kWindowsPerBatch) {
        progress.throwIfCancelled();
        const std::size_t last = std::min(result.windows.size(), first + kWindowsPerBatch);
        EncoderInputs inputs;
        for (std::size_t w = first; w < last; ++w)
            inputs.addSequence(result.windows[w].encoding);
        ForwardResult forward = model.forward(inputs, runOptions);
        const FloatTensor& start = forward.outputs.at(0).tensor; // [batch, seq]
        const FloatTensor& end = forward.outputs.at(1).tensor;
        const std::size_t seq = static_cast<std::size_t>(start.shape.at(1));
        for (std::size_t w = first; w < last; ++w) {
            const std::size_t row = w - first;
            const std::size_t length = result.windows[w].encoding.ids.size();
            result.startLogits.emplace_back(start.values.begin() + row * seq, start.values.begin() + row * seq + length);
            result.endLogits.emplace_back(end.values.begin() + row * seq, end.values.begin() + row * seq + length);
        }
        result.elapsedMs += forward.elapsedMs;
        mergeNonFinite(result.nonFinite, forward.nonFinite);
        progress.report(double(last) / double(result.windows.size()), "Answering");
    }
    if (!result.nonFinite.empty())
        throw Error("The " + run.label() + " run of " + model.checkpoint().directory() +
                    " has no answer to rank: " + describeNonFinite(result.nonFinite) +
                    "; `scalescope-cli forward --json` lists every module.");
    result.answers = postprocessQa(result.windows, result.startLogits, result.endLogits, context, options);
    return result;
}

} // namespace scalescope
