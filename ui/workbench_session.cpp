#include "workbench_session.h"

#include <QElapsedTimer>
#include <QMetaObject>
#include <QPointer>

#include "common/error.h"
#include "device/open_backend.h"

namespace scalescope::ui {
namespace {

// The GUI offers no window-size setting: windows are 384 tokens (stride 128), or as long as the
// model takes when that is shorter, with the stride shrunk in proportion.
QaOptions fitWindowsToModel(QaOptions options, const ModelConfig& config)
{
    const int maxTokens = static_cast<int>(EncoderLayout(config).maxSequenceLength());
    if (options.maxSeqLen > maxTokens) {
        options.docStride = options.docStride * maxTokens / options.maxSeqLen;
        options.maxSeqLen = maxTokens;
    }
    return options;
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
    qRegisterMetaType<std::shared_ptr<const EvaluationResult>>();
}

WorkbenchSession::~WorkbenchSession()
{
    cancel_ = true;
    worker_.clear();
    worker_.waitForDone();
}

void WorkbenchSession::cancel()
{
    if (running_ > 0)
        cancel_ = true;
}

void WorkbenchSession::finishJob()
{
    if (--running_ == 0) {
        cancel_ = false;
        emit busyChanged(false);
    }
}

void WorkbenchSession::submit(JobKind kind, const QString& operation,
                              std::function<std::function<void()>(const Progress&)> work)
{
    const quint64 id = ++nextId_;
    latest_[static_cast<int>(kind)] = id;
    if (running_++ == 0)
        emit busyChanged(true);
    QPointer<WorkbenchSession> self(this);
    auto task = [this, self, id, kind, operation, work = std::move(work)] {
        Progress progress;
        progress.cancel = &cancel_;
        progress.callback = [self](double fraction, const std::string& stage) {
            const QString text = QString::fromStdString(stage);
            QMetaObject::invokeMethod(self.data(), [self, fraction, text] {
                if (self)
                    emit self->progress(fraction, text);
            }, Qt::QueuedConnection);
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
        QMetaObject::invokeMethod(self.data(), [this, self, id, kind, operation, deliver, error] {
            if (!self)
                return;
            const bool current = latest_[static_cast<int>(kind)] == id;
            if (current) {
                if (!error.isEmpty())
                    emit failed(operation, error);
                else if (deliver)
                    deliver();
            }
            finishJob();
        }, Qt::QueuedConnection);
    };
    worker_.start(std::move(task));
}

void WorkbenchSession::setDevice(const QString& device)
{
    device_ = device;
    if (!checkpointDir_.isEmpty())
        openCheckpoint(checkpointDir_);
}

void WorkbenchSession::openCheckpoint(const QString& dir)
{
    checkpointDir_ = dir;
    const QString device = device_;
    submit(JobKind::Open, tr("Open checkpoint"), [this, dir, device](const Progress& progress) -> std::function<void()> {
        QElapsedTimer timer;
        timer.start();
        auto info = std::make_shared<CheckpointInfo>();
        info->directory = dir;
        progress.report(0.0, "Reading checkpoint");
        info->checkpoint = Checkpoint::open(dir.toStdString());
        info->statistics = computeScaleStatistics(*info->checkpoint);
        info->findings = diagnoseCheckpoint(*info->checkpoint, info->statistics);
        progress.throwIfCancelled();
        // A checkpoint the engine refuses can still be inspected; its findings explain why.
        std::shared_ptr<InferenceBackend> model;
        run_.reset(); // a runner process for the previous checkpoint stops before the next starts
        try {
            model = openBackend(parseDeviceSpec(device.toStdString()), info->checkpoint, progress);
            info->linears = model->linears();
        } catch (const Cancelled&) {
            throw;
        } catch (const Error& e) {
            info->runnable = false;
            info->loadError = QString::fromUtf8(e.what());
        }
        run_ = model;
        if (cpuEmulationReference_ && model)
            reference_ = EncoderModel::load(info->checkpoint, progress);
        info->loadMs = double(timer.nsecsElapsed()) / 1e6;
        info->deviceName = model ? QString::fromStdString(model->deviceName()) : QString();
        std::shared_ptr<const CheckpointInfo> result = info;
        return [this, result] {
            emit deviceChanged(result->deviceName);
            emit checkpointOpened(result);
        };
    });
}

void WorkbenchSession::setCpuEmulationReference()
{
    referenceDir_.clear();
    cpuEmulationReference_ = true;
    const QString checkpoint = checkpointDir_;
    submit(JobKind::Reference, tr("Load reference"), [this, checkpoint](const Progress& progress) -> std::function<void()> {
        reference_ = checkpoint.isEmpty() ? nullptr : std::shared_ptr<InferenceBackend>(EncoderModel::load(checkpoint.toStdString(), progress));
        return [this] { emit referenceChanged(tr("CPU FP8 emulation (same checkpoint)")); };
    });
}

void WorkbenchSession::setReference(const QString& dir)
{
    referenceDir_ = dir;
    cpuEmulationReference_ = false;
    submit(JobKind::Reference, tr("Load reference"), [this, dir](const Progress& progress) -> std::function<void()> {
        if (dir.isEmpty()) {
            reference_.reset();
            return [this] { emit referenceChanged(tr("dequantized weights (stand-in)")); };
        }
        reference_ = EncoderModel::load(dir.toStdString(), progress);
        return [this, dir] { emit referenceChanged(dir); };
    });
}

void WorkbenchSession::ask(const QString& question, const QString& context, const QaOptions& options)
{
    const RunMode mode = runMode_;
    submit(JobKind::Run, tr("Answer"), [this, question, context, options, mode](const Progress& progress) -> std::function<void()> {
        if (!run_)
            throw Error("No runnable checkpoint is open.");
        ComparisonInput input;
        input.question = question.toStdString();
        input.context = context.toStdString();
        input.qaOptions = fitWindowsToModel(options, run_->config());
        input.runMode = mode;
        input.referenceMode = cpuEmulationReference_ && reference_ ? mode : RunMode::Dequant;
        auto outcome = std::make_shared<AskOutcome>();
        outcome->question = question;
        outcome->context = context;
        outcome->options = input.qaOptions;
        auto comparison = std::make_shared<ComparisonResult>(compareRuns(*run_, reference_.get(), input, progress));
        const QaAgreement& qa = *comparison->qa;
        outcome->runAnswers = postprocessQa(qa.windows, qa.runStartLogits, qa.runEndLogits, input.context, input.qaOptions);
        outcome->referenceAnswers =
            postprocessQa(qa.windows, qa.referenceStartLogits, qa.referenceEndLogits, input.context, input.qaOptions);
        outcome->comparison = comparison;
        lastInput_ = input;
        std::shared_ptr<const AskOutcome> result = outcome;
        return [this, result] { emit answered(result); };
    });
}

void WorkbenchSession::fillMask(const QString& text, int topK)
{
    const RunMode mode = runMode_;
    submit(JobKind::Run, tr("Fill mask"), [this, text, topK, mode](const Progress& progress) -> std::function<void()> {
        if (!run_)
            throw Error("No runnable checkpoint is open.");
        if (!run_->checkpoint().layout().isMaskedLm())
            throw Error("Fill-mask needs a RobertaForMaskedLM checkpoint; this one is " +
                        std::string(architectureName(run_->config().architecture)) + ".");
        ComparisonInput input;
        input.text = text.toStdString();
        input.topK = topK;
        input.runMode = mode;
        input.referenceMode = cpuEmulationReference_ && reference_ ? mode : RunMode::Dequant;
        auto outcome = std::make_shared<FillMaskOutcome>();
        outcome->text = text;
        outcome->comparison = std::make_shared<ComparisonResult>(compareRuns(*run_, reference_.get(), input, progress));
        if (!outcome->comparison->fillMask || outcome->comparison->fillMask->masks.empty())
            throw Error("The text has no <mask> token to fill.");
        const BpeTokenizer& tokenizer = run_->checkpoint().tokenizer();
        auto withText = [&](const std::vector<std::pair<int64_t, float>>& top) {
            std::vector<MaskPrediction> out;
            for (const auto& [id, probability] : top)
                out.push_back({id, tokenizer.tokenText(id), probability});
            return out;
        };
        for (const auto& mask : outcome->comparison->fillMask->masks) {
            outcome->run.push_back(withText(mask.runTop));
            outcome->reference.push_back(withText(mask.referenceTop));
        }
        lastInput_ = input;
        std::shared_ptr<const FillMaskOutcome> result = outcome;
        return [this, result] { emit masksFilled(result); };
    });
}

void WorkbenchSession::capturePoint(const QString& name)
{
    submit(JobKind::Capture, tr("Capture"), [this, name](const Progress& progress) -> std::function<void()> {
        if (!run_ || !lastInput_)
            throw Error("Run a question or a mask first; the error views use its input.");
        // Re-run both sides capturing only this point: cheaper than keeping every capture of the
        // last comparison in memory.
        EncoderInputs inputs;
        if (!lastInput_->question.empty() || !lastInput_->context.empty()) {
            for (const QaWindow& w : buildQaWindows(run_->checkpoint().tokenizer(), lastInput_->question,
                                                    lastInput_->context, lastInput_->qaOptions))
                inputs.inputIds.push_back(w.encoding.ids);
        } else {
            inputs.inputIds.push_back(run_->checkpoint().tokenizer().encode(lastInput_->text).ids);
        }
        ForwardOptions runOptions;
        runOptions.mode = lastInput_->runMode;
        runOptions.capture.names = {name.toStdString()};
        ForwardOptions referenceOptions = runOptions;
        referenceOptions.mode = lastInput_->referenceMode;
        InferenceBackend& reference = reference_ ? *reference_ : *run_;
        auto values = std::make_shared<CapturePointValues>();
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

void WorkbenchSession::evaluate(const QString& squadFile, int maxSamples)
{
    QPointer<WorkbenchSession> self(this);
    submit(JobKind::Evaluate, tr("Evaluate"), [this, self, squadFile, maxSamples](const Progress& progress) -> std::function<void()> {
        if (!run_)
            throw Error("No runnable checkpoint is open.");
        const SquadDataset dataset = readSquadFile(squadFile.toStdString());
        EvaluationOptions options;
        options.qa = fitWindowsToModel(options.qa, run_->config());
        options.maxSamples = static_cast<std::size_t>(std::max(0, maxSamples));
        options.onUpdate = [self](const EvaluationUpdate& update) {
            const int done = static_cast<int>(update.done);
            const int total = static_cast<int>(update.total);
            const double rate = update.questionsPerSecond;
            QMetaObject::invokeMethod(self.data(), [self, done, total, rate] {
                if (self)
                    emit self->evaluationProgress(done, total, rate);
            }, Qt::QueuedConnection);
        };
        std::shared_ptr<const EvaluationResult> result =
            std::make_shared<EvaluationResult>(evaluateSquad(*run_, reference_.get(), dataset, options, progress));
        return [this, result] { emit evaluated(result); };
    });
}

} // namespace scalescope::ui
