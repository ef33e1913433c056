#pragma once
// The GUI's handle on the engine: owns the loaded checkpoint's EncoderModel and its reference, runs
// every model call on one dedicated worker thread (an engine is never used from two threads), and
// reports results as signals carrying immutable plain structs.
//
// Every request is a job of its JobTracker (jobs()): a result whose job was superseded by a newer
// request of the same kind is dropped, so a slow answer never overwrites a newer one. cancel()
// raises the engine's atomic cancel flag; the running call throws Cancelled at its next check and
// the session reports it. Progress and busy come from jobs() through queued calls: no
// processEvents(), no blocking connections.
#include <QObject>
#include <QString>
#include <QStringList>
#include <QThreadPool>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "analysis/consumers.h"
#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "engine/encoder_model.h"
#include "job_tracker.h"
#include "tasks/checkpoint_diff.h"
#include "tasks/compare_runs.h"
#include "tasks/device_check.h"
#include "tasks/evaluate.h"
#include "tasks/fill_mask.h"
#include "tasks/question_answering.h"
#include "tasks/sensitivity.h"

namespace scalescope {
struct CalibrationLabResult; // tasks/calibration_lab_result.h
}

namespace scalescope::ui {

// What produced a result: the checkpoint, reference, mode and device in effect when the run was
// asked for. A view compares its result's stamp with the session's current one to know whether it
// still describes what the window shows as open.
struct RunStamp {
    enum class Reference { Dequant, Folder, CpuEmulation };
    QString checkpoint;  // folder; empty when nothing is open
    Reference referenceKind = Reference::Dequant;
    QString referenceFolder; // for Reference::Folder
    RunMode mode = RunMode::Fp8;
    // How the run side sums FP8 products: Dl16 is the DL16 twin (fp8 and fp16 modes only).
    Accumulation accumulation = Accumulation::Float32;
    // The run side's attention: float, or AIU FP8 attention (math_fp8's K/V casts).
    AttentionPrecision attention = AttentionPrecision::Float;
    QString device = QStringLiteral("cpu"); // "cpu" or "runner:COMMAND"
    // The what-if of the run side (docs/ARCHITECTURE.md "Precision overrides"): Linears run in float, by exact
    // module name in layout order, and their short labels ("L3.ffn.in") in the same order. Only the
    // names count for equality; the labels follow from them.
    QStringList floatLinears;
    QStringList floatLabels;

