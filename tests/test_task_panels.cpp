// The workbench's sequence-task panels driven as a user would, in the order a user of these models
// meets them: open a sentence embedder and embed texts, open a cross-encoder reranker and rerank
// passages, open a classifier and classify a text, then export the report. Every number on screen
// is checked against the core task recomputed here on the same checkpoints; only the panels the
// head serves are on; nothing of a previous checkpoint's task stays on screen or in the report; and
// Errors, Scales, Triage, a capture drill-down and a sensitivity sweep work on these checkpoints.
#include <QtTest>

#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTabWidget>

#include <nlohmann/json.hpp>

#include <cmath>

#include "charts/chart_view.h"
#include "demo_catalog.h"
#include "engine/compute_threads.h"
#include "engine/encoder_model.h"
#include "main_window.h"
#include "panels/ask_panel.h"
#include "panels/classify_panel.h"
#include "panels/embed_panel.h"
#include "panels/errors_panel.h"
#include "panels/evaluate_panel.h"
#include "panels/fill_mask_panel.h"
#include "panels/rerank_panel.h"
#include "panels/scales_panel.h"
#include "panels/sensitivity_panel.h"
#include "panels/task_evaluate_panel.h"
#include "panels/task_panel_parts.h"
#include "panels/triage_panel.h"
#include "stale_banner.h"
#include "support/fixtures.h"
#include "analysis/task_metrics.h"
#include "tasks/classify.h"
#include "tasks/embed.h"
#include "tasks/rerank.h"
#include "tasks/task_datasets.h"
#include "tasks/task_evaluation.h"

using namespace scalescope;
using namespace scalescope::ui;
using namespace scalescope::testing;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

double numberAt(const QStandardItemModel* model, int row, int column)
{
    return model->index(row, column).data(kNumberRole).toDouble();
}

nlohmann::json readJson(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return nullptr;
    return nlohmann::json::parse(file.readAll().toStdString());
}

QString readText(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
}

// The cells of a heat map, row by row: cell (column j, row i) at [i][j].
std::vector<std::vector<double>> cellsOf(const ChartData& chart)
{
    std::vector<std::vector<double>> matrix;
    const ChartSeries& cells = chart.series.at(0);
    for (std::size_t i = 0; i < cells.z.size(); ++i) {
        const auto row = std::size_t(cells.y[i]), column = std::size_t(cells.x[i]);
        if (matrix.size() <= row)
            matrix.resize(row + 1);
        if (matrix[row].size() <= column)
            matrix[row].resize(column + 1);
        matrix[row][column] = cells.z[i];
    }
    return matrix;
}

const QStringList kTexts = {"the cat sat on the mat", "a dog sat on a mat", "Paris is the capital of France",
                            "what is the capital of France ?"};
const QStringList kPassages = {"the cat sat on the mat", "Paris is the capital of France", "the dog is on the mat",
                               "France is a capital"};
const QString kQuery = "what is the capital of France ?";

const std::string kDemo = SCALESCOPE_DEMO_DIR;

// The row of the metrics table named `name`, -1 when there is none.
int metricRow(const QStandardItemModel* model, const QString& name)
{
    for (int row = 0; row < model->rowCount(); ++row)
        if (model->index(row, TaskEvaluatePanel::MetricNameColumn).data().toString() == name)
            return row;
    return -1;
}

// The dataset indices the changed table lists, in its order.
std::vector<std::size_t> listedInputs(const QStandardItemModel* model)
{
    std::vector<std::size_t> inputs;
    for (int row = 0; row < model->rowCount(); ++row)
        inputs.push_back(std::size_t(model->index(row, 0).data(TaskEvaluatePanel::kInputIndexRole).toULongLong()));
    return inputs;
}

} // namespace

class TestTaskPanels : public QObject {
    Q_OBJECT
    std::string embedder_, embedderFp8_, reranker_, rerankerFp8_, classifier_, classifierFp8_;

