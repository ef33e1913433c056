// Chart rendering and export: every chart kind drawn headless into PNG, PDF and SVG and checked as
// files a person would open (decodable, requested size, not blank, the series colour visible; PDF and
// SVG structurally valid), CSV read back against the input values, atomic failure, re-rendering
// without leftovers, log axes with non-positive values, and the hover lookup on a hand-made mapping.
// Set SCALESCOPE_KEEP_CHART_FILES=1 to keep the exported files for a look (their folder is printed).
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QImage>
#include <QRegularExpression>
#include <QToolTip>
#include <QTemporaryDir>
#include <QXmlStreamReader>

#include <qcustomplot.h>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "charts/chart_export.h"
#include "charts/chart_renderer.h"
#include "common/error.h"
#include "report/charts.h"

using namespace scalescope;
using namespace scalescope::ui;

namespace {

const QColor kFp8Color(0x00, 0x72, 0xB2);
const QColor kReferenceColor(0xE6, 0x9F, 0x00);
const QColor kBandColor(0x00, 0x9E, 0x73);
const QColor kPointsColor(0xD5, 0x5E, 0x00);
const QColor kLineColor(0xCC, 0x79, 0xA7);

std::string hex(const QColor& color) { return color.name().toStdString(); }

ChartData categoricalBars()
{
    ChartData chart;
    chart.id = "layer_sqnr";
    chart.title = "SQNR per layer";
    chart.xLabel = "layer";
    chart.yLabel = "SQNR (dB)";
    chart.categories = {"layer 0", "layer 1", "layer 2", "layer 3"};
    chart.series.push_back({"fp8", SeriesStyle::Bars, {0, 1, 2, 3}, {1.0 / 3.0, 20.5, 0.1, 31.25}, {}, hex(kFp8Color)});
    chart.series.push_back(
        {"reference", SeriesStyle::Bars, {0, 1, 2, 3}, {12.0, 18.75, 1e-7, 448.0}, {}, hex(kReferenceColor)});
    return chart;
}

// |weight| range per layer over 12 layers on a log axis; layer 3's minimum is exactly zero.
ChartData logBand()
{
    ChartData chart;
    chart.id = "weight_range";
    chart.title = "Weight magnitude range per layer";
    chart.xLabel = "encoder layer";
    chart.yLabel = "|weight|";
    chart.logY = true;
    ChartSeries band{"abs weight", SeriesStyle::Band, {}, {}, {}, hex(kBandColor)};
    for (int i = 0; i < 12; ++i) {
        chart.categories.push_back("layer " + std::to_string(i));
        band.x.push_back(i);
        band.y.push_back(i == 3 ? 0.0 : 0.01 * (i + 1));
        band.yUpper.push_back(20.0 * (i + 1));
    }
    chart.series.push_back(band);
    chart.horizontalMarkers.push_back({448.0, "E4M3 max 448"});
    return chart;
}

ChartData scatterPoints()
{
    ChartData chart;
    chart.id = "scale_vs_max";
    chart.title = "Scale against max |weight|";
    chart.xLabel = "max |weight|";
    chart.yLabel = "scale";
    chart.series.push_back(
        {"linears", SeriesStyle::Points, {0.5, 1.0, 1.5, 2.0, 3.0, 4.5}, {0.0011, 0.0022, 0.0034, 0.0045, 0.0067, 0.01}, {},
         hex(kPointsColor)});
    return chart;
}

ChartData lineWithMarker()
{
    ChartData chart;
    chart.id = "activation_max";
    chart.title = "Largest activation per layer";
    chart.xLabel = "layer";
    chart.yLabel = "max |activation|";
    ChartSeries line{"max |activation|", SeriesStyle::Line, {}, {}, {}, hex(kLineColor)};
    for (int i = 0; i < 12; ++i) {
        line.x.push_back(i);
        line.y.push_back(40.0 * i + 10.0);
    }
    chart.series.push_back(line);
    chart.horizontalMarkers.push_back({448.0, "E4M3 max 448"});
    return chart;
}

// 72 Linear modules with full names, as a per-module chart has them.
ChartData manyLinears()
{
    ChartData chart;
    chart.id = "linear_sqnr";
    chart.title = "SQNR per Linear";
    chart.xLabel = "module";
    chart.yLabel = "SQNR (dB)";
    const char* parts[] = {"attention.self.query", "attention.self.key", "attention.self.value",
                           "attention.output.dense", "intermediate.dense", "output.dense"};
    ChartSeries bars{"weight SQNR", SeriesStyle::Bars, {}, {}, {}, hex(kFp8Color)};
    for (int layer = 0; layer < 12; ++layer)
        for (const char* part : parts) {
            bars.x.push_back(static_cast<double>(chart.categories.size()));
            bars.y.push_back(25.0 + (chart.categories.size() % 7));
            chart.categories.push_back("roberta.encoder.layer." + std::to_string(layer) + "." + part);
        }
    chart.series.push_back(bars);
    return chart;
}

struct ChartKind {
    const char* name;
    std::function<ChartData()> make;
    std::vector<QColor> colors;
};

const std::vector<ChartKind>& chartKinds()
{
    static const std::vector<ChartKind> kinds = {
        {"bars", categoricalBars, {kFp8Color, kReferenceColor}},
        {"log band", logBand, {kBandColor}},
        {"points", scatterPoints, {kPointsColor}},
        {"line with marker", lineWithMarker, {kLineColor}},
        {"72 linears", manyLinears, {kFp8Color}},
    };
    return kinds;
}

// Saturated pixels of the same hue: survives antialiasing and translucent fills over white, while
// the black, grey and white of axes, text and background never match.
int pixelsOfHue(const QImage& image, const QColor& color)
{
    int count = 0;
    const int wanted = color.hsvHue();
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) {
            const QColor pixel = image.pixelColor(x, y);
            if (pixel.hsvSaturation() < 60 || pixel.value() < 60)
                continue;
            const int difference = std::abs(pixel.hsvHue() - wanted);
            if (std::min(difference, 360 - difference) <= 8)
                ++count;
        }
    return count;
}

int nonWhitePixels(const QImage& image)
{
    int count = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) {
            const QColor pixel = image.pixelColor(x, y);
            if (pixel.red() < 245 || pixel.green() < 245 || pixel.blue() < 245)
                ++count;
        }
    return count;
}

