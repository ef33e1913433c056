#include "text/unigram_tokenizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_values.h"
#include "common/text_files.h"
#include "text/normalized_text.h"
#include "text/precompiled_charsmap.h"
#include "text/sentencepiece_model.h"
#include "text/unigram_model.h"
#include "text/utf8.h"
#include "text/vocabulary.h"

namespace scalescope {

namespace {

constexpr std::size_t kMaxTextBytes = 10u * 1024u * 1024u;
const std::string kMetaspace = "\xE2\x96\x81"; // U+2581, SentencePiece's word boundary
const std::string kMaskToken = "<mask>";

struct NormalizerStep {
    enum class Kind { Precompiled, Strip, Replace };
    Kind kind = Kind::Strip;
    std::shared_ptr<const PrecompiledCharsmap> charsmap;
    bool left = false;
    bool right = false;
    // Replace: every occurrence of `literal`, or (when minRun > 0) every run of at least minRun
    // copies of runCharacter, becomes `content`.
    std::string literal;
    char32_t runCharacter = 0;
    std::size_t minRun = 0;
    std::string content;
};

enum class PrependScheme { Always, First, Never };

struct Metaspace {
    std::string replacement = kMetaspace;
    char32_t replacementCharacter = 0x2581;
    PrependScheme prepend = PrependScheme::Always;
    bool split = true;
};

struct AddedToken {
    std::string content;
    std::string matched; // content, or content normalized for a `normalized` token
    int64_t id = 0;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;
    bool special = false;
};

// One item of a TemplateProcessing template: special ids, or the tokens of sequence 0 or 1.
struct TemplateItem {
    int sequence = -1;
    std::vector<int64_t> ids;
    int64_t typeId = 0;
};

struct Span {
    std::size_t begin;
    std::size_t end;
    const AddedToken* token; // nullptr: text between added tokens
};

// Added tokens in `text`, leftmost first and the longest at one position (Aho-Corasick's
// LeftmostLongest), with lstrip/rstrip taking the whitespace beside them; the spans tile the text.
std::vector<Span> findAddedTokens(const std::string& text, const std::vector<const AddedToken*>& tokens)
{
    std::array<bool, 256> firstBytes{};
    for (const AddedToken* token : tokens)
        firstBytes[static_cast<unsigned char>(token->matched[0])] = true;
    std::vector<Span> spans;
    std::size_t covered = 0; // end of the last added token
    for (std::size_t pos = 0; pos < text.size();) {
        const AddedToken* found = nullptr;
        if (firstBytes[static_cast<unsigned char>(text[pos])])
            for (const AddedToken* token : tokens)
                if ((found == nullptr || token->matched.size() > found->matched.size()) &&
                    text.compare(pos, token->matched.size(), token->matched) == 0)
                    found = token;
        if (found == nullptr) {
            ++pos;
            continue;
        }
        std::size_t start = pos;
        std::size_t stop = pos + found->matched.size();
        pos = stop;
        if (found->lstrip) {
            std::size_t spaces = start;
            // Steps back over whole characters: a UTF-8 continuation byte is never a space.
            for (std::size_t back = start; back > covered;) {
                std::size_t charStart = back - 1;
                while (charStart > 0 && (static_cast<unsigned char>(text[charStart]) & 0xC0) == 0x80)
                    --charStart;
                char32_t cp = 0;
                decodeUtf8At(text, charStart, &cp);
                if (!isWhiteSpace(cp))
                    break;
                spaces = back = charStart;
            }
            start = std::max(spaces, covered);
        }
        while (found->rstrip && stop < text.size()) {
            char32_t cp = 0;
            const std::size_t length = decodeUtf8At(text, stop, &cp);
            if (!isWhiteSpace(cp))
                break;
            stop += length;
        }
        if (covered < start)
            spans.push_back({covered, start, nullptr});
        spans.push_back({start, stop, found});
        covered = stop;
    }
    if (covered < text.size())
        spans.push_back({covered, text.size(), nullptr});
    return spans;
}

std::vector<ByteRange> findReplaceMatches(const NormalizerStep& step, const std::string& text)
{
    std::vector<ByteRange> matches;
    if (step.minRun == 0) {
        if (step.literal.empty())
            return matches;
        for (std::size_t at = text.find(step.literal); at != std::string::npos;
             at = text.find(step.literal, at + step.literal.size()))
            matches.push_back({at, at + step.literal.size()});
        return matches;
    }
    std::size_t runBegin = 0;
    std::size_t runLength = 0;
    for (std::size_t pos = 0; pos <= text.size();) {
        char32_t cp = 0;
        const std::size_t length = pos < text.size() ? decodeUtf8At(text, pos, &cp) : 0;
        if (pos < text.size() && cp == step.runCharacter) {
            if (runLength++ == 0)
                runBegin = pos;
        } else {
            if (runLength >= step.minRun)
                matches.push_back({runBegin, pos});
            runLength = 0;
        }
        if (length == 0)
            break;
        pos += length;
    }
    return matches;
}

// UTF-8 of text with each byte that is not valid UTF-8 as U+FFFD, so that every step below works
// on characters; code point indices stay those of the project's UTF-8 reading (text/utf8.h).
std::string cleanUtf8(const std::string& text)
{
    if (isValidUtf8(text))
        return text;
    std::string clean;
    for (const CodePoint& cp : decodeCodePoints(text))
        appendUtf8(clean, cp.value);
    return clean;
}

// Hugging Face's byte-to-character offset conversion, including its edge: a range that starts at
// the end of the text is left in bytes.
std::pair<int, int> characterOffsets(const std::vector<int>& characterOfByte, ByteRange range)
{
    const std::size_t size = characterOfByte.size();
    if (range.first >= size)
        return {static_cast<int>(range.first), static_cast<int>(range.second)};
    const int start = characterOfByte[range.first];
    if (range.second < size)
        return {start, characterOfByte[range.second]};
    const int last = range.second >= 1 && range.second - 1 < size ? characterOfByte[range.second - 1] : start;
    return {start, last + 1};
}

const nlohmann::json* member(const nlohmann::json& object, const char* key)
{
    if (!object.is_object())
        return nullptr;
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string typeOf(const nlohmann::json& node)
{
    const nlohmann::json* type = member(node, "type");
    return type != nullptr && type->is_string() ? type->get<std::string>() : std::string();
}

bool boolMember(const nlohmann::json& node, const char* key, bool fallback, const std::string& where)
{
    const nlohmann::json* value = member(node, key);
    if (value == nullptr)
        return fallback;
    if (!value->is_boolean())
        throw Error(where + " has a \"" + key + "\" that is not true or false.");
    return value->get<bool>();
}

std::string stringMember(const nlohmann::json& node, const char* key, const std::string& where)
{
    const nlohmann::json* value = member(node, key);
    if (value == nullptr || !value->is_string())
        throw Error(where + " has no string \"" + key + "\".");
    return value->get<std::string>();
}

std::string base64Decode(const std::string& text, const std::string& where)
{
    const auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    if (text.size() % 4 != 0)
        throw Error(where + " has a precompiled_charsmap that cannot be parsed: it is not base64 (its length is not a multiple of 4).");
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        const int padding = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
        std::uint32_t group = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            const int v = k >= 4 - static_cast<std::size_t>(padding) ? 0 : value(text[i + k]);
            if (v < 0)
                throw Error(where + " has a precompiled_charsmap that cannot be parsed: it is not base64.");
            group = (group << 6) | static_cast<std::uint32_t>(v);
        }
        out += static_cast<char>((group >> 16) & 0xFF);
        if (padding < 2)
            out += static_cast<char>((group >> 8) & 0xFF);
        if (padding < 1)
            out += static_cast<char>(group & 0xFF);
    }
    return out;
}

// A Replace pattern: {"String": s}, or {"Regex": r} for the regexes SentencePiece converters
// write ("X{n,}", "X+", or a plain text without regex syntax).
void readReplacePattern(const nlohmann::json& pattern, NormalizerStep& step, const std::string& where)
{
    if (const nlohmann::json* literal = member(pattern, "String"); literal != nullptr && literal->is_string()) {
        step.literal = literal->get<std::string>();
        return;
    }
    const nlohmann::json* regex = member(pattern, "Regex");
    if (regex == nullptr || !regex->is_string())
        throw Error(where + " has a Replace normalizer without a \"String\" or \"Regex\" pattern.");
    const std::string text = regex->get<std::string>();
    const std::string meta = "\\^$.|?*+()[]{}";
    char32_t first = 0;
    const std::size_t firstLength = text.empty() ? 0 : utf8SequenceLength(text, 0, &first);
    const bool plainFirst = firstLength > 0 && meta.find(text[0]) == std::string::npos;
    const std::string rest = text.substr(firstLength);
    if (plainFirst && rest == "+") {
        step.runCharacter = first;
        step.minRun = 1;
        return;
    }
    if (plainFirst && rest.size() >= 4 && rest.front() == '{' && rest.compare(rest.size() - 2, 2, ",}") == 0) {
        const std::string digits = rest.substr(1, rest.size() - 3);
        if (!digits.empty() && digits.size() < 6 && digits.find_first_not_of("0123456789") == std::string::npos) {
            step.runCharacter = first;
            step.minRun = std::max<std::size_t>(1, std::stoul(digits));
            return;
        }
    }
    if (text.find_first_of(meta) == std::string::npos) {
        step.literal = text;
        return;
    }
    throw Error(where + " has a Replace normalizer with the regex \"" + abbreviatedText(text, 60) +
                "\", which ScaleScope does not support (only \"X{n,}\", \"X+\" and plain text).");
}

void readNormalizer(const nlohmann::json& node, std::vector<NormalizerStep>& steps, const std::string& where)
{
    const std::string type = typeOf(node);
    if (type == "Sequence") {
        const nlohmann::json* list = member(node, "normalizers");
        if (list == nullptr || !list->is_array())
            throw Error(where + " has a Sequence normalizer without a \"normalizers\" list.");
        for (const auto& item : *list)
            readNormalizer(item, steps, where);
        return;
    }
    NormalizerStep step;
    if (type == "Precompiled") {
        step.kind = NormalizerStep::Kind::Precompiled;
        const nlohmann::json* blob = member(node, "precompiled_charsmap");
        if (blob == nullptr || !blob->is_string())
            throw Error(where + " has a Precompiled normalizer without a base64 \"precompiled_charsmap\".");
        step.charsmap = std::make_shared<const PrecompiledCharsmap>(
            PrecompiledCharsmap::parse(base64Decode(blob->get<std::string>(), where), where));
    } else if (type == "Strip") {
        step.kind = NormalizerStep::Kind::Strip;
        step.left = boolMember(node, "strip_left", false, where);
        step.right = boolMember(node, "strip_right", false, where);
    } else if (type == "Replace") {
        step.kind = NormalizerStep::Kind::Replace;
        const nlohmann::json* pattern = member(node, "pattern");
        if (pattern == nullptr)
            throw Error(where + " has a Replace normalizer without a \"pattern\".");
        readReplacePattern(*pattern, step, where);
        step.content = stringMember(node, "content", where);
    } else {
        throw Error(where + " has a " + (type.empty() ? std::string("untyped") : "\"" + abbreviatedText(type, 40) + "\"") +
                    " normalizer; a Unigram tokenizer here supports Precompiled, Strip, Replace and Sequence.");
    }
    steps.push_back(std::move(step));
}

Metaspace readMetaspace(const nlohmann::json& node, const std::string& where)
{
    Metaspace metaspace;
    if (const nlohmann::json* replacement = member(node, "replacement")) {
        metaspace.replacement = replacement->is_string() ? replacement->get<std::string>() : std::string();
        char32_t cp = 0;
        if (metaspace.replacement.empty() ||
            utf8SequenceLength(metaspace.replacement, 0, &cp) != metaspace.replacement.size())
            throw Error(where + " has a Metaspace \"replacement\" that is not one character.");
        metaspace.replacementCharacter = cp;
    }
    // Files written before prepend_scheme existed say add_prefix_space.
    if (const nlohmann::json* scheme = member(node, "prepend_scheme")) {
        const std::string name = scheme->is_string() ? scheme->get<std::string>() : std::string();
        if (name == "always")
            metaspace.prepend = PrependScheme::Always;
        else if (name == "first")
            metaspace.prepend = PrependScheme::First;
        else if (name == "never")
            metaspace.prepend = PrependScheme::Never;
        else
            throw Error(where + " has a Metaspace prepend_scheme that is not \"always\", \"first\" or \"never\".");
    } else {
        metaspace.prepend = boolMember(node, "add_prefix_space", true, where) ? PrependScheme::Always : PrependScheme::Never;
    }
    metaspace.split = boolMember(node, "split", true, where);
    return metaspace;
}

std::vector<TemplateItem> readTemplate(const nlohmann::json& processor, const char* key, const std::string& where)
{
    const nlohmann::json* items = member(processor, key);
    if (items == nullptr || !items->is_array())
        throw Error(where + " has a TemplateProcessing post-processor without a \"" + key + "\" template.");
    const nlohmann::json* specials = member(processor, "special_tokens");
    std::vector<TemplateItem> out;
    for (const auto& item : *items) {
        TemplateItem entry;
        const nlohmann::json* special = member(item, "SpecialToken");
        const nlohmann::json* sequence = member(item, "Sequence");
        const nlohmann::json* body = special != nullptr ? special : sequence;
        if (body == nullptr)
            throw Error(where + " has a post-processor template item that is neither a SpecialToken nor a Sequence.");
        const std::string id = stringMember(*body, "id", where);
        const nlohmann::json* typeId = member(*body, "type_id");
        entry.typeId = typeId != nullptr && typeId->is_number_unsigned() ? typeId->get<int64_t>() : 0;
        if (sequence != nullptr) {
            if (id != "A" && id != "B")
                throw Error(where + " has a post-processor template sequence that is not A or B.");
            entry.sequence = id == "A" ? 0 : 1;
        } else {
            const nlohmann::json* definition = specials != nullptr ? member(*specials, id.c_str()) : nullptr;
            const nlohmann::json* ids = definition != nullptr ? member(*definition, "ids") : nullptr;
            if (ids == nullptr || !ids->is_array())
                throw Error(where + " has a post-processor template token \"" + abbreviatedText(id, 40) +
                            "\" without ids in special_tokens.");
            for (const auto& value : *ids)
                entry.ids.push_back(requireTokenId(value, id, where));
        }
        out.push_back(std::move(entry));
    }
    return out;
}

std::vector<TemplateItem> xlmRobertaTemplate(bool pair, int64_t bos, int64_t eos)
{
    std::vector<TemplateItem> items{{-1, {bos}, 0}, {0, {}, 0}, {-1, {eos}, 0}};
    if (pair) {
        items.push_back({-1, {eos}, 0});
        items.push_back({1, {}, 0});
        items.push_back({-1, {eos}, 0});
    }
    return items;
}

} // namespace

