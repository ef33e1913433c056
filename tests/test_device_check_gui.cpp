// The Device Check tab (issue 28, item 4) driven as a user would, on a tiny FP8 checkpoint with its
// float reference and a small SQuAD file: the check runs on the CPU device (the in-process run in
// the Mode box's mode) against the chosen twins with thresholds from a measured noise floor, and
// the panel shows the verdict, one bar per checked point (bars above the allowed rate in the
// warning series), the point where departures start marked and selected, the F1 interval and the
// table; clicking a row or a bar selects that capture point in Errors; the report gets the check;
// switching the mode marks it stale and opening another checkpoint clears it.
#include <QtTest>

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QFileInfo>

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>
#include <qcustomplot.h>

#include "charts/chart_view.h"
#include "engine/compute_threads.h"
#include "linear_selection.h"
#include "main_window.h"
#include "panels/device_check_panel.h"
#include "panels/errors_panel.h"
#include "panels/evaluate_panel.h"
#include "panels/ask_panel.h"
#include "stale_banner.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::ui;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

using Outcome = std::shared_ptr<const DeviceCheckOutcome>;

const char* kContext = "the cat sat on the mat . the dog sat on the mat . Paris is the capital of France .";
const std::vector<std::pair<std::string, std::string>> kQuestions = {
    {"where is the cat ?", "the mat"},          {"what is the capital of France ?", "Paris"},
    {"where is the dog ?", "the mat"},          {"what sat on the mat ?", "the cat"},
    {"what is Paris ?", "the capital of France"}, {"what sat on the cat ?", "the dog"}};

std::string writeSquadFile(const std::string& dir)
{
    const std::string path = dir + "/dev.json";
    json qas = json::array();
    const std::string context = kContext;
    for (std::size_t i = 0; i < kQuestions.size(); ++i)
        qas.push_back({{"id", "q" + std::to_string(i)},
                       {"question", kQuestions[i].first},
                       {"answers", {{{"text", kQuestions[i].second}, {"answer_start", context.find(kQuestions[i].second)}}}}});
    const json file = {{"version", "1.1"}, {"data", {{{"title", "t"}, {"paragraphs", {{{"context", context}, {"qas", qas}}}}}}}};
    QFile out(QString::fromStdString(path));
    out.open(QIODevice::WriteOnly);
    out.write(QByteArray::fromStdString(file.dump()));
    return path;
}

json readJson(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return nullptr;
    return json::parse(file.readAll().toStdString());
}

// The point that is the first failing one on most inputs (ties: the earlier point), recounted
// from the per-input first failing points: what the chart and the table must mark.
std::string mostCommonFirstFailure(const TwinCheck& twin)
{
    std::map<std::string, std::size_t> counts;
    for (const std::string& point : twin.firstFailingPoint)
        if (!point.empty())
            ++counts[point];
    std::string best;
    std::size_t bestCount = 0;
    for (const PointCheck& p : twin.points) {
        const auto found = counts.find(p.point);
        if (found != counts.end() && found->second > bestCount) {
            best = p.point;
            bestCount = found->second;
        }
    }
    return best;
}

// Every bar of the chart by category: its height and whether it stands in the warning series.
struct Bar {
    double height = 0;
    bool above = false;
};
std::map<int, Bar> barsOf(const ChartData& chart, int& count)
{
    std::map<int, Bar> bars;
    count = 0;
    for (const ChartSeries& series : chart.series) {
        if (series.style != SeriesStyle::Bars)
            continue;
        for (std::size_t i = 0; i < pointCount(series); ++i) {
            ++count;
            bars[int(series.x[i])] = {series.y[i], series.name == "above the allowed rate"};
        }
    }
    return bars;
}

} // namespace

class TestDeviceCheckGui : public QObject {
    Q_OBJECT
    std::string float_, fp8_, other_, squad_;

    bool idle(MainWindow& window) { return QTest::qWaitFor([&] { return !window.session()->busy(); }, 120000); }

