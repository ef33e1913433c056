#pragma once
// Device checks and gates (docs/ARCHITECTURE.md "Device checks and gates"):
// `scalescope-cli noise-floor CKPT [--reference DIR] (--squad FILE [--max-samples N] | --texts FILE)
//  [--runs A,B] --output FILE`: thresholds per capture point and metric between two runs that
//  should agree up to rounding;
// `scalescope-cli check CKPT [--device D | --devices FILE] [--against emulation|reference|fp16,...]
//  [--thresholds FILE] (--squad FILE | --texts FILE) [--max-failure-rate R] [--max-f1-drop P]
//  [--junit FILE] [--plots DIR] --json`: the verdict (exit 0 pass, 1 fail), failure rates per point,
//  where departures start, the F1 difference with its bootstrap interval.
#include "arguments.h"

namespace scalescope::cli {

int commandNoiseFloor(const Arguments& args);
int commandCheck(const Arguments& args);

} // namespace scalescope::cli
