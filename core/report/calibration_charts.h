#pragma once
// The calibration lab's charts (tasks/calibration_lab_result.h), for the Calibration view and
// `calibrate --plots`. x = the sample counts as categories (8, 16, 32, ... evenly spaced: a log2
// axis for the doubling default sizes). One line per Linear, or per encoder layer (its worst
// Linear) when there are more than 12 Linears.
#include "report/chart_data.h"
#include "tasks/calibration_lab_result.h"

namespace scalescope {

// The scale after n samples as a share of the full set's, the worst (smallest) over the orders.
ChartData calibrationConvergenceChart(const CalibrationLabResult& result);
// The share of evaluation tokens with an element that clips under the scale after n samples, the
// worst (largest) over the orders; zero without evaluation texts.
ChartData calibrationClipChart(const CalibrationLabResult& result);

} // namespace scalescope
