#include "panels/task_evaluate_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "analysis/task_metrics.h"
#include "charts/chart_view.h"
#include "panels/task_panel_parts.h"
#include "report/task_charts.h"
#include "report/task_json.h"
#include "report_section.h"
#include "stale_banner.h"
#include "workbench_session.h"

namespace scalescope::ui {
namespace {

// How many documents of each side's ranking a query opened in Rerank brings along.
constexpr std::size_t kDocumentsOpened = 10;

QString kindName(TaskDatasetKind kind)
{
    switch (kind) {
    case TaskDatasetKind::Sts: return TaskEvaluatePanel::tr("STS pairs (TSV or JSONL)");
    case TaskDatasetKind::Retrieval: return TaskEvaluatePanel::tr("Retrieval (BEIR folder)");
    case TaskDatasetKind::Classification: return TaskEvaluatePanel::tr("Classification (JSONL)");
    }
    return {};
}

// What summary.json calls the dataset kind (the CLI option's name).
const char* kindKey(TaskDatasetKind kind)
{
    switch (kind) {
    case TaskDatasetKind::Sts: return "sts";
    case TaskDatasetKind::Retrieval: return "retrieval";
    case TaskDatasetKind::Classification: return "classification";
    }
    return "";
}

QTableView* makeTable(QWidget* parent, QStandardItemModel* model)
{
    auto* view = new QTableView(parent);
    view->setModel(model);
    view->verticalHeader()->hide();
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    return view;
}

// The first `count` documents of one side's ranking of a query (rankingOrder: BEIR's tie rule).
std::vector<std::size_t> topDocuments(const std::vector<double>& scores, std::size_t count)
{
    std::vector<std::size_t> order = rankingOrder(scores);
    if (order.size() > count)
        order.resize(count);
    return order;
}

} // namespace

TaskEvaluatePanel::TaskEvaluatePanel(WorkbenchSession* session, QWidget* parent) : QWidget(parent)
{
    auto* content = new QWidget(this);
    banner_ = new StaleBanner(content);
    QWidget* inputRow = makeInputRow(content);
    summary_ = new QLabel(tr("Choose a dataset of the open checkpoint's task and press Evaluate: every row runs "
                             "through the FP8 model and its reference."),
                          content);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    metrics_ = new QStandardItemModel(this);
    metricsView_ = makeTable(content, metrics_);
    metricsView_->setFixedHeight(metricsView_->horizontalHeader()->sizeHint().height() + 5 * 24);
    metricsView_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    metricsView_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    changed_ = new QStandardItemModel(this);
    changedView_ = makeTable(content, changed_);
    changedView_->setMinimumHeight(140);
    changedView_->setToolTip(tr("Double-click an input to open it in its task panel"));
    open_ = new QPushButton(tr("Open in Task Panel"), content);
    open_->setEnabled(false);
    auto* changedBox = new QGroupBox(tr("Inputs whose result changed"), content);
    auto* changedLayout = new QVBoxLayout(changedBox);
    changedLayout->addWidget(changedView_, 1);
    changedLayout->addWidget(open_, 0, Qt::AlignLeft);

    metricsChart_ = new ChartView(content);
    metricsChart_->setPlaceholder(tr("The metrics of both sides appear here after Evaluate."));
    detailChart_ = new ChartView(content);
    detailChart_->setPlaceholder(tr("An STS evaluation's pair similarities appear here."));
    auto* chartsRow = new QHBoxLayout;
    for (ChartView* chart : {metricsChart_, detailChart_}) {
        chart->setMinimumHeight(kTaskChartMinimumHeight);
        chartsRow->addWidget(chart, 1);
    }

    auto* layout = new QVBoxLayout(content);
    layout->addWidget(banner_);
    layout->addWidget(inputRow);
    layout->addWidget(summary_);
    layout->addWidget(metricsView_);
    layout->addWidget(changedBox, 1);
    layout->addLayout(chartsRow, 2);
    setScrollingPage(this, content);

    connect(evaluate_, &QPushButton::clicked, this, &TaskEvaluatePanel::requestEvaluation);
    connect(banner_, &StaleBanner::rerunRequested, this, &TaskEvaluatePanel::requestEvaluation);
    addRunShortcut(this, [this] { requestEvaluation(); });
    connect(changedView_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) { openChangedRow(index.row()); });
    connect(changedView_, &QTableView::activated, this, [this](const QModelIndex& index) { openChangedRow(index.row()); });
    connect(open_, &QPushButton::clicked, this, [this] {
        const QModelIndex current = changedView_->currentIndex();
        openChangedRow(current.isValid() ? current.row() : 0);
    });
    connect(this, &TaskEvaluatePanel::evaluateRequested, session, &WorkbenchSession::evaluateTask);
    connect(session, &WorkbenchSession::failed, this, [this](const QString& operation, const QString& message) {
        if (operation == tr("Evaluate Tasks") && evaluating_) {
            evaluating_ = false;
            summary_->setText(tr("<span style='color:#b00'>Evaluation failed:</span> %1").arg(message.toHtmlEscaped()));
        }
    });
}

