#include "text/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <mutex>
#include <queue>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_values.h"
#include "common/text_files.h"
#include "text/code_point_ranges.h"
#include "text/generated/unicode_tables.h"
#include "text/utf8.h"
#include "text/vocabulary.h"

namespace scalescope {

namespace {

constexpr std::size_t kMaxTextBytes = 10u * 1024u * 1024u;
// Pieces longer than this are rare and would bloat the cache without ever being hit again.
constexpr std::size_t kMaxCachedPieceBytes = 256;
constexpr std::size_t kMaxCacheEntries = 100'000;
const std::string kMaskToken = "<mask>";

using unicode_tables::CharClass;


CharClass classify(char32_t cp)
{
    if (cp < 0x80) {
        // ASCII dominates real text; skip the table search for it.
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'))
            return CharClass::Letter;
        if (cp >= '0' && cp <= '9')
            return CharClass::Number;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D))
            return CharClass::Whitespace;
        return CharClass::Other;
    }
    return rangeValue(std::begin(unicode_tables::kCharRanges), std::end(unicode_tables::kCharRanges), cp,
        &unicode_tables::CharRange::charClass);
}

// ---- GPT-2 byte <-> symbol mapping ---------------------------------------------------------------

// GPT-2 keeps printable Latin-1 bytes as their own characters and moves the others (controls,
// space, soft hyphen, ...) to U+0100 onwards, so that every vocabulary string is printable.
struct ByteMapping {
    std::array<char32_t, 256> byteToCodePoint{};
    std::array<std::string, 256> byteToSymbol;
    std::array<int, 324> codePointToByte{}; // -1 where the code point is no byte symbol

    ByteMapping()
    {
        codePointToByte.fill(-1);
        char32_t next = 256;
        for (int byte = 0; byte < 256; ++byte) {
            const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                                   (byte >= 0xAE && byte <= 0xFF);
            const char32_t cp = printable ? static_cast<char32_t>(byte) : next++;
            byteToCodePoint[byte] = cp;
            appendUtf8(byteToSymbol[byte], cp);
            codePointToByte[cp] = byte;
        }
    }
};

const ByteMapping& byteMapping()
{
    static const ByteMapping mapping;
    return mapping;
}

// ---- pre-tokenization ----------------------------------------------------------------------------

// The GPT-2 pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// applied with leftmost-first alternation over code points [begin, end). Every code point falls
// into some alternative, so the pieces tile the range.
struct Range {
    std::size_t begin;
    std::size_t end;
};

std::size_t contractionLength(const std::vector<CodePoint>& cps, std::size_t i, std::size_t end)
{
    if (cps[i].value != U'\'' || i + 1 >= end)
        return 0;
    const char32_t first = cps[i + 1].value;
    if (first == U's' || first == U't' || first == U'm' || first == U'd')
        return 2;
    if (i + 2 >= end)
        return 0;
    const char32_t second = cps[i + 2].value;
    if ((first == U'r' && second == U'e') || (first == U'v' && second == U'e') ||
        (first == U'l' && second == U'l'))
        return 3;
    return 0;
}

void preTokenize(const std::vector<CodePoint>& cps, const std::vector<CharClass>& classes,
                 std::size_t begin, std::size_t end, std::vector<Range>& pieces)
{
    std::size_t i = begin;
    while (i < end) {
        if (const std::size_t length = contractionLength(cps, i, end)) {
            pieces.push_back({i, i + length});
            i += length;
            continue;
        }
        // " ?X+" for X = letters, numbers, and everything that is neither nor whitespace.
        const std::size_t runStart = (cps[i].value == U' ' && i + 1 < end) ? i + 1 : i;
        const CharClass runClass = classes[runStart];
        if (runClass != CharClass::Whitespace) {
            std::size_t j = runStart + 1;
            while (j < end && classes[j] == runClass)
                ++j;
            pieces.push_back({i, j});
            i = j;
            continue;
        }
        std::size_t j = i + 1;
        while (j < end && classes[j] == CharClass::Whitespace)
            ++j;
        // "\s+(?!\S)" leaves the last whitespace before a non-space to be taken with it (or, when
        // that is the only one, "\s+" takes it alone).
        if (j < end && j - i >= 2)
            --j;
        pieces.push_back({i, j});
        i = j;
    }
}

