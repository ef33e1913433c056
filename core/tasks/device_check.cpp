#include "tasks/device_check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <memory>
#include <random>
#include <unordered_map>

#include "analysis/capture_rows.h"
#include "analysis/comparison.h"
#include "common/error.h"
#include "common/text_files.h"
#include "device/checkpoint_manifest.h"
#include "io/sha256.h"
#include "tasks/compare_runs.h"
#include "tasks/final_outputs.h"
#include "tasks/sequence_runs.h"
#include "tasks/task_datasets.h"
#include "text/utf8.h"

namespace scalescope {

const char* const kQaLogitsPoint = "qa_logits";
const char* const kMaskedLmLogitsPoint = "logits";

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

CheckValues noValues()
{
    CheckValues values;
    values.fill(kNan);
    return values;
}

std::size_t metricIndex(CheckMetric metric)
{
    return static_cast<std::size_t>(metric);
}

// A twin's captures of one batch in execution order, one copy per distinct tensor (q, k and v read
// one input): what the measurement compares against and what the forward cache keeps.
struct StoredCaptures {
    CachedForward forward;
    std::unordered_map<std::string, std::shared_ptr<const FloatTensor>> byName;

    void add(const std::string& name, const std::vector<int64_t>& shape, const float* data, const std::string& sameAs)
    {
        const auto same = sameAs.empty() ? byName.end() : byName.find(sameAs);
        std::shared_ptr<const FloatTensor> tensor
            = keptCapture(same == byName.end() ? nullptr : same->second, shape, data);
        byName[name] = tensor;
        forward.captures.emplace_back(name, std::move(tensor));
    }
    void adopt(CachedForward cached)
    {
        forward = std::move(cached);
        for (const auto& [name, tensor] : forward.captures)
            byName[name] = tensor;
    }
};

// What makes two in-process runs of one checkpoint compute the same numbers, for the cache key.
std::string runSignature(const CheckRun& run, const std::string& floatWeightsHash)
{
    std::string signature = std::string("mode=") + runModeName(run.settings.mode);
    signature += std::string(";accumulation=") + accumulationName(run.settings.accumulation);
    signature += ";others_float=" + std::to_string(run.settings.overrides.othersFloat);
    for (const auto& [module, precision] : run.settings.overrides.modules)
        signature += ";" + module + "=" + (precision == Precision::Float ? "float" : "fp8");
    signature += ";float_weights=" + floatWeightsHash;
    if (run.settings.attention != AttentionPrecision::Float) // absent for float: older cache keys stay valid
        signature += std::string(";attention=") + attentionPrecisionName(run.settings.attention);
    return signature;
}

// A side's forward as it runs it; the caller adds what it records.
ForwardOptions forwardOptionsOf(const CheckRun& run)
{
    ForwardOptions options = forwardOptions(run.settings);
    options.floatWeightsFrom = run.floatWeightsFrom;
    return options;
}

// log-softmax of values[0, n) into out.
void logSoftmax(const float* values, std::size_t n, std::vector<double>& out)
{
    out.resize(n);
    double maximum = -kInf;
    for (std::size_t i = 0; i < n; ++i)
        maximum = maxKeepingNan(maximum, double(values[i]));
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i)
        sum += std::exp(double(values[i]) - maximum);
    const double logSum = maximum + std::log(sum);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = double(values[i]) - logSum;
}

// The two distribution metrics of one distribution pair, added to running sums.
struct DistributionSums {
    double crossEntropy = 0;
    double meanProbabilityDifference = 0;
    std::size_t distributions = 0;
    std::vector<double> runLog, twinLog;

    void add(const float* run, const float* twin, std::size_t n)
    {
        if (n == 0)
            return;
        logSoftmax(run, n, runLog);
        logSoftmax(twin, n, twinLog);
        // The cross-entropy beyond the twin's own entropy: -sum p_twin (log p_run - log p_twin), the
        // KL divergence. Raw cross-entropy counts the twin's entropy too, so a run identical to its
        // twin on an undecided question (a flat distribution) would fail where a confident one passes.
        double ce = 0, diff = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const double pTwin = std::exp(twinLog[i]);
            if (pTwin > 0)
                ce -= pTwin * (runLog[i] - twinLog[i]);
            diff += std::abs(pTwin - std::exp(runLog[i]));
        }
        crossEntropy += std::max(ce, 0.0); // a KL divergence: rounding below 0 is 0 (NaN stays)
        meanProbabilityDifference += diff / double(n);
        ++distributions;
    }
};

// The final point of one input: SQNR, cosine and max |error| over the real values of the head's
// final outputs (tasks/final_outputs.h), and the distribution metrics per distribution (QA: start
// and end over each window's positions; masked LM: each real position over the vocabulary),
// averaged; a pooled vector has no distribution.
CheckValues logitsValues(const EncoderLayout& layout, const ForwardResult& run, const ForwardResult& twin,
                         const std::vector<std::size_t>& lengths)
{
    CheckValues values = noValues();
    ErrorAccumulator error;
    DistributionSums sums;
    forEachFinalOutputRow(layout, run, twin, lengths, [&](const FinalOutputRow& row) {
        error.add(row.run, row.reference, row.values);
        if (holdsDistributions(row.output->kind))
            for (std::size_t at = 0; at + row.width <= row.values && row.width > 0; at += row.width)
                sums.add(row.run + at, row.reference + at, row.width);
    });
    const ErrorMetrics metrics = error.result();
    values[metricIndex(CheckMetric::SqnrDb)] = metrics.sqnrDb;
    values[metricIndex(CheckMetric::Cosine)] = metrics.cosine;
    values[metricIndex(CheckMetric::MaxAbs)] = metrics.maxAbsError;
    if (sums.distributions > 0) {
        values[metricIndex(CheckMetric::CrossEntropy)] = sums.crossEntropy / double(sums.distributions);
        values[metricIndex(CheckMetric::MeanProbabilityDifference)] =
            sums.meanProbabilityDifference / double(sums.distributions);
    }
    return values;
}