TaskEvaluatePanel::~TaskEvaluatePanel() = default;

// The dataset kind, its file or folder, the rows to evaluate and the Evaluate button.
QWidget* TaskEvaluatePanel::makeInputRow(QWidget* parent)
{
    auto* row = new QWidget(parent);
    kind_ = new QComboBox(row);
    for (TaskDatasetKind kind : {TaskDatasetKind::Sts, TaskDatasetKind::Retrieval, TaskDatasetKind::Classification})
        kind_->addItem(kindName(kind), int(kind));
    path_ = new QLineEdit(row);
    path_->setPlaceholderText(tr("the dataset's file (a BEIR folder for retrieval)"));
    auto* browseButton = new QPushButton(tr("Browse..."), row);
    maxSamples_ = new QSpinBox(row);
    maxSamples_->setRange(0, 100'000'000);
    maxSamples_->setSpecialValueText(tr("all"));
    maxSamples_->setToolTip(tr("Evaluate only the first N rows (queries for a BEIR folder; 0: all)"));
    evaluate_ = new QPushButton(tr("Evaluate"), row);
    runState_ = std::make_unique<RunButtonState>(
        evaluate_, tr("Run every row of the dataset through the quantized model and its reference"));
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(kind_);
    layout->addWidget(path_, 1);
    layout->addWidget(browseButton);
    layout->addWidget(new QLabel(tr("Rows:"), row));
    layout->addWidget(maxSamples_);
    layout->addWidget(evaluate_);
    connect(browseButton, &QPushButton::clicked, this, &TaskEvaluatePanel::browse);
    connect(kind_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        // A demo dataset of another kind means nothing here: the demo's own of this kind replaces it.
        const QString current = path_->text();
        bool demoPath = false;
        for (TaskDatasetKind kind : {TaskDatasetKind::Sts, TaskDatasetKind::Retrieval, TaskDatasetKind::Classification})
            demoPath = demoPath || (!demo_.folder.isEmpty() && current == demoDataset(kind));
        if (current.isEmpty() || demoPath)
            path_->setText(demoOpen_ ? demoDataset(this->kind()) : QString());
    });
    return row;
}

void TaskEvaluatePanel::browse()
{
    QString path;
    if (kind() == TaskDatasetKind::Retrieval)
        path = QFileDialog::getExistingDirectory(this, tr("Choose a BEIR Folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)"),
                                                 path_->text());
    else
        path = QFileDialog::getOpenFileName(this, kind() == TaskDatasetKind::Sts ? tr("Choose an STS File") : tr("Choose a Classification File"),
                                            path_->text(), tr("Datasets (*.tsv *.jsonl *.json);;All files (*)"));
    if (!path.isEmpty())
        path_->setText(path);
}

QString TaskEvaluatePanel::demoDataset(TaskDatasetKind kind) const
{
    switch (kind) {
    case TaskDatasetKind::Sts: return demo_.folder + QStringLiteral("/tasks/sts.tsv");
    case TaskDatasetKind::Retrieval: return demo_.folder + QStringLiteral("/tasks/retrieval");
    case TaskDatasetKind::Classification: return demo_.folder + QStringLiteral("/tasks/classification.jsonl");
    }
    return {};
}

