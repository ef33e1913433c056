#pragma once
// SentencePiece's compiled normalization rules (ModelProto.normalizer_spec.precompiled_charsmap,
// tokenizer.json's Precompiled normalizer): a little-endian uint32 byte size of a darts-clone
// double-array trie, that many bytes of 32-bit trie units, then NUL-terminated replacement strings
// that the trie's values point into. Applied as Hugging Face's Precompiled normalizer applies it
// (tokenizers/src/normalizers/precompiled.rs): one extended grapheme cluster at a time when it has
// fewer than 6 bytes, taking the FIRST (shortest) key that prefixes it as the replacement of the
// whole cluster; otherwise, and when no key prefixes the cluster, character by character.
// Threading: const after parsing.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/normalized_text.h"

namespace scalescope {

class PrecompiledCharsmap {
public:
    // Parses and checks the blob: every unit the trie can reach lies inside it and every value
    // points at a character boundary of the strings. Throws scalescope::Error "<where> has a
    // precompiled_charsmap that ...: <problem>." on anything Hugging Face's reader refuses or would
    // index out of bounds with.
    static PrecompiledCharsmap parse(const std::string& blob, const std::string& where);

    // The replacement of the shortest key that prefixes `chunk`, or nothing.
    std::optional<std::string_view> transform(std::string_view chunk) const;
    void apply(NormalizedText& text) const;

private:
    void check(const std::string& where) const;

    std::vector<std::uint32_t> units_;
    std::string strings_;
};

} // namespace scalescope
