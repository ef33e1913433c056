#pragma once
// `scalescope-cli diff A B`: two quantized checkpoints side by side (tasks/checkpoint_diff.h).
#include "arguments.h"

namespace scalescope::cli {

int commandDiff(const Arguments& args);

} // namespace scalescope::cli
