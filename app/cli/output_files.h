#pragma once
// Checks on a file a command will write at its end (a CSV, a thresholds file, JUnit XML), made
// before the command spends its time, so that a long run does not end in a refusal.
#include <string>

namespace scalescope::cli {

// Throws Error with one sentence when path exists (and force is false), is not a place a file can
// be written (a folder, a device), or its folder is missing or not writable.
void checkOutputFileTarget(const std::string& path, bool force);

} // namespace scalescope::cli
