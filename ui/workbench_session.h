#pragma once
// The GUI's handle on the engine: owns the loaded checkpoint's EncoderModel and its reference, runs
// every model call on one dedicated worker thread (an engine is never used from two threads), and
// reports results as signals carrying immutable plain structs (session_results.h).
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

#include "engine/encoder_model.h"
#include "job_tracker.h"
#include "session_results.h"
#include "tasks/fix_provenance.h"

namespace scalescope::ui {

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
    // The sequence tasks (workbench_session_tasks.cpp), on both sides of runPair: a sentence
    // embedder's texts (prompt: a prompt name of the checkpoint, a literal text, or "" for its
    // default), a query's passages (a cross-encoder, or an embedder by cosine), a classifier's text
    // and optional pair. Each also compares one of its inputs at every capture point (the one
    // furthest from its reference), which Errors, Scales, Triage and the sweep then use.
    void embed(const QStringList& texts, const QString& prompt);
    // comparedPassage: the cross-encoder pair to compare (a fix's rerun compares the pair its
    // sweep measured); -1: the passage whose rank moved most.
    void rerank(const QString& query, const QStringList& passages, int comparedPassage = -1);
    void classify(const QString& text, const QString& pair);
    // A sequence task's dataset (an STS file, a BEIR folder, a classification file) evaluated on
    // both sides as `evaluate --sts | --retrieval | --classification` does (tasks/task_evaluation.h);
    // maxSamples 0: every row (every query of a BEIR folder). Progress and Cancel as any job.
    void evaluateTask(TaskDatasetKind kind, const QString& path, int maxSamples);
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
    // `measurement` (what the sweep verified) goes to the fix's provenance file with the last input.
    void keepFloat(const QStringList& modules, const QString& dst, bool overwrite, const FixMeasurement& measurement = {});
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
    // The two sides a task of this stamp runs: the stamp's run, against dequantized weights (a float
    // reference runs the same either way) or, with the CPU emulation as the reference, the same mode.
    RunPair runPair(const RunStamp& stamp) const;

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
    void textsEmbedded(std::shared_ptr<const scalescope::ui::EmbedOutcome> outcome);
    void passagesReranked(std::shared_ptr<const scalescope::ui::RerankOutcome> outcome);
    void textClassified(std::shared_ptr<const scalescope::ui::ClassifyOutcome> outcome);
    void taskEvaluated(std::shared_ptr<const scalescope::ui::TaskEvaluationOutcome> outcome);
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
    // On the worker thread: the backend a device check's twins run on (this CPU).
    InferenceBackend* checkTwinBackend(const RunStamp& stamp, const Progress& progress);

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
    // The task panel's whole input behind lastInput_ (tasks/fix_task_input.h: a rerank's query and
    // passages), for a fix's provenance; null after a question or a fill-mask. Every run that sets
    // lastInput_ sets it too, so it is read only beside lastInput_.
    nlohmann::json lastTaskInput_;
    QString compareDir_;                       // GUI thread: B's folder, "" when none
    std::shared_ptr<InferenceBackend> compareB_; // worker thread: B's engine
};

} // namespace scalescope::ui
