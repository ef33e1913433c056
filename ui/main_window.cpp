#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDir>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QScreen>
#include <QPushButton>
#include <QSplitter>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QToolBar>
#include <QToolButton>

#include "common/error.h"
#include "engine/compute_threads.h"
#include "engine/float_gemm.h"
#include "engine/fp8_gemm.h"
#include "models/value_text.h"
#include "panels/ask_panel.h"
#include "panels/errors_panel.h"
#include "panels/attention_panel.h"
#include "panels/calibration_panel.h"
#include "panels/device_check_panel.h"
#include "panels/evaluate_panel.h"
#include "linear_selection.h"
#include "panels/linear_inspector.h"
#include "panels/triage_panel.h"
#include "panels/fill_mask_panel.h"
#include "panels/model_panel.h"
#include "panels/scales_panel.h"
#include "panels/sensitivity_panel.h"
#include "report_assembly.h"
#include "runner_dialog.h"
#include "settings.h"
#include "shell_quote.h"
#include "stale_banner.h"

namespace scalescope::ui {
namespace {

constexpr int kMaxRecent = 8;

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent)
{
    setWindowTitle(tr("ScaleScope"));
    setAcceptDrops(true);
    session_ = new WorkbenchSession(this);
    createPanels();
    createActions();
    connectSensitivity();
    connectDeviceCheck();
    connectCalibration();
    connectSelection();
    connectTriage();
    connectResults();
    connectState();
    connectRequests();
    restoreSettings();
}

void MainWindow::createPanels()
{
    tabs_ = new QTabWidget(this);
    triage_ = new TriagePanel(tabs_);
    model_ = new ModelPanel(tabs_);
    ask_ = new AskPanel(tabs_);
    fillMask_ = new FillMaskPanel(tabs_);
    scales_ = new ScalesPanel(tabs_);
    errors_ = new ErrorsPanel(tabs_);
    evaluate_ = new EvaluatePanel(tabs_);
    tabs_->addTab(triage_, tr("Triage"));
    tabs_->addTab(model_, tr("Model"));
    tabs_->addTab(ask_, tr("Ask"));
    tabs_->addTab(fillMask_, tr("Fill Mask"));
    tabs_->addTab(scales_, tr("Scales"));
    tabs_->addTab(errors_, tr("Errors"));
    tabs_->addTab(evaluate_, tr("Evaluate"));
    deviceCheck_ = new DeviceCheckPanel(tabs_);
    tabs_->addTab(deviceCheck_, tr("Device Check"));
    sensitivity_ = new SensitivityPanel(tabs_);
    tabs_->addTab(sensitivity_, tr("Sensitivity"));
    attention_ = new AttentionPanel(tabs_);
    tabs_->addTab(attention_, tr("Attention"));
    calibration_ = new CalibrationPanel(tabs_);
    tabs_->addTab(calibration_, tr("Calibration"));
    setCentralWidget(tabs_);
    // In tab order, which is also the order of their charts and tables in a report: the verdict first.
    resultPanels_ = {triage_, model_, ask_, fillMask_, scales_, errors_, evaluate_, deviceCheck_, sensitivity_, attention_,
                     calibration_};
    // A splitter dragged to the end hides a chart for good, with no hint how to get it back.
    for (QSplitter* splitter : findChildren<QSplitter*>())
        splitter->setChildrenCollapsible(false);

    selection_ = new LinearSelection(this);
    inspector_ = new LinearInspector(this);
    inspectorDock_ = new QDockWidget(tr("Linear Inspector"), this);
    inspectorDock_->setObjectName(QStringLiteral("inspectorDock"));
    inspectorDock_->setWidget(inspector_);
    inspectorDock_->setAllowedAreas(Qt::LeftDockWidgetArea | Qt::RightDockWidgetArea | Qt::BottomDockWidgetArea);
    // Narrower than this its numbers wrap into a column of fragments.
    inspectorDock_->setMinimumWidth(280);
    addDockWidget(Qt::RightDockWidgetArea, inspectorDock_);
    resizeDocks({inspectorDock_}, {330}, Qt::Horizontal);
}

PanelResult MainWindow::resultOf(const RunStamp& stamp) const
{
    PanelResult result;
    result.stamp = stamp;
    result.referenceLabel = referenceLabel_;
    return result;
}

void MainWindow::showResult(const PanelResult& result)
{
    for (ResultPanel* panel : resultPanels_)
        panel->takeResult(result);
    inspector_->takeResult(result);
}

void MainWindow::showRunTimes(const ComparisonResult& comparison)
{
    lastRunMs_ = tr("last forward %1 ms, reference %2 ms")
                     .arg(comparison.runMs, 0, 'f', 1)
                     .arg(comparison.referenceMs, 0, 'f', 1);
    updateStatus();
}

// What the session delivers: checkpoints, devices, references and the results of runs.
void MainWindow::connectResults()
{
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
        PanelResult result = resultOf(outcome->stamp);
        result.ask = outcome;
        result.comparison = outcome->comparison;
        showResult(result);
        warnIfOutsideDemoCorpus(*outcome);
        showRunTimes(*outcome->comparison);
        rerunCompareWith();
    });
    connect(session_, &WorkbenchSession::masksFilled, this, [this](std::shared_ptr<const FillMaskOutcome> outcome) {
        PanelResult result = resultOf(outcome->stamp);
        result.fillMask = outcome;
        result.comparison = outcome->comparison;
        showResult(result);
        showRunTimes(*outcome->comparison);
        rerunCompareWith();
    });
    connect(session_, &WorkbenchSession::compareWithReady, this, &MainWindow::showCompareWith);
    connect(session_, &WorkbenchSession::evaluated, this,
        [this](std::shared_ptr<const EvaluationResult> evaluation, const RunStamp& stamp) {
            PanelResult result = resultOf(stamp);
            result.evaluation = std::move(evaluation);
            showResult(result);
        });
    connect(session_, &WorkbenchSession::sensitivityFinished, this,
        [this](std::shared_ptr<const SensitivityResult> sweep, const RunStamp& stamp) {
            PanelResult result = resultOf(stamp);
            result.sensitivity = std::move(sweep);
            showResult(result);
        });
}

