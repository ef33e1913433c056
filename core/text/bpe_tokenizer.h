#pragma once
// Byte-level BPE tokenizer as RoBERTa/GPT-2 use it, loaded from vocab.json + merges.txt or from a
// Hugging Face tokenizer.json (model.type "BPE"). Produces ids with character offsets (Unicode
// code points into the input text, as Python's str indexing counts them), recognises the literal
// "<mask>" special token in text, and builds RoBERTa sequences:
//   single: <s> A </s>        pair: <s> A </s></s> B </s>
// Offsets of word tokens exclude the leading space that byte-level BPE folds into the token
// (Hugging Face's trim_offsets=true); special tokens get (0, 0).
// Token type ids are all 0, as RoBERTa has a single token type.
// Errors: scalescope::Error naming the file and the problem. Threading: const after load.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/tokenizer.h"

namespace scalescope {

class BpeTokenizer : public Tokenizer {
public:
    // Looks for tokenizer.json, else vocab.json + merges.txt, in dir.
    static std::unique_ptr<BpeTokenizer> loadFromDirectory(const std::string& dir);
    static std::unique_ptr<BpeTokenizer> loadFromFiles(const std::string& vocabJsonPath,
                                                       const std::string& mergesTxtPath);
    static std::unique_ptr<BpeTokenizer> loadFromTokenizerJson(const std::string& path);
    ~BpeTokenizer() override;

    // Tokens of a text without special tokens around it (but "<mask>" in the text becomes the
    // mask id). Offsets refer to `text`.
    Encoding encodeText(const std::string& text) const override;
    // <s> text </s>
    Encoding encode(const std::string& text) const override;
    // <s> first </s></s> second </s>; offsets of each token refer to its own text.
    Encoding encodePair(const std::string& first, const std::string& second) const override;
    Encoding assemblePair(const Encoding& first, const Encoding& second) const override;

    // Decodes ids back to UTF-8 text (byte-level), skipping special tokens when asked.
    std::string decode(const std::vector<int64_t>& ids, bool skipSpecialTokens = true) const override;
    // The vocabulary string of one id ("Ġworld"), and its decoded text (" world").
    std::string tokenString(int64_t id) const override;
    std::string tokenText(int64_t id) const override;

    int64_t vocabSize() const override;
    int64_t bosId() const;           // <s>
    int64_t eosId() const;           // </s>
    int64_t clsId() const override;  // <s>
    int64_t sepId() const override;  // </s>
    int64_t padId() const override;  // <pad>
    int64_t unkId() const override;  // <unk>
    int64_t maskId() const override; // <mask>
    std::string maskToken() const override;
    int specialTokensInPair() const override { return 4; }

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