struct MergeRule {
    int rank;
    int32_t resultId;
};

uint64_t pairKey(int32_t left, int32_t right)
{
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// One BPE token of a piece: vocabulary id (-1 when a byte symbol is missing from the vocabulary)
// and the bytes of the piece it covers.
struct PieceToken {
    int32_t id;
    uint32_t byteBegin;
    uint32_t byteEnd;
};

bool mentionsByteLevel(const nlohmann::json& node)
{
    if (node.is_object()) {
        const auto type = node.find("type");
        if (type != node.end() && type->is_string() && type->get<std::string>() == "ByteLevel")
            return true;
        for (const auto& item : node.items())
            if (mentionsByteLevel(item.value()))
                return true;
    } else if (node.is_array()) {
        for (const auto& item : node)
            if (mentionsByteLevel(item))
                return true;
    }
    return false;
}

} // namespace

// ---- BpeTokenizer ----------------------------------------------------------------------------------

struct BpeTokenizer::Impl {
    // Added tokens may rebind a vocabulary string to another id; the later one wins.
    Vocabulary vocabulary{Vocabulary::Rebinding::LaterIdWins};
    std::unordered_map<uint64_t, MergeRule> merges;
    std::array<int32_t, 256> byteSymbolIds{};
    std::unordered_set<int64_t> specialIds;
    int64_t bos = 0, eos = 0, pad = 0, unk = 0, mask = 0;

    mutable std::mutex cacheMutex;
    mutable std::unordered_map<std::string, std::vector<PieceToken>> cache;

    void setVocabulary(const nlohmann::json& vocab, const std::string& path);
    void addMerge(const std::string& left, const std::string& right, int rank);
    void finish(const std::string& path);

    std::vector<PieceToken> bpe(const std::string& pieceBytes) const;
    std::vector<PieceToken> cachedBpe(const std::string& pieceBytes) const;
    void encodeSegment(const std::string& text, const std::vector<CodePoint>& cps,
                       const std::vector<CharClass>& classes, std::size_t begin, std::size_t end,
                       int sequenceId, Encoding& out) const;
};

void BpeTokenizer::Impl::setVocabulary(const nlohmann::json& vocab, const std::string& path)
{
    if (!vocab.is_object())
        throw Error(path + " holds no vocabulary: expected a JSON object mapping token strings to ids.");
    if (vocab.size() > kMaxVocabEntries)
        throw Error(path + " has " + std::to_string(vocab.size()) + " vocabulary entries, more than the limit of " +
                    std::to_string(kMaxVocabEntries) + ".");
    vocabulary.reserve(vocab.size());
    for (const auto& item : vocab.items())
        vocabulary.add(item.key(), static_cast<int32_t>(requireTokenId(item.value(), item.key(), path)));
}

void BpeTokenizer::Impl::addMerge(const std::string& left, const std::string& right, int rank)
{
    const auto leftId = vocabulary.find(left);
    const auto rightId = vocabulary.find(right);
    const auto resultId = vocabulary.find(left + right);
    // A merge the vocabulary cannot express can never produce a token; drop it.
    if (!leftId || !rightId || !resultId)
        return;
    // Later duplicates win, as in Hugging Face's and GPT-2's rank tables.
    merges[pairKey(*leftId, *rightId)] = MergeRule{rank, *resultId};
}

void BpeTokenizer::Impl::finish(const std::string& path)
{
    const auto special = [&](const std::string& token) -> int64_t {
        const auto id = vocabulary.find(token);
        if (!id)
            throw Error(path + " lacks the special token " + token + ", which RoBERTa's tokenizer needs.");
        specialIds.insert(*id);
        return *id;
    };
    bos = special("<s>");
    eos = special("</s>");
    pad = special("<pad>");
    unk = special("<unk>");
    mask = special(kMaskToken);
    const ByteMapping& mapping = byteMapping();
    for (int byte = 0; byte < 256; ++byte) {
        byteSymbolIds[byte] = vocabulary.find(mapping.byteToSymbol[byte]).value_or(-1);
    }
}