// Busy, progress, failures and stale results.
void MainWindow::connectState()
{
    connect(session_, &WorkbenchSession::stateChanged, this, &MainWindow::onStateChanged);
    connect(session_, &WorkbenchSession::deviceSwitchFailed, this, &MainWindow::onDeviceSwitchFailed);
    connect(ask_->banner(), &StaleBanner::rerunRequested, this, &MainWindow::rerunAsk);
    connect(fillMask_->banner(), &StaleBanner::rerunRequested, this, &MainWindow::rerunFill);
    for (StaleBanner* banner : {errors_->banner(), scales_->banner()})
        connect(banner, &StaleBanner::rerunRequested, this, [this] {
            // These views show the last question's or mask's run: rerun whichever it was.
            if (ask_->outcome())
                rerunAsk();
            else if (fillMask_->outcome())
                rerunFill();
        });
    connect(session_, &WorkbenchSession::capturePointReady, this,
            [this](std::shared_ptr<const CapturePointValues> values) { errors_->showCapturePoint(*values); });
    connect(session_, &WorkbenchSession::failed, this, &MainWindow::showError);
    connect(session_, &WorkbenchSession::failed, this, [this](const QString& operation, const QString& message) {
        if (operation == tr("Evaluate"))
            evaluate_->showFailure(message);
    });
    connect(session_->jobs(), &JobTracker::progress, this, [this](double fraction, const QString& stage) {
        progress_->setValue(static_cast<int>(fraction * 1000));
        // %p% is the share of the job's work, which the stage's own counts need not equal.
        progress_->setFormat(tr("%1 (%2 of the work)").arg(stage, QStringLiteral("%p%")));
    });
    connect(session_->jobs(), &JobTracker::busyChanged, this, [this](bool busy) {
        progress_->setVisible(busy);
        cancelButton_->setVisible(busy);
        cancelAction_->setEnabled(busy);
        for (ResultPanel* panel : resultPanels_)
            panel->setBusy(busy);
        if (busy)
            progress_->setValue(0);
    });
}

// What the panels ask the session for.
void MainWindow::connectRequests()
{
    connect(ask_, &AskPanel::askRequested, this,
            [this](const QString& question, const QString& context, const QaOptions& options) {
                session_->ask(question, context, options);
            });
    connect(fillMask_, &FillMaskPanel::fillRequested, this,
            [this](const QString& text, int topK) { session_->fillMask(text, topK); });
    connect(errors_, &ErrorsPanel::capturePointRequested, session_, &WorkbenchSession::capturePoint);
    connect(model_, &ModelPanel::floatLinearsEdited, this, &MainWindow::setFloatLinears);
    connect(evaluate_, &EvaluatePanel::evaluateRequested, session_, &WorkbenchSession::evaluate);
    connect(evaluate_, &EvaluatePanel::evaluateRequested, this, &MainWindow::warnIfDemoEvaluatesOtherText);
    connect(session_, &WorkbenchSession::evaluationProgress, evaluate_, &EvaluatePanel::showProgress);
    connect(evaluate_, &EvaluatePanel::openInAsk, this, [this](const QString& question, const QString& context) {
        ask_->setInputs(question, context);
        tabs_->setCurrentWidget(ask_);
        session_->ask(question, context, ask_->options());
    });
}

void MainWindow::restoreSettings()
{
    Settings settings;
    const QByteArray geometry = settings.windowGeometry();
    restoreGeometry(geometry);
    restoreState(settings.windowState());
    restoreSplitters();
    tabs_->setCurrentIndex(settings.currentTab());
    mode_->setCurrentIndex(settings.runMode());
    // Runner devices are not restarted silently at start-up; the in-process CPU is the default.
    device_->setCurrentIndex(0);
    if (geometry.isEmpty())
        fitToScreen();
    const RunStamp now = session_->currentStamp();
    for (ResultPanel* panel : resultPanels_)
        panel->setCurrentStamp(now);
    updateStatus();
}

MainWindow::~MainWindow() = default;

void MainWindow::connectSensitivity()
{
    connect(sensitivity_, &SensitivityPanel::sweepRequested, session_, &WorkbenchSession::sensitivity);
    connect(session_, &WorkbenchSession::sensitivityEntry, sensitivity_, &SensitivityPanel::addEntry);
    connect(session_, &WorkbenchSession::failed, this, [this](const QString& operation, const QString& message) {
        if (operation == tr("Sensitivity") || operation == tr("Save fixed checkpoint"))
            sensitivity_->showMessage(message);
    });
    connect(session_, &WorkbenchSession::keptFloat, sensitivity_,
            [this](const QString&, const QString& summary) { sensitivity_->showMessage(summary); });
    connect(sensitivity_, &SensitivityPanel::keepFloatRequested, this, &MainWindow::saveFixedCheckpoint);
}

void MainWindow::connectCalibration()
{
    connect(calibration_, &CalibrationPanel::runRequested, session_, &WorkbenchSession::calibrationLab);
    connect(calibration_, &CalibrationPanel::writeRequested, session_, &WorkbenchSession::writeCalibrated);
    connect(session_, &WorkbenchSession::calibrationLabFinished, this,
            [this](std::shared_ptr<const CalibrationLabResult> lab, const QString& checkpoint) {
                // A lab of a checkpoint closed meanwhile says nothing about the open one.
                if (checkpoint != session_->checkpointDirectory())
                    return;
                PanelResult result;
                result.calibration = std::move(lab);
                calibration_->takeResult(result);
            });
    connect(session_, &WorkbenchSession::calibratedWritten, calibration_,
            [this](const QString&, const QString& summary) { calibration_->showMessage(summary); });
    connect(session_, &WorkbenchSession::failed, this, [this](const QString& operation, const QString& message) {
        if (operation == tr("Calibration lab") || operation == tr("Write calibrated checkpoint"))
            calibration_->showMessage(message);
    });
}

