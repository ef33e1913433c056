#include "charts/chart_renderer.h"

#include <QFontMetrics>
#include <QMouseEvent>
#include <QResizeEvent>
#include <QToolTip>

#include <qcustomplot.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

namespace scalescope::ui {
namespace {

// Okabe & Ito's palette: distinguishable with the common colour-vision deficiencies and in
// greyscale print. Yellow comes last because it is faint on white.
const std::array<QColor, 8> kPalette = {
    QColor(0x00, 0x72, 0xB2), // blue
    QColor(0xE6, 0x9F, 0x00), // orange
    QColor(0x00, 0x9E, 0x73), // bluish green
    QColor(0xD5, 0x5E, 0x00), // vermillion
    QColor(0xCC, 0x79, 0xA7), // reddish purple
    QColor(0x56, 0xB4, 0xE9), // sky blue
    QColor(0x00, 0x00, 0x00), // black
    QColor(0xF0, 0xE4, 0x42), // yellow
};

// Category slots are 1 wide; bars and bands leave a gap to the neighbouring category.
constexpr double kCategoryFill = 0.8;
constexpr double kBarGapFraction = 0.1;
constexpr double kBandFill = 0.5;
// Beyond this many, category labels are thinned out so that they stay legible.
constexpr int kMaxCategoryLabels = 30;
// Longer category names (full module paths) are cut at the start: their end tells them apart.
constexpr int kMaxCategoryLabelPixels = 190;
// Rotate the labels when there are many, or when laid flat they would need more than this many
// pixels: a window may well be narrower than the exported image.
constexpr int kMaxFlatLabels = 8;
constexpr int kFlatLabelsBudgetPixels = 600;
constexpr int kMaxLineMarkers = 80;
// The plot property holding the y axis title as the chart gives it (the axis shows it elided).
const char* const kFullYLabel = "scalescopeFullYLabel";
// The plot property holding the chart's title (the title element shows it wrapped to the width).
const char* const kFullTitle = "scalescopeFullTitle";
// The plot property holding the x axis title as the chart gives it (the axis shows it wrapped).
const char* const kFullXLabel = "scalescopeFullXLabel";

QColor seriesColor(const ChartData& chart, std::size_t index)
{
    const std::string& requested = chart.series[index].color;
    if (!requested.empty()) {
        const QColor color(QString::fromStdString(requested));
        if (color.isValid())
            return color;
    }
    return kPalette[index % kPalette.size()];
}

bool isCategorical(const ChartData& chart) { return !chart.categories.empty(); }

// How many bars stand side by side in one slot: every bar series, unless no two of them share an
// x, as when a chart colours its bars by class (within or above a limit) by splitting them into
// series; such bars stand alone at their x, full width.
int barsPerSlot(const ChartData& chart)
{
    int barSeries = 0;
    std::set<double> seen;
    bool shared = false;
    for (const ChartSeries& series : chart.series) {
        if (series.style != SeriesStyle::Bars)
            continue;
        ++barSeries;
        std::set<double> own;
        for (std::size_t i = 0; i < pointCount(series); ++i)
            if (std::isfinite(series.x[i]))
                own.insert(series.x[i]);
        for (double x : own)
            shared = !seen.insert(x).second || shared;
    }
    return shared ? barSeries : std::min(barSeries, 1);
}

// QCustomPlot's log ticker falls back to linear ticks when the range spans under 1.6 decades, and
// the axis prints those in the log axis' power format with no decimals: 8, 10 and 12 become
// "8·10^0", "10^1" and "10^1" again, crowded into the top of the decade. Here a narrow range gets
// ticks at 1, 2 and 5 times a power of ten (evenly spread on a log axis, exact with no decimals);
// only a zoom inside one such step falls back to linear ticks, printed with the digits they need.
class LogTicker : public QCPAxisTickerLog {
protected:
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override
    {
        narrow_ = false;
        if (!(range.lower > 0.0) || std::log10(range.upper / range.lower) >= 1.6)
            return QCPAxisTickerLog::createTickVector(tickStep, range);
        narrow_ = true;
        QVector<double> ticks;
        const double lowest = range.lower * (1.0 - 1e-9), highest = range.upper * (1.0 + 1e-9);
        for (double exponent = std::floor(std::log10(range.lower)); exponent <= std::ceil(std::log10(range.upper));
             ++exponent)
            for (const double mantissa : {1.0, 2.0, 5.0}) {
                const double tick = mantissa * std::pow(10.0, exponent);
                if (tick >= lowest && tick <= highest)
                    ticks.append(tick);
            }
        // The plain linear ticks, deliberately not the log ticker's own (which fall back to them anyway).
        return ticks.size() >= 2
            ? ticks
            : QCPAxisTicker::createTickVector(tickStep, range); // NOLINT(bugprone-parent-virtual-call)
    }
    int getSubTickCount(double tickStep) override { return narrow_ ? 0 : QCPAxisTickerLog::getSubTickCount(tickStep); }
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override
    {
        const double mantissa = tick / std::pow(10.0, std::floor(std::log10(tick)));
        const bool whole = std::abs(mantissa - std::round(mantissa)) < 1e-6;
        return QCPAxisTicker::getTickLabel(tick, locale, formatChar, whole ? precision : 2);
    }

private:
    bool narrow_ = false;
};

bool drawableValue(double value, bool logY) { return std::isfinite(value) && (!logY || value > 0.0); }

// A heat map (block scales) fills the axis rect with unit cells instead of plotting values on y.
bool hasCells(const ChartData& chart)
{
    return std::any_of(chart.series.begin(), chart.series.end(),
                       [](const ChartSeries& series) { return series.style == SeriesStyle::Cells; });
}

struct Range {
    double lower = 0.0;
    double upper = 1.0;
};

// Everything about where things are drawn that both the renderer and the hover lookup need, so
// that the tooltip finds a bar exactly where it was drawn.
struct Geometry {
    double barWidth = kCategoryFill;           // one bar, in x units
    std::vector<double> barOffsets;            // per series: shift of its bars within the group
    double bandWidth = kBandFill;
    Range x;
    Range y;
    double barBase = 0.0;                       // log axes cannot show 0: bars rise from the axis floor
};

// The x spacing that one category (or one step of a numeric x) occupies.
double slotWidth(const ChartData& chart)
{
    if (isCategorical(chart))
        return 1.0;
    std::vector<double> xs;
    for (const ChartSeries& series : chart.series) {
        if (series.style != SeriesStyle::Bars && series.style != SeriesStyle::Band)
            continue;
        for (std::size_t i = 0; i < pointCount(series); ++i)
            if (std::isfinite(series.x[i]))
                xs.push_back(series.x[i]);
    }
    std::sort(xs.begin(), xs.end());
    double smallestGap = std::numeric_limits<double>::infinity();
    for (std::size_t i = 1; i < xs.size(); ++i)
        if (xs[i] > xs[i - 1])
            smallestGap = std::min(smallestGap, xs[i] - xs[i - 1]);
    return std::isfinite(smallestGap) ? smallestGap : 1.0;
}

Range paddedLinearRange(double lowest, double highest)
{
    if (!(lowest <= highest))
        return {0.0, 1.0};
    if (lowest == highest) {
        // All zero (an EM and F1 of 0 on every row): 0..1, not -1..1 around nothing.
        if (lowest == 0.0)
            return {0.0, 1.0};
        const double pad = std::abs(lowest) * 0.1;
        return {lowest - pad, highest + pad};
    }
    const double pad = 0.06 * (highest - lowest);
    // Bars stand on zero: keep the axis starting exactly there instead of a little below.
    return {lowest == 0.0 ? 0.0 : lowest - pad, highest == 0.0 ? 0.0 : highest + pad};
}

// Whole decades, so that the log ticker (which ticks at powers of ten) always has labels to show.
Range decadeRange(double lowest, double highest)
{
    if (!(lowest > 0.0 && lowest <= highest))
        return {0.1, 10.0};
    const double lowerExponent = std::floor(std::log10(lowest) - 0.02);
    double upperExponent = std::ceil(std::log10(highest) + 0.02);
    if (upperExponent <= lowerExponent)
        upperExponent = lowerExponent + 1.0;
    return {std::pow(10.0, lowerExponent), std::pow(10.0, upperExponent)};
}

// Cells are unit squares centred on whole (x, y): the axes span them exactly.
Geometry cellGeometry(const ChartData& chart)
{
    Geometry geometry;
    geometry.barOffsets.assign(chart.series.size(), 0.0);
    double xHigh = 0.0, yHigh = 0.0;
    for (const ChartSeries& series : chart.series)
        for (std::size_t i = 0; i < pointCount(series); ++i)
            if (std::isfinite(series.x[i]) && std::isfinite(series.y[i])) {
                xHigh = std::max(xHigh, series.x[i]);
                yHigh = std::max(yHigh, series.y[i]);
            }
    geometry.x = {-0.5, xHigh + 0.5};
    geometry.y = {-0.5, yHigh + 0.5};
    return geometry;
}

Geometry computeGeometry(const ChartData& chart)
{
    if (hasCells(chart))
        return cellGeometry(chart);
    Geometry geometry;
    const double slot = slotWidth(chart);
    const int barSeriesCount = barsPerSlot(chart);
    const double barStep = slot * kCategoryFill / std::max(barSeriesCount, 1);
    geometry.barWidth = barStep * (barSeriesCount > 1 ? 1.0 - kBarGapFraction : 1.0);
    geometry.bandWidth = slot * kBandFill;
    geometry.barOffsets.assign(chart.series.size(), 0.0);
    int barIndex = 0;
    for (std::size_t s = 0; s < chart.series.size(); ++s)
        if (chart.series[s].style == SeriesStyle::Bars && barSeriesCount > 1)
            geometry.barOffsets[s] = (barIndex++ - (barSeriesCount - 1) / 2.0) * barStep;

    const bool logY = chart.logY;
    double xLow = std::numeric_limits<double>::infinity(), xHigh = -xLow;
    double yLow = xLow, yHigh = -xLow;
    bool hasBars = false;
    auto includeY = [&](double value) {
        if (drawableValue(value, logY)) {
            yLow = std::min(yLow, value);
            yHigh = std::max(yHigh, value);
        }
    };
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
        const ChartSeries& series = chart.series[s];
        const double halfWidth = series.style == SeriesStyle::Bars   ? geometry.barWidth / 2
                                 : series.style == SeriesStyle::Band ? geometry.bandWidth / 2
                                                                     : 0.0;
        for (std::size_t i = 0; i < pointCount(series); ++i) {
            const double x = series.x[i] + geometry.barOffsets[s];
            if (!std::isfinite(x))
                continue;
            xLow = std::min(xLow, x - halfWidth);
            xHigh = std::max(xHigh, x + halfWidth);
            includeY(series.y[i]);
            if (series.style == SeriesStyle::Band)
                includeY(series.yUpper[i]);
            if (series.style == SeriesStyle::Bars && drawableValue(series.y[i], logY))
                hasBars = true;
        }
    }
    for (const auto& [value, label] : chart.horizontalMarkers)
        includeY(value);