    bool isValid() const { return !checkpoint.isEmpty(); }
    // The run side's overrides: every floatLinears entry Float.
    PrecisionOverrides overrides() const;
    // "2 Linears in float: L3.ffn.in, L7.attn.out" (at most `shown` labels, then "..."); empty
    // without overrides.
    QString floatText(int shown = 3) const;
    // "FP8", "Dequant", "FP8 + DL16", "FP8, FP8 attention": how a run is labelled on screen
    QString modeName() const;
    QString referenceText() const;
    QString deviceText() const;
    // One line for a stale banner or a chart stamp: "qa-fp8, FP8 vs qa-float, CPU" and, with
    // overrides, "; 1 Linear in float: L0.ffn.in".
    QString describe() const;
    // What differs between this and other, in words ("checkpoint", "mode and reference"); empty
    // when equal.
    QString differenceFrom(const RunStamp& other) const;
    friend bool operator==(const RunStamp& a, const RunStamp& b)
    {
        return a.checkpoint == b.checkpoint && a.referenceKind == b.referenceKind &&
               a.referenceFolder == b.referenceFolder && a.mode == b.mode &&
               a.accumulation == b.accumulation && a.attention == b.attention && a.device == b.device &&
               a.floatLinears == b.floatLinears;
    }
    friend bool operator!=(const RunStamp& a, const RunStamp& b) { return !(a == b); }
};

// What the window shows about a freshly opened checkpoint.
struct CheckpointInfo {
    QString directory;
    std::shared_ptr<const Checkpoint> checkpoint;
    std::vector<LinearScaleStatistics> statistics;
    std::vector<Finding> findings;
    std::vector<ConsumerReport> consumers; // what the AIU stack, vLLM and transformers will do with it
    std::vector<LinearInfo> linears;
    bool runnable = true;      // false when the engine refused it (findings say why)
    QString loadError;         // the engine's sentence when not runnable
    double loadMs = 0;
    QString deviceName;        // the backend's own name ("CPU (in-process)", the runner's)
};

struct AskOutcome {
    RunStamp stamp;
    QString question, context;
    std::shared_ptr<const ComparisonResult> comparison; // holds windows and both sides' logits
    std::vector<QaAnswer> runAnswers, referenceAnswers; // n-best
    QaOptions options;
    std::map<int64_t, std::string> specialTokens;       // the windows' specials as the tokenizer spells them
};

struct FillMaskOutcome {
    RunStamp stamp;
    QString text;
    int topK = 5;
    std::shared_ptr<const ComparisonResult> comparison; // fillMask holds both sides per mask
    // Per mask, top-k with token texts, for display.
    std::vector<std::vector<MaskPrediction>> run, reference;
};

// Values of one capture point in the run and in the reference (for error histograms/scatter).
struct CapturePointValues {
    RunStamp stamp;
    QString name;
    std::vector<float> run, reference;
};

// What the Device check panel asks for (DESIGN "Device checks and gates"): the run under test is
// the selected device in fp8 mode, or, on the in-process CPU, the Mode box's mode; it is held
// against the twins (checkRunNames()) on the first maxQuestions questions of a SQuAD file.
struct DeviceCheckRequest {
    QString squadFile;
    int maxQuestions = 200;   // 0: all
    // Empty: thresholds from a noise floor (reference vs reference-fp16) measured on the same
    // questions first; otherwise a thresholds file written by noise-floor.
    QString thresholdsFile;
    QStringList twins;        // the first decides the verdict
    double maxFailureRate = 0.01;
    double maxF1Drop = 1.0;
};

struct DeviceCheckOutcome {
    RunStamp stamp;
    DeviceCheckRequest request;
    CheckResult result;
    // One line each, for the panel and the report: what ran as the run under test, where the
    // thresholds came from.
    QString runUnderTest;
    QString thresholdsSource;
    QString cacheNote; // how much of the CPU side came from the disk cache (tasks/forward_cache.h)
};

// File > Compare With...: a second checkpoint B beside the open one (A). The diff of the two
// (tasks/checkpoint_diff.h), B's scale statistics, and, when an input ran on A, B's fp8 run on the
// same input against the same reference as A's run (null otherwise).
struct CompareWithOutcome {
    RunStamp stamp;                                    // A's state it was made in
    QString directory;
    std::shared_ptr<const Checkpoint> checkpoint;
    std::vector<LinearScaleStatistics> statistics;
    std::shared_ptr<const CheckpointDiff> diff;
    std::shared_ptr<const ComparisonResult> comparison;
};

class WorkbenchSession : public QObject {
    Q_OBJECT
public:
    explicit WorkbenchSession(QObject* parent = nullptr);
    ~WorkbenchSession() override;

