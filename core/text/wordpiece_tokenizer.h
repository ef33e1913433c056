#pragma once
// WordPiece tokenizer as BERT uses it, matching Hugging Face's BertTokenizerFast: loaded from
// vocab.txt (+ tokenizer_config.json: do_lower_case, strip_accents, tokenize_chinese_chars) or
// from a tokenizer.json whose model is WordPiece. The text goes through BERT's normalizer (control
// characters removed, whitespace made spaces, CJK characters set apart, accents stripped after NFD
// and lower-casing when asked), is split at whitespace and punctuation, and each word becomes the
// longest vocabulary pieces from the left ("##" marks a continuation), or [UNK] when some part of
// it matches nothing or it is longer than 100 characters. Special tokens written in the text
// ([MASK], [SEP], ...) are kept whole.
// Offsets are code points into the original text, as Python's str indexing counts them, also when
// the normalizer dropped or expanded characters; special tokens added around the text get (0, 0).
// Sequences: [CLS] A [SEP] and [CLS] A [SEP] B [SEP] (type ids 0 ... 0 1 ... 1).
// Errors: scalescope::Error naming the file and the problem. Threading: const after load.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace scalescope {

class WordPieceTokenizer : public Tokenizer {
public:
    // tokenizer.json when dir has one, else vocab.txt with tokenizer_config.json when present.
    static std::unique_ptr<WordPieceTokenizer> loadFromDirectory(const std::string& dir);
    // tokenizerConfigPath may be empty: then do_lower_case is true, as Hugging Face defaults it.
    static std::unique_ptr<WordPieceTokenizer> loadFromVocabTxt(const std::string& vocabTxtPath,
                                                                const std::string& tokenizerConfigPath);
    static std::unique_ptr<WordPieceTokenizer> loadFromTokenizerJson(const std::string& path);
    ~WordPieceTokenizer() override;

    Encoding encodeText(const std::string& text) const override;
    Encoding encode(const std::string& text) const override;
    Encoding encodePair(const std::string& first, const std::string& second) const override;
    Encoding assemblePair(const Encoding& first, const Encoding& second) const override;

    // Hugging Face's WordPiece decoder: pieces joined with spaces, "##" pieces glued to the one
    // before, and its clean-up of spaces before punctuation and contractions.
    std::string decode(const std::vector<int64_t>& ids, bool skipSpecialTokens = true) const override;
    std::string tokenString(int64_t id) const override;
    std::string tokenText(int64_t id) const override;

    int64_t vocabSize() const override;
    int64_t clsId() const override;
    int64_t sepId() const override;
    int64_t padId() const override;
    int64_t unkId() const override;
    int64_t maskId() const override;
    std::string maskToken() const override;
    int specialTokensInPair() const override { return 3; }

    // The normalizer settings in effect (for inspect and tests).
    bool lowercases() const;
    bool stripsAccents() const;

private:
    WordPieceTokenizer();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace scalescope
