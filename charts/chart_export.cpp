#include "charts/chart_export.h"

#include <QApplication>
#include <QBuffer>
#include <QPageLayout>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QThread>

#include <qcustomplot.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>

#include "charts/chart_renderer.h"
#include "common/error.h"
#include "report/csv.h"
#include "io/atomic_write.h"

namespace scalescope::ui {
namespace {

// Far beyond any screen or print use; keeps a typo from allocating gigabytes for one pixmap.
constexpr int kMaxImageSide = 20000;

std::string lowerCase(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

// QCustomPlot::saveRastered without the file: the pixmap, at 96 dots per inch, as PNG.
bool drawPng(QCustomPlot& plot, QBuffer& out, const QSize& size)
{
    QImage image = plot.toPixmap(size.width(), size.height()).toImage();
    if (image.isNull())
        return false;
    const int dotsPerMeter = static_cast<int>(96 / 0.0254); // truncated, as QCustomPlot does
    image.setDotsPerMeterX(dotsPerMeter);
    image.setDotsPerMeterY(dotsPerMeter);
    return image.save(&out, "PNG");
}

// QCustomPlot::savePdf without the file (it ignores whether QPainter::end() could write): one page
// of exactly the chart's size in points, no margins, vector drawing, cosmetic pens allowed.
bool drawPdf(QCustomPlot& plot, QBuffer& out, const QSize& size, const QString& title)
{
    QPdfWriter writer(&out);
    writer.setCreator(QStringLiteral("ScaleScope"));
    writer.setTitle(title);
    // The screen's dots per inch, so that text takes the same share of the chart as on screen.
    writer.setResolution(96);
    QPageLayout layout(QPageSize(size, QString(), QPageSize::ExactMatch), QPageLayout::Portrait, QMarginsF(0, 0, 0, 0));
    layout.setMode(QPageLayout::FullPageMode);
    writer.setPageLayout(layout);
    QCPPainter painter;
    if (!painter.begin(&writer))
        return false;
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    painter.setWindow(QRect(QPoint(0, 0), size));
    plot.toPainter(&painter, size.width(), size.height());
    return painter.end();
}

bool drawSvg(QCustomPlot& plot, QBuffer& out, const QSize& size, const QString& title)
{
    QSvgGenerator generator;
    generator.setOutputDevice(&out);
    generator.setSize(size);
    generator.setViewBox(QRect(QPoint(0, 0), size));
    // At the CSS 96 dpi a browser opens the drawing at the requested pixel size.
    generator.setResolution(96);
    generator.setTitle(title);
    generator.setDescription(QStringLiteral("Drawn by ScaleScope"));
    QCPPainter painter;
    if (!painter.begin(&generator))
        return false;
    plot.toPainter(&painter, size.width(), size.height());
    return painter.end();
}

void appendRow(std::string& csv, const std::vector<std::string>& cells)
{
    for (std::size_t i = 0; i < cells.size(); ++i) {
        if (i > 0)
            csv += ',';
        csv += csvField(cells[i]);
    }
    csv += "\r\n";
}

// A heat map as a table: one row per cell (column, row, value), each cells series in turn.
std::string cellsCsv(const ChartData& chart)
{
    std::string csv;
    appendRow(csv, {chart.xLabel.empty() ? "x" : chart.xLabel, chart.yLabel.empty() ? "y" : chart.yLabel, "series", "value"});
    for (const ChartSeries& series : chart.series)
        if (series.style == SeriesStyle::Cells)
            for (std::size_t i = 0; i < pointCount(series); ++i)
                appendRow(csv, {formatChartValue(series.x[i]), formatChartValue(series.y[i]), series.name,
                                formatChartValue(series.z[i])});
    return csv;
}

// The category a point belongs to, when its x is a valid category index.
std::optional<std::size_t> categoryIndex(const ChartData& chart, double x)
{
    if (!(x >= 0.0 && x < static_cast<double>(chart.categories.size()) && x == std::floor(x)))
        return std::nullopt;
    return static_cast<std::size_t>(x);
}

} // namespace

ChartFormat parseChartFormat(const std::string& name)
{
    const std::string lower = lowerCase(name);
    if (lower == "png")
        return ChartFormat::Png;
    if (lower == "pdf")
        return ChartFormat::Pdf;
    if (lower == "svg")
        return ChartFormat::Svg;
    throw Error("Unknown chart format \"" + name + "\"; use png, pdf or svg.");
}

std::string chartFormatExtension(ChartFormat format)
{
    switch (format) {
    case ChartFormat::Png:
        return "png";
    case ChartFormat::Pdf:
        return "pdf";
    case ChartFormat::Svg:
        return "svg";
    }
    return "png";
}

std::string chartImageBytes(const ChartData& chart, ChartFormat format, QSize size, const std::string& shownPath)
{
    if (size.width() < 1 || size.height() < 1 || size.width() > kMaxImageSide || size.height() > kMaxImageSide)
        throw Error("Cannot write " + shownPath + ": the image size " + std::to_string(size.width()) + "x" +
                    std::to_string(size.height()) + " is outside 1.." + std::to_string(kMaxImageSide) + " pixels.");
    // QCustomPlot is a QWidget: creating one without a QApplication, or off its thread, aborts.
    QCoreApplication* application = QCoreApplication::instance();
    if (!qobject_cast<QApplication*>(application))
        throw Error("Cannot draw " + shownPath + ": drawing charts needs a QApplication and none exists.");
    if (QThread::currentThread() != application->thread())
        throw Error("Cannot draw " + shownPath + ": charts can only be drawn on the GUI thread.");

    QCustomPlot plot;
    plot.resize(size);
    renderChart(plot, chart);
    const QString title = QString::fromStdString(chart.title);
    QByteArray bytes;
    QBuffer out(&bytes);
    out.open(QIODevice::WriteOnly);
    bool drawn = false;
    switch (format) {
    case ChartFormat::Png:
        drawn = drawPng(plot, out, size);
        break;
    case ChartFormat::Pdf:
        drawn = drawPdf(plot, out, size, title);
        break;
    case ChartFormat::Svg:
        drawn = drawSvg(plot, out, size, title);
        break;
    }
    out.close();
    if (!drawn || bytes.isEmpty())
        throw Error("Cannot write " + shownPath + ": the " + chartFormatExtension(format) + " image could not be drawn.");
    return bytes.toStdString();
}

void exportChartImage(const ChartData& chart, const QString& path, ChartFormat format, QSize size)
{
    const std::string target = path.toStdString();
    writeBytesAtomically(target, chartImageBytes(chart, format, size, target));
}

std::string chartCsv(const ChartData& chart)
{
    if (std::any_of(chart.series.begin(), chart.series.end(),
                    [](const ChartSeries& series) { return series.style == SeriesStyle::Cells; }))
        return cellsCsv(chart);
    const bool categorical = !chart.categories.empty();
    std::vector<std::string> header{!chart.xLabel.empty() ? chart.xLabel : categorical ? "category" : "x"};
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
        const ChartSeries& series = chart.series[s];
        const std::string name = series.name.empty() ? "series " + std::to_string(s + 1) : series.name;
        if (series.style == SeriesStyle::Band) {
            header.push_back(name + "_min");
            header.push_back(name + "_max");
        } else {
            header.push_back(name);
        }
    }