    bool openAndWait(MainWindow& window, const std::string& dir, const std::string& reference)
    {
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(q(dir));
        if (!ready.wait(30000))
            return false;
        QSignalSpy changed(window.session(), &WorkbenchSession::referenceChanged);
        window.setReference(q(reference));
        return changed.wait(30000) && QTest::qWaitFor([&] { return !window.session()->busy(); }, 30000);
    }
    bool isOn(MainWindow& window, QWidget* panel) { return window.tabs()->isTabEnabled(window.tabs()->indexOf(panel)); }
    // Which input panels are on, in tab order: Ask, Fill Mask, Embed, Rerank, Classify.
    QString panelsOn(MainWindow& window)
    {
        QString on;
        for (QWidget* panel : std::initializer_list<QWidget*>{window.askPanel(), window.fillMaskPanel(), window.embedPanel(),
                                                            window.rerankPanel(), window.classifyPanel()})
            on += isOn(window, panel) ? QLatin1Char('1') : QLatin1Char('0');
        return on;
    }

    // Open embedder: Embed and Rerank on; embed; every number against embedTexts recomputed.
    void embedAndCheck(MainWindow& window)
    {
        QVERIFY(openAndWait(window, embedderFp8_, embedder_));
        QCOMPARE(panelsOn(window), QString("00110"));
        EmbedPanel* panel = window.embedPanel();
        QCOMPARE(panel->neighbourChoice()->count(), 0);
        panel->setTexts(kTexts);
        panel->setPrompt("query");
        window.tabs()->setCurrentWidget(panel);
        QSignalSpy embedded(window.session(), &WorkbenchSession::textsEmbedded);
        QTest::mouseClick(panel->embedButton(), Qt::LeftButton);
        QVERIFY(embedded.wait(30000));

        auto run = EncoderModel::load(embedderFp8_);
        auto reference = EncoderModel::load(embedder_);
        EmbedOptions options;
        for (const QString& text : kTexts)
            options.texts.push_back(text.toStdString());
        options.prompt = "query";
        const EmbedResult expected = embedTexts(*run, reference.get(), options);
        QCOMPARE(expected.prompt, std::string("what "));
        // The cosine table: worst first, the numbers the core computes.
        QCOMPARE(panel->cosineModel()->rowCount(), kTexts.size());
        double previous = -2;
        for (int row = 0; row < kTexts.size(); ++row) {
            const int text = int(numberAt(panel->cosineModel(), row, 0)) - 1;
            const double cosine = numberAt(panel->cosineModel(), row, 1);
            QVERIFY2(std::abs(cosine - expected.inputs[std::size_t(text)].cosine) < 1e-9, qPrintable(QString::number(cosine)));
            QVERIFY(cosine >= previous);
            previous = cosine;
        }
        QCOMPARE(panel->cosineModel()->item(0, 1)->background().color(), QColor(0xFD, 0xE0, 0xDD));
        // Both matrices on one fixed scale, and their difference.
        const QList<ChartView*> charts = panel->charts();
        QCOMPARE(charts[0]->chart().cellLower, -1.0);
        QCOMPARE(charts[1]->chart().cellUpper, 1.0);
        const auto runCells = cellsOf(charts[0]->chart()), referenceCells = cellsOf(charts[1]->chart()),
                   differenceCells = cellsOf(charts[2]->chart());
        for (std::size_t i = 0; i < expected.similarity.size(); ++i)
            for (std::size_t j = 0; j < expected.similarity.size(); ++j) {
                QVERIFY(std::abs(runCells[i][j] - expected.similarity[i][j]) < 1e-9);
                QVERIFY(std::abs(referenceCells[i][j] - expected.referenceSimilarity[i][j]) < 1e-9);
                QVERIFY(std::abs(differenceCells[i][j] - (expected.similarity[i][j] - expected.referenceSimilarity[i][j])) < 1e-9);
            }
        QVERIFY(charts[2]->chart().divergingCells);
        // Nearest neighbours of text 3 on each side: the most similar other text first.
        panel->neighbourChoice()->setCurrentIndex(2);
        QCOMPARE(panel->neighboursModel()->rowCount(), kTexts.size() - 1);
        std::size_t best = 0; // the most similar to text 3 among texts 1, 2 and 4
        for (std::size_t j : {std::size_t(1), std::size_t(3)})
            if (expected.similarity[2][j] > expected.similarity[2][best])
                best = j;
        QVERIFY(std::abs(numberAt(panel->neighboursModel(), 0, 2) - expected.similarity[2][best]) < 1e-9);
        QVERIFY(panel->neighboursModel()->index(0, 1).data().toString().startsWith(QString::number(best + 1) + ":"));
        QVERIFY(panel->resultLabel()->text().contains("mean pooling, normalized"));
        // Errors and Triage hold the comparison of the worst text, stamped with the embedder.
        QVERIFY(window.errorsPanel()->comparison());
        QCOMPARE(window.errorsPanel()->banner()->resultStamp().checkpoint, q(embedderFp8_));
        QVERIFY(!window.errorsPanel()->comparison()->points.empty());
    }