struct UnigramTokenizer::Impl {
    std::unique_ptr<UnigramModel> model;
    std::vector<NormalizerStep> normalizer;
    std::optional<Metaspace> metaspace;
    std::vector<AddedToken> addedTokens;
    std::vector<const AddedToken*> rawMatched;        // matched in the original text
    std::vector<const AddedToken*> normalizedMatched; // matched in the normalized text
    std::vector<TemplateItem> single;
    std::vector<TemplateItem> pair;
    int64_t bos = 0, eos = 0, pad = 0, unk = 0, mask = 0;
    std::string path;

    void normalize(NormalizedText& text) const;
    void finishAddedTokens();
    void findSpecials();
    int64_t tokenId(const std::string& token) const;
    const AddedToken* addedToken(int64_t id) const;
    void encodePiece(const NormalizedText& piece, std::vector<std::pair<int64_t, ByteRange>>& out) const;
    void encodeNormalized(const std::string& clean, std::size_t begin, std::size_t end,
                          std::vector<std::pair<int64_t, ByteRange>>& out) const;
    Encoding assemble(const std::vector<TemplateItem>& items, const Encoding* parts[2]) const;

    void readModel(const nlohmann::json& model);
    void readAddedTokens(const nlohmann::json& root);
    void readPostProcessor(const nlohmann::json& root);
    void setSentencePiece(const SentencePieceModel& proto);
};

