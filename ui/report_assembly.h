#pragma once
// What File > Export Report puts in a report: the state it is stamped with, each result panel's
// charts, tables and summary keys when its result belongs to that state, and the stale results it
// left out, named in summary.json with why. report_export.h then writes what this assembles to a
// folder; this file decides the contents, that one the files.
#include <QString>

#include <vector>

#include "report_export.h"
#include "workbench_session.h"

class QAbstractItemModel;

namespace scalescope::ui {

class ChartView;
class ResultPanel;

// One panel's share of a report. Charts and tables keep the order the panels add them in; every
// chart's title carries the report's stamp.
class ReportSection {
public:
    ReportSection(ReportContents& contents, QString stamp) : contents_(contents), stamp_(std::move(stamp)) { }

    // An empty chart is left out.
    void addChart(const ChartView* view);
    // Written as <stem>.csv; an empty table is left out by the writer.
    void addTable(const QString& stem, const QAbstractItemModel* model);
    nlohmann::json& summary() { return contents_.summary; }

private:
    ReportContents& contents_;
    QString stamp_;
};

// The report of these panels (in the order their charts and tables appear) for the state `now`.
// summary["left_out"] lists the stale results.
ReportContents assembleReport(const std::vector<ResultPanel*>& panels, const RunStamp& now);

} // namespace scalescope::ui