CheckValues tensorValues(const ErrorMetrics& metrics)
{
    CheckValues values = noValues();
    values[metricIndex(CheckMetric::SqnrDb)] = metrics.sqnrDb;
    values[metricIndex(CheckMetric::Cosine)] = metrics.cosine;
    values[metricIndex(CheckMetric::MaxAbs)] = metrics.maxAbsError;
    return values;
}

// A chart label of its own for every point: a Linear's input and output differ ("L0.q in",
// "L0.q out"), a layer's output is "L1 out", the embeddings "emb".
std::string checkPointLabel(const CapturePointMetrics& point)
{
    switch (point.kind) {
    case CaptureKind::Embeddings: return "emb";
    case CaptureKind::LayerOutput: return "L" + std::to_string(point.layer) + " out";
    case CaptureKind::LinearInput: return (point.label.empty() ? point.module : point.label) + " in";
    case CaptureKind::LinearOutput: return (point.label.empty() ? point.module : point.label) + " out";
    }
    return point.name;
}

// One input's rows in a batch: a question's windows, or a text's one sequence.
struct BatchedInput {
    std::size_t index = 0;              // in the input set
    std::size_t firstRow = 0, rows = 0; // its rows in the batch
    std::vector<QaWindow> windows;
    const SquadExample* example = nullptr;
    // One entry per row of the whole batch: this input's rows keep their lengths, every other row
    // is 0, so that the batch-wide metrics (metricsOverRealRows, logitsValues) see only this input.
    std::vector<std::size_t> lengthsInBatch;
};

// Several inputs in one forward: a device pool splits its rows across the devices, and a device
// with a per-call cost (a runner, an accelerator) pays it once per batch.
struct InputBatch {
    EncoderInputs inputs;
    std::vector<std::size_t> lengths;
    std::vector<BatchedInput> members;
};

void checkSidesMatch(const CheckRun& run, const std::vector<CheckRun>& twins)
{
    if (!run.backend)
        throw Error("The run under test has no model.");
    for (const CheckRun& twin : twins) {
        if (!twin.backend)
            throw Error("The twin \"" + twin.name + "\" has no model.");
        checkModelsMatch(*run.backend, *twin.backend);
    }
}

QaAnswer bestAnswer(const BatchedInput& input, const ForwardResult& result, const QaOptions& options)
{
    const FloatTensor& start = result.output("start_logits");
    const FloatTensor& end = result.output("end_logits");
    const std::size_t seq = std::size_t(start.shape.at(1));
    std::vector<std::vector<float>> starts, ends;
    for (std::size_t row = input.firstRow; row < input.firstRow + input.rows; ++row) {
        const std::size_t n = std::min(input.lengthsInBatch[row], seq);
        starts.emplace_back(start.values.begin() + row * seq, start.values.begin() + row * seq + n);
        ends.emplace_back(end.values.begin() + row * seq, end.values.begin() + row * seq + n);
    }
    const std::vector<QaAnswer> answers = postprocessQa(input.windows, starts, ends, input.example->context, options);
    return answers.empty() ? QaAnswer{} : answers.front();
}

// Whether the QA logits of the input's rows are finite (real tokens).
bool rowsFinite(const BatchedInput& input, const ForwardResult& result)
{
    for (const NamedTensor& output : result.outputs) {
        if (output.tensor.shape.size() != 2)
            continue;
        const std::size_t seq = std::size_t(output.tensor.shape[1]);
        for (std::size_t row = input.firstRow; row < input.firstRow + input.rows; ++row)
            for (std::size_t i = 0; i < std::min(input.lengthsInBatch[row], seq); ++i)
                if (!std::isfinite(output.tensor.values[row * seq + i]))
                    return false;
    }
    return true;
}

std::string percentText(double fraction)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f %%", 100.0 * fraction);
    return buffer;
}

// The longest input every side's model takes.
int sharedSequenceLimit(const EncoderLayout& layout, const std::vector<CheckRun>& twins)
{
    int limit = int(layout.maxSequenceLength());
    for (const CheckRun& twin : twins)
        limit = std::min(limit, int(twin.backend->checkpoint().layout().maxSequenceLength()));
    return limit;
}

// A measurement before its inputs: the run, its twins, and its points (every capture point of the
// run's model, then the logits).
RunMeasurements unmeasured(const CheckRun& run, const std::vector<CheckRun>& twins, CheckInputSet::Kind kind)
{
    const EncoderLayout& layout = run.backend->checkpoint().layout();
    RunMeasurements result;
    result.kind = kind;
    result.runName = run.name;
    result.runDescription = run.description;
    for (const CheckRun& twin : twins) {
        result.twinNames.push_back(twin.name);
        result.twinDescriptions.push_back(twin.description);
    }
    result.twinForwardMs.assign(twins.size(), 0.0);
    result.points = run.backend->capturePoints();
    for (const std::string& name : result.points) {
        const CapturePointMetrics described = describeCapturePoint(layout, name);
        result.pointLabels.push_back(checkPointLabel(described));
        result.pointLayers.push_back(described.layer);
    }
    result.points.push_back(layout.headDefinition().finalPoint);
    result.pointLabels.push_back("logits");
    result.pointLayers.push_back(-1);
    return result;
}