    if (isCategorical(chart)) {
        const double categories = static_cast<double>(chart.categories.size());
        geometry.x = {std::min(-0.6, xLow - 0.1), std::max(categories - 0.4, xHigh + 0.1)};
    } else {
        geometry.x = paddedLinearRange(xLow, xHigh);
        if (xLow < xHigh)
            geometry.x = {xLow - 0.03 * (xHigh - xLow), xHigh + 0.03 * (xHigh - xLow)};
    }
    if (logY) {
        geometry.y = decadeRange(yLow, yHigh);
        geometry.barBase = geometry.y.lower;
    } else {
        if (hasBars) {
            yLow = std::min(yLow, 0.0);
            yHigh = std::max(yHigh, 0.0);
        }
        geometry.y = paddedLinearRange(yLow, yHigh);
        geometry.barBase = 0.0;
    }
    return geometry;
}

// A band's lower end on a log axis: a bound of zero (or below) means "all the way down".
bool bandBounds(const ChartSeries& series, std::size_t i, const Geometry& geometry, bool logY, double& low,
                double& high)
{
    double a = series.y[i], b = series.yUpper[i];
    if (!std::isfinite(a) || !std::isfinite(b))
        return false;
    if (a > b)
        std::swap(a, b);
    if (logY) {
        if (b <= 0.0)
            return false;
        if (a <= 0.0)
            a = geometry.barBase;
    }
    low = a;
    high = b;
    return true;
}

// What a tooltip shows of a value: 4 significant digits (exports keep every digit).
QString shownValue(double value)
{
    if (!std::isfinite(value))
        return QString::fromStdString(formatChartValue(value));
    return QString::number(value, 'g', 4);
}

QString categoryOrX(const ChartData& chart, double x)
{
    if (isCategorical(chart) && std::isfinite(x) && x >= 0.0 && x == std::floor(x) &&
        x < static_cast<double>(chart.categories.size()))
        return QString::fromStdString(chart.categories[static_cast<std::size_t>(x)]);
    return shownValue(x);
}

QString pointText(const ChartData& chart, std::size_t s, std::size_t i)
{
    const ChartSeries& series = chart.series[s];
    const QString xName = !chart.xLabel.empty() ? QString::fromStdString(chart.xLabel)
                          : isCategorical(chart)  ? QStringLiteral("category")
                                                  : QStringLiteral("x");
    const QString yName = chart.yLabel.empty() ? QStringLiteral("value") : QString::fromStdString(chart.yLabel);
    QString text = QString::fromStdString(series.name.empty() ? "series " + std::to_string(s + 1) : series.name);
    text += QStringLiteral("\n%1: %2").arg(xName, categoryOrX(chart, series.x[i]));
    if (series.style == SeriesStyle::Cells)
        text += QStringLiteral("\n%1: %2\nvalue: %3")
                    .arg(yName, shownValue(series.y[i]),
                         shownValue(series.z[i]));
    else if (series.style == SeriesStyle::Band)
        text += QStringLiteral("\n%1 min: %2\n%1 max: %3")
                    .arg(yName, shownValue(series.y[i]),
                         shownValue(series.yUpper[i]));
    else
        text += QStringLiteral("\n%1: %2").arg(yName, shownValue(series.y[i]));
    return text;
}

// Distance from a point to the axis-parallel rectangle spanned by two corners (0 inside).
double distanceToRect(const QPointF& point, const QPointF& cornerA, const QPointF& cornerB)
{
    const double left = std::min(cornerA.x(), cornerB.x()), right = std::max(cornerA.x(), cornerB.x());
    const double top = std::min(cornerA.y(), cornerB.y()), bottom = std::max(cornerA.y(), cornerB.y());
    const double dx = std::max({left - point.x(), 0.0, point.x() - right});
    const double dy = std::max({top - point.y(), 0.0, point.y() - bottom});
    return std::hypot(dx, dy);
}

// ---- drawing ----

void clearPreviousChart(QCustomPlot& plot)
{
    plot.clearItems();
    plot.clearPlottables();
    // A heat map aligned its colour scale with the axis rect through a margin group.
    plot.axisRect()->setMarginGroup(QCP::msAll, nullptr);
    for (QCPMarginGroup* group : plot.findChildren<QCPMarginGroup*>(QString(), Qt::FindDirectChildrenOnly))
        delete group;
    for (QCPBarsGroup* group : plot.findChildren<QCPBarsGroup*>(QString(), Qt::FindDirectChildrenOnly))
        delete group;

    // The plot layout is the axis rect plus what addTitleAndLegend put around it; the legend goes
    // back to its default home inside the axis rect before the rest is deleted.
    QCPLayoutGrid* layout = plot.plotLayout();
    QCPLayoutInset* inset = plot.axisRect()->insetLayout();
    if (plot.legend && plot.legend->layout() != inset) {
        if (plot.legend->layout())
            plot.legend->layout()->take(plot.legend);
        inset->addElement(plot.legend, Qt::AlignRight | Qt::AlignTop);
    }
    // A heat map nested the axis rect in a row with its colour scale (drawCells): back to the top.
    QCPAxisRect* axisRect = plot.axisRect();
    if (axisRect->layout() && axisRect->layout() != layout) {
        axisRect->layout()->take(axisRect);
        layout->insertRow(layout->rowCount());
        layout->addElement(layout->rowCount() - 1, 0, axisRect);
    }
    QList<QCPLayoutElement*> added;
    for (int i = 0; i < layout->elementCount(); ++i)
        if (layout->elementAt(i) && layout->elementAt(i) != plot.axisRect())
            added.append(layout->elementAt(i));
    for (QCPLayoutElement* element : added)
        layout->remove(element);
    layout->simplify();
}

void setUpCategoryAxis(QCustomPlot& plot, const ChartData& chart)
{
    QCPAxis* axis = plot.xAxis;
    const QFontMetrics metrics(axis->tickLabelFont());
    const int count = static_cast<int>(chart.categories.size());
    const int step = count <= kMaxCategoryLabels ? 1 : (count + kMaxCategoryLabels - 1) / kMaxCategoryLabels;
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    int widest = 0, shown = 0;
    for (int i = 0; i < count; i += step) {
        const QString label = metrics.elidedText(QString::fromStdString(chart.categories[static_cast<std::size_t>(i)]),
                                                 Qt::ElideMiddle, kMaxCategoryLabelPixels);
        widest = std::max(widest, metrics.horizontalAdvance(label));
        ticker->addTick(i, label);
        ++shown;
    }
    ticker->setSubTickCount(0);
    axis->setTicker(ticker);
    const bool crowded = shown > kMaxFlatLabels || shown * (widest + 12) > kFlatLabelsBudgetPixels;
    // Negative: the rotated label ends at its own tick and rises to the left, instead of starting
    // there and running down under the next bars.
    axis->setTickLabelRotation(crowded ? -45.0 : 0.0);
    axis->grid()->setVisible(false);
}

bool allXWhole(const ChartData& chart)
{
    bool any = false;
    for (const ChartSeries& series : chart.series)
        for (std::size_t i = 0; i < pointCount(series); ++i) {
            const double x = series.x[i];
            if (!std::isfinite(x))
                continue;
            if (x != std::floor(x) || std::abs(x) > 1e15)
                return false;
            any = true;
        }
    return any;
}

void setUpAxes(QCustomPlot& plot, const ChartData& chart, const Geometry& geometry)
{
    QCPAxis* x = plot.xAxis;
    QCPAxis* y = plot.yAxis;
    x->setLabel(QString::fromStdString(chart.xLabel));
    y->setLabel(QString::fromStdString(chart.yLabel));
    plot.setProperty(kFullXLabel, x->label());
    plot.setProperty(kFullYLabel, y->label());
    x->setScaleType(QCPAxis::stLinear);
    x->setTickLabelRotation(0.0);
    x->grid()->setVisible(true);
    // A heat map reads like a matrix: row 0 at the top.
    y->setRangeReversed(hasCells(chart));
    if (isCategorical(chart))
        setUpCategoryAxis(plot, chart);
    else if (allXWhole(chart)) {
        // Layer numbers and the like: 2.5 would name nothing.
        auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
        ticker->setTickStep(1.0);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        x->setTicker(ticker);
    } else {
        x->setTicker(QSharedPointer<QCPAxisTicker>::create());
    }

    if (chart.logY) {
        auto ticker = QSharedPointer<LogTicker>::create();
        ticker->setLogBase(10.0);
        ticker->setSubTickCount(8);
        y->setTicker(ticker);
        y->setScaleType(QCPAxis::stLogarithmic);
        y->setNumberFormat(QStringLiteral("eb"));
        y->setNumberPrecision(0);
        y->grid()->setSubGridVisible(true);
    } else {
        y->setTicker(QSharedPointer<QCPAxisTicker>::create());
        y->setScaleType(QCPAxis::stLinear);
        y->setNumberFormat(QStringLiteral("gb"));
        y->setNumberPrecision(6);
        y->grid()->setSubGridVisible(false);
    }
    if (hasCells(chart) && chart.rowsAreCategories) {
        // A square matrix: row i is the same input as column i.
        auto ticker = QSharedPointer<QCPAxisTickerText>::create();
        for (std::size_t i = 0; i < chart.categories.size(); ++i)
            ticker->addTick(double(i), QString::fromStdString(chart.categories[i]));
        ticker->setSubTickCount(0);
        y->setTicker(ticker);
        x->grid()->setVisible(false);
        y->grid()->setVisible(false);
    } else if (hasCells(chart)) {
        auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
        ticker->setTickStep(1.0);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        y->setTicker(ticker);
        x->grid()->setVisible(false);
        y->grid()->setVisible(false);
    } else {
        y->grid()->setVisible(true);
    }
    x->setRange(geometry.x.lower, geometry.x.upper);
    y->setRange(geometry.y.lower, geometry.y.upper);
}

QString seriesName(const ChartData& chart, std::size_t s)
{
    const std::string& name = chart.series[s].name;
    return QString::fromStdString(name.empty() ? "series " + std::to_string(s + 1) : name);
}

void drawBars(QCustomPlot& plot, const ChartData& chart, std::size_t s, const Geometry& geometry, QCPBarsGroup* group)
{
    const ChartSeries& series = chart.series[s];
    const QColor color = seriesColor(chart, s);
    auto* bars = new QCPBars(plot.xAxis, plot.yAxis);
    bars->setName(seriesName(chart, s));
    bars->setWidth(geometry.barWidth);
    bars->setBaseValue(geometry.barBase);
    bars->setPen(QPen(color.darker(130), 1.0));
    bars->setBrush(color);
    QVector<double> keys, values;
    for (std::size_t i = 0; i < pointCount(series); ++i)
        if (std::isfinite(series.x[i]) && drawableValue(series.y[i], chart.logY)) {
            keys.append(series.x[i]);
            // QCPBars draws from the base to base + value, so a bar rising from a non-zero
            // floor (log axes) carries its height above that floor.
            values.append(series.y[i] - geometry.barBase);
        }
    bars->setData(keys, values);
    if (group)
        bars->setBarsGroup(group);
}

void drawLineOrPoints(QCustomPlot& plot, const ChartData& chart, std::size_t s)
{
    const ChartSeries& series = chart.series[s];
    const QColor color = seriesColor(chart, s);
    QCPGraph* graph = plot.addGraph(plot.xAxis, plot.yAxis);
    graph->setName(seriesName(chart, s));
    const bool line = series.style == SeriesStyle::Line;
    QVector<double> keys, values;
    for (std::size_t i = 0; i < pointCount(series); ++i) {
        if (!std::isfinite(series.x[i]))
            continue;
        if (drawableValue(series.y[i], chart.logY)) {
            keys.append(series.x[i]);
            values.append(series.y[i]);
        } else if (line) {
            // A gap in the line says "no value here" instead of bridging over it.
            keys.append(series.x[i]);
            values.append(std::numeric_limits<double>::quiet_NaN());
        }
    }
    graph->setData(keys, values);
    if (line) {
        graph->setPen(QPen(color, 2.0));
        graph->setLineStyle(QCPGraph::lsLine);
        if (keys.size() <= kMaxLineMarkers)
            graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, Qt::white, 6));
    } else {
        graph->setPen(QPen(color, 1.5));
        graph->setLineStyle(QCPGraph::lsNone);
        graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, color, 7));
    }
}

