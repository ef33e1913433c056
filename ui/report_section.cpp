#include "report_section.h"

#include "charts/chart_view.h"

namespace scalescope::ui {

void ReportSection::addChart(const ChartView* view)
{
    if (view->chart().series.empty())
        return;
    ChartData chart = view->chart();
    chart.title += " [" + stamp_.toStdString() + "]";
    contents_.charts.push_back(std::move(chart));
}

void ReportSection::addTable(const QString& stem, const QAbstractItemModel* model)
{
    contents_.tables.push_back({stem, model});
}

} // namespace scalescope::ui