    // Open the reranker: the Embed results go; rerank; the rankings against rerankPassages.
    void rerankAndCheck(MainWindow& window)
    {
        QVERIFY(openAndWait(window, rerankerFp8_, reranker_));
        QCOMPARE(panelsOn(window), QString("00011"));
        EmbedPanel* embed = window.embedPanel();
        QVERIFY(!embed->outcome());
        QCOMPARE(embed->cosineModel()->rowCount(), 0);
        QCOMPARE(embed->neighboursModel()->rowCount(), 0);
        for (ChartView* chart : embed->charts())
            QVERIFY(chart->chart().series.empty());
        QVERIFY(embed->resultLabel()->text().contains("cleared"));
        QVERIFY(!embed->banner()->hasResult());
        QVERIFY(!window.errorsPanel()->comparison());

        RerankPanel* panel = window.rerankPanel();
        panel->setInputs(kQuery, kPassages);
        window.tabs()->setCurrentWidget(panel);
        QSignalSpy reranked(window.session(), &WorkbenchSession::passagesReranked);
        QTest::mouseClick(panel->rerankButton(), Qt::LeftButton);
        QVERIFY(reranked.wait(30000));

        auto run = EncoderModel::load(rerankerFp8_);
        auto reference = EncoderModel::load(reranker_);
        RerankOptions options;
        options.query = kQuery.toStdString();
        for (const QString& passage : kPassages)
            options.passages.push_back(passage.toStdString());
        const RerankResult expected = rerankPassages(*run, reference.get(), options);
        QCOMPARE(expected.scorer, RerankScorer::CrossEncoder);
        QStandardItemModel* rankings = panel->rankingModel();
        QCOMPARE(rankings->rowCount(), kPassages.size());
        for (int rank = 0; rank < rankings->rowCount(); ++rank) {
            const RankedPassage& runEntry = expected.ranking[std::size_t(rank)];
            const RankedPassage& referenceEntry = expected.referenceRanking[std::size_t(rank)];
            QVERIFY(rankings->index(rank, RerankPanel::RunPassageColumn).data().toString().startsWith(QString::number(runEntry.index + 1) + ": "));
            QVERIFY(std::abs(numberAt(rankings, rank, RerankPanel::RunScoreColumn) - runEntry.score) < 1e-9);
            QVERIFY(rankings->index(rank, RerankPanel::ReferencePassageColumn).data().toString().startsWith(QString::number(referenceEntry.index + 1) + ": "));
            QVERIFY(std::abs(numberAt(rankings, rank, RerankPanel::ReferenceScoreColumn) - referenceEntry.referenceScore) < 1e-9);
            const bool moved = runEntry.index != referenceEntry.index;
            // The run's passage at this rank sits elsewhere in the reference's ranking exactly when
            // the two rankings hold different passages here.
            QCOMPARE(rankings->index(rank, RerankPanel::MoveColumn).data().toString().isEmpty(), !moved);
        }
        const QString words = panel->resultLabel()->text();
        QVERIFY2(words.contains(QString("Kendall's tau %1").arg(expected.kendallTau, 0, 'f', 3)), qPrintable(words));
        QVERIFY(words.contains(expected.sameOrder ? "the same order" : "the order differs"));
        // The scatter: one point per passage at (reference score, run score), and the line y = x.
        const ChartData& scatter = panel->scoresChart()->chart();
        QCOMPARE(scatter.series.size(), std::size_t(2));
        QCOMPARE(scatter.series[1].y.size(), std::size_t(kPassages.size()));
        for (const RankedPassage& entry : expected.ranking) {
            QVERIFY(std::abs(scatter.series[1].x[entry.index] - entry.referenceScore) < 1e-9);
            QVERIFY(std::abs(scatter.series[1].y[entry.index] - entry.score) < 1e-9);
        }
        QCOMPARE(scatter.series[0].x, scatter.series[0].y);
        QCOMPARE(window.errorsPanel()->banner()->resultStamp().checkpoint, q(rerankerFp8_));
    }

