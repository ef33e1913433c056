#pragma once
// SQuAD evaluation of an FP8 run against its reference: every question is answered by the run
// (RunMode::Fp8) and by the reference (a float checkpoint, or the run's own checkpoint in
// RunMode::Dequant standing in), scored with the official SQuAD metric (exact match and F1, max over
// the gold answers; SQuAD 2.0's no-answer handling and HasAns/NoAns breakdown), and the two are
// compared answer by answer. For the first disagreements the per-layer error of that one example is
// measured with compareRuns.
//
// Throughput: windows of several questions share one forward (EvaluationOptions::batchSize), with
// windows of similar length batched together (EvaluationOptions::groupByLength).
// Threading: runs on the calling thread; the models must not be used elsewhere meanwhile.
// Errors: invalid options, a model that is not a QA model or a reference that does not match throw
// scalescope::Error before any question runs. Once a question is finished, cancellation and errors
// no longer throw: the result holds the finished questions, complete == false and the reason.
// A question that cannot be windowed (too long for maxSeqLen) or whose logits are not finite is
// skipped and listed, not fatal.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tasks/compare_runs.h"
#include "model/inference_backend.h"
#include "numerics/metrics.h"
#include "tasks/question_answering.h"
#include "tasks/squad_dataset.h"

namespace scalescope {

// One question's official scores: exact match 0 or 1, F1 in [0, 1].
struct ExampleScore {
    double exact = 0;
    double f1 = 0;
};

// Summary with the official SQuAD 2.0 script's meaning: exact and f1 in percent (0..100) over
// `total` questions; HasAns_* over questions with gold answers, NoAns_* over those without.
struct SquadScores {
    double exact = 0;
    double f1 = 0;
    std::size_t total = 0;
    double hasAnsExact = 0;
    double hasAnsF1 = 0;
    std::size_t hasAnsTotal = 0;
    double noAnsExact = 0;
    double noAnsF1 = 0;
    std::size_t noAnsTotal = 0;
};

// The official per-question score of `prediction` ("" = no answer): gold texts that normalise to
// nothing are dropped, and a question left without golds expects the empty answer.
ExampleScore scorePrediction(const SquadExample& example, const std::string& prediction);
// predictions[i] answers examples[i]. Throws scalescope::Error when the sizes differ.
SquadScores scorePredictions(const std::vector<SquadExample>& examples, const std::vector<std::string>& predictions);
// The same from per-question scores already computed; hasAnswer[i] is !examples[i].golds.empty().
SquadScores aggregateScores(const std::vector<ExampleScore>& scores, const std::vector<bool>& hasAnswer);

struct EvaluatedExample {
    std::size_t index = 0;          // position in SquadDataset::examples
    SquadExample example;           // a copy, so that the result stands on its own
    QaAnswer runAnswer;             // best answer; isNull (text "") for "no answer"
    QaAnswer referenceAnswer;
    ExampleScore run;
    ExampleScore reference;
    bool agree = false;             // normalised answer texts are equal
    int windows = 0;
    ErrorMetrics logits;            // start and end logits of all windows, run vs reference
    // The run's first module (execution order, over the question's windows) whose output held
    // inf/NaN, "" when all were finite: where an fp16 overflow starts.
    std::string firstNonFinite;
};

struct SkippedExample {
    std::size_t index = 0;          // position in SquadDataset::examples
    std::string id;
    std::string reason;
    std::string firstNonFinite;     // as EvaluatedExample's: a question skipped for NaN logits names it
};

// A module where the run's inf/NaN starts, and in how many questions it does.
struct NonFiniteStart {
    std::string module;
    std::size_t questions = 0;
};

struct Disagreement {
    std::size_t example = 0;        // index into EvaluationResult::examples
    bool detailed = false;          // per-layer metrics below were computed
    // Embeddings output and each encoder layer's output, in order, for this example alone.
    std::vector<CapturePointMetrics> layers;
    ErrorMetrics finalLogits;
    std::string detailError;        // why the per-layer comparison failed, when it did
};

// Sent after every batch, on the calling thread; `finished` holds the questions this batch
// completed (a GUI appends them to its table while the evaluation runs).
struct EvaluationUpdate {
    std::size_t done = 0;           // questions finished or skipped so far
    std::size_t total = 0;          // questions selected
    std::size_t windowsDone = 0; // windows through both models so far (questions finish in pools)
    double elapsedSeconds = 0;
    double questionsPerSecond = 0;
    std::vector<EvaluatedExample> finished;
};

struct EvaluationOptions {
    // topK is forced to 1. nullThreshold: when unset on SQuAD 2.0 data it becomes 0 (the null
    // answer wins when its score beats the best span's); on SQuAD 1.1 it stays as given.
    QaOptions qa;
    int batchSize = 16;                        // windows per forward, across questions
    // ...and no more padded tokens per forward than this (a single window always runs): a
    // forward's largest activations (tokens x intermediate width) then stay small enough for the
    // engine's allocator to reuse instead of mapping them afresh each time (engine/compute_threads.h
    // keepForwardBuffers). With 16 windows of ~300 tokens a question took 4x longer than with 4.
    // The cap also sets evaluate's memory: a batch through both models holds ~450 KB per token at
    // roberta-base width, and the heap keeps about two batches' worth. 64 SQuAD questions, CLI
    // peak / questions per second on an AVX2 EPYC: 2048 tokens 2.92 GB / 1.46, 1024 2.22 GB / 1.38,
    // 512 1.54 GB / 1.34; on an AVX-512 EPYC about 1200 tokens (4 windows) ran faster than 2048.
    std::size_t batchTokens = 1024;
    // Each window is as long as its tokens and a batch is padded to its longest window, so batches
    // are formed from windows of similar length: windows of the next few batches' questions are
    // sorted by length first. false batches them in file order (more padding, the same answers).
    bool groupByLength = true;
    std::size_t maxSamples = 0;                // the first N questions of the file; 0 = all
    std::size_t maxDetailedDisagreements = 50; // compareRuns is run for this many disagreements
    std::function<void(const EvaluationUpdate&)> onUpdate;
    // How each side runs. The defaults are the product's comparison (FP8 against a float reference
    // or the dequantized stand-in); the workbench passes its Mode box, and the run's own mode for
    // the reference when that is the CPU emulation of the same checkpoint.
    RunPair runs;
};

struct EvaluationResult {
    std::string datasetPath;
    std::string datasetVersion;
    bool squadV2 = false;
    std::string runLabel;                   // "fp8", "dequant", "fp16", "fp8+dl16": RunSettings::label of the run
    RunSettings run;                        // how the run side ran
    std::string referenceLabel;             // "reference (DIR)" or "dequant"
    bool referenceIsStandIn = false;
    std::string note;                       // says so when dequant stands in for the reference
    QaOptions qa;                           // as used (threshold defaulted, topK 1)
    int batchSize = 0;