void TaskEvaluatePanel::setKind(TaskDatasetKind kind) { kind_->setCurrentIndex(kind_->findData(int(kind))); }
TaskDatasetKind TaskEvaluatePanel::kind() const { return TaskDatasetKind(kind_->currentData().toInt()); }
void TaskEvaluatePanel::setDatasetPath(const QString& path) { path_->setText(path); }
QString TaskEvaluatePanel::datasetPath() const { return path_->text().trimmed(); }
void TaskEvaluatePanel::setMaxSamples(int rows) { maxSamples_->setValue(rows); }

bool TaskEvaluatePanel::kindAvailable(TaskDatasetKind kind) const
{
    auto* model = qobject_cast<QStandardItemModel*>(kind_->model());
    return model->item(kind_->findData(int(kind)))->isEnabled();
}

void TaskEvaluatePanel::setBusy(bool busy)
{
    runState_->setBusy(busy);
    if (!busy && evaluating_ && !outcome_) {
        evaluating_ = false;
        summary_->setText(tr("The evaluation stopped before any result."));
    }
}

void TaskEvaluatePanel::requestEvaluation()
{
    if (!evaluate_->isEnabled())
        return;
    if (datasetPath().isEmpty()) {
        summary_->setText(tr("Choose a dataset first."));
        return;
    }
    // The previous evaluation's tables would read as this one's while it runs.
    clearResults(tr("Evaluating..."));
    evaluating_ = true;
    emit evaluateRequested(kind(), datasetPath(), maxSamples_->value());
}

void TaskEvaluatePanel::takeResult(const PanelResult& result)
{
    if (result.checkpoint)
        showCheckpoint(*result.checkpoint);
    if (result.taskEvaluation) {
        evaluating_ = false;
        outcome_ = result.taskEvaluation;
        showOutcome(*outcome_, result.referenceLabel);
    }
}

// Which datasets the head can evaluate: an embedder STS and retrieval (cosines), a cross-encoder with
// one score the same (its score of each pair), a classifier its rows.
void TaskEvaluatePanel::showCheckpoint(const CheckpointInfo& info)
{
    const HeadKind head = info.checkpoint->layout().head();
    const bool embedder = head == HeadKind::Embedding;
    const bool classifier = head == HeadKind::SequenceClassification;
    const bool scorer = classifier && info.checkpoint->config().problem == ClassificationProblem::Score;
    auto* model = qobject_cast<QStandardItemModel*>(kind_->model());
    model->item(kind_->findData(int(TaskDatasetKind::Sts)))->setEnabled(embedder || scorer);
    model->item(kind_->findData(int(TaskDatasetKind::Retrieval)))->setEnabled(embedder || scorer);
    model->item(kind_->findData(int(TaskDatasetKind::Classification)))->setEnabled(classifier);
    demoOpen_ = demo_.holdsCheckpoint(info.directory);
    const TaskDatasetKind fitting = embedder ? TaskDatasetKind::Sts
                                    : scorer ? TaskDatasetKind::Retrieval
                                             : TaskDatasetKind::Classification;
    if (!kindAvailable(kind()) || demoOpen_) {
        const QSignalBlocker blocker(kind_);
        setKind(fitting);
    }
    if (demoOpen_)
        path_->setText(demoDataset(kind()));
    const bool task = embedder || classifier;
    runState_->setRunnable(info.runnable && task,
                           !info.runnable ? info.loadError
                                          : tr("evaluating a dataset needs a sentence embedder, a reranker or a "
                                               "classifier; use Evaluate for a question-answering checkpoint."));
}

void TaskEvaluatePanel::clearResults(const QString& why)
{
    outcome_.reset();
    metrics_->clear();
    changed_->clear();
    open_->setEnabled(false);
    for (ChartView* chart : charts()) {
        chart->setChart({});
        chart->setStamp(QString());
    }
    summary_->setText(why.toHtmlEscaped());
    banner_->clearResult();
}

// The metrics table as tall as its rows: it never scrolls, whichever task's metrics it holds.
void TaskEvaluatePanel::fitMetricsHeight()
{
    metricsView_->resizeRowsToContents();
    int height = metricsView_->horizontalHeader()->sizeHint().height() + 2 * metricsView_->frameWidth();
    for (int row = 0; row < metrics_->rowCount(); ++row)
        height += metricsView_->rowHeight(row);
    metricsView_->setFixedHeight(std::max(height, metricsView_->horizontalHeader()->sizeHint().height() * 3));
}

