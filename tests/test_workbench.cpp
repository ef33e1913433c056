// The workbench window driven as a user would: open a generated checkpoint, ask a question (button
// and Ctrl+Enter), fill a mask, open the charts, drill into a layer, export every format and a
// report, cancel a run, survive a broken folder; and measure the largest event-loop stall while a
// run is going. Then what a result on screen may claim: results of another checkpoint are cleared,
// results of another mode are rerun, a report leaves out stale results, the window fits a laptop,
// a failed device switch goes back, the keyboard moves through the Ask panel, and a checkpoint that
// cannot run is opened for inspection only.
#include <QtTest>
#include <QAction>
#include <QMenuBar>
#include <QMenu>

#include <nlohmann/json.hpp>

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QLayout>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QScreen>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QXmlStreamReader>

#include <cmath>

#include "charts/chart_export.h"
#include "charts/chart_view.h"
#include "engine/compute_threads.h"
#include "main_window.h"
#include "panels/linear_inspector.h"
#include "panels/triage_panel.h"
#include <QDockWidget>
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
#include "shell_quote.h"
#include "stale_banner.h"
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

// A small SQuAD 2.0 file about kContext: answerable and unanswerable questions.
std::vector<std::pair<std::string, std::string>> kSquadQuestions = {
    {"where is the cat ?", "the mat"}, {"what is the capital of France ?", "Paris"},
    {"where is the dog ?", "the mat"}, {"what sat on the mat ?", "the cat"}, {"what is France ?", ""}};

std::string writeSquadFile()
{
    const std::string squad = makeTempDir("wb-squad") + "/dev.json";
    nlohmann::json qas = nlohmann::json::array();
    const std::string context = kContext;
    for (std::size_t i = 0; i < kSquadQuestions.size(); ++i) {
        nlohmann::json answers = nlohmann::json::array();
        if (!kSquadQuestions[i].second.empty())
            answers.push_back({{"text", kSquadQuestions[i].second}, {"answer_start", context.find(kSquadQuestions[i].second)}});
        qas.push_back({{"id", "q" + std::to_string(i)}, {"question", kSquadQuestions[i].first}, {"answers", answers},
                       {"is_impossible", answers.empty()}});
    }
    const nlohmann::json file = {{"version", "v2.0"},
                                 {"data", {{{"title", "t"}, {"paragraphs", {{{"context", context}, {"qas", qas}}}}}}}};
    QFile out(QString::fromStdString(squad));
    out.open(QIODevice::WriteOnly);
    out.write(QByteArray::fromStdString(file.dump()));
    return squad;
}

nlohmann::json readJson(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return nullptr;
    return nlohmann::json::parse(file.readAll().toStdString());
}

bool hasLeftOut(const nlohmann::json& summary, const std::string& result)
{
    for (const auto& entry : summary["left_out"])
        if (entry["result"] == result)
            return true;
    return false;
}

} // namespace

class TestWorkbench : public QObject {
    Q_OBJECT
    std::string qaFloat_, qaFp8_, qaFp8Tensor_, mlmFloat_, mlmFp8_;

    bool answerAndWait(MainWindow& window, const QString& question)
    {
        // Opening a checkpoint also loads its remembered reference: the button is off until then.
        if (!QTest::qWaitFor([&] { return !window.session()->busy(); }, 30000))
            return false;
        window.askPanel()->setInputs(question, kContext);
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QTest::mouseClick(window.askPanel()->askButton(), Qt::LeftButton);
        return answered.wait(30000);
    }

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
        qaFp8Tensor_ = makeTempDir("wb-qa8t") + "/qa-fp8-tensor";
        writeTinyFp8Checkpoint(qaFloat_, qaFp8Tensor_, {"tensor", "tensor", "F32"});
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

