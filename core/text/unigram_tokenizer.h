#pragma once
// The Unigram SentencePiece tokenizer of XLM-RoBERTa as Hugging Face's fast tokenizer runs it,
// loaded from a tokenizer.json (model type "Unigram") or from sentencepiece.bpe.model alone (a
// SentencePiece ModelProto, read as the tokenizer.json that today's transformers converter writes
// from it: fairseq ids <s> 0, <pad> 1, </s> 2, <unk> 3, piece i >= 3 at i + 1, <mask> last;
// normalizer Precompiled + Strip(right) + Replace(" {2,}" -> "▁"); Metaspace with a prefix "▁";
// the five specials matched in the text first, <mask> taking the whitespace before it). A .model
// whose add_dummy_prefix is false gets no prefix, and one whose remove_extra_whitespaces is false
// no Strip and Replace. When a folder holds both files, tokenizer.json wins, as in transformers.
//
// The pipeline and its offsets are Hugging Face's step for step: special tokens are cut out of the
// original text, each remaining part is normalized (Precompiled: text/precompiled_charsmap.h;
// Strip; Replace), then pre-tokenized (Metaspace: spaces become the replacement character, which
// is put in front unless already there, and each one starts a piece), then each piece goes through
// the Unigram model (text/unigram_model.h). Offsets are code points of the original text, mapped
// back through every normalization step (text/normalized_text.h). The post-processor is the
// tokenizer.json's TemplateProcessing (<s> A </s> and <s> A </s></s> B </s> for XLM-R).
// Errors: scalescope::Error naming the file and the problem. Threading: const after loading.
#include <memory>
#include <string>

#include "text/tokenizer.h"

namespace scalescope {

class UnigramTokenizer : public Tokenizer {
public:
    // tokenizer.json when dir has it, else sentencepiece.bpe.model.
    static std::unique_ptr<UnigramTokenizer> loadFromDirectory(const std::string& dir);
    static std::unique_ptr<UnigramTokenizer> loadFromTokenizerJson(const std::string& path);
    static std::unique_ptr<UnigramTokenizer> loadFromSentencePieceModel(const std::string& path);
    ~UnigramTokenizer() override;

    Encoding encodeText(const std::string& text) const override;
    Encoding encode(const std::string& text) const override;
    Encoding encodePair(const std::string& first, const std::string& second) const override;
    Encoding assemblePair(const Encoding& first, const Encoding& second) const override;

    // Metaspace decoding: "▁" becomes a space, except in the first token (the prefix it added).
    std::string decode(const std::vector<int64_t>& ids, bool skipSpecialTokens = true) const override;
    std::string tokenString(int64_t id) const override;
    // The token with each "▁" written as a space (" world").
    std::string tokenText(int64_t id) const override;

    int64_t vocabSize() const override;
    int64_t clsId() const override;
    int64_t sepId() const override;
    int64_t padId() const override;
    int64_t unkId() const override;
    int64_t maskId() const override;
    std::string maskToken() const override;
    int specialTokensInPair() const override;
    int specialTokensInSingle() const override;

private:
    UnigramTokenizer();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace scalescope
