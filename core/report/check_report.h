#pragma once
// The files of a device check (docs/ARCHITECTURE.md "Device checks and gates"): the thresholds
// file noise-floor writes and check reads, check's JSON document, its JUnit XML, and its charts.
// One writer and one reader each, shared by the CLI and the workbench.
#include <string>

#include <nlohmann/json.hpp>

#include "report/chart_data.h"
#include "tasks/device_check.h"

namespace scalescope {

// {"format": "scalescope-thresholds", "version": 1, "percentile", "provenance": {...},
//  "points": [{"point", "samples", "thresholds": {"sqnr_db": x, ...}}]}. A threshold of +-inf is
// written as the string "inf" / "-inf" (JSON has no infinity); a metric a point lacks is left out.
nlohmann::json thresholdsJson(const ThresholdSet& thresholds);
// Reads what thresholdsJson writes. Throws scalescope::Error naming `sourceName` and the problem
// (not a thresholds file, an unknown metric, a value that is not a number).
ThresholdSet thresholdsFromJson(const nlohmann::json& document, const std::string& sourceName);
// readJsonFile + thresholdsFromJson.
ThresholdSet readThresholdsFile(const std::string& path);

// check --json: {"verdict": "pass"|"fail", "passed", "sentence", "reasons", "gate", "run",
// "twins": [{"name", "description", "points": [...], "departure_start", "failing_inputs",
// "f1_difference": {...}, "scores": {...}}], "best_twin_per_point", "inputs": [{"id", "skipped",
// "first_failing_point": {twin: point}}], "scores", "thresholds_provenance", "timing"}.
nlohmann::json checkResultJson(const CheckResult& result);

// JUnit XML: one <testsuite> per twin, one <testcase> per checked capture point (failing when its
// failure rate exceeds the allowed rate) and one "end to end" case (the verdict).
std::string checkJunitXml(const CheckResult& result);

// Failure rate per point with the allowed rate as a line; inputs whose departure starts at each
// point; the F1 difference with its interval against the allowed drop (QA only).
ChartData checkFailureRateChart(const CheckResult& result, std::size_t twin = 0);
ChartData checkDepartureStartChart(const CheckResult& result, std::size_t twin = 0);
ChartData checkF1IntervalChart(const CheckResult& result);

} // namespace scalescope