void MainWindow::connectDeviceCheck()
{
    connect(deviceCheck_, &DeviceCheckPanel::checkRequested, session_, &WorkbenchSession::deviceCheck);
    connect(deviceCheck_, &DeviceCheckPanel::cancelRequested, session_->jobs(), &JobTracker::cancel);
    connect(session_->jobs(), &JobTracker::progress, deviceCheck_, &DeviceCheckPanel::showProgress);
    connect(session_, &WorkbenchSession::deviceChecked, this, [this](std::shared_ptr<const DeviceCheckOutcome> outcome) {
        PanelResult result = resultOf(outcome->stamp);
        result.deviceCheck = std::move(outcome);
        showResult(result);
    });
    connect(session_, &WorkbenchSession::failed, this, [this](const QString& operation, const QString& message) {
        if (operation == tr("Device check"))
            deviceCheck_->showFailure(message);
    });
    // A point clicked in the check is selected in Errors, whose drill-down draws it for the last
    // question when the results there hold it.
    auto showPoint = [this](const QString& point) {
        // A Linear's input or output: that Linear becomes the one every view shows (first, so
        // that Errors then selects this very point rather than the Linear's output).
        QString module = point;
        if (module.endsWith(QLatin1String(".input")))
            module.chop(6);
        else if (module.endsWith(QLatin1String(".output")))
            module.chop(7);
        if (info_ && module != point)
            for (const LinearInfo& linear : info_->linears)
                if (linear.module == module.toStdString())
                    selection_->select(module);
        if (errors_->selectCapturePoint(point) && !errors_->isStale())
            session_->capturePoint(point);
    };
    connect(deviceCheck_, &DeviceCheckPanel::capturePointSelected, this, showPoint);
    connect(deviceCheck_, &DeviceCheckPanel::showInErrorsRequested, this, [this, showPoint](const QString& point) {
        showPoint(point);
        tabs_->setCurrentWidget(errors_);
    });
    // The check uses the file Evaluate uses, unless the user chose another for it.
    connect(evaluate_, &EvaluatePanel::evaluateRequested, this, [this](const QString& squadFile) {
        if (deviceCheck_->squadFile().isEmpty())
            deviceCheck_->setSquadFile(squadFile);
    });
}

void MainWindow::connectSelection()
{
    LinearSelection* selection = selection_;
    auto select = [selection](const QString& module) { selection->select(module); };
    connect(model_, &ModelPanel::linearSelected, selection, select);
    connect(scales_, &ScalesPanel::linearSelected, selection, select);
    connect(errors_, &ErrorsPanel::linearSelected, selection, select);
    connect(sensitivity_, &SensitivityPanel::linearSelected, selection, select);
    connect(triage_, &TriagePanel::linearSelected, selection, select);
    connect(selection, &LinearSelection::selected, this, [this](const QString& module) {
        if (module.isEmpty()) {
            inspector_->showLinear(module);
            return;
        }
        model_->selectSubject(module);
        scales_->selectLinear(module);
        errors_->selectLinear(module);
        sensitivity_->selectLinear(module);
        triage_->selectLinear(module);
        inspector_->showLinear(module);
    });
    connect(inspector_, &LinearInspector::floatToggled, this, &MainWindow::setLinearFloat);
    connect(inspector_, &LinearInspector::showScalesRequested, this,
            [this](const QString& module) { showLinearIn(scales_, module); });
    connect(inspector_, &LinearInspector::showErrorsRequested, this,
            [this](const QString& module) { showLinearIn(errors_, module); });
}

// The triage card's buttons press what the user would press elsewhere.
void MainWindow::connectTriage()
{
    connect(triage_, &TriagePanel::runInFloatRequested, this, [this](const QString& module) { setLinearFloat(module, true); });
    connect(triage_, &TriagePanel::showScalesRequested, this, [this](const QString& module) { showLinearIn(scales_, module); });
    connect(triage_, &TriagePanel::showErrorsRequested, this, [this](const QString& module) { showLinearIn(errors_, module); });
    connect(triage_, &TriagePanel::answerRequested, this, [this] {
        QPushButton* button = tabs_->isTabEnabled(tabs_->indexOf(ask_)) ? ask_->askButton() : fillMask_->fillButton();
        if (button->isEnabled())
            button->click();
        else // nothing to run yet: the input is the user's to type
            tabs_->setCurrentWidget(tabs_->isTabEnabled(tabs_->indexOf(ask_)) ? static_cast<QWidget*>(ask_) : fillMask_);
    });
    connect(triage_, &TriagePanel::sweepRequested, this, [this] {
        if (sensitivity_->runButton()->isEnabled())
            sensitivity_->runButton()->click();
    });
    connect(triage_, &TriagePanel::evaluateRequested, this, [this] {
        tabs_->setCurrentWidget(evaluate_);
        if (evaluate_->evaluateButton()->isEnabled())
            evaluate_->evaluateButton()->click();
    });
    connect(triage_, &TriagePanel::saveFixedRequested, this, &MainWindow::saveFixedCheckpoint);
}

void MainWindow::setLinearFloat(const QString& module, bool inFloat)
{
    QStringList modules = session_->floatLinears();
    modules.removeAll(module);
    if (inFloat)
        modules << module;
    setFloatLinears(modules);
}

void MainWindow::showLinearIn(QWidget* panel, const QString& module)
{
    selection_->select(module);
    tabs_->setCurrentWidget(panel);
}

QSize MainWindow::firstWindowSize(const QSize& available)
{
    return QSize(1280, 820).boundedTo(QSize(available.width() * 92 / 100, available.height() * 92 / 100));
}

void MainWindow::fitToScreen()
{
    const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
    if (!screen) {
        resize(1280, 820);
        return;
    }
    const QRect available = screen->availableGeometry();
    resize(firstWindowSize(available.size()));
    move(available.center() - QPoint(width() / 2, height() / 2));
    // Below 1200 pixels the inspector would take a third of the width: it starts hidden there
    // (View > Linear Inspector, Alt+9, brings it).
    if (width() < 1200)
        inspectorDock_->hide();
}

