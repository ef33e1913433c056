#include "report/csv.h"

namespace scalescope {

std::string csvField(const std::string& text, bool alwaysQuote)
{
    if (!alwaysQuote && text.find_first_of(",\"\r\n") == std::string::npos)
        return text;
    std::string quoted = "\"";
    for (char c : text) {
        if (c == '"')
            quoted += '"';
        quoted += c;
    }
    return quoted + "\"";
}

} // namespace scalescope
