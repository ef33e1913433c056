#include "tasks/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <new>

#include "analysis/squad_metric.h"
#include "common/error.h"
#include "common/option_error.h"

namespace scalescope {
namespace {

constexpr int kMaxBatchSize = 4096;
// Batches' worth of windows sorted by length together (EvaluationOptions::groupByLength).
constexpr std::size_t kLengthPoolBatches = 8;
// Share of the progress bar for the answering pass; the per-layer comparisons take the rest.
constexpr double kAnsweringShare = 0.95;

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string describeModel(const InferenceBackend& model)
{
    return model.checkpoint().directory();
}

int maxTokensOf(const InferenceBackend& model)
{
    return static_cast<int>(model.checkpoint().layout().maxSequenceLength());
}

void validateSetup(InferenceBackend& run, InferenceBackend* reference, const SquadDataset& dataset,
                   const EvaluationOptions& options)
{
    for (InferenceBackend* model : {&run, reference}) {
        if (!model)
            continue;
        if (!model->checkpoint().layout().isQuestionAnswering())
            throw Error(wrongHeadSentence("SQuAD evaluation needs", HeadKind::QuestionAnswering, describeModel(*model),
                                          model->config().architecture));
    }
    if (reference) {
        const ModelConfig& a = run.config();
        const ModelConfig& b = reference->config();
        if (a.hiddenSize != b.hiddenSize || a.numLayers != b.numLayers || a.vocabSize != b.vocabSize ||
            a.intermediateSize != b.intermediateSize)
            throw Error("The reference " + describeModel(*reference) + " does not match " + describeModel(run) +
                        " (hidden size, layers, vocabulary or intermediate size differ).");
    }
    if (dataset.examples.empty())
        throw Error(dataset.path + " holds no questions.");
    if (options.batchSize < 1 || options.batchSize > kMaxBatchSize)
        throw OptionError(TaskOption::BatchSize, "{option} must be from 1 to " + std::to_string(kMaxBatchSize) +
                                                     " windows (got " + std::to_string(options.batchSize) + ").");
    int limit = maxTokensOf(run);
    if (reference)
        limit = std::min(limit, maxTokensOf(*reference));
    validateQaOptions(options.qa, run.checkpoint().layout().specialTokensInPair(), limit);
}

// Where a module's output comes in a forward, for ordering.
std::size_t executionRank(const EncoderLayout& layout, const std::string& module)
{
    return layout.outputModuleIndex(module);
}

// One question on its way through the batches: its windows and, per window, the logits of both runs.
struct PendingQuestion {
    std::size_t index = 0;
    std::vector<QaWindow> windows;
    std::vector<std::vector<float>> runStart, runEnd, referenceStart, referenceEnd;
    std::size_t windowsDone = 0;
    std::string firstNonFinite; // the earliest over the windows done so far
};

struct QueuedWindow {
    PendingQuestion* question = nullptr;
    std::size_t window = 0;
};

void copyRow(const FloatTensor& logits, std::size_t row, std::size_t length, std::vector<float>& out)
{
    const std::size_t seq = static_cast<std::size_t>(logits.shape.at(1));
    const auto begin = logits.values.begin() + static_cast<std::ptrdiff_t>(row * seq);
    out.assign(begin, begin + static_cast<std::ptrdiff_t>(length));
}

const FloatTensor& outputNamed(const ForwardResult& result, const char* name, const InferenceBackend& model)
{
    for (const NamedTensor& t : result.outputs)
        if (t.name == name)
            return t.tensor;
    throw Error("The forward pass of " + model.checkpoint().directory() + " produced no \"" + name + "\".");
}

QaAnswer bestAnswer(const std::vector<QaAnswer>& answers)
{
    if (!answers.empty())
        return answers.front();
    // No span and no competing null answer: the question gets the empty answer.
    QaAnswer none;
    none.isNull = true;
    return none;
}

std::vector<std::string> usableGolds(const SquadExample& example)
{
    std::vector<std::string> golds;
    for (const std::string& gold : example.golds)
        if (!normalizeAnswer(gold).empty())
            golds.push_back(gold);
    return golds;
}

// Counts the questions whose run went non-finite and, per module, those where it started (ordered
// as the modules run).
void summarizeNonFinite(EvaluationResult& result, const EncoderLayout& layout)
{
    std::map<std::string, std::size_t> starts;
    auto count = [&](const std::string& module) {
        if (!module.empty())
            ++starts[module];
    };
    for (const EvaluatedExample& e : result.examples)
        count(e.firstNonFinite);
    for (const SkippedExample& e : result.skipped)
        count(e.firstNonFinite);
    result.nonFiniteStarts.clear();
    result.nonFiniteQuestions = 0;
    for (const auto& [module, questions] : starts) {
        result.nonFiniteStarts.push_back({module, questions});
        result.nonFiniteQuestions += questions;
    }
    std::stable_sort(result.nonFiniteStarts.begin(), result.nonFiniteStarts.end(),
                     [&](const NonFiniteStart& a, const NonFiniteStart& b) {
                         return executionRank(layout, a.module) < executionRank(layout, b.module);
                     });
}

void summarize(EvaluationResult& result)
{
    std::vector<ExampleScore> run, reference;
    std::vector<bool> hasAnswer;
    result.agreeing = 0;
    result.disagreements.clear();
    for (std::size_t i = 0; i < result.examples.size(); ++i) {
        const EvaluatedExample& e = result.examples[i];
        run.push_back(e.run);
        reference.push_back(e.reference);
        hasAnswer.push_back(!e.example.golds.empty());
        if (e.agree) {
            ++result.agreeing;
        } else {
            Disagreement d;
            d.example = i;
            result.disagreements.push_back(d);
        }
    }
    result.runScores = aggregateScores(run, hasAnswer);
    result.referenceScores = aggregateScores(reference, hasAnswer);
    result.agreement = result.examples.empty() ? 0.0 : double(result.agreeing) / double(result.examples.size());
}

// The answering pass: windows of consecutive questions fill batches of options.batchSize; a
// question is post-processed as soon as its last window has been through both models.
class AnsweringPass {
public:
    AnsweringPass(InferenceBackend& run, InferenceBackend* reference, const SquadDataset& dataset,
                  const EvaluationOptions& options, const Progress& progress, EvaluationResult& result)
        : run_(run), reference_(reference ? *reference : run), dataset_(dataset), options_(options),
          progress_(progress), result_(result)
    {
        forwardProgress_.cancel = progress.cancel; // cancel inside long forwards, report per batch only
    }