void MainWindow::saveFixedCheckpoint(const QStringList& modules)
{
    if (modules.isEmpty()) {
        sensitivity_->showMessage(tr("Select the rows to keep float, or run a sweep that suggests some."));
        return;
    }
    const QString dst = QFileDialog::getSaveFileName(this, tr("Save Fixed Checkpoint As (a new folder)"),
                                                     session_->checkpointDirectory() + QStringLiteral("-fixed"));
    if (dst.isEmpty())
        return;
    const bool exists = QFileInfo::exists(dst);
    if (exists && QMessageBox::question(this, tr("Replace Checkpoint"), tr("%1 exists. Replace it?").arg(dst)) != QMessageBox::Yes)
        return;
    session_->keepFloat(modules, dst, exists);
}

void MainWindow::createActions()
{
    QStyle* style = QApplication::style();
    auto* open = new QAction(style->standardIcon(QStyle::SP_DirOpenIcon), tr("&Open Checkpoint..."), this);
    open->setShortcut(QKeySequence::Open);
    open->setToolTip(tr("Open a checkpoint folder (config.json, model.safetensors, tokenizer)"));
    connect(open, &QAction::triggered, this, &MainWindow::chooseCheckpoint);
    auto* reference = new QAction(tr("&Reference Checkpoint..."), this);
    reference->setToolTip(tr("The float checkpoint the FP8 model is compared with"));
    connect(reference, &QAction::triggered, this, &MainWindow::chooseReference);
    auto* dequant = new QAction(tr("Use &Dequantized Weights as Reference"), this);
    connect(dequant, &QAction::triggered, this, [this] { setReference(QString()); });
    auto* emulation = new QAction(tr("Use CPU FP8 &Emulation as Reference"), this);
    emulation->setToolTip(tr("For checking a runner device: compares the device's run with the exact FP8 emulation "
                             "of the same checkpoint on this CPU, so only the device's own departure shows"));
    connect(emulation, &QAction::triggered, session_, &WorkbenchSession::setCpuEmulationReference);
    // The three reference choices are exclusive and the menus tick the current one; a cancelled
    // folder dialog changes nothing, so the ticks follow the session, not the clicks.
    referenceChoices_ = {reference, dequant, emulation};
    auto* choices = new QActionGroup(this);
    for (QAction* choice : referenceChoices_) {
        choice->setCheckable(true);
        choices->addAction(choice);
        connect(choice, &QAction::triggered, this, &MainWindow::tickReferenceChoice);
    }
    connect(session_, &WorkbenchSession::referenceChanged, this, &MainWindow::tickReferenceChoice);
    tickReferenceChoice();
    exportReportAction_ = new QAction(style->standardIcon(QStyle::SP_DialogSaveButton), tr("&Export Report..."), this);
    exportReportAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    connect(exportReportAction_, &QAction::triggered, this, &MainWindow::chooseReportFolder);
    cancelAction_ = new QAction(style->standardIcon(QStyle::SP_BrowserStop), tr("&Cancel"), this);
    cancelAction_->setShortcut(QKeySequence(Qt::Key_Escape));
    cancelAction_->setEnabled(false);
    connect(cancelAction_, &QAction::triggered, session_->jobs(), &JobTracker::cancel);
    compareWithAction_ = new QAction(tr("Compare &With..."), this);
    compareWithAction_->setToolTip(tr("Open a second quantized checkpoint B of the same model and show it beside this one"));
    connect(compareWithAction_, &QAction::triggered, this, &MainWindow::chooseCompareWith);
    clearComparisonAction_ = new QAction(tr("C&lear Comparison"), this);
    clearComparisonAction_->setToolTip(tr("Remove checkpoint B from the charts, the Compare banner and the inspector"));
    clearComparisonAction_->setEnabled(false);
    connect(clearComparisonAction_, &QAction::triggered, this, &MainWindow::clearComparison);
    auto* quit = new QAction(tr("&Quit"), this);
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(open);
    recentMenu_ = file->addMenu(tr("Open &Recent"));
    file->addAction(compareWithAction_);
    file->addAction(clearComparisonAction_);
    file->addSeparator();
    file->addAction(reference);
    file->addAction(dequant);
    file->addAction(emulation);
    file->addSeparator();
    file->addAction(exportReportAction_);
    file->addSeparator();
    file->addAction(quit);
    addRunMenu();
    addViewMenu();
    demoMenu_ = menuBar()->addMenu(tr("&Demo"));
    demoMenu_->menuAction()->setVisible(false); // filled by the application when demos are installed
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About ScaleScope"), this, [this] {
        QMessageBox::about(this, tr("About ScaleScope"),
                           tr("<b>ScaleScope %1</b><br>A workbench for FP8-quantized encoder models.<br>"
                              "Compute threads: %2<br>%3<br>%4")
                               .arg(QApplication::applicationVersion(), QString::number(computeThreads()),
                                    QString::fromStdString(fp8GemmDescription()).toHtmlEscaped(),
                                    QString::fromStdString(floatGemmDescription()).toHtmlEscaped()));
    });
    rebuildRecentMenu();

    createToolbar({open, reference, dequant, emulation});
    createStatusBar();
}

// The tick on the reference in use. A click ticks its action at once, but the reference changes only
// when the session's job finishes (and not at all when the folder dialog is cancelled): every
// click and every change re-ticks what the session holds.
void MainWindow::tickReferenceChoice()
{
    const RunStamp::Reference kind = session_->currentStamp().referenceKind;
    const int current = kind == RunStamp::Reference::Folder ? 0 : kind == RunStamp::Reference::CpuEmulation ? 2 : 1;
    referenceChoices_[std::size_t(current)]->setChecked(true);
}

// Every run the panels start, from the keyboard too: each action presses its panel's button (so it
// runs only when the button would) after showing the panel.
void MainWindow::addRunMenu()
{
    QMenu* run = menuBar()->addMenu(tr("&Run"));
    const struct {
        QString text;
        QKeySequence key;
        QWidget* panel;
        QPushButton* button;
    } runs[] = {
        {tr("&Answer Question"), QKeySequence(Qt::Key_F5), ask_, ask_->askButton()},
        {tr("&Fill Mask"), QKeySequence(Qt::Key_F6), fillMask_, fillMask_->fillButton()},
        {tr("&Evaluate SQuAD File"), QKeySequence(Qt::Key_F7), evaluate_, evaluate_->evaluateButton()},
        {tr("&Sensitivity Sweep"), QKeySequence(Qt::Key_F8), sensitivity_, sensitivity_->runButton()},
        {tr("&Device Check"), QKeySequence(Qt::Key_F9), deviceCheck_, deviceCheck_->runButton()},
    };
    for (const auto& entry : runs) {
        QAction* action = run->addAction(entry.text);
        action->setShortcut(entry.key);
        QWidget* panel = entry.panel;
        QPushButton* button = entry.button;
        connect(action, &QAction::triggered, this, [this, panel, button] {
            tabs_->setCurrentWidget(panel);
            if (button->isEnabled())
                button->click();
        });
        // The menu shows what can run now.
        connect(run, &QMenu::aboutToShow, action, [action, button] { action->setEnabled(button->isEnabled()); });
    }
    run->addSeparator();
    run->addAction(cancelAction_);
}

