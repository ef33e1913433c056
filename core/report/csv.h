#pragma once
// RFC 4180 fields for the CSV files the program writes (chart data, tables, evaluation rows).
#include <string>

namespace scalescope {

// A text cell that a spreadsheet would run as a formula (starting with =, +, -, @, tab or CR and
// not a number) is prefixed with an apostrophe.
// Quotes the field when it holds a comma, quote or line break (always with alwaysQuote), doubling
// quotes inside.
std::string csvField(const std::string& text, bool alwaysQuote = false);

} // namespace scalescope