    // Opens the checkpoint with the float reference and answers one question, so that Errors has
    // results to select points in.
    bool openAndAsk(MainWindow& window, const std::string& checkpoint)
    {
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(QString::fromStdString(checkpoint));
        if (!ready.wait(60000))
            return false;
        QSignalSpy reference(window.session(), &WorkbenchSession::referenceChanged);
        window.setReference(QString::fromStdString(float_));
        if (!reference.wait(60000) || !idle(window))
            return false;
        window.askPanel()->setInputs(QString::fromStdString(kQuestions[0].first), kContext);
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QTest::mouseClick(window.askPanel()->askButton(), Qt::LeftButton);
        return answered.wait(60000) && idle(window);
    }

    // Ticks exactly these twins, presses Run Check and waits for the outcome.
    Outcome check(MainWindow& window, const QStringList& twins)
    {
        DeviceCheckPanel* panel = window.deviceCheckPanel();
        window.tabs()->setCurrentWidget(panel);
        panel->setSquadFile(QString::fromStdString(squad_));
        for (const std::string& name : checkRunNames())
            if (QCheckBox* box = panel->twinBox(QString::fromStdString(name)))
                box->setChecked(twins.contains(QString::fromStdString(name)));
        QSignalSpy checked(window.session(), &WorkbenchSession::deviceChecked);
        QTest::mouseClick(panel->runButton(), Qt::LeftButton);
        if (!checked.wait(180000) || !idle(window))
            return nullptr;
        return checked.takeFirst().at(0).value<Outcome>();
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
        setComputeThreads(2);
        const std::string root = makeTempDir("device-check-gui");
        // The CPU side's disk cache of this suite's checks, not the user's.
        qputenv("SCALESCOPE_CHECK_CACHE", QByteArray::fromStdString(root + "/cache"));
        float_ = root + "/float";
        TinyModelSpec spec;
        spec.seed = 2811;
        writeTinyFloatCheckpoint(float_, spec);
        fp8_ = root + "/fp8";
        writeTinyFp8Checkpoint(float_, fp8_, {"channel", "token", "F32"});
        other_ = root + "/fp8-tensor";
        writeTinyFp8Checkpoint(float_, other_, {"tensor", "token", "F32"});
        squad_ = writeSquadFile(root);
    }

    void controlsStartAsTheIssueSays()
    {
        MainWindow window;
        DeviceCheckPanel* panel = window.deviceCheckPanel();
        QCOMPARE(window.tabs()->tabText(window.tabs()->indexOf(panel)), QStringLiteral("Device Check"));
        // Evaluate's neighbour.
        QCOMPARE(window.tabs()->indexOf(panel), window.tabs()->indexOf(window.evaluatePanel()) + 1);
        QCOMPARE(panel->questionsBox()->value(), 200);
        QVERIFY(panel->measureFloorButton()->isChecked());
        QCOMPARE(panel->maxFailureRateBox()->value(), 1.0);
        QCOMPARE(panel->maxF1DropBox()->value(), 1.0);
        // One box per run the core can make, the emulation alone ticked.
        for (const std::string& name : checkRunNames()) {
            QCheckBox* box = panel->twinBox(QString::fromStdString(name));
            QVERIFY2(box, name.c_str());
            QCOMPARE(box->isChecked(), name == "emulation");
        }
        QVERIFY(!panel->runButton()->isEnabled()); // nothing open
        const DeviceCheckRequest request = panel->request();
        QCOMPARE(request.twins, QStringList{"emulation"});
        QCOMPARE(request.maxFailureRate, 0.01);
        QVERIFY(request.thresholdsFile.isEmpty());
        // The SQuAD file Evaluate chose is the check's too.
        window.evaluatePanel()->setSquadFile(QString::fromStdString(squad_));
        emit window.evaluatePanel()->evaluateRequested(QString::fromStdString(squad_), 0, 0.0);
        QCOMPARE(panel->squadFile(), QString::fromStdString(squad_));
        QVERIFY(idle(window));
    }

