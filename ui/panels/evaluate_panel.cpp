#include "panels/evaluate_panel.h"

#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "charts/chart_view.h"
#include "models/disagreements_model.h"
#include "models/value_text.h"
#include "report/charts.h"
#include "report/result_json.h"
#include "report_section.h"
#include "settings.h"
#include "stale_banner.h"
#include "workbench_session.h"

namespace scalescope::ui {

// The file, question count, null threshold and Evaluate button above the results.
QHBoxLayout* EvaluatePanel::makeInputRow()
{
    file_ = new QLineEdit(this);
    file_->setPlaceholderText(tr("SQuAD v1.1 or v2.0 JSON file"));
    file_->setText(Settings().squadFile());
    auto* browse = new QPushButton(tr("Browse..."), this);
    maxSamples_ = new QSpinBox(this);
    maxSamples_->setRange(0, 10'000'000);
    maxSamples_->setSpecialValueText(tr("all"));
    maxSamples_->setToolTip(tr("Evaluate only the first N questions (0: all)"));
    // The rule of `qa --null-threshold` and `evaluate --null-threshold` (QaOptions::nullThreshold).
    nullThreshold_ = new QDoubleSpinBox(this);
    nullThreshold_->setRange(-100, 100);
    nullThreshold_->setDecimals(2);
    nullThreshold_->setSingleStep(0.5);
    nullThreshold_->setValue(0.0);
    nullThreshold_->setToolTip(tr("SQuAD 2.0 only: a question is answered \"no answer\" when the null score (start + "
                                  "end logit of the first token) minus the best span's score exceeds this threshold "
                                  "(0: the official rule). Ignored for SQuAD 1.1 files."));
    evaluate_ = new QPushButton(tr("Evaluate"), this);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("SQuAD file:"), this));
    row->addWidget(file_, 1);
    row->addWidget(browse);
    row->addWidget(new QLabel(tr("Questions:"), this));
    row->addWidget(maxSamples_);
    auto* thresholdLabel = new QLabel(tr("Null threshold:"), this);
    thresholdLabel->setToolTip(nullThreshold_->toolTip());
    thresholdLabel->setBuddy(nullThreshold_);
    row->addWidget(thresholdLabel);
    row->addWidget(nullThreshold_);
    row->addWidget(evaluate_);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Choose a SQuAD File"), file_->text(), tr("SQuAD JSON (*.json);;All files (*)"));
        if (!path.isEmpty())
            setSquadFile(path);
    });
    return row;
}

EvaluatePanel::EvaluatePanel(WorkbenchSession* session, QWidget* parent) : QWidget(parent), session_(session)
{
    QHBoxLayout* row = makeInputRow();

    summary_ = new QLabel(tr("Choose a SQuAD file and press Evaluate: every question runs through the FP8 model and "
                             "its reference."), this);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    disagreements_ = new DisagreementsModel(this);
    proxy_ = new QSortFilterProxyModel(this);
    proxy_->setSourceModel(disagreements_);
    proxy_->setSortRole(DisagreementsModel::SortRole);
    view_ = new QTableView(this);
    view_->setModel(proxy_);
    view_->setSortingEnabled(true);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->verticalHeader()->hide();
    // Headers that do not fit lose their middle ("Refe...nswer") rather than both ends; the
    // columns are sized to their contents when a result arrives (sizeColumns).
    view_->horizontalHeader()->setTextElideMode(Qt::ElideMiddle);
    view_->setTextElideMode(Qt::ElideMiddle);
    view_->horizontalHeader()->setSectionResizeMode(DisagreementsModel::QuestionColumn, QHeaderView::Stretch);
    view_->horizontalHeader()->setMinimumSectionSize(40);
    view_->setToolTip(tr("Double-click a question to open it in the Ask panel"));

    scores_ = new ChartView(this);
    scores_->setPlaceholder(tr("The exact match and F1 of both runs appear here."));
    sqnr_ = new ChartView(this);
    sqnr_->setPlaceholder(tr("The logits SQNR of agreeing and disagreeing questions appears here."));
    auto* charts = new QSplitter(Qt::Horizontal, this);
    charts->setObjectName(QStringLiteral("evaluateChartsSplitter"));
    charts->addWidget(scores_);
    charts->addWidget(sqnr_);
    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->setObjectName(QStringLiteral("evaluateSplitter"));
    splitter->addWidget(view_);
    splitter->addWidget(charts);
    // Charts below ~250 px stack their tick labels; the table scrolls.
    splitter->setStretchFactor(0, 2);
    splitter->setStretchFactor(1, 3);
    splitter->setSizes({200, 300});
    emptyNote_ = new QLabel(this);
    emptyNote_->setWordWrap(true);
    emptyNote_->hide();
    warning_ = new QLabel(this);
    warning_->setObjectName(QStringLiteral("evaluateWarning"));
    warning_->setWordWrap(true);
    warning_->setStyleSheet(QStringLiteral("#evaluateWarning { color: #8a5a00; }"));
    warning_->hide();
    banner_ = new StaleBanner(this);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(banner_);
    layout->addLayout(row);
    layout->addWidget(summary_);
    layout->addWidget(warning_);
    layout->addWidget(emptyNote_);
    layout->addWidget(splitter, 1);

    connect(evaluate_, &QPushButton::clicked, this, &EvaluatePanel::requestEvaluation);
    connect(banner_, &StaleBanner::rerunRequested, this, &EvaluatePanel::requestEvaluation);
    auto open = [this](const QModelIndex& index) {
        const EvaluatedExample* e = disagreements_->exampleAt(proxy_->mapToSource(index).row());
        if (e)
            emit openInAsk(QString::fromStdString(e->example.question), QString::fromStdString(e->example.context));
    };
    connect(view_, &QTableView::doubleClicked, this, open);
    connect(view_, &QTableView::activated, this, open);
    connectSession();
}

