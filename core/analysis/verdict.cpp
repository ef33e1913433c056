#include "analysis/verdict.h"

#include <cmath>

namespace scalescope {

const char* gradeName(Grade grade)
{
    switch (grade) {
    case Grade::Good: return "good";
    case Grade::Fair: return "fair";
    case Grade::Poor: return "poor";
    }
    return "poor";
}

const VerdictThresholds& verdictThresholds()
{
    static const VerdictThresholds thresholds;
    return thresholds;
}

Grade gradeSqnr(double sqnrDb, const VerdictThresholds& thresholds)
{
    if (std::isnan(sqnrDb) || sqnrDb < thresholds.poorSqnrDb)
        return Grade::Poor;
    return sqnrDb >= thresholds.goodSqnrDb ? Grade::Good : Grade::Fair;
}

Grade gradeF1Drop(double dropPoints, const VerdictThresholds& thresholds)
{
    if (std::isnan(dropPoints) || dropPoints > thresholds.poorF1Drop)
        return Grade::Poor;
    return dropPoints <= thresholds.goodF1Drop ? Grade::Good : Grade::Fair;
}

Grade worse(Grade a, Grade b)
{
    return static_cast<int>(a) >= static_cast<int>(b) ? a : b;
}

const char* gradeColor(Grade grade)
{
    switch (grade) {
    case Grade::Good: return "#1b7837";
    case Grade::Fair: return "#b35806";
    case Grade::Poor: return "#b2182b";
    }
    return "#b2182b";
}

} // namespace scalescope