    void execute()
    {
        start_ = Clock::now();
        const std::size_t total = result_.questionsSelected;
        const std::size_t batchSize = static_cast<std::size_t>(options_.batchSize);
        while (true) {
            fillQueue(batchSize, total);
            if (queue_.empty())
                break;
            progress_.throwIfCancelled();

            const std::size_t count = windowsInNextBatch(batchSize);
            EncoderInputs inputs;
            std::size_t longest = 0;
            for (std::size_t i = 0; i < count; ++i) {
                inputs.addSequence(queue_[i].question->windows[queue_[i].window].encoding);
                longest = std::max(longest, inputs.inputIds.back().size());
                result_.windowTokens += inputs.inputIds.back().size();
            }
            result_.batchTokens += count * longest;

            ForwardOptions runOptions = forwardOptions(options_.runs.run);
            runOptions.floatWeightsFrom = &reference_ == &run_ ? nullptr : floatWeightSource(&reference_);
            const ForwardOptions referenceOptions = forwardOptions(options_.runs.reference);
            const ForwardResult runResult = run_.forward(inputs, runOptions, forwardProgress_);
            const ForwardResult referenceResult = reference_.forward(inputs, referenceOptions, forwardProgress_);
            result_.runForwardMs += runResult.elapsedMs;
            result_.referenceForwardMs += referenceResult.elapsedMs;

            const FloatTensor& runStart = outputNamed(runResult, "start_logits", run_);
            const FloatTensor& runEnd = outputNamed(runResult, "end_logits", run_);
            const FloatTensor& referenceStart = outputNamed(referenceResult, "start_logits", reference_);
            const FloatTensor& referenceEnd = outputNamed(referenceResult, "end_logits", reference_);
            for (std::size_t i = 0; i < count; ++i) {
                PendingQuestion& q = *queue_[i].question;
                const std::size_t w = queue_[i].window;
                const std::size_t length = q.windows[w].encoding.ids.size();
                copyRow(runStart, i, length, q.runStart[w]);
                copyRow(runEnd, i, length, q.runEnd[w]);
                copyRow(referenceStart, i, length, q.referenceStart[w]);
                copyRow(referenceEnd, i, length, q.referenceEnd[w]);
                noteNonFinite(q, runResult, i);
                ++q.windowsDone;
            }
            windowsDone_ += count;
            queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(count));

            EvaluationUpdate update;
            while (!pending_.empty() && pending_.front().windowsDone == pending_.front().windows.size()) {
                finish(pending_.front(), update.finished);
                pending_.pop_front();
            }
            result_.examples.insert(result_.examples.end(), update.finished.begin(), update.finished.end());
            report(std::move(update));
        }
    }

private:
    // The first non-finite module of batch row `row`, kept when it runs before the question's
    // earlier windows' one. A backend that does not report rows gives the batch's first module to
    // every row (the closest it can tell).
    void noteNonFinite(PendingQuestion& q, const ForwardResult& runResult, std::size_t row) const
    {
        const std::string& module = runResult.firstNonFiniteByRow.size() > row ? runResult.firstNonFiniteByRow[row]
                                    : runResult.nonFinite.empty()              ? std::string()
                                                                               : runResult.nonFinite.front().module;
        const EncoderLayout& layout = run_.checkpoint().layout();
        if (!module.empty() && (q.firstNonFinite.empty() ||
                                executionRank(layout, module) < executionRank(layout, q.firstNonFinite)))
            q.firstNonFinite = module;
    }