// Each capture point's index among the measurement's points (all but the last, the logits).
std::unordered_map<std::string, std::size_t> capturePointIndex(const RunMeasurements& measurements)
{
    std::unordered_map<std::string, std::size_t> index;
    for (std::size_t p = 0; p + 1 < measurements.points.size(); ++p)
        index[measurements.points[p]] = p;
    return index;
}

// What the forward cache's keys name each twin by: its checkpoint by content, not by folder, and
// how it runs.
struct TwinCacheNames {
    std::vector<std::string> checkpointHashes, signatures;
};

TwinCacheNames twinCacheNames(const std::vector<CheckRun>& twins)
{
    TwinCacheNames names;
    for (const CheckRun& twin : twins) {
        names.checkpointHashes.push_back(CheckpointManifest::of(twin.backend->checkpoint().directory()).hash);
        const Checkpoint* floatWeights = twin.floatWeightsFrom;
        names.signatures.push_back(
            runSignature(twin, floatWeights ? CheckpointManifest::of(floatWeights->directory()).hash : ""));
    }
    return names;
}

// An embedder, a classifier or a reranker: its texts are sequence-task inputs.
bool isSequenceTask(const EncoderLayout& layout)
{
    return layout.head() == HeadKind::Embedding || layout.head() == HeadKind::SequenceClassification;
}

// The sequences of input `index` (a question's windows, or a text's one sequence, into member),
// or an Error saying why it cannot be measured.
std::vector<Encoding> inputSequences(const CheckInputSet& inputs, std::size_t index, const Checkpoint& checkpoint,
    const QaOptions& qa, int limit, BatchedInput& member)
{
    const Tokenizer& tokenizer = checkpoint.tokenizer();
    std::vector<Encoding> sequences;
    if (inputs.kind == CheckInputSet::Kind::Squad) {
        member.example = &inputs.questions[index];
        member.windows = buildQaWindows(tokenizer, member.example->question, member.example->context, qa);
        for (const QaWindow& window : member.windows)
            sequences.push_back(window.encoding);
    } else if (isSequenceTask(checkpoint.layout())) {
        // As embed, classify and rerank run it: the family's pair layout, cut to the model's limit.
        const std::optional<std::string> pair = index < inputs.pairs.size() ? inputs.pairs[index] : std::nullopt;
        const int64_t maxTokens = std::min<int64_t>(sequenceTokenLimit(checkpoint), limit);
        sequences.push_back(encodeSequence(tokenizer, {inputs.texts[index], pair}, maxTokens).encoding);
    } else {
        const bool paired = index < inputs.pairs.size() && inputs.pairs[index];
        Encoding encoding = paired ? tokenizer.encodePair(inputs.texts[index], *inputs.pairs[index])
                                   : tokenizer.encode(inputs.texts[index]);
        if (int(encoding.ids.size()) > limit)
            throw Error("it is " + std::to_string(encoding.ids.size()) + " tokens long, more than the model's "
                + std::to_string(limit));
        sequences.push_back(std::move(encoding));
    }
    return sequences;
}

// Inputs [begin, end) in one batch: every input that can be windowed; one that cannot is skipped
// and listed (in measured, with its reason).
InputBatch batchOf(const CheckInputSet& inputs, std::size_t begin, std::size_t end, const Checkpoint& checkpoint,
    const QaOptions& qa, int limit, std::vector<InputMeasurement>& measured)
{
    InputBatch batch;
    for (std::size_t index = begin; index < end; ++index) {
        InputMeasurement& input = measured[index];
        input.id = inputs.inputId(index);
        BatchedInput member;
        member.index = index;
        std::vector<Encoding> sequences;
        try {
            sequences = inputSequences(inputs, index, checkpoint, qa, limit, member);
        } catch (const Cancelled&) {
            throw;
        } catch (const Error& e) {
            input.skipped = true;
            input.skipReason = e.what();
            continue;
        }
        member.firstRow = batch.lengths.size();
        member.rows = sequences.size();
        for (const Encoding& sequence : sequences) {
            batch.inputs.addSequence(sequence);
            batch.lengths.push_back(sequence.ids.size());
        }
        batch.members.push_back(std::move(member));
    }
    for (BatchedInput& member : batch.members) {
        member.lengthsInBatch.assign(batch.lengths.size(), 0);
        for (std::size_t row = member.firstRow; row < member.firstRow + member.rows; ++row)
            member.lengthsInBatch[row] = batch.lengths[row];
    }
    return batch;
}

// Each twin's forward of a batch: its outputs, and its captures with one copy per distinct tensor.
struct TwinForwards {
    std::vector<StoredCaptures> stored;
    std::vector<ForwardResult> results;
};