// A candlestick whose body spans lower..upper: a filled box per x that a log axis can show.
void drawBand(QCustomPlot& plot, const ChartData& chart, std::size_t s, const Geometry& geometry)
{
    const ChartSeries& series = chart.series[s];
    const QColor color = seriesColor(chart, s);
    auto* band = new QCPFinancial(plot.xAxis, plot.yAxis);
    band->setName(seriesName(chart, s));
    band->setChartStyle(QCPFinancial::csCandlestick);
    band->setTwoColored(false);
    band->setWidth(geometry.bandWidth);
    QColor fill = color;
    fill.setAlpha(120);
    band->setBrush(fill);
    band->setPen(QPen(color.darker(120), 1.5));
    QVector<double> keys, lows, highs;
    for (std::size_t i = 0; i < pointCount(series); ++i) {
        double low = 0.0, high = 0.0;
        if (std::isfinite(series.x[i]) && bandBounds(series, i, geometry, chart.logY, low, high)) {
            keys.append(series.x[i]);
            lows.append(low);
            highs.append(high);
        }
    }
    band->setData(keys, lows, highs, lows, highs);
}

// The colours of a heat map: viridis for magnitudes (ordered in lightness, readable with
// colour-vision deficiencies, and free of the red that marks invalid cells), or blue-white-red for
// a difference centred on zero.
QCPColorGradient cellGradient(bool diverging)
{
    QCPColorGradient gradient;
    if (diverging)
        gradient.setColorStops({{0.0, QColor(0x21, 0x66, 0xAC)}, {0.25, QColor(0x92, 0xC5, 0xDE)},
                                {0.5, QColor(0xF7, 0xF7, 0xF7)}, {0.75, QColor(0xF4, 0xA5, 0x82)},
                                {1.0, QColor(0xB2, 0x18, 0x2B)}});
    else
        gradient.setColorStops({{0.0, QColor(0x44, 0x01, 0x54)}, {0.25, QColor(0x3B, 0x52, 0x8B)},
                                {0.5, QColor(0x21, 0x91, 0x8C)}, {0.75, QColor(0x5E, 0xC9, 0x62)},
                                {1.0, QColor(0xFD, 0xE7, 0x25)}});
    gradient.setNanHandling(QCPColorGradient::nhNanColor);
    // Invalid: zero, negative, NaN or infinite on a log scale; NaN or infinite on a fixed one.
    gradient.setNanColor(diverging ? QColor(0x40, 0x40, 0x40) : QColor(0xD0, 0x00, 0x00));
    return gradient;
}

