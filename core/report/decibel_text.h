#pragma once
// How a decibel figure is written for people, in the window, the report and the provenance text:
// one rule for every place that shows a measured SQNR or a difference of two.
#include <string>

namespace scalescope {

// A measured figure to 0.1 dB ("38.3"): the digits beyond it change from run to run and from one
// input to the next, so they carry nothing a person can act on. "inf" and "-inf" for an identical
// or an empty output, "NaN" when nothing could be measured.
std::string decibelString(double db);

// A run-to-run spread to 0.01 dB: spreads are mostly below 0.1, and "+-0.0 dB" would read as none.
std::string spreadDecibelString(double db);

} // namespace scalescope