// The twins' forwards of the batch, each from the forward cache when it holds it (and into the
// cache when not); forwardMs adds up the time of those that ran.
TwinForwards forwardTwins(const std::vector<CheckRun>& twins, const InputBatch& batch, const TwinCacheNames& cacheNames,
    const CheckMeasureOptions& options, std::vector<double>& forwardMs)
{
    TwinForwards forwards;
    std::vector<StoredCaptures>& stored = forwards.stored;
    stored.resize(twins.size());
    forwards.results.resize(twins.size());
    for (std::size_t t = 0; t < twins.size(); ++t) {
        const std::string key = options.cache
            ? ForwardCache::key(cacheNames.checkpointHashes[t], cacheNames.signatures[t], batch.inputs)
            : std::string();
        CachedForward cached;
        if (options.cache && options.cache->load(key, cached)) {
            forwards.results[t].outputs = cached.outputs;
            stored[t].adopt(std::move(cached));
            continue;
        }
        ForwardOptions forward = forwardOptionsOf(twins[t]);
        forward.capture.all = true;
        forward.onCapture = [&stored, t](const std::string& name, const std::vector<int64_t>& shape, const float* data,
                                const std::string& sameAs) { stored[t].add(name, shape, data, sameAs); };
        forwards.results[t] = twins[t].backend->forward(batch.inputs, forward);
        forwardMs[t] += forwards.results[t].elapsedMs;
        if (options.cache) {
            stored[t].forward.outputs = forwards.results[t].outputs;
            options.cache->store(key, stored[t].forward);
        }
    }
    return forwards;
}

// Every capture point of the run against each twin's, per input of the batch.
void measureCaptures(const EncoderLayout& layout, const ForwardResult& runResult, const std::vector<StoredCaptures>& stored,
    const std::vector<CheckRun>& twins, const InputBatch& batch,
    const std::unordered_map<std::string, std::size_t>& pointIndex, std::vector<InputMeasurement>& measured)
{
    for (const NamedTensor& capture : runResult.captures) {
        const auto point = pointIndex.find(capture.name);
        if (point == pointIndex.end())
            throw Error("The run recorded the capture point \"" + capture.name + "\", which its layout does not name.");
        const CaptureRows rows = captureRows(layout, capture.name, !batch.inputs.logitPositions.empty());
        for (std::size_t t = 0; t < twins.size(); ++t) {
            const auto twin = stored[t].byName.find(capture.name);
            if (twin == stored[t].byName.end())
                throw Error(
                    "The twin \"" + twins[t].name + "\" did not record the capture point \"" + capture.name + "\".");
            if (twin->second->shape != capture.tensor.shape)
                throw Error("Capture point \"" + capture.name + "\" differs in shape between the run and the twin \""
                    + twins[t].name + "\".");
            for (const BatchedInput& member : batch.members)
                measured[member.index].values[t][point->second] = tensorValues(metricsOverRealRows(rows,
                    capture.tensor.shape, capture.tensor.values.data(), *twin->second, member.lengthsInBatch));
        }
    }
}

// Per input of the batch: its logits against each twin's and, for a question, each side's answer
// and its score.
void measureOutputs(const EncoderLayout& layout, const ForwardResult& runResult,
    const std::vector<ForwardResult>& twinResults, const InputBatch& batch, std::size_t logitsPoint, const QaOptions& qa,
    std::vector<InputMeasurement>& measuredInputs)
{
    for (const BatchedInput& member : batch.members) {
        InputMeasurement& measured = measuredInputs[member.index];
        for (std::size_t t = 0; t < twinResults.size(); ++t)
            measured.values[t][logitsPoint]
                = logitsValues(layout, runResult, twinResults[t], member.lengthsInBatch);
        if (!member.example)
            continue;
        // A side whose logits are not finite answers nothing: its prediction is "" and scored so.
        const auto predict = [&](const ForwardResult& side) {
            return rowsFinite(member, side) ? predictionText(bestAnswer(member, side, qa)) : std::string();
        };
        measured.hasAnswer = !member.example->golds.empty();
        measured.runPrediction = predict(runResult);
        measured.runScore = scorePrediction(*member.example, measured.runPrediction);
        for (const ForwardResult& twin : twinResults) {
            measured.twinPredictions.push_back(predict(twin));
            measured.twinScores.push_back(scorePrediction(*member.example, measured.twinPredictions.back()));
        }
    }
}

// One point of one twin before any input is counted.
PointCheck uncountedPoint(const RunMeasurements& measurements, std::size_t p, bool checked)
{
    PointCheck point;
    point.point = measurements.points[p];
    point.label = measurements.pointLabels[p];
    point.layer = measurements.pointLayers[p];
    point.median = noValues();
    point.worst = noValues();
    point.checked = checked;
    return point;
}

// Counts, per point of twin t, the inputs on which a metric is past its threshold, and per input
// the first point where one is (where its departure starts).
void countFailures(TwinCheck& twin, const RunMeasurements& measurements, std::size_t t,
    const std::vector<const PointThresholds*>& pointThresholds)
{
    for (std::size_t i = 0; i < measurements.inputs.size(); ++i) {
        const InputMeasurement& input = measurements.inputs[i];
        if (input.skipped)
            continue;
        for (std::size_t p = 0; p < twin.points.size(); ++p) {
            PointCheck& point = twin.points[p];
            ++point.inputs;
            if (!point.checked)
                continue;
            bool failed = false;
            for (CheckMetric metric : allCheckMetrics()) {
                const std::size_t m = metricIndex(metric);
                if (!passesThreshold(metric, input.values[t][p][m], pointThresholds[p]->thresholds[m])) {
                    ++point.metricFailures[m];
                    failed = true;
                }
            }
            if (failed) {
                ++point.failures;
                if (twin.firstFailingPoint[i].empty()) {
                    twin.firstFailingPoint[i] = point.point;
                    ++point.departuresStartHere;
                }
            }
        }
        if (!twin.firstFailingPoint[i].empty())
            ++twin.failingInputs;
    }
}

