// The Calibration view (issue 32 item 2) driven as a user would on the demo's float QA model: the
// fields start with the demo corpus split, Run fills the convergence and clip-share charts and the
// sentence, "Write Checkpoint with n = N" writes a checkpoint whose input scales are the lab's
// scales after N samples, and opening another checkpoint (an FP8 one, which the lab refuses)
// clears the view.
#include <QtTest>

#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QTabWidget>

#include "charts/chart_view.h"
#include "demo_catalog.h"
#include "engine/compute_threads.h"
#include "io/safetensors.h"
#include "main_window.h"
#include "panels/calibration_panel.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::ui;
using namespace scalescope::testing;

class TestCalibrationGui : public QObject {
    Q_OBJECT

    bool idle(MainWindow& window) { return QTest::qWaitFor([&] { return !window.session()->busy(); }, 300000); }

    bool open(MainWindow& window, const QString& checkpoint)
    {
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(checkpoint);
        return ready.wait(60000) && idle(window);
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
        setComputeThreads(2);
    }

    void labRunsWritesAndClears()
    {
        const QString demo = QStringLiteral(SCALESCOPE_DEMO_DIR);
        MainWindow window;
        window.resize(1366, 768);
        window.setDemoCatalog(loadDemoCatalog(demo));
        window.show();
        QVERIFY(open(window, demo + "/qa-float"));
        CalibrationPanel* panel = window.calibrationPanel();
        window.tabs()->setCurrentWidget(panel);
        QCOMPARE(window.tabs()->tabText(window.tabs()->indexOf(panel)), QStringLiteral("Calibration"));
        QCOMPARE(panel->findChild<QLineEdit*>("calibrationFile")->text(), demo + "/corpus/calibration.txt");
        QCOMPARE(panel->findChild<QLineEdit*>("evaluationFile")->text(), demo + "/corpus/evaluation.txt");
        QVERIFY(panel->runButton()->isEnabled());
        QVERIFY(!panel->writeButton()->isEnabled());
        QVERIFY(panel->sentence().isEmpty());
        // The whole split takes minutes (22 quantized models over 132 texts); the first 24 and 12
        // lines of it show the same in seconds.
        const QString folder = QString::fromStdString(makeTempDir("calibration-gui-texts"));
        auto firstLines = [&](const QString& from, const QString& to, int count) {
            QFile in(from), out(to);
            QVERIFY(in.open(QIODevice::ReadOnly) && out.open(QIODevice::WriteOnly));
            for (int i = 0; i < count; ++i)
                out.write(in.readLine());
        };
        firstLines(demo + "/corpus/calibration.txt", folder + "/calibration.txt", 24);
        firstLines(demo + "/corpus/evaluation.txt", folder + "/evaluation.txt", 12);
        panel->setFiles(folder + "/calibration.txt", folder + "/evaluation.txt");

        QSignalSpy finished(window.session(), &WorkbenchSession::calibrationLabFinished);
        QTest::mouseClick(panel->runButton(), Qt::LeftButton);
        QVERIFY(finished.wait(300000));
        QVERIFY(idle(window));
        const CalibrationLabResult* lab = panel->result();
        QVERIFY(lab);
        QCOMPARE(lab->calibrationSamples, int64_t(24));
        QCOMPARE(lab->evalSamples, int64_t(12));
        QCOMPARE(lab->sizes, (std::vector<int64_t>{8, 16, 24}));
        QVERIFY(!panel->convergenceChart()->chart().series.empty());
        QVERIFY(!panel->clipChart()->chart().series.empty());
        QCOMPARE(panel->convergenceChart()->chart().categories.size(), lab->sizes.size());
        QCOMPARE(panel->sentence(), QString::fromStdString(lab->sentence));
        QVERIFY(panel->sentence().contains(QString::number(lab->suggestedSize)));
        QVERIFY(panel->writeButton()->isEnabled());
        QVERIFY(panel->writeButton()->text().contains(QStringLiteral("n = %1").arg(lab->suggestedSize)));

        // The button writes the checkpoint of the suggested size: order 0's scales after n.
        const QString dst = QString::fromStdString(makeTempDir("calibration-gui")) + "/written";
        panel->destinationEdit()->setText(dst);
        QSignalSpy written(window.session(), &WorkbenchSession::calibratedWritten);
        QTest::mouseClick(panel->writeButton(), Qt::LeftButton);
        QVERIFY(written.wait(120000));
        QVERIFY(idle(window));
        std::size_t s = 0;
        while (lab->sizes[s] != lab->suggestedSize)
            ++s;
        auto store = TensorStore::openFile(dst.toStdString() + "/model.safetensors");
        for (const CalibrationLinear& linear : lab->linears)
            QCOMPARE(store->require(linear.module + ".input_scale").toFloat().values.at(0), linear.bySize[s].scales[0]);

        // Another checkpoint: the lab of the float model goes, and an FP8 one cannot be calibrated.
        QVERIFY(open(window, demo + "/qa-fp8"));
        QVERIFY(!panel->result());
        QVERIFY(panel->convergenceChart()->chart().series.empty());
        QVERIFY(panel->clipChart()->chart().series.empty());
        QVERIFY(panel->sentence().isEmpty());
        QVERIFY(!panel->runButton()->isEnabled());
        QVERIFY(!panel->writeButton()->isEnabled());
    }
};

QTEST_MAIN(TestCalibrationGui)
#include "test_calibration_gui.moc"
