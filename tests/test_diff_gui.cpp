// File > Compare With... (issue 32): open A (per-channel FP8), ask a question, compare with B (the
// same float model quantized per tensor): the Errors charts and the Scales range chart carry B's
// series beside A's (second colour, legend), the inspector shows A's and B's scheme lines and the
// fields that differ; a new question reruns B; opening another checkpoint leaves nothing of B.
#include <QtTest>

#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QStandardPaths>
#include <qcustomplot.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "charts/chart_view.h"
#include "engine/quantize.h"
#include "linear_selection.h"
#include "main_window.h"
#include "panels/ask_panel.h"
#include "panels/attention_panel.h"
#include "panels/calibration_panel.h"
#include "panels/device_check_panel.h"
#include "panels/errors_panel.h"
#include "panels/evaluate_panel.h"
#include "panels/fill_mask_panel.h"
#include "panels/sensitivity_panel.h"
#include "panels/linear_inspector.h"
#include "panels/scales_panel.h"
#include "report/charts.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::ui;
using namespace scalescope::testing;

namespace {

const char* kQuestion = "what is the capital of France ?";
const char* kContext = "Paris is the capital of France . the cat sat on the mat . a dog sat on the cat";
const QString kLinear = QStringLiteral("roberta.encoder.layer.0.attention.self.query");

bool hasSeriesOf(const ChartData& chart, const std::string& side)
{
    for (const ChartSeries& s : chart.series)
        if (s.name.rfind(side + ": ", 0) == 0)
            return true;
    return false;
}

bool mentionsB(const ChartData& chart)
{
    return hasSeriesOf(chart, "B") || chart.title.find("B: ") != std::string::npos;
}

// Every chart view of A that a comparison draws B on (or says B has nothing for).
std::vector<ChartView*> comparedViews(MainWindow& window)
{
    std::vector<ChartView*> views = window.errorsPanel()->charts();
    for (ChartView* view : window.scalesPanel()->charts())
        views.push_back(view);
    for (ChartView* view : {window.askPanel()->logitsChart(), window.fillMaskPanel()->chart(), window.attentionPanel()->keyChart(),
             window.attentionPanel()->valueChart(), window.attentionPanel()->smallValuesChart(),
             window.sensitivityPanel()->chart()})
        views.push_back(view);
    for (ChartView* view : window.evaluatePanel()->charts())
        views.push_back(view);
    views.push_back(window.deviceCheckPanel()->f1Chart());
    views.push_back(window.deviceCheckPanel()->failureChart());
    views.push_back(window.calibrationPanel()->convergenceChart());
    views.push_back(window.calibrationPanel()->clipChart());
    return views;
}

// SCALESCOPE_DIFF_GUI_SHOTS=DIR: the window with `tab` in front, saved as DIR/name.png (to look at
// legends, colours and clipping under Xvfb; nothing is written otherwise).
void shot(MainWindow& window, QWidget* tab, const QString& name, int chartTab = -1)
{
    const QString dir = qEnvironmentVariable("SCALESCOPE_DIFF_GUI_SHOTS");
    if (dir.isEmpty())
        return;
    window.tabs()->setCurrentWidget(tab);
    if (chartTab >= 0)
        window.errorsPanel()->chartTabs()->setCurrentIndex(chartTab);
    QTest::qWait(200);
    window.grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png"));
}

// A chart that shows B: series of both sides, a legend with both names, and B's colours unlike A's.
void checkOverlaid(ChartView* view)
{
    const ChartData& chart = view->chart();
    QVERIFY2(hasSeriesOf(chart, "A") && hasSeriesOf(chart, "B"), chart.title.c_str());
    QVERIFY2(chart.title.find("(A and B)") != std::string::npos, chart.title.c_str());
    QVERIFY(view->plot()->legend->visible());
    bool legendA = false, legendB = false;
    for (int i = 0; i < view->plot()->legend->itemCount(); ++i) {
        auto* item = qobject_cast<QCPPlottableLegendItem*>(view->plot()->legend->item(i));
        if (!item)
            continue;
        legendA = legendA || item->plottable()->name().startsWith(QStringLiteral("A: "));
        legendB = legendB || item->plottable()->name().startsWith(QStringLiteral("B: "));
    }
    QVERIFY2(legendA && legendB, chart.title.c_str());
    for (const ChartSeries& b : chart.series)
        if (b.name.rfind("B: ", 0) == 0 && b.style != SeriesStyle::Cells)
            for (const ChartSeries& a : chart.series)
                if (a.name.rfind("A: ", 0) == 0)
                    QVERIFY2(a.color != b.color, (chart.title + ": " + a.name + " / " + b.name).c_str());
}

} // namespace

