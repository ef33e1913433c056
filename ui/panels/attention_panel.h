#pragma once
// Attention panel: the headroom of AIU FP8 attention (docs/ARCHITECTURE.md "Run modes"). math_fp8
// casts each sequence's K and V to E4M3 with one scale over every head, from fixed ranges (K 200,
// V 100): this shows, per layer and head, the largest E4M3 magnitude each head reaches when
// another head sets the scale, the share of values rounded to zero or to a subnormal, and one
// sentence on the head that gets least of the range. It fills from an ask or a fill run with FP8
// attention on (the toolbar's FP8 Attention toggle); what the attention costs in accuracy is the sweep's
// "attention of layer N in FP8" entries.
#include <QWidget>

#include "panels/result_panel.h"
#include "report/chart_data.h"
#include "tasks/compare_runs.h"

class QLabel;
class QStandardItemModel;
class QTableView;

namespace scalescope::ui {

class ChartView;
class StaleBanner;

class AttentionPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    explicit AttentionPanel(QWidget* parent = nullptr);

    void takeResult(const PanelResult& result) override;
    void clearResults(const QString& why) override;
    StaleBanner* banner() const override { return banner_; }
    QString reportName() const override { return QStringLiteral("attention"); }
    QString notRunReason() const override;
    void addToReport(ReportSection& section, bool runResultCurrent) const override;

    // The one-sentence summary on screen, and the per-head table (for tests and the report).
    QString summary() const;
    const QStandardItemModel* headTable() const { return table_; }
    ChartView* keyChart() const { return key_; }
    ChartView* valueChart() const { return value_; }
    ChartView* smallValuesChart() const { return small_; }
    // File > Compare With...: B's K/V headroom and small-value charts beside A's (overlayOrAbsent:
    // "B: not run" until B has run A's input). Null removes B.
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b) override;

private:
    void showComparison(const ComparisonResult& comparison, const RunStamp& stamp);
    void drawCharts();
    ChartData keyA_, valueA_, smallA_; // A's charts, before any overlay
    std::shared_ptr<const CompareWithOutcome> compareWith_;
    QLabel* summary_ = nullptr;
    ChartView* key_ = nullptr;
    ChartView* value_ = nullptr;
    ChartView* small_ = nullptr;
    QStandardItemModel* table_ = nullptr;
    QTableView* tableView_ = nullptr;
    StaleBanner* banner_ = nullptr;
};

} // namespace scalescope::ui
