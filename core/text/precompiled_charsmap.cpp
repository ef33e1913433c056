#include "text/precompiled_charsmap.h"

#include <algorithm>

#include "common/error.h"
#include "text/grapheme_clusters.h"
#include "text/utf8.h"

namespace scalescope {

namespace {

// darts-clone's unit layout: bit 31 marks a leaf (whose low 31 bits are the value), bit 8 says the
// node has a leaf child, the low 8 bits are the label, the offset to the children is above bit 10
// (shifted left by 8 more when bit 9 is set).
bool hasLeaf(std::uint32_t unit) { return ((unit >> 8) & 1u) != 0; }
std::uint32_t unitValue(std::uint32_t unit) { return unit & 0x7FFFFFFFu; }
std::uint32_t unitLabel(std::uint32_t unit) { return unit & 0x800000FFu; }
std::uint32_t unitOffset(std::uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

std::uint32_t readLittleEndian32(const std::string& blob, std::size_t pos)
{
    std::uint32_t value = 0;
    for (int i = 3; i >= 0; --i)
        value = (value << 8) | static_cast<unsigned char>(blob[pos + static_cast<std::size_t>(i)]);
    return value;
}

// Replaces `old` characters by `replacement` in a Precompiled transformation list, as Hugging Face
// counts the change: extra characters are insertions, missing ones are removed after the last
// character written so far (and are lost when nothing was written yet).
void appendReplacement(std::vector<CharChange>& changes, std::size_t oldCount, std::string_view replacement)
{
    const std::size_t first = changes.size();
    for (std::size_t pos = 0; pos < replacement.size();) {
        char32_t cp = 0;
        const std::string owned(replacement.substr(pos, 4));
        pos += decodeUtf8At(owned, 0, &cp);
        changes.push_back({cp, 0});
    }
    const long long diff = static_cast<long long>(changes.size() - first) - static_cast<long long>(oldCount);
    if (diff > 0) {
        for (long long i = 0; i < diff; ++i)
            changes[changes.size() - 1 - static_cast<std::size_t>(i)].change = 1;
    } else if (diff < 0 && !changes.empty()) {
        changes.back().change += static_cast<int>(diff);
    }
}

} // namespace

PrecompiledCharsmap PrecompiledCharsmap::parse(const std::string& blob, const std::string& where)
{
    const auto fail = [&](const std::string& problem) {
        return Error(where + " has a precompiled_charsmap that cannot be parsed: " + problem + ".");
    };
    if (blob.size() < 4)
        throw fail("it is " + std::to_string(blob.size()) + " bytes, shorter than its 4-byte trie size");
    const std::uint32_t trieBytes = readLittleEndian32(blob, 0);
    const std::size_t unitCount = trieBytes / 4;
    if (unitCount > (blob.size() - 4) / 4)
        throw fail("its trie of " + std::to_string(trieBytes) + " bytes runs past the end of its " +
                   std::to_string(blob.size()) + " bytes");
    if (unitCount == 0)
        throw fail("its trie is empty");
    PrecompiledCharsmap out;
    out.units_.resize(unitCount);
    for (std::size_t i = 0; i < unitCount; ++i)
        out.units_[i] = readLittleEndian32(blob, 4 + 4 * i);
    out.strings_ = blob.substr(4 + 4 * unitCount);
    if (!isValidUtf8(out.strings_))
        throw fail("its replacement strings are not valid UTF-8");
    out.check(where);
    return out;
}

// Walks every node the trie can reach (each at most once), so that lookups never index outside
// the units or the strings, whatever the blob holds.
void PrecompiledCharsmap::check(const std::string& where) const
{
    const auto fail = [&](const std::string& problem) {
        return Error(where + " has a precompiled_charsmap that cannot be parsed: " + problem + ".");
    };
    std::vector<bool> visited(units_.size(), false);
    std::vector<std::size_t> pending{static_cast<std::size_t>(unitOffset(units_[0]))};
    while (!pending.empty()) {
        const std::size_t base = pending.back();
        pending.pop_back();
        for (std::uint32_t label = 1; label < 256; ++label) {
            const std::size_t position = base ^ label;
            if (position >= units_.size() || unitLabel(units_[position]) != label || visited[position])
                continue;
            visited[position] = true;
            const std::size_t children = position ^ unitOffset(units_[position]);
            if (hasLeaf(units_[position])) {
                if (children >= units_.size())
                    throw fail("a trie node points past the end of the trie");
                const std::uint32_t value = unitValue(units_[children]);
                if (value > strings_.size() ||
                    (value < strings_.size() && (static_cast<unsigned char>(strings_[value]) & 0xC0) == 0x80))
                    throw fail("a trie value points outside its replacement strings");
            }
            pending.push_back(children);
        }
    }
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view chunk) const
{
    std::size_t position = unitOffset(units_[0]);
    for (const char byte : chunk) {
        const auto label = static_cast<unsigned char>(byte);
        if (label == 0)
            break;
        position ^= label;
        if (position >= units_.size() || unitLabel(units_[position]) != label)
            return std::nullopt;
        const bool leaf = hasLeaf(units_[position]);
        position ^= unitOffset(units_[position]);
        if (leaf && position < units_.size()) {
            const std::size_t begin = unitValue(units_[position]);
            const std::size_t end = strings_.find('\0', begin);
            return std::string_view(strings_).substr(begin, (end == std::string::npos ? strings_.size() : end) - begin);
        }
    }
    return std::nullopt;
}

void PrecompiledCharsmap::apply(NormalizedText& text) const
{
    std::vector<char32_t> chars;
    std::vector<std::size_t> starts; // byte position of each character, then the text's size
    for (std::size_t pos = 0; pos < text.text.size();) {
        char32_t cp = 0;
        starts.push_back(pos);
        pos += decodeUtf8At(text.text, pos, &cp);
        chars.push_back(cp);
    }
    starts.push_back(text.text.size());
    const std::string_view all(text.text);
    std::vector<CharChange> changes;
    changes.reserve(chars.size());
    bool modified = false;
    std::size_t clusterBegin = 0;
    for (const std::size_t clusterEnd : graphemeClusterEnds(chars)) {
        const std::size_t byteBegin = starts[clusterBegin];
        const std::size_t byteLength = starts[clusterEnd] - byteBegin;
        const std::optional<std::string_view> whole
            = byteLength < 6 ? transform(all.substr(byteBegin, byteLength)) : std::nullopt;
        if (whole) {
            modified = true;
            appendReplacement(changes, clusterEnd - clusterBegin, *whole);
        } else {
            for (std::size_t c = clusterBegin; c < clusterEnd; ++c) {
                const auto one = transform(all.substr(starts[c], starts[c + 1] - starts[c]));
                if (one) {
                    modified = true;
                    appendReplacement(changes, 1, *one);
                } else {
                    changes.push_back({chars[c], 0});
                }
            }
        }
        clusterBegin = clusterEnd;
    }
    if (modified)
        text.transform(0, text.text.size(), changes, 0);
}

} // namespace scalescope
