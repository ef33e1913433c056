#include "report/csv.h"

#include <cstdlib>

namespace scalescope {

namespace {

// A spreadsheet runs a cell that starts with = + - @ (or tab/CR before one) as a formula
// (CSV injection); numbers such as -1.5 or -inf are data and stay as they are.
bool looksLikeFormula(const std::string& text)
{
    if (text.empty() || std::string("=+-@\t\r").find(text[0]) == std::string::npos)
        return false;
    char* end = nullptr;
    std::strtod(text.c_str(), &end);
    return !(end && end != text.c_str() && *end == '\0');
}

} // namespace

std::string csvField(const std::string& rawText, bool alwaysQuote)
{
    // The leading apostrophe is what spreadsheets themselves use to mark a cell as text.
    const std::string text = looksLikeFormula(rawText) ? "'" + rawText : rawText;
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