// The cells' values in a colour map spanning exactly the cells' unit squares.
QCPColorMap* fillCellMap(QCustomPlot& plot, const ChartSeries& series, bool logarithmic)
{
    int columns = 0, rows = 0;
    for (std::size_t i = 0; i < pointCount(series); ++i)
        if (std::isfinite(series.x[i]) && std::isfinite(series.y[i]) && series.x[i] >= 0 && series.y[i] >= 0) {
            columns = std::max(columns, int(series.x[i]) + 1);
            rows = std::max(rows, int(series.y[i]) + 1);
        }
    if (columns == 0)
        return nullptr;
    auto* map = new QCPColorMap(plot.xAxis, plot.yAxis);
    // QCPColorMap spans (size - 1) cell steps between the first and last cell centres, so a single
    // row or column is drawn as two half cells at +-0.25 that together cover -0.5..0.5.
    const int mapColumns = std::max(columns, 2), mapRows = std::max(rows, 2);
    map->data()->setSize(mapColumns, mapRows);
    map->data()->setRange(columns == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, columns - 1),
                          rows == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, rows - 1));
    map->data()->fill(std::numeric_limits<double>::quiet_NaN());
    for (std::size_t i = 0; i < pointCount(series); ++i) {
        if (!(std::isfinite(series.x[i]) && std::isfinite(series.y[i]) && series.x[i] >= 0 && series.y[i] >= 0))
            continue;
        const bool valid = std::isfinite(series.z[i]) && (!logarithmic || series.z[i] > 0);
        const double value = valid ? series.z[i] : std::numeric_limits<double>::quiet_NaN();
        const int column = int(series.x[i]), row = int(series.y[i]);
        for (int c = column; c < (columns == 1 ? 2 : column + 1); ++c)
            for (int r = row; r < (rows == 1 ? 2 : row + 1); ++r)
                map->data()->setCell(c, r, value);
    }
    map->setInterpolate(false);
    return map;
}

