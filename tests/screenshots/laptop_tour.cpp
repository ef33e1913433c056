#include "laptop_tour.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>

#include <qcustomplot.h>

#include <cstdio>

#include "linear_selection.h"
#include "main_window.h"
#include "panels/calibration_panel.h"
#include "panels/device_check_panel.h"
#include "panels/errors_panel.h"
#include "panels/fill_mask_panel.h"
#include "panels/rerank_panel.h"
#include "panels/sensitivity_panel.h"
#include "panels/triage_panel.h"
#include "result_tabs.h"
#include "support/text_lines.h"
#include "workbench_session.h"

using namespace scalescope;
using namespace scalescope::ui;
using scalescope::testing::copyFirstLines;

namespace {

void settle(int ms = 400)
{
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

void waitIdle(WorkbenchSession* session)
{
    for (int i = 0; i < 1200 && session->busy(); ++i)
        settle(100);
    settle(300);
}

void shoot(QWidget& window, const QString& path)
{
    settle();
    if (QStandardPaths::findExecutable(QStringLiteral("import")).isEmpty() ||
        QProcess::execute(QStringLiteral("import"), {QStringLiteral("-window"), QStringLiteral("root"), path}) != 0)
        window.grab().save(path);
    std::printf("%s\n", qPrintable(path));
}

// Every plot of the page on show, as drawn: the widget's height and its data area's.
void printPlotHeights(MainWindow& window, const QString& page)
{
    for (QCustomPlot* plot : window.tabs()->currentWidget()->findChildren<QCustomPlot*>())
        if (plot->isVisible())
            std::printf("  %s plot %s: widget %d px, data area %d px\n", qPrintable(page),
                        qPrintable(plot->objectName()), plot->height(), plot->axisRect() ? plot->axisRect()->height() : -1);
}

// Each page of the window, shot and measured: out/<step>-<page>.png.
void shootPages(MainWindow& window, const QString& out, const QString& step, const QStringList& pages)
{
    for (int i = 0; i < window.tabs()->count(); ++i) {
        const QString page = window.tabs()->tabText(i).remove(QLatin1Char('&'));
        if (!pages.contains(page))
            continue;
        window.tabs()->setCurrentIndex(i);
        settle(200);
        printPlotHeights(window, page);
        const QString name = page.toLower().replace(QLatin1Char(' '), QLatin1Char('-'));
        shoot(window, QStringLiteral("%1/%2-%3.png").arg(out, step, name));
        // A page taller than the window once more, scrolled to its end.
        auto* scroll = window.tabs()->currentWidget()->findChild<QScrollArea*>(QStringLiteral("pageScrollArea"));
        if (scroll && scroll->verticalScrollBar()->maximum() > 0) {
            scroll->verticalScrollBar()->setValue(scroll->verticalScrollBar()->maximum());
            shoot(window, QStringLiteral("%1/%2-%3-end.png").arg(out, step, name));
            scroll->verticalScrollBar()->setValue(0);
        }
    }
}

bool openAndWait(MainWindow& window, int demo)
{
    QSignalSpy opened(&window, &MainWindow::checkpointReady);
    window.openDemo(demo);
    const bool ok = opened.count() > 0 || opened.wait(120000);
    waitIdle(window.session());
    return ok;
}

int demoIndex(const DemoCatalog& demo, const QString& folderName)
{
    for (int i = 0; i < demo.checkpoints.size(); ++i)
        if (QFileInfo(demo.checkpoints[i].directory).fileName() == folderName)
            return i;
    return -1;
}

void printToolbar(MainWindow& window)
{
    for (QToolBar* bar : window.findChildren<QToolBar*>())
        for (QAction* action : bar->actions())
            if (QWidget* button = bar->widgetForAction(action); button && !action->text().isEmpty())
                std::printf("  toolbar %s: %s\n", qPrintable(action->text().remove(QLatin1Char('&'))),
                            button->isVisible() ? "visible" : "hidden");
}


// Clicks `button` and waits for `signal` of the session, then for the session to go idle.
template <typename Signal>
bool clickAndWait(MainWindow& window, QPushButton* button, Signal signal)
{
    if (!button)
        return false;
    QSignalSpy spy(window.session(), signal);
    button->click();
    const bool done = spy.count() > 0 || spy.wait(600000);
    waitIdle(window.session());
    return done;
}

// Saves the sweep's suggestion with Save Fixed Checkpoint, its dialog answered with `folder`.
bool saveFixTo(MainWindow& window, const QString& folder)
{
    QTimer answer;
    QObject::connect(&answer, &QTimer::timeout, [&] {
        auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
        auto* name = dialog ? dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit")) : nullptr;
        if (!name)
            return;
        answer.stop();
        name->setText(folder);
        static_cast<QDialog*>(dialog)->accept();
    });
    answer.start(20);
    return clickAndWait(window, window.sensitivityPanel()->saveButton(), &WorkbenchSession::keptFloat);
}

} // namespace

bool playRerankFixTour(MainWindow& window, const DemoCatalog& demo, const QString& out)
{
    const int defect = demoIndex(demo, QStringLiteral("rerank-fp8-defect"));
    if (defect < 0)
        return false;
    QSignalSpy reranked(window.session(), &WorkbenchSession::passagesReranked);
    window.openDemo(defect);
    if (!(reranked.count() > 0 || reranked.wait(120000)))
        return false;
    waitIdle(window.session());
    const QStringList pages = {QStringLiteral("Triage"), QStringLiteral("Rerank"), QStringLiteral("Sensitivity")};
    shootPages(window, out, QStringLiteral("08-rerank-defect"), {QStringLiteral("Rerank")});
    window.tabs()->setCurrentWidget(window.sensitivityPanel());
    if (!clickAndWait(window, window.sensitivityPanel()->runButton(), &WorkbenchSession::sensitivityFinished))
        return false;
    // The sweep's first Linear in the inspector: its measures in dB.
    const SensitivityResult& sweep = window.sensitivityPanel()->result();
    if (!sweep.entries.empty())
        window.selection()->select(QString::fromStdString(sweep.entries.front().module));
    shootPages(window, out, QStringLiteral("09-rerank-swept"), pages);
    const QString folder = out + "/rerank-fixed";
    QDir(folder).removeRecursively();
    if (!saveFixTo(window, folder))
        return false;
    shootPages(window, out, QStringLiteral("10-rerank-saved"), {QStringLiteral("Sensitivity"), QStringLiteral("Triage")});
    if (!clickAndWait(window, window.sensitivityPanel()->findChild<QPushButton*>(QStringLiteral("sensitivityOpenFixed")),
                      &WorkbenchSession::passagesReranked))
        return false;
    shootPages(window, out, QStringLiteral("11-rerank-fix-opened"), pages);
    window.tabs()->setCurrentWidget(window.triagePanel());
    settle(200);
    if (!clickAndWait(window, window.triagePanel()->findChild<QPushButton*>(QStringLiteral("triageProvenanceCompare")),
                      &WorkbenchSession::compareWithReady))
        return false;
    shootPages(window, out, QStringLiteral("12-rerank-compared"), pages);
    return true;
}

bool playCalibrationTour(MainWindow& window, const DemoCatalog& demo, const QString& out)
{
    const int floatDemo = demoIndex(demo, QStringLiteral("qa-float"));
    if (floatDemo < 0 || !openAndWait(window, floatDemo))
        return false;
    const QString texts = out + "/calibration-texts";
    QDir().mkpath(texts);
    if (!copyFirstLines(window.demoFolder() + "/corpus/calibration.txt", texts + "/calibration.txt", 24) ||
        !copyFirstLines(window.demoFolder() + "/corpus/evaluation.txt", texts + "/evaluation.txt", 12))
        return false;
    CalibrationPanel* panel = window.calibrationPanel();
    window.tabs()->setCurrentWidget(panel);
    panel->setFiles(texts + "/calibration.txt", texts + "/evaluation.txt");
    QSignalSpy finished(window.session(), &WorkbenchSession::calibrationLabFinished);
    panel->runButton()->click();
    if (!(finished.count() > 0 || finished.wait(600000)))
        return false;
    waitIdle(window.session());
    shootPages(window, out, QStringLiteral("03-calibration"), {QStringLiteral("Calibration")});
    return true;
}

bool playLaptopTour(MainWindow& window, const DemoCatalog& demo, const QString& out)
{
    WorkbenchSession* session = window.session();
    const QStringList all = {QStringLiteral("Triage"), QStringLiteral("Model"), QStringLiteral("Ask"),
                             QStringLiteral("Scales"), QStringLiteral("Errors"), QStringLiteral("Sensitivity"),
                             QStringLiteral("Calibration")};
    printToolbar(window);
    const int defect = demoIndex(demo, QStringLiteral("qa-fp8-defect"));
    if (defect < 0 || !openAndWait(window, defect))
        return false;
    // The drill-down as a click on a layer fills it: histogram and scatter of one capture point.
    QSignalSpy captured(session, &WorkbenchSession::capturePointReady);
    emit window.errorsPanel()->capturePointRequested(QStringLiteral("roberta.encoder.layer.1.output"));
    captured.count() > 0 || captured.wait(60000);
    waitIdle(session);
    shootPages(window, out, QStringLiteral("01-defect"), all);

    window.tabs()->setCurrentWidget(window.sensitivityPanel());
    QSignalSpy swept(session, &WorkbenchSession::sensitivityFinished);
    window.sensitivityPanel()->runButton()->click();
    settle(1500);
    shoot(window, out + "/02-sweep-running.png");
    if (!(swept.count() > 0 || swept.wait(900000)))
        return false;
    waitIdle(session);
    shootPages(window, out, QStringLiteral("02-swept"), {QStringLiteral("Sensitivity"), QStringLiteral("Triage")});
    // The report of the swept defect demo: its verdict box and the sweep's table (tie column) as CSV.
    QDir(out + "/report-sweep").removeRecursively();
    std::printf("report-sweep: %lld files\n", static_cast<long long>(window.exportReport(out + "/report-sweep").size()));

    const int floatDemo = demoIndex(demo, QStringLiteral("qa-float"));
    if (floatDemo < 0 || !openAndWait(window, floatDemo))
        return false;
    shootPages(window, out, QStringLiteral("03-float"), {QStringLiteral("Triage"), QStringLiteral("Ask")});
    if (!playCalibrationTour(window, demo, out))
        return false;
    DeviceCheckPanel* check = window.deviceCheckPanel();
    window.tabs()->setCurrentWidget(check);
    check->setSquadFile(window.demoFolder() + "/corpus/questions.json");
    check->questionsBox()->setValue(10);
    QSignalSpy checked(session, &WorkbenchSession::deviceChecked);
    check->runButton()->click();
    checked.wait(600000);
    waitIdle(session);
    shootPages(window, out, QStringLiteral("04-check"), {QStringLiteral("Device Check")});

    const int bert = demoIndex(demo, QStringLiteral("bert-qa-fp8"));
    if (bert < 0 || !openAndWait(window, bert))
        return false;
    shootPages(window, out, QStringLiteral("05-bert"), {QStringLiteral("Ask"), QStringLiteral("Errors")});

    const int mlm = demoIndex(demo, QStringLiteral("mlm-fp8"));
    if (mlm < 0 || !openAndWait(window, mlm))
        return false;
    window.tabs()->setCurrentWidget(window.fillMaskPanel());
    QSignalSpy filled(session, &WorkbenchSession::masksFilled);
    emit window.fillMaskPanel()->fillRequested(window.fillMaskPanel()->text(), 5);
    filled.count() > 0 || filled.wait(120000);
    waitIdle(session);
    shootPages(window, out, QStringLiteral("06-fill-mask"), {QStringLiteral("Fill Mask"), QStringLiteral("Errors")});

    const QString report = out + "/report";
    QDir(report).removeRecursively();
    const QStringList files = window.exportReport(report);
    std::printf("report: %lld files, status bar: %s\n", static_cast<long long>(files.size()),
                qPrintable(window.statusBar()->currentMessage()));
    shoot(window, out + "/07-exported.png");
    printToolbar(window);
    return playRerankFixTour(window, demo, out);
}
