#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLineEdit>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QToolBar>
#include <QToolButton>

#include "charts/chart_view.h"
#include "common/error.h"
#include "engine/compute_threads.h"
#include "models/answers_model.h"
#include "models/diagnostics_model.h"
#include "models/disagreements_model.h"
#include "models/layer_metrics_model.h"
#include "models/mask_predictions_model.h"
#include "models/tensor_table_model.h"
#include "panels/ask_panel.h"
#include "panels/errors_panel.h"
#include "panels/evaluate_panel.h"
#include "panels/fill_mask_panel.h"
#include "panels/model_panel.h"
#include "panels/scales_panel.h"
#include "report_export.h"

namespace scalescope::ui {
namespace {

constexpr int kMaxRecent = 8;

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent)
{
    setWindowTitle(tr("ScaleScope"));
    setAcceptDrops(true);
    session_ = new WorkbenchSession(this);

    tabs_ = new QTabWidget(this);
    model_ = new ModelPanel(tabs_);
    ask_ = new AskPanel(tabs_);
    fillMask_ = new FillMaskPanel(tabs_);
    scales_ = new ScalesPanel(tabs_);
    errors_ = new ErrorsPanel(tabs_);
    evaluate_ = new EvaluatePanel(tabs_);
    tabs_->addTab(model_, tr("Model"));
    tabs_->addTab(ask_, tr("Ask"));
    tabs_->addTab(fillMask_, tr("Fill Mask"));
    tabs_->addTab(scales_, tr("Scales"));
    tabs_->addTab(errors_, tr("Errors"));
    tabs_->addTab(evaluate_, tr("Evaluate"));
    setCentralWidget(tabs_);

    createActions();

    connect(session_, &WorkbenchSession::checkpointOpened, this, &MainWindow::onCheckpointOpened);
    connect(session_, &WorkbenchSession::deviceChanged, this, [this](const QString& name) {
        deviceName_ = name;
        updateStatus();
    });
    connect(session_, &WorkbenchSession::referenceChanged, this, [this](const QString& label) {
        referenceLabel_ = label;
        updateStatus();
    });
    connect(session_, &WorkbenchSession::answered, this, [this](std::shared_ptr<const AskOutcome> outcome) {
        ask_->showOutcome(*outcome, referenceLabel_);
        errors_->setComparison(outcome->comparison);
        scales_->setComparison(*outcome->comparison);
        lastRunMs_ = tr("last forward %1 ms, reference %2 ms")
                         .arg(outcome->comparison->runMs, 0, 'f', 1)
                         .arg(outcome->comparison->referenceMs, 0, 'f', 1);
        updateStatus();
    });
    connect(session_, &WorkbenchSession::masksFilled, this, [this](std::shared_ptr<const FillMaskOutcome> outcome) {
        fillMask_->showOutcome(*outcome, referenceLabel_);
        lastRunMs_ = tr("last forward %1 ms, reference %2 ms")
                         .arg(outcome->comparison->runMs, 0, 'f', 1)
                         .arg(outcome->comparison->referenceMs, 0, 'f', 1);
        updateStatus();
        errors_->setComparison(outcome->comparison);
        scales_->setComparison(*outcome->comparison);
    });
    connect(session_, &WorkbenchSession::capturePointReady, this,
            [this](std::shared_ptr<const CapturePointValues> values) { errors_->showCapturePoint(*values); });
    connect(session_, &WorkbenchSession::failed, this, &MainWindow::showError);
    connect(session_, &WorkbenchSession::progress, this, [this](double fraction, const QString& stage) {
        progress_->setValue(static_cast<int>(fraction * 1000));
        progress_->setFormat(stage + QStringLiteral("  %p%"));
    });
    connect(session_, &WorkbenchSession::busyChanged, this, [this](bool busy) {
        progress_->setVisible(busy);
        cancelButton_->setVisible(busy);
        cancelAction_->setEnabled(busy);
        ask_->setBusy(busy);
        fillMask_->setBusy(busy);
        evaluate_->setBusy(busy);
        if (busy)
            progress_->setValue(0);
    });

    connect(ask_, &AskPanel::askRequested, this,
            [this](const QString& question, const QString& context, const QaOptions& options) {
                session_->ask(question, context, options);
            });
    connect(fillMask_, &FillMaskPanel::fillRequested, this,
            [this](const QString& text, int topK) { session_->fillMask(text, topK); });
    connect(errors_, &ErrorsPanel::capturePointRequested, session_, &WorkbenchSession::capturePoint);
    connect(model_, &ModelPanel::linearSelected, scales_, &ScalesPanel::selectLinear);
    connect(evaluate_, &EvaluatePanel::evaluateRequested, session_, &WorkbenchSession::evaluate);
    connect(session_, &WorkbenchSession::evaluationProgress, evaluate_, &EvaluatePanel::showProgress);
    connect(session_, &WorkbenchSession::evaluated, evaluate_, &EvaluatePanel::showResult);
    connect(evaluate_, &EvaluatePanel::openInAsk, this, [this](const QString& question, const QString& context) {
        ask_->setInputs(question, context);
        tabs_->setCurrentWidget(ask_);
        session_->ask(question, context, ask_->options());
    });

    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    tabs_->setCurrentIndex(settings.value(QStringLiteral("window/tab"), 1).toInt());
    mode_->setCurrentIndex(settings.value(QStringLiteral("run/mode"), 0).toInt());
    // Runner devices are not restarted silently at start-up; the in-process CPU is the default.
    device_->setCurrentIndex(0);
    if (!settings.contains(QStringLiteral("window/geometry")))
        resize(1280, 860);
    updateStatus();
}

MainWindow::~MainWindow() = default;

void MainWindow::createActions()
{
    QStyle* style = QApplication::style();
    auto* open = new QAction(style->standardIcon(QStyle::SP_DirOpenIcon), tr("&Open Checkpoint..."), this);
    open->setShortcut(QKeySequence::Open);
    open->setToolTip(tr("Open a checkpoint folder (config.json, model.safetensors, tokenizer)"));
    connect(open, &QAction::triggered, this, &MainWindow::chooseCheckpoint);
    auto* reference = new QAction(tr("Choose &Reference Checkpoint..."), this);
    reference->setToolTip(tr("The float checkpoint the FP8 model is compared with"));
    connect(reference, &QAction::triggered, this, &MainWindow::chooseReference);
    auto* dequant = new QAction(tr("Use &Dequantized Weights as Reference"), this);
    connect(dequant, &QAction::triggered, this, [this] { setReference(QString()); });
    auto* emulation = new QAction(tr("Use CPU FP8 &Emulation as Reference"), this);
    emulation->setToolTip(tr("Compare the device's run with the exact FP8 emulation of the same checkpoint on this CPU"));
    connect(emulation, &QAction::triggered, session_, &WorkbenchSession::setCpuEmulationReference);
    exportReportAction_ = new QAction(style->standardIcon(QStyle::SP_DialogSaveButton), tr("&Export Report..."), this);
    exportReportAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    connect(exportReportAction_, &QAction::triggered, this, &MainWindow::chooseReportFolder);
    cancelAction_ = new QAction(style->standardIcon(QStyle::SP_BrowserStop), tr("&Cancel"), this);
    cancelAction_->setShortcut(QKeySequence(Qt::Key_Escape));
    cancelAction_->setEnabled(false);
    connect(cancelAction_, &QAction::triggered, session_, &WorkbenchSession::cancel);
    auto* quit = new QAction(tr("&Quit"), this);
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(open);
    recentMenu_ = file->addMenu(tr("Open &Recent"));
    file->addSeparator();
    file->addAction(reference);
    file->addAction(dequant);
    file->addAction(emulation);
    file->addSeparator();
    file->addAction(exportReportAction_);
    file->addSeparator();
    file->addAction(quit);
    QMenu* run = menuBar()->addMenu(tr("&Run"));
    run->addAction(cancelAction_);
    demoMenu_ = menuBar()->addMenu(tr("&Demo"));
    demoMenu_->menuAction()->setVisible(false); // filled by the application when demos are installed
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About ScaleScope"), this, [this] {
        QMessageBox::about(this, tr("About ScaleScope"),
                           tr("<b>ScaleScope %1</b><br>A workbench for FP8-quantized encoder models.<br>"
                              "Compute threads: %2")
                               .arg(QApplication::applicationVersion())
                               .arg(computeThreads()));
    });
    rebuildRecentMenu();

    QToolBar* toolbar = addToolBar(tr("Main"));
    toolbar->setObjectName(QStringLiteral("mainToolbar"));
    toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    toolbar->addAction(open);
    auto* referenceButton = new QToolButton(toolbar);
    referenceButton->setText(tr("Reference"));
    referenceButton->setPopupMode(QToolButton::InstantPopup);
    auto* referenceMenu = new QMenu(referenceButton);
    referenceMenu->addAction(reference);
    referenceMenu->addAction(dequant);
    referenceMenu->addAction(emulation);
    referenceButton->setMenu(referenceMenu);
    toolbar->addWidget(referenceButton);
    toolbar->addSeparator();
    toolbar->addWidget(new QLabel(tr(" Mode "), toolbar));
    mode_ = new QComboBox(toolbar);
    mode_->addItem(tr("FP8 (weights and activations)"), QStringLiteral("fp8"));
    mode_->addItem(tr("Dequant (weights only)"), QStringLiteral("dequant"));
    mode_->setToolTip(tr("How the quantized model runs against its reference"));
    connect(mode_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int index) {
        session_->setRunMode(index == 1 ? RunMode::Dequant : RunMode::Fp8);
        QSettings().setValue(QStringLiteral("run/mode"), index);
        updateStatus();
    });
    toolbar->addWidget(mode_);
    toolbar->addWidget(new QLabel(tr(" Device "), toolbar));
    device_ = new QComboBox(toolbar);
    device_->setToolTip(tr("Where the quantized model runs: in this process, or in a runner process (see the "
                           "runner protocol), e.g. on an AIU host through ssh"));
    device_->addItem(tr("CPU (in-process)"), QStringLiteral("cpu"));
    device_->addItem(tr("CPU runner process"),
                     QStringLiteral("runner:\"%1\" runner").arg(QCoreApplication::applicationDirPath() + "/scalescope-cli"));
    device_->addItem(tr("AIU runner..."), QStringLiteral("aiu"));
    connect(device_, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        QString spec = device_->itemData(index).toString();
        if (spec == QLatin1String("aiu")) {
            bool ok = false;
            const QString command = QInputDialog::getText(
                this, tr("AIU Runner"),
                tr("Command line that starts the AIU runner (it may go through ssh or oc exec):"), QLineEdit::Normal,
                QSettings().value(QStringLiteral("device/aiuCommand"),
                                  QStringLiteral("ssh aiu-host torchrun --nproc-per-node 1 aiu_runner.py"))
                    .toString(),
                &ok);
            if (!ok || command.trimmed().isEmpty()) {
                device_->setCurrentIndex(device_->findData(session_->device()) >= 0 ? device_->findData(session_->device()) : 0);
                return;
            }
            QSettings().setValue(QStringLiteral("device/aiuCommand"), command);
            spec = QStringLiteral("runner:") + command;
        }
        QSettings().setValue(QStringLiteral("device/index"), index);
        session_->setDevice(spec);
        updateStatus();
    });
    toolbar->addWidget(device_);
    toolbar->addSeparator();
    toolbar->addAction(cancelAction_);
    toolbar->addAction(exportReportAction_);

    deviceLabel_ = new QLabel(this);
    modeLabel_ = new QLabel(this);
    dtypeLabel_ = new QLabel(this);
    loadLabel_ = new QLabel(this);
    referenceStatus_ = new QLabel(this);
    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1000);
    progress_->setMaximumWidth(260);
    progress_->setTextVisible(true);
    progress_->hide();
    cancelButton_ = new QPushButton(tr("Cancel"), this);
    cancelButton_->hide();
    connect(cancelButton_, &QPushButton::clicked, session_, &WorkbenchSession::cancel);
    statusBar()->addPermanentWidget(progress_);
    statusBar()->addPermanentWidget(cancelButton_);
    for (QLabel* label : {deviceLabel_, modeLabel_, dtypeLabel_, referenceStatus_, loadLabel_})
        statusBar()->addPermanentWidget(label);
}

