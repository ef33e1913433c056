// The GUI side of AIU FP8 attention (issue 29, item 5) driven as a user would, on a tiny FP8
// checkpoint with its float reference: the toolbar's FP8 Attention toggle turns it on for the next runs (earlier
// results turn stale); an answer then fills the Attention view with one K and one V heat-map cell
// per layer and head, a table row per layer, tensor and head whose numbers are the comparison's,
// and a sentence naming the head with least range; the report carries the view; turning it off and
// answering again leaves nothing of the FP8-attention run on screen; another checkpoint clears it.
#include <QtTest>

#include <QAction>
#include <QLabel>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTabWidget>

#include <nlohmann/json.hpp>

#include "charts/chart_view.h"
#include "engine/compute_threads.h"
#include "main_window.h"
#include "panels/ask_panel.h"
#include "linear_selection.h"
#include "panels/attention_panel.h"
#include "panels/linear_inspector.h"
#include "stale_banner.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::ui;
using namespace scalescope::testing;

namespace {

const char* kContext = "the cat sat on the mat . the dog sat on the mat . Paris is the capital of France .";
const char* kQuestion = "where is the cat ?";

std::size_t cellCount(const ChartData& chart)
{
    std::size_t cells = 0;
    for (const ChartSeries& series : chart.series)
        if (series.style == SeriesStyle::Cells)
            cells += pointCount(series);
    return cells;
}

} // namespace

class TestAttentionGui : public QObject {
    Q_OBJECT
    std::string float_, fp8_, other_;

    bool idle(MainWindow& window) { return QTest::qWaitFor([&] { return !window.session()->busy(); }, 120000); }

    bool open(MainWindow& window, const std::string& checkpoint)
    {
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(QString::fromStdString(checkpoint));
        if (!ready.wait(60000))
            return false;
        QSignalSpy reference(window.session(), &WorkbenchSession::referenceChanged);
        window.setReference(QString::fromStdString(float_));
        return reference.wait(60000) && idle(window);
    }

    std::shared_ptr<const AskOutcome> ask(MainWindow& window)
    {
        window.askPanel()->setInputs(kQuestion, kContext);
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QTest::mouseClick(window.askPanel()->askButton(), Qt::LeftButton);
        if (!answered.wait(60000) || !idle(window))
            return nullptr;
        return answered.takeFirst().at(0).value<std::shared_ptr<const AskOutcome>>();
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
        setComputeThreads(2);
        const std::string root = makeTempDir("attention-gui");
        float_ = root + "/float";
        TinyModelSpec spec;
        spec.seed = 2901;
        writeTinyFloatCheckpoint(float_, spec);
        fp8_ = root + "/fp8";
        writeTinyFp8Checkpoint(float_, fp8_, {"channel", "token", "F32"});
        other_ = root + "/fp8-tensor";
        writeTinyFp8Checkpoint(float_, other_, {"tensor", "token", "F32"});
    }

    void attentionViewFollowsTheRuns()
    {
        MainWindow window;
        window.resize(1366, 768);
        window.show();
        AttentionPanel* panel = window.attentionPanel();
        QAction* toggle = window.fp8AttentionAction();
        QVERIFY(toggle && toggle->isCheckable() && !toggle->isChecked());
        QCOMPARE(window.tabs()->tabText(window.tabs()->indexOf(panel)), QStringLiteral("Attention"));
        QVERIFY(open(window, fp8_));

        // Off: an answer leaves the view empty and says how to turn it on.
        QVERIFY(ask(window));
        QCOMPARE(panel->headTable()->rowCount(), 0);
        QVERIFY2(panel->summary().contains("FP8 Attention (AIU) on the toolbar"), qPrintable(panel->summary()));

        // On: the answer on screen turns stale; the next one fills the view.
        toggle->trigger();
        QCOMPARE(window.session()->attention(), AttentionPrecision::Fp8Aiu);
        QVERIFY(window.askPanel()->banner()->isStale());
        const auto outcome = ask(window);
        QVERIFY(outcome && outcome->comparison);
        QCOMPARE(outcome->stamp.run.attention, AttentionPrecision::Fp8Aiu);
        const std::vector<CastHeadroom>& headroom = outcome->comparison->attentionHeadroom;
        QCOMPARE(headroom.size(), std::size_t(4)); // 2 layers, K and V
        const int heads = 4;
        QCOMPARE(panel->headTable()->rowCount(), 2 * 2 * heads);
        QCOMPARE(cellCount(panel->keyChart()->chart()), std::size_t(2 * heads));
        QCOMPARE(cellCount(panel->valueChart()->chart()), std::size_t(2 * heads));
        QVERIFY2(panel->keyChart()->stamp().contains("FP8 attention"), qPrintable(panel->keyChart()->stamp()));
        // The table's numbers are the comparison's: row 1 is layer 0, K, head 1.
        const QStandardItemModel* table = panel->headTable();
        QCOMPARE(table->item(1, 0)->text(), QStringLiteral("0"));
        QCOMPARE(table->item(1, 1)->text(), QStringLiteral("K"));
        QCOMPARE(table->item(1, 3)->data(Qt::UserRole).toDouble(), headroom[0].heads[1].topMedian);
        QCOMPARE(table->item(1, 6)->data(Qt::UserRole).toDouble(), 100.0 * headroom[0].heads[1].zeroShare());
        // The sentence names the head with the lowest median top, and that top.
        const CastHeadroom* cast = nullptr;
        const HeadHeadroom* least = nullptr;
        for (const CastHeadroom& c : headroom)
            for (const HeadHeadroom& h : c.heads)
                if (!least || h.topMedian < least->topMedian) {
                    least = &h;
                    cast = &c;
                }
        const QString expected = QStringLiteral("layer %1 %2, head %3 reaches %4 of")
                                     .arg(cast->layer)
                                     .arg(cast->key ? "K" : "V")
                                     .arg(least->head)
                                     .arg(least->topMedian, 0, 'f', 1);
        QVERIFY2(panel->summary().contains(expected), qPrintable(panel->summary() + " / " + expected));
        // A sweep entry of FP8 attention selected (as a click on its bar does): the inspector names
        // the unit and says it is a run option, not a Linear.
        window.selection()->select(QStringLiteral("roberta.encoder.layer.1.attention.self.math_fp8"));
        QTRY_VERIFY2(window.inspector()->details()->text().contains("the attention of layer 1 in FP8"),
                     qPrintable(window.inspector()->details()->text()));
        QVERIFY(window.inspector()->details()->text().contains("a run option"));

        // Off again: the view is stale, and the next answer (float attention) leaves nothing of it.
        toggle->trigger();
        QVERIFY(panel->banner()->isStale());
        QVERIFY(ask(window));
        QCOMPARE(panel->headTable()->rowCount(), 0);
        QCOMPARE(cellCount(panel->keyChart()->chart()), std::size_t(0));

        // On, answer, then another checkpoint: cleared.
        toggle->trigger();
        QVERIFY(ask(window));
        QVERIFY(panel->headTable()->rowCount() > 0);
        QVERIFY(open(window, other_));
        QCOMPARE(panel->headTable()->rowCount(), 0);
        QVERIFY(!panel->banner()->isStale());
    }
};

QTEST_MAIN(TestAttentionGui)
#include "test_attention_gui.moc"
