#pragma once
// `scalescope-cli sensitivity` (which Linear or layer breaks the answer) and `keep-float` (write
// the fixed checkpoint and show before/after), as the README's command line lists them.
#include "arguments.h"

namespace scalescope::cli {

int commandSensitivity(const Arguments& args);
int commandKeepFloat(const Arguments& args);

} // namespace scalescope::cli