    void openCheckpoint(const QString& dir);
    // Empty dir: dequantized weights of the checkpoint stand in for the reference.
    void setReference(const QString& dir);
    // The checkpoint itself on the in-process CPU, in the run's mode: what a device run is
    // compared with to see the device's own departure from the exact FP8 emulation.
    void setCpuEmulationReference();
    // "cpu" or "runner:COMMAND"; reopens the open checkpoint on the new device. When the new
    // device cannot run it, the checkpoint is reopened on the previous device and
    // deviceSwitchFailed says why.
    void setDevice(const QString& device);
    QString device() const { return device_; }
    void ask(const QString& question, const QString& context, const QaOptions& options);
    void fillMask(const QString& text, int topK);
    void capturePoint(const QString& name);
    // SQuAD evaluation of the open checkpoint against the reference; partial results on cancel.
    // nullThreshold applies to SQuAD 2.0 files (QaOptions::nullThreshold; 0 is the official rule)
    // and is ignored for SQuAD 1.1, whose questions all have answers.
    void evaluate(const QString& squadFile, int maxSamples, double nullThreshold = 0.0);
    // Sensitivity sweep (linear, unit or layer) on the last question's or mask's input; entries arrive
    // live through sensitivityEntry, a cancel keeps what finished.
    void sensitivity(const QString& granularity);
    // Called on the worker thread as each sweep entry finishes, before the next one starts (the
    // GUI hears of the entry later, queued): a cancel from here stops the sweep at that exact
    // point, which tests need. Set it while no sweep runs.
    void setSweepEntryObserver(std::function<void(const SensitivityEntry&)> observer)
    {
        sweepEntryObserver_ = std::move(observer);
    }
    // A device check of the open checkpoint (DeviceCheckRequest); the result arrives through
    // deviceChecked. On a runner device the twins run in this process on a copy of the checkpoint
    // (loaded once per checkpoint); on the CPU they share the run's model.
    void deviceCheck(const DeviceCheckRequest& request);
    // keep-float of the open checkpoint to dst with these Linears float (reference weights when a
    // reference folder is chosen).
    void keepFloat(const QStringList& modules, const QString& dst, bool overwrite);
    // The calibration lab of the open float checkpoint on these text files (evaluationFile may be
    // empty); the result arrives through calibrationLabFinished.
    void calibrationLab(const QString& calibrationFile, const QString& evaluationFile);
    // Writes the open float checkpoint quantized with the first `samples` texts of calibrationFile
    // (calibratedQuantizeOptions) to dst, never over an existing folder; calibratedWritten says so.
    void writeCalibrated(const QString& calibrationFile, qint64 samples, const QString& dst);
    void cancel();
    // Opens B (in this process, on the CPU) beside the open checkpoint, diffs the two and runs B on
    // the last input (compareWithReady). Called again after a new run, it reuses B. Opening another
    // checkpoint drops B (compareWithDirectory() is then empty).
    void compareWith(const QString& dir);
    QString compareWithDirectory() const { return compareDir_; }
    // File > Clear Comparison: B is no longer compared (a B job under way is then dropped).
    void clearCompareWith() { compareDir_.clear(); }
    // The run side of asks and masks: fp8 (default) or dequant (weights-only error), and how it
    // sums FP8 products (the DL16 twin with fp8 or fp16; the Mode box sets both at once).
    void setRunMode(RunMode mode, Accumulation accumulation = Accumulation::Float32);
    RunMode runMode() const { return runMode_; }
    Accumulation accumulation() const { return accumulation_; }
    // The run side's attention in every later ask, mask, capture, evaluation and sweep (a sweep
    // with FP8 attention adds its per-layer attention entries). Emits stateChanged on a change.
    void setAttention(AttentionPrecision attention);
    AttentionPrecision attention() const { return attention_; }
    // The what-if: these Linears run in float in every later ask, mask, capture and evaluation
    // (the sweep sets its own). Names that are not Linears of the open checkpoint are dropped; the
    // rest are kept in layout order. Emits stateChanged when the set changes, so results made with
    // other overrides turn stale and the last input reruns. Opening another checkpoint clears them.
    void setFloatLinears(const QStringList& modules);
    QStringList floatLinears() const { return floatLinears_; }
    // The state a run asked for now would be stamped with.
    RunStamp currentStamp() const;

