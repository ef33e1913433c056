#pragma once
// What one line of the runner protocol may hold (packaging/runners/PROTOCOL.md, "Common to both
// versions"), checked the same way by the CPU runner (core/engine/runner_server) and the client
// (device/runner_channel): the longest line, the deepest nesting, the most JSON values and
// containers, integers within 64 bits. A line is read without holding more than the limit and
// checked in one linear pass before a parser builds anything from it, so a hostile line costs
// at most its own bytes.
#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>

namespace scalescope {

// 64 MiB, not counting the '\n' that ends the line.
constexpr std::size_t kProtocolMaxLineBytes = std::size_t(64) << 20;
constexpr int kProtocolMaxDepth = 64;
// Values counted as a parser stores them (numbers, strings, true/false/null, arrays, objects; not
// object keys). A forward of 4,096 rows of 512 tokens with its mask and token types holds 6.3 Mi,
// and a parsed value costs 16 to 80 bytes, so a line can never cost more than ~0.5 GB parsed.
constexpr uint64_t kProtocolMaxValues = uint64_t(8) << 20;
constexpr uint64_t kProtocolMaxContainers = uint64_t(1) << 20;

enum class LineRead { Line, EndOfInput, TooLong };

// Reads the next line (without its '\n', and without a '\r' before it) into `line`. It never
// takes more than maxBytes + 1 bytes from the stream: TooLong as soon as the line is longer than
// maxBytes (what follows stays unread). EndOfInput when the stream had nothing left; a last line
// without a '\n' is a Line.
LineRead readProtocolLine(std::istream& in, std::string& line, std::size_t maxBytes = kProtocolMaxLineBytes);

struct ProtocolLineCheck {
    // Why the line cannot be parsed within the bounds, completing "The request ..." ("nests JSON
    // more than 64 levels deep"); empty when it can.
    std::string refusal;
    // The first integer outside the signed 64-bit range, as the line writes it (at most 40
    // characters). Such a line still parses (as a double), so the caller decides what to do.
    std::string integerOutOfRange;
};

// One pass over JSON text: nesting, the number of values and of containers, and integers beyond
// 64 bits. Brackets, commas and digits inside strings do not count.
ProtocolLineCheck checkProtocolLine(const std::string& line, int maxDepth = kProtocolMaxDepth,
                                    uint64_t maxValues = kProtocolMaxValues,
                                    uint64_t maxContainers = kProtocolMaxContainers);

} // namespace scalescope
