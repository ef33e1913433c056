#pragma once
// What a result panel writes into a report (ResultPanel::addToReport): its charts, tables and
// summary keys. Apart from report_assembly.h, which loops over the panels, so that the panels
// depend only on this and the assembler sits above them.
#include <QString>

#include "report_export.h"

class QAbstractItemModel;

namespace scalescope::ui {

class ChartView;

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

} // namespace scalescope::ui
