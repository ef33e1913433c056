#include "plot_files.h"

#include <QApplication>

#include <filesystem>
#include <memory>

#include "charts/chart_export.h"
#include "common/error.h"
#include "io/atomic_write.h"
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
    namespace fs = std::filesystem;
    const ui::ChartFormat chartFormat = ui::parseChartFormat(format);
    const std::string extension = ui::chartFormatExtension(chartFormat);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir))
        throw Error("Cannot create the plots folder " + dir + ".");

    std::vector<std::string> files;
    for (const ChartData& chart : charts) {
        files.push_back((fs::path(dir) / (chart.id + "." + extension)).string());
        files.push_back((fs::path(dir) / (chart.id + ".csv")).string());
    }
    files.push_back((fs::path(dir) / (jsonName + ".json")).string());
    for (const std::string& file : files) {
        if (!overwrite && fs::exists(fs::symlink_status(file, ec)))
            throw Error(file + " already exists; pass --force to overwrite the plots.");
        if (const std::string problem = outputTargetProblem(file); !problem.empty())
            throw Error(problem);
    }

    ensureApplication();
    for (const ChartData& chart : charts) {
        ui::exportChartImage(chart, QString::fromStdString((fs::path(dir) / (chart.id + "." + extension)).string()), chartFormat);
        ui::exportChartCsv(chart, (fs::path(dir) / (chart.id + ".csv")).string());
    }
    writeBytesAtomically(files.back(), jsonText(numbers) + "\n");
    return files;
}

} // namespace scalescope::cli
