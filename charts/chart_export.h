#pragma once
// Writes charts to files: images (PNG, PDF, SVG) drawn headless by the same renderer as the screen,
// and the chart's data as CSV. Every file appears whole or not at all: it is made in memory, written
// to a temporary file in the destination folder with every write and the flush to disk checked, and
// renamed into place (io/atomic_write.h). Failures throw scalescope::Error naming the path.
#include <QSize>
#include <QString>

#include <string>

#include "report/chart_data.h"

namespace scalescope::ui {

enum class ChartFormat { Png, Pdf, Svg };

// "png", "pdf" or "svg" (any letter case); anything else throws Error listing the accepted names.
ChartFormat parseChartFormat(const std::string& name);
// The file extension without the dot: "png", "pdf", "svg".
std::string chartFormatExtension(ChartFormat format);

// Needs a QApplication (QCustomPlot is a widget) and must run on its thread; under
// QT_QPA_PLATFORM=offscreen no display is needed. size is the image size in pixels (PDF: points).
void exportChartImage(const ChartData& chart, const QString& path, ChartFormat format,
                      QSize size = QSize(1200, 700));
// The image file's bytes, drawn in memory (same requirements). QCustomPlot's savePng and savePdf
// write the file themselves and report success even when the file system refused bytes (a full
// disk), so images are never written through them. shownPath names the file in errors.
std::string chartImageBytes(const ChartData& chart, ChartFormat format, QSize size, const std::string& shownPath);

// RFC 4180 CSV, CRLF line ends: a header row, then one row per category (or per distinct x, in
// increasing order). Columns: the category (or x), then one per series; a Band series has two,
// "<name>_min" and "<name>_max". A series without a value at a row leaves its cell empty. Numbers
// are written so that they read back as the same double.
std::string chartCsv(const ChartData& chart);
void exportChartCsv(const ChartData& chart, const std::string& path);

} // namespace scalescope::ui
