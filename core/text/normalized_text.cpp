#include "text/normalized_text.h"

#include <algorithm>

#include "text/utf8.h"

namespace scalescope {

std::size_t decodeUtf8At(const std::string& text, std::size_t pos, char32_t* cp)
{
    // Callers hold valid UTF-8 (the tokenizer cleans its input first); a stray byte still advances.
    const std::size_t length = utf8SequenceLength(text, pos, cp);
    if (length == 0) {
        *cp = 0xFFFD;
        return 1;
    }
    return length;
}

bool isWhiteSpace(char32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

NormalizedText NormalizedText::fromOriginal(const std::string& whole, std::size_t begin, std::size_t end)
{
    NormalizedText out;
    out.text = whole.substr(begin, end - begin);
    out.alignments.reserve(out.text.size());
    for (std::size_t pos = begin; pos < end;) {
        char32_t cp = 0;
        const std::size_t length = decodeUtf8At(whole, pos, &cp);
        out.alignments.insert(out.alignments.end(), length, ByteRange{pos, pos + length});
        pos += length;
    }
    out.originalBegin = begin;
    return out;
}

void NormalizedText::transform(std::size_t begin, std::size_t end, const std::vector<CharChange>& changes,
                               std::size_t initialOffset)
{
    std::vector<std::size_t> replacedLengths; // the characters of [begin, end), consumed in order
    for (std::size_t pos = begin; pos < end;) {
        char32_t cp = 0;
        const std::size_t length = decodeUtf8At(text, pos, &cp);
        replacedLengths.push_back(length);
        pos += length;
    }
    std::size_t next = 0;
    std::size_t offset = begin; // byte of the old text the next change is aligned against
    for (; next < initialOffset && next < replacedLengths.size(); ++next)
        offset += replacedLengths[next];

    const ByteRange empty{originalBegin, originalBegin};
    std::string out;
    std::vector<ByteRange> outAlignments;
    for (const CharChange& change : changes) {
        ByteRange align = empty;
        if (change.change > 0) {
            if (offset >= 1)
                align = alignments[offset - 1];
        } else if (offset < alignments.size()) {
            align = alignments[offset];
        }
        if (change.change <= 0 && next < replacedLengths.size())
            offset += replacedLengths[next++];
        for (int removed = 0; removed < -change.change && next < replacedLengths.size(); ++removed)
            offset += replacedLengths[next++];
        const std::size_t before = out.size();
        appendUtf8(out, change.character);
        outAlignments.insert(outAlignments.end(), out.size() - before, align);
    }
    text.replace(begin, end - begin, out);
    alignments.erase(alignments.begin() + static_cast<std::ptrdiff_t>(begin),
                     alignments.begin() + static_cast<std::ptrdiff_t>(end));
    alignments.insert(alignments.begin() + static_cast<std::ptrdiff_t>(begin), outAlignments.begin(),
                      outAlignments.end());
}

void NormalizedText::replaceMatches(const std::vector<ByteRange>& matches, const std::string& content)
{
    // One pass with the result of Hugging Face's one transform per match: a match's characters are
    // removed and the content's are inserted, so they all copy the alignment of the match's last
    // byte. (A transform per match would move the rest of the text once per space.)
    std::string out;
    std::vector<ByteRange> outAlignments;
    out.reserve(text.size());
    outAlignments.reserve(alignments.size());
    std::size_t copied = 0;
    for (const ByteRange& match : matches) {
        out.append(text, copied, match.first - copied);
        outAlignments.insert(outAlignments.end(), alignments.begin() + static_cast<std::ptrdiff_t>(copied),
                             alignments.begin() + static_cast<std::ptrdiff_t>(match.first));
        const ByteRange align = match.second >= 1 ? alignments[match.second - 1] : ByteRange{originalBegin, originalBegin};
        out += content;
        outAlignments.insert(outAlignments.end(), content.size(), align);
        copied = match.second;
    }
    out.append(text, copied, std::string::npos);
    outAlignments.insert(outAlignments.end(), alignments.begin() + static_cast<std::ptrdiff_t>(copied), alignments.end());
    text = std::move(out);
    alignments = std::move(outAlignments);
}

void NormalizedText::strip(bool left, bool right)
{
    std::vector<char32_t> chars;
    for (std::size_t pos = 0; pos < text.size();) {
        char32_t cp = 0;
        pos += decodeUtf8At(text, pos, &cp);
        chars.push_back(cp);
    }
    const auto count = static_cast<long long>(chars.size());
    long long leading = 0;
    while (left && leading < count && isWhiteSpace(chars[static_cast<std::size_t>(leading)]))
        ++leading;
    long long trailing = 0;
    while (right && trailing < count && isWhiteSpace(chars[static_cast<std::size_t>(count - 1 - trailing)]))
        ++trailing;
    if (leading == 0 && trailing == 0)
        return;
    // The last character kept also removes the trailing ones (which only matters for counting).
    std::vector<CharChange> changes;
    for (long long i = leading; i < count - trailing; ++i) {
        const char32_t cp = chars[static_cast<std::size_t>(i)];
        changes.push_back({cp, i == count - trailing - 1 ? static_cast<int>(-trailing) : 0});
    }
    transform(0, text.size(), changes, static_cast<std::size_t>(leading));
}

void NormalizedText::prepend(const std::string& prefix)
{
    if (text.empty())
        return;
    char32_t first = 0;
    const std::size_t firstLength = decodeUtf8At(text, 0, &first);
    std::vector<CharChange> changes;
    for (std::size_t pos = 0; pos < prefix.size();) {
        char32_t cp = 0;
        pos += decodeUtf8At(prefix, pos, &cp);
        changes.push_back({cp, changes.empty() ? 0 : 1});
    }
    changes.push_back({first, 1});
    transform(0, firstLength, changes, 0);
}

ByteRange NormalizedText::originalRange(std::size_t begin, std::size_t end) const
{
    if (begin >= end)
        return {originalBegin + begin, originalBegin + end};
    return {alignments[begin].first, alignments[end - 1].second};
}

NormalizedText NormalizedText::slice(std::size_t begin, std::size_t end) const
{
    NormalizedText out;
    out.text = text.substr(begin, end - begin);
    out.alignments.assign(alignments.begin() + static_cast<std::ptrdiff_t>(begin),
                          alignments.begin() + static_cast<std::ptrdiff_t>(end));
    out.originalBegin = originalRange(begin, end).first;
    return out;
}

std::vector<NormalizedText> NormalizedText::splitBefore(char32_t delimiter) const
{
    std::vector<NormalizedText> pieces;
    std::size_t pieceBegin = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        char32_t cp = 0;
        const std::size_t length = decodeUtf8At(text, pos, &cp);
        if (cp == delimiter && pos > pieceBegin) {
            pieces.push_back(slice(pieceBegin, pos));
            pieceBegin = pos;
        }
        pos += length;
    }
    if (pieceBegin < text.size())
        pieces.push_back(slice(pieceBegin, text.size()));
    return pieces;
}

} // namespace scalescope
