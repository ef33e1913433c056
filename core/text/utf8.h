#pragma once
// UTF-8 as both tokenizers read it: a byte that does not start a well-formed sequence (overlong
// forms, surrogates, past U+10FFFF, truncated) counts as one code point, U+FFFD, so offsets agree
// between tokenizers on any input.
#include <cstddef>
#include <string>
#include <vector>

namespace scalescope {

struct CodePoint {
    char32_t value;      // U+FFFD stands in for a byte that is not valid UTF-8
    std::size_t byteBegin;
    std::size_t byteEnd;
};

// Length of the well-formed UTF-8 sequence at pos (its value in *codePoint), or 0 when the byte
// there does not start one.
std::size_t utf8SequenceLength(const std::string& text, std::size_t pos, char32_t* codePoint);
std::vector<CodePoint> decodeCodePoints(const std::string& text);
bool isValidUtf8(const std::string& text);
void appendUtf8(std::string& out, char32_t cp);

} // namespace scalescope