// A heat map of cells with its colour scale at the right of the plot: logarithmic and fitted to
// the data, or linear over the chart's fixed cell range (ChartData::cellLower..cellUpper).
void drawCells(QCustomPlot& plot, const ChartData& chart, const ChartSeries& series, const QString& name)
{
    const bool logarithmic = !chart.hasFixedCellRange();
    QCPColorMap* map = fillCellMap(plot, series, logarithmic);
    if (!map)
        return;
    map->setName(name);
    const QCPColorGradient gradient = cellGradient(chart.divergingCells);
    map->setGradient(gradient);
    const QCPAxis::ScaleType scaleType = logarithmic ? QCPAxis::stLogarithmic : QCPAxis::stLinear;
    map->setDataScaleType(scaleType);
    // The plot and its scale share one cell of the main layout (a row of their own), so that the
    // title and legend rows above and below span both: in a column of the main layout of their
    // own, a centred title was centred over the plot alone and cut on a narrow chart.
    auto* scale = new QCPColorScale(&plot);
    auto* plotAndScale = new QCPLayoutGrid;
    QCPAxisRect* axisRect = plot.axisRect();
    plot.plotLayout()->take(axisRect);
    plot.plotLayout()->simplify();
    plot.plotLayout()->addElement(0, 0, plotAndScale);
    plotAndScale->addElement(0, 0, axisRect);
    plotAndScale->addElement(0, 1, scale);
    plotAndScale->setMargins(QMargins(0, 0, 0, 0));
    scale->setType(QCPAxis::atRight);
    scale->setDataScaleType(scaleType);
    if (logarithmic) {
        scale->axis()->setTicker(QSharedPointer<LogTicker>::create());
        scale->axis()->setNumberFormat(QStringLiteral("eb"));
        scale->axis()->setNumberPrecision(1);
        scale->axis()->setLabel(name + QStringLiteral(" (log)"));
    } else {
        scale->axis()->setLabel(name);
    }
    map->setColorScale(scale);
    scale->setGradient(gradient); // linking the scale hands the map the scale's gradient
    if (logarithmic)
        map->rescaleDataRange(true);
    else
        map->setDataRange(QCPRange(chart.cellLower, chart.cellUpper));
    auto* margins = new QCPMarginGroup(&plot); // deleted with the next chart (clearPreviousChart)
    plot.axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
}