void UnigramTokenizer::Impl::normalize(NormalizedText& text) const
{
    for (const NormalizerStep& step : normalizer) {
        if (step.kind == NormalizerStep::Kind::Precompiled)
            step.charsmap->apply(text);
        else if (step.kind == NormalizerStep::Kind::Strip)
            text.strip(step.left, step.right);
        else
            text.replaceMatches(findReplaceMatches(step, text.text), step.content);
    }
}

void UnigramTokenizer::Impl::finishAddedTokens()
{
    rawMatched.clear();
    normalizedMatched.clear();
    for (AddedToken& token : addedTokens) {
        token.matched = token.content;
        if (token.normalized && !normalizer.empty()) {
            NormalizedText text = NormalizedText::fromOriginal(token.content, 0, token.content.size());
            normalize(text);
            token.matched = text.text;
        }
        if (token.matched.empty())
            continue; // Hugging Face's matcher never finds an empty token
        (token.normalized ? normalizedMatched : rawMatched).push_back(&token);
    }
}

int64_t UnigramTokenizer::Impl::tokenId(const std::string& token) const
{
    for (const AddedToken& added : addedTokens)
        if (added.content == token)
            return added.id;
    int64_t id = -1;
    return model->find(token, &id) != nullptr ? id : -1;
}

