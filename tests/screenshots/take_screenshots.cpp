// scalescope-screenshots: drives the workbench through each panel and saves a screenshot of every
// one, for looking at what users see. Run it under Xvfb through scripts/screenshots.sh.
// Uses the bundled demo checkpoints when they are there, generated tiny ones otherwise.
//
// The tour also plays the checkpoint-switch sequence (open A, answer, open B, change mode,
// reference and device, export a report) and prints, for every step, what each panel's results
// are stamped with, so a reader can check that nothing of an earlier state is left on screen.
//
// Usage: scalescope-screenshots [OUTDIR] [WIDTHxHEIGHT] [bert|tasks|laptop|calibration|rerank-fix]
// With "bert" the tour runs on generated tiny BERT checkpoints (BertForQuestionAnswering,
// BertForMaskedLM) instead of the demo. With "tasks" it plays only the sequence-task tour
// (task_tour.cpp), which the full tour plays at its end too. With "laptop" it plays only the laptop
// tour (laptop_tour.cpp: defect demo, sweep, float demo, calibration lab, device check, BERT, fill-mask,
// export, the reranker's fix); with "calibration" or "rerank-fix" only that step of it.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QProcess>
#include <QScreen>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QSpinBox>
#include <QTabWidget>
#include <QTimer>
#include <QTest>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTreeView>

#include <qcustomplot.h>

#include <cstdio>

#include "charts/chart_view.h"
#include "main_window.h"
#include "models/module_tree_model.h"
#include "panels/ask_panel.h"
#include "panels/attention_panel.h"
#include "panels/device_check_panel.h"
#include "panels/errors_panel.h"
#include "panels/evaluate_panel.h"
#include "panels/fill_mask_panel.h"
#include "panels/model_panel.h"
#include "panels/scales_panel.h"
#include "panels/sensitivity_panel.h"
#include "panels/triage_panel.h"
#include <QDockWidget>
#include <QTableWidget>
#include "stale_banner.h"
#include "support/fixtures.h"
#include "laptop_tour.h"
#include "task_tour.h"

using namespace scalescope;
using namespace scalescope::ui;

