#pragma once
// `scalescope-cli calibrate`: the calibration lab (engine/calibration_lab.h) of a float checkpoint,
// and with --write the checkpoint quantized with the suggested number of samples.
#include "arguments.h"

namespace scalescope::cli {

int commandCalibrate(const Arguments& args);

} // namespace scalescope::cli