    // Open the classifier: the Rerank results go; classify a pair; against classifyTexts.
    void classifyAndCheck(MainWindow& window)
    {
        QVERIFY(openAndWait(window, classifierFp8_, classifier_));
        QCOMPARE(panelsOn(window), QString("00001"));
        RerankPanel* rerank = window.rerankPanel();
        QVERIFY(!rerank->outcome());
        QCOMPARE(rerank->rankingModel()->rowCount(), 0);
        QVERIFY(rerank->scoresChart()->chart().series.empty());
        QVERIFY(rerank->resultLabel()->text().contains("cleared"));

        ClassifyPanel* panel = window.classifyPanel();
        panel->setInputs("the cat sat on the mat", "a dog is on the mat");
        window.tabs()->setCurrentWidget(panel);
        QSignalSpy classified(window.session(), &WorkbenchSession::textClassified);
        QTest::mouseClick(panel->classifyButton(), Qt::LeftButton);
        QVERIFY(classified.wait(30000));

        auto run = EncoderModel::load(classifierFp8_);
        auto reference = EncoderModel::load(classifier_);
        SequenceInput input;
        input.text = "the cat sat on the mat";
        input.pair = "a dog is on the mat";
        const ClassifyResult expected = classifyTexts(*run, reference.get(), {input}, RunPair{});
        const ClassifiedInput& one = expected.inputs.at(0);
        QStandardItemModel* labels = panel->labelsModel();
        QCOMPARE(labels->rowCount(), 3);
        for (int row = 0; row < 3; ++row) {
            QVERIFY(labels->index(row, ClassifyPanel::LabelColumn).data().toString().startsWith(q(expected.labels[std::size_t(row)])));
            QVERIFY(std::abs(numberAt(labels, row, ClassifyPanel::RunProbabilityColumn) - one.run.probabilities[std::size_t(row)]) < 1e-9);
            QVERIFY(std::abs(numberAt(labels, row, ClassifyPanel::ReferenceProbabilityColumn) - one.reference.probabilities[std::size_t(row)]) < 1e-9);
            QVERIFY(std::abs(numberAt(labels, row, ClassifyPanel::RunLogitColumn) - one.run.logits[std::size_t(row)]) < 1e-5);
        }
        QCOMPARE(panel->flipLabel()->isVisible(), one.flip);
        const QString words = panel->resultLabel()->text();
        QVERIFY(one.kl.has_value()); // a single-label classifier's probabilities are a distribution
        QVERIFY2(words.contains(q(one.run.label)) && words.contains(QString::number(*one.kl, 'g', 4)), qPrintable(words));
        const ChartData& bars = panel->probabilitiesChart()->chart();
        QCOMPARE(bars.categories, expected.labels);
        QCOMPARE(bars.series.at(0).y, one.run.probabilities);
        QCOMPARE(bars.series.at(1).y, one.reference.probabilities);
    }

    void exportAndCheck(MainWindow& window)
    {
        QTemporaryDir dir;
        const QStringList files = window.exportReport(dir.path());
        const nlohmann::json summary = readJson(dir.filePath("summary.json"));
        QCOMPARE(q(summary["checkpoint"]), q(classifierFp8_));
        QVERIFY(summary.contains("classify"));
        QCOMPARE(summary["classify"]["text"].get<std::string>(), std::string("the cat sat on the mat"));
        QCOMPARE(summary["classify"]["inputs"].size(), std::size_t(1));
        QVERIFY(!summary.contains("embed"));
        QVERIFY(!summary.contains("rerank"));
        QVERIFY(files.contains(dir.filePath("class_probabilities.png")));
        QVERIFY(files.contains(dir.filePath("class_probabilities.csv")));
        for (const char* gone : {"similarity_run.png", "similarity_difference.png", "embedding_cosines.csv",
                                 "rerank_scores.png", "rerank_rankings.csv"})
            QVERIFY2(!files.contains(dir.filePath(gone)), gone);
        const QString page = readText(dir.filePath("index.html"));
        QVERIFY(page.contains("class_probabilities"));
        QVERIFY(!page.contains(q(embedderFp8_)));
        QVERIFY(!page.contains(q(rerankerFp8_)));
        // The other tasks are named only as not run in this state.
        for (const char* gone : {"similarity", "embedding_cosines", "rerank_scores", "rerank_rankings", "Kendall"})
            QVERIFY2(!page.contains(gone), gone);
        QVERIFY(page.contains("no passages reranked yet"));
    }

