#pragma once
// The words every view of a sensitivity sweep uses (the chart, the Sensitivity table and
// suggestion, the Triage suspects and next step, the Linear inspector, the CLI), in one place so
// that the same measure is never called two names.
#include <string>
#include <vector>

#include "tasks/sensitivity.h"

namespace scalescope {

// The sweep's two measures (SensitivityEntry::recoveredDb, lostAloneDb).
extern const char* const kRecoveredMeasure; // "dB recovered when kept float"
extern const char* const kLostAloneMeasure; // "dB lost when alone in FP8"

// "=3" when the entry ties with others and rank 3 leads its tie group (the leader carries the mark
// too: "=1" reads "joint first"); "" when it stands alone.
std::string sensitivityTieMark(const SensitivityEntry& entry);
// A chart or list label with its tie mark: "L3.ffn.in =1", or the label alone.
std::string sensitivityMarkedLabel(const SensitivityEntry& entry);

// Keeping the entry float moves the final output by no more than the run-to-run spread (a tie at
// the bottom, a negative recovery): it has no measurable effect, which every view says in words
// (kNoMeasurableEffect) instead of drawing a bar or listing it as a suspect. False when the spread
// was not estimated or the recovery is not a finite number.
extern const char* const kNoMeasurableEffect; // "no measurable effect"
bool sensitivityNoMeasurableEffect(const SensitivityEntry& entry, const SensitivitySpread& spread);

// The suggestion as a counted headline: "Keep 2 Linears float", "Keep 1 Linear float"; "" when it
// suggests nothing. Tied entries in it add ", 2 of them tied within the spread of +-0.30 dB: kept
// together, the sweep does not pick among them".
std::string keepFloatHeadline(const SensitivityResult& result);

} // namespace scalescope