// Alt+1 ... Alt+8, then Alt+0: straight to a panel, whichever widget has the focus; Alt+9 shows or
// hides the Linear inspector.
void MainWindow::addViewMenu()
{
    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < tabs_->count(); ++i) {
        QAction* action = view->addAction(tabs_->tabText(i).remove(QLatin1Char('&')));
        if (i < 8)
            action->setShortcut(QKeySequence(Qt::ALT | Qt::Key(Qt::Key_1 + i)));
        else if (i == 8)
            action->setShortcut(QKeySequence(Qt::ALT | Qt::Key_0));
        connect(action, &QAction::triggered, this, [this, i] { tabs_->setCurrentIndex(i); });
    }
    view->addSeparator();
    QAction* inspector = inspectorDock_->toggleViewAction();
    inspector->setShortcut(QKeySequence(Qt::ALT | Qt::Key_9));
    view->addAction(inspector);
}

// Open, the Reference menu, the Mode and Device boxes, Cancel and Export: `actions` are Open and
// the three reference choices, shared with the File menu.
void MainWindow::createToolbar(const std::array<QAction*, 4>& actions)
{
    auto [open, reference, dequant, emulation] = actions;
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
    mode_->addItem(tr("FP16 twin (AIU)"), QStringLiteral("fp16"));
    mode_->setItemData(2, tr("The FP8 run as the AIU stores it: every non-FP8 tensor and every module output in "
                             "float16, so overflows past 65,504 show up as inf before the device is booked"),
                       Qt::ToolTipRole);
    mode_->addItem(tr("FP8, DL16 accumulation"), QString::fromStdString(runLabel(RunMode::Fp8, Accumulation::Dl16)));
    mode_->addItem(tr("FP16 twin, DL16 accumulation"), QString::fromStdString(runLabel(RunMode::Fp16, Accumulation::Dl16)));
    const QString dl16Tip = tr("FP8 x FP8 products summed as the AIU simulator of fms-model-optimizer does: FP8 values "
                               "below 0.0088 flushed (DL8), chunks of 32 rounded to DL16, then summed in float32. "
                               "A model of the device's arithmetic to hold it against, not the truth");
    mode_->setItemData(3, dl16Tip, Qt::ToolTipRole);
    mode_->setItemData(4, dl16Tip, Qt::ToolTipRole);
    mode_->setToolTip(tr("How the quantized model runs against its reference"));
    connect(mode_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int index) {
        RunMode mode = RunMode::Fp8;
        Accumulation accumulation = Accumulation::Float32;
        parseRunLabel(mode_->itemData(index).toString().toStdString(), mode, accumulation);
        session_->setRunMode(mode, accumulation);
        Settings().setRunMode(index);
        updateStatus();
    });
    toolbar->addWidget(mode_);
    // AIU FP8 attention is a run option like the Mode box, so a toggle beside it: every later run
    // uses it, earlier results turn stale.
    fp8AttentionAction_ = new QAction(tr("FP8 Attention (AIU)"), this);
    fp8AttentionAction_->setObjectName(QStringLiteral("fp8AttentionAction"));
    fp8AttentionAction_->setCheckable(true);
    fp8AttentionAction_->setToolTip(tr("Run attention as fms_mo's math_fp8 does on the AIU: K and V cast to FP8 E4M3 "
                                       "with one scale per sequence from fixed ranges (K 200, V 100), Q float. The "
                                       "Attention view shows how much of E4M3 each head gets"));
    connect(fp8AttentionAction_, &QAction::toggled, this, [this](bool on) {
        session_->setAttention(on ? AttentionPrecision::Fp8Aiu : AttentionPrecision::Float);
        updateStatus();
    });
    toolbar->addAction(fp8AttentionAction_);
    toolbar->addWidget(new QLabel(tr(" Device "), toolbar));
    device_ = new QComboBox(toolbar);
    device_->setToolTip(tr("Where the quantized model runs: in this process, or in a runner process (see the "
                           "runner protocol), e.g. on an AIU host through ssh"));
    device_->addItem(tr("CPU (in-process)"), QStringLiteral("cpu"));
    // Quoted as one shell word: the install path may hold spaces, quotes, $ or backticks.
    const QString runner = localRunnerDevice(QCoreApplication::applicationDirPath());
    device_->addItem(tr("CPU runner process"), runner);
    // A pool: evaluation batches are split over both processes (see core/device/backend_pool.h).
    device_->addItem(tr("Two CPU runner processes (pool)"), runner + QLatin1Char('\n') + runner);
    device_->addItem(tr("AIU runner..."), QStringLiteral("aiu"));
    connect(device_, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        const QString spec = device_->itemData(index).toString();
        if (spec == QLatin1String("aiu")) {
            chooseAiuRunner();
            return;
        }
        session_->setDevice(spec);
        updateStatus();
    });
    toolbar->addWidget(device_);
    toolbar->addSeparator();
    toolbar->addAction(cancelAction_);
    toolbar->addAction(exportReportAction_);

}