    // Evaluate Tasks on the open demo checkpoint's own dataset (offered by the panel), as a user
    // presses it: the outcome it shows.
    std::shared_ptr<const TaskEvaluationOutcome> evaluateDemoDataset(MainWindow& window, TaskDatasetKind kind,
                                                                     const std::string& dataset, int maxSamples)
    {
        TaskEvaluatePanel* panel = window.taskEvaluatePanel();
        if (!window.tabs()->isTabEnabled(window.tabs()->indexOf(panel)) || panel->kind() != kind ||
            QFileInfo(panel->datasetPath()) != QFileInfo(q(kDemo + "/tasks/" + dataset)))
            return nullptr;
        panel->setMaxSamples(maxSamples);
        window.tabs()->setCurrentWidget(panel);
        QSignalSpy evaluated(window.session(), &WorkbenchSession::taskEvaluated);
        QTest::mouseClick(panel->evaluateButton(), Qt::LeftButton);
        if (!evaluated.wait(120000))
            return nullptr;
        return panel->outcome();
    }

    // The metrics table's run and reference cells of `name` equal the core's values.
    void checkMetric(const QStandardItemModel* metrics, const QString& name, double run, double reference)
    {
        const int row = metricRow(metrics, name);
        QVERIFY2(row >= 0, qPrintable(name));
        QCOMPARE(numberAt(metrics, row, TaskEvaluatePanel::RunColumn), run);
        QCOMPARE(numberAt(metrics, row, TaskEvaluatePanel::ReferenceColumn), reference);
    }

    // The demo classifier on the demo's classification file: the panel's metrics are the core's
    // own, the listed rows are exactly those whose labels differ, a row opens in Classify.
    void classificationEvaluationAndOpen(MainWindow& window)
    {
        const std::string fp8 = kDemo + "/classify-fp8", float32 = kDemo + "/classify-float";
        QVERIFY(openAndWait(window, fp8, float32));
        QVERIFY(!window.tabs()->isTabEnabled(window.tabs()->indexOf(window.evaluatePanel())));
        auto outcome = evaluateDemoDataset(window, TaskDatasetKind::Classification, "classification.jsonl", 0);
        QVERIFY(outcome && outcome->classification);
        QCOMPARE(outcome->stamp.checkpoint, q(fp8));

        auto run = EncoderModel::load(fp8);
        auto reference = EncoderModel::load(float32);
        const ClassificationDataset dataset =
            readClassificationFile(kDemo + "/tasks/classification.jsonl", run->checkpoint().config().labels);
        const ClassificationEvaluation expected = evaluateClassification(*run, reference.get(), dataset, RunPair{});
        TaskEvaluatePanel* panel = window.taskEvaluatePanel();
        const QStandardItemModel* metrics = panel->metricsModel();
        checkMetric(metrics, "accuracy", *expected.runAccuracy, *expected.referenceAccuracy);
        checkMetric(metrics, "macro F1", *expected.runMacroF1, *expected.referenceMacroF1);
        QCOMPARE(numberAt(metrics, metricRow(metrics, "flips"), TaskEvaluatePanel::ChangeColumn), double(expected.flips));
        QCOMPARE(numberAt(metrics, metricRow(metrics, "mean KL"), TaskEvaluatePanel::ChangeColumn), *expected.meanKl);
        // Counted here: the rows whose two labels differ, and the accuracy against the file's labels.
        std::vector<std::size_t> differ;
        std::size_t right = 0;
        for (std::size_t i = 0; i < expected.classified.inputs.size(); ++i) {
            const ClassifiedInput& item = expected.classified.inputs[i];
            if (item.run.labelId != item.reference.labelId)
                differ.push_back(i);
            right += std::size_t(item.run.labelId) == *dataset.examples[i].label;
        }
        QCOMPARE(expected.classified.inputs.size(), std::size_t(187));
        QVERIFY(std::abs(double(right) / 187.0 - *expected.runAccuracy) < 1e-12);
        QVERIFY(!differ.empty()); // the demo's FP8 classifier flips at least one row
        QCOMPARE(listedInputs(panel->changedModel()), differ);
        QVERIFY(!panel->charts()[0]->chart().series.empty());

        QSignalSpy classified(window.session(), &WorkbenchSession::textClassified);
        panel->openChangedRow(0);
        QCOMPARE(window.tabs()->currentWidget(), static_cast<QWidget*>(window.classifyPanel()));
        QCOMPARE(window.classifyPanel()->text(), q(dataset.examples[differ[0]].text));
        QVERIFY(classified.wait(30000));
        QVERIFY(window.classifyPanel()->flipLabel()->isVisibleTo(window.classifyPanel()));
    }