// Per point of twin t: its failure rate against the gate, the median and worst of every metric,
// and the point where most departures start.
void summarizePoints(TwinCheck& twin, const RunMeasurements& measurements, std::size_t t, const CheckGate& gate)
{
    for (std::size_t p = 0; p < twin.points.size(); ++p) {
        PointCheck& point = twin.points[p];
        point.failureRate = point.inputs ? double(point.failures) / double(point.inputs) : 0.0;
        point.failed = point.checked && point.failureRate > gate.maxFailureRate;
        if (point.failed)
            ++twin.failedPoints;
        for (CheckMetric metric : allCheckMetrics()) {
            const std::size_t m = metricIndex(metric);
            std::vector<double> values;
            for (const InputMeasurement& input : measurements.inputs)
                if (!input.skipped)
                    values.push_back(input.values[t][p][m]);
            point.median[m] = percentileOf(values, 50);
            point.worst[m] = percentileOf(values, lowerIsWorse(metric) ? 0 : 100);
        }
        if (point.departuresStartHere > twin.departureStartInputs) {
            twin.departureStartInputs = point.departuresStartHere;
            twin.departureStart = point.point;
        }
    }
}

// Twin t's measurements held against the thresholds (a point without one is not checked).
TwinCheck thresholdTwin(const RunMeasurements& measurements, std::size_t t,
    const std::vector<const PointThresholds*>& pointThresholds, const CheckGate& gate)
{
    TwinCheck twin;
    twin.twin = measurements.twinNames[t];
    twin.description = measurements.twinDescriptions[t];
    twin.firstFailingPoint.assign(measurements.inputs.size(), std::string());
    for (std::size_t p = 0; p < measurements.points.size(); ++p)
        twin.points.push_back(uncountedPoint(measurements, p, pointThresholds[p] != nullptr));
    countFailures(twin, measurements, t, pointThresholds);
    summarizePoints(twin, measurements, t, gate);
    return twin;
}

// Twin t's answers scored, and the run's F1 against them with its bootstrap interval.
void scoreTwin(TwinCheck& twin, const RunMeasurements& measurements, std::size_t t, const std::vector<bool>& hasAnswer)
{
    std::vector<ExampleScore> twinScores;
    std::vector<double> differences;
    for (const InputMeasurement& input : measurements.inputs)
        if (!input.skipped) {
            twinScores.push_back(input.twinScores[t]);
            differences.push_back(100.0 * (input.runScore.f1 - input.twinScores[t].f1));
        }
    twin.twinScores = aggregateScores(twinScores, hasAnswer);
    twin.f1Difference = pairedBootstrap(differences);
}

// Per point, the twin the run is closest to: the lowest failure rate, then the highest median SQNR.
std::vector<std::string> bestTwinPerPoint(const std::vector<TwinCheck>& twins, std::size_t pointCount)
{
    std::vector<std::string> best;
    for (std::size_t p = 0; p < pointCount; ++p) {
        std::size_t closest = 0;
        for (std::size_t t = 1; t < twins.size(); ++t) {
            const PointCheck& candidate = twins[t].points[p];
            const PointCheck& current = twins[closest].points[p];
            const double candidateSqnr = candidate.median[metricIndex(CheckMetric::SqnrDb)];
            const double currentSqnr = current.median[metricIndex(CheckMetric::SqnrDb)];
            if (candidate.failureRate < current.failureRate
                || (candidate.failureRate == current.failureRate && candidateSqnr > currentSqnr))
                closest = t;
        }
        best.push_back(twins.empty() ? std::string() : twins[closest].twin);
    }
    return best;
}

// Why the check fails against its primary twin, one sentence a reason; none when it passes.
std::vector<std::string> failureReasons(
    const TwinCheck& primary, std::size_t measured, std::size_t matched, const CheckGate& gate)
{
    std::vector<std::string> reasons;
    if (measured == 0)
        reasons.push_back("No input could be measured.");
    if (primary.failedPoints > 0) {
        const PointCheck* first = nullptr;
        for (const PointCheck& point : primary.points)
            if (point.failed) {
                first = &point;
                break;
            }
        reasons.push_back(std::to_string(primary.failedPoints) + " of " + std::to_string(matched)
            + " checked points fail on more than " + percentText(gate.maxFailureRate) + " of inputs; the first is "
            + first->point + " (" + percentText(first->failureRate) + ").");
    }
    if (primary.f1Difference && std::isfinite(primary.f1Difference->low)) {
        const double dropHigh = -primary.f1Difference->low;
        if (dropHigh > gate.maxF1Drop) {
            char buffer[200];
            std::snprintf(buffer, sizeof buffer,
                "The F1 drop against %s may be up to %.2f points (95 %% interval of the difference %.2f to "
                "%.2f), more than the allowed %.2f.",
                primary.twin.c_str(), dropHigh, primary.f1Difference->low, primary.f1Difference->high, gate.maxF1Drop);
            reasons.push_back(buffer);
        }
    }
    return reasons;
}

std::string verdictSentence(const CheckResult& result, const std::string& runName, std::size_t measured)
{
    const TwinCheck& primary = result.twins.front();
    // "The device" or "The fp8 run": a run name is a label, not a word to start a sentence with.
    const std::string subject = runName == "device" ? std::string("The device") : "The " + runName + " run";
    if (result.passed)
        return subject + " passes against " + primary.twin + ": every point fails on at most "
            + percentText(result.gate.maxFailureRate) + " of " + std::to_string(measured) + " inputs.";
    std::string sentence = subject + " fails against " + primary.twin + ".";
    if (!primary.departureStart.empty())
        sentence += " Departures start at " + primary.departureStart + " on "
            + std::to_string(primary.departureStartInputs) + " of " + std::to_string(measured) + " inputs.";
    return sentence;
}

} // namespace