    // In file order, the queue is topped up to one batch before every forward. Grouped by length,
    // the windows of the next kLengthPoolBatches batches are sorted by length, longest first, and
    // drained before more questions are read: each question finishes within its pool, and the
    // batches of a pool pad far less than batches of neighbours in the file.
    // The queue's first windows that make the next forward: up to batchSize of them, padded to the
    // longest, within options_.batchTokens (at least one).
    std::size_t windowsInNextBatch(std::size_t batchSize) const
    {
        std::size_t count = 0, longest = 0;
        while (count < std::min(batchSize, queue_.size())) {
            const std::size_t length = queue_[count].question->windows[queue_[count].window].encoding.ids.size();
            const std::size_t padded = std::max(longest, length) * (count + 1);
            if (count > 0 && options_.batchTokens > 0 && padded > options_.batchTokens)
                break;
            longest = std::max(longest, length);
            ++count;
        }
        return count;
    }

    void fillQueue(std::size_t batchSize, std::size_t total)
    {
        const bool byLength = options_.groupByLength;
        if (byLength && !queue_.empty())
            return;
        const std::size_t target = byLength ? batchSize * kLengthPoolBatches : batchSize;
        while (queue_.size() < target && next_ < total)
            enqueue(next_++);
        if (byLength)
            std::stable_sort(queue_.begin(), queue_.end(), [](const QueuedWindow& a, const QueuedWindow& b) {
                return a.question->windows[a.window].encoding.ids.size() > b.question->windows[b.window].encoding.ids.size();
            });
    }

