#include "text_output.h"

#include <cmath>
#include <cstdio>

namespace scalescope::cli {

std::string decibelText(double value)
{
    if (std::isnan(value))
        return "n/a";
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", value);
    return text;
}

} // namespace scalescope::cli