namespace {

bool waitFor(QSignalSpy& spy, int ms = 120000)
{
    return spy.count() > 0 || spy.wait(ms);
}

void settle(int ms = 400)
{
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

void waitIdle(WorkbenchSession* session)
{
    for (int i = 0; i < 600 && session->busy(); ++i)
        settle(100);
    settle(200);
}

// The whole screen through ImageMagick when it is there (what a person sees, window manager and
// all), else the window's own rendering.
void shoot(QWidget& window, const QString& path)
{
    settle();
    if (!QStandardPaths::findExecutable(QStringLiteral("import")).isEmpty() &&
        QProcess::execute(QStringLiteral("import"), {QStringLiteral("-window"), QStringLiteral("root"), path}) == 0) {
        std::printf("%s\n", qPrintable(path));
        return;
    }
    window.grab().save(path);
    std::printf("%s\n", qPrintable(path));
}

// One line per panel: the stamp of its result, or "-" when it shows none.
void printStamps(MainWindow& window, const char* step)
{
    auto line = [](const char* panel, const StaleBanner* banner) {
        std::printf("  %-10s %s%s\n", panel,
                    banner->hasResult() ? qPrintable(banner->resultStamp().describe()) : "-",
                    banner->isStale() ? "  [STALE]" : "");
    };
    std::printf("after %s (current: %s)\n", step, qPrintable(window.session()->currentStamp().describe()));
    line("Ask", window.askPanel()->banner());
    line("Fill Mask", window.fillMaskPanel()->banner());
    line("Errors", window.errorsPanel()->banner());
    line("Scales", window.scalesPanel()->banner());
    line("Evaluate", window.evaluatePanel()->banner());
}

// The what-if tour: the top sensitivity bar clicked (its Linear selected in Errors, Scales and
// Model), that Linear run in float from the Model tree (the question reruns, the status bar lists
// it), a report exported with it, then the overrides cleared again.
void whatIf(MainWindow& window, const QString& out)
{
    WorkbenchSession* session = window.session();
    SensitivityPanel* sensitivity = window.sensitivityPanel();
    const std::optional<QPoint> onBar = sensitivity->chart()->barPixel(0, 0);
    if (sensitivity->result().entries.empty() || !onBar)
        return;
    QTest::mouseClick(sensitivity->chart()->plot(), Qt::LeftButton, Qt::NoModifier, *onBar);
    const QString top = QString::fromStdString(sensitivity->result().entries.front().linears.front());
    std::printf("clicked the top bar: %s\n", qPrintable(top));
    shoot(window, out + "/05c-sensitivity-clicked.png");
    window.tabs()->setCurrentWidget(window.errorsPanel());
    shoot(window, out + "/05d-errors-selected.png");
    window.tabs()->setCurrentWidget(window.scalesPanel());
    shoot(window, out + "/05e-scales-selected.png");

    window.tabs()->setCurrentWidget(window.modelPanel());
    auto* proxy = qobject_cast<QSortFilterProxyModel*>(window.modelPanel()->treeView()->model());
    const QModelIndex cell = proxy->mapFromSource(
        window.modelPanel()->treeModel()->indexForName(top).siblingAtColumn(ModuleTreeModel::FloatColumn));
    // The tree's context menu on that Linear, shot and closed again.
    QTreeView* tree = window.modelPanel()->treeView();
    tree->scrollTo(cell);
    QTimer::singleShot(600, &window, [&window, out] {
        shoot(window, out + "/05f0-model-menu.png");
        if (QWidget* popup = QApplication::activePopupWidget())
            popup->close();
    });
    emit tree->customContextMenuRequested(tree->visualRect(cell.siblingAtColumn(0)).center());
    QSignalSpy answered(session, &WorkbenchSession::answered);
    proxy->setData(cell, Qt::Checked, Qt::CheckStateRole);
    waitFor(answered);
    waitIdle(session);
    std::printf("status bar: %s\n", qPrintable(window.floatStatus()->text()));
    printStamps(window, "run in float");
    shoot(window, out + "/05f-model-float.png");
    window.tabs()->setCurrentWidget(window.askPanel());
    shoot(window, out + "/05g-ask-float.png");
    window.tabs()->setCurrentWidget(window.errorsPanel());
    shoot(window, out + "/05h-errors-float.png");
    const QString report = out + "/report-float";
    QDir(report).removeRecursively();
    window.exportReport(report);
    QFile summary(report + "/summary.json");
    if (summary.open(QIODevice::ReadOnly))
        std::printf("report-float/summary.json:\n%s\n", summary.readAll().constData());

    answered.clear();
    window.clearFloatButton()->click();
    waitFor(answered);
    waitIdle(session);
    printStamps(window, "float cleared");
}

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("ScaleScope-screenshots"));
    QApplication::setApplicationName(QStringLiteral("ScaleScope"));
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear(); // every tour starts as a first run
    const QString out = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral("screenshots");
    QDir().mkpath(out);
    QSize size = QGuiApplication::primaryScreen()->availableGeometry().size();
    if (argc > 2) {
        const QStringList parts = QString::fromLocal8Bit(argv[2]).split(QLatin1Char('x'));
        if (parts.size() == 2)
            size = QSize(parts[0].toInt(), parts[1].toInt());
    }

    const bool bert = argc > 3 && QString::fromLocal8Bit(argv[3]) == QLatin1String("bert");
    const bool tasksOnly = argc > 3 && QString::fromLocal8Bit(argv[3]) == QLatin1String("tasks");
    const DemoCatalog demo =
        bert ? DemoCatalog() : loadDemoCatalog(findDemoFolder(QStringLiteral(SCALESCOPE_DEMO_DIR)));
    MainWindow window;
    window.setDemoCatalog(demo);
    // First start: the window at the size it picks for this screen.
    window.show();
    if (!QTest::qWaitForWindowExposed(&window))
        std::printf("the window was not exposed within the wait; screenshots may show it half drawn\n");
    QTest::qWait(200);
    std::printf("first start: %dx%d at %d,%d on a %dx%d screen\n", window.frameGeometry().width(),
                window.frameGeometry().height(), window.frameGeometry().x(), window.frameGeometry().y(),
                window.screen()->availableGeometry().width(), window.screen()->availableGeometry().height());
    shoot(window, out + "/00-first-start.png");
    window.move(0, 0);
    window.resize(size);
    std::printf("window %dx%d (minimum size hint %dx%d)\n", window.width(), window.height(),
                window.minimumSizeHint().width(), window.minimumSizeHint().height());
    if (tasksOnly)
        return playTaskTour(window, out) ? 0 : 1;
    if (argc > 3 && QString::fromLocal8Bit(argv[3]) == QLatin1String("laptop"))
        return playLaptopTour(window, demo, out) ? 0 : 1;
    if (argc > 3 && QString::fromLocal8Bit(argv[3]) == QLatin1String("calibration"))
        return playCalibrationTour(window, demo, out) ? 0 : 1;
    if (argc > 3 && QString::fromLocal8Bit(argv[3]) == QLatin1String("rerank-fix"))
        return playRerankFixTour(window, demo, out) ? 0 : 1;
    WorkbenchSession* session = window.session();
    QSignalSpy opened(&window, &MainWindow::checkpointReady);
    QSignalSpy reference(session, &WorkbenchSession::referenceChanged);

