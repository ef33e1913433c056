// The workbench window driven as a user would: open a generated checkpoint, ask a question (button
// and Ctrl+Enter), fill a mask, open the charts, drill into a layer, export every format and a
// report, cancel a run, survive a broken folder; and measure the largest event-loop stall while a
// run is going.
#include <QtTest>

#include <QComboBox>
#include <QElapsedTimer>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QXmlStreamReader>

#include "charts/chart_export.h"
#include "charts/chart_view.h"
#include "engine/compute_threads.h"
#include "main_window.h"
#include "models/answers_model.h"
#include "models/diagnostics_model.h"
#include "models/layer_metrics_model.h"
#include "models/mask_predictions_model.h"
#include "models/tensor_table_model.h"
#include "panels/ask_panel.h"
#include "panels/errors_panel.h"
#include "panels/evaluate_panel.h"
#include "models/disagreements_model.h"
#include "panels/fill_mask_panel.h"
#include "panels/model_panel.h"
#include "panels/scales_panel.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::ui;
using namespace scalescope::testing;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// Share of pixels that differ from the top-left (background) pixel.
double inkedShare(const QImage& image)
{
    const QRgb background = image.pixel(0, 0);
    qint64 inked = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x)
            inked += image.pixel(x, y) != background;
    return double(inked) / double(image.width() * image.height());
}

const char* kContext = "the cat sat on the mat . the dog sat on the mat . Paris is the capital of France .";

} // namespace

class TestWorkbench : public QObject {
    Q_OBJECT
    std::string qaFloat_, qaFp8_, mlmFloat_, mlmFp8_;

