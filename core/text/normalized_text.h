#pragma once
// A text being normalized, with the original byte range every normalized byte came from, changed
// exactly as Hugging Face's NormalizedString changes it (tokenizers/src/tokenizer/normalizer.rs).
// The Unigram tokenizer's offsets must equal Hugging Face's on any text, and those offsets follow
// from how each edit hands alignments on: a replaced character keeps the alignment of the
// character it replaces, an inserted one copies the alignment of the byte before it, and removed
// characters vanish with theirs (so a removal HF's Precompiled cannot attribute shifts later
// characters onto earlier alignments; that is reproduced, not corrected).
// Alignments are absolute byte offsets into the whole original text (Hugging Face keeps them
// relative to a slice plus a shift; the sums are the same). The text must be valid UTF-8.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace scalescope {

using ByteRange = std::pair<std::size_t, std::size_t>;

// One character of a transformation and its change: 0 replaces the next original character, 1 is
// inserted, -n replaces the next one and removes the n after it.
struct CharChange {
    char32_t character;
    int change;
};

struct NormalizedText {
    std::string text;
    std::vector<ByteRange> alignments; // one per byte of text
    std::size_t originalBegin = 0;     // where this text's original starts in the whole text

    // The text of original bytes [begin, end) of `whole`, unchanged.
    static NormalizedText fromOriginal(const std::string& whole, std::size_t begin, std::size_t end);

    // Hugging Face's transform_range over normalized bytes [begin, end): the characters of
    // `changes` replace that range; initialOffset characters at its start are removed first.
    void transform(std::size_t begin, std::size_t end, const std::vector<CharChange>& changes,
                   std::size_t initialOffset);
    // Every match (normalized byte ranges, ascending, disjoint) becomes `content`.
    void replaceMatches(const std::vector<ByteRange>& matches, const std::string& content);
    // Removes leading and/or trailing White_Space characters.
    void strip(bool left, bool right);
    // Puts `prefix` before the first character (nothing when the text is empty).
    void prepend(const std::string& prefix);
    // The original range normalized bytes [begin, end) come from: the first byte's start to the
    // last byte's end. An empty range maps to itself, as in Hugging Face.
    ByteRange originalRange(std::size_t begin, std::size_t end) const;
    NormalizedText slice(std::size_t begin, std::size_t end) const;
    // Cut before every occurrence of `delimiter` (Hugging Face's MergedWithNext split).
    std::vector<NormalizedText> splitBefore(char32_t delimiter) const;
};

// Rust's char::is_whitespace (the White_Space property).
bool isWhiteSpace(char32_t cp);
// The code point of valid UTF-8 at pos and its length.
std::size_t decodeUtf8At(const std::string& text, std::size_t pos, char32_t* cp);

} // namespace scalescope