    // The bundled demo when it is there (what a first run shows), generated tiny models otherwise.
    int maskedLmDemo = -1, otherQaDemo = -1;
    for (int i = 0; i < demo.checkpoints.size(); ++i) {
        if (demo.checkpoints[i].task == DemoTask::FillMask && maskedLmDemo < 0)
            maskedLmDemo = i;
        if (demo.checkpoints[i].task == DemoTask::QuestionAnswering && i > 0 && otherQaDemo < 0)
            otherQaDemo = i;
    }
    QString mlm, mlmReference, otherQa;
    if (!demo.isEmpty()) {
        window.openDemo(0);
        if (otherQaDemo >= 0)
            otherQa = demo.checkpoints[otherQaDemo].directory;
    } else {
        const std::string base = testing::makeTempDir("screens");
        testing::TinyModelSpec spec;
        spec.architecture = bert ? "BertForQuestionAnswering" : "RobertaForQuestionAnswering";
        spec.outlierChannels = {3, 17};
        spec.outlierFactor = 6.0f;
        testing::writeTinyFloatCheckpoint(base + "/qa-float", spec);
        testing::writeTinyFp8Checkpoint(base + "/qa-float", base + "/qa-fp8", {"channel", "token", "F32"});
        testing::writeTinyFp8Checkpoint(base + "/qa-float", base + "/qa-fp8-static", {"tensor", "tensor", "F32"});
        spec.architecture = bert ? "BertForMaskedLM" : "RobertaForMaskedLM";
        testing::writeTinyFloatCheckpoint(base + "/mlm-float", spec);
        testing::writeTinyFp8Checkpoint(base + "/mlm-float", base + "/mlm-fp8", {"channel", "token", "F32"});
        mlm = QString::fromStdString(base + "/mlm-fp8");
        mlmReference = QString::fromStdString(base + "/mlm-float");
        otherQa = QString::fromStdString(base + "/qa-fp8-static");
        window.openCheckpoint(QString::fromStdString(base + "/qa-fp8"));
        window.setReference(QString::fromStdString(base + "/qa-float"));
        window.askPanel()->setInputs("what is the capital of France ?",
                                     "the cat sat on the mat . the dog sat on the mat . Paris is the capital of France .");
        window.fillMaskPanel()->setText("the cat <mask> on the mat"); // shown with the model's mask token
    }
    if (!waitFor(opened) || !waitFor(reference))
        return 1;

    window.tabs()->setCurrentWidget(window.modelPanel());
    shoot(window, out + "/01-model.png");

    window.tabs()->setCurrentWidget(window.askPanel());
    QSignalSpy answered(session, &WorkbenchSession::answered);
    emit window.askPanel()->askRequested(window.askPanel()->question(), window.askPanel()->context(),
                                         window.askPanel()->options());
    if (!waitFor(answered))
        return 1;
    waitIdle(session);
    shoot(window, out + "/02-ask.png");
    window.tabs()->setCurrentWidget(window.triagePanel());
    shoot(window, out + "/02b-triage.png");

    window.tabs()->setCurrentWidget(window.scalesPanel());
    shoot(window, out + "/04-scales.png");

    window.tabs()->setCurrentWidget(window.errorsPanel());
    QSignalSpy captured(session, &WorkbenchSession::capturePointReady);
    emit window.errorsPanel()->capturePointRequested(bert ? QStringLiteral("bert.encoder.layer.1.output")
                                                          : QStringLiteral("roberta.encoder.layer.1.output"));
    waitFor(captured);
    shoot(window, out + "/05-errors.png");

    window.tabs()->setCurrentWidget(window.sensitivityPanel());
    QSignalSpy swept(session, &WorkbenchSession::sensitivityFinished);
    // As a user runs it: the granularity box as the window opens it (per unit).
    window.sensitivityPanel()->runButton()->click();
    waitFor(swept, 600000);
    waitIdle(session);
    shoot(window, out + "/05b-sensitivity.png");
    window.tabs()->setCurrentWidget(window.triagePanel());
    shoot(window, out + "/05c-triage-after-sweep.png");
    // The first suspect, as a click on its row selects it: the inspector shows it (brought up as
    // View > Linear Inspector does where a narrow first window started without it).
    window.inspectorDock()->show();
    if (window.triagePanel()->suspectsTable()->rowCount() > 0)
        window.triagePanel()->suspectsTable()->setCurrentCell(0, 1);
    QTest::qWait(100);
    shoot(window, out + "/05d-inspector.png");
    whatIf(window, out);