    bool busy() const { return jobs_.busy(); }
    // Busy, progress and the cancel flag of every job the session runs.
    JobTracker* jobs() { return &jobs_; }
    QString checkpointDirectory() const { return checkpointDir_; }
    QString referenceDirectory() const { return referenceDir_; }

signals:
    void checkpointOpened(std::shared_ptr<const scalescope::ui::CheckpointInfo> info);
    void referenceChanged(const QString& label);
    void deviceChanged(const QString& deviceName);
    // The device in `failedDevice` could not run the checkpoint; the session is back on device().
    void deviceSwitchFailed(const QString& failedDevice, const QString& message);
    // currentStamp() changed: a checkpoint opened, the reference, mode or device changed.
    void stateChanged();
    void answered(std::shared_ptr<const scalescope::ui::AskOutcome> outcome);
    void masksFilled(std::shared_ptr<const scalescope::ui::FillMaskOutcome> outcome);
    void capturePointReady(std::shared_ptr<const scalescope::ui::CapturePointValues> values);
    // After every batch: questions done of total and the current rate.
    void evaluationProgress(int done, int total, double questionsPerSecond, int windowsDone);
    void evaluated(std::shared_ptr<const scalescope::EvaluationResult> result, const scalescope::ui::RunStamp& stamp);
    void sensitivityEntry(const scalescope::ui::RunStamp& stamp, std::shared_ptr<const scalescope::SensitivityEntry> entry);
    void sensitivityFinished(std::shared_ptr<const scalescope::SensitivityResult> result, const scalescope::ui::RunStamp& stamp);
    void deviceChecked(std::shared_ptr<const scalescope::ui::DeviceCheckOutcome> outcome);
    void keptFloat(const QString& dst, const QString& summary);
    void calibrationLabFinished(std::shared_ptr<const scalescope::CalibrationLabResult> result, const QString& checkpoint);
    void calibratedWritten(const QString& dst, const QString& summary);
    void failed(const QString& operation, const QString& message);
    void compareWithReady(std::shared_ptr<const scalescope::ui::CompareWithOutcome> outcome);

private:
    using JobKind = JobTracker::Kind;
    // Runs work on the worker thread; deliver runs on the GUI thread unless a newer job of the same
    // kind started meanwhile.
    void submit(JobKind kind, const QString& operation, std::function<std::function<void()>(const Progress&)> work);
    void submitOpen(const QString& dir, const QString& fallbackDevice);
    // On the GUI thread once a checkpoint is open on `usedDevice` (`device` was asked for).
    void deliverOpened(std::shared_ptr<const CheckpointInfo> result, const QString& device, const QString& usedDevice,
                       const QString& deviceError);

    JobTracker jobs_;
    QThreadPool worker_;
    std::function<void(const SensitivityEntry&)> sweepEntryObserver_;
    QString checkpointDir_;
    QString referenceDir_;
    // The reference side of the stamp, as the GUI asked for it (the worker only sees copies).
    RunStamp::Reference referenceKind_ = RunStamp::Reference::Dequant;
    RunMode runMode_ = RunMode::Fp8;
    Accumulation accumulation_ = Accumulation::Float32;
    AttentionPrecision attention_ = AttentionPrecision::Float;
    QString device_ = QStringLiteral("cpu");
    QStringList floatLinears_, floatLabels_;
    // The checkpoint last delivered to the GUI thread (its layout names and orders the overrides).
    std::shared_ptr<const Checkpoint> openedCheckpoint_;
    // Touched only on the worker thread.
    std::shared_ptr<InferenceBackend> run_;
    std::shared_ptr<InferenceBackend> reference_;
    // The open checkpoint in this process for a device check's twins when run_ is a runner.
    std::shared_ptr<InferenceBackend> inProcessTwin_;
    std::optional<ComparisonInput> lastInput_;
    QString compareDir_;                       // GUI thread: B's folder, "" when none
    std::shared_ptr<InferenceBackend> compareB_; // worker thread: B's engine
};

} // namespace scalescope::ui

Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::CheckpointInfo>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::AskOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::FillMaskOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::CapturePointValues>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::EvaluationResult>)
Q_DECLARE_METATYPE(scalescope::ui::RunStamp)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::DeviceCheckOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::SensitivityEntry>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::SensitivityResult>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::ui::CompareWithOutcome>)
Q_DECLARE_METATYPE(std::shared_ptr<const scalescope::CalibrationLabResult>)