void drawSeries(QCustomPlot& plot, const ChartData& chart, const Geometry& geometry)
{
    const int barSeriesCount = barsPerSlot(chart);
    QCPBarsGroup* group = barSeriesCount > 1 ? new QCPBarsGroup(&plot) : nullptr;
    if (group) {
        group->setSpacingType(QCPBarsGroup::stPlotCoords);
        group->setSpacing(geometry.barWidth * kBarGapFraction / (1.0 - kBarGapFraction));
    }
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
        switch (chart.series[s].style) {
        case SeriesStyle::Bars: drawBars(plot, chart, s, geometry, group); break;
        case SeriesStyle::Line:
        case SeriesStyle::Points: drawLineOrPoints(plot, chart, s); break;
        case SeriesStyle::Band: drawBand(plot, chart, s, geometry); break;
        case SeriesStyle::Cells: drawCells(plot, chart, chart.series[s], seriesName(chart, s)); break;
        }
    }
}

// Behind the grid, full width, clipped to the axis rect: a bound past the axis is simply cut.
void drawValueBands(QCustomPlot& plot, const ChartData& chart)
{
    for (const ValueBand& band : chart.valueBands) {
        QColor color(QString::fromStdString(band.color));
        color.setAlpha(28);
        auto* rect = new QCPItemRect(&plot);
        rect->setLayer(QStringLiteral("background"));
        rect->setClipToAxisRect(true);
        for (QCPItemPosition* corner : {rect->topLeft, rect->bottomRight}) {
            corner->setTypeX(QCPItemPosition::ptAxisRectRatio);
            corner->setTypeY(QCPItemPosition::ptPlotCoords);
        }
        rect->topLeft->setCoords(0.0, band.upper);
        rect->bottomRight->setCoords(1.0, band.lower);
        rect->setPen(Qt::NoPen);
        rect->setBrush(color);
        if (band.label.empty())
            continue;
        // The label sits at the band's lower edge on the left, where bars rarely reach.
        auto* text = new QCPItemText(&plot);
        text->setLayer(QStringLiteral("background"));
        text->setClipToAxisRect(true);
        text->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
        text->position->setTypeY(QCPItemPosition::ptPlotCoords);
        // A band open downwards (poor: below 20 dB) is labelled at the axis floor, where it shows.
        text->position->setCoords(0.005, std::max(band.lower, plot.yAxis->range().lower));
        text->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
        text->setText(QString::fromStdString(band.label));
        color.setAlpha(255);
        text->setColor(color);
        QFont font = plot.font();
        font.setPointSizeF(font.pointSizeF() * 0.85);
        text->setFont(font);
    }
}

void drawMarkers(QCustomPlot& plot, const ChartData& chart)
{
    const QColor markerColor(0x44, 0x44, 0x44);
    for (const auto& [value, label] : chart.horizontalMarkers) {
        if (!drawableValue(value, chart.logY))
            continue;
        auto* line = new QCPItemStraightLine(&plot);
        line->point1->setCoords(0.0, value);
        line->point2->setCoords(1.0, value);
        line->setPen(QPen(markerColor, 1.5, Qt::DashLine));

        auto* text = new QCPItemText(&plot);
        text->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
        text->position->setTypeY(QCPItemPosition::ptPlotCoords);
        text->position->setCoords(0.995, value);
        // Above its line, or below it when the line runs along the top of the axis, where a label
        // above would be cut; on a light backing where it crosses bars.
        const QCPRange range = plot.yAxis->range();
        const double height = chart.logY ? std::log10(range.upper / range.lower) : range.upper - range.lower;
        const double fromTop = chart.logY ? std::log10(range.upper / value) : range.upper - value;
        const bool nearTop = height > 0 && fromTop < 0.12 * height;
        text->setPositionAlignment(Qt::AlignRight | (nearTop ? Qt::AlignTop : Qt::AlignBottom));
        text->setText(QString::fromStdString(label.empty() ? formatChartValue(value) : label));
        text->setColor(markerColor);
        text->setBrush(QBrush(QColor(255, 255, 255, 200)));
        text->setPadding(nearTop ? QMargins(2, 2, 2, 0) : QMargins(2, 0, 2, 2));
    }
    // A pair (an answer's start and end, maybe adjacent tokens) is labelled outward, left of the
    // first line and right of the second, so that the labels never cover each other.
    const std::size_t verticalCount = chart.verticalMarkers.size();
    for (std::size_t i = 0; i < verticalCount; ++i) {
        const auto& [value, label] = chart.verticalMarkers[i];
        const Qt::Alignment side = verticalCount != 2 ? Qt::AlignHCenter : i == 0 ? Qt::AlignRight : Qt::AlignLeft;
        auto* line = new QCPItemStraightLine(&plot);
        line->point1->setCoords(value, 1.0);
        line->point2->setCoords(value, 2.0);
        line->setPen(QPen(markerColor, 1.5, Qt::DashLine));

        auto* text = new QCPItemText(&plot);
        text->position->setTypeX(QCPItemPosition::ptPlotCoords);
        text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        text->position->setCoords(value, 0.0);
        text->setPositionAlignment(side | Qt::AlignTop);
        text->setText(QString::fromStdString(label));
        text->setColor(markerColor);
        text->setBrush(QBrush(QColor(255, 255, 255, 200)));
        text->setPadding(QMargins(2, 1, 2, 1));
    }
}