    const QString squad = QStringLiteral(SCALESCOPE_SHARED_DATA) + "/squad/squad2-dev-sample.json";
    const QString demoQuestions = demo.folder + "/corpus/questions.json";
    const QString squadFile = QFileInfo(demoQuestions).exists() ? demoQuestions : squad;
    if (QFileInfo(squadFile).exists()) {
        window.tabs()->setCurrentWidget(window.evaluatePanel());
        window.evaluatePanel()->setSquadFile(squadFile);
        QSignalSpy evaluated(session, &WorkbenchSession::evaluated);
        session->evaluate(squadFile, 60);
        waitFor(evaluated, 600000);
        shoot(window, out + "/06-evaluate.png");
        // The device check of the CPU's FP8 run against the float reference (thresholds from the
        // noise floor on the same questions): where it departs, and the F1 interval.
        DeviceCheckPanel* check = window.deviceCheckPanel();
        window.tabs()->setCurrentWidget(check);
        check->setSquadFile(squadFile);
        check->questionsBox()->setValue(40);
        for (const std::string& name : checkRunNames())
            if (QCheckBox* box = check->twinBox(QString::fromStdString(name)))
                box->setChecked(name == "reference");
        QSignalSpy checked(session, &WorkbenchSession::deviceChecked);
        check->runButton()->click();
        waitFor(checked, 600000);
        waitIdle(session);
        shoot(window, out + "/06b-device-check.png");
        window.tabs()->setCurrentWidget(window.errorsPanel());
        shoot(window, out + "/06c-errors-departure-selected.png");
    }
    // AIU FP8 attention: Run > FP8 Attention, the same question again, the Attention view, and the
    // sweep with its per-layer attention entries; then off again for the rest of the tour.
    window.fp8AttentionAction()->trigger();
    window.tabs()->setCurrentWidget(window.askPanel());
    QSignalSpy answeredFp8Attention(session, &WorkbenchSession::answered);
    emit window.askPanel()->askRequested(window.askPanel()->question(), window.askPanel()->context(),
                                         window.askPanel()->options());
    waitFor(answeredFp8Attention);
    waitIdle(session);
    window.tabs()->setCurrentWidget(window.attentionPanel());
    shoot(window, out + "/06d-attention.png");
    window.tabs()->setCurrentWidget(window.sensitivityPanel());
    QSignalSpy sweptFp8Attention(session, &WorkbenchSession::sensitivityFinished);
    window.sensitivityPanel()->runButton()->click();
    waitFor(sweptFp8Attention, 600000);
    waitIdle(session);
    shoot(window, out + "/06e-sensitivity-fp8-attention.png");
    window.fp8AttentionAction()->trigger();
    printStamps(window, "open A, answer, evaluate");

