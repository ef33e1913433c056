#pragma once
// `--plots DIR --format png|pdf|svg`: every chart as an image and as CSV, plus the command's JSON
// document, rendered headless with QCustomPlot.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/chart_data.h"

namespace scalescope::cli {

// Returns the files written. Goes through io/output_folder.h: the folder is reserved for this run,
// and it refuses (before writing anything) when one of the files exists and overwrite is false.
std::vector<std::string> writePlotFiles(const std::vector<ChartData>& charts, const std::string& dir,
                                        const std::string& format, const nlohmann::json& numbers,
                                        const std::string& jsonName, bool overwrite);

} // namespace scalescope::cli
