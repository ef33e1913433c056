#pragma once
// What File > Export Report puts in a report: the state it is stamped with, each result panel's
// charts, tables and summary keys when its result belongs to that state, the stale results it
// left out (summary.json's left_out) and the results that never ran (not_run), each with why. report_export.h then writes what this assembles to a
// folder; this file decides the contents, that one the files.
#include <QString>

#include <vector>

#include "report_export.h"
#include "report_section.h"
#include "session_results.h"

namespace scalescope::ui {

class ResultPanel;

// The report of these panels (in the order their charts and tables appear) for the state `now`.
// summary["left_out"] lists the stale results, summary["not_run"] the panels without a result.
ReportContents assembleReport(const std::vector<ResultPanel*>& panels, const RunStamp& now);

} // namespace scalescope::ui