    // The checkpoint-switch sequence: open B; nothing of A may stay.
    if (!otherQa.isEmpty()) {
        opened.clear();
        window.openCheckpoint(otherQa);
        waitFor(opened);
        waitIdle(session);
        printStamps(window, "open B");
        window.tabs()->setCurrentWidget(window.askPanel());
        shoot(window, out + "/07-switch-ask-after-open-b.png");
        window.tabs()->setCurrentWidget(window.errorsPanel());
        shoot(window, out + "/08-switch-errors-after-open-b.png");
        window.tabs()->setCurrentWidget(window.evaluatePanel());
        shoot(window, out + "/09-switch-evaluate-after-open-b.png");
        window.tabs()->setCurrentWidget(window.deviceCheckPanel());
        shoot(window, out + "/09a-switch-device-check-after-open-b.png");
        window.tabs()->setCurrentWidget(window.attentionPanel());
        shoot(window, out + "/09c-switch-attention-after-open-b.png");
        // What each runtime will do with B (the per-tensor demo: the AIU's fused q/k/v cannot load it).
        window.tabs()->setCurrentWidget(window.modelPanel());
        if (auto* findings = window.modelPanel()->findChild<QTabWidget*>(QStringLiteral("modelFindingsTabs")))
            findings->setCurrentIndex(1);
        shoot(window, out + "/09b-model-consumers-after-open-b.png");
        if (auto* findings = window.modelPanel()->findChild<QTabWidget*>(QStringLiteral("modelFindingsTabs")))
            findings->setCurrentIndex(0);

        window.tabs()->setCurrentWidget(window.askPanel());
        answered.clear();
        emit window.askPanel()->askRequested(window.askPanel()->question(), window.askPanel()->context(),
                                             window.askPanel()->options());
        waitFor(answered);
        waitIdle(session);
        printStamps(window, "answer on B");

        window.modeBox()->setCurrentIndex(2); // the FP16 twin: the last question reruns as the AIU stores it
        waitIdle(session);
        printStamps(window, "mode FP16 twin");
        window.tabs()->setCurrentWidget(window.errorsPanel());
        for (QTabWidget* charts : window.errorsPanel()->findChildren<QTabWidget*>())
            for (int i = 0; i < charts->count(); ++i)
                if (charts->tabText(i) == QLatin1String("FP16 headroom"))
                    charts->setCurrentIndex(i);
        shoot(window, out + "/10-switch-errors-fp16-headroom.png");
        window.tabs()->setCurrentWidget(window.askPanel());

        window.modeBox()->setCurrentIndex(1); // Dequant: the last question reruns
        waitIdle(session);
        printStamps(window, "mode Dequant");
        shoot(window, out + "/10-switch-ask-dequant.png");

        window.setReference(QString()); // the dequantized stand-in
        waitIdle(session);
        printStamps(window, "reference: dequantized weights");
        window.tabs()->setCurrentWidget(window.errorsPanel());
        shoot(window, out + "/11-switch-errors-reference.png");

        const int runner = window.deviceBox()->findText(QStringLiteral("CPU runner process"));
        if (runner >= 0 && QFileInfo::exists(QCoreApplication::applicationDirPath() + "/../app/scalescope-cli")) {
            // The build tree keeps the CLI in app/, not next to this program: name it directly.
            session->setDevice(QStringLiteral("runner:'%1' runner")
                                   .arg(QFileInfo(QCoreApplication::applicationDirPath() + "/../app/scalescope-cli")
                                            .canonicalFilePath()));
            waitIdle(session);
            printStamps(window, "device: CPU runner");
            window.tabs()->setCurrentWidget(window.askPanel());
            shoot(window, out + "/12-switch-ask-runner.png");
            session->setDevice(QStringLiteral("cpu"));
            waitIdle(session);
        }
        window.tabs()->setCurrentWidget(window.evaluatePanel());
        shoot(window, out + "/13-switch-evaluate-stale.png");
        const QString report = out + "/report";
        QDir(report).removeRecursively();
        const QStringList files = window.exportReport(report);
        std::printf("report: %lld files in %s\n", static_cast<long long>(files.size()), qPrintable(report));
        window.modeBox()->setCurrentIndex(0);
        waitIdle(session);
    }

    opened.clear();
    reference.clear();
    if (maskedLmDemo >= 0) {
        window.openDemo(maskedLmDemo);
    } else {
        window.openCheckpoint(mlm);
        window.setReference(mlmReference);
    }
    waitFor(opened);
    waitFor(reference);
    window.tabs()->setCurrentWidget(window.fillMaskPanel());
    QSignalSpy filled(session, &WorkbenchSession::masksFilled);
    emit window.fillMaskPanel()->fillRequested(window.fillMaskPanel()->text(), 5);
    waitFor(filled);
    shoot(window, out + "/03-fill-mask.png");

    // Last, the demo with a planted defect, as a new user meets it after the fill-mask model: it
    // opens on Triage and answers by itself; one sweep names the Linear and the inspector shows it.
    int defectDemo = -1;
    for (int i = 0; i < demo.checkpoints.size(); ++i)
        if (demo.checkpoints[i].directory.endsWith(QStringLiteral("/qa-fp8-defect")))
            defectDemo = i;
    if (defectDemo >= 0) {
        opened.clear();
        reference.clear();
        window.openDemo(defectDemo);
        waitFor(opened);
        waitFor(reference);
        waitIdle(session);
        shoot(window, out + "/14-defect-triage.png");
        QSignalSpy defectSwept(session, &WorkbenchSession::sensitivityFinished);
        window.tabs()->setCurrentWidget(window.sensitivityPanel());
        window.sensitivityPanel()->runButton()->click();
        waitFor(defectSwept, 600000);
        waitIdle(session);
        shoot(window, out + "/14b-defect-sensitivity.png");
        window.tabs()->setCurrentWidget(window.triagePanel());
        window.inspectorDock()->show();
        if (window.triagePanel()->suspectsTable()->rowCount() > 0)
            window.triagePanel()->suspectsTable()->setCurrentCell(0, 1);
        QTest::qWait(100);
        shoot(window, out + "/14c-defect-triage-inspector.png");
        printStamps(window, "open the defect demo and sweep");
    }
    return playTaskTour(window, out) ? 0 : 1;
}
