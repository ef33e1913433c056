#include "tasks/sequence_runs.h"

#include <algorithm>

#include "common/error.h"
#include "tasks/compare_runs.h"
#include "tasks/final_outputs.h"
#include "tasks/non_finite.h"

namespace scalescope {
namespace {

Encoding prefix(const Encoding& encoding, std::size_t count)
{
    Encoding cut = encoding;
    count = std::min(count, encoding.ids.size());
    cut.ids.resize(count);
    cut.offsets.resize(std::min(count, cut.offsets.size()));
    cut.sequenceIds.resize(std::min(count, cut.sequenceIds.size()));
    cut.typeIds.resize(std::min(count, cut.typeIds.size()));
    return cut;
}

// The single-text sequence around a token-level encoding, built the way the tokenizer builds
// encode(text): its specials at both ends.
Encoding assembleSingle(const Tokenizer& tokenizer, const Encoding& tokens)
{
    Encoding sequence;
    sequence.ids.push_back(tokenizer.clsId());
    sequence.offsets.emplace_back(0, 0);
    sequence.sequenceIds.push_back(-1);
    for (std::size_t i = 0; i < tokens.ids.size(); ++i) {
        sequence.ids.push_back(tokens.ids[i]);
        sequence.offsets.push_back(i < tokens.offsets.size() ? tokens.offsets[i] : std::make_pair(0, 0));
        sequence.sequenceIds.push_back(0);
    }
    sequence.ids.push_back(tokenizer.sepId());
    sequence.offsets.emplace_back(0, 0);
    sequence.sequenceIds.push_back(-1);
    sequence.typeIds.assign(sequence.ids.size(), 0);
    return sequence;
}

} // namespace

SequenceEncoding encodeSequence(const Tokenizer& tokenizer, const SequenceInput& input, int64_t maxTokens)
{
    SequenceEncoding result;
    if (!input.pair) {
        const int64_t room = maxTokens - tokenizer.specialTokensInSingle();
        if (room < 1)
            throw Error("A sequence of at most " + std::to_string(maxTokens) + " tokens leaves no room for text.");
        const Encoding tokens = tokenizer.encodeText(input.text);
        result.truncated = static_cast<int64_t>(tokens.ids.size()) > room;
        result.encoding = result.truncated ? assembleSingle(tokenizer, prefix(tokens, static_cast<std::size_t>(room)))
                                           : tokenizer.encode(input.text);
        return result;
    }
    const int64_t room = maxTokens - tokenizer.specialTokensInPair();
    if (room < 2)
        throw Error("A pair of at most " + std::to_string(maxTokens) + " tokens leaves no room for both texts.");
    const Encoding first = tokenizer.encodeText(input.text);
    const Encoding second = tokenizer.encodeText(*input.pair);
    std::size_t a = first.ids.size(), b = second.ids.size();
    result.truncated = static_cast<int64_t>(a + b) > room;
    // longest_first: one token at a time from the longer text; the same as cutting the longer to
    // what the shorter leaves, or both to about half when both are long.
    while (static_cast<int64_t>(a + b) > room) {
        if (a > b)
            --a;
        else
            --b;
    }
    result.encoding = tokenizer.assemblePair(prefix(first, a), prefix(second, b));
    return result;
}

int64_t sequenceTokenLimit(const Checkpoint& checkpoint)
{
    const int64_t modelLimit = checkpoint.layout().maxSequenceLength();
    const int64_t maxSeqLength =
        checkpoint.layout().head() == HeadKind::Embedding ? checkpoint.config().embedding.maxSeqLength : 0;
    return maxSeqLength > 0 ? std::min(maxSeqLength, modelLimit) : modelLimit;
}

std::vector<SequenceEncoding> encodeSequenceInputs(const Checkpoint& checkpoint, const std::vector<SequenceInput>& inputs)
{
    const HeadKind head = checkpoint.layout().head();
    if (head != HeadKind::Embedding && head != HeadKind::SequenceClassification)
        throw Error("A texts file runs on a sentence embedder, a classifier or a reranker; " + checkpoint.directory() +
                    " is " + architectureName(checkpoint.config().architecture) + ".");
    if (inputs.empty())
        throw Error("There is no text to run.");
    std::vector<SequenceEncoding> encodings;
    for (const SequenceInput& input : inputs)
        encodings.push_back(encodeSequence(checkpoint.tokenizer(), input, sequenceTokenLimit(checkpoint)));
    return encodings;
}

SequenceRows runSequenceRows(InferenceBackend& run, InferenceBackend* reference, const RunPair& runs,
                             const std::vector<Encoding>& encodings, const std::string& output,
                             const Progress& progress, std::size_t batchSize)
{
    InferenceBackend& referenceModel = reference ? *reference : run;
    checkModelsMatch(run, referenceModel);
    SequenceRows rows;
    const ForwardOptions runOptions = forwardOptions(runs.run);
    const ForwardOptions referenceOptions = forwardOptions(runs.reference);
    batchSize = std::max<std::size_t>(batchSize, 1);
    for (std::size_t first = 0; first < encodings.size(); first += batchSize) {
        progress.throwIfCancelled();
        progress.report(double(first) / double(encodings.size()), "Running");
        const std::size_t last = std::min(encodings.size(), first + batchSize);
        EncoderInputs inputs;
        for (std::size_t i = first; i < last; ++i)
            inputs.addSequence(encodings[i]);
        const ForwardResult runResult = run.forward(inputs, runOptions);
        const ForwardResult referenceResult = referenceModel.forward(inputs, referenceOptions);
        rows.runMs += runResult.elapsedMs;
        rows.referenceMs += referenceResult.elapsedMs;
        mergeNonFinite(rows.runNonFinite, runResult.nonFinite);
        for (const auto& [result, into] : {std::pair{&runResult, &rows.run}, std::pair{&referenceResult, &rows.reference}}) {
            const FloatTensor& values = result->output(output);
            if (values.shape.size() != 2 || values.shape[0] != static_cast<int64_t>(last - first))
                throw Error("The " + output + " output of " + run.checkpoint().directory() + " is not one row per input.");
            const std::size_t width = static_cast<std::size_t>(values.shape[1]);
            for (std::size_t row = 0; row < last - first; ++row)
                into->emplace_back(values.values.begin() + row * width, values.values.begin() + (row + 1) * width);
        }
        if (!outputsFinite(runResult))
            throw Error("The " + runs.run.label() + " run of " + run.checkpoint().directory() + " is not finite: " +
                        describeNonFinite(rows.runNonFinite) + ".");
        if (!outputsFinite(referenceResult))
            throw Error("The reference run of " + referenceModel.checkpoint().directory() + " is not finite.");
    }
    progress.report(1.0, "Running");
    return rows;
}

void requireHead(const InferenceBackend& model, HeadKind head, const std::string& task)
{
    if (model.checkpoint().layout().head() != head)
        throw Error(wrongHeadSentence(task + " needs", head, model.checkpoint().directory(), model.config().architecture));
}

} // namespace scalescope