// Lowest-ranked adjacent pair first, leftmost among equal ranks, one merge at a time; a heap keeps
// long pieces (a megabyte without spaces) from going quadratic.
std::vector<PieceToken> BpeTokenizer::Impl::bpe(const std::string& pieceBytes) const
{
    struct Symbol {
        int32_t id;
        uint32_t byteBegin;
        uint32_t byteEnd;
        int prev;
        int next;
        bool alive;
    };
    struct Candidate {
        int rank;
        int left;
        int32_t leftId;
        int32_t rightId;
        bool operator>(const Candidate& other) const
        {
            return rank != other.rank ? rank > other.rank : left > other.left;
        }
    };

    const int count = static_cast<int>(pieceBytes.size());
    std::vector<Symbol> symbols(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        const auto byte = static_cast<unsigned char>(pieceBytes[static_cast<std::size_t>(i)]);
        symbols[static_cast<std::size_t>(i)] = {byteSymbolIds[byte], static_cast<uint32_t>(i),
                                                static_cast<uint32_t>(i + 1), i - 1,
                                                i + 1 < count ? i + 1 : -1, true};
    }

    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
    const auto consider = [&](int left) {
        if (left < 0)
            return;
        const Symbol& a = symbols[static_cast<std::size_t>(left)];
        if (a.next < 0)
            return;
        const Symbol& b = symbols[static_cast<std::size_t>(a.next)];
        if (a.id < 0 || b.id < 0)
            return;
        const auto it = merges.find(pairKey(a.id, b.id));
        if (it != merges.end())
            queue.push({it->second.rank, left, a.id, b.id});
    };
    for (int i = 0; i + 1 < count; ++i)
        consider(i);

    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        Symbol& left = symbols[static_cast<std::size_t>(top.left)];
        if (!left.alive || left.next < 0 || left.id != top.leftId)
            continue;
        Symbol& right = symbols[static_cast<std::size_t>(left.next)];
        if (right.id != top.rightId)
            continue;
        left.id = merges.at(pairKey(top.leftId, top.rightId)).resultId;
        left.byteEnd = right.byteEnd;
        right.alive = false;
        left.next = right.next;
        if (right.next >= 0)
            symbols[static_cast<std::size_t>(right.next)].prev = top.left;
        consider(left.prev);
        consider(top.left);
    }

    std::vector<PieceToken> tokens;
    for (int i = count > 0 ? 0 : -1; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
        const Symbol& s = symbols[static_cast<std::size_t>(i)];
        tokens.push_back({s.id, s.byteBegin, s.byteEnd});
    }
    return tokens;
}

std::vector<PieceToken> BpeTokenizer::Impl::cachedBpe(const std::string& pieceBytes) const
{
    if (pieceBytes.size() > kMaxCachedPieceBytes)
        return bpe(pieceBytes);
    {
        std::lock_guard<std::mutex> lock(cacheMutex);
        const auto it = cache.find(pieceBytes);
        if (it != cache.end())
            return it->second;
    }
    std::vector<PieceToken> tokens = bpe(pieceBytes);
    std::lock_guard<std::mutex> lock(cacheMutex);
    if (cache.size() >= kMaxCacheEntries)
        cache.clear();
    cache.emplace(pieceBytes, tokens);
    return tokens;
}

