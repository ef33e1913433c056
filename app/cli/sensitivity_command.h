#pragma once
// `scalescope-cli sensitivity`: which Linear, unit or layer breaks the answer (keep-float, which
// writes the fix, is keep_float_command.h).
#include "arguments.h"

namespace scalescope::cli {

int commandSensitivity(const Arguments& args);

} // namespace scalescope::cli
