#include "panels/rerank_panel.h"

#include <QFont>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include "charts/chart_view.h"
#include "panels/task_panel_parts.h"
#include "report/task_charts.h"
#include "report/task_json.h"
#include "report_section.h"
#include "stale_banner.h"
#include "workbench_session.h"

namespace scalescope::ui {
namespace {

// A passage the run ranks higher than the reference does is green, lower red: the direction of
// the move reads without the arrow too.
const QColor kMovedUp(0xD9, 0xF2, 0xD9);
const QColor kMovedDown(0xFD, 0xE0, 0xDD);

std::size_t rankOf(const std::vector<RankedPassage>& ranking, std::size_t index)
{
    for (std::size_t rank = 0; rank < ranking.size(); ++rank)
        if (ranking[rank].index == index)
            return rank;
    return ranking.size();
}

} // namespace

QString rankMoveText(std::size_t runRank, std::size_t referenceRank)
{
    if (runRank == referenceRank)
        return QString();
    const std::size_t by = runRank < referenceRank ? referenceRank - runRank : runRank - referenceRank;
    return runRank < referenceRank ? RerankPanel::tr("\u25B2 up %1").arg(by) : RerankPanel::tr("\u25BC down %1").arg(by);
}

RerankPanel::RerankPanel(WorkbenchSession* session, QWidget* parent) : QWidget(parent)
{
    auto* content = new QWidget(this);
    banner_ = new StaleBanner(content);
    query_ = new QLineEdit(content);
    query_->setPlaceholderText(tr("The query"));
    passages_ = new QPlainTextEdit(content);
    passages_->setPlaceholderText(tr("Passages to rank for the query, one per line"));
    passages_->setMinimumHeight(90);
    passages_->setMaximumHeight(150);
    rerank_ = new QPushButton(tr("Rerank"), content);
    runState_ = std::make_unique<RunButtonState>(rerank_, tr("Score and rank the passages with the quantized model and its reference"));
    auto* queryRow = new QHBoxLayout;
    queryRow->addWidget(new QLabel(tr("Query"), content));
    queryRow->addWidget(query_, 1);
    queryRow->addWidget(rerank_);

    result_ = new QLabel(tr("Write a query and passages, one per line, and press Rerank."), content);
    result_->setWordWrap(true);
    result_->setTextFormat(Qt::RichText);
    rankings_ = new QStandardItemModel(this);
    rankingView_ = new QTableView(content);
    rankingView_->setModel(rankings_);
    rankingView_->verticalHeader()->hide();
    rankingView_->setMinimumHeight(220);
    rankingView_->setWordWrap(false);
    scores_ = new ChartView(content);
    scores_->setPlaceholder(tr("The run's scores against the reference's appear here after Rerank."));
    scores_->setMinimumHeight(kTaskChartMinimumHeight);
    auto* resultsRow = new QHBoxLayout;
    resultsRow->addWidget(rankingView_, 3);
    resultsRow->addWidget(scores_, 2);

    auto* layout = new QVBoxLayout(content);
    layout->addWidget(banner_);
    layout->addLayout(queryRow);
    layout->addWidget(passages_);
    layout->addWidget(result_);
    layout->addLayout(resultsRow, 1);
    setScrollingPage(this, content);

    connect(rerank_, &QPushButton::clicked, this, &RerankPanel::requestRerank);
    connect(query_, &QLineEdit::returnPressed, this, &RerankPanel::requestRerank);
    addRunShortcut(this, [this] { requestRerank(); });
    connect(this, &RerankPanel::rerankRequested, session,
            [session](const QString& query, const QStringList& passages) { session->rerank(query, passages); });
    connect(banner_, &StaleBanner::rerunRequested, this, &RerankPanel::rerun);
}

RerankPanel::~RerankPanel() = default;

void RerankPanel::setRunnable(bool runnable, const QString& reason) { runState_->setRunnable(runnable, reason); }
void RerankPanel::setBusy(bool busy) { runState_->setBusy(busy); }
QString RerankPanel::query() const { return query_->text().trimmed(); }
QStringList RerankPanel::passages() const { return inputLines(passages_->toPlainText()); }

void RerankPanel::setInputs(const QString& query, const QStringList& passages)
{
    query_->setText(query);
    passages_->setPlainText(passages.join(QLatin1Char('\n')));
}

void RerankPanel::requestRerank()
{
    if (!rerank_->isEnabled())
        return;
    if (query().isEmpty() || passages().isEmpty()) {
        result_->setText(tr("Write a query and at least one passage (one per line)."));
        return;
    }
    emit rerankRequested(query(), passages());
}

void RerankPanel::rerun()
{
    if (outcome_)
        emit rerankRequested(outcome_->query, outcome_->passages);
}

void RerankPanel::takeResult(const PanelResult& result)
{
    if (!result.rerank)
        return;
    outcome_ = result.rerank;
    showOutcome(*outcome_, result.referenceLabel);
}

void RerankPanel::clearResults(const QString& why)
{
    outcome_.reset();
    rankings_->clear();
    scores_->setChart({});
    scores_->setStamp(QString());
    result_->setText(why.toHtmlEscaped());
    banner_->clearResult();
}

void RerankPanel::showOutcome(const RerankOutcome& outcome, const QString& referenceLabel)
{
    const RerankResult& result = *outcome.result;
    const QString mode = outcome.stamp.modeName();
    banner_->setResultStamp(outcome.stamp);
    int moved = 0;
    for (std::size_t rank = 0; rank < result.ranking.size(); ++rank)
        moved += rankOf(result.referenceRanking, result.ranking[rank].index) != rank;
    const QString order = result.sameOrder
                              ? tr("<b>the same order</b> on both sides")
                              : tr("<b>the order differs</b>: %n passage(s) moved", nullptr, moved);
    QString summary = tr("%1 vs %2, %3: %4. Kendall's tau %5 (1: the same order, 0: unrelated, -1: reversed). "
                         "Errors and Scales show %6.")
                          .arg(mode, referenceLabel.toHtmlEscaped(), QString::fromLatin1(rerankScorerName(result.scorer)),
                               order)
                          .arg(result.kendallTau, 0, 'f', 3)
                          .arg(outcome.comparedInput.toHtmlEscaped());
    for (const std::string& note : result.notes)
        summary += QLatin1Char(' ') + QString::fromStdString(note).toHtmlEscaped();
    result_->setText(summary);
    showRankings(outcome);
    scores_->setChart(rerankScoresChart(result, mode.toStdString()));
    scores_->setStamp(outcome.stamp.describe());
}

// Rank by rank: the run's passage and score, its move against the reference's rank of the same
// passage, and the reference's passage and score at that rank.
void RerankPanel::showRankings(const RerankOutcome& outcome)
{
    const RerankResult& result = *outcome.result;
    rankings_->clear();
    // Short headers: the two passage columns take the width, elided, whole in their tooltips.
    rankings_->setHorizontalHeaderLabels({tr("#"), tr("run"), tr("score"), tr("move"), tr("reference"), tr("ref score")});
    auto name = [&](std::size_t index) {
        return QString::fromStdString(inputLabel(index, index < std::size_t(outcome.passages.size())
                                                            ? outcome.passages[int(index)].toStdString()
                                                            : std::string(), 1000));
    };
    for (std::size_t rank = 0; rank < result.ranking.size(); ++rank) {
        const RankedPassage& run = result.ranking[rank];
        const std::size_t referenceRank = rankOf(result.referenceRanking, run.index);
        QList<QStandardItem*> row{numberItem(double(rank + 1), 0), longTextItem(name(run.index)), numberItem(run.score, 4),
                                  textItem(rankMoveText(rank, referenceRank))};
        if (rank < result.referenceRanking.size()) {
            const RankedPassage& reference = result.referenceRanking[rank];
            row << longTextItem(name(reference.index)) << numberItem(reference.referenceScore, 4);
        }
        if (referenceRank != rank) {
            const QColor colour = referenceRank > rank ? kMovedUp : kMovedDown;
            for (QStandardItem* item : row)
                item->setBackground(colour);
            QFont bold = row[MoveColumn]->font();
            bold.setBold(true);
            row[MoveColumn]->setFont(bold);
        }
        rankings_->appendRow(row);
    }
    fitColumns(rankingView_, {RunPassageColumn, ReferencePassageColumn});
}

void RerankPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent || !outcome_)
        return;
    section.addChart(scores_);
    section.addTable(QStringLiteral("rerank_rankings"), rankings_);
    nlohmann::json rerank = rerankJson(*outcome_->result);
    rerank["query"] = outcome_->query.toStdString();
    rerank["compared_input"] = outcome_->comparedInput.toStdString();
    section.summary()["rerank"] = rerank;
}

} // namespace scalescope::ui
