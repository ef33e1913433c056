#include "tasks/compare_runs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <numeric>
#include <set>
#include <unordered_map>

#include "analysis/capture_rows.h"
#include "analysis/scale_statistics.h"
#include "analysis/squad_metric.h"
#include "common/error.h"
#include "common/option_error.h"
#include "tasks/fill_mask.h"
#include "tasks/final_outputs.h"

namespace scalescope {
namespace {

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


// What a compare adds to the run's own findings: the checkpoint's errors (what inspect reports as
// errors, e.g. a NaN FP8 weight code, is as much a cause of a bad run as an activation finding),
// tensors the run left unused, and the first module whose output is not finite.
std::vector<Finding> checkpointAndNonFiniteFindings(const InferenceBackend& run, const ForwardResult& runResult,
                                                    const std::string& runLabel)
{
    const Checkpoint& checkpoint = run.checkpoint();
    // The checkpoint's own findings depend on its contents only: made once per open checkpoint.
    const auto fromContents = std::static_pointer_cast<const std::vector<Finding>>(
        checkpoint.derived("compare.checkpoint-findings", [&checkpoint] {
            auto kept = std::make_shared<std::vector<Finding>>();
            for (Finding& finding : diagnoseCheckpoint(checkpoint, computeScaleStatistics(checkpoint)))
                if (finding.severity == Severity::Error || finding.code == "unused-tensors")
                    kept->push_back(std::move(finding));
            return std::shared_ptr<const void>(std::move(kept));
        }));
    std::vector<Finding> findings = *fromContents;
    if (const std::string first = runResult.firstNonFinite(); !first.empty())
        findings.push_back({Severity::Error, "non-finite-output", first,
                            "The " + runLabel + " run's values first become NaN or infinite at the output of " + first +
                                " (" + std::to_string(runResult.nonFinite.front().count) +
                                " values); everything after it is computed from them."});
    return findings;
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

using PreparedInput = PreparedComparisonInput;

std::string runStageLabel(RunMode mode)
{
    return mode == RunMode::Fp16 ? "FP16 twin: " : mode == RunMode::Dequant ? "Dequant run: " : "FP8 run: ";
}

PreparedInput prepareInput(const InferenceBackend& run, const ComparisonInput& input)
{
    const ModelConfig& a = run.config();
    const EncoderLayout& layout = run.checkpoint().layout();
    PreparedInput prepared;
    const bool isQa = !input.question.empty() || !input.context.empty();
    if (isQa) {
        if (layout.head() != HeadKind::QuestionAnswering)
            throw OptionError(TaskOption::Question,
                              wrongHeadSentence("{option} need", HeadKind::QuestionAnswering,
                                                run.checkpoint().directory(), a.architecture));
        validateQaOptions(input.qaOptions, layout.specialTokensInPair());
        prepared.windows = buildQaWindows(run.checkpoint().tokenizer(), input.question, input.context, input.qaOptions);
        requireWindowsFit(prepared.windows, input.qaOptions, layout.specialTokensInPair(), layout.maxSequenceLength());
        for (const QaWindow& w : prepared.windows)
            prepared.inputs.addSequence(w.encoding);
    } else if (!input.text.empty()) {
        if (input.fillMask)
            requireMaskedLm(run);
        const Tokenizer& tokenizer = run.checkpoint().tokenizer();
        if (!input.pair.empty() && input.fillMask)
            throw Error("Fill-mask takes one text, not a pair.");
        prepared.maskedText = input.pair.empty() ? tokenizer.encode(input.text) : tokenizer.encodePair(input.text, input.pair);
        prepared.inputs.addSequence(prepared.maskedText);
        prepared.isFillMask = layout.head() == HeadKind::MaskedLM && std::count(prepared.maskedText.ids.begin(),
                                                                prepared.maskedText.ids.end(), tokenizer.maskId()) > 0;
        if (input.fillMask && !prepared.isFillMask)
            throw Error("The text has no " + tokenizer.maskToken() + " token to fill.");
    } else if (!input.inputIds.empty()) {
        prepared.inputs.inputIds = input.inputIds;
    } else if (!input.texts.empty()) {
        for (const SequenceEncoding& encoded : encodeSequenceInputs(run.checkpoint(), input.texts))
            prepared.inputs.addSequence(encoded.encoding);
    } else {
        throw Error("Nothing to compare: give a question and context, a text, or input ids.");
    }
    for (const auto& row : prepared.inputs.inputIds)
        prepared.lengths.push_back(row.size());
    return prepared;
}

// The windows' special tokens (sequence id < 0) as the tokenizer spells them.
std::map<int64_t, std::string> specialTokensOf(const std::vector<QaWindow>& windows, const Tokenizer& tokenizer)
{
    std::map<int64_t, std::string> specials;
    for (const QaWindow& window : windows)
        for (std::size_t i = 0; i < window.encoding.ids.size(); ++i)
            if (window.encoding.sequenceIds[i] < 0)
                specials.emplace(window.encoding.ids[i], tokenizer.tokenString(window.encoding.ids[i]));
    return specials;
}

QaAgreement compareAnswers(const ForwardResult& runResult, const ForwardResult& referenceResult,
                           const PreparedInput& prepared, const ComparisonInput& input, const Tokenizer& tokenizer,
                           bool finite)
{
    const std::vector<std::size_t>& lengths = prepared.lengths;
    const FloatTensor& runStart = runResult.output("start_logits");
    const FloatTensor& runEnd = runResult.output("end_logits");
    const FloatTensor& refStart = referenceResult.output("start_logits");
    const FloatTensor& refEnd = referenceResult.output("end_logits");
    QaAgreement qa;
    qa.startLogits = metricsOverRealTokens(runStart, refStart, lengths);
    qa.endLogits = metricsOverRealTokens(runEnd, refEnd, lengths);
    if (!prepared.windows.empty() && finite) {
        const QaOptions& options = input.qaOptions;
        qa.windows = prepared.windows;
        qa.specialTokens = specialTokensOf(prepared.windows, tokenizer);
        qa.runStartLogits = perWindow(runStart, lengths);
        qa.runEndLogits = perWindow(runEnd, lengths);
        qa.referenceStartLogits = perWindow(refStart, lengths);
        qa.referenceEndLogits = perWindow(refEnd, lengths);
        const auto& windows = prepared.windows;
        qa.runAnswers = postprocessQa(windows, qa.runStartLogits, qa.runEndLogits, input.context, options);
        qa.referenceAnswers =
            postprocessQa(windows, qa.referenceStartLogits, qa.referenceEndLogits, input.context, options);
        if (!qa.runAnswers.empty())
            qa.runAnswer = qa.runAnswers.front();
        if (!qa.referenceAnswers.empty())
            qa.referenceAnswer = qa.referenceAnswers.front();
        qa.sameBestAnswer = answersAgree(qa.runAnswer, qa.referenceAnswer);
        qa.answerF1 = f1Score(qa.runAnswer.text, qa.referenceAnswer.text);
    }
    return qa;
}

FillMaskAgreement::Mask compareMask(const float* runLogits, const float* refLogits, std::size_t vocab, int position,
                                    int topKCount, const Tokenizer& tokenizer, bool finite)
{
    FillMaskAgreement::Mask mask;
    mask.position = position;
    mask.referenceDistribution = softmax(refLogits, vocab);
    mask.runDistribution = softmax(runLogits, vocab);
    mask.klDivergence = klDivergence(mask.referenceDistribution, mask.runDistribution);
    mask.runTop = topK(mask.runDistribution, topKCount);
    mask.referenceTop = topK(mask.referenceDistribution, topKCount);
    mask.runPredictions = withTokenTexts(tokenizer, mask.runTop);
    mask.referencePredictions = withTokenTexts(tokenizer, mask.referenceTop);
    mask.top1Agrees = finite && !mask.runTop.empty() && mask.runTop.front().first == mask.referenceTop.front().first;
    std::set<int64_t> referenceIds;
    for (const auto& [id, probability] : mask.referenceTop)
        referenceIds.insert(id);
    int shared = 0;
    for (const auto& [id, probability] : mask.runTop)
        shared += referenceIds.count(id) ? 1 : 0;
    mask.topKOverlap = mask.runTop.empty() ? 0 : double(shared) / double(mask.runTop.size());
    return mask;
}

FillMaskAgreement compareMasks(const FloatTensor& runLogits, const FloatTensor& refLogits, const PreparedInput& prepared,
                               const Tokenizer& tokenizer, const ErrorMetrics& logitMetrics, int topKCount, bool finite)
{
    const int64_t maskId = tokenizer.maskId();
    FillMaskAgreement agreement;
    agreement.logits = logitMetrics;
    agreement.encoding = prepared.maskedText;
    const std::size_t seq = static_cast<std::size_t>(runLogits.shape.at(1));
    const std::size_t vocab = static_cast<std::size_t>(runLogits.shape.at(2));
    const std::vector<int64_t>& ids = prepared.maskedText.ids;
    for (std::size_t t = 0; t < ids.size() && t < seq; ++t)
        if (ids[t] == maskId)
            agreement.masks.push_back(compareMask(runLogits.values.data() + t * vocab,
                                                  refLogits.values.data() + t * vocab, vocab, static_cast<int>(t),
                                                  topKCount, tokenizer, finite));
    return agreement;
}

// The reference side's capture points in execution order. A point the backend reports as the same
// tensor as an earlier one (q, k and v inputs, the previous layer's output) shares that one's copy.
struct ReferenceCaptures {
    struct Point {
        std::string name;
        std::shared_ptr<const FloatTensor> tensor;
    };
    std::vector<Point> points;
    std::unordered_map<std::string, std::size_t> index;

    const Point* find(const std::string& name) const
    {
        const auto it = index.find(name);
        return it == index.end() ? nullptr : &points[it->second];
    }
    void add(const std::string& name, const std::vector<int64_t>& shape, const float* data, const std::string& sameAs)
    {
        const Point* same = sameAs.empty() ? nullptr : find(sameAs);
        std::shared_ptr<const FloatTensor> tensor = keptCapture(same ? same->tensor : nullptr, shape, data);
        index[name] = points.size();
        points.push_back({name, std::move(tensor)});
    }
    void clear()
    {
        points.clear();
        index.clear();
    }
};

// A one-shot compare's release (ComparisonInput::oneShot): the name prefixes of the tensors that
// the forward parts from step `first` to step `last` read (step 0 the embeddings and layer 0, step
// k layer k, step numLayers the head), "" for every tensor when the step covered the whole forward.
// A head may run on the word embeddings (a masked LM's tied decoder), so there they wait for the head.
std::vector<std::string> tensorPrefixesOfSteps(const EncoderLayout& layout, int first, int last, int layers)
{
    if (first == 0 && last >= layers)
        return {""};
    std::vector<std::string> prefixes;
    if (first == 0 && !layout.headReadsWordEmbeddings())
        prefixes.push_back(layout.embeddingsModule() + ".");
    for (int layer = first; layer <= last && layer < layers; ++layer)
        prefixes.push_back(layout.layerModule(layer) + ".");
    return prefixes;
}

// Drops the pages of a checkpoint's tensors under these name prefixes from this process's resident
// memory (releaseResidentPages: they come back from the page cache if read again).
void releaseTensorPages(const Checkpoint& checkpoint, const std::vector<std::string>& prefixes)
{
    for (const TensorView* view : checkpoint.tensors().tensors())
        for (const std::string& prefix : prefixes)
            if (view->name.compare(0, prefix.size(), prefix) == 0) {
                releaseResidentPages(*view);
                break;
            }
}

// One forward's part (a layer of a layered compare) added to the whole: everything in execution
// order, the outputs and the stopped hidden state from the part itself.
void appendForwardPart(ForwardResult& whole, ForwardResult&& part)
{
    auto append = [](auto& into, auto& from) {
        into.insert(into.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
    };
    append(whole.outputs, part.outputs);
    append(whole.captures, part.captures);
    append(whole.activationStatistics, part.activationStatistics);
    append(whole.linearInputAmax, part.linearInputAmax);
    append(whole.nonFinite, part.nonFinite);
    append(whole.outputRanges, part.outputRanges);
    append(whole.attentionCasts, part.attentionCasts);
    if (whole.firstNonFiniteByRow.empty())
        whole.firstNonFiniteByRow = std::move(part.firstNonFiniteByRow);
    else
        for (std::size_t row = 0; row < whole.firstNonFiniteByRow.size() && row < part.firstNonFiniteByRow.size(); ++row)
            if (whole.firstNonFiniteByRow[row].empty())
                whole.firstNonFiniteByRow[row] = std::move(part.firstNonFiniteByRow[row]);
    whole.stoppedHidden = std::move(part.stoppedHidden);
    whole.elapsedMs += part.elapsedMs;
}

// The run side, measured against the stored reference point by point as the run computes. A point
// that is the same tensor as an earlier one on both sides has that point's metrics.
struct RunMeasurement {
    const ReferenceCaptures& reference;
    const EncoderLayout& layout;
    const std::vector<std::size_t>& lengths;
    bool positionsGathered; // the head kept only the inputs' logit positions (captureRows)
    ComparisonResult& result;
    std::unordered_map<std::string, std::size_t> pointIndex; // name -> index in result.points
    std::size_t next = 0;

    void measure(const std::string& name, const std::vector<int64_t>& shape, const float* data, const std::string& sameAs)
    {
        if (next >= reference.points.size() || reference.points[next].name != name)
            throw Error("The run and the reference recorded different capture points.");
        const ReferenceCaptures::Point& r = reference.points[next++];
        if (r.tensor->shape != shape)
            throw Error("Capture point \"" + name + "\" differs in shape between the run and the reference.");
        CapturePointMetrics point = describeCapturePoint(layout, name);
        const ReferenceCaptures::Point* sameReference = sameAs.empty() ? nullptr : reference.find(sameAs);
        const auto samePoint = sameAs.empty() ? pointIndex.end() : pointIndex.find(sameAs);
        if (sameReference && sameReference->tensor == r.tensor && samePoint != pointIndex.end()) {
            point.metrics = result.points[samePoint->second].metrics;
        } else {
            point.metrics =
                metricsOverRealRows(captureRows(layout, name, positionsGathered), shape, data, *r.tensor, lengths);
            // An inf or NaN on either side makes the squared error sum inf or NaN, so a finite mean
            // over every value of the point leaves no non-finite value to look for. Otherwise (padding
            // rows not measured, or an overflow of finite values) each side is scanned whole.
            const std::size_t count = elementCount(shape);
            const bool everyValueFinite =
                static_cast<std::size_t>(point.metrics.count) == count && std::isfinite(point.metrics.mse);
            if (!everyValueFinite && result.runFirstNonFinite.empty() && !allFinite(data, count))
                result.runFirstNonFinite = name;
            if (!everyValueFinite && result.referenceFirstNonFinite.empty() &&
                !allFinite(r.tensor->values.data(), r.tensor->values.size()))
                result.referenceFirstNonFinite = name;
        }
        pointIndex[name] = result.points.size();
        result.points.push_back(std::move(point));
    }
};

} // namespace

void checkModelsMatch(const InferenceBackend& run, const InferenceBackend& reference)
{
    const ModelConfig& a = run.config();
    const ModelConfig& b = reference.config();
    if (a.architecture != b.architecture || a.hiddenSize != b.hiddenSize || a.numLayers != b.numLayers ||
        a.vocabSize != b.vocabSize || a.intermediateSize != b.intermediateSize || a.numLabels != b.numLabels)
        throw Error("The reference " + reference.checkpoint().directory() + " does not match " +
                    run.checkpoint().directory() + " (architecture or sizes differ).");
}

PreparedComparisonInput prepareComparisonInput(const InferenceBackend& run, const ComparisonInput& input)
{
    return prepareInput(run, input);
}

FinalOutputComparison compareFinalOutputs(const InferenceBackend& run, const ForwardResult& runResult,
                                          const ForwardResult& referenceResult,
                                          const PreparedComparisonInput& prepared, const ComparisonInput& input)
{
    FinalOutputComparison result;
    result.runOutputsNonFinite = !outputsFinite(runResult);
    result.referenceOutputsNonFinite = !outputsFinite(referenceResult);
    const bool finite = !result.runOutputsNonFinite && !result.referenceOutputsNonFinite;
    const EncoderLayout& layout = run.checkpoint().layout();
    result.finalLogits = finalOutputMetrics(layout, runResult, referenceResult, prepared.lengths);
    result.outputsAgree = finite && finalOutputsAgree(layout, runResult, referenceResult, prepared.lengths);
    if (finite)
        result.sequence = sequenceOutputAgreement(layout, runResult, referenceResult, prepared.lengths);
    // What a task shows of the final outputs: a QA head's answers, a masked LM's fill-mask distributions.
    if (layout.head() == HeadKind::QuestionAnswering)
        result.qa = compareAnswers(runResult, referenceResult, prepared, input, run.checkpoint().tokenizer(), finite);
    else if (prepared.isFillMask)
        result.fillMask = compareMasks(runResult.output("logits"), referenceResult.output("logits"), prepared,
                                       run.checkpoint().tokenizer(), result.finalLogits, input.topK, finite);
    return result;
}

const Checkpoint* floatWeightSource(const InferenceBackend* reference)
{
    return reference && !reference->checkpoint().plan().anyQuantized() ? &reference->checkpoint() : nullptr;
}

namespace {

// Each side's forward options: its settings, every capture point, the run's activation statistics
// and float weights, and the K/V cast points on both sides once any layer runs FP8 attention.
std::pair<ForwardOptions, ForwardOptions> sideOptions(const InferenceBackend& run, const InferenceBackend* reference,
                                                      const ComparisonInput& input)
{
    ForwardOptions runOptions = forwardOptions(input.runs.run);
    runOptions.floatWeightsFrom = floatWeightSource(reference);
    runOptions.capture.all = true;
    runOptions.activationStatistics = true;
    ForwardOptions referenceOptions = forwardOptions(input.runs.reference);
    referenceOptions.capture.all = true;
    runOptions.attentionCastPoints = referenceOptions.attentionCastPoints =
        anyAttentionRunsFp8(run.checkpoint().layout(), static_cast<int>(run.config().numLayers),
                            input.runs.run.attention, input.runs.run.overrides);
    return {std::move(runOptions), std::move(referenceOptions)};
}

struct SideResults {
    ForwardResult run, reference;
};

// Runs both sides, the run measured against the reference's capture points as it computes. The
// reference's capture points are kept, one copy per distinct tensor, so the run's captures are never
// copied or kept. Where both backends resume from a layer (in-process), the two forwards go a layer
// at a time, so only one layer's reference captures are held (40 MB at roberta-base, seq 384,
// against 450 MB for the whole forward); the numbers are the same, as a resumed layer starts from the
// exact hidden state the full forward would have passed it.
SideResults runSides(InferenceBackend& run, InferenceBackend& referenceModel, const PreparedInput& prepared,
                     const ComparisonInput& input, std::pair<ForwardOptions, ForwardOptions> options,
                     ComparisonResult& result, const Progress& progress)
{
    const EncoderLayout& layout = run.checkpoint().layout();
    auto& [runOptions, referenceOptions] = options;
    ReferenceCaptures stored;
    RunMeasurement measurement{
        stored, layout, prepared.lengths, !prepared.inputs.logitPositions.empty(), result, {}, 0};
    referenceOptions.onCapture = [&](const std::string& name, const std::vector<int64_t>& shape, const float* data,
                                     const std::string& sameAs) { stored.add(name, shape, data, sameAs); };
    runOptions.onCapture = [&](const std::string& name, const std::vector<int64_t>& shape, const float* data,
                               const std::string& sameAs) { measurement.measure(name, shape, data, sameAs); };
    const int layers = static_cast<int>(run.config().numLayers);
    const int steps = run.resumesFromLayer() && referenceModel.resumesFromLayer() ? layers + 1 : 1;
    SideResults results;
    FloatTensor referenceHidden, runHidden;
    for (int step = 0; step < steps; ++step) {
        ForwardOptions referenceStep = referenceOptions, runStep = runOptions;
        if (steps > 1) { // step k runs layer k (the embeddings first, the head last)
            referenceStep.startLayer = runStep.startLayer = step;
            referenceStep.startHidden = step > 0 ? &referenceHidden : nullptr;
            runStep.startHidden = step > 0 ? &runHidden : nullptr;
            referenceStep.stopLayer = runStep.stopLayer = step < layers ? step + 1 : -1;
        }
        // Step k's reference forward reports over [k, k + 0.5) / steps, its run over [k + 0.5, k + 1) / steps.
        Progress first = progress;
        first.callback = [&](double f, const std::string& stage) {
            progress.report((double(step) + 0.5 * f) / double(steps), "Reference: " + stage);
        };
        Progress second = progress;
        second.callback = [&](double f, const std::string& stage) {
            progress.report((double(step) + 0.5 + 0.5 * f) / double(steps), runStageLabel(input.runs.run.mode) + stage);
        };
        appendForwardPart(results.reference, referenceModel.forward(prepared.inputs, referenceStep, first));
        appendForwardPart(results.run, run.forward(prepared.inputs, runStep, second));
        if (measurement.next != stored.points.size())
            throw Error("The run and the reference recorded different capture points.");
        stored.clear();
        measurement.next = 0;
        referenceHidden = std::move(results.reference.stoppedHidden);
        runHidden = std::move(results.run.stoppedHidden);
        if (input.oneShot) {
            const std::vector<std::string> done = tensorPrefixesOfSteps(layout, step, steps > 1 ? step : layers, layers);
            releaseTensorPages(referenceModel.checkpoint(), done);
            releaseTensorPages(run.checkpoint(), done);
        }
    }
    return results;
}

// What the run itself shows: its timing, activation statistics and their findings, the FP8
// attention's headroom, every module's output range against float16's and where it turns non-finite.
void describeRun(const InferenceBackend& run, ForwardResult& runResult, const RunSettings& settings,
                 ComparisonResult& result)
{
    const EncoderLayout& layout = run.checkpoint().layout();
    result.runMs = runResult.elapsedMs;
    result.activations = std::move(runResult.activationStatistics);
    result.attentionHeadroom = summarizeAttentionHeadroom(runResult.attentionCasts);
    result.findings = diagnoseActivations(result.activations, run.linears());
    result.outputRanges = std::move(runResult.outputRanges);
    for (const ModuleOutputRange& range : result.outputRanges)
        result.outputRangeLabels.push_back(layout.outputModuleLabel(range.module));
    result.runNonFinite = runResult.nonFinite;
    for (Finding& finding : diagnoseOutputRanges(result.outputRanges, layout, settings.mode))
        result.findings.push_back(std::move(finding));
}

} // namespace

ComparisonResult compareRuns(InferenceBackend& run, InferenceBackend* reference, const ComparisonInput& input,
                             const Progress& progress)
{
    InferenceBackend& referenceModel = reference ? *reference : run;
    checkModelsMatch(run, referenceModel);
    ComparisonResult result;
    result.runLabel = input.runs.run.label();
    result.run = input.runs.run;
    result.referenceIsStandIn = reference == nullptr;
    result.referenceLabel = reference ? "reference (" + reference->checkpoint().directory() + ")" : "dequant";
    const PreparedInput prepared = prepareInput(run, input);
    SideResults sides =
        runSides(run, referenceModel, prepared, input, sideOptions(run, reference, input), result, progress);
    result.referenceMs = sides.reference.elapsedMs;
    describeRun(run, sides.run, input.runs.run, result);
    FinalOutputComparison final = compareFinalOutputs(run, sides.run, sides.reference, prepared, input);
    result.runOutputsNonFinite = final.runOutputsNonFinite;
    result.referenceOutputsNonFinite = final.referenceOutputsNonFinite;
    result.nonFiniteNote = nonFiniteNote(result);
    for (Finding& finding : checkpointAndNonFiniteFindings(run, sides.run, result.runLabel))
        result.findings.push_back(std::move(finding));
    if (input.oneShot) // the findings read the run's checkpoint whole; nothing reads either file again
        for (const Checkpoint* checkpoint : {&run.checkpoint(), &referenceModel.checkpoint()})
            releaseTensorPages(*checkpoint, {""});
    result.finalLogits = final.finalLogits;
    result.outputsAgree = final.outputsAgree;
    result.sequence = final.sequence;
    result.qa = std::move(final.qa);
    result.fillMask = std::move(final.fillMask);
    // Numbers computed while a checkpoint file was rewritten in place are not to be reported.
    run.checkpoint().tensors().checkUnchanged();
    referenceModel.checkpoint().tensors().checkUnchanged();
    progress.report(1.0, "Compared");
    return result;
}

} // namespace scalescope