    void enqueue(std::size_t index)
    {
        const SquadExample& example = dataset_.examples[index];
        PendingQuestion question;
        question.index = index;
        try {
            question.windows = buildQaWindows(run_.checkpoint().tokenizer(), example.question, example.context,
                                              result_.qa);
        } catch (const Cancelled&) {
            throw;
        } catch (const Error& e) {
            result_.skipped.push_back({index, example.id, e.what(), {}});
            return;
        }
        const std::size_t windows = question.windows.size();
        question.runStart.resize(windows);
        question.runEnd.resize(windows);
        question.referenceStart.resize(windows);
        question.referenceEnd.resize(windows);
        pending_.push_back(std::move(question));
        // std::deque keeps references to its elements valid across push_back and pop_front.
        PendingQuestion& stored = pending_.back();
        for (std::size_t w = 0; w < windows; ++w)
            queue_.push_back({&stored, w});
    }

    void finish(const PendingQuestion& q, std::vector<EvaluatedExample>& finished)
    {
        const SquadExample& example = dataset_.examples[q.index];
        EvaluatedExample e;
        e.index = q.index;
        e.example = example;
        e.windows = static_cast<int>(q.windows.size());
        // Non-finite logits of one question (an FP8 overflow, say) are that question's finding, not
        // a reason to stop the whole evaluation.
        e.firstNonFinite = q.firstNonFinite;
        std::string side = result_.runLabel + " run";
        try {
            e.runAnswer = bestAnswer(postprocessQa(q.windows, q.runStart, q.runEnd, example.context, result_.qa));
            side = "reference";
            e.referenceAnswer =
                bestAnswer(postprocessQa(q.windows, q.referenceStart, q.referenceEnd, example.context, result_.qa));
        } catch (const Error& error) {
            const std::string start =
                q.firstNonFinite.empty() || side == "reference" ? std::string() : " (inf/NaN first at " + q.firstNonFinite + ")";
            result_.skipped.push_back({q.index, example.id, side + ": " + error.what() + start, q.firstNonFinite});
            return;
        }
        e.run = scorePrediction(example, predictionText(e.runAnswer));
        e.reference = scorePrediction(example, predictionText(e.referenceAnswer));
        e.agree = answersAgree(e.runAnswer, e.referenceAnswer);
        // The logits are at hand for every question, so their SQNR costs nothing extra and lets
        // agreeing and disagreeing questions be compared.
        ErrorAccumulator logits;
        for (std::size_t w = 0; w < q.windows.size(); ++w) {
            logits.add(q.runStart[w].data(), q.referenceStart[w].data(), q.runStart[w].size());
            logits.add(q.runEnd[w].data(), q.referenceEnd[w].data(), q.runEnd[w].size());
        }
        e.logits = logits.result();
        finished.push_back(std::move(e));
    }

    void report(EvaluationUpdate update)
    {
        const std::size_t done = result_.examples.size() + result_.skipped.size();
        const double elapsed = secondsSince(start_);
        update.done = done;
        update.total = result_.questionsSelected;
        update.windowsDone = windowsDone_;
        update.elapsedSeconds = elapsed;
        update.questionsPerSecond = elapsed > 0 ? double(result_.examples.size()) / elapsed : 0.0;
        // Windows grouped by length finish their questions only at the end of a pool of batches:
        // counting finished questions alone would sit at 0% through the first pool of a large
        // model. Questions under way count for the share of their windows done, so the bar moves
        // with every batch.
        double underWay = 0;
        for (const PendingQuestion& q : pending_)
            underWay += double(q.windowsDone) / double(std::max<std::size_t>(1, q.windows.size()));
        progress_.report(kAnsweringShare * (double(done) + underWay) / double(std::max<std::size_t>(1, update.total)),
            // The bar counts work (questions done plus the windows of those under way); the words
            // name what each count is, so "150 of 265" next to 86 % reads as what it is.
            "Evaluating: " + std::to_string(done) + " of " + std::to_string(update.total) + " questions answered, "
                + std::to_string(windowsDone_) + (windowsDone_ == 1 ? " window" : " windows") + " run");
        if (options_.onUpdate)
            options_.onUpdate(update);
    }