void MainWindow::setDemoCatalog(const DemoCatalog& catalog)
{
    demo_ = catalog;
    demoMenu_->clear();
    demoMenu_->menuAction()->setVisible(!demo_.isEmpty());
    for (int i = 0; i < demo_.checkpoints.size(); ++i)
        demoMenu_->addAction(demo_.checkpoints[i].label, this, [this, i] { openDemo(i); });
    if (!demo_.passages.isEmpty()) {
        demoMenu_->addSeparator();
        QMenu* passages = demoMenu_->addMenu(tr("&Passages"));
        for (int p = 0; p < demo_.passages.size(); ++p)
            passages->addAction(tr("%1: %2").arg(demo_.passages[p].title, demo_.passages[p].question), this, [this, p] {
                ask_->setInputs(demo_.passages[p].question, demo_.passages[p].context);
                tabs_->setCurrentWidget(ask_);
            });
    }
    if (!demo_.maskSentences.isEmpty()) {
        QMenu* sentences = demoMenu_->addMenu(tr("&Mask Sentences"));
        for (const QString& sentence : demo_.maskSentences)
            sentences->addAction(sentence, this, [this, sentence] {
                fillMask_->setText(sentence);
                if (tabs_->isTabEnabled(tabs_->indexOf(fillMask_)))
                    tabs_->setCurrentWidget(fillMask_);
            });
    }
}