const std::array<CheckMetric, kCheckMetricCount>& allCheckMetrics()
{
    static const std::array<CheckMetric, kCheckMetricCount> metrics = {
        CheckMetric::SqnrDb, CheckMetric::Cosine, CheckMetric::MaxAbs, CheckMetric::CrossEntropy,
        CheckMetric::MeanProbabilityDifference};
    return metrics;
}

const char* checkMetricName(CheckMetric metric)
{
    switch (metric) {
    case CheckMetric::SqnrDb: return "sqnr_db";
    case CheckMetric::Cosine: return "cosine";
    case CheckMetric::MaxAbs: return "max_abs";
    case CheckMetric::CrossEntropy: return "cross_entropy";
    case CheckMetric::MeanProbabilityDifference: return "mean_probability_difference";
    }
    return "metric";
}

bool parseCheckMetric(const std::string& name, CheckMetric& metric)
{
    for (CheckMetric candidate : allCheckMetrics())
        if (name == checkMetricName(candidate)) {
            metric = candidate;
            return true;
        }
    return false;
}

bool lowerIsWorse(CheckMetric metric)
{
    return metric == CheckMetric::SqnrDb || metric == CheckMetric::Cosine;
}

MetricRange checkMetricRange(CheckMetric metric)
{
    constexpr double inf = std::numeric_limits<double>::infinity();
    switch (metric) {
    case CheckMetric::SqnrDb: return {-inf, inf};
    case CheckMetric::Cosine: return {-1, 1};
    case CheckMetric::MaxAbs: return {0, inf};
    case CheckMetric::CrossEntropy: return {0, inf};
    case CheckMetric::MeanProbabilityDifference: return {0, 1};
    }
    return {-inf, inf};
}

const std::vector<std::string>& checkRunNames()
{
    static const std::vector<std::string> names = {"reference", "reference-fp16", "emulation", "fp16", "dl16", "dequant"};
    return names;
}

CheckRun namedCheckRun(const std::string& name, const CheckRunSources& sources, TaskOption option)
{
    if (!sources.checkpoint)
        throw Error("A check run needs the checkpoint's model.");
    CheckRun run;
    run.name = name;
    InferenceBackend& checkpoint = *sources.checkpoint;
    const std::string checkpointDir = checkpoint.checkpoint().directory();
    if (name == "reference" || name == "reference-fp16") {
        const bool half = name == "reference-fp16";
        if (sources.reference) {
            run.backend = sources.reference;
            run.description = "the float reference " + sources.reference->checkpoint().directory() +
                              (half ? " in the fp16 twin" : " in float32");
        } else {
            run.backend = sources.checkpoint;
            run.description = std::string("dequant standing in for the reference") + (half ? ", in the fp16 twin" : "");
        }
        // Every Linear float: in fp16 mode a float checkpoint has nothing to quantize, and the
        // dequant stand-in must not quantize either.
        PrecisionOverrides everyLinearFloat;
        everyLinearFloat.othersFloat = true;
        run.settings = RunSettings{half ? RunMode::Fp16 : RunMode::Dequant}.withOverrides(everyLinearFloat);
    } else if (name == "emulation") {
        run.backend = sources.checkpoint;
        run.settings = RunSettings{RunMode::Fp8};
        run.description = "the FP8 emulation of " + checkpointDir + " on this CPU";
    } else if (name == "fp16") {
        run.backend = sources.checkpoint;
        run.settings = RunSettings{RunMode::Fp16};
        run.description = "the FP8 run of " + checkpointDir + " in the fp16 twin";
    } else if (name == "dl16") {
        run.backend = sources.checkpoint;
        run.settings = RunSettings{RunMode::Fp8, Accumulation::Dl16};
        run.description = "the FP8 run of " + checkpointDir + " with DL16 accumulation (fms-model-optimizer's AIU model)";
    } else if (name == "dequant") {
        run.backend = sources.checkpoint;
        run.settings = RunSettings{RunMode::Dequant};
        run.description = "dequantized weights of " + checkpointDir + " on float activations";
    } else {
        throw OptionError(option, "{option} names \"" + name + "\", which is not a run; the runs are " +
                                      joinedWords(checkRunNames(), " and ") + ".");
    }
    run.floatWeightsFrom = floatWeightSource(sources.reference);
    return run;
}

std::string CheckInputSet::inputId(std::size_t index) const
{
    if (kind == Kind::Squad)
        return index < questions.size() ? questions[index].id : std::string();
    return "text " + std::to_string(index + 1);
}

CheckInputSet squadCheckInputs(const std::string& path, std::size_t maxSamples)
{
    SquadDataset dataset = readSquadFile(path);
    if (dataset.examples.empty())
        throw Error(path + " holds no questions.");
    CheckInputSet inputs;
    inputs.kind = CheckInputSet::Kind::Squad;
    inputs.path = path;
    inputs.sha256 = sha256OfFile(path);
    inputs.inFile = dataset.examples.size();
    inputs.squadV2 = dataset.isV2;
    if (maxSamples > 0 && dataset.examples.size() > maxSamples)
        dataset.examples.resize(maxSamples);
    inputs.questions = std::move(dataset.examples);
    return inputs;
}