    // Row keys: category indices, or the distinct x values in increasing order.
    std::map<double, std::size_t> rowOfX;
    std::vector<std::vector<std::string>> rows;
    if (categorical) {
        for (std::size_t i = 0; i < chart.categories.size(); ++i) {
            rows.push_back({chart.categories[i]});
            rowOfX[static_cast<double>(i)] = i;
        }
    } else {
        for (const ChartSeries& series : chart.series)
            for (std::size_t i = 0; i < pointCount(series); ++i)
                if (!std::isnan(series.x[i]))
                    rowOfX.emplace(series.x[i], 0);
        for (auto& [x, row] : rowOfX) {
            row = rows.size();
            rows.push_back({formatChartValue(x)});
        }
    }
    for (auto& row : rows)
        row.resize(header.size());

    std::size_t column = 1;
    for (const ChartSeries& series : chart.series) {
        const bool band = series.style == SeriesStyle::Band;
        std::vector<bool> filled(rows.size(), false);
        for (std::size_t i = 0; i < pointCount(series); ++i) {
            const double x = series.x[i];
            if (categorical && !categoryIndex(chart, x))
                continue;
            const auto found = rowOfX.find(x);
            if (found == rowOfX.end() || filled[found->second])
                continue; // the first value at an x wins; a table cell holds one number
            filled[found->second] = true;
            std::vector<std::string>& row = rows[found->second];
            row[column] = formatChartValue(series.y[i]);
            if (band)
                row[column + 1] = formatChartValue(series.yUpper[i]);
        }
        column += band ? 2 : 1;
    }

    std::string csv;
    appendRow(csv, header);
    for (const auto& row : rows)
        appendRow(csv, row);
    return csv;
}

void exportChartCsv(const ChartData& chart, const std::string& path)
{
    writeBytesAtomically(path, chartCsv(chart));
}

} // namespace scalescope::ui