void EvaluatePanel::connectSession()
{
    connect(this, &EvaluatePanel::evaluateRequested, session_, &WorkbenchSession::evaluate);
    connect(this, &EvaluatePanel::evaluateRequested, this, &EvaluatePanel::warnIfDemoEvaluatesOtherText);
    connect(session_, &WorkbenchSession::evaluationProgress, this, &EvaluatePanel::showProgress);
    connect(session_, &WorkbenchSession::failed, this, [this](const QString& operation, const QString& message) {
        if (operation == tr("Evaluate"))
            showFailure(message);
    });
}

void EvaluatePanel::warnIfDemoEvaluatesOtherText(const QString& squadFile)
{
    const bool demoCorpus = QFileInfo(squadFile) == QFileInfo(demo_.questionsFile());
    setWarning(demo_.holdsCheckpoint(session_->checkpointDirectory()) && !demoCorpus
                   ? tr("The demo models were trained on the demo corpus only: on this SQuAD file their "
                        "answers, EM and F1 mean nothing. FP8 against the reference still shows the "
                        "quantization error.")
                   : QString());
}

void EvaluatePanel::setSquadFile(const QString& path) { file_->setText(path); }

void EvaluatePanel::requestEvaluation()
{
    if (!evaluate_->isEnabled())
        return;
    if (file_->text().isEmpty()) {
        summary_->setText(tr("Choose a SQuAD file first."));
        return;
    }
    Settings().setSquadFile(file_->text());
    // The previous run's table and charts would read as this run's while it is going.
    clearResults(tr("Evaluating..."));
    evaluating_ = true;
    emit evaluateRequested(file_->text(), maxSamples_->value(), nullThreshold_->value());
}

void EvaluatePanel::setBusy(bool busy)
{
    busy_ = busy;
    evaluate_->setEnabled(!busy_ && runnable_);
    if (!busy && evaluating_ && !result_) {
        // Finished without a result (cancelled before any question, or failed before the first batch).
        evaluating_ = false;
        if (summary_->text() == tr("Evaluating..."))
            summary_->setText(tr("The evaluation stopped before any result."));
    }
}

void EvaluatePanel::setRunnable(bool runnable, const QString& reason)
{
    runnable_ = runnable;
    notRunnableReason_ = reason;
    evaluate_->setEnabled(!busy_ && runnable_);
    evaluate_->setToolTip(runnable ? tr("Run every question through the quantized model and its reference")
                                   : tr("Cannot evaluate: %1").arg(reason));
}

void EvaluatePanel::showFailure(const QString& message)
{
    if (!evaluating_)
        return;
    evaluating_ = false;
    summary_->setText(tr("<span style='color:#b00'>Evaluation failed:</span> %1").arg(message.toHtmlEscaped()));
}

void EvaluatePanel::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    compareWith_ = std::move(b);
    drawCharts();
}

void EvaluatePanel::drawCharts()
{
    scores_->setChart(compareWith_ ? overlayOrAbsent(scoresA_, nullptr, "A", "B") : scoresA_);
    sqnr_->setChart(compareWith_ ? overlayOrAbsent(sqnrA_, nullptr, "A", "B") : sqnrA_);
}