void BpeTokenizer::Impl::encodeSegment(const std::string& text, const std::vector<CodePoint>& cps,
                                       const std::vector<CharClass>& classes, std::size_t begin,
                                       std::size_t end, int sequenceId, Encoding& out) const
{
    std::vector<Range> pieces;
    preTokenize(cps, classes, begin, end, pieces);
    std::vector<int> codePointOfByte;
    for (const Range& piece : pieces) {
        const std::size_t pieceByteBegin = cps[piece.begin].byteBegin;
        const std::size_t pieceByteEnd = cps[piece.end - 1].byteEnd;
        codePointOfByte.clear();
        for (std::size_t c = piece.begin; c < piece.end; ++c)
            codePointOfByte.insert(codePointOfByte.end(), cps[c].byteEnd - cps[c].byteBegin, static_cast<int>(c));
        const std::string pieceBytes = text.substr(pieceByteBegin, pieceByteEnd - pieceByteBegin);
        for (const PieceToken& token : cachedBpe(pieceBytes)) {
            // A token holding part of a character spans that whole character.
            int start = codePointOfByte[token.byteBegin];
            int stop = codePointOfByte[token.byteEnd - 1] + 1;
            // trim_offsets: the spaces the pre-tokenizer glued to the token are not part of it.
            int leadingSpaces = 0;
            while (token.byteBegin + leadingSpaces < token.byteEnd &&
                   pieceBytes[token.byteBegin + static_cast<uint32_t>(leadingSpaces)] == ' ')
                ++leadingSpaces;
            int trailingSpaces = 0;
            while (token.byteEnd - static_cast<uint32_t>(trailingSpaces) > token.byteBegin &&
                   pieceBytes[token.byteEnd - 1 - static_cast<uint32_t>(trailingSpaces)] == ' ')
                ++trailingSpaces;
            if (leadingSpaces > 0)
                start = std::min(start + leadingSpaces, stop);
            if (trailingSpaces > 0 && stop >= trailingSpaces)
                stop = std::max(stop - trailingSpaces, start);
            out.ids.push_back(token.id >= 0 ? token.id : unk);
            out.offsets.emplace_back(start, stop);
            out.sequenceIds.push_back(sequenceId);
            out.typeIds.push_back(0);
        }
    }
}

BpeTokenizer::BpeTokenizer() : impl_(std::make_unique<Impl>()) {}
BpeTokenizer::~BpeTokenizer() = default;

std::unique_ptr<BpeTokenizer> BpeTokenizer::loadFromDirectory(const std::string& dir)
{
    const std::string tokenizerJson = joinPath(dir, "tokenizer.json");
    if (fileExists(tokenizerJson))
        return loadFromTokenizerJson(tokenizerJson);
    const std::string vocabJson = joinPath(dir, "vocab.json");
    const std::string mergesTxt = joinPath(dir, "merges.txt");
    if (fileExists(vocabJson) && fileExists(mergesTxt))
        return loadFromFiles(vocabJson, mergesTxt);
    throw Error("No tokenizer in " + dir + ": expected tokenizer.json or vocab.json and merges.txt.");
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::loadFromFiles(const std::string& vocabJsonPath,
                                                          const std::string& mergesTxtPath)
{
    std::unique_ptr<BpeTokenizer> tokenizer(new BpeTokenizer());
    Impl& impl = *tokenizer->impl_;
    impl.setVocabulary(readJsonFile(vocabJsonPath), vocabJsonPath);

    int rank = 0;
    forEachLine(readFileToString(mergesTxtPath), [&](const std::string& line, int lineNumber) {
        if (line.empty() || (lineNumber == 1 && line.rfind("#version", 0) == 0))
            return;
        const std::size_t space = line.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string::npos)
            throw Error(mergesTxtPath + " line " + std::to_string(lineNumber) +
                        " is not a merge of two symbols separated by one space.");
        impl.addMerge(line.substr(0, space), line.substr(space + 1), rank++);
    });
    impl.finish(vocabJsonPath);
    return tokenizer;
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::loadFromTokenizerJson(const std::string& path)
{
    const nlohmann::json root = readJsonFile(path);
    const nlohmann::json& model = tokenizerJsonModel(root, path);
    const auto type = model.find("type");
    if (type != model.end() && !(type->is_string() && type->get<std::string>() == "BPE"))
        throw Error(path + " holds a " + quotedModelType(*type)
            + " tokenizer model, not the byte-level BPE that RoBERTa uses.");
    const auto preTokenizer = root.find("pre_tokenizer");
    if (preTokenizer != root.end() && !preTokenizer->is_null() && !mentionsByteLevel(*preTokenizer))
        throw Error(path + " does not pre-tokenize at byte level (no ByteLevel pre_tokenizer), "
                           "so it is not a byte-level BPE tokenizer.");

    std::unique_ptr<BpeTokenizer> tokenizer(new BpeTokenizer());
    Impl& impl = *tokenizer->impl_;
    const auto vocab = model.find("vocab");
    if (vocab == model.end())
        throw Error(path + " has no model.vocab.");
    impl.setVocabulary(*vocab, path);

    const auto added = root.find("added_tokens");
    if (added != root.end() && !added->is_null()) {
        if (!added->is_array())
            throw Error(path + " has an added_tokens entry that is not a list.");
        for (const auto& entry : *added) {
            const auto content = entry.find("content");
            const auto id = entry.find("id");
            if (!entry.is_object() || content == entry.end() || !content->is_string() || id == entry.end())
                throw Error(path + " has an added token without a string \"content\" and an \"id\".");
            const std::string token = content->get<std::string>();
            if (impl.vocabulary.tokenCount() >= kMaxVocabEntries)
                throw Error(path + " has more than " + std::to_string(kMaxVocabEntries) + " tokens.");
            impl.vocabulary.add(token, static_cast<int32_t>(requireTokenId(*id, token, path)));
            const auto special = entry.find("special");
            if (special != entry.end() && special->is_boolean() && special->get<bool>())
                impl.specialIds.insert(*impl.vocabulary.find(token));
        }
    }

    const auto merges = model.find("merges");
    if (merges == model.end() || !merges->is_array())
        throw Error(path + " has no model.merges list.");
    int rank = 0;
    for (const auto& merge : *merges) {
        const std::string where = path + " model.merges entry " + std::to_string(rank + 1);
        if (merge.is_string()) {
            const std::string line = merge.get<std::string>();
            const std::size_t space = line.find(' ');
            if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
                line.find(' ', space + 1) != std::string::npos)
                throw Error(where + " is not a merge of two symbols separated by one space.");
            impl.addMerge(line.substr(0, space), line.substr(space + 1), rank);
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            impl.addMerge(merge[0].get<std::string>(), merge[1].get<std::string>(), rank);
        } else {
            throw Error(where + " is not a merge of two symbols.");
        }
        ++rank;
    }
    impl.finish(path);
    return tokenizer;
}

