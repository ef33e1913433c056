#pragma once
// Errors panel: per capture point SQNR, cosine and relative error of the last run against its
// reference (table and per-layer charts); clicking a point or a layer shows its error histogram and a
// reference-vs-FP8 scatter.
#include <QWidget>

#include <memory>

#include "panels/result_panel.h"
#include "report/chart_data.h"
#include "tasks/compare_runs.h"
#include "session_results.h"

class QCheckBox;
class QLabel;
class QSortFilterProxyModel;
class QTableView;
class QTabWidget;

namespace scalescope::ui {

struct CapturePointValues;
class ChartView;
class LayerMetricsModel;
class LinearSelection;
class StaleBanner;
class WorkbenchSession;

class ErrorsPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    // Drill-down points are captured by `session`; the Linear shown follows `selection`, and a
    // click on a Linear's bar selects it there.
    ErrorsPanel(WorkbenchSession* session, LinearSelection* selection, QWidget* parent = nullptr);

    // A new run: its metrics, and the drill-down of the previous run removed.
    void setComparison(std::shared_ptr<const ComparisonResult> comparison, const RunStamp& stamp);
    void showCapturePoint(const CapturePointValues& values);
    void clearResults(const QString& why) override;
    void takeResult(const PanelResult& result) override;
    StaleBanner* banner() const override { return banner_; }
    QString reportName() const override { return QStringLiteral("errors"); }
    QString notRunReason() const override { return QStringLiteral("no run yet: the errors come from answering a question or filling a mask"); }
    // The charts and metrics table, and the final logits' metrics in the summary.
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    QString summaryText() const;
    // Selects the Linear's output row in the table (scrolled to) and shades it in the per-Linear
    // chart and its layer in the per-layer charts; the per-Linear chart comes to the front. The
    // next run's results show the same Linear selected.
    void selectLinear(const QString& module);
    // Selects a capture point's row (showing input rows when it is a Linear's input), scrolled to,
    // and shades its Linear or layer in the charts, as a click on its row would; the next run's
    // results show it selected too. Emits nothing. Returns whether the results shown hold it.
    bool selectCapturePoint(const QString& name);
    // The point selected through selectCapturePoint or a click on a row; empty for none.
    QString selectedCapturePoint() const;
    // File > Compare With...: checkpoint B's run on the same input against the same reference,
    // drawn beside A's in the per-layer, per-Linear and fp16 headroom charts (second colour, legend);
    // the drill-down (A's captured values only) says "B: not run" in its title. Null removes
    // it; the next run of A removes it too (B's numbers would be of another input).
    void setOverlay(std::shared_ptr<const ComparisonResult> b);
    std::shared_ptr<const ComparisonResult> overlay() const { return overlay_; }
    // File > Compare With...: the Compare banner above the table (B's folder, how many config
    // fields differ, the Linears whose scheme differs, the tensors identical / within one E4M3 step /
    // different, and the 3 capture points where A's and B's SQNR differ most) and B's run as the
    // overlay (setOverlay). Null hides the banner and removes B.
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b) override;
    QLabel* compareBanner() const { return compare_; }
    QTabWidget* chartTabs() const { return chartTabs_; }
    std::shared_ptr<const ComparisonResult> comparison() const { return comparison_; }

    LayerMetricsModel* metricsModel() const { return metrics_; }
    QTableView* metricsView() const { return view_; }
    std::vector<ChartView*> charts() const;
    ChartView* linearSqnrView() const { return linearSqnr_; }
    ChartView* layerSqnrView() const { return layerSqnr_; }

signals:
    void capturePointRequested(const QString& name);
    // The user clicked a Linear's bar or its row.
    void linearSelected(const QString& module);

private:
    void createTable();
    void createCharts();
    void layOut();
    void connectClicks();
    void connectSessionAndSelection(WorkbenchSession* session, LinearSelection* selection);
    static QString headroomSentence(const ComparisonResult& comparison);
    void showSelectedLinear();
    bool showSelectedPoint();
    void highlightPoint(const CapturePointMetrics& point);

    void drawRunCharts();
    void drawDrillDown();
    ChartData histogramA_, scatterA_; // the drill-down of A's selected point, before any overlay
    std::shared_ptr<const ComparisonResult> comparison_;
    std::shared_ptr<const ComparisonResult> overlay_;
    QString selectedLinear_;
    QString selectedPoint_; // a capture point another view selected; the Linear's output otherwise
    QLabel* summary_ = nullptr;
    QLabel* compare_ = nullptr;
    std::shared_ptr<const CompareWithOutcome> compareWith_;
    void drawCompareBanner();
    QCheckBox* outputsOnly_ = nullptr;
    LayerMetricsModel* metrics_ = nullptr;
    QSortFilterProxyModel* proxy_ = nullptr;
    QTableView* view_ = nullptr;
    QTabWidget* chartTabs_ = nullptr;
    ChartView* layerSqnr_ = nullptr;
    ChartView* layerCosine_ = nullptr;
    ChartView* growth_ = nullptr;
    ChartView* linearSqnr_ = nullptr;
    ChartView* headroom_ = nullptr;
    QLabel* drillTitle_ = nullptr;
    ChartView* histogram_ = nullptr;
    ChartView* scatter_ = nullptr;
    StaleBanner* banner_ = nullptr;
};

} // namespace scalescope::ui