    bool openAndWait(MainWindow& window, const std::string& dir)
    {
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(q(dir));
        return ready.wait(30000);
    }
    bool setReferenceAndWait(MainWindow& window, const std::string& dir)
    {
        QSignalSpy changed(window.session(), &WorkbenchSession::referenceChanged);
        window.setReference(q(dir));
        return changed.wait(30000);
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true); // settings of the test, not the user's
        QSettings().clear();
        setComputeThreads(2);
        TinyModelSpec spec;
        qaFloat_ = makeTempDir("wb-qa");
        writeTinyFloatCheckpoint(qaFloat_, spec);
        qaFp8_ = makeTempDir("wb-qa8") + "/qa-fp8";
        writeTinyFp8Checkpoint(qaFloat_, qaFp8_, {"channel", "token", "F32"});
        spec.architecture = "RobertaForMaskedLM";
        mlmFloat_ = makeTempDir("wb-mlm");
        writeTinyFloatCheckpoint(mlmFloat_, spec);
        mlmFp8_ = makeTempDir("wb-mlm8") + "/mlm-fp8";
        writeTinyFp8Checkpoint(mlmFloat_, mlmFp8_, {"tensor", "tensor", "F32"});
    }

    void opensCheckpointAndShowsModel()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, qaFp8_));
        TensorTableModel* tensors = window.modelPanel()->tensorModel();
        QCOMPARE(tensors->rowCount(), int(Checkpoint::open(qaFp8_)->tensors().tensors().size()));
        QCOMPARE(window.modelPanel()->diagnosticsModel()->counts().errors, 0);
        QVERIFY(window.windowTitle().contains("qa-fp8"));
        QVERIFY(!window.tabs()->isTabEnabled(window.tabs()->indexOf(window.fillMaskPanel())));
        // A quantized Linear's weight row carries its scale statistics.
        const int row = tensors->rowForName("roberta.encoder.layer.0.attention.self.query.weight");
        QVERIFY(row >= 0 && tensors->statisticsAt(row));
        // Clicking a diagnostic or a tree node selects the tensor; here: select by subject.
        window.modelPanel()->selectSubject("roberta.encoder.layer.1.output.dense");
        const QModelIndex current = window.modelPanel()->tensorView()->currentIndex();
        QCOMPARE(current.data(TensorTableModel::SubjectRole).toString(), QString("roberta.encoder.layer.1.output.dense.weight"));
    }

    void asksWithButtonAndShortcut()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, qaFp8_));
        QVERIFY(setReferenceAndWait(window, qaFloat_));
        window.tabs()->setCurrentWidget(window.askPanel());
        AskPanel* ask = window.askPanel();
        ask->setInputs("where is the cat ?", kContext);

        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QTest::mouseClick(ask->askButton(), Qt::LeftButton);
        QVERIFY(answered.wait(30000));
        AnswersModel* answers = ask->answersModel();
        QVERIFY(answers->rowCount() >= 1);
        // The shown run answer is a substring of the context at its offsets.
        const auto outcome = answered.takeFirst().at(0).value<std::shared_ptr<const AskOutcome>>();
        const QaAnswer& best = outcome->runAnswers.front();
        QCOMPARE(QString::fromStdString(best.text), QString(kContext).mid(best.start, best.end - best.start));
        QVERIFY(ask->resultLabel()->text().contains("FP8"));
        QVERIFY(!ask->logitsChart()->chart().series.empty());
        QVERIFY(ask->contextEdit()->extraSelections().size() >= 1);

        // The errors and scales panels were filled from the same run.
        QVERIFY(window.errorsPanel()->metricsModel()->rowCount() > 0);
        QVERIFY(!window.errorsPanel()->charts().front()->chart().series.empty());
        QVERIFY(!window.scalesPanel()->charts().at(3)->chart().series.empty()); // activation range

        // Ctrl+Enter in the question field runs again.
        ask->questionEdit()->setFocus();
        QTest::keyClick(ask->questionEdit(), Qt::Key_Return, Qt::ControlModifier);
        QVERIFY(answered.wait(30000));

        // Clicking a layer in the errors table shows its histogram and scatter.
        window.tabs()->setCurrentWidget(window.errorsPanel());
        QTableView* table = window.errorsPanel()->metricsView();
        QSignalSpy captured(window.session(), &WorkbenchSession::capturePointReady);
        const QModelIndex first = table->model()->index(0, 0);
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(first).center());
        QVERIFY(captured.wait(30000));
        const auto charts = window.errorsPanel()->charts();
        QVERIFY(!charts.at(4)->chart().series.empty()); // histogram
        QVERIFY(!charts.at(5)->chart().series.empty()); // scatter
    }

    void fillsMask()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, mlmFp8_));
        QVERIFY(setReferenceAndWait(window, mlmFloat_));
        QVERIFY(window.tabs()->isTabEnabled(window.tabs()->indexOf(window.fillMaskPanel())));
        FillMaskPanel* panel = window.fillMaskPanel();
        panel->setText("the cat <mask> on the mat");
        QSignalSpy filled(window.session(), &WorkbenchSession::masksFilled);
        QTest::mouseClick(panel->fillButton(), Qt::LeftButton);
        QVERIFY(filled.wait(30000));
        QCOMPARE(panel->predictionsModel()->rowCount(), 5);
        QVERIFY(!panel->chart()->chart().series.empty());
        QVERIFY(panel->resultLabel()->text().contains("top-1"));
    }

    void exportsEveryFormatAndReport()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, qaFp8_));
        QVERIFY(setReferenceAndWait(window, qaFloat_));
        window.askPanel()->setInputs("what is the capital of France ?", kContext);
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QTest::mouseClick(window.askPanel()->askButton(), Qt::LeftButton);
        QVERIFY(answered.wait(30000));

        QTemporaryDir dir;
        const ChartData& chart = window.errorsPanel()->charts().front()->chart();
        for (const char* format : {"png", "pdf", "svg"})
            exportChartImage(chart, dir.filePath(QString("chart.") + format), parseChartFormat(format));
        exportChartCsv(chart, dir.filePath("chart.csv").toStdString());
        QImage png(dir.filePath("chart.png"));
        QVERIFY(!png.isNull() && inkedShare(png) > 0.01);
        QFile pdf(dir.filePath("chart.pdf"));
        QVERIFY(pdf.open(QIODevice::ReadOnly) && pdf.read(4) == "%PDF");
        QFile svg(dir.filePath("chart.svg"));
        QVERIFY(svg.open(QIODevice::ReadOnly));
        QXmlStreamReader xml(&svg);
        while (!xml.atEnd())
            xml.readNext();
        QVERIFY(!xml.hasError());

        const QString reportDir = dir.filePath("report");
        const QStringList files = window.exportReport(reportDir);
        QVERIFY(files.contains(reportDir + "/summary.json"));
        QVERIFY(files.contains(reportDir + "/tensors.csv"));
        QVERIFY(files.contains(reportDir + "/layer_sqnr.png"));
        QVERIFY(files.contains(reportDir + "/layer_sqnr.svg"));
        for (const QString& file : files) {
            QVERIFY2(QFileInfo(file).size() > 0, qPrintable(file));
            if (file.endsWith(".png"))
                QVERIFY2(inkedShare(QImage(file)) > 0.005, qPrintable(file));
        }
        QFile summary(reportDir + "/summary.json");
        QVERIFY(summary.open(QIODevice::ReadOnly));
        const auto json = nlohmann::json::parse(summary.readAll().toStdString());
        QVERIFY(json["final_logits"]["sqnr_db"].is_number());
        QFile tensors(reportDir + "/tensors.csv");
        QVERIFY(tensors.open(QIODevice::ReadOnly));
        QCOMPARE(tensors.readAll().count('\n'), int(Checkpoint::open(qaFp8_)->tensors().tensors().size()) + 1);
    }

    void brokenFolderGivesErrorNotCrash()
    {
        MainWindow window;
        window.show();
        QSignalSpy errors(&window, &MainWindow::errorShown);
        const std::string broken = makeTempDir("wb-broken");
        QFile config(q(broken + "/config.json"));
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write("{ not json");
        config.close();
        window.openCheckpoint(q(broken));
        QVERIFY(errors.wait(30000));
        QVERIFY(window.lastError().contains("config.json"));
        // Still usable afterwards.
        QVERIFY(openAndWait(window, qaFp8_));
    }

    void cancelStopsRunAndStaysResponsive()
    {
        // A model large enough that a run takes long enough to measure: several windows of a
        // long context through a wider encoder.
        TinyModelSpec spec;
        spec.hiddenSize = 256;
        spec.numHeads = 4;
        spec.intermediateSize = 1024;
        spec.numLayers = 6;
        spec.maxPositionEmbeddings = 514; // 384-token windows
        const std::string floatDir = makeTempDir("wb-big");
        writeTinyFloatCheckpoint(floatDir, spec);
        const std::string fp8Dir = makeTempDir("wb-big8") + "/big-fp8";
        writeTinyFp8Checkpoint(floatDir, fp8Dir, {"channel", "token", "F32"});
        QString context;
        for (int i = 0; i < 120; ++i)
            context += "the cat sat on the mat . the dog sat on the mat . ";
        context += "Paris is the capital of France .";

        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, fp8Dir));
        QVERIFY(setReferenceAndWait(window, floatDir));
        window.askPanel()->setInputs("what is the capital of France ?", context);

        // Largest gap between 5 ms timer ticks while the run is going.
        QElapsedTimer clock;
        qint64 last = 0, worst = 0;
        QTimer ticker;
        ticker.setInterval(5);
        connect(&ticker, &QTimer::timeout, [&] {
            const qint64 now = clock.elapsed();
            worst = std::max(worst, now - last);
            last = now;
        });
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QSignalSpy failed(window.session(), &WorkbenchSession::failed);
        clock.start();
        ticker.start();
        QTest::mouseClick(window.askPanel()->askButton(), Qt::LeftButton);
        QVERIFY2(answered.wait(120000), qPrintable(failed.isEmpty() ? QString("timeout") : failed.at(0).at(1).toString()));
        const qint64 runMs = clock.elapsed();
        ticker.stop();
        qInfo("run took %lld ms; largest event-loop stall %lld ms", runMs, worst);
        QVERIFY2(worst < 100, qPrintable(QString("event loop stalled for %1 ms").arg(worst)));

        // Cancel half-way: the run reports cancellation, nothing is delivered, the window works on.
        answered.clear();
        QTest::mouseClick(window.askPanel()->askButton(), Qt::LeftButton);
        QTest::qWait(20);
        window.session()->cancel();
        QTRY_VERIFY_WITH_TIMEOUT(!window.session()->busy(), 60000);
        QCOMPARE(answered.count(), 0);
        QCOMPARE(failed.count(), 1);
        QCOMPARE(failed.at(0).at(1).toString(), QString("Cancelled."));
        QTest::mouseClick(window.askPanel()->askButton(), Qt::LeftButton);
        QVERIFY(answered.wait(120000));
    }

    void evaluatesSquadFile()
    {
        // A small SQuAD 2.0 file written here: answerable and unanswerable questions.
        const std::string squad = makeTempDir("wb-squad") + "/dev.json";
        nlohmann::json qas = nlohmann::json::array();
        const std::string context = kContext;
        const std::vector<std::pair<std::string, std::string>> questions = {
            {"where is the cat ?", "the mat"}, {"what is the capital of France ?", "Paris"},
            {"where is the dog ?", "the mat"}, {"what sat on the mat ?", "the cat"}, {"what is France ?", ""}};
        for (std::size_t i = 0; i < questions.size(); ++i) {
            nlohmann::json answers = nlohmann::json::array();
            if (!questions[i].second.empty())
                answers.push_back({{"text", questions[i].second}, {"answer_start", context.find(questions[i].second)}});
            qas.push_back({{"id", "q" + std::to_string(i)}, {"question", questions[i].first}, {"answers", answers},
                           {"is_impossible", answers.empty()}});
        }
        const nlohmann::json file = {{"version", "v2.0"},
                                     {"data", {{{"title", "t"}, {"paragraphs", {{{"context", context}, {"qas", qas}}}}}}}};
        QFile out(q(squad));
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QByteArray::fromStdString(file.dump()));
        out.close();

        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, qaFp8_));
        QVERIFY(setReferenceAndWait(window, qaFloat_));
        window.tabs()->setCurrentWidget(window.evaluatePanel());
        window.evaluatePanel()->setSquadFile(q(squad));
        QSignalSpy evaluated(window.session(), &WorkbenchSession::evaluated);
        QSignalSpy failed(window.session(), &WorkbenchSession::failed);
        QTest::mouseClick(window.evaluatePanel()->evaluateButton(), Qt::LeftButton);
        QVERIFY2(evaluated.wait(60000), qPrintable(failed.isEmpty() ? QString("timeout") : failed.at(0).at(1).toString()));
        const auto result = evaluated.takeFirst().at(0).value<std::shared_ptr<const EvaluationResult>>();
        QCOMPARE(result->examples.size(), questions.size());
        QVERIFY(result->complete);
        std::size_t differing = 0;
        for (const EvaluatedExample& e : result->examples)
            differing += e.agree ? 0 : 1;
        QCOMPARE(window.evaluatePanel()->disagreementsModel()->rowCount(), int(differing));
        QVERIFY(window.evaluatePanel()->summaryLabel()->text().contains("questions"));
        QVERIFY(!window.evaluatePanel()->charts().front()->chart().series.empty());
        // Opening a question in the Ask panel runs it there.
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        emit window.evaluatePanel()->openInAsk(q(questions[1].first), q(context));
        QVERIFY(answered.wait(30000));
        QCOMPARE(window.tabs()->currentWidget(), static_cast<QWidget*>(window.askPanel()));
        QCOMPARE(window.askPanel()->question(), q(questions[1].first));
    }

    void runsOnRunnerDeviceAgainstCpuEmulation()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, qaFp8_));
        // The CPU runner process entry of the device box, as a user picks it.
        const int runnerIndex = window.deviceBox()->findText("CPU runner process");
        QVERIFY(runnerIndex > 0);
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        QSignalSpy device(window.session(), &WorkbenchSession::deviceChanged);
        window.session()->setDevice(QString("runner:\"%1\" runner").arg(SCALESCOPE_CLI));
        QVERIFY(ready.wait(60000));
        QVERIFY(!device.isEmpty());
        QSignalSpy reference(window.session(), &WorkbenchSession::referenceChanged);
        window.session()->setCpuEmulationReference();
        QVERIFY(reference.wait(30000));
        window.askPanel()->setInputs("where is the cat ?", kContext);
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QTest::mouseClick(window.askPanel()->askButton(), Qt::LeftButton);
        QVERIFY(answered.wait(60000));
        const auto outcome = answered.takeFirst().at(0).value<std::shared_ptr<const AskOutcome>>();
        // The runner computes the same FP8 emulation bit for bit: every capture point is identical.
        for (const CapturePointMetrics& p : outcome->comparison->points)
            QVERIFY2(std::isinf(p.metrics.sqnrDb), p.name.c_str());
        QVERIFY(std::isinf(outcome->comparison->finalLogits.sqnrDb));
    }

    void settingsPersist()
    {
        {
            MainWindow window;
            window.show();
            QVERIFY(openAndWait(window, qaFp8_));
            window.tabs()->setCurrentIndex(3);
            window.close();
        }
        MainWindow again;
        QCOMPARE(again.tabs()->currentIndex(), 3);
        QVERIFY(QSettings().value("recent/checkpoints").toStringList().contains(q(qaFp8_)));
    }
};

QTEST_MAIN(TestWorkbench)
#include "test_workbench.moc"