class TestDiffGui : public QObject {
    Q_OBJECT
    std::string root_, float_, channel_, tensor_;

    bool idle(MainWindow& window)
    {
        return QTest::qWaitFor([&] { return !window.session()->busy(); }, 60000);
    }

    bool open(MainWindow& window, const std::string& dir)
    {
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(QString::fromStdString(dir));
        return ready.wait(60000) && idle(window);
    }

    void expectNoB(MainWindow& window)
    {
        for (ChartView* view : comparedViews(window))
            QVERIFY2(!mentionsB(view->chart()), view->chart().title.c_str());
        QVERIFY(!window.errorsPanel()->compareBanner()->isVisibleTo(window.errorsPanel()));
        QVERIFY(!window.errorsPanel()->overlay());
        QVERIFY(!window.scalesPanel()->hasOverlay());
        QVERIFY(!window.comparedWith());
        window.selection()->select(kLinear);
        QVERIFY(!window.inspector()->details()->text().contains(QStringLiteral("Compared with B")));
    }

    bool ask(MainWindow& window)
    {
        window.askPanel()->setInputs(kQuestion, kContext);
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QTest::mouseClick(window.askPanel()->askButton(), Qt::LeftButton);
        return answered.wait(60000) && idle(window);
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
        root_ = makeTempDir("scalescope-diff-gui");
        float_ = root_ + "/float";
        channel_ = root_ + "/channel";
        tensor_ = root_ + "/tensor";
        writeTinyFloatCheckpoint(float_, {});
        QuantizeOptions options;
        quantizeCheckpoint(float_, channel_, options);
        options.weights = WeightStrategy::Tensor;
        quantizeCheckpoint(float_, tensor_, options);
    }

    void cleanupTestCase() { std::filesystem::remove_all(root_); }

    void compareWithOverlaysAndClears()
    {
        MainWindow window;
        window.show();
        QVERIFY(open(window, channel_));
        QVERIFY(ask(window));
        QCOMPARE(window.errorsPanel()->layerSqnrView()->chart().series.size(), std::size_t(1));
        QVERIFY(window.compareWithAction());

        QSignalSpy compared(window.session(), &WorkbenchSession::compareWithReady);
        window.compareWith(QString::fromStdString(tensor_));
        QVERIFY(compared.wait(60000));
        QVERIFY(idle(window));

        // Errors: A's and B's series on the per-layer and per-Linear charts, B in the second colour.
        for (ChartView* view : {window.errorsPanel()->layerSqnrView(), window.errorsPanel()->linearSqnrView()}) {
            const ChartData& chart = view->chart();
            QCOMPARE(chart.series.size(), std::size_t(2));
            QVERIFY(hasSeriesOf(chart, "A") && hasSeriesOf(chart, "B"));
            QCOMPARE(chart.series[1].color, std::string(kOverlayColorB));
            QCOMPARE(chart.series[1].y.size(), chart.series[0].y.size());
            // The legend shows both entries.
            QVERIFY(view->plot()->legend->visible());
            QVERIFY(view->plot()->legend->itemCount() >= 2);
        }
        // B's layer SQNRs are those of B's own comparison with A's dequant on the same question.
        QVERIFY(window.errorsPanel()->overlay());
        // Scales: B's weight-scale ranges beside A's.
        QVERIFY(window.scalesPanel()->hasOverlay());
        QVERIFY(hasSeriesOf(window.scalesPanel()->rangesView()->chart(), "B"));

        // Inspector: both schemes and the field that differs.
        window.selection()->select(kLinear);
        const QString text = window.inspector()->details()->text();
        QVERIFY2(text.contains(QStringLiteral("Compared with B")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("FP8 weights channel")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("FP8 weights tensor")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("weights.strategy")), qPrintable(text));

        // A new question: B runs it too.
        compared.clear();
        QVERIFY(ask(window));
        QVERIFY(compared.count() > 0 || compared.wait(60000));
        QVERIFY(idle(window));
        QCOMPARE(window.errorsPanel()->layerSqnrView()->chart().series.size(), std::size_t(2));

        // Another checkpoint: nothing of B stays.
        QVERIFY(open(window, tensor_));
        QVERIFY(window.session()->compareWithDirectory().isEmpty());
        QVERIFY(!window.scalesPanel()->hasOverlay());
        QVERIFY(!hasSeriesOf(window.scalesPanel()->rangesView()->chart(), "B"));
        QVERIFY(!window.errorsPanel()->overlay());
        window.selection()->select(kLinear);
        QVERIFY(!window.inspector()->details()->text().contains(QStringLiteral("Compared with B")));
        QVERIFY(ask(window));
        QCOMPARE(window.errorsPanel()->layerSqnrView()->chart().series.size(), std::size_t(1));
    }

