#pragma once
// Integers read from JSON files (config.json, quantization_config, tokenizer files), checked as the
// 64-bit values the parser stores. nlohmann::json keeps an integer as int64 or uint64, and
// get<int>() silently keeps its low 32 bits: a group_size of 2^32 + 64 would run as 64, and 10^12
// would be reported as a negative number. Every config integer is read through this instead.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace scalescope {

// The value when it is an integer within [min, max]. Otherwise throws scalescope::Error
// "<what> is <the value as the file writes it>; it must be an integer from <min> to <max>."
// `what` names the file and the key, e.g. "ckpt/config.json: \"group_size\"".
int64_t checkedJsonInteger(const nlohmann::json& value, const std::string& what, int64_t min, int64_t max);

// A JSON value as a message may quote it: its text, at most `limit` bytes (abbreviatedText).
std::string quotedJsonValue(const nlohmann::json& value, std::size_t limit = 60);

} // namespace scalescope
