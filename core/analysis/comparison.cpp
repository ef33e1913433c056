#include "analysis/comparison.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "analysis/squad_metric.h"
#include "common/error.h"
#include "tasks/fill_mask.h"

namespace scalescope {
namespace {

int layerOf(const std::string& name)
{
    const std::string prefix = "roberta.encoder.layer.";
    if (name.rfind(prefix, 0) != 0)
        return -1;
    return std::atoi(name.c_str() + prefix.size());
}

CapturePointMetrics describePoint(const std::string& name)
{
    CapturePointMetrics point;
    point.name = name;
    const std::size_t dot = name.rfind('.');
    point.module = name.substr(0, dot);
    const std::string suffix = name.substr(dot + 1);
    point.layer = layerOf(name);
    if (name == "roberta.embeddings.output")
        point.kind = CaptureKind::Embeddings;
    else if (suffix == "input")
        point.kind = CaptureKind::LinearInput;
    else if (point.layer >= 0 && name == "roberta.encoder.layer." + std::to_string(point.layer) + ".output")
        point.kind = CaptureKind::LayerOutput;
    else
        point.kind = CaptureKind::LinearOutput;
    if (point.kind == CaptureKind::LayerOutput)
        point.module = name.substr(0, name.size() - std::string(".output").size());
    return point;
}

// Metrics over real tokens only: padded rows of a batch would compare padding with padding.
// x is a run's capture (row-major, `shape`), reference the stored one.
ErrorMetrics metricsOverRealTokens(const std::vector<int64_t>& shape, const float* x, const FloatTensor& reference,
                                   const std::vector<std::size_t>& lengths)
{
    ErrorAccumulator accumulator;
    // [batch, seq, ...] with batch == lengths.size(): take the first lengths[b] rows of each item.
    const std::size_t total = reference.values.size();
    if (shape.size() >= 2 && static_cast<std::size_t>(shape[0]) == lengths.size()) {
        const std::size_t seq = static_cast<std::size_t>(shape[1]);
        const std::size_t rowSize = seq == 0 ? 0 : total / lengths.size() / seq;
        for (std::size_t b = 0; b < lengths.size(); ++b) {
            const std::size_t offset = b * seq * rowSize;
            accumulator.add(x + offset, reference.values.data() + offset, lengths[b] * rowSize);
        }
    } else {
        accumulator.add(x, reference.values.data(), total);
    }
    return accumulator.result();
}

ErrorMetrics metricsOverRealTokens(const FloatTensor& x, const FloatTensor& reference,
                                   const std::vector<std::size_t>& lengths)
{
    if (x.values.size() != reference.values.size())
        throw Error("A capture point differs in size between the run and the reference.");
    return metricsOverRealTokens(x.shape, x.values.data(), reference, lengths);
}

const FloatTensor& findOutput(const ForwardResult& result, const std::string& name)
{
    for (const NamedTensor& t : result.outputs)
        if (t.name == name)
            return t.tensor;
    throw Error("The forward pass produced no \"" + name + "\".");
}

// Splits [batch, seq] logits into per-window vectors of each window's length.
std::vector<std::vector<float>> perWindow(const FloatTensor& logits, const std::vector<std::size_t>& lengths)
{
    std::vector<std::vector<float>> out;
    const std::size_t seq = static_cast<std::size_t>(logits.shape.at(1));
    for (std::size_t b = 0; b < lengths.size(); ++b)
        out.emplace_back(logits.values.begin() + b * seq, logits.values.begin() + b * seq + lengths[b]);
    return out;
}

std::vector<std::pair<int64_t, float>> topK(const std::vector<float>& probabilities, int k)
{
    std::vector<int64_t> order(probabilities.size());
    std::iota(order.begin(), order.end(), 0);
    const std::size_t count = std::min<std::size_t>(static_cast<std::size_t>(k), order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                      [&](int64_t a, int64_t b) {
                          // NaN ranks last: compared as it is, it breaks the strict weak order sorting needs.
                          const float pa = std::isnan(probabilities[static_cast<std::size_t>(a)]) ? -INFINITY : probabilities[static_cast<std::size_t>(a)];
                          const float pb = std::isnan(probabilities[static_cast<std::size_t>(b)]) ? -INFINITY : probabilities[static_cast<std::size_t>(b)];
                          return pa != pb ? pa > pb : a < b;
                      });
    std::vector<std::pair<int64_t, float>> out;
    for (std::size_t i = 0; i < count; ++i)
        out.emplace_back(order[i], probabilities[static_cast<std::size_t>(order[i])]);
    return out;
}

std::size_t elementCount(const std::vector<int64_t>& shape)
{
    std::size_t count = 1;
    for (int64_t dim : shape)
        count *= static_cast<std::size_t>(dim);
    return count;
}

bool allFinite(const float* values, std::size_t count)
{
    for (std::size_t i = 0; i < count; ++i)
        if (!std::isfinite(values[i]))
            return false;
    return true;
}

// Names where non-finite values first appear, so that a NaN run is explained, not just refused.
std::string nonFiniteNote(const ComparisonResult& result)
{
    auto side = [](const std::string& label, bool outputs, const std::string& first) -> std::string {
        if (!outputs && first.empty())
            return {};
        return "the " + label + (outputs ? " has NaN or infinite outputs" : " has NaN or infinite values") +
               (first.empty() ? std::string() : " (first at " + first + ")");
    };
    const std::string run = side(result.runLabel + " run", result.runOutputsNonFinite, result.runFirstNonFinite);
    const std::string reference =
        side(result.referenceLabel, result.referenceOutputsNonFinite, result.referenceFirstNonFinite);
    if (run.empty() && reference.empty())
        return {};
    std::string note = run.empty() ? reference : reference.empty() ? run : run + ", and " + reference;
    note[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(note[0])));
    if (result.runOutputsNonFinite || result.referenceOutputsNonFinite)
        note += "; agreement of the final outputs is not claimed";
    return note + ".";
}

} // namespace

