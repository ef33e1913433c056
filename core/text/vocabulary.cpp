#include "text/vocabulary.h"

#include "common/error.h"

namespace scalescope {

int64_t requireTokenId(const nlohmann::json& value, const std::string& token, const std::string& path)
{
    if (!value.is_number_integer() || (!value.is_number_unsigned() && value.get<int64_t>() < 0))
        throw Error(path + " maps the token \"" + token + "\" to " + value.dump() +
                    ", not to a non-negative integer id.");
    const uint64_t id = value.get<uint64_t>();
    if (id >= kMaxVocabEntries)
        throw Error(path + " maps the token \"" + token + "\" to id " + std::to_string(id) +
                    ", beyond the limit of " + std::to_string(kMaxVocabEntries) + " entries.");
    return static_cast<int64_t>(id);
}

} // namespace scalescope
