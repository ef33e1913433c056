// Issue 51, items 3-5, on the bundled demo as a new user meets it on a laptop: at 1366x768 every
// chart on every page keeps a data area of at least 160 px (the page scrolls instead), the tensor
// table shows its scale columns without scrolling sideways, a checkpoint switch clears the
// previous forward's times; at 1024x700 Cancel and Export stay on screen; the report's verdict box
// reads dB to 0.1 and the run's mode and float Linears in words, and its CSVs hold no
// spreadsheet-escaped numbers; an all-zero bar chart's axis starts at 0; the Calibration tab's
// charts show their titles and axis titles whole at 1366x768 and 1024x700.
#include <QtTest>

#include <QAction>
#include <QDir>
#include <QFile>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolBar>

#include <qcustomplot.h>

#include "charts/chart_renderer.h"
#include "charts/chart_view.h"
#include "demo_catalog.h"
#include "job_tracker.h"
#include "main_window.h"
#include "models/tensor_table_model.h"
#include "panels/calibration_panel.h"
#include "panels/errors_panel.h"
#include "panels/fill_mask_panel.h"
#include "panels/model_panel.h"
#include "panels/sensitivity_panel.h"
#include "result_tabs.h"
#include "support/text_lines.h"
#include "workbench_session.h"

using namespace scalescope;
using namespace scalescope::ui;
using scalescope::testing::copyFirstLines;

namespace {

bool idle(MainWindow& window)
{
    return QTest::qWaitFor([&] { return !window.session()->busy(); }, 240000);
}

int demoIndex(const DemoCatalog& demo, const QString& folderName)
{
    for (int i = 0; i < demo.checkpoints.size(); ++i)
        if (QFileInfo(demo.checkpoints[i].directory).fileName() == folderName)
            return i;
    return -1;
}

// The window at a laptop's size with the demo catalogue, opened on `folderName`; true once it
// answered its first question.
bool openDemo(MainWindow& window, const DemoCatalog& demo, const QString& folderName)
{
    const int index = demoIndex(demo, folderName);
    if (index < 0)
        return false;
    QSignalSpy answered(window.session(), &WorkbenchSession::answered);
    window.openDemo(index);
    return answered.wait(120000) && idle(window);
}

// The same, then Run Sweep on the Sensitivity page; true once the sweep finished.
bool openDemoAndSweep(MainWindow& window, const DemoCatalog& demo, const QString& folderName)
{
    if (!openDemo(window, demo, folderName))
        return false;
    QSignalSpy swept(window.session(), &WorkbenchSession::sensitivityFinished);
    window.sensitivityPanel()->runButton()->click();
    return swept.wait(240000) && idle(window);
}

void showAt(MainWindow& window, QSize size)
{
    window.move(0, 0);
    window.resize(size);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
}

QString readText(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
}

QLabel* statusLabelStartingWith(MainWindow& window, const QString& start)
{
    for (QLabel* label : window.statusBar()->findChildren<QLabel*>())
        if (label->text().startsWith(start))
            return label;
    return nullptr;
}


// What of a chart's title and axis titles does not show whole at the plot's size, "" when all
// does: the data area with its margins inside the plot; each title the chart's own text (wrapped
// lines, nothing elided); each line of the axis titles, centred on the data area as QCustomPlot
// draws it (the y title turned a quarter), and of the chart title, within the plot.
QString clippedChartText(const ChartView& view)
{
    const QCustomPlot* plot = view.plot();
    const ChartData& chart = view.chart();
    QStringList problems;
    const QRect outer = plot->axisRect()->outerRect();
    if (!plot->rect().contains(outer))
        problems << QStringLiteral("the data area and its margins (%1,%2 %3x%4) leave the %5x%6 plot")
                        .arg(outer.x()).arg(outer.y()).arg(outer.width()).arg(outer.height())
                        .arg(plot->width()).arg(plot->height());
    auto unwrapped = [](QString text) { return text.replace(QLatin1Char('\n'), QLatin1Char(' ')); };
    auto checkCentred = [&](const QString& what, const QString& shown, const std::string& full, const QFont& font,
                            int centre, int extent) {
        if (unwrapped(shown) != QString::fromStdString(full))
            problems << QStringLiteral("the %1 shows \"%2\", not \"%3\"").arg(what, shown, QString::fromStdString(full));
        for (const QString& line : shown.split(QLatin1Char('\n'))) {
            const int half = (QFontMetrics(font).horizontalAdvance(line) + 1) / 2;
            if (centre - half < 0 || centre + half > extent)
                problems << QStringLiteral("the %1's line \"%2\" spans %3..%4 px of %5").arg(what, line).arg(centre - half).arg(centre + half).arg(extent);
        }
    };
    checkCentred(QStringLiteral("x axis title"), plot->xAxis->label(), chart.xLabel, plot->xAxis->labelFont(),
                 plot->axisRect()->center().x(), plot->width());
    checkCentred(QStringLiteral("y axis title"), plot->yAxis->label(), chart.yLabel, plot->yAxis->labelFont(),
                 plot->axisRect()->center().y(), plot->height());
    auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0));
    if (!title)
        problems << QStringLiteral("no chart title");
    else
        checkCentred(QStringLiteral("chart title"), title->text(), chart.title, title->font(), plot->width() / 2, plot->width());
    return problems.join(QStringLiteral("; "));
}
} // namespace

