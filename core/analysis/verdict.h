#pragma once
// How good a number is: the stated thresholds the workbench grades a run by (the triage card, the
// good/bad bands on SQNR charts, the report's verdict). One place, so the colour on a chart and the
// word on the card never disagree.
//
// The SQNR bands follow what a float-vs-FP8 E4M3 comparison of an encoder gives: E4M3 keeps 3
// mantissa bits, so one rounding step alone is ~30 dB (a uniform error of half a step on values
// spread over the binade), and a healthy FP8 model lands at 25-40 dB on its logits; below 20 dB the
// error is as large as a tenth of the signal and answers start to move. The F1 bands: within 1
// point is the run-to-run spread of a few hundred SQuAD questions (and issue 28's default
// --max-f1-drop); more than 3 points is a loss users report as a regression.
#include <string>

namespace scalescope {

enum class Grade { Good, Fair, Poor };
const char* gradeName(Grade grade); // "good", "fair", "poor"

struct VerdictThresholds {
    double goodSqnrDb = 30.0;  // at or above: good
    double poorSqnrDb = 20.0;  // below: poor; in between: fair
    double goodF1Drop = 1.0;   // F1 lost against the reference, percentage points: at most this is good
    double poorF1Drop = 3.0;   // more than this: poor
};

const VerdictThresholds& verdictThresholds();

// An infinite SQNR (identical outputs) is good; NaN is poor.
Grade gradeSqnr(double sqnrDb, const VerdictThresholds& thresholds = verdictThresholds());
// dropPoints = reference F1 - run F1 (negative: the run did better).
Grade gradeF1Drop(double dropPoints, const VerdictThresholds& thresholds = verdictThresholds());
// Disagreeing answers are poor whatever the SQNR says.
inline Grade gradeAgreement(bool agrees) { return agrees ? Grade::Good : Grade::Poor; }
Grade worse(Grade a, Grade b);

// "#1b7837" (good), "#b35806" (fair), "#b2182b" (poor): colour-blind-safe, dark enough for text.
const char* gradeColor(Grade grade);

} // namespace scalescope