void addTitleAndLegend(QCustomPlot& plot, const ChartData& chart)
{
    QCPLayoutGrid* layout = plot.plotLayout();
    if (!chart.title.empty()) {
        QFont font = plot.font();
        font.setPointSizeF(font.pointSizeF() * 1.3);
        font.setBold(true);
        layout->insertRow(0);
        // Wrapped to the plot's width by fitTitle, here and on every resize.
        plot.setProperty(kFullTitle, QString::fromStdString(chart.title));
        auto* title = new QCPTextElement(&plot, QString::fromStdString(chart.title), font);
        title->setObjectName(QStringLiteral("chartTitle"));
        layout->addElement(0, 0, title);
        layout->setRowStretchFactor(0, 0.001);
    }
    const bool showLegend = chart.series.size() > 1;
    plot.legend->setVisible(showLegend);
    if (showLegend) {
        // Below the plot, centred between two empty cells that take the spare width: inside the
        // axis rect it would cover bars, and alone in the row its entries would spread apart.
        plot.axisRect()->insetLayout()->take(plot.legend);
        auto* legendRow = new QCPLayoutGrid;
        const int row = layout->rowCount();
        layout->addElement(row, 0, legendRow);
        layout->setRowStretchFactor(row, 0.001);
        legendRow->addElement(0, 0, new QCPLayoutElement(&plot));
        legendRow->addElement(0, 1, plot.legend);
        legendRow->addElement(0, 2, new QCPLayoutElement(&plot));
        legendRow->setColumnStretchFactor(1, 0.001);
        legendRow->setMargins(QMargins(0, 0, 0, 0));
        // Four entries a row, two when a name is long (a comparison's "A: ..." / "B: ..." entries):
        // four long entries are wider than a half-screen chart, which cuts every entry's text.
        std::size_t longest = 0;
        for (const ChartSeries& series : chart.series)
            longest = std::max(longest, series.name.size());
        plot.legend->setWrap(longest > 14 ? 2 : 4);
        plot.legend->setFillOrder(QCPLegend::foColumnsFirst); // after the wrap: it rearranges the entries
        plot.legend->setBorderPen(Qt::NoPen);
        plot.legend->setBrush(Qt::NoBrush);
        plot.legend->setColumnSpacing(24);
        plot.legend->setMargins(QMargins(7, 0, 7, 5));
    }
}

// `text` broken at spaces into lines that each fit `width` pixels (a single word longer than that
// stays whole on its line).
QString wrappedToWidth(const QString& text, const QFontMetrics& metrics, int width)
{
    QStringList lines;
    for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        if (!lines.isEmpty() && metrics.horizontalAdvance(lines.last() + QLatin1Char(' ') + word) <= width)
            lines.last() += QLatin1Char(' ') + word;
        else
            lines << word;
    }
    return lines.join(QLatin1Char('\n'));
}

// A centred title wider than the plot is cut at both ends: broken into lines that each fit
// `width` pixels instead.
void fitTitle(QCustomPlot& plot, int width)
{
    auto* title = plot.plotLayout()->rowCount() > 1 ? qobject_cast<QCPTextElement*>(plot.plotLayout()->element(0, 0)) : nullptr;
    if (!title || title->objectName() != QLatin1String("chartTitle"))
        return;
    const QString text = wrappedToWidth(plot.property(kFullTitle).toString(), QFontMetrics(title->font()), std::max(width - 16, 80));
    if (title->text() != text)
        title->setText(text);
}

// The x axis title is centred under the data area: one wider than that area runs past the plot's
// edges and is cut at both ends (the calibration charts' long titles, a half-screen chart at
// 1024 px). Broken into lines that fit the data area's `axisWidth` instead.
void fitXLabel(QCustomPlot& plot, int axisWidth)
{
    const QString text = wrappedToWidth(plot.property(kFullXLabel).toString(), QFontMetrics(plot.xAxis->labelFont()),
                                        std::max(axisWidth, 80));
    if (plot.xAxis->label() != text)
        plot.xAxis->setLabel(text);
}

// QCustomPlot aims at five y ticks whatever the height, so a chart squeezed to 60 px stacks its
// labels on top of each other. The target follows the axis' height instead: a tick label's height
// and more between ticks (the log ticker spaces its decades by the same target). `axisHeight` is
// the axis rect's height in pixels. The y axis title may run past the axis into the title and
// x-axis margins, but one longer than the whole plot is cut in its middle rather than at both ends.
void fitYAxis(QCustomPlot& plot, int axisHeight, int plotHeight)
{
    const int labelHeight = QFontMetrics(plot.yAxis->tickLabelFont()).height();
    const int count = std::clamp(axisHeight / (2 * std::max(labelHeight, 1)), 2, 5);
    if (plot.yAxis->ticker()->tickCount() != count)
        plot.yAxis->ticker()->setTickCount(count);
    const QString full = plot.property(kFullYLabel).toString();
    plot.yAxis->setLabel(
        QFontMetrics(plot.yAxis->labelFont()).elidedText(full, Qt::ElideMiddle, std::max(plotHeight - 8, 40)));
}