class TestLaptopLayout : public QObject {
    Q_OBJECT

private:
    DemoCatalog demo_ = loadDemoCatalog(QStringLiteral(SCALESCOPE_DEMO_DIR));

private slots:
    // The planted-defect demo answered and swept, then every page in turn: each chart drawn on it
    // keeps 160 px of data area below its title and above its legend and tick labels.
    void everyChartKeepsItsDataAreaAt1366x768()
    {
        MainWindow window;
        window.setDemoCatalog(demo_);
        showAt(window, QSize(1366, 768));
        QVERIFY(openDemoAndSweep(window, demo_, QStringLiteral("qa-fp8-defect")));
        int measured = 0;
        for (int page = 0; page < window.tabs()->count(); ++page) {
            window.tabs()->setCurrentIndex(page);
            QTest::qWait(150);
            for (QCustomPlot* plot : window.tabs()->currentWidget()->findChildren<QCustomPlot*>()) {
                if (!plot->isVisible())
                    continue;
                ++measured;
                const QString where = QStringLiteral("%1: plot %2 px, data area %3 px")
                                          .arg(window.tabs()->tabText(page))
                                          .arg(plot->height())
                                          .arg(plot->axisRect()->height());
                QVERIFY2(plot->axisRect()->height() >= 160, qPrintable(where));
            }
        }
        QVERIFY2(measured >= 5, "fewer charts on show than the demo draws (Ask, Scales, Errors, Sensitivity)");
    }

    // At 1024x700 (the toolbar in two rows) the page grows to hold every chart whole: a chart's
    // bottom (its legend) lies inside every widget around it, not beyond one where nothing shows it.
    void chartsAreWholeOnTheirPageAt1024x700()
    {
        MainWindow window;
        window.setDemoCatalog(demo_);
        showAt(window, QSize(1024, 700));
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openDemo(demoIndex(demo_, QStringLiteral("mlm-fp8")));
        QVERIFY(ready.wait(120000));
        QVERIFY(idle(window));
        QSignalSpy filled(window.session(), &WorkbenchSession::masksFilled);
        emit window.fillMaskPanel()->fillRequested(window.fillMaskPanel()->text(), 5);
        QVERIFY(filled.wait(120000));
        QVERIFY(idle(window));
        int measured = 0;
        for (QWidget* panel : {static_cast<QWidget*>(window.fillMaskPanel()), static_cast<QWidget*>(window.errorsPanel())}) {
            window.tabs()->setCurrentWidget(panel);
            QTest::qWait(300);
            // Up to the page's scrolled content: the scroll area's viewport shows a part of it.
            auto* page = panel->findChild<QScrollArea*>(QStringLiteral("pageScrollArea"));
            QVERIFY(page && page->widget());
            for (QCustomPlot* plot : panel->findChildren<QCustomPlot*>()) {
                if (!plot->isVisible())
                    continue;
                ++measured;
                for (QWidget* around = plot->parentWidget(); around != page->viewport(); around = around->parentWidget()) {
                    const int bottom = plot->mapTo(around, QPoint(0, plot->height())).y();
                    QVERIFY2(bottom <= around->height(),
                             qPrintable(QStringLiteral("%1: the chart ends at %2 px of a %3 px %4")
                                            .arg(panel->objectName(), QString::number(bottom),
                                                 QString::number(around->height()),
                                                 QString::fromLatin1(around->metaObject()->className()))));
                }
            }
        }
        QVERIFY2(measured >= 2, "the fill-mask chart and the Errors charts are not on show");
    }

