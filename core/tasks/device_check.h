#pragma once
// Device checks and gates (docs/ARCHITECTURE.md "Device checks and gates"): where a run departs
// from a twin it should track, per input and capture point, against thresholds measured as a noise
// floor.
//
// - measureRuns runs every input once on the run under test and once on each twin, with every
//   capture point recorded, and keeps per input and point the metrics below (nothing else: the
//   tensors are dropped after each input).
// - A noise floor is measureRuns between two runs that should agree up to rounding; a threshold per
//   point and metric is the 99th percentile of how far they drift apart (for metrics where lower
//   is worse, SQNR and cosine, the 1st percentile).
// - A check holds the run against the thresholds: a point fails on an input when any of its metrics
//   lies beyond its threshold; the first failing point in execution order is where that input's
//   departure starts. With QA inputs, EM/F1 of both sides and a paired bootstrap interval of the F1
//   difference. The verdict is on the first twin; the others say which twin the run tracks best.
//
// Threading: runs on the calling thread (a device pool fans each forward out itself). Errors:
// inputs that do not suit the model, runs on different checkpoints' layouts, or thresholds of
// another model throw scalescope::Error before any input runs; cancellation throws Cancelled.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/option_error.h"
#include "common/progress.h"
#include "model/inference_backend.h"
#include "model/run_settings.h"
#include "tasks/evaluate.h"
#include "tasks/forward_cache.h"
#include "tasks/question_answering.h"
#include "tasks/squad_dataset.h"

