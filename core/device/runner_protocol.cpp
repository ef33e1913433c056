#include "device/runner_protocol.h"

#include <algorithm>
#include <cstring>

namespace scalescope {
namespace {

constexpr std::size_t kReadChunk = 1u << 16;

bool isNumberCharacter(char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// True when [begin, end) is an integer token (an optional '-', then digits) outside int64.
bool integerBeyond64Bits(const char* begin, const char* end)
{
    const bool negative = begin < end && *begin == '-';
    const char* digits = negative ? begin + 1 : begin;
    if (digits == end)
        return false;
    for (const char* p = digits; p < end; ++p)
        if (*p < '0' || *p > '9')
            return false; // a fraction or an exponent: a double, not an integer
    while (digits + 1 < end && *digits == '0')
        ++digits;
    const std::size_t length = static_cast<std::size_t>(end - digits);
    const char* limit = negative ? "9223372036854775808" : "9223372036854775807";
    if (length != 19)
        return length > 19;
    return std::memcmp(digits, limit, 19) > 0;
}

} // namespace

LineRead readProtocolLine(std::istream& in, std::string& line, std::size_t maxBytes)
{
    line.clear();
    char chunk[kReadChunk];
    bool extracted = false;
    while (true) {
        // At most maxBytes + 1 characters in all: one more than the limit shows the line is too long.
        const std::size_t room = std::min<std::size_t>(kReadChunk, maxBytes - line.size() + 2);
        in.getline(chunk, static_cast<std::streamsize>(room));
        const auto got = static_cast<std::size_t>(in.gcount());
        extracted = extracted || got > 0;
        if (!in.fail()) {
            // The '\n' ended the line (extracted, not stored), or the input ended after some of it.
            line.append(chunk, in.eof() ? got : got - 1);
            break;
        }
        if (in.eof() || in.bad()) { // nothing more to read
            in.clear(in.rdstate() & ~std::ios::failbit);
            if (!extracted)
                return LineRead::EndOfInput;
            break;
        }
        // The chunk filled up before a '\n'.
        line.append(chunk, got);
        in.clear();
        if (line.size() > maxBytes)
            return LineRead::TooLong;
    }
    if (line.size() > maxBytes)
        return LineRead::TooLong;
    if (!line.empty() && line.back() == '\r')
        line.pop_back();
    return LineRead::Line;
}

ProtocolLineCheck checkProtocolLine(const std::string& line, int maxDepth, uint64_t maxValues, uint64_t maxContainers)
{
    ProtocolLineCheck check;
    int depth = 0;
    uint64_t containers = 0, separators = 0;
    bool inString = false;
    const char* const begin = line.data();
    const char* const end = begin + line.size();
    for (const char* p = begin; p < end; ++p) {
        const char c = *p;
        if (inString) {
            if (c == '\\')
                ++p; // the escaped character cannot end the string
            else if (c == '"')
                inString = false;
            continue;
        }
        switch (c) {
        case '"':
            inString = true;
            break;
        case '[':
        case '{':
            if (++depth > maxDepth) {
                check.refusal = "nests JSON more than " + std::to_string(maxDepth) + " levels deep";
                return check;
            }
            if (++containers > maxContainers) {
                check.refusal = "holds more than " + std::to_string(maxContainers) + " arrays or objects";
                return check;
            }
            break;
        case ']':
        case '}':
            if (depth > 0)
                --depth; // unbalanced brackets are the parser's to report
            break;
        case ',':
            ++separators;
            break;
        default:
            if ((c >= '0' && c <= '9') || c == '-') {
                const char* q = p;
                while (q < end && isNumberCharacter(*q))
                    ++q;
                if (check.integerOutOfRange.empty() && integerBeyond64Bits(p, q))
                    check.integerOutOfRange = std::string(p, std::min<std::size_t>(static_cast<std::size_t>(q - p), 40));
                p = q - 1;
            }
            break;
        }
        // Every value but the first follows a comma or opens a container: an upper bound that
        // counts an empty array or object twice.
        if (containers + separators + 1 > maxValues) {
            check.refusal = "holds more than " + std::to_string(maxValues) + " values";
            return check;
        }
    }
    return check;
}

} // namespace scalescope
