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
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QScreen>
#include <QStandardPaths>
#include <QPushButton>
#include <QSplitter>
#include <QStatusBar>
#include <QStyle>
#include <QToolBar>
#include <QToolButton>

#include <optional>
#include <utility>

#include "tool_version.h"
#include "common/error.h"
#include "engine/compute_threads.h"
#include "engine/float_gemm.h"
#include "engine/fp8_gemm.h"
#include "linear_selection.h"
#include "models/value_text.h"
#include "panels/ask_panel.h"
#include "panels/calibration_panel.h"
#include "panels/classify_panel.h"
#include "panels/device_check_panel.h"
#include "panels/embed_panel.h"
#include "panels/evaluate_panel.h"
#include "panels/fill_mask_panel.h"
#include "panels/linear_inspector.h"
#include "panels/rerank_panel.h"
#include "panels/task_evaluate_panel.h"
#include "panels/sensitivity_panel.h"
#include "panels/triage_panel.h"
#include "recent_menu.h"
#include "result_tabs.h"
#include "report_assembly.h"
#include "run_controls.h"
#include "session_status.h"
#include "settings.h"
#include "tasks/fix_provenance.h"
#include "tasks/fix_task_input.h"

namespace scalescope::ui {
namespace {

// The reference a fix's provenance records, "" when none is recorded or it is no longer there
// (Triage says which).
QString recordedReference(const QString& dir)
{
    try {
        const std::optional<nlohmann::json> provenance = readFixProvenance(dir.toStdString());
        const QString reference = provenance ? QString::fromStdString(provenanceReference(*provenance)) : QString();
        return QFileInfo(reference).isDir() ? reference : QString();
    } catch (const Error&) {
        return {};
    }
}

} // namespace

namespace {

// Cancel and Export sit on a toolbar of their own after the run controls. When the window is too
// narrow for both toolbars in one row, the second starts a row of its own (instead of vanishing
// behind the toolbar's overflow arrow, where a user does not find Cancel while a job runs).
class ToolbarWrap : public QObject {
public:
    ToolbarWrap(QMainWindow* window, QToolBar* first, QToolBar* second)
        : QObject(window), window_(window), first_(first), second_(second)
    {
        window->installEventFilter(this);
    }