const char* captureKindName(CaptureKind kind)
{
    switch (kind) {
    case CaptureKind::Embeddings:
        return "embeddings";
    case CaptureKind::LinearInput:
        return "linear-input";
    case CaptureKind::LinearOutput:
        return "linear-output";
    case CaptureKind::LayerOutput:
        return "layer-output";
    }
    return "?";
}

ComparisonResult compareRuns(InferenceBackend& run, InferenceBackend* reference, const ComparisonInput& input,
                             const Progress& progress)
{
    InferenceBackend& referenceModel = reference ? *reference : run;
    const ModelConfig& a = run.config();
    const ModelConfig& b = referenceModel.config();
    if (a.architecture != b.architecture || a.hiddenSize != b.hiddenSize || a.numLayers != b.numLayers ||
        a.vocabSize != b.vocabSize || a.intermediateSize != b.intermediateSize)
        throw Error("The reference " + referenceModel.checkpoint().directory() + " does not match " +
                    run.checkpoint().directory() + " (architecture or sizes differ).");

    ComparisonResult result;
    result.runLabel = runModeName(input.runMode);
    result.referenceIsStandIn = reference == nullptr;
    result.referenceLabel = reference ? "reference (" + reference->checkpoint().directory() + ")" : "dequant";

    // Build the batch once; both runs see the same ids.
    EncoderInputs inputs;
    std::vector<QaWindow> windows;
    Encoding maskedText;
    const bool isQa = !input.question.empty() || !input.context.empty();
    bool isFillMask = false;
    if (isQa) {
        if (a.architecture != Architecture::RobertaForQuestionAnswering)
            throw Error("--question/--context need a RobertaForQuestionAnswering checkpoint; " +
                        run.checkpoint().directory() + " is " + architectureName(a.architecture) + ".");
        windows = buildQaWindows(run.checkpoint().tokenizer(), input.question, input.context, input.qaOptions);
        for (const QaWindow& w : windows)
            inputs.inputIds.push_back(w.encoding.ids);
    } else if (!input.text.empty()) {
        const BpeTokenizer& tokenizer = run.checkpoint().tokenizer();
        maskedText = tokenizer.encode(input.text);
        inputs.inputIds.push_back(maskedText.ids);
        isFillMask = a.architecture == Architecture::RobertaForMaskedLM &&
                     std::count(maskedText.ids.begin(), maskedText.ids.end(), tokenizer.maskId()) > 0;
    } else if (!input.inputIds.empty()) {
        inputs.inputIds = input.inputIds;
    } else {
        throw Error("Nothing to compare: give a question and context, a text, or input ids.");
    }
    std::vector<std::size_t> lengths;
    for (const auto& row : inputs.inputIds)
        lengths.push_back(row.size());

    ForwardOptions runOptions;
    runOptions.mode = input.runMode;
    runOptions.capture.all = true;
    runOptions.activationStatistics = true;
    ForwardOptions referenceOptions;
    referenceOptions.mode = input.referenceMode;
    referenceOptions.capture.all = true;

    Progress first = progress;
    first.callback = [&](double f, const std::string& stage) { progress.report(0.5 * f, "Reference: " + stage); };
    ForwardResult referenceResult = referenceModel.forward(inputs, referenceOptions, first);

    // The run is measured against the stored reference point by point as it computes, so its
    // captures are never copied or kept.
    std::size_t next = 0;
    runOptions.onCapture = [&](const std::string& name, const std::vector<int64_t>& shape, const float* data) {
        if (next >= referenceResult.captures.size() || referenceResult.captures[next].name != name)
            throw Error("The run and the reference recorded different capture points.");
        const FloatTensor& r = referenceResult.captures[next++].tensor;
        if (r.shape != shape)
            throw Error("Capture point \"" + name + "\" differs in shape between the run and the reference.");
        if (result.runFirstNonFinite.empty() && !allFinite(data, elementCount(shape)))
            result.runFirstNonFinite = name;
        if (result.referenceFirstNonFinite.empty() && !allFinite(r.values.data(), r.values.size()))
            result.referenceFirstNonFinite = name;
        CapturePointMetrics point = describePoint(name);
        point.metrics = metricsOverRealTokens(shape, data, r, lengths);
        result.points.push_back(std::move(point));
    };
    Progress second = progress;
    second.callback = [&](double f, const std::string& stage) { progress.report(0.5 + 0.5 * f, "FP8 run: " + stage); };
    ForwardResult runResult = run.forward(inputs, runOptions, second);
    result.runMs = runResult.elapsedMs;
    result.referenceMs = referenceResult.elapsedMs;
    if (next != referenceResult.captures.size())
        throw Error("The run and the reference recorded different capture points.");
    result.activations = std::move(runResult.activationStatistics);
    result.findings = diagnoseActivations(result.activations, run.linears());
    for (const NamedTensor& output : runResult.outputs)
        result.runOutputsNonFinite = result.runOutputsNonFinite || !allFinite(output.tensor.values.data(), output.tensor.values.size());
    for (const NamedTensor& output : referenceResult.outputs)
        result.referenceOutputsNonFinite =
            result.referenceOutputsNonFinite || !allFinite(output.tensor.values.data(), output.tensor.values.size());
    result.nonFiniteNote = nonFiniteNote(result);
    const bool outputsFinite = !result.runOutputsNonFinite && !result.referenceOutputsNonFinite;

    if (a.architecture == Architecture::RobertaForQuestionAnswering) {
        const FloatTensor& runStart = findOutput(runResult, "start_logits");
        const FloatTensor& runEnd = findOutput(runResult, "end_logits");
        const FloatTensor& refStart = findOutput(referenceResult, "start_logits");
        const FloatTensor& refEnd = findOutput(referenceResult, "end_logits");
        QaAgreement qa;
        qa.startLogits = metricsOverRealTokens(runStart, refStart, lengths);
        qa.endLogits = metricsOverRealTokens(runEnd, refEnd, lengths);
        ErrorAccumulator both;
        for (std::size_t w = 0; w < lengths.size(); ++w) {
            const std::size_t seq = static_cast<std::size_t>(runStart.shape.at(1));
            both.add(runStart.values.data() + w * seq, refStart.values.data() + w * seq, lengths[w]);
            both.add(runEnd.values.data() + w * seq, refEnd.values.data() + w * seq, lengths[w]);
        }
        result.finalLogits = both.result();
        if (isQa && outputsFinite) {
            QaOptions options = input.qaOptions;
            options.topK = 1;
            qa.windows = windows;
            qa.runStartLogits = perWindow(runStart, lengths);
            qa.runEndLogits = perWindow(runEnd, lengths);
            qa.referenceStartLogits = perWindow(refStart, lengths);
            qa.referenceEndLogits = perWindow(refEnd, lengths);
            const auto runAnswers = postprocessQa(windows, qa.runStartLogits, qa.runEndLogits, input.context, options);
            const auto refAnswers =
                postprocessQa(windows, qa.referenceStartLogits, qa.referenceEndLogits, input.context, options);
            if (!runAnswers.empty())
                qa.runAnswer = runAnswers.front();
            if (!refAnswers.empty())
                qa.referenceAnswer = refAnswers.front();
            qa.sameBestAnswer = qa.runAnswer.isNull == qa.referenceAnswer.isNull &&
                                qa.runAnswer.start == qa.referenceAnswer.start && qa.runAnswer.end == qa.referenceAnswer.end;
            qa.answerF1 = f1Score(qa.runAnswer.text, qa.referenceAnswer.text);
        }
        result.qa = qa;
    } else {
        const FloatTensor& runLogits = findOutput(runResult, "logits");
        const FloatTensor& refLogits = findOutput(referenceResult, "logits");
        result.finalLogits = metricsOverRealTokens(runLogits, refLogits, lengths);
        if (isFillMask) {
            FillMaskAgreement agreement;
            agreement.logits = result.finalLogits;
            agreement.encoding = maskedText;
            const std::size_t seq = static_cast<std::size_t>(runLogits.shape.at(1));
            const std::size_t vocab = static_cast<std::size_t>(runLogits.shape.at(2));
            const int64_t maskId = run.checkpoint().tokenizer().maskId();
            for (std::size_t t = 0; t < maskedText.ids.size() && t < seq; ++t) {
                if (maskedText.ids[t] != maskId)
                    continue;
                FillMaskAgreement::Mask mask;
                mask.position = static_cast<int>(t);
                mask.referenceDistribution = softmax(refLogits.values.data() + t * vocab, vocab);
                mask.runDistribution = softmax(runLogits.values.data() + t * vocab, vocab);
                mask.klDivergence = klDivergence(mask.referenceDistribution, mask.runDistribution);
                mask.runTop = topK(mask.runDistribution, input.topK);
                mask.referenceTop = topK(mask.referenceDistribution, input.topK);
                mask.top1Agrees = outputsFinite && !mask.runTop.empty() &&
                                  mask.runTop.front().first == mask.referenceTop.front().first;
                std::set<int64_t> referenceIds;
                for (const auto& [id, probability] : mask.referenceTop)
                    referenceIds.insert(id);
                int shared = 0;
                for (const auto& [id, probability] : mask.runTop)
                    shared += referenceIds.count(id) ? 1 : 0;
                mask.topKOverlap = mask.runTop.empty() ? 0 : double(shared) / double(mask.runTop.size());
                agreement.masks.push_back(std::move(mask));
            }
            result.fillMask = std::move(agreement);
        }
    }
    // Numbers computed while a checkpoint file was rewritten in place are not to be reported.
    run.checkpoint().tensors().checkUnchanged();
    referenceModel.checkpoint().tensors().checkUnchanged();
    progress.report(1.0, "Compared");
    return result;
}

} // namespace scalescope