    // Another checkpoint: nothing of the classifier's evaluation, or its Classify result, stays.
    void switchClearsTheEvaluation(MainWindow& window)
    {
        QVERIFY(openAndWait(window, kDemo + "/embed-fp8", kDemo + "/embed-float"));
        TaskEvaluatePanel* panel = window.taskEvaluatePanel();
        QVERIFY(!panel->outcome());
        QCOMPARE(panel->metricsModel()->rowCount(), 0);
        QCOMPARE(panel->changedModel()->rowCount(), 0);
        for (ChartView* chart : panel->charts())
            QVERIFY(chart->chart().series.empty());
        QVERIFY(panel->summaryLabel()->text().contains("cleared"));
        QVERIFY(!panel->openButton()->isEnabled());
        QVERIFY(!window.classifyPanel()->outcome());
        QCOMPARE(window.classifyPanel()->labelsModel()->rowCount(), 0);
        // The embedder's own dataset is offered in place of the classifier's.
        QCOMPARE(panel->kind(), TaskDatasetKind::Sts);
        QVERIFY(!panel->kindAvailable(TaskDatasetKind::Classification));
        QTemporaryDir dir;
        window.exportReport(dir.path());
        const nlohmann::json summary = readJson(dir.filePath("summary.json"));
        QVERIFY(!summary.contains("task_evaluation"));
        QVERIFY(!summary.contains("classify"));
        const QString page = readText(dir.filePath("index.html"));
        QVERIFY(!page.contains("task_metrics"));
        QVERIFY(!page.contains("classify-fp8"));
        QVERIFY(page.contains("no task dataset evaluated yet"));
    }

    // The demo embedder on the demo's STS pairs: Spearman x 100 of both sides as the core computes
    // it; a listed pair opens in Embed with both sentences.
    void stsEvaluationAndOpen(MainWindow& window)
    {
        const std::string fp8 = kDemo + "/embed-fp8", float32 = kDemo + "/embed-float";
        auto outcome = evaluateDemoDataset(window, TaskDatasetKind::Sts, "sts.tsv", 0);
        QVERIFY(outcome && outcome->sts);
        auto run = EncoderModel::load(fp8);
        auto reference = EncoderModel::load(float32);
        const StsDataset dataset = readStsFile(kDemo + "/tasks/sts.tsv");
        const StsEvaluation expected = evaluateSts(*run, reference.get(), dataset, RunPair{});
        TaskEvaluatePanel* panel = window.taskEvaluatePanel();
        checkMetric(panel->metricsModel(), "Spearman x 100", expected.runSpearman, expected.referenceSpearman);
        QCOMPARE(listedInputs(panel->changedModel()), expected.differing);
        // Listed largest change first, as the change column shows it.
        for (int row = 1; row < panel->changedModel()->rowCount(); ++row)
            QVERIFY(std::abs(numberAt(panel->changedModel(), row, 6)) <= std::abs(numberAt(panel->changedModel(), row - 1, 6)));
        const ChartData& scatter = panel->charts()[1]->chart();
        QCOMPARE(scatter.series.at(1).y, expected.run);
        QCOMPARE(scatter.series.at(1).x, expected.reference);

        QSignalSpy embedded(window.session(), &WorkbenchSession::textsEmbedded);
        panel->openChangedRow(0);
        const StsPair& pair = dataset.pairs[expected.differing[0]];
        QCOMPARE(window.tabs()->currentWidget(), static_cast<QWidget*>(window.embedPanel()));
        QCOMPARE(window.embedPanel()->texts(), QStringList({q(pair.sentence1), q(pair.sentence2)}));
        QVERIFY(embedded.wait(30000));
    }