namespace {

// The texts file read whole, parsed by the one texts reader (tasks/task_datasets: plain lines or
// JSONL with an optional "pair"); textCheckInputs names the file when that needs more memory than
// there is.
CheckInputSet textCheckInputsOf(const std::string& path, std::size_t maxSamples)
{
    const std::string text = readFileToString(path);
    TextsFile file = parseTextsFile(text, path, maxSamples);
    CheckInputSet inputs;
    inputs.kind = CheckInputSet::Kind::Texts;
    inputs.path = path;
    inputs.sha256 = sha256Hex(text);
    inputs.inFile = file.inFile;
    inputs.texts = std::move(file.texts);
    inputs.pairs = std::move(file.pairs);
    return inputs;
}

} // namespace

CheckInputSet textCheckInputs(const std::string& path, std::size_t maxSamples)
{
    return readingUserFile(path, [&] { return textCheckInputsOf(path, maxSamples); });
}

std::size_t RunMeasurements::measuredInputs() const
{
    return std::size_t(std::count_if(inputs.begin(), inputs.end(), [](const InputMeasurement& i) { return !i.skipped; }));
}

RunMeasurements measureRuns(const CheckRun& run, const std::vector<CheckRun>& twins, const CheckInputSet& inputs,
                            const CheckMeasureOptions& options)
{
    if (twins.empty())
        throw Error("A measurement needs at least one twin to hold the run against.");
    checkSidesMatch(run, twins);
    if (inputs.count() == 0)
        throw Error(inputs.path + " holds no inputs.");
    const Checkpoint& checkpoint = run.backend->checkpoint();
    const EncoderLayout& layout = checkpoint.layout();
    const bool questionAnswering = layout.isQuestionAnswering();
    if (inputs.kind == CheckInputSet::Kind::Squad && !questionAnswering)
        throw Error("A SQuAD file needs a question-answering model; " + checkpoint.directory() +
                    " is not one (give --texts instead).");

    QaOptions qa = options.qa;
    qa.topK = 1;
    if (inputs.squadV2 && !qa.nullThreshold)
        qa.nullThreshold = 0.0f;
    const int limit = sharedSequenceLimit(layout, twins);
    if (inputs.kind == CheckInputSet::Kind::Squad)
        validateQaOptions(qa, layout.specialTokensInPair(), limit);

    RunMeasurements result = unmeasured(run, twins, inputs.kind);
    const std::unordered_map<std::string, std::size_t> pointIndex = capturePointIndex(result);
    const std::size_t logitsPoint = result.points.size() - 1;
    const TwinCacheNames cacheNames = options.cache ? twinCacheNames(twins) : TwinCacheNames{};

    const Clock::time_point started = Clock::now();
    const std::size_t batchInputs = std::max<std::size_t>(1, options.inputsPerForward);
    result.inputs.resize(inputs.count());
    std::size_t done = 0;
    for (std::size_t begin = 0; begin < inputs.count(); begin += batchInputs) {
        options.progress.throwIfCancelled();
        options.progress.report(double(done) / double(inputs.count()),
            "Measuring " + run.name + " against " + joinedWords(result.twinNames) + ": input "
                + std::to_string(done + 1) + " of " + std::to_string(inputs.count()));
        const std::size_t end = std::min(inputs.count(), begin + batchInputs);
        const InputBatch batch = batchOf(inputs, begin, end, checkpoint, qa, limit, result.inputs);
        done = end;
        if (batch.members.empty())
            continue;
        const TwinForwards twinForwards = forwardTwins(twins, batch, cacheNames, options, result.twinForwardMs);
        ForwardOptions forward = forwardOptionsOf(run);
        forward.capture.all = true;
        forward.onCapture = nullptr;
        const ForwardResult runResult = run.backend->forward(batch.inputs, forward);
        result.runForwardMs += runResult.elapsedMs;

        for (const BatchedInput& member : batch.members)
            result.inputs[member.index].values.assign(twins.size(), std::vector<CheckValues>(result.points.size(), noValues()));
        measureCaptures(layout, runResult, twinForwards.stored, twins, batch, pointIndex, result.inputs);
        measureOutputs(layout, runResult, twinForwards.results, batch, logitsPoint, qa, result.inputs);
    }
    // Numbers computed while a checkpoint file was rewritten in place are not to be reported.
    checkpoint.tensors().checkUnchanged();
    for (const CheckRun& twin : twins)
        twin.backend->checkpoint().tensors().checkUnchanged();
    result.seconds = secondsSince(started);
    options.progress.report(1.0, "Measured");
    return result;
}

double percentileOf(std::vector<double> values, double p)
{
    values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }), values.end());
    if (values.empty())
        return kNan;
    std::sort(values.begin(), values.end());
    const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * double(values.size() - 1);
    const std::size_t below = std::size_t(std::floor(rank));
    const std::size_t above = std::min(below + 1, values.size() - 1);
    const double fraction = rank - double(below);
    const double low = values[below], high = values[above];
    if (fraction == 0 || low == high)
        return low;
    if (std::isinf(low) || std::isinf(high))
        return std::isinf(low) ? low : high;
    return low + fraction * (high - low);
}

const PointThresholds* ThresholdSet::find(const std::string& point) const
{
    for (const PointThresholds& entry : points)
        if (entry.point == point)
            return &entry;
    return nullptr;
}