const AddedToken* UnigramTokenizer::Impl::addedToken(int64_t id) const
{
    for (const AddedToken& added : addedTokens)
        if (added.id == id)
            return &added;
    return nullptr;
}

void UnigramTokenizer::Impl::findSpecials()
{
    const auto special = [&](const std::string& token) {
        const int64_t id = tokenId(token);
        if (id < 0)
            throw Error(path + " lacks the special token " + token + ", which XLM-RoBERTa's tokenizer needs.");
        return id;
    };
    bos = special("<s>");
    pad = special("<pad>");
    eos = special("</s>");
    unk = special("<unk>");
    mask = special(kMaskToken);
}

void UnigramTokenizer::Impl::readModel(const nlohmann::json& modelJson)
{
    const nlohmann::json* vocab = member(modelJson, "vocab");
    if (vocab == nullptr || !vocab->is_array() || vocab->empty())
        throw Error(path + " has no model.vocab list of [piece, score] pairs.");
    if (vocab->size() > kMaxVocabEntries)
        throw Error(path + " has " + std::to_string(vocab->size()) + " vocabulary entries, more than the limit of " +
                    std::to_string(kMaxVocabEntries) + ".");
    std::vector<std::pair<std::string, double>> pieces;
    pieces.reserve(vocab->size());
    for (const auto& entry : *vocab) {
        if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number() ||
            !std::isfinite(entry[1].get<double>()))
            throw Error(path + " model.vocab entry " + std::to_string(pieces.size()) + " is not a [piece, score] pair.");
        pieces.emplace_back(entry[0].get<std::string>(), entry[1].get<double>());
    }
    const nlohmann::json* unkId = member(modelJson, "unk_id");
    if (unkId == nullptr)
        throw Error(path + " has no model.unk_id: its vocabulary has no <unk> for the characters no piece covers.");
    if (!unkId->is_number_integer() || unkId->get<int64_t>() < 0 || unkId->get<int64_t>() >= static_cast<int64_t>(pieces.size()))
        throw Error(path + " has a model.unk_id that is not the id of a vocabulary entry.");
    if (boolMember(modelJson, "byte_fallback", false, path))
        throw Error(path + " uses byte_fallback, which XLM-RoBERTa's tokenizer does not and ScaleScope does not support.");
    model = std::make_unique<UnigramModel>(std::move(pieces), unkId->get<int64_t>());
}

