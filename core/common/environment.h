#pragma once
// Settings read from environment variables, all checked by one rule: an unset or empty variable
// means its default, anything else is a valid value or one sentence naming the variable, what it
// holds, what it may hold and what unset means (scalescope::Error). A value is never ignored.
#include <cstdint>
#include <string>
#include <vector>

namespace scalescope {

// The variable's text, "" when unset.
std::string environmentText(const char* name);

// The integer from low to high that `text` (the variable's value) spells in decimal, without sign,
// spaces or anything after it; `unsetMeans` is how the error says what unset gives ("one thread
// per core"), `what` what a value is ("a thread count"). Needs a non-empty text.
std::uint64_t environmentInteger(const char* name, const std::string& text, std::uint64_t low, std::uint64_t high,
                                 const char* what, const char* unsetMeans);

// The variable's value when it is one of `choices`, "" when unset or empty; throws otherwise.
std::string environmentChoice(const char* name, const std::vector<std::string>& choices, const char* unsetMeans);

} // namespace scalescope