Encoding BpeTokenizer::encodeText(const std::string& text) const
{
    if (text.size() > kMaxTextBytes)
        throw Error("The text to tokenize is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                    std::to_string(kMaxTextBytes) + " bytes.");
    const std::vector<CodePoint> cps = decodeCodePoints(text);
    std::vector<CharClass> classes(cps.size());
    for (std::size_t i = 0; i < cps.size(); ++i)
        classes[i] = classify(cps[i].value);

    Encoding out;
    std::size_t segmentBegin = 0; // code point index where the next plain-text segment starts
    std::size_t searchFrom = 0;   // byte position
    std::size_t cpIndex = 0;      // code point index at byte position searchFrom (monotonic walk)
    while (true) {
        const std::size_t maskByte = text.find(kMaskToken, searchFrom);
        if (maskByte == std::string::npos)
            break;
        while (cpIndex < cps.size() && cps[cpIndex].byteBegin < maskByte)
            ++cpIndex;
        // "<mask>" found inside a multi-byte character cannot happen with valid UTF-8 ('<' is ASCII).
        const std::size_t maskBegin = cpIndex;
        const std::size_t maskEnd = maskBegin + kMaskToken.size();
        // lstrip: whitespace before <mask> belongs to the mask token, not to the text before it.
        std::size_t textEnd = maskBegin;
        while (textEnd > segmentBegin && classes[textEnd - 1] == CharClass::Whitespace)
            --textEnd;
        impl_->encodeSegment(text, cps, classes, segmentBegin, textEnd, 0, out);
        out.ids.push_back(impl_->mask);
        out.offsets.emplace_back(static_cast<int>(maskBegin), static_cast<int>(maskEnd));
        out.sequenceIds.push_back(0);
        out.typeIds.push_back(0);
        segmentBegin = maskEnd;
        searchFrom = maskByte + kMaskToken.size();
    }
    impl_->encodeSegment(text, cps, classes, segmentBegin, cps.size(), 0, out);
    return out;
}

Encoding BpeTokenizer::encode(const std::string& text) const
{
    Encoding body = encodeText(text);
    Encoding out;
    out.ids.reserve(body.ids.size() + 2);
    out.ids.push_back(impl_->bos);
    out.offsets.emplace_back(0, 0);
    out.sequenceIds.push_back(-1);
    out.ids.insert(out.ids.end(), body.ids.begin(), body.ids.end());
    out.offsets.insert(out.offsets.end(), body.offsets.begin(), body.offsets.end());
    out.sequenceIds.insert(out.sequenceIds.end(), body.sequenceIds.begin(), body.sequenceIds.end());
    out.ids.push_back(impl_->eos);
    out.offsets.emplace_back(0, 0);
    out.sequenceIds.push_back(-1);
    out.typeIds.assign(out.ids.size(), 0);
    return out;
}

Encoding BpeTokenizer::encodePair(const std::string& first, const std::string& second) const
{
    return assemblePair(encodeText(first), encodeText(second));
}

Encoding BpeTokenizer::assemblePair(const Encoding& first, const Encoding& second) const
{
    Encoding out;
    const auto special = [&](int64_t id) {
        out.ids.push_back(id);
        out.offsets.emplace_back(0, 0);
        out.sequenceIds.push_back(-1);
    };
    const auto body = [&](const Encoding& part, int sequenceId) {
        out.ids.insert(out.ids.end(), part.ids.begin(), part.ids.end());
        out.offsets.insert(out.offsets.end(), part.offsets.begin(), part.offsets.end());
        out.sequenceIds.insert(out.sequenceIds.end(), part.ids.size(), sequenceId);
    };
    special(impl_->bos);
    body(first, 0);
    special(impl_->eos);
    special(impl_->eos);
    body(second, 1);
    special(impl_->eos);
    out.typeIds.assign(out.ids.size(), 0);
    return out;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids, bool skipSpecialTokens) const
{
    const ByteMapping& mapping = byteMapping();
    std::string out;
    for (const int64_t id : ids) {
        const std::string& token = impl_->vocabulary.token(id);
        if (skipSpecialTokens && impl_->specialIds.count(id))
            continue;
        std::size_t pos = 0;
        while (pos < token.size()) {
            char32_t cp = 0;
            std::size_t length = utf8SequenceLength(token, pos, &cp);
            if (length == 0) {
                out += token[pos];
                ++pos;
                continue;
            }
            const int byte = cp < mapping.codePointToByte.size() ? mapping.codePointToByte[cp] : -1;
            // Characters outside the byte alphabet only occur in added tokens; keep them as written.
            if (byte >= 0)
                out += static_cast<char>(byte);
            else
                out.append(token, pos, length);
            pos += length;
        }
    }
    return out;
}

std::string BpeTokenizer::tokenString(int64_t id) const
{
    return impl_->vocabulary.token(id);
}

std::string BpeTokenizer::tokenText(int64_t id) const
{
    return decode({id}, false);
}

int64_t BpeTokenizer::vocabSize() const { return impl_->vocabulary.size(); }
int64_t BpeTokenizer::bosId() const { return impl_->bos; }
int64_t BpeTokenizer::eosId() const { return impl_->eos; }
int64_t BpeTokenizer::clsId() const { return impl_->bos; }
int64_t BpeTokenizer::sepId() const { return impl_->eos; }
std::string BpeTokenizer::maskToken() const { return kMaskToken; }
int64_t BpeTokenizer::padId() const { return impl_->pad; }
int64_t BpeTokenizer::unkId() const { return impl_->unk; }
int64_t BpeTokenizer::maskId() const { return impl_->mask; }

int codePointCount(const std::string& utf8)
{
    int count = 0;
    std::size_t pos = 0;
    while (pos < utf8.size()) {
        char32_t cp = 0;
        pos += std::max<std::size_t>(1, utf8SequenceLength(utf8, pos, &cp));
        ++count;
    }
    return count;
}

std::size_t byteOffsetOfCodePoint(const std::string& utf8, int cp)
{
    std::size_t pos = 0;
    for (int i = 0; i < cp && pos < utf8.size(); ++i) {
        char32_t value = 0;
        pos += std::max<std::size_t>(1, utf8SequenceLength(utf8, pos, &value));
    }
    return pos;
}

} // namespace scalescope