void UnigramTokenizer::Impl::readAddedTokens(const nlohmann::json& root)
{
    const nlohmann::json* added = member(root, "added_tokens");
    if (added == nullptr)
        return;
    if (!added->is_array())
        throw Error(path + " has an added_tokens entry that is not a list.");
    for (const auto& entry : *added) {
        const nlohmann::json* content = member(entry, "content");
        const nlohmann::json* id = member(entry, "id");
        if (content == nullptr || !content->is_string() || id == nullptr)
            throw Error(path + " has an added token without a string \"content\" and an \"id\".");
        AddedToken token;
        token.content = content->get<std::string>();
        token.id = requireTokenId(*id, token.content, path);
        token.lstrip = boolMember(entry, "lstrip", false, path);
        token.rstrip = boolMember(entry, "rstrip", false, path);
        token.normalized = boolMember(entry, "normalized", false, path);
        token.special = boolMember(entry, "special", false, path);
        if (boolMember(entry, "single_word", false, path))
            throw Error(path + " has the single_word added token \"" + abbreviatedText(token.content, 40) +
                        "\", which ScaleScope does not support.");
        addedTokens.push_back(std::move(token));
    }
}

void UnigramTokenizer::Impl::readPostProcessor(const nlohmann::json& root)
{
    const nlohmann::json* processor = member(root, "post_processor");
    if (processor == nullptr) {
        // Without a post-processor Hugging Face adds nothing around the texts.
        single = {{0, {}, 0}};
        pair = {{0, {}, 0}, {1, {}, 0}};
        return;
    }
    if (typeOf(*processor) != "TemplateProcessing")
        throw Error(path + " has a \"" + abbreviatedText(typeOf(*processor), 40) +
                    "\" post-processor; a Unigram tokenizer here supports TemplateProcessing.");
    single = readTemplate(*processor, "single", path);
    pair = readTemplate(*processor, "pair", path);
}