    void cpuAgainstItsOwnEmulationIsNoPass()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window, fp8_));
        DeviceCheckPanel* panel = window.deviceCheckPanel();
        // The CPU device: the in-process run in the Mode box's mode, and the panel says so.
        QVERIFY2(panel->runUnderTestLabel()->text().contains("in-process run in FP8 mode"),
                 qPrintable(panel->runUnderTestLabel()->text()));
        const Outcome outcome = check(window, {"emulation"});
        QVERIFY(outcome);
        const CheckResult& r = outcome->result;
        QCOMPARE(r.measurements.measuredInputs() + 0, kQuestions.size());
        QCOMPARE(r.twins.size(), std::size_t(1));
        // The FP8 run on the CPU is the emulation itself: nothing departs.
        for (const PointCheck& p : r.twins[0].points)
            QCOMPARE(p.failures, std::size_t(0));
        QVERIFY(r.passed);
        // Issue 51: the run and its twin are the same computation, so passing says nothing about a
        // device: no PASS, but that no device is chosen and how to choose one.
        QVERIFY2(panel->verdictLabel()->text() != QStringLiteral("PASS"), qPrintable(panel->verdictLabel()->text()));
        QVERIFY(panel->verdictLabel()->isVisible());
        QVERIFY2(panel->verdictDetails()->text().contains("No device is chosen") &&
                     panel->verdictDetails()->text().contains("Device box"),
                 qPrintable(panel->verdictDetails()->text()));
        int count = 0;
        const std::map<int, Bar> bars = barsOf(panel->failureChart()->chart(), count);
        QCOMPARE(std::size_t(count), r.twins[0].points.size());
        QCOMPARE(bars.size(), r.twins[0].points.size());
        for (const auto& [category, bar] : bars)
            QVERIFY(!bar.above && bar.height == 0);
        QCOMPARE(panel->departureIndex(), -1);
        QVERIFY(panel->failureChart()->chart().verticalMarkers.empty());
        QCOMPARE(panel->table()->rowCount(), int(r.twins[0].points.size()));
        // Same answers on both sides: a zero difference, a zero-width interval.
        QVERIFY(r.twins[0].f1Difference);
        QCOMPARE(r.twins[0].f1Difference->low, 0.0);
        QCOMPARE(r.twins[0].f1Difference->high, 0.0);
        QVERIFY(!panel->f1Chart()->chart().series.empty());
        QVERIFY2(panel->f1Label()->text().contains("within"), qPrintable(panel->f1Label()->text()));
    }

    // A thresholds file written here: every point lax but one, which no FP8 run can meet, and one
    // point left out. Held against the float reference, departures start exactly at that point,
    // only its bar stands above the allowed rate, and the point left out is "not checked".
    void thresholdsFileLocatesThePointItNames()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window, fp8_));
        DeviceCheckPanel* panel = window.deviceCheckPanel();
        // The points, from a first check (the emulation, with the measured floor).
        const Outcome first = check(window, {"emulation"});
        QVERIFY(first);
        const std::vector<std::string> points = first->result.measurements.points;
        const std::string strict = "roberta.encoder.layer.1.intermediate.dense.output";
        const std::string unnamed = "qa_outputs.input";
        QVERIFY(std::find(points.begin(), points.end(), strict) != points.end());
        QVERIFY(std::find(points.begin(), points.end(), unnamed) != points.end());
        json entries = json::array();
        for (const std::string& point : points) {
            if (point == unnamed)
                continue;
            // Lax thresholds at the edge of each metric's range (a file outside it is refused).
            json thresholds = {{"sqnr_db", point == strict ? 1000.0 : -1000.0}, {"cosine", -1.0}, {"max_abs", 1e30}};
            if (point == kQaLogitsPoint)
                thresholds.update({{"cross_entropy", 1e30}, {"mean_probability_difference", 1.0}});
            entries.push_back({{"point", point}, {"samples", 6}, {"thresholds", thresholds}});
        }
        const json file = {{"format", "scalescope-thresholds"},
                           {"version", 1},
                           {"percentile", 99},
                           {"provenance", {{"checkpoint", "elsewhere"}, {"checkpoint_sha256", "0000"}}},
                           {"points", entries}};
        QTemporaryDir folder;
        const QString path = folder.filePath("thresholds.json");
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QByteArray::fromStdString(file.dump(2)));
        out.close();
        panel->thresholdsFileEdit()->setText(path);
        panel->thresholdsFileButton()->setChecked(true);

        const Outcome outcome = check(window, {"reference"});
        QVERIFY(outcome);
        QVERIFY(outcome->thresholdsSource.contains("another checkpoint"));
        const TwinCheck& twin = outcome->result.twins.at(0);
        QCOMPARE(panel->verdictLabel()->text(), QStringLiteral("FAIL"));
        QCOMPARE(twin.departureStart, strict);
        const int index = panel->departureIndex();
        QCOMPARE(twin.points.at(std::size_t(index)).point, strict);
        QCOMPARE(panel->failureChart()->highlightedCategory(), index);
        int count = 0;
        const std::map<int, Bar> bars = barsOf(panel->failureChart()->chart(), count);
        QCOMPARE(std::size_t(count), twin.points.size());
        for (const auto& [category, bar] : bars) {
            QCOMPARE(bar.above, category == index);
            QCOMPARE(bar.height, category == index ? 100.0 : 0.0);
        }
        for (std::size_t i = 0; i < twin.points.size(); ++i)
            QCOMPARE(panel->table()->item(int(i), DeviceCheckPanel::FailureRateColumn)->text() == "not checked",
                     twin.points[i].point == unnamed);
        QCOMPARE(window.errorsPanel()->selectedCapturePoint(), QString::fromStdString(strict));
        QVERIFY(idle(window));
    }

    // A runner device: the run under test goes through the runner in fp8 mode, the twins run in
    // this process. The CPU runner computes what the emulation does, so the check passes; run
    // again, the CPU side comes from the disk cache.
    void runnerDeviceAgainstTheEmulation()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window, fp8_));
        const QString cli = QFileInfo(QStringLiteral(SCALESCOPE_CLI)).canonicalFilePath();
        QVERIFY(!cli.isEmpty());
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.session()->setDevice(QStringLiteral("runner:'%1' runner").arg(cli));
        QVERIFY(ready.wait(60000));
        QVERIFY(idle(window));
        DeviceCheckPanel* panel = window.deviceCheckPanel();
        QVERIFY2(panel->runUnderTestLabel()->text().contains("selected device"), qPrintable(panel->runUnderTestLabel()->text()));
        const Outcome first = check(window, {"emulation"});
        QVERIFY(first);
        QCOMPARE(QString::fromStdString(first->result.measurements.runName), QStringLiteral("device"));
        QVERIFY2(first->runUnderTest.contains("fp8 mode"), qPrintable(first->runUnderTest));
        QCOMPARE(panel->verdictLabel()->text(), QStringLiteral("PASS"));
        const Outcome second = check(window, {"emulation"});
        QVERIFY(second);
        QVERIFY2(second->cacheNote.contains("CPU side") && !second->cacheNote.startsWith("CPU side: 0 batches"),
                 qPrintable(second->cacheNote));
        QCOMPARE(second->result.passed, first->result.passed);
        window.session()->setDevice(QStringLiteral("cpu"));
        QVERIFY(ready.wait(60000));
        QVERIFY(idle(window));
        // The result of the runner is stale on the CPU device.
        QVERIFY(panel->banner()->isStale());
    }

    void failsAgainstTheReferenceWhereDeparturesStart()
    {
        MainWindow window;
        window.resize(1366, 768);
        window.show();
        QVERIFY(openAndAsk(window, fp8_));
        DeviceCheckPanel* panel = window.deviceCheckPanel();
        ErrorsPanel* errors = window.errorsPanel();
        // FP8 against the float reference departs far beyond the fp16 noise floor.
        const Outcome outcome = check(window, {"reference"});
        QVERIFY(outcome);
        const CheckResult& r = outcome->result;
        const TwinCheck& twin = r.twins.at(0);
        QVERIFY(!r.passed);
        QCOMPARE(panel->verdictLabel()->text(), QStringLiteral("FAIL"));
        // The verdict, reasons and F1 line on screen still fit a 1024x640 window.
        const QSize hint = window.minimumSizeHint().expandedTo(window.minimumSize());
        QVERIFY2(hint.width() <= 1024 && hint.height() <= 640, qPrintable(QString("%1x%2").arg(hint.width()).arg(hint.height())));
        for (const std::string& reason : r.reasons)
            QVERIFY2(panel->verdictDetails()->text().contains(QString::fromStdString(reason).toHtmlEscaped()), reason.c_str());

        // One bar per checked point; a bar is in the warning series exactly when more inputs than
        // the allowed rate fail there (recounted here from the failures).
        int count = 0;
        const std::map<int, Bar> bars = barsOf(panel->failureChart()->chart(), count);
        QCOMPARE(std::size_t(count), twin.points.size());
        int above = 0;
        for (std::size_t i = 0; i < twin.points.size(); ++i) {
            const PointCheck& p = twin.points[i];
            const double rate = double(p.failures) / double(p.inputs);
            QCOMPARE(bars.at(int(i)).height, 100.0 * rate);
            QCOMPARE(bars.at(int(i)).above, rate > r.gate.maxFailureRate);
            above += bars.at(int(i)).above;
        }
        QVERIFY(above > 0);
        const ChartData& chart = panel->failureChart()->chart();
        QCOMPARE(chart.horizontalMarkers.size(), std::size_t(1));
        QCOMPARE(chart.horizontalMarkers[0].first, 1.0); // the allowed rate, in %
        QCOMPARE(chart.valueBands.size(), std::size_t(1));

        // Where departures start: marked on the chart, shaded, its row selected and bold.
        const std::string departure = mostCommonFirstFailure(twin);
        QVERIFY(!departure.empty());
        QCOMPARE(twin.departureStart, departure);
        const int index = panel->departureIndex();
        QVERIFY(index >= 0);
        QCOMPARE(twin.points[std::size_t(index)].point, departure);
        QCOMPARE(chart.verticalMarkers.size(), std::size_t(1));
        QCOMPARE(chart.verticalMarkers[0].first, double(index));
        QCOMPARE(panel->failureChart()->highlightedCategory(), index);
        QCOMPARE(panel->table()->currentRow(), index);
        QVERIFY(panel->table()->item(index, DeviceCheckPanel::PointColumn)->font().bold());
        // ... and selected in Errors.
        QCOMPARE(errors->selectedCapturePoint(), QString::fromStdString(departure));
        QVERIFY(idle(window));

        // A click on another row selects that point in Errors, its row there current.
        int other = -1;
        for (int row = int(twin.points.size()) - 1; row >= 0; --row)
            if (row != index && twin.points[std::size_t(row)].point.find(".output") != std::string::npos) {
                other = row;
                break;
            }
        QVERIFY(other >= 0);
        const QString otherPoint = QString::fromStdString(twin.points[std::size_t(other)].point);
        QTableWidget* table = panel->table();
        table->scrollToItem(table->item(other, 0));
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualItemRect(table->item(other, 1)).center());
        QCOMPARE(panel->selectedPoint(), otherPoint);
        QCOMPARE(panel->failureChart()->highlightedCategory(), other);
        QCOMPARE(errors->selectedCapturePoint(), otherPoint);
        // Its Linear is the one every view shows (the inspector, Model, Scales).
        QString otherModule = otherPoint;
        otherModule.chop(otherPoint.endsWith(".input") ? 6 : 7);
        QCOMPARE(window.selection()->current(), otherModule);
        const QModelIndex current = errors->metricsView()->currentIndex();
        QVERIFY(current.isValid());
        QCOMPARE(current.siblingAtColumn(0).data().toString(), otherPoint);
        QVERIFY(idle(window));

        // A click on a bar does the same: the departure's bar is tall (most inputs fail there).
        const std::optional<QPoint> onBar = panel->failureChart()->barPixel(1, index);
        QVERIFY(onBar);
        // The marker where departures start runs through the middle of that bar: the click must
        // reach the bar all the same.
        QCOMPARE(panel->failureChart()->plot()->itemAt(*onBar, false)->metaObject()->className(), "QCPItemStraightLine");
        QTest::mouseClick(panel->failureChart()->plot(), Qt::LeftButton, Qt::NoModifier, *onBar);
        QCOMPARE(panel->selectedPoint(), QString::fromStdString(departure));
        QCOMPARE(errors->selectedCapturePoint(), QString::fromStdString(departure));
        QCOMPARE(panel->table()->currentRow(), index);
        QVERIFY(idle(window));

        // The report: the verdict, the charts and the table.
        QTemporaryDir folder;
        const QStringList files = window.exportReport(folder.path());
        const json summary = readJson(folder.filePath("summary.json"));
        QCOMPARE(summary["device_check"]["verdict"].get<std::string>(), std::string("fail"));
        QCOMPARE(summary["device_check"]["sentence"].get<std::string>(), r.verdictSentence);
        QCOMPARE(summary["device_check"]["twins"][0]["departure_start"].get<std::string>(), departure);
        QCOMPARE(summary["device_check"]["run_under_test"].get<std::string>(), outcome->runUnderTest.toStdString());
        for (const char* file : {"check_failure_rate.png", "check_f1_interval.png", "device_check.csv"})
            QVERIFY2(QFileInfo::exists(folder.filePath(file)), file);
        QFile page(folder.filePath("index.html"));
        QVERIFY(page.open(QIODevice::ReadOnly));
        QVERIFY(QString::fromUtf8(page.readAll()).contains("Device check: <span class=\"poor\">FAIL</span>"));

        // Another mode: the result stays, marked stale, and a report leaves it out.
        window.modeBox()->setCurrentIndex(window.modeBox()->findData(QStringLiteral("dequant")));
        QVERIFY(idle(window));
        QVERIFY(panel->banner()->isStale());
        QCOMPARE(panel->verdictLabel()->text(), QStringLiteral("FAIL"));
        QTemporaryDir stale;
        window.exportReport(stale.path());
        QVERIFY(!readJson(stale.filePath("summary.json")).contains("device_check"));
        window.modeBox()->setCurrentIndex(window.modeBox()->findData(QStringLiteral("fp8")));
        QVERIFY(idle(window));

        // Another checkpoint: the check of this one goes.
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(QString::fromStdString(other_));
        QVERIFY(ready.wait(60000));
        QVERIFY(idle(window));
        QVERIFY(!panel->outcome());
        QVERIFY(!panel->hasResult());
        QVERIFY(panel->verdictLabel()->isHidden());
        QVERIFY(panel->verdictLabel()->text().isEmpty());
        QCOMPARE(panel->table()->rowCount(), 0);
        QVERIFY(panel->failureChart()->chart().series.empty());
        QVERIFY(panel->f1Chart()->chart().series.empty());
        QVERIFY2(panel->verdictDetails()->text().contains("fp8-tensor"), qPrintable(panel->verdictDetails()->text()));
    }
};

QTEST_MAIN(TestDeviceCheckGui)
#include "test_device_check_gui.moc"