void TaskEvaluatePanel::addMetric(const QString& name, double run, double reference, int decimals)
{
    metrics_->appendRow({textItem(name), numberItem(run, decimals), numberItem(reference, decimals),
                         numberItem(run - reference, decimals)});
}

// A measure of the two sides together (flips, mean KL, queries changed): in the change column only.
void TaskEvaluatePanel::addBetweenSides(const QString& name, double value, const QString& text, int decimals)
{
    QStandardItem* change = numberItem(value, decimals);
    if (!text.isEmpty())
        change->setText(text);
    metrics_->appendRow({textItem(name), textItem(QString()), textItem(QString()), change});
}

void TaskEvaluatePanel::showOutcome(const TaskEvaluationOutcome& outcome, const QString& referenceLabel)
{
    banner_->setResultStamp(outcome.stamp);
    const QString mode = outcome.stamp.modeName();
    metrics_->clear();
    metrics_->setHorizontalHeaderLabels({tr("metric"), mode, tr("reference"), tr("change")});
    metrics_->horizontalHeaderItem(ChangeColumn)
        ->setToolTip(tr("%1 minus the reference; for flips, KL and changed queries, the two sides together").arg(mode));
    changed_->clear();
    if (outcome.sts)
        showSts(outcome);
    else if (outcome.retrieval)
        showRetrieval(outcome);
    else if (outcome.classification)
        showClassification(outcome);
    summary_->setText(tr("%1 vs %2 on %3: %4")
                          .arg(mode, referenceLabel.toHtmlEscaped(),
                               QFileInfo(outcome.path).fileName().toHtmlEscaped(), summary_->text()));
    open_->setEnabled(changed_->rowCount() > 0);
    fitMetricsHeight();
    // Only an STS evaluation has a second chart (its pairs' similarities).
    detailChart_->setVisible(bool(outcome.sts));
    for (ChartView* chart : charts())
        chart->setStamp(outcome.stamp.describe());
}

void TaskEvaluatePanel::showSts(const TaskEvaluationOutcome& outcome)
{
    const StsEvaluation& result = *outcome.sts;
    const StsDataset& dataset = *outcome.stsDataset;
    const QString mode = outcome.stamp.modeName();
    addMetric(tr("Spearman x 100"), result.runSpearman, result.referenceSpearman, 2);
    const bool cosine = result.scorer == RerankScorer::BiEncoder;
    changed_->setHorizontalHeaderLabels({tr("#"), tr("sentence 1"), tr("sentence 2"), tr("gold"), mode, tr("ref"), tr("change")});
    for (std::size_t i : result.differing) {
        const StsPair& pair = dataset.pairs[i];
        QStandardItem* number = numberItem(double(i + 1), 0);
        number->setData(qulonglong(i), kInputIndexRole);
        changed_->appendRow({number, longTextItem(QString::fromStdString(pair.sentence1)),
                             longTextItem(QString::fromStdString(pair.sentence2)), numberItem(pair.score, 2),
                             numberItem(result.run[i], 4), numberItem(result.reference[i], 4),
                             numberItem(result.run[i] - result.reference[i], 4)});
    }
    sizeChangedColumns({1, 2});
    summary_->setText(tr("Spearman x 100 of the %1 against the gold scores over %L2 pairs: %3 %4, reference %5. "
                         "The %L6 pairs whose similarity moved most are listed; double-click one to open it in %7.")
                          .arg(cosine ? tr("cosine of the two embeddings") : tr("cross-encoder's score of each pair"))
                          .arg(dataset.pairs.size())
                          .arg(mode)
                          .arg(result.runSpearman, 0, 'f', 2)
                          .arg(result.referenceSpearman, 0, 'f', 2)
                          .arg(result.differing.size())
                          .arg(cosine ? tr("Embed") : tr("Classify")));
    metricsChart_->setChart(taskMetricsChart("task_metrics", "STS: Spearman x 100, " + mode.toStdString() + " and reference",
                                             {"Spearman x 100"}, {result.runSpearman}, {result.referenceSpearman},
                                             mode.toStdString()));
    detailChart_->setChart(stsSimilarityChart(result.run, result.reference, mode.toStdString()));
}

