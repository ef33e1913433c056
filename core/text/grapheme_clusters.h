#pragma once
// Extended grapheme clusters (Unicode Standard Annex #29, rules GB3 to GB13), as Hugging Face's
// Precompiled normalizer walks a text with the unicode-segmentation crate: it looks each short
// cluster up whole before falling back to its characters, so where clusters end changes the
// normalized text. Tables: text/generated/grapheme_tables.h (Unicode 15.0); the Indic conjunct
// rule of Unicode 15.1 (GB9c) is left out, as it only joins clusters of six bytes or more, which
// the normalizer looks up character by character anyway.
#include <cstddef>
#include <vector>

namespace scalescope {

// The end index (exclusive) of each cluster of `codePoints`, in order; the last is its size.
std::vector<std::size_t> graphemeClusterEnds(const std::vector<char32_t>& codePoints);

} // namespace scalescope
