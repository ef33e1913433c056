#pragma once
// A chart on screen: the QCustomPlot that renderChart draws into, with Reset View and an Export menu
// (PNG, PDF, SVG, CSV). Clicking a bar or point reports its category index, so panels can drill down.
#include <QPoint>
#include <QWidget>

#include <optional>

#include "report/chart_data.h"

class QCustomPlot;
class QLabel;
class QStackedWidget;
class QToolButton;

namespace scalescope::ui {

class ChartView : public QWidget {
    Q_OBJECT
public:
    explicit ChartView(QWidget* parent = nullptr);

    // Shown instead of the plot while the chart has no series.
    void setPlaceholder(const QString& text);

    void setChart(const ChartData& chart);
    const ChartData& chart() const { return chart_; }
    QCustomPlot* plot() const { return plot_; }
    void resetView();
    // What produced the chart ("qa-fp8, FP8 vs qa-float, CPU"); exported images carry it in the title.
    void setStamp(const QString& stamp) { stamp_ = stamp; }
    QString stamp() const { return stamp_; }
    // The chart as exported: its title followed by the stamp.
    ChartData stampedChart() const;
    // Shades one category's column (a Linear another panel selected); -1 removes the shade. On
    // screen only: exports draw the chart as it is. A new chart drops it.
    void highlightCategory(int index);
    // The same for the category drawn with this label ("L3.ffn.in"); none when absent.
    void highlightCategory(const std::string& label);
    int highlightedCategory() const { return highlighted_; }
    // A pixel of the plot inside the bar of series `series` at `category` as drawn now (the bars
    // of a group sit beside their key), for driving the chart as a user would; none when that bar
    // is not drawn.
    std::optional<QPoint> barPixel(int series, int category) const;

protected:
    // Plain wheel: the page scrolls; Ctrl+wheel: the chart zooms.
    bool eventFilter(QObject* watched, QEvent* event) override;

signals:
    // Index into chart().categories (or the x value rounded, for numeric charts).
    void categoryClicked(int index);

private:
    void exportAs(const QString& format);
    void copyToClipboard();
    void drawHighlight();
    ChartData chart_;
    int highlighted_ = -1;
    QString stamp_;
    QCustomPlot* plot_ = nullptr;
    QLabel* placeholder_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    QToolButton* exportButton_ = nullptr;
    QToolButton* resetButton_ = nullptr;
};

// Series named after the FP8 run ("FP8", "start (FP8)") renamed after the mode that produced them.
void relabelRunSeries(ChartData& chart, const QString& mode);

} // namespace scalescope::ui
