// File > Compare With... (issue 32): open A (per-channel FP8), ask a question, compare with B (the
// same float model quantized per tensor): the Errors charts and the Scales range chart carry B's
// series beside A's (second colour, legend), the inspector shows A's and B's scheme lines and the
// fields that differ; a new question reruns B; opening another checkpoint leaves nothing of B.
#include <QtTest>

#include <QLabel>
#include <QStandardPaths>
#include <qcustomplot.h>

#include <filesystem>

#include "charts/chart_view.h"
#include "engine/quantize.h"
#include "linear_selection.h"
#include "main_window.h"
#include "panels/ask_panel.h"
#include "panels/errors_panel.h"
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