void EvaluatePanel::clearResults(const QString& why)
{
    result_.reset();
    disagreements_->setResult(nullptr);
    scoresA_ = sqnrA_ = {};
    drawCharts();
    emptyNote_->hide();
    summary_->setText(why);
    banner_->clearResult();
}

void EvaluatePanel::showProgress(int done, int total, double questionsPerSecond, int windowsDone)
{
    // Questions finish in pools of batches (windows grouped by length): the windows count moves
    // with every batch while the first pool of a large model is still under way.
    summary_->setText(tr("Evaluated %L1 of %L2 questions (%3 questions/s); %4 through both models...")
                          .arg(done)
                          .arg(total)
                          .arg(questionsPerSecond, 0, 'f', 1)
                          .arg(countText(windowsDone, tr("window"), tr("windows"))));
}

// Every column but the question as wide as its contents and its header, within bounds: the answers
// may be long, and the question column takes what is left.
void EvaluatePanel::sizeColumns()
{
    constexpr int kWidestColumn = 260;
    QHeaderView* header = view_->horizontalHeader();
    for (int column = 0; column < DisagreementsModel::ColumnCount; ++column) {
        if (column == DisagreementsModel::QuestionColumn || view_->isColumnHidden(column))
            continue;
        // QTableView hides the public QAbstractItemView::sizeHintForColumn.
        const int cells = static_cast<const QAbstractItemView*>(view_)->sizeHintForColumn(column);
        const int contents = std::max(cells, header->sectionSizeHint(column));
        view_->setColumnWidth(column, std::min(contents, kWidestColumn));
    }
    // The question is what a row is about: it keeps at least kQuestionWidth where it can, the
    // others give way in proportion, never below their header's text.
    constexpr int kQuestionWidth = 260;
    int others = 0;
    for (int column = 0; column < DisagreementsModel::ColumnCount; ++column)
        if (column != DisagreementsModel::QuestionColumn && !view_->isColumnHidden(column))
            others += view_->columnWidth(column);
    const int room = view_->viewport()->width() - kQuestionWidth;
    if (others <= room || others <= 0 || room <= 0)
        return;
    const double factor = double(room) / double(others);
    for (int column = 0; column < DisagreementsModel::ColumnCount; ++column)
        if (column != DisagreementsModel::QuestionColumn && !view_->isColumnHidden(column))
            view_->setColumnWidth(column, std::max(std::min(header->sectionSizeHint(column), view_->columnWidth(column)),
                                                   int(view_->columnWidth(column) * factor)));
}

void EvaluatePanel::setWarning(const QString& text)
{
    warning_->setText(text);
    warning_->setVisible(!text.isEmpty());
}