    std::size_t questionsInFile = 0;
    std::size_t questionsSelected = 0;      // after maxSamples
    std::vector<EvaluatedExample> examples; // finished, in file order
    std::vector<SkippedExample> skipped;

    SquadScores runScores;                  // over `examples`
    SquadScores referenceScores;
    std::size_t agreeing = 0;
    double agreement = 0;                   // agreeing / examples.size(), 0..1

    // Questions (finished or skipped) whose run had inf/NaN in some module output, and the modules
    // where it started, in execution order.
    std::size_t nonFiniteQuestions = 0;
    std::vector<NonFiniteStart> nonFiniteStarts;

    std::vector<Disagreement> disagreements; // every finished example where the answers differ
    std::size_t detailLimit = 0;             // maxDetailedDisagreements as used
    std::size_t detailed = 0;                // disagreements with per-layer metrics

    double seconds = 0;                      // answering pass, wall clock
    double questionsPerSecond = 0;           // finished questions / seconds
    // Token positions the run's forwards computed (windows x their batch's longest window, padding
    // included) and the windows' own tokens: how much padding the batching cost.
    std::size_t batchTokens = 0;
    std::size_t windowTokens = 0;
    double runForwardMs = 0;
    double referenceForwardMs = 0;
    double detailSeconds = 0;                // the per-layer comparisons

    bool complete = true;
    std::string stoppedReason;               // why complete is false
};

// reference may be null: then `run` in dequant mode is the reference and the result says so.
EvaluationResult evaluateSquad(InferenceBackend& run, InferenceBackend* reference, const SquadDataset& dataset,
                               const EvaluationOptions& options, const Progress& progress = {});

} // namespace scalescope