    void fit()
    {
        const int needed = first_->sizeHint().width() + second_->sizeHint().width();
        const bool wrap = needed > window_->width();
        if (wrap && !window_->toolBarBreak(second_))
            window_->insertToolBarBreak(second_);
        else if (!wrap && window_->toolBarBreak(second_))
            window_->removeToolBarBreak(second_);
    }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override
    {
        if (watched == window_ && (event->type() == QEvent::Resize || event->type() == QEvent::Show))
            fit();
        return QObject::eventFilter(watched, event);
    }

private:
    QMainWindow* window_;
    QToolBar* first_;
    QToolBar* second_;
};

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent)
{
    setWindowTitle(tr("ScaleScope"));
    setAcceptDrops(true);
    session_ = new WorkbenchSession(this);
    selection_ = new LinearSelection(this);
    tabs_ = new ResultTabs(session_, selection_, this);
    setCentralWidget(tabs_);
    createInspectorDock();
    createActions();
    connectSession();
    restoreSettings();
}

void MainWindow::createInspectorDock()
{
    inspectorDock_ = new QDockWidget(tr("Linear Inspector"), this);
    inspectorDock_->setObjectName(QStringLiteral("inspectorDock"));
    inspectorDock_->setWidget(tabs_->inspector());
    inspectorDock_->setAllowedAreas(Qt::LeftDockWidgetArea | Qt::RightDockWidgetArea | Qt::BottomDockWidgetArea);
    // Narrower than this its numbers wrap into a column of fragments.
    inspectorDock_->setMinimumWidth(280);
    addDockWidget(Qt::RightDockWidgetArea, inspectorDock_);
    resizeDocks({inspectorDock_}, {330}, Qt::Horizontal);
}

// What the session delivers to the window itself (the tabs take the results): opened
// checkpoints, B, failures and busy.
void MainWindow::connectSession()
{
    connect(session_, &WorkbenchSession::checkpointOpened, this, &MainWindow::onCheckpointOpened);
    connect(session_, &WorkbenchSession::referenceChanged, this, [this](const QString& label) { referenceLabel_ = label; });
    connect(tabs_, &ResultTabs::inputRan, this, &MainWindow::rerunCompareWith);
    connect(session_, &WorkbenchSession::compareWithReady, this, &MainWindow::showCompareWith);
    connect(tabs_, &ResultTabs::openFixedRequested, this, &MainWindow::openFixed);
    connect(session_, &WorkbenchSession::deviceSwitchFailed, this, &MainWindow::onDeviceSwitchFailed);
    connect(session_, &WorkbenchSession::failed, this, &MainWindow::showError);
    connect(session_->jobs(), &JobTracker::busyChanged, cancelAction_, &QAction::setEnabled);
}

void MainWindow::restoreSettings()
{
    Settings settings;
    const QByteArray geometry = settings.windowGeometry();
    restoreGeometry(geometry);
    restoreState(settings.windowState());
    restoreSplitters();
    tabs_->setCurrentIndex(settings.currentTab());
    runControls_->modeBox()->setCurrentIndex(settings.runMode());
    // Runner devices are not restarted silently at start-up; the in-process CPU is the default.
    runControls_->deviceBox()->setCurrentIndex(0);
    if (geometry.isEmpty())
        fitToScreen();
    const RunStamp now = session_->currentStamp();
    for (ResultPanel* panel : tabs_->panels())
        panel->setCurrentStamp(now);
    status_->update();
}

MainWindow::~MainWindow() = default;

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
    recent_ = new RecentMenu(file->addMenu(tr("Open &Recent")));
    connect(recent_, &RecentMenu::openRequested, this, &MainWindow::openCheckpoint);
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
                               .arg(QString::fromLatin1(toolVersion()), QString::number(computeThreads()),
                                    QString::fromStdString(fp8GemmDescription()).toHtmlEscaped(),
                                    QString::fromStdString(floatGemmDescription()).toHtmlEscaped()));
    });

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
        {tr("&Answer Question"), QKeySequence(Qt::Key_F5), tabs_->ask(), tabs_->ask()->askButton()},
        {tr("&Fill Mask"), QKeySequence(Qt::Key_F6), tabs_->fillMask(), tabs_->fillMask()->fillButton()},
        // The sequence tasks run with Ctrl+Enter in their panels; F10 and up are the desktop's.
        {tr("E&mbed Texts"), QKeySequence(), tabs_->embed(), tabs_->embed()->embedButton()},
        {tr("&Rerank Passages"), QKeySequence(), tabs_->rerank(), tabs_->rerank()->rerankButton()},
        {tr("&Classify Text"), QKeySequence(), tabs_->classify(), tabs_->classify()->classifyButton()},
        {tr("&Evaluate SQuAD File"), QKeySequence(Qt::Key_F7), tabs_->evaluate(), tabs_->evaluate()->evaluateButton()},
        {tr("Evaluate &Task Dataset"), QKeySequence(), tabs_->taskEvaluate(), tabs_->taskEvaluate()->evaluateButton()},
        {tr("&Sensitivity Sweep"), QKeySequence(Qt::Key_F8), tabs_->sensitivity(), tabs_->sensitivity()->runButton()},
        {tr("&Device Check"), QKeySequence(Qt::Key_F9), tabs_->deviceCheck(), tabs_->deviceCheck()->runButton()},
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

// Open, the Reference menu, the run options (RunControls), Cancel and Export: `actions` are Open
// and the three reference choices, shared with the File menu.
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
    runControls_ = new RunControls(session_, toolbar, this);
    QToolBar* jobs = addToolBar(tr("Cancel and Export"));
    jobs->setObjectName(QStringLiteral("jobToolbar"));
    jobs->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    jobs->addAction(cancelAction_);
    jobs->addAction(exportReportAction_);
    new ToolbarWrap(this, toolbar, jobs);
}

