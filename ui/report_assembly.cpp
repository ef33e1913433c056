#include "report_assembly.h"

#include <QApplication>
#include <QDateTime>

#include <algorithm>
#include <array>

#include "tool_version.h"
#include "charts/chart_view.h"
#include "panels/result_panel.h"
#include "stale_banner.h"

namespace scalescope::ui {
namespace {

nlohmann::json stampJson(const RunStamp& stamp)
{
    nlohmann::json json;
    json["checkpoint"] = stamp.checkpoint.toStdString();
    json["reference"] = stamp.referenceKind == RunStamp::Reference::Folder ? stamp.referenceFolder.toStdString()
                                                                           : stamp.referenceText().toStdString();
    json["mode"] = runModeName(stamp.run.mode);
    json["accumulation"] = accumulationName(stamp.run.accumulation);
    json["device"] = stamp.run.device;
    json["float_linears"] = nlohmann::json::array();
    for (const QString& module : stamp.floatLinears)
        json["float_linears"].push_back(module.toStdString());
    return json;
}

// A stale result is named in the summary, with why, instead of being passed off as current.
nlohmann::json leftOutEntry(const ResultPanel& panel, const RunStamp& now)
{
    const RunStamp& produced = panel.banner()->resultStamp();
    return {{"result", panel.reportName().toStdString()},
        {"reason", ("stale: the " + produced.differenceFrom(now) + " changed since it ran").toStdString()},
        {"produced_by", stampJson(produced)}};
}

// summary.json has always listed the results it left out in this order, whatever order the panels
// add their charts in; keeping it lets two reports of one state diff clean. Others follow these.
void sortLeftOut(nlohmann::json& leftOut)
{
    static constexpr std::array<const char*, 5> kOrder = {"ask", "fill_mask", "errors", "activations", "evaluation"};
    auto rank = [](const nlohmann::json& entry) {
        const auto name = entry["result"].get<std::string>();
        return std::find(kOrder.begin(), kOrder.end(), name) - kOrder.begin();
    };
    std::stable_sort(leftOut.begin(), leftOut.end(),
        [&](const nlohmann::json& a, const nlohmann::json& b) { return rank(a) < rank(b); });
}

} // namespace

ReportContents assembleReport(const std::vector<ResultPanel*>& panels, const RunStamp& now)
{
    ReportContents contents;
    contents.summary = stampJson(now);
    contents.summary["app_version"] = toolVersion();
    contents.summary["date"] = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
    nlohmann::json leftOut = nlohmann::json::array();
    // What the report cannot hold because it never ran in this state: named, so an empty report
    // says why it is empty.
    nlohmann::json notRun = nlohmann::json::array();
    ReportSection section(contents, now.describe());
    for (const ResultPanel* panel : panels) {
        const bool stale = panel->isStale();
        if (stale)
            leftOut.push_back(leftOutEntry(*panel, now));
        if (panel->banner() && !panel->hasResult())
            notRun.push_back({{"result", panel->reportName().toStdString()}, {"reason", panel->notRunReason().toStdString()}});
        const bool current = panel->banner() ? panel->hasResult() && !stale : true;
        panel->addToReport(section, current);
    }
    sortLeftOut(leftOut);
    contents.summary["left_out"] = leftOut;
    contents.summary["not_run"] = notRun;
    std::vector<std::string> ids;
    for (const ChartData& chart : contents.charts)
        ids.push_back(chart.id);
    contents.summary["charts"] = ids;
    return contents;
}

} // namespace scalescope::ui