    void tensorTableShowsScalesWithoutScrollingAt1366()
    {
        MainWindow window;
        window.setDemoCatalog(demo_);
        showAt(window, QSize(1366, 768));
        QVERIFY(openDemo(window, demo_, QStringLiteral("qa-fp8-defect")));
        window.tabs()->setCurrentWidget(window.modelPanel());
        QTest::qWait(150);
        QTableView* table = window.modelPanel()->tensorView();
        for (int column : {TensorTableModel::ScaleMinColumn, TensorTableModel::ScaleMedianColumn,
                           TensorTableModel::ScaleMaxColumn, TensorTableModel::ScaleRatioColumn}) {
            const int right = table->horizontalHeader()->sectionViewportPosition(column) +
                              table->horizontalHeader()->sectionSize(column);
            QVERIFY2(right <= table->viewport()->width(),
                     qPrintable(QStringLiteral("column %1 ends at %2 px of a %3 px table")
                                    .arg(table->model()->headerData(column, Qt::Horizontal).toString())
                                    .arg(right)
                                    .arg(table->viewport()->width())));
        }
    }

    // Opening another checkpoint (one that runs nothing by itself) drops the last forward's
    // times from the status bar: they were the previous model's.
    void checkpointSwitchClearsForwardTimes()
    {
        MainWindow window;
        window.setDemoCatalog(demo_);
        showAt(window, QSize(1366, 768));
        QVERIFY(openDemo(window, demo_, QStringLiteral("qa-fp8-defect")));
        QLabel* device = statusLabelStartingWith(window, QStringLiteral("Device:"));
        QVERIFY(device);
        QVERIFY2(device->text().contains(QStringLiteral("last forward")), qPrintable(device->text()));
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(QStringLiteral(SCALESCOPE_DEMO_DIR) + "/qa-fp8-static");
        QVERIFY(ready.wait(120000));
        QVERIFY(idle(window));
        QVERIFY2(!device->text().contains(QStringLiteral("last forward")), qPrintable(device->text()));
    }

    // At 1024 px a message and the labels beside it do not both fit: the labels step aside while
    // the message shows, and come back when it goes. A long progress stage is elided to the bar.
    void statusTextStaysWholeAt1024x700()
    {
        MainWindow window;
        window.setDemoCatalog(demo_);
        showAt(window, QSize(1024, 700));
        QVERIFY(openDemo(window, demo_, QStringLiteral("qa-fp8-defect")));
        window.statusBar()->clearMessage();
        QLabel* device = statusLabelStartingWith(window, QStringLiteral("Device:"));
        QVERIFY(device);
        QVERIFY(device->isVisible());
        const QString message = QStringLiteral("Exported 44 files to /home/someone/reports/qa-fp8-defect-report-2026-12-07");
        window.statusBar()->showMessage(message);
        QVERIFY2(!device->isVisible(), "the device label covers the message");
        window.statusBar()->clearMessage();
        QVERIFY(device->isVisible());

        auto* progress = window.statusBar()->findChild<QProgressBar*>();
        QVERIFY(progress);
        progress->show(); // as while a job runs
        QTest::qWait(50);
        const QString stage = QStringLiteral("Evaluating: 3 of 626 questions answered, 62 without an answer so far, "
                                             "on the reference and the run under test");
        emit window.session()->jobs()->progress(0.25, stage);
        QVERIFY2(progress->fontMetrics().horizontalAdvance(progress->text()) <= progress->width(),
                 qPrintable(progress->text()));
        QVERIFY2(progress->toolTip().startsWith(stage), qPrintable(progress->toolTip()));
    }

    void cancelAndExportStayOnScreenAt1024x700()
    {
        MainWindow window;
        window.setDemoCatalog(demo_);
        showAt(window, QSize(1024, 700));
        QTest::qWait(200);
        for (const QString& text : {QStringLiteral("Cancel"), QStringLiteral("Export Report")}) {
            QWidget* button = nullptr;
            for (QToolBar* toolbar : window.findChildren<QToolBar*>())
                for (QAction* action : toolbar->actions())
                    if (action->text().remove(QLatin1Char('&')).startsWith(text) && toolbar->widgetForAction(action))
                        button = toolbar->widgetForAction(action);
            QVERIFY2(button, qPrintable(text + " is on no toolbar"));
            QVERIFY2(button->isVisible(), qPrintable(text + " is hidden behind the toolbar's overflow"));
            const QRect onWindow(button->mapTo(&window, QPoint(0, 0)), button->size());
            QVERIFY2(window.rect().contains(onWindow), qPrintable(text + " lies outside the window"));
        }
    }