    InferenceBackend& run_;
    InferenceBackend& reference_;
    const SquadDataset& dataset_;
    const EvaluationOptions& options_;
    const Progress& progress_;
    Progress forwardProgress_;
    EvaluationResult& result_;
    Clock::time_point start_;
    std::size_t next_ = 0;
    std::size_t windowsDone_ = 0;
    std::deque<PendingQuestion> pending_;
    std::deque<QueuedWindow> queue_;
};

std::string stoppedMessage(const EvaluationResult& result, const std::string& why)
{
    return why + " after " + std::to_string(result.examples.size()) + " of " +
           std::to_string(result.questionsSelected) + " questions";
}

void compareDisagreements(InferenceBackend& run, InferenceBackend* reference, const EvaluationOptions& options,
                          EvaluationResult& result, const Progress& progress)
{
    const Clock::time_point start = Clock::now();
    const std::size_t count = std::min(result.detailLimit, result.disagreements.size());
    Progress comparisonProgress;
    comparisonProgress.cancel = progress.cancel;
    for (std::size_t k = 0; k < count; ++k) {
        progress.report(kAnsweringShare + (1.0 - kAnsweringShare) * double(k) / double(count),
                        "Per-layer error of disagreement " + std::to_string(k + 1) + "/" + std::to_string(count));
        try {
            progress.throwIfCancelled();
            Disagreement& d = result.disagreements[k];
            const SquadExample& example = result.examples[d.example].example;
            ComparisonInput input;
            input.question = example.question;
            input.context = example.context;
            input.qaOptions = result.qa;
            input.runs = options.runs;
            const ComparisonResult comparison = compareRuns(run, reference, input, comparisonProgress);
            for (const CapturePointMetrics& point : comparison.points)
                if (point.kind == CaptureKind::Embeddings || point.kind == CaptureKind::LayerOutput)
                    d.layers.push_back(point);
            d.finalLogits = comparison.finalLogits;
            d.detailed = true;
            ++result.detailed;
        } catch (const Cancelled&) {
            result.complete = false;
            result.stoppedReason = "Cancelled while measuring the per-layer error of the disagreements (" +
                                   std::to_string(result.detailed) + " of " + std::to_string(count) + " done).";
            break;
        } catch (const Error& e) {
            // One example the comparison cannot run (memory, a model error) should not hide the rest.
            result.disagreements[k].detailError = e.what();
        }
    }
    result.detailSeconds = secondsSince(start);
}

} // namespace

ExampleScore scorePrediction(const SquadExample& example, const std::string& prediction)
{
    const std::vector<std::string> golds = usableGolds(example);
    ExampleScore score;
    score.exact = maxOverGold(exactMatchScore, prediction, golds);
    score.f1 = maxOverGold(f1Score, prediction, golds);
    return score;
}

SquadScores aggregateScores(const std::vector<ExampleScore>& scores, const std::vector<bool>& hasAnswer)
{
    if (scores.size() != hasAnswer.size())
        throw Error("SQuAD scoring got " + std::to_string(scores.size()) + " scores for " +
                    std::to_string(hasAnswer.size()) + " questions.");
    SquadScores out;
    double exact = 0, f1 = 0, hasExact = 0, hasF1 = 0, noExact = 0, noF1 = 0;
    for (std::size_t i = 0; i < scores.size(); ++i) {
        exact += scores[i].exact;
        f1 += scores[i].f1;
        if (hasAnswer[i]) {
            hasExact += scores[i].exact;
            hasF1 += scores[i].f1;
            ++out.hasAnsTotal;
        } else {
            noExact += scores[i].exact;
            noF1 += scores[i].f1;
            ++out.noAnsTotal;
        }
    }
    out.total = scores.size();
    const auto percent = [](double sum, std::size_t n) { return n ? 100.0 * sum / double(n) : 0.0; };
    out.exact = percent(exact, out.total);
    out.f1 = percent(f1, out.total);
    out.hasAnsExact = percent(hasExact, out.hasAnsTotal);
    out.hasAnsF1 = percent(hasF1, out.hasAnsTotal);
    out.noAnsExact = percent(noExact, out.noAnsTotal);
    out.noAnsF1 = percent(noF1, out.noAnsTotal);
    return out;
}

