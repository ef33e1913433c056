#include "report/decibel_text.h"

#include <cmath>
#include <cstdio>

namespace scalescope {
namespace {

std::string fixedDecibels(double db, int decimals)
{
    if (std::isnan(db))
        return "NaN";
    if (std::isinf(db))
        return db > 0 ? "inf" : "-inf";
    char text[48];
    std::snprintf(text, sizeof text, "%.*f", decimals, db);
    // A value that rounds to zero from below reads "0.0", not "-0.0".
    const std::string written = text;
    return written.find_first_not_of("-0.") == std::string::npos && written[0] == '-' ? written.substr(1) : written;
}

} // namespace

std::string decibelString(double db)
{
    return fixedDecibels(db, 1);
}

std::string spreadDecibelString(double db)
{
    return fixedDecibels(db, 2);
}

} // namespace scalescope
