#include "text/wordpiece_tokenizer.h"

#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_values.h"
#include "common/text_files.h"
#include "text/code_point_ranges.h"
#include "text/generated/wordpiece_unicode_tables.h"
#include "text/utf8.h"
#include "text/vocabulary.h"

namespace scalescope {

namespace {

namespace tables = wordpiece_tables;

constexpr std::uint64_t kMaxVocabTxtBytes = 256ull << 20;
constexpr std::size_t kMaxTextBytes = 10u * 1024u * 1024u;
constexpr int64_t kMaxInputCharsLimit = 1'000'000;


// ---- character data ------------------------------------------------------------------------------

std::uint8_t tableFlags(char32_t cp)
{
    return rangeValue(std::begin(tables::kFlagRanges), std::end(tables::kFlagRanges), cp, &tables::FlagRange::flags);
}

// ASCII dominates real text; a direct table spares the binary search for it.
const std::array<std::uint8_t, 128>& asciiFlags()
{
    static const std::array<std::uint8_t, 128> flags = [] {
        std::array<std::uint8_t, 128> out{};
        for (char32_t cp = 0; cp < 128; ++cp)
            out[cp] = tableFlags(cp);
        return out;
    }();
    return flags;
}

std::uint8_t charFlags(char32_t cp)
{
    return cp < 128 ? asciiFlags()[cp] : tableFlags(cp);
}

// The code points a table maps cp to, or nullptr (with *length 0) when it maps it to itself.
const char32_t* mappedCodePoints(const tables::Mapping* begin, const tables::Mapping* end, const char32_t* pool,
                                 char32_t cp, std::size_t* length)
{
    const auto* it = std::lower_bound(begin, end, cp, [](const tables::Mapping& mapping, char32_t value) {
        return mapping.codePoint < value;
    });
    if (it == end || it->codePoint != cp) {
        *length = 0;
        return nullptr;
    }
    *length = it->length;
    return pool + it->offset;
}

int combiningClass(char32_t cp)
{
    if (cp < 0x300)
        return 0;
    return rangeValue(std::begin(tables::kCombiningRanges), std::end(tables::kCombiningRanges), cp,
        &tables::CombiningRange::combiningClass);
}

// ---- normalization -------------------------------------------------------------------------------

// One character of the normalized text and the code point of the original text it came from.
struct NormalizedChar {
    char32_t value;
    int origin;
};

constexpr char32_t kHangulFirst = 0xAC00, kHangulLast = 0xD7A3;

void appendDecomposed(std::vector<NormalizedChar>& out, NormalizedChar c)
{
    if (c.value >= kHangulFirst && c.value <= kHangulLast) {
        // Unicode's arithmetic decomposition of a syllable into leading, vowel and trailing jamo.
        const char32_t index = c.value - kHangulFirst;
        out.push_back({0x1100 + index / 588, c.origin});
        out.push_back({0x1161 + (index % 588) / 28, c.origin});
        if (index % 28 != 0)
            out.push_back({0x11A7 + index % 28, c.origin});
        return;
    }
    std::size_t length = 0;
    const char32_t* mapped = mappedCodePoints(std::begin(tables::kDecompositions), std::end(tables::kDecompositions),
                                              tables::kDecompositionPool, c.value, &length);
    if (mapped == nullptr) {
        out.push_back(c);
        return;
    }
    for (std::size_t i = 0; i < length; ++i)
        out.push_back({mapped[i], c.origin});
}

// NFD orders each run of combining marks by combining class (stably), across the original
// characters' boundaries. Only the characters move: Hugging Face keeps the alignments where they
// were, so each position keeps its origin.
void reorderCombiningMarks(std::vector<NormalizedChar>& chars)
{
    std::vector<char32_t> run;
    std::size_t i = 0;
    while (i < chars.size()) {
        if (combiningClass(chars[i].value) == 0) {
            ++i;
            continue;
        }
        std::size_t j = i + 1;
        while (j < chars.size() && combiningClass(chars[j].value) != 0)
            ++j;
        if (j - i > 1) {
            run.clear();
            for (std::size_t k = i; k < j; ++k)
                run.push_back(chars[k].value);
            std::stable_sort(run.begin(), run.end(),
                             [](char32_t a, char32_t b) { return combiningClass(a) < combiningClass(b); });
            for (std::size_t k = i; k < j; ++k)
                chars[k].value = run[k - i];
        }
        i = j;
    }
}

struct NormalizerOptions {
    bool cleanText = true;
    bool handleChineseChars = true;
    bool stripAccents = true;
    bool lowercase = true;
};

// A special token matched in the raw text (Hugging Face's added tokens with normalized: false).
struct LiteralToken {
    std::string content;
    int32_t id;
    bool lstrip;
    bool rstrip;
};

bool optionalBool(const nlohmann::json& object, const char* key, bool fallback, const std::string& path)
{
    const auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return fallback;
    if (!it->is_boolean())
        throw Error(path + " sets " + key + " to " + quotedJsonValue(*it) + ", not to true or false.");
    return it->get<bool>();
}

// A token name in tokenizer_config.json: a string, or an AddedToken object with "content".
std::string tokenName(const nlohmann::json& object, const char* key, const std::string& fallback,
                      const std::string& path)
{
    const auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return fallback;
    if (it->is_string() && !it->get<std::string>().empty())
        return it->get<std::string>();
    if (it->is_object()) {
        const auto content = it->find("content");
        if (content != it->end() && content->is_string() && !content->get<std::string>().empty())
            return content->get<std::string>();
    }
    throw Error(path + " sets " + key + " to " + quotedJsonValue(*it) + ", not to a token string.");
}

const std::string kCleanupPairs[][2] = {
    {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
    {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
};

void replaceAll(std::string& text, const std::string& from, const std::string& to)
{
    std::size_t pos = 0;
    while ((pos = text.find(from, pos)) != std::string::npos) {
        text.replace(pos, from.size(), to);
        pos += to.size();
    }
}

} // namespace

// ---- WordPieceTokenizer --------------------------------------------------------------------------

struct WordPieceTokenizer::Impl {
    // An added token that repeats a vocabulary string keeps the vocabulary's id for lookups.
    Vocabulary vocabulary{Vocabulary::Rebinding::FirstIdWins};
    std::unordered_set<int64_t> specialIds;
    std::vector<LiteralToken> literals;
    NormalizerOptions normalizer;
    std::string prefix = "##";
    int maxInputChars = 100;
    int maxPieceChars = 0; // longest vocabulary piece, in code points, bounds the search
    int64_t cls = 0, sep = 0, pad = 0, unk = 0, mask = 0;
    std::string maskName = "[MASK]";

    void addLiteral(const std::string& token, int32_t id, bool lstrip, bool rstrip);
    int64_t requireToken(const std::string& token, const std::string& path) const;
    void finish();

    void normalize(const std::vector<CodePoint>& cps, std::size_t begin, std::size_t end,
                   std::vector<NormalizedChar>& out) const;
    void encodeWord(const std::vector<NormalizedChar>& chars, std::size_t begin, std::size_t end, int sequenceId,
                    Encoding& out) const;
    void encodeSegment(const std::vector<CodePoint>& cps, std::size_t begin, std::size_t end, int sequenceId,
                       Encoding& out) const;
    Encoding encodeSequence(const std::string& text, int sequenceId) const;

    // Parts of a tokenizer.json, read in loadFromTokenizerJson's order.
    std::string readWordPieceModel(const nlohmann::json& model, const std::string& path); // returns unk
    void readBertNormalizer(const nlohmann::json& root, const std::string& path);
    void readAddedTokens(const nlohmann::json& root, const std::string& path);
};

void WordPieceTokenizer::Impl::addLiteral(const std::string& token, int32_t id, bool lstrip, bool rstrip)
{
    for (LiteralToken& literal : literals)
        if (literal.content == token) {
            literal = {token, id, lstrip, rstrip};
            return;
        }
    literals.push_back({token, id, lstrip, rstrip});
}

int64_t WordPieceTokenizer::Impl::requireToken(const std::string& token, const std::string& path) const
{
    const auto id = vocabulary.find(token);
    if (!id)
        throw Error(path + " lacks the special token " + token + ", which BERT's tokenizer needs.");
    return *id;
}

void WordPieceTokenizer::Impl::finish()
{
    for (const auto& [token, id] : vocabulary.tokens()) {
        (void)id;
        const bool continuation = !prefix.empty() && token.size() > prefix.size() && token.compare(0, prefix.size(), prefix) == 0;
        std::size_t pos = continuation ? prefix.size() : 0;
        int chars = 0;
        while (pos < token.size()) {
            char32_t cp = 0;
            pos += std::max<std::size_t>(1, utf8SequenceLength(token, pos, &cp));
            ++chars;
        }
        maxPieceChars = std::max(maxPieceChars, chars);
    }
}

void WordPieceTokenizer::Impl::normalize(const std::vector<CodePoint>& cps, std::size_t begin, std::size_t end,
                                         std::vector<NormalizedChar>& out) const
{
    std::vector<NormalizedChar> chars;
    chars.reserve((end - begin) + 8);
    for (std::size_t i = begin; i < end; ++i) {
        char32_t value = cps[i].value;
        const std::uint8_t flags = charFlags(value);
        if (normalizer.cleanText) {
            if (flags & tables::kRemoved)
                continue;
            if (flags & tables::kWhitespace)
                value = U' ';
        }
        const int origin = static_cast<int>(i);
        if (normalizer.handleChineseChars && (flags & tables::kCjk)) {
            chars.push_back({U' ', origin});
            chars.push_back({value, origin});
            chars.push_back({U' ', origin});
        } else {
            chars.push_back({value, origin});
        }
    }
    if (normalizer.stripAccents) {
        std::vector<NormalizedChar> decomposed;
        decomposed.reserve(chars.size() + 8);
        for (const NormalizedChar& c : chars) {
            if (c.value < 0xC0)
                decomposed.push_back(c); // nothing below U+00C0 decomposes
            else
                appendDecomposed(decomposed, c);
        }
        reorderCombiningMarks(decomposed);
        chars.clear();
        for (const NormalizedChar& c : decomposed)
            if (!(charFlags(c.value) & tables::kMark))
                chars.push_back(c);
    }
    if (normalizer.lowercase) {
        out.reserve(out.size() + chars.size());
        for (const NormalizedChar& c : chars) {
            if (c.value < 0x80) {
                out.push_back({(c.value >= U'A' && c.value <= U'Z') ? c.value + 32 : c.value, c.origin});
                continue;
            }
            std::size_t length = 0;
            const char32_t* mapped = mappedCodePoints(std::begin(tables::kLowercases), std::end(tables::kLowercases),
                                                      tables::kLowercasePool, c.value, &length);
            if (mapped == nullptr) {
                out.push_back(c);
                continue;
            }
            for (std::size_t k = 0; k < length; ++k)
                out.push_back({mapped[k], c.origin});
        }
    } else {
        out.insert(out.end(), chars.begin(), chars.end());
    }
}

void WordPieceTokenizer::Impl::encodeWord(const std::vector<NormalizedChar>& chars, std::size_t begin,
                                          std::size_t end, int sequenceId, Encoding& out) const
{
    const auto push = [&](int64_t id, std::size_t first, std::size_t last) {
        out.ids.push_back(id);
        // A piece spans the original characters its first and last normalized characters came from.
        out.offsets.emplace_back(chars[first].origin, chars[last - 1].origin + 1);
        out.sequenceIds.push_back(sequenceId);
        out.typeIds.push_back(sequenceId == 1 ? 1 : 0);
    };
    const std::size_t count = end - begin;
    if (count > static_cast<std::size_t>(maxInputChars)) {
        push(unk, begin, end);
        return;
    }
    std::string word;
    std::vector<std::size_t> byteOfChar; // byte position in `word` of each char, plus the end
    byteOfChar.reserve(count + 1);
    for (std::size_t i = begin; i < end; ++i) {
        byteOfChar.push_back(word.size());
        appendUtf8(word, chars[i].value);
    }
    byteOfChar.push_back(word.size());

    const std::size_t pieceStart = out.ids.size();
    std::string candidate;
    std::size_t start = 0;
    while (start < count) {
        std::size_t stop = std::min(count, start + static_cast<std::size_t>(maxPieceChars));
        int64_t found = -1;
        while (stop > start) {
            candidate.clear();
            if (start > 0)
                candidate = prefix;
            candidate.append(word, byteOfChar[start], byteOfChar[stop] - byteOfChar[start]);
            if (const auto id = vocabulary.find(candidate)) {
                found = *id;
                break;
            }
            --stop;
        }
        if (found < 0) {
            // One unmatched part makes the whole word unknown, as in BERT.
            out.ids.resize(pieceStart);
            out.offsets.resize(pieceStart);
            out.sequenceIds.resize(pieceStart);
            out.typeIds.resize(pieceStart);
            push(unk, begin, end);
            return;
        }
        push(found, begin + start, begin + stop);
        start = stop;
    }
}

void WordPieceTokenizer::Impl::encodeSegment(const std::vector<CodePoint>& cps, std::size_t begin, std::size_t end,
                                             int sequenceId, Encoding& out) const
{
    if (begin >= end)
        return;
    std::vector<NormalizedChar> chars;
    normalize(cps, begin, end, chars);
    std::size_t wordBegin = 0;
    for (std::size_t i = 0; i < chars.size(); ++i) {
        const std::uint8_t flags = charFlags(chars[i].value);
        if (flags & (tables::kWhitespace | tables::kPunctuation)) {
            if (wordBegin < i)
                encodeWord(chars, wordBegin, i, sequenceId, out);
            if (flags & tables::kPunctuation)
                encodeWord(chars, i, i + 1, sequenceId, out);
            wordBegin = i + 1;
        }
    }
    if (wordBegin < chars.size())
        encodeWord(chars, wordBegin, chars.size(), sequenceId, out);
}

Encoding WordPieceTokenizer::Impl::encodeSequence(const std::string& text, int sequenceId) const
{
    if (text.size() > kMaxTextBytes)
        throw Error("The text to tokenize is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                    std::to_string(kMaxTextBytes) + " bytes.");
    const std::vector<CodePoint> cps = decodeCodePoints(text);
    Encoding out;
    std::size_t segmentBegin = 0;
    std::size_t i = 0;
    while (i < cps.size()) {
        // Leftmost, then longest literal match, as Hugging Face's added-vocabulary matcher picks.
        const LiteralToken* match = nullptr;
        for (const LiteralToken& literal : literals)
            if (text.compare(cps[i].byteBegin, literal.content.size(), literal.content) == 0 &&
                (match == nullptr || literal.content.size() > match->content.size()))
                match = &literal;
        if (match == nullptr) {
            ++i;
            continue;
        }
        std::size_t matchEnd = i;
        while (matchEnd < cps.size() && cps[matchEnd].byteBegin < cps[i].byteBegin + match->content.size())
            ++matchEnd;
        std::size_t matchBegin = i;
        if (match->lstrip)
            while (matchBegin > segmentBegin && (charFlags(cps[matchBegin - 1].value) & tables::kWhitespace))
                --matchBegin;
        if (match->rstrip)
            while (matchEnd < cps.size() && (charFlags(cps[matchEnd].value) & tables::kWhitespace))
                ++matchEnd;
        encodeSegment(cps, segmentBegin, matchBegin, sequenceId, out);
        out.ids.push_back(match->id);
        out.offsets.emplace_back(static_cast<int>(matchBegin), static_cast<int>(matchEnd));
        out.sequenceIds.push_back(sequenceId);
        out.typeIds.push_back(sequenceId == 1 ? 1 : 0);
        segmentBegin = matchEnd;
        i = matchEnd;
    }
    encodeSegment(cps, segmentBegin, cps.size(), sequenceId, out);
    return out;
}

WordPieceTokenizer::WordPieceTokenizer() : impl_(std::make_unique<Impl>()) {}
WordPieceTokenizer::~WordPieceTokenizer() = default;

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::loadFromDirectory(const std::string& dir)
{
    const std::string tokenizerJson = joinPath(dir, "tokenizer.json");
    if (fileExists(tokenizerJson))
        return loadFromTokenizerJson(tokenizerJson);
    const std::string vocabTxt = joinPath(dir, "vocab.txt");
    if (!fileExists(vocabTxt))
        throw Error("No WordPiece tokenizer in " + dir + ": expected tokenizer.json or vocab.txt.");
    const std::string config = joinPath(dir, "tokenizer_config.json");
    return loadFromVocabTxt(vocabTxt, fileExists(config) ? config : std::string());
}

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::loadFromVocabTxt(const std::string& vocabTxtPath,
                                                                         const std::string& tokenizerConfigPath)
{
    std::unique_ptr<WordPieceTokenizer> tokenizer(new WordPieceTokenizer());
    Impl& impl = *tokenizer->impl_;

    nlohmann::json config = nlohmann::json::object();
    if (!tokenizerConfigPath.empty()) {
        config = readJsonFile(tokenizerConfigPath);
        if (!config.is_object())
            throw Error(tokenizerConfigPath + " is not a tokenizer configuration: expected a JSON object.");
    }
    const std::string configName = tokenizerConfigPath.empty() ? std::string("tokenizer_config.json") : tokenizerConfigPath;
    impl.normalizer.lowercase = optionalBool(config, "do_lower_case", true, configName);
    impl.normalizer.stripAccents = optionalBool(config, "strip_accents", impl.normalizer.lowercase, configName);
    impl.normalizer.handleChineseChars = optionalBool(config, "tokenize_chinese_chars", true, configName);
    const std::string unkName = tokenName(config, "unk_token", "[UNK]", configName);
    const std::string sepName = tokenName(config, "sep_token", "[SEP]", configName);
    const std::string padName = tokenName(config, "pad_token", "[PAD]", configName);
    const std::string clsName = tokenName(config, "cls_token", "[CLS]", configName);
    impl.maskName = tokenName(config, "mask_token", "[MASK]", configName);

    std::unordered_map<std::string, int> lineOfToken;
    forEachLine(readFileToString(vocabTxtPath, kMaxVocabTxtBytes), [&](const std::string& token, int lineNumber) {
        if (token.empty())
            throw Error(vocabTxtPath + " line " + std::to_string(lineNumber) +
                        " is empty; a WordPiece vocabulary has one token on every line.");
        if (!isValidUtf8(token))
            throw Error(vocabTxtPath + " line " + std::to_string(lineNumber) + " is not valid UTF-8.");
        if (static_cast<std::size_t>(lineNumber) > kMaxVocabEntries)
            throw Error(vocabTxtPath + " has more than " + std::to_string(kMaxVocabEntries) + " tokens.");
        const auto [it, inserted] = lineOfToken.emplace(token, lineNumber);
        if (!inserted)
            throw Error(vocabTxtPath + " lists the token \"" + token + "\" twice, on lines " +
                        std::to_string(it->second) + " and " + std::to_string(lineNumber) + ".");
        impl.vocabulary.add(token, lineNumber - 1);
    });
    if (impl.vocabulary.empty())
        throw Error(vocabTxtPath + " holds no tokens.");

    impl.unk = impl.requireToken(unkName, vocabTxtPath);
    impl.sep = impl.requireToken(sepName, vocabTxtPath);
    impl.pad = impl.requireToken(padName, vocabTxtPath);
    impl.cls = impl.requireToken(clsName, vocabTxtPath);
    impl.mask = impl.requireToken(impl.maskName, vocabTxtPath);
    // BertTokenizerFast adds its special tokens as added tokens matched in the raw text.
    for (const auto& [name, id] : {std::pair<std::string, int64_t>{padName, impl.pad}, {unkName, impl.unk},
                                   {clsName, impl.cls}, {sepName, impl.sep}, {impl.maskName, impl.mask}}) {
        impl.addLiteral(name, static_cast<int32_t>(id), false, false);
        impl.specialIds.insert(id);
    }
    impl.finish();
    return tokenizer;
}

std::string WordPieceTokenizer::Impl::readWordPieceModel(const nlohmann::json& model, const std::string& path)
{
    const auto vocab = model.find("vocab");
    if (vocab == model.end() || !vocab->is_object() || vocab->empty())
        throw Error(path + " has no model.vocab object mapping token strings to ids.");
    if (vocab->size() > kMaxVocabEntries)
        throw Error(path + " has " + std::to_string(vocab->size()) + " vocabulary entries, more than the limit of " +
                    std::to_string(kMaxVocabEntries) + ".");
    for (const auto& item : vocab->items())
        vocabulary.add(item.key(), static_cast<int32_t>(requireTokenId(item.value(), item.key(), path)));

    const auto modelString = [&](const char* key, const std::string& fallback) {
        const auto it = model.find(key);
        if (it == model.end() || it->is_null())
            return fallback;
        if (!it->is_string())
            throw Error(path + " sets model." + key + " to " + quotedJsonValue(*it) + ", not to a string.");
        return it->get<std::string>();
    };
    prefix = modelString("continuing_subword_prefix", "##");
    const auto maxChars = model.find("max_input_chars_per_word");
    if (maxChars != model.end() && !maxChars->is_null()) {
        if (!maxChars->is_number_integer() || maxChars->get<int64_t>() < 1 || maxChars->get<int64_t>() > kMaxInputCharsLimit)
            throw Error(path + " sets model.max_input_chars_per_word to " + quotedJsonValue(*maxChars) +
                        ", not to a positive whole number of at most " + std::to_string(kMaxInputCharsLimit) + ".");
        maxInputChars = static_cast<int>(maxChars->get<int64_t>());
    }
    return modelString("unk_token", "[UNK]");
}

void WordPieceTokenizer::Impl::readBertNormalizer(const nlohmann::json& root, const std::string& path)
{
    const auto found = root.find("normalizer");
    if (found == root.end() || found->is_null()) {
        normalizer = {false, false, false, false};
        return;
    }
    const auto type = found->is_object() ? found->find("type") : found->end();
    if (type == found->end() || !type->is_string() || type->get<std::string>() != "BertNormalizer")
        throw Error(path + " has a normalizer other than BertNormalizer, which this WordPiece tokenizer "
                           "does not implement.");
    const std::string where = path + " normalizer";
    normalizer.cleanText = optionalBool(*found, "clean_text", true, where);
    normalizer.handleChineseChars = optionalBool(*found, "handle_chinese_chars", true, where);
    normalizer.lowercase = optionalBool(*found, "lowercase", true, where);
    normalizer.stripAccents = optionalBool(*found, "strip_accents", normalizer.lowercase, where);
}

void WordPieceTokenizer::Impl::readAddedTokens(const nlohmann::json& root, const std::string& path)
{
    const auto added = root.find("added_tokens");
    if (added == root.end() || added->is_null())
        return;
    if (!added->is_array())
        throw Error(path + " has an added_tokens entry that is not a list.");
    for (const auto& entry : *added) {
        if (!entry.is_object())
            throw Error(path + " has an added token that is not an object.");
        const auto content = entry.find("content");
        const auto id = entry.find("id");
        if (content == entry.end() || !content->is_string() || content->get<std::string>().empty() || id == entry.end())
            throw Error(path + " has an added token without a non-empty string \"content\" and an \"id\".");
        const std::string token = content->get<std::string>();
        if (vocabulary.tokenCount() >= kMaxVocabEntries)
            throw Error(path + " has more than " + std::to_string(kMaxVocabEntries) + " tokens.");
        const auto tokenId = static_cast<int32_t>(requireTokenId(*id, token, path));
        const std::string where = path + " added token " + token;
        vocabulary.add(token, tokenId);
        addLiteral(token, tokenId, optionalBool(entry, "lstrip", false, where), optionalBool(entry, "rstrip", false, where));
        if (optionalBool(entry, "special", false, where))
            specialIds.insert(tokenId);
    }
}

namespace {

// [CLS]/[SEP] as the post-processor names them (BertProcessing or TemplateProcessing).
std::pair<std::string, std::string> postProcessorSpecials(const nlohmann::json& root)
{
    std::string clsName = "[CLS]", sepName = "[SEP]";
    const auto post = root.find("post_processor");
    if (post == root.end() || !post->is_object())
        return {clsName, sepName};
    const std::string postType = post->value("type", std::string());
    if (postType == "BertProcessing") {
        const auto name = [&](const char* key, std::string& out) {
            const auto it = post->find(key);
            if (it != post->end() && it->is_array() && !it->empty() && (*it)[0].is_string())
                out = (*it)[0].get<std::string>();
        };
        name("cls", clsName);
        name("sep", sepName);
    } else if (postType == "TemplateProcessing") {
        const auto single = post->find("single");
        if (single != post->end() && single->is_array() && single->size() >= 2) {
            const auto specialName = [](const nlohmann::json& piece, std::string& out) {
                if (!piece.is_object())
                    return;
                const auto special = piece.find("SpecialToken");
                if (special != piece.end() && special->is_object() && special->contains("id") &&
                    (*special)["id"].is_string())
                    out = (*special)["id"].get<std::string>();
            };
            specialName(single->front(), clsName);
            specialName(single->back(), sepName);
        }
    }
    return {clsName, sepName};
}

} // namespace

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::loadFromTokenizerJson(const std::string& path)
{
    const nlohmann::json root = readJsonFile(path);
    const nlohmann::json& model = tokenizerJsonModel(root, path);
    const auto type = model.find("type");
    if (type == model.end() || !(type->is_string() && type->get<std::string>() == "WordPiece"))
        throw Error(path + " holds a " + (type == model.end() ? std::string("untyped") : quotedModelType(*type))
            + " tokenizer model, not the WordPiece model that BERT uses.");

    std::unique_ptr<WordPieceTokenizer> tokenizer(new WordPieceTokenizer());
    Impl& impl = *tokenizer->impl_;
    const std::string unkName = impl.readWordPieceModel(model, path);
    impl.readBertNormalizer(root, path);
    const auto preTokenizer = root.find("pre_tokenizer");
    if (preTokenizer == root.end() || !preTokenizer->is_object() ||
        preTokenizer->value("type", nlohmann::json()) != "BertPreTokenizer")
        throw Error(path + " does not split words with a BertPreTokenizer, which this WordPiece tokenizer needs.");
    impl.readAddedTokens(root, path);

    const auto [clsName, sepName] = postProcessorSpecials(root);
    impl.unk = impl.requireToken(unkName, path);
    impl.cls = impl.requireToken(clsName, path);
    impl.sep = impl.requireToken(sepName, path);
    impl.pad = impl.requireToken("[PAD]", path);
    impl.mask = impl.requireToken(impl.maskName, path);
    impl.finish();
    return tokenizer;
}

Encoding WordPieceTokenizer::encodeText(const std::string& text) const
{
    return impl_->encodeSequence(text, 0);
}

Encoding WordPieceTokenizer::encode(const std::string& text) const
{
    const Encoding body = impl_->encodeSequence(text, 0);
    Encoding out;
    const auto special = [&](int64_t id, int64_t typeId) {
        out.ids.push_back(id);
        out.offsets.emplace_back(0, 0);
        out.sequenceIds.push_back(-1);
        out.typeIds.push_back(typeId);
    };
    special(impl_->cls, 0);
    out.ids.insert(out.ids.end(), body.ids.begin(), body.ids.end());
    out.offsets.insert(out.offsets.end(), body.offsets.begin(), body.offsets.end());
    out.sequenceIds.insert(out.sequenceIds.end(), body.sequenceIds.begin(), body.sequenceIds.end());
    out.typeIds.insert(out.typeIds.end(), body.typeIds.begin(), body.typeIds.end());
    special(impl_->sep, 0);
    return out;
}

Encoding WordPieceTokenizer::encodePair(const std::string& first, const std::string& second) const
{
    return assemblePair(impl_->encodeSequence(first, 0), impl_->encodeSequence(second, 1));
}

Encoding WordPieceTokenizer::assemblePair(const Encoding& first, const Encoding& second) const
{
    Encoding out;
    const auto special = [&](int64_t id, int64_t typeId) {
        out.ids.push_back(id);
        out.offsets.emplace_back(0, 0);
        out.sequenceIds.push_back(-1);
        out.typeIds.push_back(typeId);
    };
    const auto body = [&](const Encoding& part, int sequenceId) {
        out.ids.insert(out.ids.end(), part.ids.begin(), part.ids.end());
        out.offsets.insert(out.offsets.end(), part.offsets.begin(), part.offsets.end());
        out.sequenceIds.insert(out.sequenceIds.end(), part.ids.size(), sequenceId);
        out.typeIds.insert(out.typeIds.end(), part.ids.size(), sequenceId);
    };
    special(impl_->cls, 0);
    body(first, 0);
    special(impl_->sep, 0);
    body(second, 1);
    special(impl_->sep, 1);
    return out;
}

std::string WordPieceTokenizer::decode(const std::vector<int64_t>& ids, bool skipSpecialTokens) const
{
    std::string out;
    bool first = true;
    for (const int64_t id : ids) {
        const std::string& token = impl_->vocabulary.token(id);
        if (skipSpecialTokens && impl_->specialIds.count(id))
            continue;
        std::string piece = token;
        if (!first) {
            if (!impl_->prefix.empty() && piece.compare(0, impl_->prefix.size(), impl_->prefix) == 0)
                piece.erase(0, impl_->prefix.size());
            else
                piece.insert(0, 1, ' ');
        }
        // Hugging Face cleans each piece on its own (with its leading space), not the joined text.
        for (const auto& [from, to] : kCleanupPairs)
            replaceAll(piece, from, to);
        out += piece;
        first = false;
    }
    return out;
}

std::string WordPieceTokenizer::tokenString(int64_t id) const
{
    return impl_->vocabulary.token(id);
}

std::string WordPieceTokenizer::tokenText(int64_t id) const { return decode({id}, false); }

int64_t WordPieceTokenizer::vocabSize() const { return impl_->vocabulary.size(); }
int64_t WordPieceTokenizer::clsId() const { return impl_->cls; }
int64_t WordPieceTokenizer::sepId() const { return impl_->sep; }
int64_t WordPieceTokenizer::padId() const { return impl_->pad; }
int64_t WordPieceTokenizer::unkId() const { return impl_->unk; }
int64_t WordPieceTokenizer::maskId() const { return impl_->mask; }
std::string WordPieceTokenizer::maskToken() const { return impl_->maskName; }
bool WordPieceTokenizer::lowercases() const { return impl_->normalizer.lowercase; }
bool WordPieceTokenizer::stripsAccents() const { return impl_->normalizer.stripAccents; }

} // namespace scalescope