void TaskEvaluatePanel::showRetrieval(const TaskEvaluationOutcome& outcome)
{
    const RetrievalEvaluation& result = *outcome.retrieval;
    const BeirDataset& dataset = *outcome.beirDataset;
    const QString mode = outcome.stamp.modeName();
    addMetric(tr("nDCG@10"), result.run.ndcgAt10, result.reference.ndcgAt10, 4);
    addMetric(tr("MRR@10"), result.run.mrrAt10, result.reference.mrrAt10, 4);
    addMetric(tr("recall@100"), result.run.recallAt100, result.reference.recallAt100, 4);
    addBetweenSides(tr("queries changed (top 10)"), double(result.changedQueries.size()),
                    tr("%L1 of %L2").arg(result.changedQueries.size()).arg(result.run.queriesEvaluated), 0);
    changed_->setHorizontalHeaderLabels({tr("#"), tr("query"), tr("top doc (%1)").arg(mode), tr("top doc (ref)"),
                                         tr("nDCG %1").arg(mode), tr("nDCG ref")});
    auto topText = [&](const std::vector<double>& scores) {
        const std::vector<std::size_t> top = topDocuments(scores, 1);
        return top.empty() ? QString() : QString::fromStdString(dataset.corpus[top[0]].text);
    };
    for (std::size_t q : result.changedQueries) {
        QStandardItem* number = numberItem(double(q + 1), 0);
        number->setData(qulonglong(q), kInputIndexRole);
        const auto& runScores = result.run.perQuery.at(q);
        const auto& referenceScores = result.reference.perQuery.at(q);
        changed_->appendRow({number, longTextItem(QString::fromStdString(dataset.queries[q].text)),
                             longTextItem(topText(result.scores.run[q])), longTextItem(topText(result.scores.reference[q])),
                             numberItem(runScores ? runScores->ndcgAt10 : 0.0, 4),
                             numberItem(referenceScores ? referenceScores->ndcgAt10 : 0.0, 4)});
    }
    sizeChangedColumns({1, 2, 3});
    summary_->setText(tr("%L1 judged queries against %L2 documents (%3). %L4 queries changed their top 10; "
                         "double-click one to open it in Rerank with its top documents.")
                          .arg(result.run.queriesEvaluated)
                          .arg(dataset.corpus.size())
                          .arg(QString::fromLatin1(rerankScorerName(result.scorer)))
                          .arg(result.changedQueries.size()));
    metricsChart_->setChart(taskMetricsChart(
        "task_metrics", "Retrieval metrics, " + mode.toStdString() + " and reference", {"nDCG@10", "MRR@10", "recall@100"},
        {result.run.ndcgAt10, result.run.mrrAt10, result.run.recallAt100},
        {result.reference.ndcgAt10, result.reference.mrrAt10, result.reference.recallAt100}, mode.toStdString()));
}

void TaskEvaluatePanel::showClassification(const TaskEvaluationOutcome& outcome)
{
    const ClassificationEvaluation& result = *outcome.classification;
    const ClassificationDataset& dataset = *outcome.classificationDataset;
    const QString mode = outcome.stamp.modeName();
    const std::size_t rows = result.classified.inputs.size();
    std::vector<std::string> names;
    std::vector<double> run, reference;
    if (result.runAccuracy && result.referenceAccuracy) {
        addMetric(tr("accuracy"), *result.runAccuracy, *result.referenceAccuracy, 4);
        names.push_back("accuracy");
        run.push_back(*result.runAccuracy);
        reference.push_back(*result.referenceAccuracy);
    }
    if (result.runMacroF1 && result.referenceMacroF1) {
        addMetric(tr("macro F1"), *result.runMacroF1, *result.referenceMacroF1, 4);
        names.push_back("macro F1");
        run.push_back(*result.runMacroF1);
        reference.push_back(*result.referenceMacroF1);
    }
    addBetweenSides(tr("flips"), double(result.flips), tr("%L1 of %L2").arg(result.flips).arg(rows), 0);
    if (result.meanKl)
        addBetweenSides(tr("mean KL"), *result.meanKl, QString(), 6);
    changed_->setHorizontalHeaderLabels({tr("#"), tr("text"), tr("gold"), mode, tr("ref"), tr("KL")});
    auto labelName = [&](std::size_t id) {
        return id < result.classified.labels.size() ? QString::fromStdString(result.classified.labels[id])
                                                    : QString::number(id);
    };
    for (std::size_t i : result.differing) {
        const ClassifiedInput& item = result.classified.inputs[i];
        QStandardItem* number = numberItem(double(i + 1), 0);
        number->setData(qulonglong(i), kInputIndexRole);
        QString text = QString::fromStdString(item.input.text);
        if (item.input.pair)
            text += QStringLiteral(" | ") + QString::fromStdString(*item.input.pair);
        const auto& gold = dataset.examples[i].label;
        changed_->appendRow({number, longTextItem(text), textItem(gold ? labelName(*gold) : QString()),
                             textItem(QString::fromStdString(item.run.label)),
                             textItem(QString::fromStdString(item.reference.label)),
                             item.kl ? numberItem(*item.kl, 5) : textItem(QString())});
    }
    sizeChangedColumns({1});
    summary_->setText(tr("%L1 rows classified; %2 between the sides%3. Double-click a flipped row to open it "
                         "in Classify.")
                          .arg(rows)
                          .arg(result.flips == 1 ? tr("1 label flips") : tr("%L1 labels flip").arg(result.flips))
                          .arg(result.runAccuracy ? tr(", accuracy %1 %2 against the reference's %3")
                                                        .arg(mode)
                                                        .arg(*result.runAccuracy, 0, 'f', 4)
                                                        .arg(*result.referenceAccuracy, 0, 'f', 4)
                                                  : tr(" (the file gives no labels: no accuracy)")));
    if (!names.empty())
        metricsChart_->setChart(taskMetricsChart("task_metrics", "Classification, " + mode.toStdString() + " and reference",
                                                 names, run, reference, mode.toStdString()));
}