ThresholdSet noiseFloorThresholds(const RunMeasurements& floor, double percentile)
{
    if (floor.twinNames.size() != 1)
        throw Error("A noise floor is measured between exactly two runs.");
    ThresholdSet set;
    set.percentile = percentile;
    for (std::size_t p = 0; p < floor.points.size(); ++p) {
        PointThresholds entry;
        entry.point = floor.points[p];
        entry.thresholds = noValues();
        for (CheckMetric metric : allCheckMetrics()) {
            std::vector<double> values;
            for (const InputMeasurement& input : floor.inputs)
                if (!input.skipped)
                    values.push_back(input.values[0][p][metricIndex(metric)]);
            entry.samples = values.size();
            // The bad tail: the 99th percentile of an error, the 1st of a similarity. Within the
            // metric's range, so that a run identical to its twin always passes.
            const MetricRange range = checkMetricRange(metric);
            const double threshold = percentileOf(values, lowerIsWorse(metric) ? 100 - percentile : percentile);
            entry.thresholds[metricIndex(metric)] = std::isnan(threshold) ? threshold : std::clamp(threshold, range.low, range.high);
        }
        set.points.push_back(std::move(entry));
    }
    set.provenance["runs"] = floor.runName + "," + floor.twinNames[0];
    set.provenance["run_descriptions"] = floor.runDescription + "; " + floor.twinDescriptions[0];
    set.provenance["inputs_measured"] = std::to_string(floor.measuredInputs());
    set.provenance["percentile"] = std::to_string(int(percentile)) ;
    return set;
}

ThresholdSet measureNoiseFloor(const CheckRunSources& sources, const std::vector<std::string>& names,
                               const CheckInputSet& inputs, const CheckMeasureOptions& options)
{
    const std::vector<std::string> runs = names.empty() ? std::vector<std::string>{"reference", "reference-fp16"} : names;
    if (runs.size() != 2)
        throw OptionError(TaskOption::Runs, "{option} must name exactly two runs (got " + std::to_string(runs.size()) + ").");
    if (runs[0] == runs[1])
        throw OptionError(TaskOption::Runs, "{option} names \"" + runs[0] + "\" twice; a noise floor needs two different runs.");
    const CheckRun first = namedCheckRun(runs[0], sources, TaskOption::Runs);
    const CheckRun second = namedCheckRun(runs[1], sources, TaskOption::Runs);
    ThresholdSet set = noiseFloorThresholds(measureRuns(first, {second}, inputs, options));
    set.provenance["inputs_file"] = inputs.path;
    set.provenance["inputs_sha256"] = inputs.sha256;
    set.provenance["inputs_kind"] = inputs.kind == CheckInputSet::Kind::Squad ? "squad" : "texts";
    set.provenance["inputs_count"] = std::to_string(inputs.count());
    return set;
}

bool passesThreshold(CheckMetric metric, double value, double threshold)
{
    if (std::isnan(threshold))
        return true;
    if (std::isnan(value))
        return false;
    return lowerIsWorse(metric) ? value >= threshold : value <= threshold;
}

BootstrapInterval pairedBootstrap(const std::vector<double>& differences, int resamples, std::uint64_t seed,
                                  double confidence)
{
    BootstrapInterval interval;
    interval.resamples = resamples;
    interval.seed = seed;
    interval.confidence = confidence;
    if (differences.empty() || resamples < 1) {
        interval.mean = interval.low = interval.high = kNan;
        return interval;
    }
    const std::size_t n = differences.size();
    double sum = 0;
    for (double d : differences)
        sum += d;
    interval.mean = sum / double(n);
    std::mt19937_64 generator(seed);
    std::vector<double> means;
    means.reserve(std::size_t(resamples));
    for (int r = 0; r < resamples; ++r) {
        double resampled = 0;
        for (std::size_t i = 0; i < n; ++i)
            resampled += differences[std::size_t(generator() % n)];
        means.push_back(resampled / double(n));
    }
    interval.low = percentileOf(means, 100.0 * (1 - confidence) / 2);
    interval.high = percentileOf(means, 100.0 * (1 + confidence) / 2);
    return interval;
}

CheckResult evaluateCheck(RunMeasurements measurements, const ThresholdSet& thresholds, const CheckGate& gate)
{
    CheckResult result;
    result.thresholds = thresholds;
    result.gate = gate;
    const std::size_t pointCount = measurements.points.size();
    std::vector<const PointThresholds*> pointThresholds(pointCount, nullptr);
    std::size_t matched = 0;
    for (std::size_t p = 0; p < pointCount; ++p)
        if ((pointThresholds[p] = thresholds.find(measurements.points[p])))
            ++matched;
    if (matched == 0)
        throw Error("The thresholds name none of this model's capture points (they were measured on another model).");

    const bool qa = measurements.kind == CheckInputSet::Kind::Squad;
    std::vector<bool> hasAnswer;
    std::vector<ExampleScore> runScores;
    for (const InputMeasurement& input : measurements.inputs)
        if (!input.skipped) {
            runScores.push_back(input.runScore);
            hasAnswer.push_back(input.hasAnswer);
        }
    for (std::size_t t = 0; t < measurements.twinNames.size(); ++t) {
        TwinCheck twin = thresholdTwin(measurements, t, pointThresholds, gate);
        if (qa)
            scoreTwin(twin, measurements, t, hasAnswer);
        result.twins.push_back(std::move(twin));
    }
    if (qa)
        result.runScores = aggregateScores(runScores, hasAnswer);
    result.bestTwinPerPoint = bestTwinPerPoint(result.twins, pointCount);

    // The verdict: the first twin's failure rates and F1 interval.
    result.reasons = failureReasons(result.twins.front(), measurements.measuredInputs(), matched, gate);
    result.passed = result.reasons.empty();
    result.verdictSentence = verdictSentence(result, measurements.runName, measurements.measuredInputs());
    result.measurements = std::move(measurements);
    return result;
}

} // namespace scalescope
