#pragma once
// A chart on screen: the QCustomPlot that renderChart draws into, with Reset View and an Export menu
// (PNG, PDF, SVG, CSV). Clicking a bar or point reports its category index, so panels can drill down.
#include <QWidget>

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

signals:
    // Index into chart().categories (or the x value rounded, for numeric charts).
    void categoryClicked(int index);

private:
    void exportAs(const QString& format);
    ChartData chart_;
    QCustomPlot* plot_ = nullptr;
    QLabel* placeholder_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    QToolButton* exportButton_ = nullptr;
    QToolButton* resetButton_ = nullptr;
};

} // namespace scalescope::ui