// The text columns share what the numbers leave: the table never scrolls sideways.
void TaskEvaluatePanel::sizeChangedColumns(const QList<int>& textColumns) { fitColumns(changedView_, textColumns); }

void TaskEvaluatePanel::openChangedRow(int row)
{
    if (!outcome_ || row < 0 || row >= changed_->rowCount())
        return;
    const auto index = std::size_t(changed_->item(row, 0)->data(kInputIndexRole).toULongLong());
    const TaskEvaluationOutcome& outcome = *outcome_;
    if (outcome.sts) {
        const StsPair& pair = outcome.stsDataset->pairs.at(index);
        const QString first = QString::fromStdString(pair.sentence1), second = QString::fromStdString(pair.sentence2);
        if (outcome.sts->scorer == RerankScorer::BiEncoder)
            emit openInEmbed({first, second});
        else
            emit openInClassify(first, second);
    } else if (outcome.retrieval) {
        // The reference's top documents in its order, then those only the run ranks that high.
        const BeirDataset& dataset = *outcome.beirDataset;
        std::vector<std::size_t> documents = topDocuments(outcome.retrieval->scores.reference.at(index), kDocumentsOpened);
        for (std::size_t document : topDocuments(outcome.retrieval->scores.run.at(index), kDocumentsOpened))
            if (std::find(documents.begin(), documents.end(), document) == documents.end())
                documents.push_back(document);
        QStringList passages;
        for (std::size_t document : documents)
            passages << QString::fromStdString(dataset.corpus[document].text);
        emit openInRerank(QString::fromStdString(dataset.queries.at(index).text), passages);
    } else if (outcome.classification) {
        const SequenceInput& input = outcome.classification->classified.inputs.at(index).input;
        emit openInClassify(QString::fromStdString(input.text),
                            input.pair ? QString::fromStdString(*input.pair) : QString());
    }
}

void TaskEvaluatePanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent || !outcome_)
        return;
    for (const ChartView* chart : charts())
        if (!chart->chart().series.empty())
            section.addChart(chart);
    section.addTable(QStringLiteral("task_evaluation_metrics"), metrics_);
    section.addTable(QStringLiteral("task_evaluation_changed"), changed_);
    const TaskEvaluationOutcome& outcome = *outcome_;
    nlohmann::json evaluation = outcome.sts             ? stsJson(*outcome.sts, *outcome.stsDataset)
                                : outcome.retrieval     ? retrievalJson(*outcome.retrieval, *outcome.beirDataset)
                                                        : classificationJson(*outcome.classification);
    evaluation["dataset"] = kindKey(outcome.kind);
    evaluation["file"] = outcome.path.toStdString();
    section.summary()["task_evaluation"] = evaluation;
}

} // namespace scalescope::ui