void MainWindow::openDemo(int checkpoint, int passage)
{
    if (checkpoint < 0 || checkpoint >= demo_.checkpoints.size())
        return;
    const DemoCheckpoint& demo = demo_.checkpoints[checkpoint];
    openCheckpoint(demo.directory);
    setReference(demo.reference);
    if (demo.maskedLm) {
        if (!demo_.maskSentences.isEmpty())
            fillMask_->setText(demo_.maskSentences.first());
        tabs_->setCurrentWidget(fillMask_);
    } else {
        if (passage >= 0 && passage < demo_.passages.size()) {
            ask_->setInputs(demo_.passages[passage].question, demo_.passages[passage].context);
            // Answer once the demo is open, so the window shows a result rather than empty tables.
            auto* once = new QObject(this);
            connect(this, &MainWindow::checkpointReady, once, [this, once] {
                once->deleteLater();
                session_->ask(ask_->question(), ask_->context(), ask_->options());
            });
        }
        tabs_->setCurrentWidget(ask_);
    }
    const QString folder = QFileInfo(demo_.folder + "/corpus/questions.json").exists()
                               ? demo_.folder + "/corpus/questions.json"
                               : QString();
    if (!folder.isEmpty())
        evaluate_->setSquadFile(folder);
}

void MainWindow::updateStatus()
{
    deviceLabel_->setText(tr("Device: %1%2")
                              .arg(deviceName_.isEmpty() ? device_->currentText() : deviceName_,
                                   lastRunMs_.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(lastRunMs_)));
    modeLabel_->setText(tr("Mode: %1").arg(mode_->currentData().toString()));
    dtypeLabel_->setText(info_ ? tr("Dtype: %1").arg(QString::fromStdString(info_->checkpoint->config().torchDtype))
                               : tr("Dtype: -"));
    loadLabel_->setText(info_ ? tr("Loaded in %1 ms").arg(info_->loadMs, 0, 'f', 0) : QString());
    referenceStatus_->setText(tr("Reference: %1").arg(referenceLabel_.isEmpty() ? tr("-") : QFileInfo(referenceLabel_).fileName().isEmpty() ? referenceLabel_ : QFileInfo(referenceLabel_).fileName()));
    referenceStatus_->setToolTip(referenceLabel_);
}