void MainWindow::createStatusBar()
{
    status_ = new SessionStatus(session_, runControls_->deviceBox(), statusBar());
    connect(status_, &SessionStatus::clearFloatRequested, tabs_, [this] { tabs_->setFloatLinears({}); });
    connect(runControls_, &RunControls::changed, status_, &SessionStatus::update);
}

void MainWindow::onDeviceSwitchFailed(const QString& failedDevice, const QString& message)
{
    runControls_->showSessionDevice();
    status_->update();
    const QString device = failedDevice.startsWith(QLatin1String("runner:")) ? failedDevice.mid(7) : failedDevice;
    showError(tr("Switch device"), tr("Could not switch to the device %1: %2\nThe checkpoint runs on %3 as before.")
                                       .arg(device, message, runControls_->deviceBox()->currentText()));
}

void MainWindow::setDemoCatalog(const DemoCatalog& catalog)
{
    demo_ = catalog;
    tabs_->ask()->setDemoCatalog(demo_);
    tabs_->evaluate()->setDemoCatalog(demo_);
    tabs_->taskEvaluate()->setDemoCatalog(demo_);
    demoMenu_->clear();
    demoMenu_->menuAction()->setVisible(!demo_.isEmpty());
    for (int i = 0; i < demo_.checkpoints.size(); ++i)
        demoMenu_->addAction(demo_.checkpoints[i].label, this, [this, i] { openDemo(i); });
    if (!demo_.passages.isEmpty()) {
        demoMenu_->addSeparator();
        QMenu* passages = demoMenu_->addMenu(tr("&Passages"));
        for (int p = 0; p < demo_.passages.size(); ++p)
            passages->addAction(tr("%1: %2").arg(demo_.passages[p].title, demo_.passages[p].question), this, [this, p] {
                tabs_->ask()->setInputs(demo_.passages[p].question, demo_.passages[p].context);
                tabs_->setCurrentWidget(tabs_->ask());
            });
    }
    if (!demo_.maskSentences.isEmpty()) {
        QMenu* sentences = demoMenu_->addMenu(tr("&Mask Sentences"));
        for (const QString& sentence : demo_.maskSentences)
            sentences->addAction(sentence, this, [this, sentence] {
                tabs_->fillMask()->setText(sentence);
                if (tabs_->isTabEnabled(tabs_->indexOf(tabs_->fillMask())))
                    tabs_->setCurrentWidget(tabs_->fillMask());
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
    switch (demo.task) {
    case DemoTask::FillMask:
        if (!demo_.maskSentences.isEmpty())
            tabs_->fillMask()->setText(demo_.maskSentences.first());
        tabs_->setCurrentWidget(tabs_->fillMask());
        break;
    case DemoTask::QuestionAnswering:
        if (passage >= 0 && passage < demo_.passages.size()) {
            tabs_->ask()->setInputs(demo_.passages[passage].question, demo_.passages[passage].context);
            // Answer once the demo is open, so the window shows a result rather than empty tables.
            runOnceReady([this] { tabs_->ask()->askAbout(tabs_->ask()->question(), tabs_->ask()->context()); });
        }
        tabs_->setCurrentWidget(tabs_->ask());
        break;
    case DemoTask::Embed:
    case DemoTask::Rerank:
    case DemoTask::Classify: openTaskDemo(demo); break;
    }
    if (QFileInfo(demo_.questionsFile()).exists()) {
        tabs_->evaluate()->setSquadFile(demo_.questionsFile());
        tabs_->deviceCheck()->setSquadFile(demo_.questionsFile());
    }
}

void MainWindow::runOnceReady(const std::function<void()>& run)
{
    // The session runs one job after another: the run may be asked for while the demo's
    // reference still loads.
    auto* once = new QObject(this);
    connect(this, &MainWindow::checkpointReady, once, [once, run] {
        once->deleteLater();
        run();
    });
}

// A sequence-task demo opens in its panel with an example input, run once the checkpoint is open;
// the panel is brought forward again then, since every open brings Triage to the front.
void MainWindow::openTaskDemo(const DemoCheckpoint& demo)
{
    const DemoTask task = demo.task;
    DemoTaskInputs inputs = demoTaskInputs();
    if (!demo.rerankQuery.isEmpty()) {
        inputs.query = demo.rerankQuery;
        inputs.passages = demo.rerankPassages;
    }
    if (task == DemoTask::Embed) {
        tabs_->embed()->setTexts(inputs.texts);
        tabs_->setCurrentWidget(tabs_->embed());
        runOnceReady([this, inputs] {
            tabs_->setCurrentWidget(tabs_->embed());
            session_->embed(inputs.texts, QString());
        });
    } else if (task == DemoTask::Rerank) {
        tabs_->rerank()->setInputs(inputs.query, inputs.passages);
        tabs_->setCurrentWidget(tabs_->rerank());
        runOnceReady([this, inputs] {
            tabs_->setCurrentWidget(tabs_->rerank());
            session_->rerank(inputs.query, inputs.passages);
        });
    } else {
        tabs_->classify()->setInputs(inputs.classifyText, QString());
        tabs_->setCurrentWidget(tabs_->classify());
        runOnceReady([this, inputs] {
            tabs_->setCurrentWidget(tabs_->classify());
            session_->classify(inputs.classifyText, QString());
        });
    }
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
    // Each checkpoint remembers its reference; a fix is measured against the reference its
    // provenance records (while it is there); without either, dequantized weights stand in.
    QString reference = Settings().referenceFor(info_->directory);
    if (!QFileInfo(reference).isDir())
        reference = recordedReference(info_->directory);
    if (reference != session_->referenceDirectory() || referenceLabel_.isEmpty())
        session_->setReference(reference);
    const QString saveFolder = fixFolder(); // what the user writes from this checkpoint goes beside their files
    tabs_->sensitivity()->setSaveFolder(saveFolder);
    tabs_->calibration()->setSaveFolder(saveFolder);
    selection_->clear();
    compareWith_.reset(); // B belonged to the previous checkpoint (the session dropped it)
    showCompareWithInPanels(nullptr);
    tabs_->showCheckpoint(info_);
    setWindowTitle(tr("ScaleScope - %1").arg(QDir::toNativeSeparators(info_->directory)));
    recent_->add(info_->directory);
    if (!demo_.isEmpty())
        tabs_->calibration()->setDefaultFiles(demo_.folder + QStringLiteral("/corpus/calibration.txt"),
                                              demo_.folder + QStringLiteral("/corpus/evaluation.txt"));
    // A checkpoint the engine refuses is still worth inspecting: say so (each run button says why it is off).
    if (!info_->runnable) {
        showError(tr("Open checkpoint"), tr("Opened for inspection only: %1").arg(info_->loadError));
        statusBar()->showMessage(tr("Opened %1 for inspection only (it cannot run).").arg(info_->directory));
    } else {
        statusBar()->showMessage(tr("Opened %1").arg(info_->directory), 5000);
    }
    // Triage is where a checkpoint is judged: it comes to the front on every open.
    tabs_->setCurrentWidget(tabs_->triage());
    emit checkpointReady(info_->directory);
    if (fixPending_) {
        fixPending_ = false;
        runFixedInput();
    }
}

void MainWindow::openFixed(const QString& folder, const QString& original)
{
    pendingOriginal_ = original;
    if (folder.isEmpty()) {
        runFixedInput();
        return;
    }
    fixPending_ = true;
    openCheckpoint(folder);
}

// The input the open fix was verified on (its provenance), run again on its reference (a question
// on Ask, a task input in its panel); then the original beside it. The session runs the jobs in
// this order, so the original runs on the input the fix's run compared.
void MainWindow::runFixedInput()
{
    const QString original = std::exchange(pendingOriginal_, QString());
    std::optional<nlohmann::json> provenance;
    try {
        provenance = readFixProvenance(session_->checkpointDirectory().toStdString());
    } catch (const Error&) {
        // Triage shows the sentence; the input on the Ask tab is used instead.
    }
    QWidget* taskPanel = provenance && info_ && info_->runnable ? rerunRecordedTask(*provenance) : nullptr;
    if (!taskPanel && info_ && info_->runnable && info_->checkpoint->layout().isQuestionAnswering()) {
        const nlohmann::json measurement = provenance ? provenance->value("measurement", nlohmann::json()) : nlohmann::json();
        const nlohmann::json inputs = measurement.is_object() ? measurement.value("inputs", nlohmann::json()) : nlohmann::json();
        if (inputs.is_object() && inputs.value("question", nlohmann::json()).is_string() &&
            inputs.value("context", nlohmann::json()).is_string())
            tabs_->ask()->setInputs(QString::fromStdString(inputs["question"].get<std::string>()),
                                    QString::fromStdString(inputs["context"].get<std::string>()));
        if (!tabs_->ask()->question().isEmpty())
            tabs_->ask()->askAbout(tabs_->ask()->question(), tabs_->ask()->context());
    }
    // Beside the original, Triage holds the before/after; alone, a task's rerun shows in its panel.
    tabs_->setCurrentWidget(original.isEmpty() && taskPanel ? taskPanel : tabs_->triage());
    if (!original.isEmpty())
        compareWith(original);
}

namespace {

QStringList qStrings(const std::vector<std::string>& texts)
{
    QStringList out;
    for (const std::string& text : texts)
        out << QString::fromStdString(text);
    return out;
}

// Which task panel runs a text the CLI recorded for this head: an embedder embeds it, a
// cross-encoder (one score) ranks its pair, another classifier classifies it.
FixTaskKind servedTask(const Checkpoint& checkpoint)
{
    switch (checkpoint.layout().head()) {
    case HeadKind::Embedding: return FixTaskKind::Embed;
    case HeadKind::SequenceClassification:
        return checkpoint.config().problem == ClassificationProblem::Score ? FixTaskKind::Rerank : FixTaskKind::Classify;
    default: return FixTaskKind::None;
    }
}

} // namespace

QWidget* MainWindow::rerunRecordedTask(const nlohmann::json& provenance)
{
    const FixTaskInput task = provenanceTaskInput(provenance, servedTask(*info_->checkpoint));
    if (task.kind == FixTaskKind::None)
        return nullptr;
    if (!task.problem.empty()) {
        statusBar()->showMessage(QString::fromStdString(task.problem), 15000);
        return nullptr;
    }
    switch (task.kind) {
    case FixTaskKind::Embed:
        tabs_->embed()->setTexts(qStrings(task.texts));
        tabs_->embed()->setPrompt(QString::fromStdString(task.prompt));
        session_->embed(qStrings(task.texts), QString::fromStdString(task.prompt));
        return tabs_->embed();
    case FixTaskKind::Rerank:
        tabs_->rerank()->setInputs(QString::fromStdString(task.query), qStrings(task.passages));
        session_->rerank(QString::fromStdString(task.query), qStrings(task.passages), task.comparedPassage);
        return tabs_->rerank();
    case FixTaskKind::Classify:
        tabs_->classify()->setInputs(QString::fromStdString(task.text), QString::fromStdString(task.pair));
        session_->classify(QString::fromStdString(task.text), QString::fromStdString(task.pair));
        return tabs_->classify();
    case FixTaskKind::None: break;
    }
    return nullptr;
}

bool MainWindow::insideDemoFolder(const QString& dir) const
{
    const QString demo = QFileInfo(demo_.folder).canonicalFilePath();
    const QString path = QFileInfo(dir).canonicalFilePath();
    return !demo.isEmpty() && !path.isEmpty() && (path == demo || path.startsWith(demo + QLatin1Char('/')));
}

QString MainWindow::fixFolder() const
{
    for (const QString& dir : Settings().recentCheckpoints()) {
        const QString parent = QFileInfo(dir).absolutePath();
        if (!insideDemoFolder(dir) && !demo_.holdsCheckpoint(dir) && QFileInfo(parent).isDir() && QFileInfo(parent).isWritable())
            return parent;
    }
    const QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    return QFileInfo(documents).isDir() ? documents : QDir::homePath();
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
    tabs_->setCompareWith(b);
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

QStringList MainWindow::exportReport(const QString& folder)
{
    const ReportContents contents = assembleReport(tabs_->panels(), session_->currentStamp());
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
