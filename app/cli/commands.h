#pragma once
// The scalescope-cli commands (docs/ARCHITECTURE.md "Command line contract").
#include <string>
#include <vector>

namespace scalescope::cli {

// Runs one command line (without the program name); returns the process exit code:
// 0 success, 1 the input or the run failed (one sentence on stderr), 2 usage error.
int run(const std::vector<std::string>& args);

} // namespace scalescope::cli
