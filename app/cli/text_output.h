#pragma once
// Numbers as the commands' text output (not --json) writes them.
#include <string>

namespace scalescope::cli {

// A value in dB with two decimals; "n/a" for NaN, "inf"/"-inf" for infinities.
std::string decibelText(double value);

} // namespace scalescope::cli
