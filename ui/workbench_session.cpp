#include "workbench_session.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>

#include "tool_version.h"
#include "analysis/verdict.h"
#include "common/error.h"
#include "consumer_words.h"
#include "device/checkpoint_manifest.h"
#include "report/check_report.h"
#include "tasks/keep_float.h"
#include "engine/calibration_lab.h"
#include "engine/open_backend.h"
#include "engine/quantize.h"

namespace scalescope::ui {
namespace {

// The GUI offers no window-size setting: windows are 384 tokens (stride 128), or as long as the
// model takes when that is shorter, with the stride shrunk in proportion.
QaOptions fitWindowsToModel(QaOptions options, const EncoderLayout& layout)
{
    const int maxTokens = static_cast<int>(layout.maxSequenceLength());
    if (options.maxSeqLen > maxTokens) {
        options.docStride = options.docStride * maxTokens / options.maxSeqLen;
        options.maxSeqLen = maxTokens;
    }
    return options;
}

// The part [from, to) of a job's progress bar, for a job made of several core calls.
Progress progressPart(const Progress& whole, double from, double to)
{
    Progress part;
    part.cancel = whole.cancel;
    if (whole.callback)
        part.callback = [whole, from, to](double fraction, const std::string& stage) {
            whole.report(from + (to - from) * fraction, stage);
        };
    return part;
}

// Where a device check's thresholds come from: a noise floor measured now on the same inputs
// (reference vs reference-fp16), or a thresholds file. `source` says which in words.
ThresholdSet checkThresholds(const DeviceCheckRequest& request, const CheckRunSources& sources,
                             const CheckInputSet& inputs, const CheckMeasureOptions& options, const QString& checkpoint,
                             QString& source)
{
    if (request.thresholdsFile.isEmpty()) {
        ThresholdSet thresholds = measureNoiseFloor(sources, {}, inputs, options); // reference vs reference-fp16
        source = WorkbenchSession::tr("measured now: %1 on the same questions")
                     .arg(QString::fromStdString(thresholds.provenance["run_descriptions"]));
        return thresholds;
    }
    ThresholdSet thresholds = readThresholdsFile(request.thresholdsFile.toStdString());
    source = WorkbenchSession::tr("read from %1").arg(request.thresholdsFile);
    const auto recorded = thresholds.provenance.find("checkpoint_sha256");
    if (recorded != thresholds.provenance.end()
        && recorded->second != CheckpointManifest::of(checkpoint.toStdString()).hash)
        source += WorkbenchSession::tr(", measured on another checkpoint (%1)")
                      .arg(QString::fromStdString(thresholds.provenance["checkpoint"]));
    return thresholds;
}

// The input a fix was verified on, as its provenance file records it, with the task panel's whole
// input (`task`, null after a question or a fill-mask) that a fix's rerun runs again.
nlohmann::json recordedInputs(const ComparisonInput& input, const nlohmann::json& task)
{
    if (!input.question.empty())
        return {{"question", input.question}, {"context", input.context}};
    nlohmann::json inputs;
    if (task.is_object())
        inputs["task"] = task;
    if (!input.text.empty())
        inputs["text"] = input.text;
    if (!input.pair.empty())
        inputs["pair"] = input.pair;
    if (!input.inputIds.empty())
        inputs["input_ids"] = input.inputIds;
    return inputs.is_null() ? nlohmann::json() : inputs;
}

// The run a device check tests (DeviceCheckRequest): the device in fp8 mode, or on the
// in-process CPU the run in the Mode box's mode, with the what-if's float Linears either way.
CheckRun runUnderTest(InferenceBackend* backend, const RunStamp& stamp, const CheckRunSources& sources)
{
    const bool inProcess = stamp.run.device == "cpu";
    CheckRun run;
    run.backend = backend;
    run.settings = RunSettings(inProcess ? stamp.run.mode : RunMode::Fp8).withOverrides(stamp.run.overrides);
    run.floatWeightsFrom = floatWeightSource(sources.reference);
    run.name = inProcess ? runModeName(run.settings.mode) : "device";
    const std::string checkpointName = QFileInfo(stamp.checkpoint).fileName().toStdString();
    run.description = inProcess ? "the " + run.name + " run of " + checkpointName + " on this CPU"
                                : backend->deviceName() + " running " + checkpointName + " in fp8 mode";
    if (!stamp.floatLinears.isEmpty())
        run.description += ", " + stamp.floatText().toStdString();
    return run;
}

QString cacheNote(const ForwardCache& cache)
{
    return cache.problem().empty() ? WorkbenchSession::tr("CPU side: %1 batches from the cache in %2, %3 computed")
                                         .arg(cache.hits())
                                         .arg(QString::fromStdString(cache.folder()))
                                         .arg(cache.misses())
                                   : WorkbenchSession::tr("The check cache is off for this run: %1")
                                         .arg(QString::fromStdString(cache.problem()));
}

} // namespace

WorkbenchSession::WorkbenchSession(QObject* parent) : QObject(parent)
{
    worker_.setMaxThreadCount(1); // one engine, one thread
    worker_.setExpiryTimeout(-1);
    qRegisterMetaType<std::shared_ptr<const CheckpointInfo>>();
    qRegisterMetaType<std::shared_ptr<const AskOutcome>>();
    qRegisterMetaType<std::shared_ptr<const FillMaskOutcome>>();
    qRegisterMetaType<std::shared_ptr<const CapturePointValues>>();
    qRegisterMetaType<std::shared_ptr<const EmbedOutcome>>();
    qRegisterMetaType<std::shared_ptr<const RerankOutcome>>();
    qRegisterMetaType<std::shared_ptr<const ClassifyOutcome>>();
    qRegisterMetaType<std::shared_ptr<const EvaluationResult>>();
    qRegisterMetaType<std::shared_ptr<const TaskEvaluationOutcome>>();
    qRegisterMetaType<RunStamp>();
    qRegisterMetaType<std::shared_ptr<const SensitivityEntry>>();
    qRegisterMetaType<std::shared_ptr<const SensitivityResult>>();
    qRegisterMetaType<std::shared_ptr<const DeviceCheckOutcome>>();
    qRegisterMetaType<std::shared_ptr<const CompareWithOutcome>>();
    qRegisterMetaType<std::shared_ptr<const CalibrationLabResult>>();
}

WorkbenchSession::~WorkbenchSession()
{
    jobs_.cancel();
    worker_.clear();
    worker_.waitForDone();
}

void WorkbenchSession::cancel()
{
    jobs_.cancel();
}

void WorkbenchSession::submit(JobKind kind, const QString& operation,
                              std::function<std::function<void()>(const Progress&)> work)
{
    const JobTracker::Ticket ticket = jobs_.start(kind);
    QPointer<WorkbenchSession> self(this);
    auto task = [this, self, ticket, operation, work = std::move(work)] {
        Progress progress;
        progress.cancel = jobs_.cancelFlag();
        progress.callback = [this](double fraction, const std::string& stage) {
            jobs_.reportProgress(fraction, QString::fromStdString(stage));
        };
        std::function<void()> deliver;
        QString error;
        try {
            deliver = work(progress);
        } catch (const Cancelled&) {
            error = tr("Cancelled.");
        } catch (const Error& e) {
            error = QString::fromUtf8(e.what());
        } catch (const std::bad_alloc&) {
            error = tr("Out of memory.");
        } catch (const std::exception& e) {
            error = tr("Internal error: %1").arg(QString::fromUtf8(e.what()));
        }
        QMetaObject::invokeMethod(
            self.data(),
            [this, self, ticket, operation, deliver, error] {
                if (!self)
                    return;
                if (jobs_.isCurrent(ticket)) {
                    if (!error.isEmpty())
                        emit failed(operation, error);
                    else if (deliver)
                        deliver();
                }
                jobs_.finish();
            },
            Qt::QueuedConnection);
    };
    worker_.start(std::move(task));
}

RunStamp WorkbenchSession::currentStamp() const
{
    RunStamp stamp;
    stamp.checkpoint = checkpointDir_;
    stamp.referenceKind = referenceKind_;
    stamp.referenceFolder = referenceKind_ == RunStamp::Reference::Folder ? referenceDir_ : QString();
    // The one place the window's controls become a run's settings.
    stamp.run = RunSettings(runMode_, accumulation_);
    stamp.run.attention = attention_;
    stamp.run.device = device_.toStdString();
    for (const QString& module : floatLinears_)
        stamp.run.overrides.modules[module.toStdString()] = Precision::Float;
    stamp.floatLinears = floatLinears_;
    stamp.floatLabels = floatLabels_;
    return stamp;
}

RunPair WorkbenchSession::runPair(const RunStamp& stamp) const
{
    RunPair pair;
    pair.run = stamp.run;
    // The CPU emulation as the reference runs the same checkpoint in the run's own mode.
    if (stamp.referenceKind == RunStamp::Reference::CpuEmulation && reference_)
        pair.reference = RunSettings(stamp.run.mode);
    return pair;
}

void WorkbenchSession::setFloatLinears(const QStringList& modules)
{
    QStringList names, labels;
    if (openedCheckpoint_) {
        const EncoderLayout& layout = openedCheckpoint_->layout();
        for (const LayoutLinear& linear : layout.linears()) {
            const QString name = QString::fromStdString(linear.module);
            if (modules.contains(name)) {
                names << name;
                labels << QString::fromStdString(linear.shortLabel);
            }
        }
    }
    if (names == floatLinears_)
        return;
    floatLinears_ = names;
    floatLabels_ = labels;
    emit stateChanged();
}

void WorkbenchSession::setRunMode(RunMode mode, Accumulation accumulation)
{
    if (!accumulationProblem(mode, accumulation).empty())
        accumulation = Accumulation::Float32; // dequant has no FP8 products to sum otherwise
    if (mode == runMode_ && accumulation == accumulation_)
        return;
    runMode_ = mode;
    accumulation_ = accumulation;
    emit stateChanged();
}

void WorkbenchSession::setAttention(AttentionPrecision attention)
{
    if (attention == attention_)
        return;
    attention_ = attention;
    emit stateChanged();
}

void WorkbenchSession::setDevice(const QString& device)
{
    if (device == device_)
        return;
    const QString previous = device_;
    device_ = device;
    if (!checkpointDir_.isEmpty())
        submitOpen(checkpointDir_, previous);
    else
        emit stateChanged();
}

void WorkbenchSession::openCheckpoint(const QString& dir)
{
    submitOpen(dir, QString());
}

void WorkbenchSession::submitOpen(const QString& dir, const QString& fallbackDevice)
{
    compareDir_.clear(); // B belongs to the checkpoint it was compared with
    const QString previousDir = checkpointDir_;
    checkpointDir_ = dir;
    const QString device = device_;
    // A copy: the worker must not read GUI-thread state while the GUI may change it.
    const bool emulationReference = referenceKind_ == RunStamp::Reference::CpuEmulation;
    submit(JobKind::Open, tr("Open checkpoint"), [this, dir, device, fallbackDevice, previousDir, emulationReference](
                                                     const Progress& progress) -> std::function<void()> {
        QElapsedTimer timer;
        timer.start();
        auto info = std::make_shared<CheckpointInfo>();
        info->directory = dir;
        progress.report(0.0, "Reading checkpoint");
        try {
            info->checkpoint = Checkpoint::open(dir.toStdString());
        } catch (const Error& e) {
            // The previous checkpoint stays loaded and open: nothing on screen changes owner.
            const QString message = QString::fromUtf8(e.what());
            return [this, previousDir, message] {
                checkpointDir_ = previousDir;
                emit failed(tr("Open checkpoint"), message);
            };
        }
        info->statistics = computeScaleStatistics(*info->checkpoint);
        info->findings = diagnoseCheckpoint(*info->checkpoint, info->statistics);
        info->consumers = assessConsumers(*info->checkpoint);
        progress.throwIfCancelled();
        // The checkpoint is open already; the device only runs it (opened once, not twice).
        // Several lines are a pool of devices (see BackendPool).
        auto load = [&](const QString& on) -> std::shared_ptr<InferenceBackend> {
            const std::string text = on.toStdString();
            const std::vector<DeviceSpec> devices = text.find('\n') == std::string::npos
                                                        ? std::vector<DeviceSpec>{parseDeviceSpec(text)}
                                                        : parseDeviceList(text, "The device pool");
            return openBackends(devices, info->checkpoint, progress);
        };
        // A checkpoint the engine refuses can still be inspected; its findings explain why.
        std::shared_ptr<InferenceBackend> model;
        run_.reset(); // a runner process for the previous checkpoint stops before the next starts
        compareB_.reset();
        // The last input was asked of the previous checkpoint (another head may not take it); a
        // device switch reopens the same checkpoint and keeps it.
        if (dir != previousDir)
            lastInput_.reset();
        inProcessTwin_.reset();
        QString usedDevice = device;
        QString deviceError;
        try {
            model = load(device);
        } catch (const Cancelled&) {
            throw;
        } catch (const Error& e) {
            info->loadError = QString::fromUtf8(e.what());
        }
        if (!model && !fallbackDevice.isEmpty()) {
            deviceError = info->loadError;
            info->loadError.clear();
            usedDevice = fallbackDevice;
            try {
                model = load(fallbackDevice);
            } catch (const Cancelled&) {
                throw;
            } catch (const Error& e) {
                info->loadError = QString::fromUtf8(e.what());
            }
        }
        if (model)
            info->linears = model->linears();
        info->runnable = model != nullptr;
        run_ = model;
        if (emulationReference && model)
            reference_ = EncoderModel::load(info->checkpoint, progress);
        info->loadMs = double(timer.nsecsElapsed()) / 1e6;
        info->deviceName = model ? QString::fromStdString(model->deviceName()) : QString();
        std::shared_ptr<const CheckpointInfo> result = info;
        return [this, result, device, usedDevice, deviceError] { deliverOpened(result, device, usedDevice, deviceError); };
    });
}

void WorkbenchSession::deliverOpened(std::shared_ptr<const CheckpointInfo> result, const QString& device,
                                     const QString& usedDevice, const QString& deviceError)
{
    // The overrides name Linears of the checkpoint they were set on; a device switch reopens the
    // same one and keeps them.
    if (!openedCheckpoint_ || result->directory != QString::fromStdString(openedCheckpoint_->directory())) {
        floatLinears_.clear();
        floatLabels_.clear();
    }
    openedCheckpoint_ = result->checkpoint;
    if (usedDevice != device) {
        device_ = usedDevice;
        emit deviceSwitchFailed(device, deviceError);
    }
    emit deviceChanged(result->deviceName);
    emit checkpointOpened(result);
    emit stateChanged();
}

void WorkbenchSession::setCpuEmulationReference()
{
    referenceDir_.clear();
    referenceKind_ = RunStamp::Reference::CpuEmulation;
    const QString checkpoint = checkpointDir_;
    submit(JobKind::Reference, tr("Load reference"), [this, checkpoint](const Progress& progress) -> std::function<void()> {
        reference_ = checkpoint.isEmpty() ? nullptr : std::shared_ptr<InferenceBackend>(EncoderModel::load(checkpoint.toStdString(), progress));
        return [this] {
            emit referenceChanged(tr("CPU FP8 emulation (same checkpoint)"));
            emit stateChanged();
        };
    });
}

void WorkbenchSession::setReference(const QString& dir)
{
    referenceDir_ = dir;
    referenceKind_ = dir.isEmpty() ? RunStamp::Reference::Dequant : RunStamp::Reference::Folder;
    submit(JobKind::Reference, tr("Load reference"), [this, dir](const Progress& progress) -> std::function<void()> {
        if (dir.isEmpty()) {
            reference_.reset();
            return [this] {
                emit referenceChanged(tr("dequantized weights (stand-in)"));
                emit stateChanged();
            };
        }
        reference_ = EncoderModel::load(dir.toStdString(), progress);
        return [this, dir] {
            emit referenceChanged(dir);
            emit stateChanged();
        };
    });
}

void WorkbenchSession::ask(const QString& question, const QString& context, const QaOptions& options)
{
    const RunStamp stamp = currentStamp();
    submit(JobKind::Run, tr("Answer"), [this, question, context, options, stamp](
                                           const Progress& progress) -> std::function<void()> {
        if (!run_)
            throw Error("No runnable checkpoint is open.");
        ComparisonInput input;
        input.question = question.toStdString();
        input.context = context.toStdString();
        input.qaOptions = fitWindowsToModel(options, run_->checkpoint().layout());
        input.runs = runPair(stamp);
        auto outcome = std::make_shared<AskOutcome>();
        outcome->stamp = stamp;
        outcome->question = question;
        outcome->context = context;
        outcome->options = input.qaOptions;
        auto comparison = std::make_shared<ComparisonResult>(compareRuns(*run_, reference_.get(), input, progress));
        const QaAgreement& qa = *comparison->qa;
        outcome->specialTokens = qa.specialTokens;
        outcome->runAnswers = qa.runAnswers;
        outcome->referenceAnswers = qa.referenceAnswers;
        outcome->comparison = comparison;
        lastInput_ = input;
        lastTaskInput_ = nullptr;
        std::shared_ptr<const AskOutcome> result = outcome;
        return [this, result] { emit answered(result); };
    });
}

void WorkbenchSession::compareWith(const QString& dir)
{
    compareDir_ = dir;
    const RunStamp stamp = currentStamp();
    submit(JobKind::CompareWith, tr("Compare with"), [this, dir, stamp](const Progress& progress) -> std::function<void()> {
        if (!run_)
            throw Error("No runnable checkpoint is open to compare with.");
        auto outcome = std::make_shared<CompareWithOutcome>();
        outcome->stamp = stamp;
        outcome->directory = dir;
        const std::string path = dir.toStdString();
        if (!compareB_ || compareB_->checkpoint().directory() != path) {
            compareB_.reset();
            try {
                std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(path);
                checkSameModel(run_->checkpoint(), *checkpoint);
                compareB_ = openBackend(DeviceSpec{}, checkpoint, progress);
            } catch (const Error& e) {
                // B is dropped, so that the next run does not try it again.
                const QString message = QString::fromUtf8(e.what());
                return [this, dir, message] {
                    if (compareDir_ == dir)
                        compareDir_.clear();
                    emit failed(tr("Compare with"), message);
                };
            }
        }
        outcome->checkpoint = std::shared_ptr<const Checkpoint>(compareB_, &compareB_->checkpoint());
        outcome->statistics = computeScaleStatistics(*outcome->checkpoint);
        outcome->diff = std::make_shared<CheckpointDiff>(diffCheckpoints(run_->checkpoint(), *outcome->checkpoint));
        if (lastInput_) {
            // The same input against the same yardstick as A's last run: the reference, or A itself
            // in the reference mode A's run used (dequant standing in, or the CPU emulation).
            ComparisonInput input = *lastInput_;
            InferenceBackend* yardstick = reference_ ? reference_.get() : run_.get();
            auto comparison = std::make_shared<ComparisonResult>(compareRuns(*compareB_, yardstick, input, progress));
            if (!reference_) {
                comparison->referenceLabel = "dequant of A";
                comparison->referenceIsStandIn = true;
            }
            outcome->comparison = comparison;
        }
        std::shared_ptr<const CompareWithOutcome> result = outcome;
        return [this, result] {
            if (compareDir_ == result->directory)
                emit compareWithReady(result);
        };
    });
}

void WorkbenchSession::fillMask(const QString& text, int topK)
{
    const RunStamp stamp = currentStamp();
    submit(JobKind::Run, tr("Fill mask"), [this, text, topK, stamp](
                                              const Progress& progress) -> std::function<void()> {
        if (!run_)
            throw Error("No runnable checkpoint is open.");
        ComparisonInput input;
        input.text = text.toStdString();
        input.fillMask = true;
        input.topK = topK;
        input.runs = runPair(stamp);
        auto outcome = std::make_shared<FillMaskOutcome>();
        outcome->stamp = stamp;
        outcome->text = text;
        outcome->topK = topK;
        outcome->comparison = std::make_shared<ComparisonResult>(compareRuns(*run_, reference_.get(), input, progress));
        for (const auto& mask : outcome->comparison->fillMask->masks) {
            outcome->run.push_back(mask.runPredictions);
            outcome->reference.push_back(mask.referencePredictions);
        }
        lastInput_ = input;
        lastTaskInput_ = nullptr;
        std::shared_ptr<const FillMaskOutcome> result = outcome;
        return [this, result] { emit masksFilled(result); };
    });
}

void WorkbenchSession::capturePoint(const QString& name)
{
    const RunStamp stamp = currentStamp();
    submit(JobKind::Capture, tr("Capture"), [this, name, stamp](const Progress& progress) -> std::function<void()> {
        if (!run_ || !lastInput_)
            throw Error("Run a question, a mask or a task first; the error views use its input.");
        // Re-run both sides capturing only this point: cheaper than keeping every capture of the
        // last comparison in memory.
        // The batch the last comparison ran: QA windows, a text (or a pair, in the family's layout)
        // or the ids a sequence task embedded.
        const EncoderInputs inputs = prepareComparisonInput(*run_, *lastInput_).inputs;
        // The overrides are those of the run the drill-down belongs to; the what-if is the run side's
        // alone, as in compareRuns.
        ForwardOptions runOptions = forwardOptions(lastInput_->runs.run.withOverrides(stamp.run.overrides));
        runOptions.floatWeightsFrom = floatWeightSource(reference_.get());
        runOptions.capture.names = {name.toStdString()};
        ForwardOptions referenceOptions = forwardOptions(lastInput_->runs.reference);
        referenceOptions.floatWeightsFrom = runOptions.floatWeightsFrom;
        referenceOptions.capture = runOptions.capture;
        // The K/V cast points exist on both sides once the run has FP8 attention, as in compareRuns.
        referenceOptions.attentionCastPoints = runOptions.attentionCastPoints =
            lastInput_->runs.run.attention != AttentionPrecision::Float;
        InferenceBackend& reference = reference_ ? *reference_ : *run_;
        auto values = std::make_shared<CapturePointValues>();
        values->stamp = stamp;
        values->name = name;
        ForwardResult r = reference.forward(inputs, referenceOptions, progress);
        ForwardResult x = run_->forward(inputs, runOptions, progress);
        if (r.captures.empty() || x.captures.empty())
            throw Error("Capture point \"" + name.toStdString() + "\" does not exist.");
        values->reference = std::move(r.captures.front().tensor.values);
        values->run = std::move(x.captures.front().tensor.values);
        std::shared_ptr<const CapturePointValues> result = values;
        return [this, result] { emit capturePointReady(result); };
    });
}

void WorkbenchSession::evaluate(const QString& squadFile, int maxSamples, double nullThreshold)
{
    QPointer<WorkbenchSession> self(this);
    const RunStamp stamp = currentStamp();
    submit(JobKind::Evaluate, tr("Evaluate"),
        [this, self, squadFile, maxSamples, nullThreshold, stamp](const Progress& progress) -> std::function<void()> {
            if (!run_)
                throw Error("No runnable checkpoint is open.");
            const SquadDataset dataset = readSquadFile(squadFile.toStdString());
            EvaluationOptions options;
            options.qa = fitWindowsToModel(options.qa, run_->checkpoint().layout());
            if (dataset.isV2)
                options.qa.nullThreshold = static_cast<float>(nullThreshold);
            options.runs = runPair(stamp);
            options.maxSamples = static_cast<std::size_t>(std::max(0, maxSamples));
            options.onUpdate = [self](const EvaluationUpdate& update) {
                const int done = static_cast<int>(update.done);
                const int total = static_cast<int>(update.total);
                const double rate = update.questionsPerSecond;
                const int windows = static_cast<int>(update.windowsDone);
                QMetaObject::invokeMethod(
                    self.data(),
                    [self, done, total, rate, windows] {
                        if (self)
                            emit self->evaluationProgress(done, total, rate, windows);
                    },
                    Qt::QueuedConnection);
            };
            std::shared_ptr<const EvaluationResult> result = std::make_shared<EvaluationResult>(
                evaluateSquad(*run_, reference_.get(), dataset, options, progress));
            return [this, result, stamp] { emit evaluated(result, stamp); };
        });
}

void WorkbenchSession::sensitivity(const QString& granularity)
{
    QPointer<WorkbenchSession> self(this);
    // The sweep sets its own overrides on the checkpoint as it is: its results claim none.
    RunStamp stamp = currentStamp();
    stamp.run = stamp.run.withOverrides({});
    stamp.floatLinears.clear();
    stamp.floatLabels.clear();
    submit(JobKind::Sensitivity, tr("Sensitivity"), [this, self, granularity, stamp, observer = sweepEntryObserver_](const Progress& progress) -> std::function<void()> {
        if (!run_ || !lastInput_)
            throw Error("Ask a question, fill a mask or run a task first; the sweep runs on that input.");
        SensitivityInput input;
        input.single = *lastInput_;
        input.single.runs.run = input.single.runs.run.withOverrides({});
        SensitivityOptions options;
        options.granularity = granularity.toStdString();
        // The suggestion aims where the Triage verdict turns good: on a model graded poor whose
        // answer still happens to agree on this one input, "the answer agrees" is already met
        // and the sweep would suggest nothing to fix.
        options.targetSqnrDb = verdictThresholds().goodSqnrDb;
        // The sweep is about FP8 Linears: in Dequant mode it still sweeps the fp8 run; the FP16 twin sweeps the twin.
        // FP8 attention adds an entry per layer.
        options.run = stamp.run;
        options.run.mode = stamp.run.mode == RunMode::Fp16 ? RunMode::Fp16 : RunMode::Fp8;
        options.onEntry = [self, stamp, observer](const SensitivityEntry& entry) {
            if (observer)
                observer(entry);
            auto copy = std::make_shared<const SensitivityEntry>(entry);
            QMetaObject::invokeMethod(self.data(), [self, stamp, copy] {
                if (self)
                    emit self->sensitivityEntry(stamp, copy);
            }, Qt::QueuedConnection);
        };
        // The CPU-emulation reference is the checkpoint itself: the sweep needs a float yardstick.
        InferenceBackend* reference = stamp.referenceKind == RunStamp::Reference::Folder ? reference_.get() : nullptr;
        auto result = std::make_shared<const SensitivityResult>(runSensitivity(*run_, reference, input, options, progress));
        return [this, result, stamp] { emit sensitivityFinished(result, stamp); };
    });
}

InferenceBackend* WorkbenchSession::checkTwinBackend(const RunStamp& stamp, const Progress& progress)
{
    // The twins run the checkpoint on this CPU: the run itself when it runs here, else the
    // CPU-emulation reference when that is loaded, else a copy loaded once for the checks.
    if (stamp.run.device == "cpu")
        return run_.get();
    if (stamp.referenceKind == RunStamp::Reference::CpuEmulation && reference_)
        return reference_.get();
    if (!inProcessTwin_)
        inProcessTwin_ = EncoderModel::load(stamp.checkpoint.toStdString(), progressPart(progress, 0, 0.05));
    return inProcessTwin_.get();
}

void WorkbenchSession::deviceCheck(const DeviceCheckRequest& request)
{
    const RunStamp stamp = currentStamp();
    submit(JobKind::DeviceCheck, tr("Device check"), [this, request, stamp](const Progress& progress) -> std::function<void()> {
        if (!run_)
            throw Error("No runnable checkpoint is open.");
        if (request.twins.isEmpty())
            throw Error("Choose at least one twin to check the run against.");
        const bool inProcess = stamp.run.device == "cpu";
        CheckRunSources sources;
        sources.checkpoint = checkTwinBackend(stamp, progress);
        sources.reference = stamp.referenceKind == RunStamp::Reference::Folder ? reference_.get() : nullptr;

        const CheckInputSet inputs
            = squadCheckInputs(request.squadFile.toStdString(), std::size_t(std::max(0, request.maxQuestions)));
        CheckMeasureOptions options;
        options.qa = fitWindowsToModel(options.qa, run_->checkpoint().layout());
        // The twins' forwards (and the noise floor's) come from the disk cache when an earlier
        // check ran them on these questions: a second device costs only its own runs.
        ForwardCache cache;
        options.cache = &cache;

        // The noise floor runs two sides per question, the check one more than it has twins.
        const double floorShare = request.thresholdsFile.isEmpty() ? 2.0 / (2.0 + 1.0 + request.twins.size()) : 0.0;
        const double start = inProcess ? 0.0 : 0.05;
        const double split = start + (1.0 - start) * floorShare;
        auto outcome = std::make_shared<DeviceCheckOutcome>();
        outcome->stamp = stamp;
        outcome->request = request;
        options.progress = progressPart(progress, start, split);
        const ThresholdSet thresholds = checkThresholds(request, sources, inputs, options, stamp.checkpoint,
                                                        outcome->thresholdsSource);

        const CheckRun run = runUnderTest(run_.get(), stamp, sources);
        outcome->runUnderTest = QString::fromStdString(run.description);
        std::vector<CheckRun> twins;
        for (const QString& name : request.twins)
            twins.push_back(namedCheckRun(name.toStdString(), sources, TaskOption::Against));
        options.progress = progressPart(progress, split, 1.0);
        RunMeasurements measured = measureRuns(run, twins, inputs, options);
        CheckGate gate;
        gate.maxFailureRate = request.maxFailureRate;
        gate.maxF1Drop = request.maxF1Drop;
        outcome->result = evaluateCheck(std::move(measured), thresholds, gate);
        outcome->cacheNote = cacheNote(cache);
        std::shared_ptr<const DeviceCheckOutcome> result = outcome;
        return [this, result] { emit deviceChecked(result); };
    });
}

void WorkbenchSession::calibrationLab(const QString& calibrationFile, const QString& evaluationFile)
{
    const QString checkpoint = checkpointDir_;
    submit(JobKind::Calibrate, tr("Calibration lab"),
           [this, checkpoint, calibrationFile, evaluationFile](const Progress& progress) -> std::function<void()> {
               if (calibrationFile.isEmpty())
                   throw Error("The calibration lab needs a calibration file (one text per line).");
               CalibrationLabOptions options;
               options.calibrationTexts = readCalibrationTexts(calibrationFile.toStdString());
               if (!evaluationFile.isEmpty())
                   options.evalTexts = readCalibrationTexts(evaluationFile.toStdString(), "evaluation file");
               std::shared_ptr<const CalibrationLabResult> result = std::make_shared<const CalibrationLabResult>(
                   runCalibrationLab(checkpoint.toStdString(), options, progress));
               return [this, result, checkpoint] { emit calibrationLabFinished(result, checkpoint); };
           });
}

void WorkbenchSession::writeCalibrated(const QString& calibrationFile, qint64 samples, const QString& dst)
{
    const QString checkpoint = checkpointDir_;
    submit(JobKind::WriteCalibrated, tr("Write calibrated checkpoint"),
           [this, checkpoint, calibrationFile, samples, dst](const Progress& progress) -> std::function<void()> {
               if (dst.isEmpty())
                   throw Error("Name the folder to write the calibrated checkpoint to.");
               QuantizeOptions options = calibratedQuantizeOptions(readCalibrationTexts(calibrationFile.toStdString()), samples);
               options.inputFiles.push_back(calibrationFile.toStdString());
               quantizeCheckpoint(checkpoint.toStdString(), dst.toStdString(), options, progress);
               const QString summary = tr("Wrote %1: FP8 per channel, static per-tensor activations calibrated on the first "
                                          "%2 texts of %3.")
                                           .arg(dst)
                                           .arg(samples)
                                           .arg(QFileInfo(calibrationFile).fileName());
               return [this, dst, summary] { emit calibratedWritten(dst, summary); };
           });
}

void WorkbenchSession::keepFloat(const QStringList& modules, const QString& dst, bool overwrite, const FixMeasurement& measurement)
{
    const QString checkpoint = checkpointDir_;
    const QString referenceDir = referenceKind_ == RunStamp::Reference::Folder ? referenceDir_ : QString();
    submit(JobKind::KeepFloat, tr("Save fixed checkpoint"), [this, modules, dst, overwrite, checkpoint, referenceDir, measurement](const Progress& progress) -> std::function<void()> {
        KeepFloatOptions options;
        for (const QString& m : modules)
            options.modules.push_back(m.toStdString());
        options.referenceDir = referenceDir.toStdString();
        options.overwrite = overwrite;
        options.toolVersion = toolVersion();
        options.measurement = measurement;
        if (options.measurement.known() && lastInput_)
            options.measurement.inputs = recordedInputs(*lastInput_, lastTaskInput_);
        const KeepFloatResult written = scalescope::keepFloat(checkpoint.toStdString(), dst.toStdString(), options, progress);
        // Judged on the copy as written (the consumer rules on its folder, as inspect judges it), not
        // on the original with the set float as the sweep's suggestion was.
        QString summary = tr("Wrote %1 with %2 Linear(s) float (%3 weights). Judged on the checkpoint as written: %4.")
                              .arg(dst)
                              .arg(modules.size())
                              .arg(QString::fromStdString(written.weightSource), validityForConsumersText(written.consumers, false));
        if (!written.loadingNote.empty())
            summary += QLatin1Char(' ') + QString::fromStdString(written.loadingNote);
        return [this, dst, summary] { emit keptFloat(dst, summary); };
    });
}

} // namespace scalescope::ui