void MainWindow::createStatusBar()
{
    deviceLabel_ = new QLabel(this);
    modeLabel_ = new QLabel(this);
    dtypeLabel_ = new QLabel(this);
    loadLabel_ = new QLabel(this);
    referenceStatus_ = new QLabel(this);
    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1000);
    progress_->setMaximumWidth(420);
    progress_->setTextVisible(true);
    progress_->hide();
    cancelButton_ = new QPushButton(tr("Cancel"), this);
    cancelButton_->hide();
    connect(cancelButton_, &QPushButton::clicked, session_->jobs(), &JobTracker::cancel);
    statusBar()->addPermanentWidget(progress_);
    statusBar()->addPermanentWidget(cancelButton_);
    floatStatus_ = new QLabel(this);
    floatStatus_->setObjectName(QStringLiteral("floatStatus"));
    floatStatus_->setStyleSheet(QStringLiteral("#floatStatus { color: #8a5a00; font-weight: bold; }"));
    clearFloat_ = new QPushButton(tr("Clear"), this);
    clearFloat_->setToolTip(tr("Run every Linear as the checkpoint declares again"));
    connect(clearFloat_, &QPushButton::clicked, this, [this] { setFloatLinears({}); });
    floatStatus_->hide();
    clearFloat_->hide();
    // The permanent labels may shrink (their full text is in the tooltip), so the status bar never
    // holds the window wider than a laptop screen.
    for (QLabel* label : {floatStatus_, deviceLabel_, modeLabel_, dtypeLabel_, referenceStatus_, loadLabel_}) {
        label->setMinimumWidth(24);
        statusBar()->addPermanentWidget(label);
        if (label == floatStatus_)
            statusBar()->addPermanentWidget(clearFloat_);
    }
}