    // Every chart view of A carries B (or says "B: not run"), the Compare banner lists the
    // differences, a mode switch marks B stale and the next run refreshes it, Clear Comparison and
    // opening another checkpoint leave nothing of B on any chart, banner or inspector.
    void everyChartCarriesB()
    {
        MainWindow window;
        window.resize(1366, 768);
        window.show();
        QVERIFY(open(window, channel_));
        window.fp8AttentionAction()->setChecked(true); // the Attention view's charts fill too
        QVERIFY(idle(window));
        QVERIFY(window.session()->currentStamp().run.attention == AttentionPrecision::Fp8Aiu);
        QVERIFY(ask(window));
        // A sweep of A: B never runs one.
        window.tabs()->setCurrentWidget(window.sensitivityPanel());
        QSignalSpy swept(window.session(), &WorkbenchSession::sensitivityFinished);
        QTest::mouseClick(window.sensitivityPanel()->runButton(), Qt::LeftButton);
        QVERIFY(swept.wait(120000));
        QVERIFY(idle(window));
        QVERIFY(!window.sensitivityPanel()->chart()->chart().series.empty());
        QVERIFY(window.clearComparisonAction() && !window.clearComparisonAction()->isEnabled());

        QSignalSpy compared(window.session(), &WorkbenchSession::compareWithReady);
        window.compareWith(QString::fromStdString(tensor_));
        QVERIFY(compared.wait(60000));
        QVERIFY(idle(window));
        QVERIFY(window.clearComparisonAction()->isEnabled());

        // B's own series on every chart B ran for.
        ErrorsPanel* errors = window.errorsPanel();
        std::vector<ChartView*> overlaid = {errors->layerSqnrView(), errors->linearSqnrView(), window.askPanel()->logitsChart(),
                                            window.attentionPanel()->smallValuesChart()};
        for (ChartView* view : window.scalesPanel()->charts())
            overlaid.push_back(view);
        for (ChartView* view : errors->charts())
            if (view != errors->charts()[4] && view != errors->charts()[5]) // the drill-down: A's capture only
                overlaid.push_back(view);
        for (ChartView* view : overlaid) {
            QVERIFY2(!view->chart().series.empty(), view->chart().title.c_str());
            checkOverlaid(view);
            if (QTest::currentTestFailed())
                return;
        }
        shot(window, errors, QStringLiteral("diff-01-errors-sqnr"), 0);
        shot(window, errors, QStringLiteral("diff-02-errors-linear"), 3);
        shot(window, errors, QStringLiteral("diff-03-errors-fp16-headroom"), 4);
        errors->chartTabs()->setCurrentIndex(0);
        shot(window, window.scalesPanel(), QStringLiteral("diff-04-scales"));
        shot(window, window.askPanel(), QStringLiteral("diff-05-ask"));
        shot(window, window.attentionPanel(), QStringLiteral("diff-06-attention"));
        shot(window, window.sensitivityPanel(), QStringLiteral("diff-07-sensitivity"));
        // The K/V heat maps: B's cells would cover A's, so the title says B is not drawn there.
        for (ChartView* view : {window.attentionPanel()->keyChart(), window.attentionPanel()->valueChart()}) {
            const ChartData& chart = view->chart();
            QVERIFY2(chart.title.find("(A; B: heat map not overlaid)") != std::string::npos, chart.title.c_str());
            QVERIFY(hasSeriesOf(chart, "A") && !hasSeriesOf(chart, "B"));
        }
        // The sweep B never ran: named in the title, A's series named A.
        const ChartData& sweep = window.sensitivityPanel()->chart()->chart();
        QVERIFY2(sweep.title.find("(A; B: not run)") != std::string::npos, sweep.title.c_str());
        QVERIFY(hasSeriesOf(sweep, "A") && !hasSeriesOf(sweep, "B"));

        // The Compare banner: on screen, with the differences the diff counts.
        QLabel* banner = errors->compareBanner();
        QVERIFY(banner->isVisibleTo(errors));
        const QString text = banner->text();
        const CompareWithOutcome& outcome = *window.comparedWith();
        int identical = 0;
        for (const TensorDifference& t : outcome.diff->tensors)
            identical += t.verdict == kDiffIdentical;
        QVERIFY2(text.contains(QString::fromStdString(tensor_)), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("%1 Linear(s) with another scheme").arg(outcome.diff->linears.size())), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Tensors: %1 identical").arg(identical)), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Where A and B differ most")), qPrintable(text));
        // The top point is the one whose SQNRs differ most, counted here from both runs.
        const ComparisonResult& a = *errors->comparison();
        const ComparisonResult& b = *errors->overlay();
        QCOMPARE(a.points.size(), b.points.size());
        std::size_t top = 0;
        double largest = -1;
        for (std::size_t p = 0; p < a.points.size(); ++p) {
            double d = a.points[p].metrics.sqnrDb == b.points[p].metrics.sqnrDb ? 0.0 : std::fabs(b.points[p].metrics.sqnrDb - a.points[p].metrics.sqnrDb);
            if (std::isnan(d))
                d = std::numeric_limits<double>::infinity();
            if (d > largest) {
                largest = d;
                top = p;
            }
        }
        const int at = text.indexOf(QStringLiteral("differ most (SQNR): "));
        QVERIFY2(text.mid(at + 20).startsWith(QString::fromStdString(a.points[top].name)), qPrintable(text));

        // FP8 attention off: the question reruns on its own, and B with it.
        compared.clear();
        window.fp8AttentionAction()->setChecked(false);
        QVERIFY(compared.wait(60000));
        QVERIFY(idle(window));
        QCOMPARE(window.comparedWith()->stamp.run.attention, AttentionPrecision::Float);

        // Mode fp8 -> dequant: B's overlay is marked stale with A's until the rerun (on its own, as
        // for any mode switch) refreshes both in dequant.
        compared.clear();
        window.modeBox()->setCurrentIndex(window.modeBox()->findData(QStringLiteral("dequant")));
        QVERIFY(errors->isStale());
        QVERIFY(window.scalesPanel()->isStale());
        QVERIFY(hasSeriesOf(errors->layerSqnrView()->chart(), "B")); // B's fp8 run, under the stale banner
        shot(window, errors, QStringLiteral("diff-08-errors-after-mode-switch"), 0);
        QVERIFY(compared.count() > 0 || compared.wait(60000));
        QVERIFY(idle(window));
        QVERIFY(!errors->isStale());
        QCOMPARE(window.comparedWith()->stamp.run.mode, RunMode::Dequant);
        QVERIFY(errors->overlay());
        checkOverlaid(errors->layerSqnrView());

        shot(window, errors, QStringLiteral("diff-09-errors-dequant-refreshed"), 0);
        // Clear Comparison: nothing of B anywhere.
        window.clearComparisonAction()->trigger();
        shot(window, errors, QStringLiteral("diff-10-errors-cleared"), 0);
        expectNoB(window);
        QVERIFY(!window.clearComparisonAction()->isEnabled());

        // Compare again, then open another checkpoint: nothing of B stays.
        compared.clear();
        window.compareWith(QString::fromStdString(tensor_));
        QVERIFY(compared.wait(60000));
        QVERIFY(idle(window));
        QVERIFY(hasSeriesOf(errors->layerSqnrView()->chart(), "B"));
        QVERIFY(open(window, tensor_));
        expectNoB(window);
        QVERIFY(ask(window));
        expectNoB(window);
    }

    void compareWithAnotherModelIsOneSentence()
    {
        MainWindow window;
        QVERIFY(open(window, channel_));
        TinyModelSpec other;
        other.hiddenSize = 16;
        other.intermediateSize = 32;
        const std::string otherFloat = root_ + "/other-float", otherFp8 = root_ + "/other-fp8";
        writeTinyFloatCheckpoint(otherFloat, other);
        quantizeCheckpoint(otherFloat, otherFp8, {});
        QSignalSpy failed(window.session(), &WorkbenchSession::failed);
        window.compareWith(QString::fromStdString(otherFp8));
        QVERIFY(failed.wait(60000));
        QVERIFY2(window.lastError().contains(QString::fromStdString(otherFp8)), qPrintable(window.lastError()));
        QVERIFY(window.session()->compareWithDirectory().isEmpty());
        QVERIFY(!window.scalesPanel()->hasOverlay());
    }
};

QTEST_MAIN(TestDiffGui)
#include "test_diff_gui.moc"
