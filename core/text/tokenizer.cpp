#include "text/tokenizer.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_values.h"
#include "common/text_files.h"
#include "text/bpe_tokenizer.h"
#include "text/unigram_tokenizer.h"
#include "text/vocabulary.h"
#include "text/wordpiece_tokenizer.h"

namespace scalescope {

namespace {

std::unique_ptr<Tokenizer> loadTokenizerFiles(const std::string& dir)
{
    const std::string tokenizerJson = joinPath(dir, "tokenizer.json");
    if (fileExists(tokenizerJson)) {
        // The model type decides the loader; each loader then reports its own problems.
        const nlohmann::json root = readJsonFile(tokenizerJson);
        const nlohmann::json* type = nullptr;
        if (root.is_object() && root.contains("model") && root["model"].is_object() && root["model"].contains("type"))
            type = &root["model"]["type"];
        if (type != nullptr && type->is_string() && type->get<std::string>() == "WordPiece")
            return WordPieceTokenizer::loadFromTokenizerJson(tokenizerJson);
        if (type != nullptr && type->is_string() && type->get<std::string>() == "Unigram")
            return UnigramTokenizer::loadFromTokenizerJson(tokenizerJson);
        if (type != nullptr && !(type->is_string() && type->get<std::string>() == "BPE"))
            throw Error(tokenizerJson + " holds a " + quotedModelType(*type)
                + " tokenizer model; only BPE (RoBERTa), WordPiece (BERT) and Unigram (XLM-RoBERTa) are supported.");
        return BpeTokenizer::loadFromTokenizerJson(tokenizerJson);
    }
    const std::string sentencePiece = joinPath(dir, "sentencepiece.bpe.model");
    if (fileExists(sentencePiece))
        return UnigramTokenizer::loadFromSentencePieceModel(sentencePiece);
    if (fileExists(joinPath(dir, "vocab.txt")))
        return WordPieceTokenizer::loadFromDirectory(dir);
    if (fileExists(joinPath(dir, "vocab.json")) && fileExists(joinPath(dir, "merges.txt")))
        return BpeTokenizer::loadFromDirectory(dir);
    throw Error("No tokenizer in " + dir + ": expected tokenizer.json, sentencepiece.bpe.model (XLM-RoBERTa), "
                "vocab.txt (BERT) or vocab.json and merges.txt (RoBERTa).");
}

} // namespace

std::unique_ptr<Tokenizer> loadTokenizer(const std::string& dir, TokenizerKind kind)
{
    return readingUserFile("the tokenizer in " + dir, [&]() -> std::unique_ptr<Tokenizer> {
        if (kind == TokenizerKind::WordPiece)
            return WordPieceTokenizer::loadFromDirectory(dir);
        if (kind == TokenizerKind::Unigram)
            return UnigramTokenizer::loadFromDirectory(dir);
        return BpeTokenizer::loadFromDirectory(dir);
    });
}

std::unique_ptr<Tokenizer> loadTokenizer(const std::string& dir)
{
    return readingUserFile("the tokenizer in " + dir, [&] { return loadTokenizerFiles(dir); });
}

} // namespace scalescope
