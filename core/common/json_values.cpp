#include "common/json_values.h"

#include "common/error.h"
#include "common/text_files.h"

namespace scalescope {

std::string quotedJsonValue(const nlohmann::json& value, std::size_t limit)
{
    // A string key or value of a hostile file can be megabytes, or not UTF-8 at all.
    return abbreviatedText(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), limit);
}

int64_t checkedJsonInteger(const nlohmann::json& value, const std::string& what, int64_t min, int64_t max)
{
    bool inRange = false;
    int64_t result = 0;
    if (value.is_number_unsigned()) {
        const uint64_t v = value.get<uint64_t>();
        inRange = v <= static_cast<uint64_t>(INT64_MAX) && static_cast<int64_t>(v) >= min && static_cast<int64_t>(v) <= max;
        result = inRange ? static_cast<int64_t>(v) : 0;
    } else if (value.is_number_integer()) {
        result = value.get<int64_t>();
        inRange = result >= min && result <= max;
    }
    if (!inRange)
        throw Error(what + " is " + quotedJsonValue(value) + "; it must be an integer from " + std::to_string(min) +
                    " to " + std::to_string(max) + ".");
    return result;
}

} // namespace scalescope