SquadScores scorePredictions(const std::vector<SquadExample>& examples, const std::vector<std::string>& predictions)
{
    if (examples.size() != predictions.size())
        throw Error("SQuAD scoring got " + std::to_string(predictions.size()) + " predictions for " +
                    std::to_string(examples.size()) + " questions.");
    std::vector<ExampleScore> scores;
    std::vector<bool> hasAnswer;
    for (std::size_t i = 0; i < examples.size(); ++i) {
        scores.push_back(scorePrediction(examples[i], predictions[i]));
        hasAnswer.push_back(!examples[i].golds.empty());
    }
    return aggregateScores(scores, hasAnswer);
}

EvaluationResult evaluateSquad(InferenceBackend& run, InferenceBackend* reference, const SquadDataset& dataset,
                               const EvaluationOptions& options, const Progress& progress)
{
    validateSetup(run, reference, dataset, options);

    EvaluationResult result;
    result.datasetPath = dataset.path;
    result.datasetVersion = dataset.version;
    result.squadV2 = dataset.isV2;
    result.runLabel = options.runs.run.label();
    result.run = options.runs.run;
    result.referenceIsStandIn = reference == nullptr;
    result.referenceLabel = reference ? "reference (" + reference->checkpoint().directory() + ")" : "dequant";
    if (!reference)
        result.note = "No reference checkpoint was given, so dequant (dequantized weights, float activations) "
                      "stands in for the reference.";
    result.qa = options.qa;
    result.qa.topK = 1;
    if (dataset.isV2 && !result.qa.nullThreshold)
        result.qa.nullThreshold = 0.0f;
    result.batchSize = options.batchSize;
    result.questionsInFile = dataset.examples.size();
    result.questionsSelected = options.maxSamples == 0 ? dataset.examples.size()
                                                       : std::min(options.maxSamples, dataset.examples.size());
    result.detailLimit = options.maxDetailedDisagreements;

    const Clock::time_point start = Clock::now();
    AnsweringPass pass(run, reference, dataset, options, progress, result);
    // Once a question is finished, a stop keeps what was done: an hour of evaluation is not thrown
    // away for a cancel or one failing batch. Before that, the caller gets the exception.
    try {
        pass.execute();
    } catch (const Cancelled&) {
        if (result.examples.empty())
            throw;
        result.complete = false;
        result.stoppedReason = stoppedMessage(result, "Cancelled") + ".";
    } catch (const Error& e) {
        if (result.examples.empty())
            throw;
        result.complete = false;
        result.stoppedReason = stoppedMessage(result, "Stopped by an error") + ": " + e.what();
    } catch (const std::bad_alloc&) {
        if (result.examples.empty())
            throw;
        result.complete = false;
        result.stoppedReason = stoppedMessage(result, "Ran out of memory") + ".";
    }
    result.seconds = secondsSince(start);
    result.questionsPerSecond = result.seconds > 0 ? double(result.examples.size()) / result.seconds : 0.0;

    summarize(result);
    summarizeNonFinite(result, run.checkpoint().layout());
    if (result.complete)
        compareDisagreements(run, reference, options, result, progress);
    progress.report(1.0, result.complete ? "Evaluated" : "Stopped");
    return result;
}

} // namespace scalescope
