#pragma once
// RFC 4180 fields for the CSV files the program writes (chart data, tables, evaluation rows).
#include <string>

namespace scalescope {

// Quotes the field when it holds a comma, quote or line break (always with alwaysQuote), doubling
// quotes inside.
std::string csvField(const std::string& text, bool alwaysQuote = false);

} // namespace scalescope