    // The first 12 demo queries against the demo corpus with the embedder: the retrieval metrics as
    // the core computes them; a changed query opens in Rerank with its top documents.
    void retrievalEvaluationAndOpen(MainWindow& window)
    {
        TaskEvaluatePanel* panel = window.taskEvaluatePanel();
        panel->setKind(TaskDatasetKind::Retrieval);
        auto outcome = evaluateDemoDataset(window, TaskDatasetKind::Retrieval, "retrieval", 12);
        QVERIFY(outcome && outcome->retrieval);
        auto run = EncoderModel::load(kDemo + "/embed-fp8");
        auto reference = EncoderModel::load(kDemo + "/embed-float");
        const BeirDataset dataset = readBeirFolder(kDemo + "/tasks/retrieval", 12);
        const RetrievalEvaluation expected = evaluateRetrieval(*run, reference.get(), dataset, RunPair{});
        const QStandardItemModel* metrics = panel->metricsModel();
        checkMetric(metrics, "nDCG@10", expected.run.ndcgAt10, expected.reference.ndcgAt10);
        checkMetric(metrics, "MRR@10", expected.run.mrrAt10, expected.reference.mrrAt10);
        checkMetric(metrics, "recall@100", expected.run.recallAt100, expected.reference.recallAt100);
        QCOMPARE(numberAt(metrics, metricRow(metrics, "queries changed (top 10)"), TaskEvaluatePanel::ChangeColumn),
                 double(expected.changedQueries.size()));
        QCOMPARE(listedInputs(panel->changedModel()), expected.changedQueries);
        if (expected.changedQueries.empty())
            QSKIP("no demo query changed its top 10 in FP8");
        QSignalSpy reranked(window.session(), &WorkbenchSession::passagesReranked);
        panel->openChangedRow(0);
        const std::size_t query = expected.changedQueries[0];
        QCOMPARE(window.rerankPanel()->query(), q(dataset.queries[query].text));
        const QStringList passages = window.rerankPanel()->passages();
        QVERIFY(passages.size() >= 10);
        // The reference's best document comes first.
        const std::size_t best = rankingOrder(expected.scores.reference[query]).front();
        QCOMPARE(passages.front(), q(dataset.corpus[best].text));
        QVERIFY(reranked.wait(30000));
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
        setComputeThreads(2);
        TinyModelSpec embedder;
        embedder.architecture = "RobertaModel";
        embedder.bareTensorNames = true;
        embedder.pooling = "mean";
        embedder.normalize = true;
        embedder.prompts = {{"query", "what "}, {"passage", "the "}};
        embedder_ = makeTempDir("tp-embed") + "/embed-float";
        writeTinyFloatCheckpoint(embedder_, embedder);
        embedderFp8_ = makeTempDir("tp-embed8") + "/embed-fp8";
        writeTinyFp8Checkpoint(embedder_, embedderFp8_, {"tensor", "tensor", "F32"});

        TinyModelSpec reranker;
        reranker.architecture = "RobertaForSequenceClassification";
        reranker.numLabels = 1;
        reranker_ = makeTempDir("tp-rerank") + "/rerank-float";
        writeTinyFloatCheckpoint(reranker_, reranker);
        rerankerFp8_ = makeTempDir("tp-rerank8") + "/rerank-fp8";
        writeTinyFp8Checkpoint(reranker_, rerankerFp8_, {"tensor", "tensor", "F32"});

        TinyModelSpec classifier;
        classifier.architecture = "RobertaForSequenceClassification";
        classifier.labelNames = {"negative", "neutral", "positive"};
        classifier_ = makeTempDir("tp-cls") + "/classify-float";
        writeTinyFloatCheckpoint(classifier_, classifier);
        classifierFp8_ = makeTempDir("tp-cls8") + "/classify-fp8";
        Fp8Edits quantizedHead;
        quantizedHead.quantizeClassifierHead = true;
        writeTinyFp8Checkpoint(classifier_, classifierFp8_, {"tensor", "tensor", "F32"}, {0, 5, 6, 7, 8, 9, 2}, quantizedHead);
    }

    // The sequence a user of these models goes through, at the laptop size the screenshots use.
    void embedRerankClassifyExport()
    {
        MainWindow window;
        window.resize(1366, 768);
        window.show();
        embedAndCheck(window);
        if (QTest::currentTestFailed())
            return;
        rerankAndCheck(window);
        if (QTest::currentTestFailed())
            return;
        classifyAndCheck(window);
        if (QTest::currentTestFailed())
            return;
        exportAndCheck(window);
    }

    // Evaluate Tasks on the demo models and datasets, at the laptop size: classification, a
    // checkpoint switch that clears it, STS and retrieval on the embedder.
    void evaluateTasksOnTheDemo()
    {
        MainWindow window;
        window.setDemoCatalog(loadDemoCatalog(q(kDemo)));
        window.resize(1366, 768);
        window.show();
        classificationEvaluationAndOpen(window);
        if (QTest::currentTestFailed())
            return;
        switchClearsTheEvaluation(window);
        if (QTest::currentTestFailed())
            return;
        stsEvaluationAndOpen(window);
        if (QTest::currentTestFailed())
            return;
        retrievalEvaluationAndOpen(window);
    }