QByteArray readAll(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return file.readAll();
}

std::vector<std::string> splitCsvLines(const std::string& csv)
{
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < csv.size()) {
        const std::size_t end = csv.find("\r\n", start);
        if (end == std::string::npos) {
            lines.push_back(csv.substr(start));
            break;
        }
        lines.push_back(csv.substr(start, end - start));
        start = end + 2;
    }
    return lines;
}

// Unquoted cells only (the numeric tests need no more).
std::vector<std::string> splitCells(const std::string& line)
{
    std::vector<std::string> cells(1);
    for (char c : line) {
        if (c == ',')
            cells.emplace_back();
        else
            cells.back() += c;
    }
    return cells;
}

// Screen mapping for the hover tests: 100 px per x unit, 50 px per y unit (or per decade), y up.
QPointF linearScreen(double x, double y) { return {100.0 * x, 500.0 - 50.0 * y}; }
QPointF logScreen(double x, double y) { return {100.0 * x, 500.0 - 50.0 * std::log10(y)}; }

} // namespace

class TestCharts : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(dir_.isValid());
        if (qEnvironmentVariableIsSet("SCALESCOPE_KEEP_CHART_FILES")) {
            dir_.setAutoRemove(false);
            qInfo("Chart files kept in %s", qPrintable(dir_.path()));
        }
    }

    void exportsPng_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QSize>("size");
        for (int k = 0; k < static_cast<int>(chartKinds().size()); ++k)
            QTest::newRow(chartKinds()[k].name) << k << QSize(1200, 700);
        QTest::newRow("bars small") << 0 << QSize(640, 400);
    }

    void exportsPng()
    {
        QFETCH(int, kind);
        QFETCH(QSize, size);
        const ChartKind& chartKind = chartKinds()[static_cast<std::size_t>(kind)];
        const ChartData chart = chartKind.make();
        const QString path = dir_.filePath(QString::fromStdString(chart.id) + QStringLiteral("_%1x%2.png")
                                                                                 .arg(size.width())
                                                                                 .arg(size.height()));
        exportChartImage(chart, path, ChartFormat::Png, size);

        QImage image;
        QVERIFY2(image.load(path, "PNG"), qPrintable(path));
        QCOMPARE(image.size(), size);
        const int total = image.width() * image.height();
        const int drawn = nonWhitePixels(image);
        // A sparse scatter plot inks about 1% of the image: axes, grid, ticks, text and six dots.
        QVERIFY2(drawn > total / 200, qPrintable(QStringLiteral("only %1 of %2 pixels drawn").arg(drawn).arg(total)));
        QCOMPARE(image.pixelColor(0, 0), QColor(Qt::white));
        QCOMPARE(image.pixelColor(image.width() - 1, 0), QColor(Qt::white));
        for (const QColor& color : chartKind.colors) {
            const int matching = pixelsOfHue(image, color);
            QVERIFY2(matching > 150, qPrintable(QStringLiteral("%1: %2 pixels of %3")
                                                    .arg(chartKind.name).arg(matching).arg(color.name())));
        }
    }

    void grouppedBarsStandSideBySide()
    {
        // In every category the first series' bar is left of the second's, so the blue pixels of
        // the plot area lie left of the orange ones on average.
        const ChartData chart = categoricalBars();
        ChartData equalHeights = chart;
        for (ChartSeries& series : equalHeights.series)
            series.y = {10, 10, 10, 10};
        const QString path = dir_.filePath("side_by_side.png");
        exportChartImage(equalHeights, path, ChartFormat::Png);
        QImage image(path);
        QVERIFY(!image.isNull());
        auto meanX = [&](const QColor& color) {
            double sum = 0;
            int count = 0;
            for (int y = 0; y < image.height() * 3 / 4; ++y) // above the legend row
                for (int x = 0; x < image.width(); ++x)
                    if (image.pixelColor(x, y) == color) {
                        sum += x;
                        ++count;
                    }
            return count ? sum / count : -1.0;
        };
        const double blue = meanX(kFp8Color), orange = meanX(kReferenceColor);
        QVERIFY(blue > 0 && orange > 0);
        QVERIFY2(blue < orange, qPrintable(QStringLiteral("blue %1, orange %2").arg(blue).arg(orange)));
    }

    // Bars coloured by class (within or above a limit) are two series that never share a category:
    // each bar stands alone at its category, full width, not shifted aside for a partner it lacks.
    void classBarsStandAtTheirCategory()
    {
        ChartData chart;
        chart.categories = {"a", "b", "c", "d"};
        chart.series = {{"within", SeriesStyle::Bars, {0, 2}, {1, 1}, {}, "#0072B2"},
                        {"above", SeriesStyle::Bars, {1, 3}, {5, 5}, {}, "#D55E00"}};
        QCustomPlot plot;
        plot.resize(800, 500);
        renderChart(plot, chart);
        QCOMPARE(static_cast<int>(plot.findChildren<QCPBarsGroup*>().size()), 0);
        for (int s = 0; s < 2; ++s) {
            auto* bars = qobject_cast<QCPBars*>(plot.plottable(s));
            QVERIFY(bars && !bars->barsGroup());
            QCOMPARE(bars->width(), 0.8);
        }
        // The hover finds each bar at its own category's centre.
        const QString text = nearestPointText(chart, QPointF(1.0, 2.5), [](double x, double y) { return QPointF(x, y); }, 0.1);
        QVERIFY2(text.contains("above") && text.contains("b"), qPrintable(text));
    }

    void exportsPdf_data()
    {
        QTest::addColumn<int>("kind");
        for (int k = 0; k < static_cast<int>(chartKinds().size()); ++k)
            QTest::newRow(chartKinds()[k].name) << k;
    }

    void exportsPdf()
    {
        QFETCH(int, kind);
        const ChartData chart = chartKinds()[static_cast<std::size_t>(kind)].make();
        const QString path = dir_.filePath(QString::fromStdString(chart.id) + ".pdf");
        exportChartImage(chart, path, ChartFormat::Pdf);
        const QByteArray pdf = readAll(path);
        QVERIFY2(pdf.startsWith("%PDF"), pdf.left(16).constData());
        QVERIFY2(pdf.size() > 1024, qPrintable(QString::number(pdf.size())));
        QVERIFY(QString::fromLatin1(pdf).contains(QRegularExpression(QStringLiteral("/Type\\s*/Page(?!s)"))));
    }

    void exportsSvg_data() { exportsPdf_data(); }

    void exportsSvg()
    {
        QFETCH(int, kind);
        const ChartData chart = chartKinds()[static_cast<std::size_t>(kind)].make();
        const QString path = dir_.filePath(QString::fromStdString(chart.id) + ".svg");
        exportChartImage(chart, path, ChartFormat::Svg);
        const QByteArray svg = readAll(path);
        QXmlStreamReader reader(svg);
        QString root;
        int drawingElements = 0, texts = 0;
        while (!reader.atEnd()) {
            if (reader.readNext() != QXmlStreamReader::StartElement)
                continue;
            const QString name = reader.name().toString();
            if (root.isEmpty())
                root = name;
            if (name == "path" || name == "rect" || name == "polyline" || name == "polygon" || name == "line" ||
                name == "circle" || name == "ellipse")
                ++drawingElements;
            if (name == "text")
                ++texts;
        }
        QVERIFY2(!reader.hasError(), qPrintable(reader.errorString()));
        QCOMPARE(root, QStringLiteral("svg"));
        // Axes, grid, ticks and the series itself: far more than a background rectangle.
        QVERIFY2(drawingElements > 10, qPrintable(QString::number(drawingElements)));
        QVERIFY(svg.contains(QByteArray::fromStdString(chart.title)));
        QVERIFY(texts > 3);
    }

    void failingExportThrowsAndLeavesNoFile_data()
    {
        QTest::addColumn<QString>("format");
        QTest::newRow("png") << "png";
        QTest::newRow("pdf") << "pdf";
        QTest::newRow("svg") << "svg";
        QTest::newRow("csv") << "csv";
    }

    void failingExportThrowsAndLeavesNoFile()
    {
        QFETCH(QString, format);
        QTemporaryDir parent;
        QVERIFY(parent.isValid());
        const QString path = parent.filePath("missing-folder/chart." + format);
        QString message;
        try {
            if (format == "csv")
                exportChartCsv(categoricalBars(), path.toStdString());
            else
                exportChartImage(categoricalBars(), path, parseChartFormat(format.toStdString()));
        } catch (const Error& error) {
            message = QString::fromStdString(error.what());
        }
        QVERIFY2(message.contains(path), qPrintable("no error naming the path; got: " + message));
        QVERIFY(!QFile::exists(path));
        QCOMPARE(QDir(parent.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot), QStringList());
    }

    void exportReplacesExistingFileWhole()
    {
        const QString path = dir_.filePath("replaced.png");
        {
            QFile stale(path);
            QVERIFY(stale.open(QIODevice::WriteOnly));
            stale.write("not a picture");
        }
        exportChartImage(scatterPoints(), path, ChartFormat::Png, QSize(300, 200));
        QCOMPARE(QImage(path).size(), QSize(300, 200));
        const QStringList leftovers = QDir(dir_.path()).entryList({".replaced*"}, QDir::Files | QDir::Hidden);
        QCOMPARE(leftovers, QStringList());
    }

    void refusesImpossibleSize()
    {
        const QString path = dir_.filePath("zero.png");
        QVERIFY_THROWS_EXCEPTION(Error, exportChartImage(scatterPoints(), path, ChartFormat::Png, QSize(0, 700)));
        QVERIFY(!QFile::exists(path));
    }

    void parsesFormats_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("format"); // -1: rejected
        QTest::addColumn<QString>("extension");
        QTest::newRow("png") << "png" << int(ChartFormat::Png) << "png";
        QTest::newRow("pdf") << "pdf" << int(ChartFormat::Pdf) << "pdf";
        QTest::newRow("svg") << "svg" << int(ChartFormat::Svg) << "svg";
        QTest::newRow("upper case") << "SVG" << int(ChartFormat::Svg) << "svg";
        QTest::newRow("jpg") << "jpg" << -1 << "";
        QTest::newRow("empty") << "" << -1 << "";
        QTest::newRow("dotted") << ".png" << -1 << "";
    }

    void parsesFormats()
    {
        QFETCH(QString, name);
        QFETCH(int, format);
        QFETCH(QString, extension);
        if (format < 0) {
            QVERIFY_THROWS_EXCEPTION(Error, parseChartFormat(name.toStdString()));
            return;
        }
        const ChartFormat parsed = parseChartFormat(name.toStdString());
        QCOMPARE(int(parsed), format);
        QCOMPARE(QString::fromStdString(chartFormatExtension(parsed)), extension);
    }

    void csvHoldsExactValuesPerCategory()
    {
        const ChartData chart = categoricalBars();
        const std::vector<std::string> lines = splitCsvLines(chartCsv(chart));
        QCOMPARE(lines.size(), chart.categories.size() + 1);
        QCOMPARE(QString::fromStdString(lines[0]), QStringLiteral("layer,fp8,reference"));
        for (std::size_t i = 0; i < chart.categories.size(); ++i) {
            const std::vector<std::string> cells = splitCells(lines[i + 1]);
            QCOMPARE(cells.size(), std::size_t(3));
            QCOMPARE(cells[0], chart.categories[i]);
            QCOMPARE(std::stod(cells[1]), chart.series[0].y[i]);
            QCOMPARE(std::stod(cells[2]), chart.series[1].y[i]);
        }
        // Shortest exact text: no float noise on simple values, all digits on thirds.
        QCOMPARE(QString::fromStdString(splitCells(lines[1])[1]), QStringLiteral("0.3333333333333333"));
        QCOMPARE(QString::fromStdString(splitCells(lines[4])[2]), QStringLiteral("448"));
        QCOMPARE(QString::fromStdString(splitCells(lines[3])[1]), QStringLiteral("0.1"));
    }

    void csvBandHasMinAndMaxColumns()
    {
        const ChartData chart = logBand();
        const std::vector<std::string> lines = splitCsvLines(chartCsv(chart));
        QCOMPARE(lines.size(), std::size_t(13));
        QCOMPARE(QString::fromStdString(lines[0]), QStringLiteral("encoder layer,abs weight_min,abs weight_max"));
        for (std::size_t i = 0; i < 12; ++i) {
            const std::vector<std::string> cells = splitCells(lines[i + 1]);
            QCOMPARE(cells.size(), std::size_t(3));
            QCOMPARE(cells[0], "layer " + std::to_string(i));
            // The zero that the log axis cannot show is still exported as it is.
            QCOMPARE(std::stod(cells[1]), i == 3 ? 0.0 : 0.01 * static_cast<double>(i + 1));
            QCOMPARE(std::stod(cells[2]), 20.0 * static_cast<double>(i + 1));
        }
    }

    void csvNumericXUnionsSeriesAndQuotes()
    {
        ChartData chart;
        chart.xLabel = "step, in tokens";
        chart.series.push_back({"a \"quoted\" name", SeriesStyle::Line, {2, 1}, {20, 10}, {}, ""});
        chart.series.push_back({"b", SeriesStyle::Points, {3, 1}, {0.5, -1e-7}, {}, ""});
        const std::string expected = "\"step, in tokens\",\"a \"\"quoted\"\" name\",b\r\n"
                                     "1,10,-1e-07\r\n"
                                     "2,20,\r\n"
                                     "3,,0.5\r\n";
        QCOMPARE(QString::fromStdString(chartCsv(chart)), QString::fromStdString(expected));
    }

    void csvQuotesCategoriesAndExportsAtomically()
    {
        ChartData chart;
        chart.categories = {"a,b", "line\nbreak"};
        chart.series.push_back({"v", SeriesStyle::Bars, {0, 1, 5}, {1, 2, 3}, {}, ""}); // x=5: no such category
        const std::string expected = "category,v\r\n\"a,b\",1\r\n\"line\nbreak\",2\r\n";
        QCOMPARE(QString::fromStdString(chartCsv(chart)), QString::fromStdString(expected));
        const QString path = dir_.filePath("quoted.csv");
        exportChartCsv(chart, path.toStdString());
        QCOMPARE(readAll(path), QByteArray::fromStdString(expected));
    }

    void renderingTwiceDoesNotAccumulate_data()
    {
        QTest::addColumn<int>("kind");
        for (int k = 0; k < static_cast<int>(chartKinds().size()); ++k)
            QTest::newRow(chartKinds()[k].name) << k;
    }

    void renderingTwiceDoesNotAccumulate()
    {
        QFETCH(int, kind);
        const ChartData chart = chartKinds()[static_cast<std::size_t>(kind)].make();
        QCustomPlot plot;
        plot.resize(800, 500);
        renderChart(plot, chart);
        const int items = plot.itemCount();
        const int elements = plot.plotLayout()->elementCount();
        QCOMPARE(plot.plottableCount(), static_cast<int>(chart.series.size()));
        QCOMPARE(items, static_cast<int>(chart.horizontalMarkers.size()) * 2); // dashed line and its label

        renderChart(plot, chart);
        QCOMPARE(plot.plottableCount(), static_cast<int>(chart.series.size()));
        QCOMPARE(plot.itemCount(), items);
        QCOMPARE(plot.plotLayout()->elementCount(), elements);
        QCOMPARE(static_cast<int>(plot.findChildren<QCPBarsGroup*>().size()), chart.series.size() > 1 ? 1 : 0);
    }

    void switchingChartsResetsLegendTitleAndAxes()
    {
        QCustomPlot plot;
        plot.resize(800, 500);
        renderChart(plot, categoricalBars());
        QVERIFY(plot.legend->visible());
        QCOMPARE(plot.legend->itemCount(), 2);

        renderChart(plot, logBand());
        QCOMPARE(plot.plottableCount(), 1);
        QVERIFY(!plot.legend->visible());
        QCOMPARE(plot.yAxis->scaleType(), QCPAxis::stLogarithmic);
        QVERIFY(plot.yAxis->range().lower > 0);
        QVERIFY(plot.yAxis->range().contains(448.0)); // the marker is in view
        QCOMPARE(plot.xAxis->label(), QStringLiteral("encoder layer"));
        QCOMPARE(static_cast<int>(plot.findChildren<QCPBarsGroup*>().size()), 0);

        ChartData untitled = scatterPoints();
        untitled.title.clear();
        renderChart(plot, untitled);
        QCOMPARE(plot.yAxis->scaleType(), QCPAxis::stLinear);
        QCOMPARE(plot.plotLayout()->elementCount(), 1); // the axis rect alone
        QVERIFY(plot.xAxis->range().contains(0.5) && plot.xAxis->range().contains(4.5));
        QVERIFY(plot.yAxis->range().contains(0.0011) && plot.yAxis->range().contains(0.01));
    }

    void logAxisSkipsNonPositiveValues()
    {
        ChartData chart;
        chart.logY = true;
        chart.categories = {"a", "b", "c", "d"};
        chart.series.push_back({"bars", SeriesStyle::Bars, {0, 1, 2, 3}, {0.0, 5.0, -2.0, 50.0}, {}, ""});
        chart.series.push_back({"points", SeriesStyle::Points, {0, 1, 2, 3}, {1.0, 0.0, NAN, 2.0}, {}, ""});
        chart.series.push_back({"line", SeriesStyle::Line, {0, 1, 2, 3}, {-1.0, 3.0, 4.0, INFINITY}, {}, ""});
        chart.series.push_back({"band", SeriesStyle::Band, {0, 1, 2, 3}, {0.0, -1.0, 1.0, -5.0}, {2.0, 3.0, 4.0, 0.0}, ""});
        chart.horizontalMarkers.push_back({0.0, "zero"});
        QCustomPlot plot;
        plot.resize(600, 400);
        renderChart(plot, chart);
        QCOMPARE(plot.plottableCount(), 4);
        QCOMPARE(qobject_cast<QCPBars*>(plot.plottable(0))->data()->size(), 2);
        QCOMPARE(qobject_cast<QCPGraph*>(plot.plottable(1))->data()->size(), 2);
        // The band with lower bound <= 0 still shows (down to the axis floor); an upper bound <= 0 does not.
        QCOMPARE(qobject_cast<QCPFinancial*>(plot.plottable(3))->data()->size(), 3);
        QCOMPARE(plot.itemCount(), 0); // a marker at 0 has no place on a log axis
        QVERIFY(plot.yAxis->range().lower > 0.0);
        QVERIFY(plot.yAxis->range().lower <= 1.0 && plot.yAxis->range().upper >= 50.0);
        const QString path = dir_.filePath("log_nonpositive.png");
        exportChartImage(chart, path, ChartFormat::Png, QSize(600, 400));
        QVERIFY(!QImage(path).isNull());
    }

    // A bar on a log axis must end at its value: QCPBars stacks the value on its base, so a bar
    // rising from the axis floor would otherwise overshoot by the floor (regression).
    void logBarsEndAtTheirValues()
    {
        ChartData chart;
        chart.logY = true;
        chart.categories = {"a", "b", "c"};
        chart.series = {{"amax", SeriesStyle::Bars, {0, 1, 2}, {4.93, 8.87, 0.5}, {}, ""}};
        QCustomPlot plot;
        renderChart(plot, chart);
        auto* bars = qobject_cast<QCPBars*>(plot.plottable(0));
        QVERIFY(bars);
        QVERIFY(bars->baseValue() > 0);
        for (int i = 0; i < bars->data()->size(); ++i) {
            const double top = bars->baseValue() + bars->data()->at(i)->value;
            QVERIFY(std::fabs(top - chart.series[0].y[static_cast<std::size_t>(i)]) < 1e-12);
        }
    }

    void emptyChartStillExports()
    {
        ChartData chart;
        chart.title = "Nothing yet";
        const QString path = dir_.filePath("empty.svg");
        exportChartImage(chart, path, ChartFormat::Svg);
        QVERIFY(readAll(path).contains("Nothing yet"));
        QCOMPARE(QString::fromStdString(chartCsv(chart)), QStringLiteral("x\r\n"));
    }

    void categoryLabels_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("expectedLabels");
        QTest::addColumn<bool>("rotated");
        QTest::newRow("4 layers") << 0 << 4 << false;
        QTest::newRow("12 layers") << 1 << 12 << true;
        QTest::newRow("72 linears") << 4 << 24 << true; // every third of 72: at most 30 shown
    }

    void categoryLabels()
    {
        QFETCH(int, kind);
        QFETCH(int, expectedLabels);
        QFETCH(bool, rotated);
        const ChartData chart = chartKinds()[static_cast<std::size_t>(kind)].make();
        QCustomPlot plot;
        plot.resize(1200, 700);
        renderChart(plot, chart);
        const auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(plot.xAxis->ticker());
        QVERIFY(ticker);
        QCOMPARE(static_cast<int>(ticker->ticks().size()), expectedLabels);
        QVERIFY(ticker->ticks().size() <= 30);
        QCOMPARE(ticker->ticks().first().endsWith(QString::fromStdString(chart.categories.front()).right(12)), true);
        QCOMPARE(plot.xAxis->tickLabelRotation() != 0.0, rotated);
        QVERIFY(plot.xAxis->range().contains(-0.45));
        QVERIFY(plot.xAxis->range().contains(static_cast<double>(chart.categories.size()) - 0.55));
    }

    void hoverNamesNearestPoint_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<double>("x"); // cursor, in data coordinates before the test mapping
        QTest::addColumn<double>("y");
        QTest::addColumn<QStringList>("expected");
        // Bars: 4 categories, two series side by side; left half of a slot is fp8, right half reference.
        // Tooltips show 4 significant digits (the CSV keeps every digit, see above).
        QTest::newRow("left bar of layer 0") << 0 << -0.15 << 0.1 << QStringList{"fp8", "layer 0", "SQNR (dB): 0.3333"};
        QTest::newRow("right bar of layer 1") << 0 << 1.15 << 5.0 << QStringList{"reference", "layer 1", "18.75"};
        QTest::newRow("above a bar") << 0 << 0.85 << 20.6 << QStringList{"fp8", "layer 1", "20.5"};
        QTest::newRow("far from all") << 0 << 2.0 << 60.0 << QStringList{};
        // Log band, on a log mapping: layer 3's band starts at 0, so it reaches below every minimum.
        QTest::newRow("band inside") << 1 << 5.0 << 1.0 << QStringList{"abs weight", "layer 5", "min: 0.06", "max: 120"};
        QTest::newRow("band down to zero") << 1 << 3.0 << 0.005 << QStringList{"layer 3", "min: 0", "max: 80"};
        QTest::newRow("below a positive band") << 1 << 4.0 << 0.001 << QStringList{};
        // Points: the nearest on screen.
        QTest::newRow("nearest point") << 2 << 1.55 << 0.0 << QStringList{"linears", "max |weight|: 1.5", "scale: 0.0034"};
        // Line: the x is a number, not a category.
        QTest::newRow("line point") << 3 << 3.05 << 130.0 << QStringList{"layer: 3", "max |activation|: 130"};
    }

    void hoverNamesNearestPoint()
    {
        QFETCH(int, kind);
        QFETCH(double, x);
        QFETCH(double, y);
        QFETCH(QStringList, expected);
        const ChartData chart = chartKinds()[static_cast<std::size_t>(kind)].make();
        // The line chart's values are large: squeeze them so that 1 unit is 0.5 px.
        DataToScreen toScreen = chart.logY ? DataToScreen(logScreen) : DataToScreen(linearScreen);
        if (kind == 3)
            toScreen = [](double px, double py) { return QPointF(100.0 * px, 500.0 - 0.5 * py); };
        const QPointF cursor = toScreen(x, y);
        const QString text = nearestPointText(chart, cursor, toScreen, 20.0);
        if (expected.isEmpty()) {
            QVERIFY2(text.isEmpty(), qPrintable(text));
            return;
        }
        for (const QString& part : expected)
            QVERIFY2(text.contains(part), qPrintable(QStringLiteral("'%1' not in '%2'").arg(part, text)));
        QVERIFY2(!text.contains(QLatin1String("33333")), qPrintable(text)); // 4 significant digits, not 16
        // One point only: the other series is not named.
        if (kind == 0)
            QVERIFY(!(text.contains("fp8") && text.contains("reference")));
    }

    void hoverOnRenderedPlotUsesAxes()
    {
        // The same lookup through the real axes of a laid-out plot: the pixel of a data point finds it.
        const ChartData chart = lineWithMarker();
        QCustomPlot plot;
        plot.resize(900, 600);
        renderChart(plot, chart);
        plot.replot();
        QCPAxis* xAxis = plot.xAxis;
        QCPAxis* yAxis = plot.yAxis;
        const DataToScreen toScreen = [xAxis, yAxis](double x, double y) {
            return QPointF(xAxis->coordToPixel(x), yAxis->coordToPixel(y));
        };
        const QString text = nearestPointText(chart, toScreen(7, 290) + QPointF(3, -2), toScreen);
        QVERIFY2(text.contains("layer: 7") && text.contains("290"), qPrintable(text));
    }

    void mouseOverPointShowsTooltip()
    {
        // The whole path a person takes: the mouse moves over a rendered plot and a tooltip appears.
        const ChartData chart = lineWithMarker();
        QCustomPlot plot;
        plot.resize(900, 600);
        renderChart(plot, chart);
        plot.show();
        QVERIFY(QTest::qWaitForWindowExposed(&plot));
        plot.replot();
        const QPoint onPoint(qRound(plot.xAxis->coordToPixel(4)), qRound(plot.yAxis->coordToPixel(170)));
        QTest::mouseMove(&plot, onPoint);
        QTRY_VERIFY(QToolTip::isVisible());
        QVERIFY2(QToolTip::text().contains("layer: 4") && QToolTip::text().contains("170"), qPrintable(QToolTip::text()));

        // Rendering another chart re-targets the same helper instead of adding a second one.
        renderChart(plot, scatterPoints());
        plot.replot();
        const QPoint onDot(qRound(plot.xAxis->coordToPixel(3.0)), qRound(plot.yAxis->coordToPixel(0.0067)));
        QTest::mouseMove(&plot, onDot);
        QTRY_VERIFY(QToolTip::text().contains("scale: 0.0067"));
    }

    void formatsValuesExactly_data()
    {
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("text");
        QTest::newRow("integer") << 448.0 << "448";
        QTest::newRow("tenth") << 0.1 << "0.1";
        QTest::newRow("third") << 1.0 / 3.0 << "0.3333333333333333";
        QTest::newRow("tiny") << 1e-7 << "1e-07";
        QTest::newRow("negative") << -2.5 << "-2.5";
        QTest::newRow("float origin") << double(0.1f) << "0.10000000149011612";
        QTest::newRow("nan") << double(NAN) << "nan";
        QTest::newRow("-inf") << -double(INFINITY) << "-inf";
    }

    void formatsValuesExactly()
    {
        QFETCH(double, value);
        QFETCH(QString, text);
        QCOMPARE(QString::fromStdString(formatChartValue(value)), text);
        if (std::isfinite(value))
            QCOMPARE(std::stod(text.toStdString()), value);
    }

    // Cosines of 0.9999 all look like 1.0 as bars: the chart plots 1 - cos on a log axis.
    void cosineChartPlotsDistanceOnLogAxis()
    {
        ComparisonResult comparison;
        const std::vector<double> cosines = {1.0, 0.99999, 0.999, 0.9};
        for (std::size_t i = 0; i < cosines.size(); ++i) {
            CapturePointMetrics p;
            p.kind = i == 0 ? CaptureKind::Embeddings : CaptureKind::LayerOutput;
            p.layer = int(i) - 1;
            p.metrics.cosine = cosines[i];
            comparison.points.push_back(p);
        }
        const ChartData chart = layerCosineChart(comparison);
        QVERIFY(chart.logY);
        QCOMPARE(chart.series.size(), std::size_t(1));
        for (std::size_t i = 0; i < cosines.size(); ++i)
            QCOMPARE(chart.series[0].y[i], 1.0 - cosines[i]);
        QVERIFY(QString::fromStdString(chart.title).contains("identical")); // the embeddings: 1 - cos = 0
        QVERIFY(QString::fromStdString(chart.yLabel).contains("1 - cosine"));
    }

    // compare --plots writes the four layer and Linear charts always, and the activation, fp16 and
    // attention charts only when the comparison holds their values; each is its builder's chart.
    void comparisonPlotsHoldTheChartsWithValues()
    {
        ComparisonResult comparison;
        const auto ids = [&] {
            std::vector<std::string> out;
            for (const ChartData& chart : comparisonPlots(comparison, true))
                out.push_back(chart.id);
            return out;
        };
        const std::vector<std::string> always = {layerSqnrChart(comparison).id, layerCosineChart(comparison).id,
            errorGrowthChart(comparison).id, linearSqnrChart(comparison).id};
        QCOMPARE(ids(), always);

        comparison.activations.push_back({"m", 2.0f, 0.01f, 4, 0, 0, 0});
        comparison.outputRanges.push_back({"m", 3.0f, 0, 4});
        CastHeadroom cast;
        cast.module = "k";
        comparison.attentionHeadroom.push_back(cast);
        std::vector<std::string> all = always;
        for (const ChartData& chart : {activationSharesChart(comparison), activationScaleChart(comparison, true),
                 fp16HeadroomChart(comparison), attentionHeadroomChart(comparison, true),
                 attentionHeadroomChart(comparison, false), attentionSmallValuesChart(comparison)})
            all.push_back(chart.id);
        QCOMPARE(ids(), all);
        QCOMPARE(comparisonChart(ComparisonChart::ActivationRange, comparison, false).title,
            activationScaleChart(comparison, false).title);
    }

    // NaN, zero and negative scales are shown in red at the bottom of the axis, not dropped.
    void invalidChannelScalesAreMarked()
    {
        LinearScaleStatistics linear;
        linear.module = "roberta.encoder.layer.0.attention.self.query";
        linear.channelScales = {0.01f, NAN, 0.0f, 0.02f, -1.0f, 0.04f};
        const ChartData chart = channelScalesChart(linear);
        QCOMPARE(chart.series.size(), std::size_t(2));
        QCOMPARE(chart.series[0].x, std::vector<double>({0, 3, 5}));
        QCOMPARE(chart.series[1].x, std::vector<double>({1, 2, 4}));
        QCOMPARE(chart.series[1].color, std::string("#D00000"));
        for (double y : chart.series[1].y)
            QCOMPARE(y, double(0.01f)); // drawn at the smallest valid scale, visible on the log axis
        QVERIFY(QString::fromStdString(chart.title).contains("3 invalid"));
        QVERIFY(!QString::fromStdString(chart.title).contains("extreme"));

        linear.channelScales = {1e-6f, 1.0f};
        QVERIFY(QString::fromStdString(channelScalesChart(linear).title).contains("extreme max/min ratio 1e+06"));
        linear.channelScales = {0.5f, 1.0f};
        QCOMPARE(channelScalesChart(linear).series.size(), std::size_t(1));
    }

    // Block-wise weight scales as a heat map: cells at (input block, output block), the exact value
    // on hover and in the CSV, invalid scales drawn in their own colour, row 0 at the top.
    void blockScalesHeatMap()
    {
        LinearScaleStatistics linear;
        linear.module = "roberta.encoder.layer.0.attention.self.query";
        linear.label = "L0.q";
        linear.blockRows = 16;
        linear.blockColumns = 8;
        linear.gridRows = 2;
        linear.gridColumns = 3;
        linear.channelScales = {0.01f, 0.02f, NAN, 0.04f, 0.0f, 0.06f};
        const ChartData chart = blockScalesChart(linear);
        QVERIFY(QString::fromStdString(chart.title).contains("2 x 3 blocks of 16 x 8"));
        QCOMPARE(chart.series.size(), std::size_t(1));
        QCOMPARE(chart.series[0].style, SeriesStyle::Cells);
        QCOMPARE(chart.series[0].x, std::vector<double>({0, 1, 2, 0, 1, 2}));
        QCOMPARE(chart.series[0].y, std::vector<double>({0, 0, 0, 1, 1, 1}));
        QCOMPARE(chart.series[0].z[3], double(0.04f));

        const std::vector<std::string> lines = splitCsvLines(chartCsv(chart));
        QCOMPARE(lines.size(), std::size_t(7));
        QCOMPARE(lines[0], std::string("input block,output block,series,value"));
        QCOMPARE(lines[2], "1,0,weight_scale," + formatChartValue(double(0.02f)));
        QCOMPARE(lines[3], std::string("2,0,weight_scale,nan"));

        QCustomPlot plot;
        plot.resize(900, 600);
        renderChart(plot, chart);
        plot.replot();
        QCOMPARE(plot.plottableCount(), 1);
        auto* map = qobject_cast<QCPColorMap*>(plot.plottable(0));
        QVERIFY(map);
        QCOMPARE(map->data()->cell(1, 0), double(0.02f));
        QVERIFY(std::isnan(map->data()->cell(1, 1))); // the zero scale
        QVERIFY(plot.yAxis->rangeReversed());
        // Invalid cells in red, valid ones on the viridis gradient (which holds no red).
        QCOMPARE(map->gradient().nanColor(), QColor(0xD0, 0x00, 0x00));
        QCOMPARE(map->gradient().nanHandling(), QCPColorGradient::nhNanColor);
        QCOMPARE(map->gradient().colorStops().first(), QColor(0x44, 0x01, 0x54));
        const int elements = plot.plotLayout()->elementCount(); // title, axis rect, colour scale
        renderChart(plot, chart);
        QCOMPARE(plot.plottableCount(), 1);
        QCOMPARE(plot.plotLayout()->elementCount(), elements);
        QCPAxis* xAxis = plot.xAxis;
        QCPAxis* yAxis = plot.yAxis;
        const DataToScreen toScreen = [xAxis, yAxis](double x, double y) {
            return QPointF(xAxis->coordToPixel(x), yAxis->coordToPixel(y));
        };
        const QString text = nearestPointText(chart, toScreen(0.8, 1.3), toScreen);
        QVERIFY2(text.contains("input block: 1") && text.contains("output block: 1") && text.contains("value: 0"),
                 qPrintable(text));

        // The next chart is an ordinary one again.
        renderChart(plot, scatterPoints());
        QVERIFY(!plot.yAxis->rangeReversed());
        QCOMPARE(plot.plotLayout()->elementCount(), 2); // title and axis rect

        // One block (a weight smaller than its block) still fills the plot.
        linear.gridRows = 1;
        linear.gridColumns = 1;
        linear.channelScales = {0.5f};
        renderChart(plot, blockScalesChart(linear));
        auto* single = qobject_cast<QCPColorMap*>(plot.plottable(0));
        QVERIFY(single);
        QCOMPARE(single->data()->cell(0, 0), 0.5);
        QCOMPARE(single->data()->cell(1, 1), 0.5);
        QVERIFY(plot.xAxis->range().contains(-0.45) && plot.xAxis->range().contains(0.45));
    }

    // A heat map's title spans the plot and its colour scale: in a layout column of its own it was
    // centred over the plot alone and, on a third of a laptop screen, cut at both ends.
    void heatMapTitleSpansThePlotAndItsScale()
    {
        ChartData chart;
        chart.title = "Difference, FP8 - reference";
        chart.categories = {"1", "2", "3"};
        chart.rowsAreCategories = true;
        chart.cellLower = -1;
        chart.cellUpper = 1;
        chart.series = {{"difference", SeriesStyle::Cells, {0, 1, 2, 0, 1, 2}, {0, 0, 0, 1, 1, 1}, {}, "", {1, 2, 3, 4, 5, 6}}};
        QCustomPlot plot;
        plot.resize(330, 300);
        QResizeEvent resize(QSize(330, 300), QSize());
        QCoreApplication::sendEvent(&plot, &resize);
        renderChart(plot, chart);
        plot.replot();
        QCPTextElement* title = nullptr;
        for (QCPLayoutElement* element : plot.plotLayout()->elements(false))
            if (auto* text = qobject_cast<QCPTextElement*>(element))
                title = text;
        QVERIFY(title);
        QCOMPARE(title->outerRect().width(), plot.viewport().width());
        const QFontMetrics metrics(title->font());
        for (const QString& line : title->text().split(QLatin1Char('\n')))
            QVERIFY2(metrics.horizontalAdvance(line) <= title->outerRect().width(), qPrintable(line));
        bool hasScale = false;
        for (QCPLayoutElement* element : plot.plotLayout()->elements(true))
            hasScale = hasScale || qobject_cast<QCPColorScale*>(element);
        QVERIFY(hasScale);
        // Drawn again, then as an ordinary chart: the axis rect comes back to the top of the layout.
        renderChart(plot, chart);
        QCOMPARE(plot.plottableCount(), 1);
        renderChart(plot, scatterPoints());
        QCOMPARE(plot.plotLayout()->elementCount(), 2); // title and axis rect
        QCOMPARE(plot.axisRect()->layout(), plot.plotLayout());
    }

    // The reference's logits are drawn as points in their own hues, so the two runs read apart.
    void logitsChartTellsRunsApart()
    {
        const ChartData chart = qaLogitsChart({"<s>", "a", "</s>"}, {1, 2, 3}, {3, 2, 1}, {1, 2, 3}, {3, 2, 1}, true);
        QCOMPARE(chart.series.size(), std::size_t(4));
        QCOMPARE(int(chart.series[0].style), int(SeriesStyle::Line));
        QCOMPARE(int(chart.series[2].style), int(SeriesStyle::Points));
        std::set<std::string> colours;
        for (const ChartSeries& series : chart.series)
            colours.insert(series.color);
        QCOMPARE(colours.size(), std::size_t(4));
        // The run's answer start and end are marked at their tokens; a one-token answer once.
        const ChartData marked = qaLogitsChart({"<s>", "a", "b", "c", "</s>"}, {1, 2, 3, 4, 5}, {5, 4, 3, 2, 1},
            {1, 2, 3, 4, 5}, {5, 4, 3, 2, 1}, true, {1, 3});
        QCOMPARE(marked.verticalMarkers.size(), std::size_t(2));
        QCOMPARE(marked.verticalMarkers[0].first, 1.0);
        QCOMPARE(marked.verticalMarkers[1].first, 3.0);
        QCOMPARE(marked.verticalMarkers[0].second, std::string("answer start"));
        QCOMPARE(qaLogitsChart({"a"}, {1}, {1}, {1}, {1}, true, {0, 0}).verticalMarkers.size(), std::size_t(1));
        QVERIFY(chart.verticalMarkers.empty()); // no answer given
        // Drawn: a dashed line and a label per marker, on top of what the chart had.
        QCustomPlot plot;
        plot.resize(600, 300);
        renderChart(plot, marked);
        QCOMPARE(plot.itemCount(), 4);
    }

    // A y axis title longer than a short plot is tall loses its middle, not both ends; a resize
    // to a taller plot brings it back whole, and the tick count follows the height.
    void yAxisTitleFitsThePlot()
    {
        ChartData chart;
        chart.yLabel = "share of input elements that were clipped (%)";
        chart.series = {{"s", SeriesStyle::Line, {0, 1, 2}, {1, 2, 3}, {}, ""}};
        QCustomPlot plot;
        plot.resize(400, 150);
        QResizeEvent first(QSize(400, 150), QSize()); // a hidden widget gets it only when shown
        QCoreApplication::sendEvent(&plot, &first);
        renderChart(plot, chart);
        const QString shown = plot.yAxis->label();
        QVERIFY2(shown.contains(QChar(0x2026)), qPrintable(shown));
        QVERIFY(shown.startsWith("share") && shown.endsWith("(%)"));
        QVERIFY(QFontMetrics(plot.yAxis->labelFont()).horizontalAdvance(shown) <= plot.height());
        // About one tick per two label heights of axis: fewer than the default five.
        const int labelHeight = QFontMetrics(plot.yAxis->tickLabelFont()).height();
        QCOMPARE(plot.yAxis->ticker()->tickCount(), std::clamp(plot.axisRect()->height() / (2 * labelHeight), 2, 5));
        QVERIFY(plot.yAxis->ticker()->tickCount() < 5);
        plot.resize(400, 700);
        QResizeEvent resize(QSize(400, 700), QSize(400, 150));
        QCoreApplication::sendEvent(&plot, &resize);
        QCOMPARE(plot.yAxis->label(), QString::fromStdString(chart.yLabel));
        QCOMPARE(plot.yAxis->ticker()->tickCount(), 5);
    }

    // Log-axis tick labels: spread out (no two closer than a label's height on a 300 px plot),
    // each reading back as its tick's value, whether the data span one decade or seven. QCustomPlot's
    // own fallback labelled 8, 10 and 12 as "8e+00", "1e+01" and "1e+01" (regression).
    void logTickLabelsAreSpreadAndExact_data()
    {
        QTest::addColumn<double>("lowest");
        QTest::addColumn<double>("highest");
        QTest::newRow("within a decade") << 7.0 << 13.0;
        QTest::newRow("one decade") << 1.5 << 9.0;
        QTest::newRow("seven decades") << 1e-4 << 2e3;
        QTest::newRow("small values") << 2e-6 << 9e-6;
    }
    void logTickLabelsAreSpreadAndExact()
    {
        QFETCH(double, lowest);
        QFETCH(double, highest);
        ChartData chart;
        chart.logY = true;
        chart.categories = {"a", "b"};
        chart.series = {{"amax", SeriesStyle::Points, {0, 1}, {lowest, highest}, {}, ""}};
        QCustomPlot plot;
        plot.resize(500, 300);
        renderChart(plot, chart);
        plot.replot();
        for (const QCPRange& range : {plot.yAxis->range(), QCPRange(lowest, highest)}) {
            plot.yAxis->setRange(range); // as drawn, and zoomed in to the data alone
            plot.replot();
            QVector<double> ticks;
            QVector<QString> labels;
            plot.yAxis->ticker()->generate(
                plot.yAxis->range(), plot.locale(), QLatin1Char('e'), 0, ticks, nullptr, &labels);
            QVERIFY2(ticks.size() >= 2, qPrintable(QString::number(ticks.size())));
            const int labelHeight = QFontMetrics(plot.yAxis->tickLabelFont()).height();
            for (int i = 0; i < ticks.size(); ++i) {
                bool ok = false;
                const double value = plot.locale().toDouble(labels[i], &ok);
                QVERIFY2(ok && std::fabs(value - ticks[i]) <= 1e-9 * ticks[i],
                    qPrintable(labels[i] + " at " + QString::number(ticks[i])));
                if (i > 0)
                    QVERIFY2(std::fabs(plot.yAxis->coordToPixel(ticks[i]) - plot.yAxis->coordToPixel(ticks[i - 1]))
                            >= labelHeight,
                        qPrintable(labels[i - 1] + " and " + labels[i]));
            }
        }
    }

private:
    QTemporaryDir dir_;
};

QTEST_MAIN(TestCharts)
#include "test_charts.moc"
