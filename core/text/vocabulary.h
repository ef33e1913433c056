#pragma once
// What both tokenizers' vocabulary loaders check the same way: the size limit and token ids.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace scalescope {

// Far above any real vocabulary (roberta-base has 50,265); refuses hostile files before allocating.
constexpr std::size_t kMaxVocabEntries = 10'000'000;

// The id a vocabulary file maps `token` to; throws naming the file when it is not a non-negative
// integer below kMaxVocabEntries.
int64_t requireTokenId(const nlohmann::json& value, const std::string& token, const std::string& path);

} // namespace scalescope
