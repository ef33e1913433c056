#pragma once
// Byte-level BPE tokenizer as RoBERTa/GPT-2 use it, loaded from vocab.json + merges.txt or from a
// Hugging Face tokenizer.json (model.type "BPE"). Produces ids with character offsets (Unicode
// code points into the input text, as Python's str indexing counts them), recognises the literal
// "<mask>" special token in text, and builds RoBERTa sequences:
//   single: <s> A </s>        pair: <s> A </s></s> B </s>
// Offsets of word tokens exclude the leading space that byte-level BPE folds into the token
// (Hugging Face's trim_offsets=true); special tokens get (0, 0).
// Errors: scalescope::Error naming the file and the problem. Threading: const after load.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace scalescope {

struct Encoding {
    std::vector<int64_t> ids;
    std::vector<std::pair<int, int>> offsets; // [start, end) in code points of the sequence's text
    std::vector<int> sequenceIds;             // -1 special token, 0 first text, 1 second text
};

class BpeTokenizer {
public:
    // Looks for tokenizer.json, else vocab.json + merges.txt, in dir.
    static std::unique_ptr<BpeTokenizer> loadFromDirectory(const std::string& dir);
    static std::unique_ptr<BpeTokenizer> loadFromFiles(const std::string& vocabJsonPath,
                                                       const std::string& mergesTxtPath);
    static std::unique_ptr<BpeTokenizer> loadFromTokenizerJson(const std::string& path);
    ~BpeTokenizer();

    // Tokens of a text without special tokens around it (but "<mask>" in the text becomes the
    // mask id). Offsets refer to `text`.
    Encoding encodeText(const std::string& text) const;
    // <s> text </s>
    Encoding encode(const std::string& text) const;
    // <s> first </s></s> second </s>; offsets of each token refer to its own text.
    Encoding encodePair(const std::string& first, const std::string& second) const;

    // Decodes ids back to UTF-8 text (byte-level), skipping special tokens when asked.
    std::string decode(const std::vector<int64_t>& ids, bool skipSpecialTokens = true) const;
    // The vocabulary string of one id ("Ġworld"), and its decoded text (" world").
    std::string tokenString(int64_t id) const;
    std::string tokenText(int64_t id) const;

    int64_t vocabSize() const;
    int64_t bosId() const;  // <s>
    int64_t eosId() const;  // </s>
    int64_t padId() const;  // <pad>
    int64_t unkId() const;  // <unk>
    int64_t maskId() const; // <mask>

private:
    BpeTokenizer();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Number of Unicode code points in a UTF-8 string (invalid bytes count one each).
int codePointCount(const std::string& utf8);
// Byte offset of code point index `cp` in a UTF-8 string (clamped to the size).
std::size_t byteOffsetOfCodePoint(const std::string& utf8, int cp);

} // namespace scalescope