void MainWindow::chooseAiuRunner()
{
    auto* dialog = new RunnerDialog(Settings().aiuRunnerCommand(), session_->checkpointDirectory(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::finished, this, [this, dialog](int result) {
        const QString command = dialog->command();
        if (result != QDialog::Accepted || command.isEmpty()) {
            device_->setCurrentIndex(deviceIndexFor(session_->device()));
            return;
        }
        Settings().setAiuRunnerCommand(command);
        session_->setDevice(QStringLiteral("runner:") + command);
        updateStatus();
    });
    dialog->open();
}

int MainWindow::deviceIndexFor(const QString& spec) const
{
    const int exact = device_->findData(spec);
    if (exact >= 0)
        return exact;
    // Any other runner command is one the user typed for the AIU entry.
    return spec.startsWith(QLatin1String("runner:")) ? device_->findData(QStringLiteral("aiu")) : 0;
}

void MainWindow::onDeviceSwitchFailed(const QString& failedDevice, const QString& message)
{
    device_->setCurrentIndex(deviceIndexFor(session_->device()));
    updateStatus();
    const QString device = failedDevice.startsWith(QLatin1String("runner:")) ? failedDevice.mid(7) : failedDevice;
    showError(tr("Switch device"), tr("Could not switch to the device %1: %2\nThe checkpoint runs on %3 as before.")
                                       .arg(device, message, device_->currentText()));
}

void MainWindow::onStateChanged()
{
    const RunStamp now = session_->currentStamp();
    const QString why = tr("Opened %1: the results of the previous checkpoint were cleared.")
                            .arg(QFileInfo(now.checkpoint).fileName());
    // Results of another checkpoint say nothing about this one: they go. Results of this one under
    // another reference, mode or device are kept, marked stale, and rerun when that is cheap.
    // A panel with no result may still hold a message about the previous checkpoint (a failed
    // evaluation, a cancelled sweep): it is replaced too.
    const bool anotherCheckpoint = now.checkpoint != shownCheckpoint_;
    shownCheckpoint_ = now.checkpoint;
    const QString fresh = tr("Opened %1: nothing has run on it yet.").arg(QFileInfo(now.checkpoint).fileName());
    for (ResultPanel* panel : resultPanels_) {
        if (panel->hasResult() && panel->banner()->resultStamp().checkpoint != now.checkpoint)
            panel->clearResults(why);
        else if (anotherCheckpoint && panel->banner() && !panel->hasResult())
            panel->clearResults(fresh);
        panel->setCurrentStamp(now);
    }
    inspector_->setCurrentStamp(now);
    inspector_->setFloatLinears(now.floatLinears);
    if (ask_->banner()->isStale())
        rerunAsk();
    else if (fillMask_->banner()->isStale())
        rerunFill();
    model_->setFloatLinears(now.floatLinears);
    updateFloatStatus();
    updateStatus();
}

void MainWindow::setFloatLinears(const QStringList& modules)
{
    const QStringList before = session_->floatLinears();
    session_->setFloatLinears(modules); // a change reruns the last result's input (onStateChanged)
    model_->setFloatLinears(session_->floatLinears());
    if (session_->floatLinears() == before || ask_->banner()->hasResult() || fillMask_->banner()->hasResult())
        return;
    // Nothing ran yet: the what-if runs the input the open checkpoint's tab holds.
    if (tabs_->isTabEnabled(tabs_->indexOf(ask_)))
        ask_->askButton()->click();
    else if (tabs_->isTabEnabled(tabs_->indexOf(fillMask_)))
        fillMask_->fillButton()->click();
}

void MainWindow::updateFloatStatus()
{
    const RunStamp now = session_->currentStamp();
    floatStatus_->setText(now.floatText());
    floatStatus_->setToolTip(now.floatLinears.isEmpty()
                                 ? QString()
                                 : tr("Running in float (what-if; the checkpoint on disk is unchanged):\n%1")
                                       .arg(now.floatLinears.join(QLatin1Char('\n'))));
    floatStatus_->setVisible(!now.floatLinears.isEmpty());
    clearFloat_->setVisible(!now.floatLinears.isEmpty());
}

void MainWindow::warnIfOutsideDemoCorpus(const AskOutcome& outcome)
{
    if (!isDemoCheckpoint(outcome.stamp.checkpoint))
        return;
    for (const DemoPassage& passage : demo_.passages)
        if (passage.context.trimmed() == outcome.context.trimmed())
            return;
    ask_->resultLabel()->setText(ask_->resultLabel()->text() +
                                 tr("<br><span style='color:#8a5a00'>The demo models were trained on the demo passages "
                                    "only (Demo &gt; Passages): about other text their answers mean nothing.</span>"));
}

bool MainWindow::isDemoCheckpoint(const QString& dir) const
{
    for (const DemoCheckpoint& demo : demo_.checkpoints)
        if (QFileInfo(demo.directory) == QFileInfo(dir))
            return true;
    return false;
}

void MainWindow::warnIfDemoEvaluatesOtherText(const QString& squadFile)
{
    const bool demoCorpus = QFileInfo(squadFile) == QFileInfo(demo_.folder + QStringLiteral("/corpus/questions.json"));
    evaluate_->setWarning(isDemoCheckpoint(session_->checkpointDirectory()) && !demoCorpus
                              ? tr("The demo models were trained on the demo corpus only: on this SQuAD file their "
                                   "answers, EM and F1 mean nothing. FP8 against the reference still shows the "
                                   "quantization error.")
                              : QString());
}

void MainWindow::rerunAsk()
{
    if (const auto last = ask_->outcome())
        session_->ask(last->question, last->context, last->options);
}

void MainWindow::rerunFill()
{
    if (const auto last = fillMask_->outcome())
        session_->fillMask(last->text, last->topK);
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
    if (!folder.isEmpty()) {
        evaluate_->setSquadFile(folder);
        deviceCheck_->setSquadFile(folder);
    }
}

void MainWindow::updateStatus()
{
    deviceLabel_->setText(tr("Device: %1%2")
                              .arg(deviceName_.isEmpty() ? device_->currentText() : deviceName_,
                                   lastRunMs_.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(lastRunMs_)));
    modeLabel_->setText(tr("Mode: %1").arg(session_->currentStamp().modeName()));
    dtypeLabel_->setText(info_ ? tr("Dtype: %1").arg(QString::fromStdString(info_->checkpoint->config().torchDtype))
                               : tr("Dtype: -"));
    loadLabel_->setText(info_ ? tr("Loaded in %L1 ms").arg(info_->loadMs, 0, 'f', 0) : QString());
    referenceStatus_->setText(tr("Reference: %1").arg(referenceLabel_.isEmpty() ? tr("-") : QFileInfo(referenceLabel_).fileName().isEmpty() ? referenceLabel_ : QFileInfo(referenceLabel_).fileName()));
    referenceStatus_->setToolTip(referenceLabel_);
    // A small explicit minimum lets the labels give way on a narrow window (the text is clipped,
    // the tooltip has all of it); with room they take their text's width.
    for (QLabel* label : {deviceLabel_, modeLabel_, dtypeLabel_, loadLabel_})
        label->setToolTip(label->text());
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
        Settings().setReferenceFor(session_->checkpointDirectory(), dir);
}

void MainWindow::onCheckpointOpened(std::shared_ptr<const CheckpointInfo> info)
{
    info_ = std::move(info);
    // Each checkpoint remembers its reference; without one, dequantized weights stand in.
    const QString saved = Settings().referenceFor(info_->directory);
    if (saved != session_->referenceDirectory() || referenceLabel_.isEmpty())
        session_->setReference(QFileInfo(saved).isDir() ? saved : QString());
    PanelResult opened;
    opened.checkpoint = info_;
    selection_->clear();
    compareWith_.reset(); // B belonged to the previous checkpoint (the session dropped it)
    showCompareWithInPanels(nullptr);
    evaluate_->setWarning(QString());
    showResult(opened);
    setWindowTitle(tr("ScaleScope - %1").arg(QDir::toNativeSeparators(info_->directory)));
    addRecent(info_->directory);
    const bool isMaskedLm = info_->checkpoint->layout().isMaskedLm();
    tabs_->setTabEnabled(tabs_->indexOf(ask_), !isMaskedLm);
    tabs_->setTabEnabled(tabs_->indexOf(fillMask_), isMaskedLm);
    if (tabs_->currentWidget() == ask_ && isMaskedLm)
        tabs_->setCurrentWidget(fillMask_);
    if (tabs_->currentWidget() == fillMask_ && !isMaskedLm)
        tabs_->setCurrentWidget(ask_);
    // A checkpoint the engine refuses is still worth inspecting: say so, and say on every run button why it is off.
    const QString reason = info_->runnable ? QString() : info_->loadError;
    ask_->setRunnable(info_->runnable, reason);
    fillMask_->setRunnable(info_->runnable, reason);
    if (info_->checkpoint->hasTokenizer())
        fillMask_->setMaskToken(QString::fromStdString(info_->checkpoint->tokenizer().maskToken()));
    evaluate_->setRunnable(info_->runnable && !isMaskedLm,
                           info_->runnable ? tr("SQuAD evaluation needs a question-answering checkpoint; this one "
                                                "is a masked language model.")
                                           : reason);
    deviceCheck_->setRunnable(info_->runnable && !isMaskedLm,
                              info_->runnable ? tr("the check runs SQuAD questions, which need a question-answering "
                                                   "checkpoint; this one is a masked language model.")
                                              : reason);
    calibration_->setRunnable(info_->runnable && !info_->checkpoint->config().quantization,
                              info_->runnable ? tr("The calibration lab calibrates a float checkpoint; this one is "
                                                   "already quantized (open its float original).")
                                              : reason);
    if (!demo_.isEmpty())
        calibration_->setDefaultFiles(demo_.folder + QStringLiteral("/corpus/calibration.txt"),
                                      demo_.folder + QStringLiteral("/corpus/evaluation.txt"));
    if (!info_->runnable) {
        showError(tr("Open checkpoint"), tr("Opened for inspection only: %1").arg(info_->loadError));
        statusBar()->showMessage(tr("Opened %1 for inspection only (it cannot run).").arg(info_->directory));
    } else {
        statusBar()->showMessage(tr("Opened %1").arg(info_->directory), 5000);
    }
    // Triage is where a checkpoint is judged: it comes to the front on every open.
    tabs_->setCurrentWidget(triage_);
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
    // Start next to the last checkpoint: its siblings are usually the other candidates.
    const QString last = Settings().lastOpenFolder();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open Checkpoint Folder"),
                                                          last.isEmpty() ? QDir::homePath() : QFileInfo(last).path());
    if (dir.isEmpty())
        return;
    Settings().setLastOpenFolder(dir);
    openCheckpoint(dir);
}

