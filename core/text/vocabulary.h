#pragma once
// What both tokenizers keep and check the same way: the id table (token strings to ids and back),
// its size limit, the token ids a vocabulary file gives, the lines of a text vocabulary file and
// the model object of a tokenizer.json.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope {

// Far above any real vocabulary (roberta-base has 50,265); refuses hostile files before allocating.
constexpr std::size_t kMaxVocabEntries = 10'000'000;

// The id a vocabulary file maps `token` to; throws naming the file when it is not a non-negative
// integer below kMaxVocabEntries.
int64_t requireTokenId(const nlohmann::json& value, const std::string& token, const std::string& path);

// Calls onLine for each line of a text vocabulary file's contents (vocab.txt, merges.txt), numbered
// from 1, without its "\n" or "\r\n". A last line without "\n" is a line; nothing after a final
// "\n" is.
void forEachLine(const std::string& text, const std::function<void(const std::string& line, int lineNumber)>& onLine);

// The "model" object of a tokenizer.json's root (read from `path`); throws naming the file when the
// root is no JSON object or has no such object.
const nlohmann::json& tokenizerJsonModel(const nlohmann::json& root, const std::string& path);
// A tokenizer.json model "type" as a message quotes it: the string (abbreviated), else the JSON.
std::string quotedModelType(const nlohmann::json& type);

// A tokenizer's id table, filled while loading and const afterwards. Ids need not be dense: an id
// below size() that no token was added for is unknown. When two strings share an id, the first one
// added keeps it for decoding.
class Vocabulary {
public:
    // Which id a token string added twice (an added token that repeats a vocabulary entry) looks up.
    enum class Rebinding { LaterIdWins, FirstIdWins };

    explicit Vocabulary(Rebinding rebinding) : rebinding_(rebinding) {}

    void reserve(std::size_t tokens) { tokenToId_.reserve(tokens); }
    void add(const std::string& token, int32_t id);

    std::optional<int32_t> find(const std::string& token) const
    {
        const auto it = tokenToId_.find(token);
        return it == tokenToId_.end() ? std::nullopt : std::optional<int32_t>(it->second);
    }
    // Distinct token strings added.
    std::size_t tokenCount() const { return tokenToId_.size(); }
    const std::unordered_map<std::string, int32_t>& tokens() const { return tokenToId_; }
    // One past the largest id.
    int64_t size() const { return static_cast<int64_t>(idToToken_.size()); }
    bool empty() const { return idToToken_.empty(); }

    // Throws when `id` is no token's id.
    void checkId(int64_t id) const;
    // The string of a token id; throws as checkId does.
    const std::string& token(int64_t id) const;

private:
    Rebinding rebinding_;
    std::unordered_map<std::string, int32_t> tokenToId_;
    std::vector<std::string> idToToken_;
    std::vector<bool> idKnown_;
};

} // namespace scalescope