void EvaluatePanel::showResult(std::shared_ptr<const EvaluationResult> result, const RunStamp& stamp)
{
    evaluating_ = false;
    result_ = std::move(result);
    const EvaluationResult& r = *result_;
    disagreements_->setResult(result_, stamp.modeName());
    banner_->setResultStamp(stamp);
    const std::size_t differ = r.examples.size() - r.agreeing;
    emptyNote_->setVisible(differ == 0 && !r.examples.empty());
    emptyNote_->setText(tr("No disagreements: the two runs give the same answer to all %L1 questions.")
                            .arg(r.examples.size()));
    // The null margins mean something only where the null answer competed (SQuAD 2.0).
    const bool nullCompeted = r.qa.nullThreshold.has_value();
    view_->setColumnHidden(DisagreementsModel::RunNullMarginColumn, !nullCompeted);
    view_->setColumnHidden(DisagreementsModel::ReferenceNullMarginColumn, !nullCompeted);
    sizeColumns();
    auto scores = [](const SquadScores& s) {
        return tr("EM %1, F1 %2").arg(s.exact, 0, 'f', 2).arg(s.f1, 0, 'f', 2);
    };
    QString text = tr("<b>%L1 questions</b> of %L2 (%3 questions/s). %9: %4 &nbsp; %5: %6 &nbsp; "
                      "Agreement %7% (%L8 differ).")
                       .arg(r.examples.size())
                       .arg(r.questionsSelected)
                       .arg(r.questionsPerSecond, 0, 'f', 1)
                       .arg(scores(r.runScores), QString::fromStdString(r.referenceLabel).toHtmlEscaped(),
                            scores(r.referenceScores))
                       .arg(100 * r.agreement, 0, 'f', 1)
                       .arg(differ)
                       .arg(stamp.modeName());
    if (r.runScores.hasAnsTotal > 0 && r.runScores.noAnsTotal > 0)
        text += tr("<br>HasAns (%1): %7 F1 %2, reference F1 %3. NoAns (%4): %7 %5, reference %6.")
                    .arg(r.runScores.hasAnsTotal)
                    .arg(r.runScores.hasAnsF1, 0, 'f', 2)
                    .arg(r.referenceScores.hasAnsF1, 0, 'f', 2)
                    .arg(r.runScores.noAnsTotal)
                    .arg(r.runScores.noAnsF1, 0, 'f', 2)
                    .arg(r.referenceScores.noAnsF1, 0, 'f', 2)
                    .arg(stamp.modeName());
    if (r.qa.nullThreshold)
        text += tr("<br>No answer where the null score minus the best span's exceeds %1 (null threshold; per "
                   "question in the table's last two columns).")
                    .arg(double(*r.qa.nullThreshold));
    if (!r.complete)
        text += tr("<br><span style='color:#b00'>Stopped early: %1 The results cover the questions that finished.</span>")
                    .arg(QString::fromStdString(r.stoppedReason).toHtmlEscaped());
    if (!r.skipped.empty())
        text += tr("<br>%1 skipped (too long or not finite).")
                    .arg(countText(static_cast<long long>(r.skipped.size()), tr("question was"), tr("questions were")));
    text += nonFiniteText(r, stamp);
    summary_->setText(text);
    scoresA_ = evaluationScoresChart(r);
    relabelRunSeries(scoresA_, stamp.modeName());
    sqnrA_ = agreementSqnrChart(r);
    drawCharts();
    for (ChartView* chart : charts())
        chart->setStamp(stamp.describe());
}

// Where the run's inf/NaN starts over the dataset (the fp16 twin's overflows): the modules with
// their question counts, then the first questions with their module. "" when all were finite.
QString EvaluatePanel::nonFiniteText(const EvaluationResult& r, const RunStamp& stamp)
{
    if (r.nonFiniteQuestions == 0)
        return {};
    QStringList starts;
    for (const NonFiniteStart& start : r.nonFiniteStarts)
        starts << tr("%1 (%L2)").arg(QString::fromStdString(start.module).toHtmlEscaped()).arg(start.questions);
    QStringList questions;
    constexpr int kListed = 5;
    auto list = [&](const std::string& id, const std::string& module) {
        if (!module.empty() && questions.size() < kListed)
            questions << tr("%1 at %2").arg(QString::fromStdString(id).toHtmlEscaped(),
                                           QString::fromStdString(module).toHtmlEscaped());
    };
    for (const SkippedExample& e : r.skipped)
        list(e.id, e.firstNonFinite);
    for (const EvaluatedExample& e : r.examples)
        list(e.example.id, e.firstNonFinite);
    QString text
        = tr("<br><span style='color:#b00'>%1 inf/NaN outputs in the %2 run; it starts at %3.</span>")
              .arg(countText(static_cast<long long>(r.nonFiniteQuestions), tr("question had"), tr("questions had")))
              .arg(stamp.modeName(), starts.join(QStringLiteral(", ")));
    text += tr("<br>First non-finite module per question: %1%2")
                .arg(questions.join(QStringLiteral("; ")))
                .arg(r.nonFiniteQuestions > std::size_t(kListed) ? tr("; ... (all of them in Export)") : QString());
    return text;
}

void EvaluatePanel::takeResult(const PanelResult& result)
{
    if (result.checkpoint) {
        setWarning(QString()); // it was about the previous checkpoint
        const CheckpointInfo& info = *result.checkpoint;
        setRunnable(info.runnable && !info.checkpoint->layout().isMaskedLm(),
                    info.runnable ? tr("SQuAD evaluation needs a question-answering checkpoint; this one is a masked "
                                       "language model.")
                                  : info.loadError);
    }
    if (result.evaluation)
        showResult(result.evaluation, result.stamp);
}

void EvaluatePanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent)
        return;
    for (const ChartView* chart : charts())
        section.addChart(chart);
    section.addTable(QStringLiteral("disagreements"), disagreements_);
    if (result_)
        section.summary()["evaluation_nonfinite"] = evaluationNonFiniteJson(*result_);
}

std::vector<ChartView*> EvaluatePanel::charts() const
{
    return {scores_, sqnr_};
}

} // namespace scalescope::ui