namespace scalescope {

// The metrics a check compares, in this order in every table and file.
enum class CheckMetric { SqnrDb, Cosine, MaxAbs, CrossEntropy, MeanProbabilityDifference };
constexpr std::size_t kCheckMetricCount = 5;
const std::array<CheckMetric, kCheckMetricCount>& allCheckMetrics();
// "sqnr_db", "cosine", "max_abs", "cross_entropy", "mean_probability_difference".
const char* checkMetricName(CheckMetric metric);
bool parseCheckMetric(const std::string& name, CheckMetric& metric);
// SQNR and cosine fall as a run departs; the others rise.
bool lowerIsWorse(CheckMetric metric);
// The values a metric can take, ends included: SQNR any (+-inf too), cosine -1..1, max_abs and
// cross_entropy (a KL divergence) 0..inf, mean_probability_difference 0..1. A run identical to its
// twin takes the passing end (+inf, 1, 0), so it passes every threshold inside the range.
struct MetricRange {
    double low, high;
    bool contains(double value) const { return value >= low && value <= high; }
};
MetricRange checkMetricRange(CheckMetric metric);

// The point at the head's logits, after every capture point: "qa_logits" (start and end logits
// together) or "logits" (a masked LM's, over real tokens). Only it has the two distribution metrics:
// per window (QA: over positions; masked LM: per position over the vocabulary) the cross-entropy of
// the twin's distribution under the run's beyond the twin's own entropy,
// -sum p_twin (log p_run - log p_twin) (nats; 0 for identical distributions; the KL divergence),
// and the mean absolute difference of the probabilities, each averaged over windows (and
// start/end, positions). The twin's entropy is taken out so that a run identical to its twin
// passes on flat distributions (undecided questions) as well as on peaked ones.
extern const char* const kQaLogitsPoint;
extern const char* const kMaskedLmLogitsPoint;

// Values of every metric at one point for one input; NaN where a point has no such metric.
using CheckValues = std::array<double, kCheckMetricCount>;

// One side of a measurement: a backend and how it runs there. The task sets what it records.
struct CheckRun {
    std::string name;                 // "device", "emulation", "reference", "fp16", "dl16", ...
    InferenceBackend* backend = nullptr;
    RunSettings settings;
    const Checkpoint* floatWeightsFrom = nullptr; // ForwardOptions::floatWeightsFrom
    std::string description;          // one line for reports: what runs where
};

// The runs this machine makes of a checkpoint, by the names noise-floor --runs and check --against
// take (checkRunNames, in this order):
//   reference       the float reference in float32 (dequant standing in when none is loaded)
//   reference-fp16  the same in the fp16 twin (every Linear float, every module rounded to half)
//   emulation       the checkpoint's FP8 run (fp8 mode) on this CPU
//   fp16            the FP8 run in the fp16 twin
//   dl16            the FP8 run with DL16 accumulation (docs/ARCHITECTURE.md "Run modes")
//   dequant         dequantized weights on float activations
struct CheckRunSources {
    InferenceBackend* checkpoint = nullptr; // the checkpoint under test, in this process
    InferenceBackend* reference = nullptr;  // a float reference, or null
};
const std::vector<std::string>& checkRunNames();
// Throws OptionError naming the option (Runs or Against) and the known names for an unknown name.
CheckRun namedCheckRun(const std::string& name, const CheckRunSources& sources, TaskOption option);

// The inputs: SQuAD questions (each with its windows) or texts (one sequence each).
struct CheckInputSet {
    enum class Kind { Squad, Texts };
    Kind kind = Kind::Squad;
    std::string path;                 // the file they came from
    std::string sha256;               // of that file's bytes
    std::size_t inFile = 0;           // questions or texts in the file
    std::vector<SquadExample> questions;
    std::vector<std::string> texts;
    std::vector<std::optional<std::string>> pairs; // one per text: the second text of a pair, if any
    bool squadV2 = false;
    std::size_t count() const { return kind == Kind::Squad ? questions.size() : texts.size(); }
    std::string inputId(std::size_t index) const; // question id, or "text N" (1-based line order)
};
// The first maxSamples questions (0: all) of a SQuAD file. Throws naming the file.
CheckInputSet squadCheckInputs(const std::string& path, std::size_t maxSamples);
// The texts of a texts file as readTextsFile (tasks/task_datasets.h) reads it: one per non-blank
// line, or JSONL {"text", "pair"?} (at most maxSamples, 0: all). Throws naming the file and line.
// An embedder, a classifier or a reranker runs each as its task does (a pair in the family's pair
// layout, cut to the model's limit, an embedder's max_seq_length); other heads skip a text longer
// than the model.
CheckInputSet textCheckInputs(const std::string& path, std::size_t maxSamples);

struct CheckMeasureOptions {
    QaOptions qa;                     // windowing and answers (topK forced to 1)
    // Inputs per forward: their windows run as one batch (a device pool splits its rows). Each
    // input is measured on its own rows only.
    std::size_t inputsPerForward = 8;
    // When set, the twins' forwards are read from and kept in it (tasks/forward_cache.h).
    ForwardCache* cache = nullptr;
    Progress progress;
};

// Per input: the metrics of the run against each twin at every point, and QA answers.
struct InputMeasurement {
    std::string id;
    bool skipped = false;
    std::string skipReason;           // e.g. the question does not fit maxSeqLen
    // [twin][point]: the run against twin t at point p (the same point order as RunMeasurements).
    std::vector<std::vector<CheckValues>> values;
    // QA only: the run's and each twin's prediction and official scores.
    bool hasAnswer = false;           // the question has gold answers (SquadScores' HasAns)
    std::string runPrediction;
    ExampleScore runScore;
    std::vector<std::string> twinPredictions;
    std::vector<ExampleScore> twinScores;
};

struct RunMeasurements {
    CheckInputSet::Kind kind = CheckInputSet::Kind::Squad;
    std::string runName;
    std::string runDescription;
    std::vector<std::string> twinNames;
    std::vector<std::string> twinDescriptions;
    std::vector<std::string> points;  // capture points in execution order, then the logits point
    std::vector<std::string> pointLabels; // short labels for charts ("L2.attn.out.out")
    std::vector<int> pointLayers;         // encoder layer of each point, -1 outside the layers
    std::vector<InputMeasurement> inputs; // input order
    double runForwardMs = 0;
    std::vector<double> twinForwardMs;
    double seconds = 0;
    std::size_t measuredInputs() const;   // not skipped
};

// Throws scalescope::Error when the sides run different layouts or an input does not suit the model.
RunMeasurements measureRuns(const CheckRun& run, const std::vector<CheckRun>& twins, const CheckInputSet& inputs,
                            const CheckMeasureOptions& options);

// p-th percentile (0..100) by linear interpolation between the closest ranks of the sorted values
// (numpy's default): rank = p/100 * (n - 1). NaNs are left out; +-inf sort at the ends and an
// interpolation touching one returns it. NaN when no value is left.
double percentileOf(std::vector<double> values, double p);

// A threshold per point and metric, with what produced it.
struct PointThresholds {
    std::string point;
    std::size_t samples = 0;
    // NaN: the point has no such metric. Fails when value < threshold for lowerIsWorse metrics,
    // value > threshold otherwise.
    CheckValues thresholds{};
};
struct ThresholdSet {
    double percentile = 99;
    std::vector<PointThresholds> points;
    // Provenance, written to and read from the file as it is: checkpoint and reference hashes,
    // runs, inputs (file, hash, count), the program version and the date.
    std::map<std::string, std::string> provenance;
    const PointThresholds* find(const std::string& point) const;
};
// Thresholds from a noise-floor measurement between runs[0] (as the run) and its single twin.
ThresholdSet noiseFloorThresholds(const RunMeasurements& floor, double percentile = 99);

// Whether a value passes its threshold (a NaN threshold always passes; a NaN value never does).
bool passesThreshold(CheckMetric metric, double value, double threshold);

// Paired bootstrap of the mean of `differences`: `resamples` draws of n indices with replacement
// from std::mt19937_64(seed), index = generator() % n; the interval is the (1-confidence)/2 and
// (1+confidence)/2 percentiles (percentileOf) of the resampled means.
struct BootstrapInterval {
    double mean = 0;   // of the differences themselves
    double low = 0, high = 0;
    int resamples = 0;
    std::uint64_t seed = 0;
    double confidence = 0.95;
};
constexpr std::uint64_t kBootstrapSeed = 20261202;
BootstrapInterval pairedBootstrap(const std::vector<double>& differences, int resamples = 2000,
                                  std::uint64_t seed = kBootstrapSeed, double confidence = 0.95);

struct CheckGate {
    double maxFailureRate = 0.01;     // per point
    double maxF1Drop = 1.0;           // F1 points (0..100): the drop interval's high end at most this
};

struct PointCheck {
    std::string point;
    std::string label;
    int layer = -1;
    std::size_t inputs = 0;           // measured inputs
    std::size_t failures = 0;         // inputs where this point failed
    double failureRate = 0;
    std::size_t departuresStartHere = 0; // inputs whose first failing point this is
    CheckValues median{};             // the run against the twin, median over inputs
    CheckValues worst{};              // worst value over inputs
    std::array<std::size_t, kCheckMetricCount> metricFailures{}; // inputs failing on each metric
    bool checked = true;              // the thresholds name this point
    bool failed = false;              // checked and failureRate > gate.maxFailureRate
};

struct TwinCheck {
    std::string twin;
    std::string description;
    std::vector<PointCheck> points;   // measurement order
    std::vector<std::string> firstFailingPoint; // per input ("" when none failed or skipped)
    std::size_t failingInputs = 0;    // inputs with any failing point
    // The point where most departures start ("" when none fail), and on how many inputs.
    std::string departureStart;
    std::size_t departureStartInputs = 0;
    std::size_t failedPoints = 0;
    // QA: the twin's scores and the run-minus-twin F1 difference (F1 points, paired over questions).
    std::optional<SquadScores> twinScores;
    std::optional<BootstrapInterval> f1Difference;
};

struct CheckResult {
    RunMeasurements measurements;
    ThresholdSet thresholds;
    CheckGate gate;
    std::optional<SquadScores> runScores;
    std::vector<TwinCheck> twins;     // --against order; twins[0] decides the verdict
    // Per point, the twin with the lowest failure rate (ties: the higher median SQNR, then order).
    std::vector<std::string> bestTwinPerPoint;
    bool passed = false;
    std::vector<std::string> reasons; // one sentence per failed gate, empty when passed
    std::string verdictSentence;      // one line: pass/fail, where, how often
};

// measureRuns between runs[0] and runs[1] of `names` (default reference, reference-fp16), then
// noiseFloorThresholds; provenance gets "runs" and the inputs' file, hash and count.
ThresholdSet measureNoiseFloor(const CheckRunSources& sources, const std::vector<std::string>& names,
                               const CheckInputSet& inputs, const CheckMeasureOptions& options);

// Holds a measurement against thresholds. Throws when no threshold matches any measured point.
CheckResult evaluateCheck(RunMeasurements measurements, const ThresholdSet& thresholds, const CheckGate& gate);

} // namespace scalescope