void MainWindow::openCheckpoint(const QString& dir)
{
    statusBar()->showMessage(tr("Opening %1...").arg(dir));
    session_->openCheckpoint(dir);
}

void MainWindow::setReference(const QString& dir)
{
    session_->setReference(dir);
    if (!session_->checkpointDirectory().isEmpty())
        QSettings().setValue(QStringLiteral("reference/") + QString::fromLatin1(session_->checkpointDirectory().toUtf8().toHex()), dir);
}

void MainWindow::onCheckpointOpened(std::shared_ptr<const CheckpointInfo> info)
{
    info_ = std::move(info);
    // Each checkpoint remembers its reference; without one, dequantized weights stand in.
    const QString saved = QSettings()
                              .value(QStringLiteral("reference/") + QString::fromLatin1(info_->directory.toUtf8().toHex()))
                              .toString();
    if (saved != session_->referenceDirectory() || referenceLabel_.isEmpty())
        session_->setReference(QFileInfo(saved).isDir() ? saved : QString());
    model_->showCheckpoint(*info_);
    scales_->setStatistics(info_->statistics);
    setWindowTitle(tr("ScaleScope - %1").arg(QDir::toNativeSeparators(info_->directory)));
    addRecent(info_->directory);
    const bool isMaskedLm = info_->checkpoint->layout().isMaskedLm();
    tabs_->setTabEnabled(tabs_->indexOf(ask_), !isMaskedLm);
    tabs_->setTabEnabled(tabs_->indexOf(fillMask_), isMaskedLm);
    if (tabs_->currentWidget() == ask_ && isMaskedLm)
        tabs_->setCurrentWidget(fillMask_);
    if (tabs_->currentWidget() == fillMask_ && !isMaskedLm)
        tabs_->setCurrentWidget(ask_);
    if (!info_->runnable)
        showError(tr("Open checkpoint"), info_->loadError);
    statusBar()->showMessage(tr("Opened %1").arg(info_->directory), 5000);
    updateStatus();
    emit checkpointReady(info_->directory);
}

