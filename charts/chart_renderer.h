#pragma once
// Draws a ChartData (core/report/chart_data.h) into a QCustomPlot: bars, lines, points and min..max
// bands, categorical or numeric x, linear or logarithmic y, dashed horizontal markers, a title and a
// legend. The plot becomes interactive (drag to pan, wheel to zoom) and shows the exact value of the
// data point under the mouse as a tooltip.
#include <QPointF>
#include <QString>

#include <functional>
#include <string>

#include "report/chart_data.h"

class QCustomPlot;

namespace scalescope::ui {

// Clears everything renderChart put on the plot before (plottables, items, title, legend layout)
// and draws the chart; calling it again with another chart replaces the first. Values that a
// logarithmic axis cannot show (<= 0, NaN, inf) are left out rather than drawn wrongly.
void renderChart(QCustomPlot& plot, const ChartData& chart);

// Where data coordinates (x, y) land on screen, in the same units as the cursor (pixels).
using DataToScreen = std::function<QPointF(double x, double y)>;

// The tooltip text for the data point nearest to the cursor, measured on screen through toScreen:
// the series name, the category (or x) and the value(s) at full precision. A bar or band counts as
// hit anywhere inside its drawn extent. Returns an empty string when nothing lies within
// maxDistance. Exposed so that the hover lookup can be tested without a mouse.
QString nearestPointText(const ChartData& chart, const QPointF& cursor, const DataToScreen& toScreen,
                         double maxDistance = 20.0);

// The shortest decimal text that reads back as exactly the same double ("0.1", "448",
// "3.3333333333333335"); "nan", "inf" and "-inf" for the non-finite values.
std::string formatChartValue(double value);

} // namespace scalescope::ui