void UnigramTokenizer::Impl::setSentencePiece(const SentencePieceModel& proto)
{
    if (proto.modelType != 1)
        throw Error(path + " is a SentencePiece model of type " + std::to_string(proto.modelType) +
                    ", not the Unigram model (type 1) XLM-RoBERTa uses.");
    if (proto.unkId != 0 || proto.pieces.size() < 3 || proto.pieces[0].type != SentencePieceModel::Unknown)
        throw Error(path + " has no <unk> as piece 0, where XLM-RoBERTa's fairseq ids expect SentencePiece's unknown piece.");
    if (proto.byteFallback)
        throw Error(path + " uses byte_fallback, which XLM-RoBERTa's tokenizer does not and ScaleScope does not support.");
    // fairseq's dictionary: <s> <pad> </s> <unk>, then SentencePiece's pieces after its own first three.
    std::vector<std::pair<std::string, double>> vocab{{"<s>", 0.0}, {"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0}};
    for (std::size_t i = 3; i < proto.pieces.size(); ++i)
        vocab.emplace_back(proto.pieces[i].piece, static_cast<double>(proto.pieces[i].score));
    vocab.emplace_back(kMaskToken, 0.0);
    const auto maskId = static_cast<int64_t>(vocab.size() - 1);
    model = std::make_unique<UnigramModel>(std::move(vocab), 3);

    if (!proto.precompiledCharsmap.empty()) {
        NormalizerStep step;
        step.kind = NormalizerStep::Kind::Precompiled;
        step.charsmap = std::make_shared<const PrecompiledCharsmap>(PrecompiledCharsmap::parse(proto.precompiledCharsmap, path));
        normalizer.push_back(std::move(step));
    }
    if (proto.removeExtraWhitespaces) {
        NormalizerStep strip;
        strip.right = true;
        normalizer.push_back(strip);
        NormalizerStep runs;
        runs.kind = NormalizerStep::Kind::Replace;
        runs.runCharacter = U' ';
        runs.minRun = 2;
        runs.content = kMetaspace;
        normalizer.push_back(runs);
    }
    metaspace = Metaspace{};
    metaspace->prepend = proto.addDummyPrefix ? PrependScheme::Always : PrependScheme::Never;
    const auto special = [](const std::string& content, int64_t id, bool lstrip) {
        AddedToken token;
        token.content = content;
        token.id = id;
        token.lstrip = lstrip;
        token.special = true;
        return token;
    };
    addedTokens = {special("<s>", 0, false), special("<pad>", 1, false), special("</s>", 2, false),
                   special("<unk>", 3, false), special(kMaskToken, maskId, true)};
    single = xlmRobertaTemplate(false, 0, 2);
    pair = xlmRobertaTemplate(true, 0, 2);
}

void UnigramTokenizer::Impl::encodePiece(const NormalizedText& piece, std::vector<std::pair<int64_t, ByteRange>>& out) const
{
    std::vector<NormalizedText> words;
    if (!metaspace) {
        words.push_back(piece);
    } else {
        NormalizedText text = piece;
        std::vector<ByteRange> spaces;
        for (std::size_t pos = text.text.find(' '); pos != std::string::npos; pos = text.text.find(' ', pos + 1))
            spaces.push_back({pos, pos + 1});
        text.replaceMatches(spaces, metaspace->replacement);
        const bool starts = text.text.compare(0, metaspace->replacement.size(), metaspace->replacement) == 0;
        if (!starts && (metaspace->prepend == PrependScheme::Always ||
                        (metaspace->prepend == PrependScheme::First && text.originalBegin == 0)))
            text.prepend(metaspace->replacement);
        if (metaspace->split)
            words = text.splitBefore(metaspace->replacementCharacter);
        else if (!text.text.empty())
            words.push_back(std::move(text));
    }
    for (const NormalizedText& word : words)
        for (const UnigramModel::Token& token : model->tokenize(word.text))
            out.emplace_back(token.id, word.originalRange(token.begin, token.end));
}

void UnigramTokenizer::Impl::encodeNormalized(const std::string& clean, std::size_t begin, std::size_t end,
                                              std::vector<std::pair<int64_t, ByteRange>>& out) const
{
    NormalizedText text = NormalizedText::fromOriginal(clean, begin, end);
    normalize(text);
    for (const Span& span : findAddedTokens(text.text, normalizedMatched)) {
        if (span.token != nullptr)
            out.emplace_back(span.token->id, text.originalRange(span.begin, span.end));
        else
            encodePiece(text.slice(span.begin, span.end), out);
    }
}

Encoding UnigramTokenizer::Impl::assemble(const std::vector<TemplateItem>& items, const Encoding* parts[2]) const
{
    Encoding out;
    for (const TemplateItem& item : items) {
        if (item.sequence < 0) {
            for (const int64_t id : item.ids) {
                out.ids.push_back(id);
                out.offsets.emplace_back(0, 0);
                out.sequenceIds.push_back(-1);
                out.typeIds.push_back(item.typeId);
            }
            continue;
        }
        const Encoding* part = parts[item.sequence];
        if (part == nullptr)
            continue;
        out.ids.insert(out.ids.end(), part->ids.begin(), part->ids.end());
        out.offsets.insert(out.offsets.end(), part->offsets.begin(), part->offsets.end());
        out.sequenceIds.insert(out.sequenceIds.end(), part->ids.size(), item.sequence);
        out.typeIds.insert(out.typeIds.end(), part->ids.size(), item.typeId);
    }
    return out;
}

UnigramTokenizer::UnigramTokenizer() : impl_(std::make_unique<Impl>()) {}
UnigramTokenizer::~UnigramTokenizer() = default;

std::unique_ptr<UnigramTokenizer> UnigramTokenizer::loadFromDirectory(const std::string& dir)
{
    const std::string tokenizerJson = joinPath(dir, "tokenizer.json");
    if (fileExists(tokenizerJson))
        return loadFromTokenizerJson(tokenizerJson);
    const std::string model = joinPath(dir, "sentencepiece.bpe.model");
    if (fileExists(model))
        return loadFromSentencePieceModel(model);
    throw Error("No tokenizer in " + dir + ": expected tokenizer.json or sentencepiece.bpe.model (XLM-RoBERTa).");
}

std::unique_ptr<UnigramTokenizer> UnigramTokenizer::loadFromTokenizerJson(const std::string& path)
{
    const nlohmann::json root = readJsonFile(path);
    const nlohmann::json& model = tokenizerJsonModel(root, path);
    if (typeOf(model) != "Unigram")
        throw Error(path + " holds a " + quotedModelType(model.contains("type") ? model["type"] : nlohmann::json())
                    + " tokenizer model, not the Unigram model that XLM-RoBERTa uses.");
    std::unique_ptr<UnigramTokenizer> tokenizer(new UnigramTokenizer());
    Impl& impl = *tokenizer->impl_;
    impl.path = path;
    impl.readModel(model);
    if (const nlohmann::json* normalizer = member(root, "normalizer"))
        readNormalizer(*normalizer, impl.normalizer, path);
    if (const nlohmann::json* preTokenizer = member(root, "pre_tokenizer")) {
        const nlohmann::json* metaspace = preTokenizer;
        if (typeOf(*preTokenizer) == "Sequence") {
            const nlohmann::json* list = member(*preTokenizer, "pretokenizers");
            metaspace = list != nullptr && list->is_array() && list->size() == 1 ? &(*list)[0] : nullptr;
        }
        if (metaspace == nullptr || typeOf(*metaspace) != "Metaspace")
            throw Error(path + " has a pre_tokenizer other than Metaspace, which a Unigram tokenizer here needs.");
        impl.metaspace = readMetaspace(*metaspace, path);
    }
    impl.readAddedTokens(root);
    impl.readPostProcessor(root);
    impl.finishAddedTokens();
    impl.findSpecials();
    return tokenizer;
}

std::unique_ptr<UnigramTokenizer> UnigramTokenizer::loadFromSentencePieceModel(const std::string& path)
{
    const SentencePieceModel proto = parseSentencePieceModel(readFileToString(path), path);
    std::unique_ptr<UnigramTokenizer> tokenizer(new UnigramTokenizer());
    Impl& impl = *tokenizer->impl_;
    impl.path = path;
    impl.setSentencePiece(proto);
    impl.finishAddedTokens();
    impl.findSpecials();
    return tokenizer;
}

Encoding UnigramTokenizer::encodeText(const std::string& text) const
{
    if (text.size() > kMaxTextBytes)
        throw Error("The text to tokenize is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                    std::to_string(kMaxTextBytes) + " bytes.");
    const std::string clean = cleanUtf8(text);
    std::vector<std::pair<int64_t, ByteRange>> tokens;
    for (const Span& span : findAddedTokens(clean, impl_->rawMatched)) {
        if (span.token != nullptr)
            tokens.emplace_back(span.token->id, ByteRange{span.begin, span.end});
        else
            impl_->encodeNormalized(clean, span.begin, span.end, tokens);
    }
    std::vector<int> characterOfByte(clean.size());
    int character = 0;
    for (std::size_t pos = 0; pos < clean.size(); ++character) {
        char32_t cp = 0;
        const std::size_t length = decodeUtf8At(clean, pos, &cp);
        std::fill_n(characterOfByte.begin() + static_cast<std::ptrdiff_t>(pos), length, character);
        pos += length;
    }
    Encoding out;
    for (const auto& [id, range] : tokens) {
        out.ids.push_back(id);
        out.offsets.push_back(characterOffsets(characterOfByte, range));
    }
    out.sequenceIds.assign(out.ids.size(), 0);
    out.typeIds.assign(out.ids.size(), 0);
    return out;
}

Encoding UnigramTokenizer::encode(const std::string& text) const
{
    const Encoding body = encodeText(text);
    const Encoding* parts[2] = {&body, nullptr};
    return impl_->assemble(impl_->single, parts);
}

Encoding UnigramTokenizer::encodePair(const std::string& first, const std::string& second) const
{
    return assemblePair(encodeText(first), encodeText(second));
}

Encoding UnigramTokenizer::assemblePair(const Encoding& first, const Encoding& second) const
{
    const Encoding* parts[2] = {&first, &second};
    return impl_->assemble(impl_->pair, parts);
}

std::string UnigramTokenizer::decode(const std::vector<int64_t>& ids, bool skipSpecialTokens) const
{
    std::string out;
    bool first = true;
    const std::string& replacement = impl_->metaspace ? impl_->metaspace->replacement : kMetaspace;
    const bool dropPrefix = impl_->metaspace && impl_->metaspace->prepend != PrependScheme::Never;
    for (const int64_t id : ids) {
        const AddedToken* added = impl_->addedToken(id);
        if (added != nullptr && added->special && skipSpecialTokens)
            continue;
        std::string token = tokenString(id);
        for (std::size_t at = token.find(replacement); at != std::string::npos; at = token.find(replacement, at)) {
            // The first token's replacement characters are the prefix Metaspace added: dropped.
            token.replace(at, replacement.size(), first && dropPrefix ? "" : " ");
            at += first && dropPrefix ? 0 : 1;
        }
        out += token;
        first = false;
    }
    return out;
}

std::string UnigramTokenizer::tokenString(int64_t id) const
{
    if (const AddedToken* added = impl_->addedToken(id))
        return added->content;
    if (id < 0 || id >= impl_->model->size())
        throw Error("Token id " + std::to_string(id) + " is not in the tokenizer's vocabulary.");
    return impl_->model->piece(id);
}

std::string UnigramTokenizer::tokenText(int64_t id) const
{
    std::string token = tokenString(id);
    const std::string& replacement = impl_->metaspace ? impl_->metaspace->replacement : kMetaspace;
    for (std::size_t at = token.find(replacement); at != std::string::npos; at = token.find(replacement, at + 1))
        token.replace(at, replacement.size(), " ");
    return token;
}

int64_t UnigramTokenizer::vocabSize() const
{
    int64_t size = impl_->model->size();
    for (const AddedToken& added : impl_->addedTokens)
        size = std::max(size, added.id + 1);
    return size;
}

int64_t UnigramTokenizer::clsId() const { return impl_->bos; }
int64_t UnigramTokenizer::sepId() const { return impl_->eos; }
int64_t UnigramTokenizer::padId() const { return impl_->pad; }
int64_t UnigramTokenizer::unkId() const { return impl_->unk; }
int64_t UnigramTokenizer::maskId() const { return impl_->mask; }
std::string UnigramTokenizer::maskToken() const { return kMaskToken; }

int UnigramTokenizer::specialTokensInPair() const
{
    int count = 0;
    for (const TemplateItem& item : impl_->pair)
        count += static_cast<int>(item.ids.size());
    return count;
}

int UnigramTokenizer::specialTokensInSingle() const
{
    int count = 0;
    for (const TemplateItem& item : impl_->single)
        count += static_cast<int>(item.ids.size());
    return count;
}

} // namespace scalescope