void MainWindow::showError(const QString& operation, const QString& message)
{
    lastError_ = message;
    emit errorShown(message);
    if (message == tr("Cancelled.")) {
        statusBar()->showMessage(tr("%1 cancelled.").arg(operation), 5000);
        return;
    }
    statusBar()->showMessage(tr("%1 failed.").arg(operation), 5000);
    // Window-modal and non-blocking: the event loop keeps running behind the message.
    auto* box = new QMessageBox(QMessageBox::Warning, operation, message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

void MainWindow::chooseCheckpoint()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open Checkpoint Folder"),
                                                          QSettings().value(QStringLiteral("paths/lastOpen")).toString());
    if (dir.isEmpty())
        return;
    QSettings().setValue(QStringLiteral("paths/lastOpen"), dir);
    openCheckpoint(dir);
}

void MainWindow::chooseReference()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Choose the Float Reference Checkpoint"),
                                                          QSettings().value(QStringLiteral("paths/lastOpen")).toString());
    if (!dir.isEmpty())
        setReference(dir);
}

void MainWindow::addRecent(const QString& dir)
{
    QSettings settings;
    QStringList recent = settings.value(QStringLiteral("recent/checkpoints")).toStringList();
    recent.removeAll(dir);
    recent.prepend(dir);
    while (recent.size() > kMaxRecent)
        recent.removeLast();
    settings.setValue(QStringLiteral("recent/checkpoints"), recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu()
{
    recentMenu_->clear();
    const QStringList recent = QSettings().value(QStringLiteral("recent/checkpoints")).toStringList();
    for (const QString& dir : recent)
        recentMenu_->addAction(QDir::toNativeSeparators(dir), this, [this, dir] { openCheckpoint(dir); });
    if (recent.isEmpty())
        recentMenu_->addAction(tr("(none)"))->setEnabled(false);
    else {
        recentMenu_->addSeparator();
        recentMenu_->addAction(tr("Clear List"), this, [this] {
            QSettings().remove(QStringLiteral("recent/checkpoints"));
            rebuildRecentMenu();
        });
    }
}

QStringList MainWindow::exportReport(const QString& folder)
{
    ReportContents contents;
    std::vector<ChartView*> views = {ask_->logitsChart(), fillMask_->chart()};
    for (ChartView* v : scales_->charts())
        views.push_back(v);
    for (ChartView* v : errors_->charts())
        views.push_back(v);
    for (ChartView* v : evaluate_->charts())
        views.push_back(v);
    for (ChartView* v : views)
        if (!v->chart().series.empty())
            contents.charts.push_back(v->chart());
    contents.tables = {{QStringLiteral("tensors"), model_->tensorModel()},
                       {QStringLiteral("diagnostics"), model_->diagnosticsModel()},
                       {QStringLiteral("answers"), ask_->answersModel()},
                       {QStringLiteral("mask_predictions"), fillMask_->predictionsModel()},
                       {QStringLiteral("layer_metrics"), errors_->metricsModel()},
                       {QStringLiteral("disagreements"), evaluate_->disagreementsModel()}};
    nlohmann::json summary;
    summary["checkpoint"] = info_ ? info_->directory.toStdString() : std::string();
    summary["reference"] = referenceLabel_.toStdString();
    summary["mode"] = mode_->currentData().toString().toStdString();
    if (info_) {
        const auto counts = model_->diagnosticsModel()->counts();
        summary["architecture"] = architectureName(info_->checkpoint->config().architecture);
        summary["diagnostics"] = {{"errors", counts.errors}, {"warnings", counts.warnings}, {"infos", counts.infos}};
    }
    if (const auto comparison = errors_->comparison()) {
        auto finite = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
        summary["final_logits"] = {{"sqnr_db", finite(comparison->finalLogits.sqnrDb)},
                                   {"cosine", finite(comparison->finalLogits.cosine)},
                                   {"relative_l2", finite(comparison->finalLogits.relativeL2)}};
        if (comparison->qa)
            summary["same_best_answer"] = comparison->qa->sameBestAnswer;
    }
    std::vector<std::string> ids;
    for (const ChartData& c : contents.charts)
        ids.push_back(c.id);
    summary["charts"] = ids;
    contents.summary = std::move(summary);
    return ui::exportReport(contents, folder);
}

void MainWindow::chooseReportFolder()
{
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Export Report to Folder"));
    if (folder.isEmpty())
        return;
    if (!QDir(folder).isEmpty()) {
        const auto answer = QMessageBox::question(
            this, tr("Export Report"),
            tr("%1 is not empty. Files of a previous report there will be replaced. Continue?").arg(folder));
        if (answer != QMessageBox::Yes)
            return;
    }
    try {
        const QStringList files = exportReport(folder);
        statusBar()->showMessage(tr("Exported %1 files to %2").arg(files.size()).arg(folder), 8000);
    } catch (const Error& e) {
        showError(tr("Export report"), QString::fromUtf8(e.what()));
    }
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    session_->cancel();
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/tab"), tabs_->currentIndex());
    QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    const auto urls = event->mimeData()->urls();
    if (urls.size() == 1 && urls.front().isLocalFile() && QFileInfo(urls.front().toLocalFile()).isDir())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const auto urls = event->mimeData()->urls();
    if (urls.size() == 1 && urls.front().isLocalFile())
        openCheckpoint(urls.front().toLocalFile());
}

} // namespace scalescope::ui