void MainWindow::chooseReference()
{
    const QString last = Settings().lastOpenFolder();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Choose the Float Reference Checkpoint"),
                                                          last.isEmpty() ? QDir::homePath() : QFileInfo(last).path());
    if (!dir.isEmpty())
        setReference(dir);
}

void MainWindow::chooseCompareWith()
{
    const QString last = Settings().lastOpenFolder();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Compare With Checkpoint B"),
                                                          last.isEmpty() ? QDir::homePath() : QFileInfo(last).path());
    if (!dir.isEmpty())
        compareWith(dir);
}

void MainWindow::compareWith(const QString& dir)
{
    if (!info_ || !info_->runnable) {
        showError(tr("Compare with"), tr("Open a checkpoint that can run before comparing it with %1.").arg(dir));
        return;
    }
    session_->compareWith(dir);
}

void MainWindow::rerunCompareWith()
{
    if (session_->compareWithDirectory().isEmpty())
        return;
    if (compareWith_ && compareWith_->comparison) {
        // B's run was of A's previous input: until B reruns, the charts say "B: not run".
        auto pending = std::make_shared<CompareWithOutcome>(*compareWith_);
        pending->comparison.reset();
        compareWith_ = pending;
        showCompareWithInPanels(compareWith_);
    }
    session_->compareWith(session_->compareWithDirectory());
}

void MainWindow::clearComparison()
{
    session_->clearCompareWith();
    compareWith_.reset();
    showCompareWithInPanels(nullptr);
    statusBar()->showMessage(tr("Comparison cleared."), 3000);
}

void MainWindow::showCompareWithInPanels(std::shared_ptr<const CompareWithOutcome> b)
{
    scales_->setOverlay(b ? b->statistics : std::vector<LinearScaleStatistics>{}, b ? b->comparison : nullptr);
    errors_->setCompareWith(b);
    inspector_->setCompareWith(b);
    ask_->setCompareWith(b);
    fillMask_->setCompareWith(b);
    deviceCheck_->setCompareWith(b);
    calibration_->setCompareWith(b);
    attention_->setCompareWith(b);
    sensitivity_->setCompareWith(b);
    evaluate_->setCompareWith(b);
    clearComparisonAction_->setEnabled(b != nullptr);
}

void MainWindow::showCompareWith(std::shared_ptr<const CompareWithOutcome> outcome)
{
    if (!info_ || !outcome)
        return;
    compareWith_ = outcome;
    showCompareWithInPanels(outcome);
    int tensorsDiffering = 0;
    for (const TensorDifference& t : outcome->diff->tensors)
        tensorsDiffering += t.verdict != kDiffIdentical;
    statusBar()->showMessage(
        outcome->diff->identical()
            ? tr("Compared with %1: identical.").arg(outcome->directory)
            : tr("Compared with %1: %2 Linears with scheme differences, %3 tensors differ, %4 only in one.")
                  .arg(outcome->directory)
                  .arg(outcome->diff->linears.size())
                  .arg(tensorsDiffering)
                  .arg(outcome->diff->onlyInA.size() + outcome->diff->onlyInB.size()));
}

void MainWindow::addRecent(const QString& dir)
{
    Settings settings;
    QStringList recent = settings.recentCheckpoints();
    recent.removeAll(dir);
    recent.prepend(dir);
    while (recent.size() > kMaxRecent)
        recent.removeLast();
    settings.setRecentCheckpoints(recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu()
{
    recentMenu_->clear();
    const QStringList recent = Settings().recentCheckpoints();
    for (const QString& dir : recent)
        recentMenu_->addAction(QDir::toNativeSeparators(dir), this, [this, dir] { openCheckpoint(dir); });
    if (recent.isEmpty())
        recentMenu_->addAction(tr("(none)"))->setEnabled(false);
    else {
        recentMenu_->addSeparator();
        recentMenu_->addAction(tr("Clear List"), this, [this] {
            Settings().setRecentCheckpoints({});
            rebuildRecentMenu();
        });
    }
}

QStringList MainWindow::exportReport(const QString& folder)
{
    const ReportContents contents = assembleReport(resultPanels_, session_->currentStamp());
    lastReportLeftOut_ = static_cast<int>(contents.summary["left_out"].size());
    return ui::exportReport(contents, folder);
}

void MainWindow::chooseReportFolder()
{
    const QString last = Settings().lastReportFolder();
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Export Report to Folder"),
                                                             last.isEmpty() ? QDir::homePath() : last);
    if (folder.isEmpty())
        return;
    Settings().setLastReportFolder(folder);
    if (!QDir(folder).isEmpty()) {
        const auto answer = QMessageBox::question(
            this, tr("Export Report"),
            tr("%1 is not empty. Files of a previous report there will be replaced. Continue?").arg(folder));
        if (answer != QMessageBox::Yes)
            return;
    }
    try {
        const QStringList files = exportReport(folder);
        if (lastReportLeftOut_ > 0)
            statusBar()->showMessage(tr("Exported %1 to %2; left out %3 (listed in summary.json).")
                                         .arg(countText(files.size(), tr("file"), tr("files")), folder,
                                             countText(lastReportLeftOut_, tr("stale result"), tr("stale results"))),
                10000);
        else
            statusBar()->showMessage(
                tr("Exported %1 to %2").arg(countText(files.size(), tr("file"), tr("files")), folder), 8000);
    } catch (const Error& e) {
        showError(tr("Export report"), QString::fromUtf8(e.what()));
    }
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    session_->cancel();
    Settings settings;
    settings.setWindowGeometry(saveGeometry());
    settings.setWindowState(saveState());
    settings.setCurrentTab(tabs_->currentIndex());
    saveSplitters();
    QMainWindow::closeEvent(event);
}

void MainWindow::saveSplitters()
{
    Settings settings;
    for (QSplitter* splitter : findChildren<QSplitter*>())
        if (!splitter->objectName().isEmpty())
            settings.setSplitterState(splitter->objectName(), splitter->saveState());
}

void MainWindow::restoreSplitters()
{
    Settings settings;
    for (QSplitter* splitter : findChildren<QSplitter*>())
        if (!splitter->objectName().isEmpty())
            splitter->restoreState(settings.splitterState(splitter->objectName()));
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
