#include "text/vocabulary.h"

#include "common/error.h"
#include "common/json_values.h"
#include "common/text_files.h"

namespace scalescope {

int64_t requireTokenId(const nlohmann::json& value, const std::string& token, const std::string& path)
{
    if (!value.is_number_integer() || (!value.is_number_unsigned() && value.get<int64_t>() < 0))
        throw Error(path + " maps the token \"" + escapeInvalidUtf8(abbreviatedText(token, 60)) + "\" to " +
                    quotedJsonValue(value) + ", not to a non-negative integer id.");
    const uint64_t id = value.get<uint64_t>();
    if (id >= kMaxVocabEntries)
        throw Error(path + " maps the token \"" + escapeInvalidUtf8(abbreviatedText(token, 60)) + "\" to id " + std::to_string(id) +
                    ", beyond the limit of " + std::to_string(kMaxVocabEntries) + " entries.");
    return static_cast<int64_t>(id);
}

void Vocabulary::add(const std::string& token, int32_t id)
{
    if (rebinding_ == Rebinding::LaterIdWins)
        tokenToId_[token] = id;
    else
        tokenToId_.emplace(token, id);
    if (static_cast<std::size_t>(id) >= idToToken_.size()) {
        idToToken_.resize(static_cast<std::size_t>(id) + 1);
        idKnown_.resize(static_cast<std::size_t>(id) + 1, false);
    }
    if (!idKnown_[static_cast<std::size_t>(id)]) {
        idToToken_[static_cast<std::size_t>(id)] = token;
        idKnown_[static_cast<std::size_t>(id)] = true;
    }
}

void Vocabulary::checkId(int64_t id) const
{
    if (id < 0 || static_cast<std::size_t>(id) >= idToToken_.size() || !idKnown_[static_cast<std::size_t>(id)])
        throw Error("Token id " + std::to_string(id) + " is not in the tokenizer's vocabulary.");
}

const std::string& Vocabulary::token(int64_t id) const
{
    checkId(id);
    return idToToken_[static_cast<std::size_t>(id)];
}

} // namespace scalescope
