#pragma once
// Rerank panel (a cross-encoder reranker, or a sentence embedder scoring by cosine): a query and
// passages, one per line; out: both rankings side by side (rank by rank, each run passage's move
// against its reference rank marked with an arrow and colour), the run-vs-reference score scatter
// with the line y = x, and Kendall's tau and whether the order is the same, in words.
#include <QWidget>

#include <memory>

#include "panels/result_panel.h"

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QStandardItemModel;
class QTableView;

namespace scalescope::ui {

class ChartView;
class RunButtonState;
class StaleBanner;
class WorkbenchSession;

class RerankPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    explicit RerankPanel(WorkbenchSession* session, QWidget* parent = nullptr);
    ~RerankPanel() override;

    // Ranking table columns.
    enum Column { RankColumn, RunPassageColumn, RunScoreColumn, MoveColumn, ReferencePassageColumn, ReferenceScoreColumn };

    void setRunnable(bool runnable, const QString& reason);
    void setInputs(const QString& query, const QStringList& passages);
    QString query() const;
    QStringList passages() const;
    void rerun();

    void takeResult(const PanelResult& result) override;
    void clearResults(const QString& why) override;
    StaleBanner* banner() const override { return banner_; }
    QString reportName() const override { return QStringLiteral("rerank"); }
    QString notRunReason() const override { return QStringLiteral("no passages reranked yet"); }
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    void setBusy(bool busy) override;

    std::shared_ptr<const RerankOutcome> outcome() const { return outcome_; }
    QPushButton* rerankButton() const { return rerank_; }
    QLabel* resultLabel() const { return result_; }
    QStandardItemModel* rankingModel() const { return rankings_; }
    ChartView* scoresChart() const { return scores_; }

signals:
    void rerankRequested(const QString& query, const QStringList& passages);

private:
    void requestRerank();
    void showOutcome(const RerankOutcome& outcome, const QString& referenceLabel);
    void showRankings(const RerankOutcome& outcome);

    std::shared_ptr<const RerankOutcome> outcome_;
    StaleBanner* banner_ = nullptr;
    QLineEdit* query_ = nullptr;
    QPlainTextEdit* passages_ = nullptr;
    QPushButton* rerank_ = nullptr;
    std::unique_ptr<RunButtonState> runState_;
    QLabel* result_ = nullptr;
    QStandardItemModel* rankings_ = nullptr;
    QTableView* rankingView_ = nullptr;
    ChartView* scores_ = nullptr;
};

// "moved up 2" / "moved down 1" / "" of a passage at run rank `runRank` and reference rank
// `referenceRank` (0-based), as the ranking table's move column writes it with an arrow.
QString rankMoveText(std::size_t runRank, std::size_t referenceRank);

} // namespace scalescope::ui
