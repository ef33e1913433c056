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

void forEachLine(const std::string& text, const std::function<void(const std::string& line, int lineNumber)>& onLine)
{
    std::size_t lineStart = 0;
    int lineNumber = 0;
    while (lineStart < text.size()) {
        std::size_t lineEnd = text.find('\n', lineStart);
        if (lineEnd == std::string::npos)
            lineEnd = text.size();
        std::string line = text.substr(lineStart, lineEnd - lineStart);
        lineStart = lineEnd + 1;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        onLine(line, ++lineNumber);
    }
}

const nlohmann::json& tokenizerJsonModel(const nlohmann::json& root, const std::string& path)
{
    if (!root.is_object())
        throw Error(path + " is not a tokenizer: expected a JSON object.");
    const auto model = root.find("model");
    if (model == root.end() || !model->is_object())
        throw Error(path + " has no \"model\" object.");
    return *model;
}

std::string quotedModelType(const nlohmann::json& type)
{
    return type.is_string() ? abbreviatedText(type.get<std::string>(), 60) : quotedJsonValue(type);
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