    // FP8 word embeddings (issue 29 item 2): the Scales panel lists the table first, by row, with
    // its scale statistics; the tensor table gives its row the same statistics.
    void fp8EmbeddingsInTheScalesPanel()
    {
        const std::string dir = makeTempDir("wb-emb") + "/mlm-fp8-embeddings";
        Fp8Edits edits;
        edits.embeddingWeights = "channel";
        writeTinyFp8Checkpoint(mlmFloat_, dir, {"channel", "token", "F32"}, {0, 5, 6, 7, 8, 9, 2}, edits);
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, dir));
        ScalesPanel* scales = window.scalesPanel();
        const QString module = QStringLiteral("roberta.embeddings.word_embeddings");
        scales->selectLinear(module);
        QCOMPARE(scales->selectedLinear(), module);
        QVERIFY2(scales->selectedSummary().contains("word embeddings, scales per row"), qPrintable(scales->selectedSummary()));
        const ChartData& ranges = scales->rangesView()->chart();
        QVERIFY(!ranges.categories.empty());
        QCOMPARE(ranges.categories.front(), std::string("emb.word"));
        const auto store = TensorStore::openDirectory(dir);
        const std::vector<float> stored = store->require(module.toStdString() + ".weight_scale").toFloat().values;
        QCOMPARE(ranges.series.at(0).y.front(), double(*std::min_element(stored.begin(), stored.end())));
        const ChartData& perRow = scales->charts().at(1)->chart();
        QCOMPARE(perRow.xLabel, std::string("row (token id)"));
        QCOMPARE(perRow.series.at(0).x.size(), stored.size());
        TensorTableModel* tensors = window.modelPanel()->tensorModel();
        const int row = tensors->rowForName(module + ".weight");
        QVERIFY(row >= 0 && tensors->statisticsAt(row) && tensors->statisticsAt(row)->embedding);
        QCOMPARE(window.modelPanel()->diagnosticsModel()->counts().errors, 0);
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

    // Issue 27 item 7: every run from the Run menu and its key, Alt+digit to a panel, and the
    // reference menus tick the choice in use (not a cancelled one).
    void keyboardRunsPanelsAndTicksTheReference()
    {
        MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.activateWindow();
        QVERIFY(openAndWait(window, qaFp8_));
        QVERIFY(QTest::qWaitFor([&] { return !window.session()->busy(); }, 30000));
        auto menuTitled = [&](const QString& title) -> QMenu* {
            for (QMenu* menu : window.menuBar()->findChildren<QMenu*>())
                if (menu->title() == title)
                    return menu;
            return nullptr;
        };
        QMenu* run = menuTitled(tr("&Run"));
        QVERIFY(run);
        QStringList runs;
        for (QAction* action : run->actions())
            if (!action->isSeparator())
                runs << action->text() + "=" + action->shortcut().toString();
        QCOMPARE(runs, QStringList({"&Answer Question=F5", "&Fill Mask=F6", "E&mbed Texts=", "&Rerank Passages=",
                                    "&Classify Text=", "&Evaluate SQuAD File=F7", "Evaluate &Task Dataset=",
                                    "&Sensitivity Sweep=F8", "&Device Check=F9", "&Cancel=Esc"}));

        // Alt+digit selects the panel of that tab, whichever widget has the focus.
        window.askPanel()->questionEdit()->setFocus();
        QTest::keyClick(&window, Qt::Key_7, Qt::AltModifier);
        QCOMPARE(window.tabs()->currentWidget(), static_cast<QWidget*>(window.evaluatePanel()));
        QTest::keyClick(&window, Qt::Key_2, Qt::AltModifier);
        QCOMPARE(window.tabs()->currentWidget(), static_cast<QWidget*>(window.modelPanel()));
        QTest::keyClick(&window, Qt::Key_1, Qt::AltModifier);
        QCOMPARE(window.tabs()->currentWidget(), static_cast<QWidget*>(window.triagePanel()));
        // Alt+9 shows and hides the Linear inspector (hidden at first on a narrow screen).
        const bool shown = window.inspectorDock()->isVisible();
        QTest::keyClick(&window, Qt::Key_9, Qt::AltModifier);
        QCOMPARE(window.inspectorDock()->isVisible(), !shown);
        QTest::keyClick(&window, Qt::Key_9, Qt::AltModifier);
        QCOMPARE(window.inspectorDock()->isVisible(), shown);

        // F5 answers from any panel: it shows Ask and presses its button.
        window.askPanel()->setInputs("where is the cat ?", kContext);
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QTest::keyClick(&window, Qt::Key_F5);
        QVERIFY(answered.wait(30000));
        QCOMPARE(window.tabs()->currentWidget(), static_cast<QWidget*>(window.askPanel()));

        // The ticked reference follows the session: dequantized weights, then the folder.
        QMenu* file = menuTitled(tr("&File"));
        QVERIFY(file);
        auto ticked = [&] {
            QStringList checked;
            for (QAction* action : file->actions())
                if (action->isCheckable() && action->isChecked())
                    checked << action->text();
            return checked;
        };
        QCOMPARE(ticked().size(), 1); // the remembered reference of this checkpoint, whichever it is
        QAction* dequant = nullptr;
        for (QAction* action : file->actions())
            if (action->text() == "Use &Dequantized Weights as Reference")
                dequant = action;
        QVERIFY(dequant);
        QSignalSpy changed(window.session(), &WorkbenchSession::referenceChanged);
        dequant->trigger();
        QVERIFY(changed.wait(30000));
        QCOMPARE(ticked(), QStringList{"Use &Dequantized Weights as Reference"});
        QVERIFY(setReferenceAndWait(window, qaFloat_));
        QCOMPARE(ticked(), QStringList{"&Reference Checkpoint..."});
    }

    void fillsMask()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, mlmFp8_));
        QVERIFY(setReferenceAndWait(window, mlmFloat_));
        QVERIFY(window.tabs()->isTabEnabled(window.tabs()->indexOf(window.fillMaskPanel())));
        // SQuAD evaluation needs a QA head: the button is off before any click, and says why.
        QVERIFY(!window.evaluatePanel()->evaluateButton()->isEnabled());
        QVERIFY(window.evaluatePanel()->evaluateButton()->toolTip().contains("masked language model"));
        FillMaskPanel* panel = window.fillMaskPanel();
        panel->setText("the cat <mask> on the mat");
        QSignalSpy filled(window.session(), &WorkbenchSession::masksFilled);
        QTest::mouseClick(panel->fillButton(), Qt::LeftButton);
        QVERIFY(filled.wait(30000));
        QCOMPARE(panel->predictionsModel()->rowCount(), 5);
        QVERIFY(!panel->chart()->chart().series.empty());
        QVERIFY(panel->resultLabel()->text().contains("top-1"));
    }

    // BERT in the panels: Fill Mask takes [MASK] (a sentence written with RoBERTa's mask token is
    // rewritten), Ask labels the window's [CLS]/[SEP], the Model panel shows bert.* tensors, and no
    // text on screen names RoBERTa or its mask token.
    void bertCheckpointsInThePanels()
    {
        TinyModelSpec spec;
        spec.architecture = "BertForMaskedLM";
        const std::string mlmFloat = makeTempDir("wb-bert-mlm");
        writeTinyFloatCheckpoint(mlmFloat, spec);
        const std::string mlmFp8 = makeTempDir("wb-bert-mlm8") + "/bert-mlm-fp8";
        writeTinyFp8Checkpoint(mlmFloat, mlmFp8, {"channel", "token", "F32"});
        spec.architecture = "BertForQuestionAnswering";
        const std::string qaFloat = makeTempDir("wb-bert-qa");
        writeTinyFloatCheckpoint(qaFloat, spec);
        const std::string qaFp8 = makeTempDir("wb-bert-qa8") + "/bert-qa-fp8";
        writeTinyFp8Checkpoint(qaFloat, qaFp8, {"tensor", "tensor", "F32"});

        MainWindow window;
        window.show();
        FillMaskPanel* panel = window.fillMaskPanel();
        panel->setText("the cat <mask> on the mat");
        QVERIFY(openAndWait(window, mlmFp8));
        QVERIFY(setReferenceAndWait(window, mlmFloat));
        QCOMPARE(panel->maskToken(), QString("[MASK]"));
        QCOMPARE(panel->text(), QString("the cat [MASK] on the mat"));
        QSignalSpy filled(window.session(), &WorkbenchSession::masksFilled);
        QTest::mouseClick(panel->fillButton(), Qt::LeftButton);
        QVERIFY(filled.wait(30000));
        QCOMPARE(panel->predictionsModel()->rowCount(), 5);
        panel->setText("no mask here");
        QTest::mouseClick(panel->fillButton(), Qt::LeftButton);
        QCOMPARE(panel->resultLabel()->text(), QString("The text needs at least one [MASK]."));
        const int row = window.modelPanel()->tensorModel()->rowForName("cls.predictions.transform.dense.weight");
        QVERIFY(row >= 0);

        QVERIFY(openAndWait(window, qaFp8));
        QVERIFY(setReferenceAndWait(window, qaFloat));
        QVERIFY(answerAndWait(window, "where is the cat ?"));
        const std::vector<std::string>& tokens = window.askPanel()->logitsChart()->chart().categories;
        QVERIFY(!tokens.empty());
        QCOMPARE(tokens.front(), std::string("[CLS]"));
        QCOMPARE(tokens.back(), std::string("[SEP]"));
        QCOMPARE(std::count(tokens.begin(), tokens.end(), std::string("[SEP]")), std::ptrdiff_t(2));
        const int query = window.modelPanel()->tensorModel()->rowForName("bert.encoder.layer.0.attention.self.query.weight");
        QVERIFY(query >= 0 && window.modelPanel()->tensorModel()->statisticsAt(query));
        for (const QLabel* label : window.findChildren<QLabel*>())
            QVERIFY2(!label->text().contains("RoBERTa") && !label->text().contains("<mask>"), qPrintable(label->text()));
        for (const QLineEdit* edit : window.findChildren<QLineEdit*>())
            QVERIFY2(!edit->placeholderText().contains("<mask>"), qPrintable(edit->placeholderText()));
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

    // Issue 20 item 3 in the GUI: hostile nesting in config.json or in a re: pattern gives a
    // sentence, never a stack overflow, and the window goes on working.
    void hostileNestingGivesErrorNotCrash()
    {
        MainWindow window;
        window.show();
        QSignalSpy errors(&window, &MainWindow::errorShown);
        const std::string deep = makeTempDir("wb-deep");
        QFile config(q(deep + "/config.json"));
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write(QByteArray(100000, '[') + QByteArray(100000, ']'));
        config.close();
        window.openCheckpoint(q(deep));
        QVERIFY(errors.wait(30000));
        QVERIFY2(window.lastError().contains("nests"), qPrintable(window.lastError()));

        // A checkpoint whose ignore list holds a pattern of 20,000 nested groups opens, and the
        // pattern is reported instead of compiled.
        const std::string patterned = makeTempDir("wb-pattern") + "/ckpt";
        QVERIFY(QDir().mkpath(q(patterned)));
        for (const QString& file : QDir(q(qaFp8_)).entryList(QDir::Files))
            QVERIFY(QFile::copy(q(qaFp8_) + "/" + file, q(patterned) + "/" + file));
        QFile configFile(q(patterned + "/config.json"));
        QVERIFY(configFile.open(QIODevice::ReadOnly));
        nlohmann::json json = nlohmann::json::parse(configFile.readAll().toStdString());
        configFile.close();
        json["quantization_config"]["ignore"].push_back("re:" + std::string(20000, '(') + "x" + std::string(20000, ')'));
        QVERIFY(configFile.open(QIODevice::WriteOnly | QIODevice::Truncate));
        configFile.write(QByteArray::fromStdString(json.dump()));
        configFile.close();
        QVERIFY(openAndWait(window, patterned));
        QVERIFY(openAndWait(window, qaFp8_));
    }

    // Issue 20 item 4 in the GUI: model.safetensors rewritten in place while the workbench has it
    // mapped gives a sentence saying the file changed, not a SIGBUS.
    void checkpointRewrittenInPlaceIsReported()
    {
        const std::string copy = makeTempDir("wb-rewrite") + "/ckpt";
        QVERIFY(QDir().mkpath(q(copy)));
        for (const QString& file : QDir(q(qaFp8_)).entryList(QDir::Files))
            QVERIFY(QFile::copy(q(qaFp8_) + "/" + file, q(copy) + "/" + file));
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, copy));
        QSignalSpy errors(&window, &MainWindow::errorShown);
        // Truncate in place (same inode): the mapping's tail no longer has a file behind it.
        QFile weights(q(copy + "/model.safetensors"));
        QVERIFY(weights.open(QIODevice::ReadWrite));
        QVERIFY(weights.resize(weights.size() / 2));
        weights.close();
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QVERIFY(QTest::qWaitFor([&] { return !window.session()->busy(); }, 30000));
        window.askPanel()->setInputs(QStringLiteral("Where?"), kContext);
        QTest::mouseClick(window.askPanel()->askButton(), Qt::LeftButton);
        QVERIFY2(errors.wait(30000), qPrintable(QString("answered %1 times").arg(answered.count())));
        QVERIFY2(window.lastError().contains("changed on disk"), qPrintable(window.lastError()));
        QVERIFY(openAndWait(window, qaFp8_)); // still working
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
        // Work on the GUI thread would stall it for a whole forward, a large part of the run; the
        // bound is relative so that a loaded machine's scheduling noise (100+ ms seen) is not a failure.
        QVERIFY2(worst * 5 < runMs, qPrintable(QString("event loop stalled for %1 ms of a %2 ms run").arg(worst).arg(runMs)));

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
        const std::string squad = writeSquadFile();
        const auto& questions = kSquadQuestions;
        const std::string context = kContext;

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
        // SQuAD 2.0: the panel's null threshold (0) is the rule used, and the null margins are
        // shown per question; headers are as wide as their text (or the cap of long columns).
        QVERIFY(result->squadV2);
        QCOMPARE(result->qa.nullThreshold.value_or(-1.0f), 0.0f);
        QCOMPARE(window.evaluatePanel()->nullThresholdBox()->value(), 0.0);
        QTableView* table = window.evaluatePanel()->disagreementsView();
        QVERIFY(!table->isColumnHidden(DisagreementsModel::RunNullMarginColumn));
        for (int column = 0; column < DisagreementsModel::ColumnCount; ++column)
            if (column != DisagreementsModel::QuestionColumn)
                QVERIFY2(
                    table->columnWidth(column) >= std::min(table->horizontalHeader()->sectionSizeHint(column), 260),
                    qPrintable(table->model()->headerData(column, Qt::Horizontal).toString()));
        for (const EvaluatedExample& e : result->examples)
            QVERIFY(!std::isnan(e.runAnswer.nullMargin) && !std::isnan(e.referenceAnswer.nullMargin));
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

    // Item 1 and 2 of issue 14: open A, answer, drill into a point, open B: nothing of A is left on
    // screen or in the report, which is stamped with B.
    void openingAnotherCheckpointClearsResults()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, qaFp8_));
        QVERIFY(setReferenceAndWait(window, qaFloat_));
        QVERIFY(answerAndWait(window, "where is the cat ?"));
        QSignalSpy captured(window.session(), &WorkbenchSession::capturePointReady);
        emit window.errorsPanel()->capturePointRequested("roberta.encoder.layer.1.output");
        QVERIFY(captured.wait(30000));
        QVERIFY(!window.errorsPanel()->charts().at(4)->chart().series.empty());
        QVERIFY(window.askPanel()->banner()->hasResult());
        QCOMPARE(window.askPanel()->banner()->resultStamp().checkpoint, q(qaFp8_));

        QVERIFY(openAndWait(window, qaFp8Tensor_));
        QCOMPARE(window.askPanel()->answersModel()->rowCount(), 0);
        QVERIFY(window.askPanel()->logitsChart()->chart().series.empty());
        QVERIFY(window.askPanel()->contextEdit()->extraSelections().isEmpty());
        QVERIFY(window.askPanel()->resultLabel()->text().contains("cleared"));
        QCOMPARE(window.errorsPanel()->metricsModel()->rowCount(), 0);
        for (ChartView* chart : window.errorsPanel()->charts())
            QVERIFY(chart->chart().series.empty());
        QVERIFY(!window.errorsPanel()->comparison());
        const auto scaleCharts = window.scalesPanel()->charts();
        QVERIFY(scaleCharts.at(3)->chart().series.empty()); // activation range of A
        QVERIFY(scaleCharts.at(4)->chart().series.empty());
        QVERIFY(!scaleCharts.at(0)->chart().series.empty()); // B's own weight scales
        // The inputs stay: the user may want to ask B the same question.
        QCOMPARE(window.askPanel()->question(), QString("where is the cat ?"));

        QTemporaryDir dir;
        const QStringList files = window.exportReport(dir.path());
        const auto summary = readJson(dir.filePath("summary.json"));
        QCOMPARE(QString::fromStdString(summary["checkpoint"]), q(qaFp8Tensor_));
        QVERIFY(!summary.contains("final_logits"));
        QVERIFY(!summary.contains("question"));
        QVERIFY(!files.contains(dir.filePath("answers.csv")));
        QVERIFY(!files.contains(dir.filePath("layer_metrics.csv")));
        QVERIFY(!files.contains(dir.filePath("layer_sqnr.png")));
        QVERIFY(files.contains(dir.filePath("tensors.csv")));
        QFile index(dir.filePath("index.html"));
        QVERIFY(index.open(QIODevice::ReadOnly));
        const QString page = QString::fromUtf8(index.readAll());
        QVERIFY(page.contains(q(qaFp8Tensor_).toHtmlEscaped()));
        QVERIFY(page.contains("<img src=\""));
        QVERIFY(!page.contains(q(qaFp8_) + "<")); // A is named nowhere

        // Answering B fills the panels again, stamped with B.
        QVERIFY(answerAndWait(window, "where is the cat ?"));
        QCOMPARE(window.errorsPanel()->banner()->resultStamp().checkpoint, q(qaFp8Tensor_));
        QVERIFY(!window.errorsPanel()->banner()->isStale());
    }

    // Item 5 (and 2): another mode reruns the last question in that mode; the drill-down of the
    // previous run goes; every label names the mode.
    void changingModeRerunsAndLabelsTheMode()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, qaFp8_));
        QVERIFY(setReferenceAndWait(window, qaFloat_));
        window.modeBox()->setCurrentIndex(0);
        QVERIFY(answerAndWait(window, "what is the capital of France ?"));
        QSignalSpy captured(window.session(), &WorkbenchSession::capturePointReady);
        emit window.errorsPanel()->capturePointRequested("roberta.encoder.layer.0.output");
        QVERIFY(captured.wait(30000));
        QVERIFY(!window.errorsPanel()->charts().at(5)->chart().series.empty());
        const double fp8Sqnr = window.errorsPanel()->comparison()->finalLogits.sqnrDb;

        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        window.modeBox()->setCurrentIndex(1); // Dequant
        // Stale until the rerun arrives, then current again.
        QVERIFY(window.askPanel()->banner()->isStale());
        QVERIFY(window.askPanel()->banner()->label()->text().contains("mode"));
        QVERIFY(answered.wait(30000));
        const auto outcome = answered.takeFirst().at(0).value<std::shared_ptr<const AskOutcome>>();
        QCOMPARE(outcome->stamp.run.mode, RunMode::Dequant);
        QCOMPARE(outcome->question, QString("what is the capital of France ?"));
        QVERIFY(!window.askPanel()->banner()->isStale());
        QVERIFY(!window.errorsPanel()->banner()->isStale());
        QCOMPARE(window.askPanel()->answersModel()->headerData(AnswersModel::RunAnswerColumn, Qt::Horizontal).toString(),
                 QString("Dequant answer"));
        QVERIFY(window.askPanel()->resultLabel()->text().contains("Dequant"));
        QVERIFY(!window.askPanel()->resultLabel()->text().contains("FP8"));
        // The histogram and scatter were of the FP8 run: gone.
        QVERIFY(window.errorsPanel()->charts().at(4)->chart().series.empty());
        QVERIFY(window.errorsPanel()->charts().at(5)->chart().series.empty());
        // Dequant leaves the activations float: its error is the weights' alone, a different number.
        QVERIFY(window.errorsPanel()->comparison()->finalLogits.sqnrDb != fp8Sqnr);

        // The FP16 twin: reruns, says so everywhere, and its headroom chart has a bar per checked module.
        window.modeBox()->setCurrentIndex(2);
        QCOMPARE(window.modeBox()->currentText(), QString("FP16 twin (AIU)"));
        QVERIFY(answered.wait(30000));
        const auto twin = answered.takeFirst().at(0).value<std::shared_ptr<const AskOutcome>>();
        QCOMPARE(twin->stamp.run.mode, RunMode::Fp16);
        QCOMPARE(window.askPanel()->answersModel()->headerData(AnswersModel::RunAnswerColumn, Qt::Horizontal).toString(),
                 QString("FP16 twin answer"));
        const ChartData headroom = window.errorsPanel()->charts().at(6)->chart();
        QCOMPARE(headroom.id, std::string("fp16_headroom"));
        QVERIFY2(headroom.title.find("FP16 twin run") != std::string::npos, headroom.title.c_str());
        const std::size_t modules = window.errorsPanel()->comparison()->outputRanges.size();
        QCOMPARE(modules, Checkpoint::open(qaFp8_)->layout().outputModules().size());
        QCOMPARE(headroom.categories.size(), modules);
        QCOMPARE(headroom.series.at(0).y.size() + headroom.series.at(1).y.size(), modules);
        QVERIFY(headroom.series.at(1).y.empty()); // nothing overflows in this model
        const double twinSqnr = window.errorsPanel()->comparison()->finalLogits.sqnrDb;
        QVERIFY2(std::isfinite(twinSqnr) && std::fabs(twinSqnr - fp8Sqnr) < 10,
                 qPrintable(QString("twin %1 dB, fp8 %2 dB").arg(twinSqnr).arg(fp8Sqnr)));
    }

    // The DL16 twin from the Mode box: the last question reruns as fp8+dl16 (and fp16+dl16), every
    // label says DL16, and the report's summary names the accumulation.
    void dl16ModeLabelsTheRunAndTheReport()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, qaFp8_));
        QVERIFY(setReferenceAndWait(window, qaFloat_));
        window.modeBox()->setCurrentIndex(0);
        QVERIFY(answerAndWait(window, "what is the capital of France ?"));
        const double fp8Sqnr = window.errorsPanel()->comparison()->finalLogits.sqnrDb;

        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        window.modeBox()->setCurrentIndex(3);
        QCOMPARE(window.modeBox()->currentText(), QString("FP8, DL16 accumulation"));
        QVERIFY(answered.wait(30000));
        const auto outcome = answered.takeFirst().at(0).value<std::shared_ptr<const AskOutcome>>();
        QCOMPARE(outcome->stamp.run.mode, RunMode::Fp8);
        QVERIFY(outcome->stamp.run.accumulation == Accumulation::Dl16);
        QCOMPARE(outcome->comparison->runLabel, std::string("fp8+dl16"));
        QCOMPARE(window.askPanel()->answersModel()->headerData(AnswersModel::RunAnswerColumn, Qt::Horizontal).toString(),
                 QString("FP8 + DL16 answer"));
        QVERIFY(window.askPanel()->resultLabel()->text().contains("DL16"));
        QVERIFY(window.errorsPanel()->comparison()->finalLogits.sqnrDb != fp8Sqnr);
        QTemporaryDir report;
        window.exportReport(report.path());
        const auto summary = readJson(report.filePath("summary.json"));
        QCOMPARE(summary["mode"].get<std::string>(), std::string("fp8"));
        QCOMPARE(summary["accumulation"].get<std::string>(), std::string("dl16"));

        window.modeBox()->setCurrentIndex(4);
        QVERIFY(answered.wait(30000));
        const auto twin = answered.takeFirst().at(0).value<std::shared_ptr<const AskOutcome>>();
        QCOMPARE(twin->stamp.run.mode, RunMode::Fp16);
        QVERIFY(twin->stamp.run.accumulation == Accumulation::Dl16);
        QCOMPARE(twin->comparison->runLabel, std::string("fp16+dl16"));
        window.modeBox()->setCurrentIndex(0); // the Mode box is remembered across windows
        QTRY_VERIFY_WITH_TIMEOUT(!window.session()->busy(), 30000);
    }

    // Item 1: a report refuses stale results and says which ones it left out.
    void reportLeavesOutStaleResults()
    {
        const std::string squad = writeSquadFile();
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, qaFp8_));
        QVERIFY(setReferenceAndWait(window, qaFloat_));
        window.modeBox()->setCurrentIndex(0); // the Mode box is remembered across windows
        window.tabs()->setCurrentWidget(window.evaluatePanel());
        window.evaluatePanel()->setSquadFile(q(squad));
        QSignalSpy evaluated(window.session(), &WorkbenchSession::evaluated);
        QTest::mouseClick(window.evaluatePanel()->evaluateButton(), Qt::LeftButton);
        QVERIFY(evaluated.wait(60000));
        QVERIFY(!window.evaluatePanel()->charts().front()->chart().series.empty());
        QCOMPARE(evaluated.at(0).at(1).value<RunStamp>().run.mode, RunMode::Fp8);

        QTemporaryDir before;
        QVERIFY(window.exportReport(before.path()).contains(before.filePath("evaluation_scores.png")));

        // Evaluations are not rerun on their own (they can take hours): the result stays, marked.
        window.modeBox()->setCurrentIndex(1);
        QTRY_VERIFY_WITH_TIMEOUT(!window.session()->busy(), 30000);
        QVERIFY(window.evaluatePanel()->banner()->isStale());
        QVERIFY(window.evaluatePanel()->banner()->rerunButton()->isVisibleTo(&window));
        QTemporaryDir after;
        const QStringList files = window.exportReport(after.path());
        const auto summary = readJson(after.filePath("summary.json"));
        QCOMPARE(summary["mode"].get<std::string>(), std::string("dequant"));
        QVERIFY(hasLeftOut(summary, "evaluation"));
        const std::string chartId = window.evaluatePanel()->charts().front()->chart().id;
        for (const QString& file : files)
            QVERIFY2(!file.contains(QString::fromStdString(chartId)) && !file.endsWith("disagreements.csv"), qPrintable(file));
        for (const auto& id : summary["charts"])
            QVERIFY(id.get<std::string>() != chartId);
        QVERIFY(summary.contains("app_version") && summary.contains("date") && summary.contains("device"));

        // Rerun from the banner brings it back as current.
        evaluated.clear();
        QTest::mouseClick(window.evaluatePanel()->banner()->rerunButton(), Qt::LeftButton);
        QVERIFY(evaluated.wait(60000));
        QVERIFY(!window.evaluatePanel()->banner()->isStale());
        QCOMPARE(evaluated.at(0).at(1).value<RunStamp>().run.mode, RunMode::Dequant);
    }

    // Item 3: every panel usable at 1024x640, with and without results on screen.
    void fitsALaptopScreen()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, qaFp8_));
        QVERIFY(setReferenceAndWait(window, qaFloat_));
        QVERIFY(answerAndWait(window, "where is the cat ?"));
        for (int tab = 0; tab < window.tabs()->count(); ++tab) {
            window.tabs()->setCurrentIndex(tab);
            const QSize hint = window.minimumSizeHint().expandedTo(window.minimumSize());
            QVERIFY2(hint.width() <= 1024 && hint.height() <= 640,
                     qPrintable(QString("tab %1 needs %2x%3").arg(window.tabs()->tabText(tab)).arg(hint.width()).arg(hint.height())));
        }
        window.resize(1024, 640);
        QTest::qWait(50);
        QVERIFY2(window.width() <= 1024 && window.height() <= 640,
                 qPrintable(QString("%1x%2, minimum %3x%4, layout minimum %5x%6")
                                .arg(window.width()).arg(window.height())
                                .arg(window.minimumWidth()).arg(window.minimumHeight())
                                .arg(window.layout()->minimumSize().width()).arg(window.layout()->minimumSize().height())));
        // The status bar is on screen, inside the window.
        QVERIFY(window.statusBar()->geometry().bottom() <= window.height());
    }

    // Item 4: a device that cannot start leaves the window on the device it had, and says so.
    void failedDeviceSwitchReverts()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, qaFp8_));
        QSignalSpy switchFailed(window.session(), &WorkbenchSession::deviceSwitchFailed);
        QSignalSpy errors(&window, &MainWindow::errorShown);
        // The box's CPU runner entry names scalescope-cli next to this test program, where there is
        // none: the runner cannot start, as a broken install or an unreachable AIU host would.
        QVERIFY(!QFileInfo::exists(QCoreApplication::applicationDirPath() + "/scalescope-cli"));
        window.deviceBox()->setCurrentIndex(1);
        emit window.deviceBox()->activated(1);
        QVERIFY(switchFailed.wait(60000));
        QTRY_VERIFY_WITH_TIMEOUT(!window.session()->busy(), 30000);
        QCOMPARE(window.session()->device(), QString("cpu"));
        QCOMPARE(window.deviceBox()->currentIndex(), 0);
        QVERIFY(!errors.isEmpty());
        QVERIFY(window.lastError().contains("as before"));
        // Runs work on the device it went back to.
        QVERIFY(answerAndWait(window, "where is the cat ?"));
        QCOMPARE(window.askPanel()->banner()->resultStamp().run.device, std::string("cpu"));
    }

    // Item 6: Tab moves through the Ask panel without editing the passage; edits drop highlights.
    void keyboardAndContextEdits()
    {
        MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QVERIFY(openAndWait(window, qaFp8_));
        window.tabs()->setCurrentWidget(window.askPanel());
        AskPanel* ask = window.askPanel();
        QVERIFY(answerAndWait(window, "where is the cat ?"));
        QVERIFY(!ask->contextEdit()->extraSelections().isEmpty());

        ask->contextEdit()->setFocus();
        QTest::keyClick(ask->contextEdit(), Qt::Key_Tab);
        QCOMPARE(ask->context(), QString(kContext)); // no tab character went in
        QVERIFY(!ask->contextEdit()->hasFocus());
        // Answer is reachable with Tab from the options before it.
        QWidget* w = ask->contextEdit();
        bool reachesAnswer = false;
        for (int i = 0; i < 12 && !reachesAnswer; ++i) {
            w = w->nextInFocusChain();
            reachesAnswer = w == ask->askButton();
        }
        QVERIFY(reachesAnswer);
        QVERIFY(!ask->answersView()->tabKeyNavigation());

        ask->contextEdit()->setFocus();
        QTest::keyClicks(ask->contextEdit(), "x");
        QVERIFY(ask->contextEdit()->extraSelections().isEmpty());
        QVERIFY(ask->resultLabel()->text().contains("edited"));
    }

    // Item 8: a checkpoint the engine refuses opens for inspection, with the reason on every run button.
    void unrunnableCheckpointOpensForInspection()
    {
        const std::string dir = makeTempDir("wb-int") + "/qa-int";
        QVERIFY(QDir().mkpath(q(dir)));
        for (const QString& name : QDir(q(qaFp8_)).entryList(QDir::Files))
            QVERIFY(QFile::copy(q(qaFp8_) + "/" + name, q(dir) + "/" + name));
        nlohmann::json config = readJson(q(dir + "/config.json"));
        config["quantization_config"]["config_groups"]["group_0"]["weights"]["num_bits"] = 4;
        config["quantization_config"]["config_groups"]["group_0"]["weights"]["type"] = "int";
        QFile::remove(q(dir + "/config.json"));
        QFile out(q(dir + "/config.json"));
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QByteArray::fromStdString(config.dump()));
        out.close();

        MainWindow window;
        window.show();
        QSignalSpy errors(&window, &MainWindow::errorShown);
        QVERIFY(openAndWait(window, dir));
        QVERIFY(!errors.isEmpty());
        QVERIFY2(window.lastError().startsWith("Opened for inspection only: "), qPrintable(window.lastError()));
        QVERIFY(window.modelPanel()->tensorModel()->rowCount() > 0); // inspectable
        QVERIFY(!window.askPanel()->askButton()->isEnabled());
        QVERIFY(window.askPanel()->askButton()->toolTip().startsWith("Cannot answer: "));
        QVERIFY(!window.evaluatePanel()->evaluateButton()->isEnabled());
        QVERIFY(window.evaluatePanel()->evaluateButton()->toolTip().startsWith("Cannot evaluate: "));
        // And back to a runnable one, the buttons come back.
        QVERIFY(openAndWait(window, qaFp8_));
        QTRY_VERIFY_WITH_TIMEOUT(!window.session()->busy(), 30000);
        QVERIFY(window.askPanel()->askButton()->isEnabled());
    }

    // Issue 20 item 10: the CPU runner's path reaches the shell as one literal word.
    void runnerPathIsQuotedForTheShell()
    {
        const QStringList paths = {"/opt/scale scope/bin", "/tmp/it's", "/tmp/$(touch pwned)", "/tmp/`id`",
                                   "/tmp/a\"b\\c", "/tmp/$HOME"};
        for (const QString& path : paths) {
            QProcess shell;
            shell.start("/bin/sh", {"-c", "printf %s " + shellQuote(path)});
            QVERIFY(shell.waitForFinished(10000));
            QCOMPARE(QString::fromUtf8(shell.readAllStandardOutput()), path);
        }
        QCOMPARE(localRunnerDevice("/opt/it's"), QString("runner:'/opt/it'\\''s/scalescope-cli' runner"));
        MainWindow window;
        QCOMPARE(window.deviceBox()->itemData(1).toString(),
                 localRunnerDevice(QCoreApplication::applicationDirPath()));
    }

    void settingsPersist()
    {
        {
            MainWindow window;
            window.show();
            QVERIFY(openAndWait(window, qaFp8_));
            window.tabs()->setCurrentWidget(window.scalesPanel());
            // Tall enough for the Scales charts' minimum heights (below them the panel scrolls).
            window.resize(1400, 1500);
            QTest::qWait(50);
            window.findChild<QSplitter*>("scalesSplitter")->setSizes({300, 400, 500});
            window.close();
        }
        MainWindow again;
        again.show();
        QVERIFY(QTest::qWaitForWindowExposed(&again));
        QCOMPARE(again.tabs()->currentWidget(), static_cast<QWidget*>(again.scalesPanel()));
        // Splitter positions come back (proportions: the new window lays out at its own size).
        const QList<int> sizes = again.findChild<QSplitter*>("scalesSplitter")->sizes();
        QCOMPARE(sizes.size(), 3);
        QVERIFY2(sizes[0] < sizes[1] && sizes[1] < sizes[2], qPrintable(QString("%1 %2 %3").arg(sizes[0]).arg(sizes[1]).arg(sizes[2])));
        QVERIFY(QSettings().value("recent/checkpoints").toStringList().contains(q(qaFp8_)));
    }
};

QTEST_MAIN(TestWorkbench)
#include "test_workbench.moc"
