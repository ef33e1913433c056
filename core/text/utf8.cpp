#include "text/utf8.h"

namespace scalescope {

std::size_t utf8SequenceLength(const std::string& text, std::size_t pos, char32_t* codePoint)
{
    const auto byteAt = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byteAt(pos);
    const std::size_t remaining = text.size() - pos;
    if (lead < 0x80) {
        *codePoint = lead;
        return 1;
    }
    std::size_t length = 0;
    unsigned char secondMin = 0x80, secondMax = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0)
            secondMin = 0xA0; // overlong
        if (lead == 0xED)
            secondMax = 0x9F; // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0)
            secondMin = 0x90; // overlong
        if (lead == 0xF4)
            secondMax = 0x8F; // beyond U+10FFFF
    } else {
        return 0;
    }
    if (remaining < length)
        return 0;
    const unsigned char second = byteAt(pos + 1);
    if (second < secondMin || second > secondMax)
        return 0;
    for (std::size_t i = 2; i < length; ++i)
        if ((byteAt(pos + i) & 0xC0) != 0x80)
            return 0;
    char32_t value = lead & (0xFF >> (length + 1));
    for (std::size_t i = 1; i < length; ++i)
        value = (value << 6) | (byteAt(pos + i) & 0x3F);
    *codePoint = value;
    return length;
}

std::vector<CodePoint> decodeCodePoints(const std::string& text)
{
    std::vector<CodePoint> result;
    result.reserve(text.size());
    std::size_t pos = 0;
    while (pos < text.size()) {
        char32_t value = 0;
        std::size_t length = utf8SequenceLength(text, pos, &value);
        if (length == 0) {
            value = 0xFFFD;
            length = 1;
        }
        result.push_back({value, pos, pos + length});
        pos += length;
    }
    return result;
}

void appendUtf8(std::string& out, char32_t cp)
{
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

bool isValidUtf8(const std::string& text)
{
    std::size_t pos = 0;
    while (pos < text.size()) {
        char32_t value = 0;
        const std::size_t length = utf8SequenceLength(text, pos, &value);
        if (length == 0)
            return false;
        pos += length;
    }
    return true;
}

} // namespace scalescope