// Refits the y axis when the plot is resized, before QCustomPlot's own resize handler
// replots: the axis rect changes height by as much as the plot's viewport does.
class YTickCountFitter : public QObject {
public:
    explicit YTickCountFitter(QCustomPlot* plot) : QObject(plot), plot_(plot)
    {
        setObjectName(QStringLiteral("yTickCountFitter"));
        plot->installEventFilter(this);
    }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override
    {
        if (watched == plot_ && event->type() == QEvent::Resize) {
            // Against the viewport the layout was made for: a widget shown for the first time
            // gets its pending resize with no old size.
            const int height = static_cast<QResizeEvent*>(event)->size().height();
            fitTitle(*plot_, static_cast<QResizeEvent*>(event)->size().width());
            fitXLabel(*plot_, plot_->axisRect()->width() + static_cast<QResizeEvent*>(event)->size().width() - plot_->viewport().width());
            fitYAxis(*plot_, plot_->axisRect()->height() + height - plot_->viewport().height(), height);
        }
        return QObject::eventFilter(watched, event);
    }

private:
    QCustomPlot* plot_;
};

// Shows the exact value under the mouse. One per plot; it keeps a copy of the chart it describes.
class ChartHoverTips : public QObject {
    Q_OBJECT
public:
    explicit ChartHoverTips(QCustomPlot* plot) : QObject(plot), plot_(plot)
    {
        connect(plot, &QCustomPlot::mouseMove, this, &ChartHoverTips::showTipFor);
    }
    void setChart(const ChartData& chart) { chart_ = chart; }

private:
    void showTipFor(QMouseEvent* event)
    {
        const QPointF cursor = event->position();
        if (event->buttons() != Qt::NoButton || !plot_->axisRect()->rect().contains(cursor.toPoint())) {
            QToolTip::hideText();
            return;
        }
        QCPAxis* xAxis = plot_->xAxis;
        QCPAxis* yAxis = plot_->yAxis;
        const QString text = nearestPointText(chart_, cursor, [xAxis, yAxis](double x, double y) {
            return QPointF(xAxis->coordToPixel(x), yAxis->coordToPixel(y));
        });
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
    }

    QCustomPlot* plot_;
    ChartData chart_;
};

} // namespace

std::string formatChartValue(double value)
{
    if (std::isnan(value))
        return "nan";
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

QString nearestPointText(const ChartData& chart, const QPointF& cursor, const DataToScreen& toScreen,
                         double maxDistance)
{
    const Geometry geometry = computeGeometry(chart);
    const bool logY = chart.logY;
    double best = std::numeric_limits<double>::infinity();
    std::size_t bestSeries = 0, bestPoint = 0;
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
        const ChartSeries& series = chart.series[s];
        for (std::size_t i = 0; i < pointCount(series); ++i) {
            const double x = series.x[i] + geometry.barOffsets[s];
            if (!std::isfinite(x))
                continue;
            double distance = std::numeric_limits<double>::infinity();
            switch (series.style) {
            case SeriesStyle::Bars: {
                if (!drawableValue(series.y[i], logY))
                    continue;
                const double half = geometry.barWidth / 2;
                distance = distanceToRect(cursor, toScreen(x - half, geometry.barBase), toScreen(x + half, series.y[i]));
                break;
            }
            case SeriesStyle::Band: {
                double low = 0.0, high = 0.0;
                if (!bandBounds(series, i, geometry, logY, low, high))
                    continue;
                const double half = geometry.bandWidth / 2;
                distance = distanceToRect(cursor, toScreen(x - half, low), toScreen(x + half, high));
                break;
            }
            case SeriesStyle::Cells:
                if (!std::isfinite(series.y[i]))
                    continue;
                distance = distanceToRect(cursor, toScreen(x - 0.5, series.y[i] - 0.5), toScreen(x + 0.5, series.y[i] + 0.5));
                break;
            case SeriesStyle::Line:
            case SeriesStyle::Points: {
                if (!drawableValue(series.y[i], logY))
                    continue;
                const QPointF point = toScreen(x, series.y[i]);
                distance = std::hypot(point.x() - cursor.x(), point.y() - cursor.y());
                break;
            }
            }
            if (distance < best) {
                best = distance;
                bestSeries = s;
                bestPoint = i;
            }
        }
    }
    if (!(best <= maxDistance))
        return QString();
    return pointText(chart, bestSeries, bestPoint);
}

void renderChart(QCustomPlot& plot, const ChartData& chart)
{
    clearPreviousChart(plot);
    const Geometry geometry = computeGeometry(chart);
    setUpAxes(plot, chart, geometry);
    drawValueBands(plot, chart);
    drawSeries(plot, chart, geometry);
    drawMarkers(plot, chart);
    addTitleAndLegend(plot, chart);
    fitTitle(plot, plot.width());

    plot.setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot.setMouseTracking(true);
    auto* tips = plot.findChild<ChartHoverTips*>(QString(), Qt::FindDirectChildrenOnly);
    if (!tips)
        tips = new ChartHoverTips(&plot);
    tips->setChart(chart);
    if (!plot.findChild<QObject*>(QStringLiteral("yTickCountFitter"), Qt::FindDirectChildrenOnly))
        new YTickCountFitter(&plot);
    // The axis rect's height follows from the layout (title, legend, margins): laid out here as
    // replot would, without drawing.
    // Twice: a wrapped x axis title takes more height below the data area.
    for (const auto phase : {QCPLayoutElement::upPreparation, QCPLayoutElement::upMargins, QCPLayoutElement::upLayout})
        plot.plotLayout()->update(phase);
    fitXLabel(plot, plot.axisRect()->width());
    for (const auto phase : {QCPLayoutElement::upPreparation, QCPLayoutElement::upMargins, QCPLayoutElement::upLayout})
        plot.plotLayout()->update(phase);
    fitYAxis(plot, plot.axisRect()->height(), plot.height());
    plot.replot();
}

} // namespace scalescope::ui

#include "chart_renderer.moc"