    // The defect demo's report: the verdict box's SQNR to 0.1 dB, the run's mode as the window
    // names it, no raw list, and CSVs (the sweep's tie column among them) without "'=" cells.
    void reportReadsAsPeopleReadNumbers()
    {
        MainWindow window;
        window.setDemoCatalog(demo_);
        showAt(window, QSize(1366, 768));
        QVERIFY(openDemoAndSweep(window, demo_, QStringLiteral("qa-fp8-defect")));
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("report"));
        QVERIFY(!window.exportReport(folder).isEmpty());

        const QString page = readText(folder + "/index.html");
        const QRegularExpression sqnr(QStringLiteral("final output SQNR: (\\S+) dB"));
        const QRegularExpressionMatch match = sqnr.match(page);
        QVERIFY2(match.hasMatch(), "the verdict box names no final output SQNR");
        QVERIFY2(QRegularExpression(QStringLiteral("^-?\\d+\\.\\d$")).match(match.captured(1)).hasMatch(),
                 qPrintable(match.captured(0)));
        QVERIFY2(!page.contains(QStringLiteral("<td>fp8</td>")), "the mode is written as the summary's key");
        QVERIFY2(page.contains(QStringLiteral("<td>FP8</td>")), "the mode is not named as the window names it");
        QVERIFY2(!page.contains(QStringLiteral("[]")), "an empty list is written as []");

        bool tieSeen = false;
        for (const QString& name : QDir(folder).entryList({QStringLiteral("*.csv")})) {
            const QString csv = readText(folder + "/" + name);
            QVERIFY2(!csv.contains(QStringLiteral("'=")), qPrintable(name + " escapes a cell as '="));
            if (csv.startsWith(QStringLiteral("rank,")) && csv.contains(QStringLiteral(",tie,")))
                tieSeen = true;
        }
        QVERIFY2(tieSeen, "no sweep table with its tie column in the report");
    }

    // The Calibration tab after a lab run on the float demo (the first lines of its split): both
    // charts show their title and axis titles whole (the x axis title was cut on both sides).
    void calibrationChartsShowTheirTitlesWhole_data()
    {
        QTest::addColumn<QSize>("size");
        QTest::newRow("1366x768") << QSize(1366, 768);
        QTest::newRow("1024x700") << QSize(1024, 700);
    }

    void calibrationChartsShowTheirTitlesWhole()
    {
        QFETCH(QSize, size);
        MainWindow window;
        window.setDemoCatalog(demo_);
        showAt(window, size);
        QVERIFY(openDemo(window, demo_, QStringLiteral("qa-float")));
        QTemporaryDir texts;
        QVERIFY(copyFirstLines(demo_.folder + "/corpus/calibration.txt", texts.filePath("calibration.txt"), 24));
        QVERIFY(copyFirstLines(demo_.folder + "/corpus/evaluation.txt", texts.filePath("evaluation.txt"), 12));
        CalibrationPanel* panel = window.calibrationPanel();
        window.tabs()->setCurrentWidget(panel);
        panel->setFiles(texts.filePath("calibration.txt"), texts.filePath("evaluation.txt"));
        QSignalSpy finished(window.session(), &WorkbenchSession::calibrationLabFinished);
        QTest::mouseClick(panel->runButton(), Qt::LeftButton);
        QVERIFY(finished.wait(300000));
        QVERIFY(idle(window));
        QTest::qWait(300);
        for (const ChartView* view : {panel->convergenceChart(), panel->clipChart()}) {
            QVERIFY(!view->chart().series.empty());
            QVERIFY(view->plot()->isVisible());
            const QString clipped = clippedChartText(*view);
            QVERIFY2(clipped.isEmpty(), qPrintable(QString::fromStdString(view->chart().id) + ": " + clipped));
        }
    }

    // Bars that are all zero (an EM and F1 of 0) stand on an axis from 0, not around -1..1.
    void allZeroBarsStartAtZero()
    {
        ChartData chart;
        chart.title = "scores";
        chart.categories = {"Exact match", "F1"};
        chart.series = {{"run", SeriesStyle::Bars, {0, 1}, {0, 0}, {}, ""}};
        QCustomPlot plot;
        plot.resize(600, 400);
        renderChart(plot, chart);
        QCOMPARE(plot.yAxis->range().lower, 0.0);
        QVERIFY(plot.yAxis->range().upper > 0.0);
    }
};

QTEST_MAIN(TestLaptopLayout)
#include "test_laptop_layout.moc"
