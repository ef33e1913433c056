#pragma once
// The tokenizer interface the engine uses for every model family: byte-level BPE (RoBERTa,
// bpe_tokenizer.h), WordPiece (BERT, wordpiece_tokenizer.h) and Unigram SentencePiece
// (XLM-RoBERTa, unigram_tokenizer.h). Implementations are const after
// loading and may be used from several threads. Errors: scalescope::Error naming the file and the
// problem.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace scalescope {

struct Encoding {
    std::vector<int64_t> ids;
    std::vector<std::pair<int, int>> offsets; // [start, end) in code points of the sequence's text
    std::vector<int> sequenceIds;             // -1 special token, 0 first text, 1 second text
    // Token type ids as the model's token_type embeddings take them: BERT 0 for the first text and
    // its specials, 1 for the second text and its closing [SEP]; RoBERTa 0 throughout.
    std::vector<int64_t> typeIds;
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Tokens of a text without special tokens around it; special tokens written in the text (the
    // mask token, ...) become their ids. Offsets refer to `text`.
    virtual Encoding encodeText(const std::string& text) const = 0;
    // [CLS] text [SEP] / <s> text </s>
    virtual Encoding encode(const std::string& text) const = 0;
    // [CLS] A [SEP] B [SEP] / <s> A </s></s> B </s>; offsets of each token refer to its own text.
    virtual Encoding encodePair(const std::string& first, const std::string& second) const = 0;
    // The pair sequence around two token-level encodings (encodeText's output, or a slice of one,
    // as question-answering windows take): the family's specials, sequence ids 0 and 1, its type
    // ids. encodePair(a, b) is assemblePair(encodeText(a), encodeText(b)).
    virtual Encoding assemblePair(const Encoding& first, const Encoding& second) const = 0;

    // Text of a sequence of ids as the family's decoder writes it.
    virtual std::string decode(const std::vector<int64_t>& ids, bool skipSpecialTokens = true) const = 0;
    // The vocabulary string of one id ("Ġworld", "##ing"), and its decoded text.
    virtual std::string tokenString(int64_t id) const = 0;
    virtual std::string tokenText(int64_t id) const = 0;

    virtual int64_t vocabSize() const = 0;
    virtual int64_t clsId() const = 0; // <s> / [CLS]
    virtual int64_t sepId() const = 0; // </s> / [SEP]
    virtual int64_t padId() const = 0;
    virtual int64_t unkId() const = 0;
    virtual int64_t maskId() const = 0;
    virtual std::string maskToken() const = 0; // "<mask>" / "[MASK]"

    // Special tokens a pair (RoBERTa 4, BERT 3) and a single text (2) add around the text tokens.
    virtual int specialTokensInPair() const = 0;
    virtual int specialTokensInSingle() const { return 2; }
};

// The tokenizer a model family uses (EncoderFamily::tokenizer).
enum class TokenizerKind { BytePairEncoding, WordPiece, Unigram };

// Loads the tokenizer of that kind from a model folder: its tokenizer.json, else vocab.json +
// merges.txt (BPE), vocab.txt with tokenizer_config.json when present (WordPiece), or
// sentencepiece.bpe.model (Unigram). Throws one
// sentence naming the folder when they are not there, or naming the file when it holds another kind.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string& dir, TokenizerKind kind);
// A folder of tokenizer files alone, its kind read from them: tokenizer.json (model type BPE,
// WordPiece or Unigram), else sentencepiece.bpe.model (Unigram), else vocab.txt (WordPiece), else
// vocab.json + merges.txt (byte-level BPE). Throws one
// sentence naming the folder when none of them is there.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string& dir);

} // namespace scalescope