    // Another mode turns the task's result stale and reruns it (the last input ran in Embed).
    void changingModeRerunsTheTask()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, embedderFp8_, embedder_));
        window.embedPanel()->setTexts(kTexts);
        QSignalSpy embedded(window.session(), &WorkbenchSession::textsEmbedded);
        QTest::mouseClick(window.embedPanel()->embedButton(), Qt::LeftButton);
        QVERIFY(embedded.wait(30000));
        window.session()->setRunMode(RunMode::Dequant);
        QVERIFY(embedded.wait(30000));
        QCOMPARE(window.embedPanel()->banner()->resultStamp().run.mode, RunMode::Dequant);
        QVERIFY(!window.embedPanel()->banner()->isStale());
        QVERIFY(window.embedPanel()->resultLabel()->text().startsWith("Dequant"));
    }

    // Errors' drill-down and a sensitivity sweep on a classifier's pair: the views built for
    // questions take these inputs too, and the sweep ranks by the logits.
    void errorsAndSweepOnAPair()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndWait(window, classifierFp8_, classifier_));
        window.classifyPanel()->setInputs("the cat sat on the mat", "a dog is on the mat");
        QSignalSpy classified(window.session(), &WorkbenchSession::textClassified);
        QTest::mouseClick(window.classifyPanel()->classifyButton(), Qt::LeftButton);
        QVERIFY(classified.wait(30000));
        QSignalSpy captured(window.session(), &WorkbenchSession::capturePointReady);
        emit window.errorsPanel()->capturePointRequested("roberta.encoder.layer.1.output");
        QVERIFY(captured.wait(30000));
        const auto values = captured.at(0).at(0).value<std::shared_ptr<const CapturePointValues>>();
        // Both texts of the pair ran: more tokens than the first text alone holds (<s> 6 words </s>).
        QVERIFY2(values->run.size() > std::size_t(8 * 32), qPrintable(QString::number(values->run.size())));
        QSignalSpy swept(window.session(), &WorkbenchSession::sensitivityFinished);
        QTest::mouseClick(window.sensitivityPanel()->runButton(), Qt::LeftButton);
        QVERIFY(swept.wait(60000));
        const auto sweep = swept.at(0).at(0).value<std::shared_ptr<const SensitivityResult>>();
        QVERIFY(!sweep->entries.empty());
    }

    // A flip is highlighted, in the words and the label's row, for every problem type.
    void flipIsHighlighted()
    {
        MainWindow window;
        ClassifyPanel* panel = window.classifyPanel();
        auto result = std::make_shared<ClassifyResult>();
        result->problem = ClassificationProblem::SingleLabel;
        result->labels = {"no", "yes"};
        // The sides as classify makes them (analysis/task_metrics): label 0 against label 1.
        const ClassificationMetrics metrics = classificationMetrics({{2.0, -1.0}}, {{-1.0, 2.0}}, result->problem);
        ClassifiedInput input;
        input.run = {{2.0f, -1.0f}, metrics.inputs[0].probabilities, 0, "no"};
        input.reference = {{-1.0f, 2.0f}, metrics.inputs[0].referenceProbabilities, 1, "yes"};
        input.flip = metrics.inputs[0].flip;
        input.kl = metrics.inputs[0].kl;
        result->inputs = {input};
        auto outcome = std::make_shared<ClassifyOutcome>();
        outcome->stamp.checkpoint = "somewhere";
        outcome->text = "t";
        outcome->result = result;
        PanelResult shown;
        shown.stamp = outcome->stamp;
        shown.classify = outcome;
        panel->takeResult(shown);
        QVERIFY(input.flip);
        QVERIFY(!panel->flipLabel()->isHidden());
        QVERIFY(panel->flipLabel()->text().contains("says no (0.9526)"));
        QVERIFY(panel->flipLabel()->text().contains("says yes (0.9526)"));
        QVERIFY(panel->labelsModel()->index(0, ClassifyPanel::LabelColumn).data().toString().contains("flips"));
        panel->clearResults("gone");
        QVERIFY(panel->flipLabel()->isHidden());
        QCOMPARE(panel->labelsModel()->rowCount(), 0);
    }
};

QTEST_MAIN(TestTaskPanels)
#include "test_task_panels.moc"
