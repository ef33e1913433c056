#include "plot_files.h"

#include <QApplication>

#include <memory>

#include "charts/chart_export.h"
#include "common/text_files.h"
#include "io/output_folder.h"
#include "report/result_json.h"

namespace scalescope::cli {
namespace {

// QCustomPlot is a widget, so rendering needs a QApplication even headless; the CLI creates one
// only when plots are asked for, on the offscreen platform unless the user chose another.
void ensureApplication()
{
    if (QApplication::instance())
        return;
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    static int argc = 1;
    static char name[] = "scalescope-cli";
    static char* argv[] = {name, nullptr};
    static std::unique_ptr<QApplication> application = std::make_unique<QApplication>(argc, argv);
}

} // namespace

std::vector<std::string> writePlotFiles(const std::vector<ChartData>& charts, const std::string& dir,
                                        const std::string& format, const nlohmann::json& numbers,
                                        const std::string& jsonName, bool overwrite)
{
    const ui::ChartFormat chartFormat = ui::parseChartFormat(format);
    const std::string extension = ui::chartFormatExtension(chartFormat);
    std::vector<OutputFile> files;
    for (const ChartData& chart : charts) {
        const std::string image = chart.id + "." + extension;
        files.push_back({image, [&chart, chartFormat, image, dir] {
                             ensureApplication();
                             return ui::chartImageBytes(chart, chartFormat, QSize(1200, 700), joinPath(dir, image));
                         }});
        files.push_back({chart.id + ".csv", [&chart] { return ui::chartCsv(chart); }});
    }
    files.push_back({jsonName + ".json", [&numbers] { return jsonText(numbers) + "\n"; }});
    return writeOutputFolder(dir, files, overwrite);
}

} // namespace scalescope::cli
