// Byte-level BPE tokenizer. Against the real roberta-base files (skipped when the shared data is
// absent): the known ids of "Hello world!", token splits and offsets derived by hand from the GPT-2
// pre-tokenization pattern and trim_offsets (ids looked up in vocab.json by token string), the
// <mask> special token, pair encoding, and offsets recomputed here from each token's own bytes.
// Against a tiny vocabulary written by the test: BPE merge order worked out by hand, tokenizer.json
// loading equivalent to vocab.json + merges.txt, and every loading error naming its file.
#include <QtTest>

#include <QFileInfo>
#include <QTemporaryDir>

#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "text/bpe_tokenizer.h"

using namespace scalescope;

namespace {

const std::string kRobertaDir = std::string(SCALESCOPE_SHARED_DATA) + "/roberta-base-tokenizer";

bool robertaAvailable()
{
    return QFileInfo::exists(QString::fromStdString(kRobertaDir + "/vocab.json")) &&
           QFileInfo::exists(QString::fromStdString(kRobertaDir + "/merges.txt"));
}

#define REQUIRE_ROBERTA()                                                                              \
    do {                                                                                               \
        if (!robertaAvailable())                                                                       \
            QSKIP("roberta-base tokenizer files are not in the shared data folder");                   \
    } while (false)

const BpeTokenizer& roberta()
{
    static const std::unique_ptr<BpeTokenizer> tokenizer = BpeTokenizer::loadFromDirectory(kRobertaDir);
    return *tokenizer;
}

const nlohmann::json& robertaVocab()
{
    static const nlohmann::json vocab = [] {
        std::ifstream in(kRobertaDir + "/vocab.json", std::ios::binary);
        return nlohmann::json::parse(in);
    }();
    return vocab;
}

// Id of a vocabulary string as vocab.json spells it; -1 (which no encoding contains) when absent.
int64_t robertaId(const std::string& token)
{
    const auto it = robertaVocab().find(token);
    return it == robertaVocab().end() ? -1 : it->get<int64_t>();
}

std::vector<int64_t> robertaIds(const QStringList& tokens)
{
    std::vector<int64_t> ids;
    for (const QString& token : tokens)
        ids.push_back(robertaId(token.toStdString()));
    return ids;
}

std::vector<std::pair<int, int>> pairsOf(const QList<int>& flat)
{
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; i + 1 < flat.size(); i += 2)
        pairs.emplace_back(flat[i], flat[i + 1]);
    return pairs;
}

QString describe(const std::vector<std::pair<int, int>>& offsets)
{
    QStringList parts;
    for (const auto& [start, end] : offsets)
        parts << QStringLiteral("[%1,%2]").arg(start).arg(end);
    return parts.join(' ');
}

QString describe(const std::vector<int64_t>& ids)
{
    QStringList parts;
    for (const int64_t id : ids)
        parts << QString::number(id);
    return parts.join(' ');
}

// Code points of a UTF-8 string as Qt decodes them (an independent decoder).
std::u32string codePoints(const std::string& utf8)
{
    const QList<uint> ucs4 = QString::fromStdString(utf8).toUcs4();
    return std::u32string(ucs4.begin(), ucs4.end());
}

std::string utf8Of(const std::u32string& cps)
{
    return QString::fromUcs4(cps.data(), static_cast<qsizetype>(cps.size())).toStdString();
}

// GPT-2's alphabet: the 188 bytes that print as Latin-1 characters stand for themselves, the other
// 68 take the code points from U+0100 upwards in byte order.
std::string byteSymbol(int byte)
{
    static const std::vector<std::string> symbols = [] {
        std::vector<std::string> out(256);
        char32_t nextFree = 0x100;
        for (int b = 0; b < 256; ++b) {
            const bool printsAsItself = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            const char32_t cp = printsAsItself ? static_cast<char32_t>(b) : nextFree++;
            out[static_cast<std::size_t>(b)] = utf8Of(std::u32string(1, cp));
        }
        return out;
    }();
    return symbols[static_cast<std::size_t>(byte)];
}

void writeFile(const std::string& path, const std::string& content)
{
    std::ofstream out(path, std::ios::binary);
    out << content;
}

// ---- the tiny vocabulary ------------------------------------------------------------------------
// <s>=0 <pad>=1 </s>=2 <unk>=3, the byte symbols 4..259 in byte order, the merge results 260..270
// in merge order, <mask>=271. Two extra merges cannot apply: "xy" is not in the vocabulary and
// "foo"/"bar" are not either; loading must skip them.

const std::vector<std::pair<std::string, std::string>> kTinyMerges = {
    {"e", "r"}, {"l", "o"}, {"lo", "w"}, {"\xC4\xA0", "low"}, {"low", "er"},
    {"n", "e"}, {"ne", "w"}, {"e", "s"}, {"es", "t"}, {"new", "est"}, {"\xC4\x8A", "\xC4\xA0"}};
constexpr int kTinyMaskId = 271;
const std::vector<std::pair<std::string, std::string>> kUnusableMerges = {{"x", "y"}, {"foo", "bar"}};

nlohmann::json tinyVocab(bool withMask = true, int skippedByte = -1, const std::string& skippedSpecial = "")
{
    nlohmann::json vocab = nlohmann::json::object();
    const std::vector<std::string> specials = {"<s>", "<pad>", "</s>", "<unk>"};
    for (std::size_t i = 0; i < specials.size(); ++i)
        if (specials[i] != skippedSpecial)
            vocab[specials[i]] = i;
    for (int byte = 0; byte < 256; ++byte)
        if (byte != skippedByte)
            vocab[byteSymbol(byte)] = 4 + byte;
    int next = 260;
    for (const auto& [left, right] : kTinyMerges)
        vocab[left + right] = next++;
    if (withMask)
        vocab["<mask>"] = kTinyMaskId;
    return vocab;
}

std::string tinyMergesTxt(bool versionLine = true, const std::string& newline = "\n")
{
    std::string text = versionLine ? "#version: 0.2" + newline : std::string();
    for (const auto& [left, right] : kTinyMerges)
        text += left + " " + right + newline;
    for (const auto& [left, right] : kUnusableMerges)
        text += left + " " + right + newline;
    return text;
}

nlohmann::json tinyTokenizerJson(bool mergesAsPairs)
{
    nlohmann::json vocab = tinyVocab(false); // <mask> comes only from added_tokens
    nlohmann::json merges = nlohmann::json::array();
    for (const auto& list : {kTinyMerges, kUnusableMerges})
        for (const auto& [left, right] : list)
            merges.push_back(mergesAsPairs ? nlohmann::json::array({left, right}) : nlohmann::json(left + " " + right));
    nlohmann::json added = nlohmann::json::array();
    const std::vector<std::pair<std::string, int>> specials = {
        {"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}, {"<mask>", kTinyMaskId}};
    for (const auto& [content, id] : specials)
        added.push_back({{"id", id}, {"content", content}, {"special", true}, {"lstrip", content == "<mask>"}});
    return {{"version", "1.0"},
            {"added_tokens", added},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}}},
            {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
}

std::unique_ptr<BpeTokenizer> loadTiny(const QTemporaryDir& dir, bool withMask = true, int skippedByte = -1)
{
    const std::string base = dir.path().toStdString();
    writeFile(base + "/vocab.json", tinyVocab(withMask, skippedByte).dump());
    writeFile(base + "/merges.txt", tinyMergesTxt());
    return BpeTokenizer::loadFromFiles(base + "/vocab.json", base + "/merges.txt");
}

int64_t tinyId(const std::string& token)
{
    static const nlohmann::json vocab = tinyVocab();
    return vocab.at(token).get<int64_t>();
}

} // namespace

class TestTokenizer : public QObject {
    Q_OBJECT

private slots:
    void knownTruth();
    void helloWorldOffsets();
    void emptyText();
    void realTokens_data();
    void realTokens();
    void maskAbsorbsPrecedingWhitespace_data();
    void maskAbsorbsPrecedingWhitespace();
    void pairEncoding();
    void offsetsFollowTokenBytes_data();
    void offsetsFollowTokenBytes();
    void wordTokensMatchTheirText_data();
    void wordTokensMatchTheirText();
    void decodeRoundTrip();
    void tokenStringsAndSpecialIds();
    void concurrentEncoding();
    void longText();

    void codePointHelpers_data();
    void codePointHelpers();
    void byteAlphabetAnchors();
    void tinyVocabMerges_data();
    void tinyVocabMerges();
    void tinyVocabOffsets();
    void missingByteSymbolBecomesUnk();
    void tokenizerJsonMatchesVocabAndMerges_data();
    void tokenizerJsonMatchesVocabAndMerges();
    void loadErrors_data();
    void loadErrors();
    void decodeRejectsUnknownId();
};

void TestTokenizer::knownTruth()
{
    REQUIRE_ROBERTA();
    const Encoding encoding = roberta().encode("Hello world!");
    QCOMPARE(encoding.ids, (std::vector<int64_t>{0, 31414, 232, 328, 2}));
}

void TestTokenizer::helloWorldOffsets()
{
    REQUIRE_ROBERTA();
    const Encoding encoding = roberta().encode("Hello world!");
    const std::vector<std::pair<int, int>> expected = {{0, 0}, {0, 5}, {6, 11}, {11, 12}, {0, 0}};
    QCOMPARE(encoding.offsets, expected);
    QCOMPARE(encoding.sequenceIds, (std::vector<int>{-1, 0, 0, 0, -1}));
}

void TestTokenizer::emptyText()
{
    REQUIRE_ROBERTA();
    QVERIFY(roberta().encodeText("").ids.empty());
    const Encoding encoding = roberta().encode("");
    QCOMPARE(encoding.ids, (std::vector<int64_t>{robertaId("<s>"), robertaId("</s>")}));
    QCOMPARE(encoding.sequenceIds, (std::vector<int>{-1, -1}));
}

// Splits follow the pre-tokenization pattern; offsets follow trim_offsets: a token's leading (and
// trailing) "Ġ" spaces are not part of its span, so a token that is only spaces gets an empty span
// at the end of those spaces.
void TestTokenizer::realTokens_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("tokens");
    QTest::addColumn<QList<int>>("offsets");

    QTest::newRow("contraction t") << "don't" << QStringList{"don", "'t"} << QList<int>{0, 3, 3, 5};
    QTest::newRow("contraction m") << "I'm here" << QStringList{"I", "'m", "Ġhere"} << QList<int>{0, 1, 1, 3, 4, 8};
    QTest::newRow("all contractions") << "we'll they've she's I'd you're"
                                      << QStringList{"we", "'ll", "Ġthey", "'ve", "Ġshe", "'s", "ĠI", "'d", "Ġyou", "'re"}
                                      << QList<int>{0, 2, 2, 5, 6, 10, 10, 13, 14, 17, 17, 19, 20, 21, 21, 23, 24, 27, 27, 30};
    // The contraction alternatives are lower case only: "'T" is punctuation then a letter.
    QTest::newRow("upper-case contraction") << "DON'T" << QStringList{"DON", "'", "T"} << QList<int>{0, 3, 3, 4, 4, 5};
    QTest::newRow("numbers") << "In 2023, 12345 people"
                             << QStringList{"In", "Ġ20", "23", ",", "Ġ123", "45", "Ġpeople"}
                             << QList<int>{0, 2, 3, 5, 5, 7, 7, 8, 9, 12, 12, 14, 15, 21};
    QTest::newRow("digits and punctuation") << "$3.50!!" << QStringList{"$", "3", ".", "50", "!!"}
                                            << QList<int>{0, 1, 1, 2, 2, 3, 3, 5, 5, 7};
    // Three spaces before "b": the last one goes with "b", the other two stand alone.
    QTest::newRow("multiple spaces") << "a   b" << QStringList{"a", "Ġ", "Ġ", "Ġb"} << QList<int>{0, 1, 2, 2, 3, 3, 4, 5};
    QTest::newRow("tab then space, trailing spaces")
        << "x\t y  " << QStringList{"x", "ĉ", "Ġy", "Ġ", "Ġ"} << QList<int>{0, 1, 1, 2, 3, 4, 5, 5, 6, 6};
    QTest::newRow("newline") << "Hello\nworld" << QStringList{"Hello", "Ċ", "world"} << QList<int>{0, 5, 5, 6, 6, 11};
    // Before a word, "\n\n" splits in two ("\s+(?!\S)" backs off by one); at the end it stays whole.
    QTest::newRow("blank line") << "a\n\nb" << QStringList{"a", "Ċ", "Ċ", "b"} << QList<int>{0, 1, 1, 2, 2, 3, 3, 4};
    QTest::newRow("trailing newlines") << "end\n\n" << QStringList{"end", "ĊĊ"} << QList<int>{0, 3, 3, 5};
    QTest::newRow("latin accents") << "naïve café" << QStringList{"na", "Ã¯ve", "ĠcafÃ©"} << QList<int>{0, 2, 2, 5, 6, 10};
    QTest::newRow("umlaut") << "Zürich" << QStringList{"Z", "Ã¼", "rich"} << QList<int>{0, 1, 1, 2, 2, 6};
    // Each token holding bytes of a character spans that whole character.
    QTest::newRow("cjk") << "日本" << QStringList{"æĹ", "¥", "æľ", "¬"} << QList<int>{0, 1, 0, 1, 1, 2, 1, 2};
    QTest::newRow("space before cjk") << " 日本" << QStringList{"Ġæ", "Ĺ", "¥", "æľ", "¬"}
                                      << QList<int>{1, 2, 1, 2, 1, 2, 2, 3, 2, 3};
    QTest::newRow("emoji outside the BMP") << "😀" << QStringList{"ðŁĺ", "Ģ"} << QList<int>{0, 1, 0, 1};
}

void TestTokenizer::realTokens()
{
    REQUIRE_ROBERTA();
    QFETCH(QString, text);
    QFETCH(QStringList, tokens);
    QFETCH(QList<int>, offsets);
    const Encoding encoding = roberta().encodeText(text.toStdString());
    const std::vector<int64_t> expectedIds = robertaIds(tokens);
    QVERIFY2(encoding.ids == expectedIds,
             qPrintable(QStringLiteral("got %1, expected %2").arg(describe(encoding.ids), describe(expectedIds))));
    QVERIFY2(encoding.offsets == pairsOf(offsets),
             qPrintable(QStringLiteral("got %1, expected %2")
                            .arg(describe(encoding.offsets), describe(pairsOf(offsets)))));
    QCOMPARE(encoding.sequenceIds, std::vector<int>(static_cast<std::size_t>(tokens.size()), 0));
}

// <mask> has lstrip: the whitespace before it belongs to it, so no space token precedes it; its
// span is the "<mask>" text itself.
void TestTokenizer::maskAbsorbsPrecedingWhitespace_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("tokens");
    QTest::addColumn<QList<int>>("offsets");

    QTest::newRow("one space") << "Hello <mask>!" << QStringList{"Hello", "<mask>", "!"} << QList<int>{0, 5, 6, 12, 12, 13};
    QTest::newRow("two spaces, space after kept") << "Hello  <mask> world" << QStringList{"Hello", "<mask>", "Ġworld"}
                                                  << QList<int>{0, 5, 7, 13, 14, 19};
    QTest::newRow("newline before") << "x\n<mask>" << QStringList{"x", "<mask>"} << QList<int>{0, 1, 2, 8};
    QTest::newRow("alone") << "<mask>" << QStringList{"<mask>"} << QList<int>{0, 6};
    QTest::newRow("leading space") << " <mask>" << QStringList{"<mask>"} << QList<int>{1, 7};
    QTest::newRow("two masks") << "<mask> <mask>" << QStringList{"<mask>", "<mask>"} << QList<int>{0, 6, 7, 13};
    QTest::newRow("glued to words") << "a<mask>b" << QStringList{"a", "<mask>", "b"} << QList<int>{0, 1, 1, 7, 7, 8};
    QTest::newRow("after non-ascii") << "日 <mask>." << QStringList{"æĹ", "¥", "<mask>", "."} << QList<int>{0, 1, 0, 1, 2, 8, 8, 9};
}

void TestTokenizer::maskAbsorbsPrecedingWhitespace()
{
    REQUIRE_ROBERTA();
    QFETCH(QString, text);
    QFETCH(QStringList, tokens);
    QFETCH(QList<int>, offsets);
    QCOMPARE(roberta().maskId(), int64_t{50264});
    QCOMPARE(robertaId("<mask>"), int64_t{50264});
    const Encoding encoding = roberta().encodeText(text.toStdString());
    const std::vector<int64_t> expectedIds = robertaIds(tokens);
    QVERIFY2(encoding.ids == expectedIds,
             qPrintable(QStringLiteral("got %1, expected %2").arg(describe(encoding.ids), describe(expectedIds))));
    QVERIFY2(encoding.offsets == pairsOf(offsets),
             qPrintable(QStringLiteral("got %1, expected %2")
                            .arg(describe(encoding.offsets), describe(pairsOf(offsets)))));
    QCOMPARE(encoding.sequenceIds, std::vector<int>(static_cast<std::size_t>(tokens.size()), 0));

    // With the sequence's special tokens around it, the text's tokens are unchanged.
    const Encoding full = roberta().encode(text.toStdString());
    QCOMPARE(full.ids.front(), roberta().bosId());
    QCOMPARE(full.ids.back(), roberta().eosId());
    QCOMPARE(std::vector<int64_t>(full.ids.begin() + 1, full.ids.end() - 1), expectedIds);
}

void TestTokenizer::pairEncoding()
{
    REQUIRE_ROBERTA();
    const Encoding encoding = roberta().encodePair("Who wrote it?", "Paris is nice.");
    const std::vector<int64_t> expectedIds =
        robertaIds({"<s>", "Who", "Ġwrote", "Ġit", "?", "</s>", "</s>", "Paris", "Ġis", "Ġnice", ".", "</s>"});
    QCOMPARE(encoding.ids, expectedIds);
    QCOMPARE(encoding.sequenceIds, (std::vector<int>{-1, 0, 0, 0, 0, -1, -1, 1, 1, 1, 1, -1}));
    // Second-text offsets count from the start of the second text.
    const std::vector<std::pair<int, int>> expectedOffsets = {{0, 0}, {0, 3},  {4, 9}, {10, 12},
                                                              {12, 13}, {0, 0}, {0, 0}, {0, 5},
                                                              {6, 8}, {9, 13}, {13, 14}, {0, 0}};
    QCOMPARE(encoding.offsets, expectedOffsets);
}

// Offsets recomputed from the tokens' own bytes: a token covers the code points its bytes fall in,
// minus its leading and trailing spaces (but never past its own other end).
void TestTokenizer::offsetsFollowTokenBytes_data()
{
    QTest::addColumn<QString>("text");
    QTest::newRow("prose") << "The quick brown fox jumps over the lazy dog, doesn't it?";
    QTest::newRow("accents") << "Ünïcödé naïve café, Zürich, São Paulo";
    QTest::newRow("cjk and emoji") << "日本語のテキスト 😀👍🏽 ok";
    QTest::newRow("mixed whitespace") << "a \t b\n\n c   d  \u00a0 e\u3000f";
    QTest::newRow("combining marks") << "e\u0301 and n\u0303";
    QTest::newRow("arabic digits and fractions") << "٣ ½ 3½ x²";
}

void TestTokenizer::offsetsFollowTokenBytes()
{
    REQUIRE_ROBERTA();
    QFETCH(QString, text);
    const std::string utf8 = text.toStdString();
    // Code point index of every byte, from Qt's decoding.
    std::vector<int> codePointOfByte;
    const std::u32string cps = codePoints(utf8);
    for (std::size_t i = 0; i < cps.size(); ++i)
        codePointOfByte.insert(codePointOfByte.end(), utf8Of(cps.substr(i, 1)).size(), static_cast<int>(i));
    QCOMPARE(codePointOfByte.size(), utf8.size());

    const Encoding encoding = roberta().encodeText(utf8);
    std::size_t bytePos = 0;
    for (std::size_t t = 0; t < encoding.ids.size(); ++t) {
        const std::string bytes = roberta().tokenText(encoding.ids[t]);
        QVERIFY(!bytes.empty());
        QVERIFY(bytePos + bytes.size() <= utf8.size());
        QCOMPARE(utf8.substr(bytePos, bytes.size()), bytes);
        int start = codePointOfByte[bytePos];
        int end = codePointOfByte[bytePos + bytes.size() - 1] + 1;
        int leading = 0;
        while (leading < static_cast<int>(bytes.size()) && bytes[static_cast<std::size_t>(leading)] == ' ')
            ++leading;
        int trailing = 0;
        while (trailing < static_cast<int>(bytes.size()) && bytes[bytes.size() - 1 - static_cast<std::size_t>(trailing)] == ' ')
            ++trailing;
        if (leading > 0)
            start = std::min(start + leading, end);
        if (trailing > 0 && end >= trailing)
            end = std::max(end - trailing, start);
        QVERIFY2(encoding.offsets[t] == std::make_pair(start, end),
                 qPrintable(QStringLiteral("token %1 (%2): got [%3,%4], expected [%5,%6]")
                                .arg(t)
                                .arg(QString::fromStdString(roberta().tokenString(encoding.ids[t])))
                                .arg(encoding.offsets[t].first)
                                .arg(encoding.offsets[t].second)
                                .arg(start)
                                .arg(end)));
        bytePos += bytes.size();
    }
    QCOMPARE(bytePos, utf8.size());
}

// Tokens whose spans overlap (parts of one character) are read together; each such group decodes,
// without the spaces BPE folded into it, to exactly the text its offsets select.
void TestTokenizer::wordTokensMatchTheirText_data()
{
    QTest::addColumn<QString>("text");
    QTest::newRow("ascii") << "Hello world! It's 42 degrees -- isn't it?";
    QTest::newRow("latin") << "Crème brûlée à la française, über-cool Ærøskøbing";
    QTest::newRow("spaces") << "  two leading,   three inside, two trailing  ";
    QTest::newRow("cjk") << "東京は 日本の首都です";
    QTest::newRow("emoji") << "I 😀 it 👍🏽!";
}

void TestTokenizer::wordTokensMatchTheirText()
{
    REQUIRE_ROBERTA();
    QFETCH(QString, text);
    const std::string utf8 = text.toStdString();
    const std::u32string cps = codePoints(utf8);
    const Encoding encoding = roberta().encodeText(utf8);
    std::size_t t = 0;
    while (t < encoding.ids.size()) {
        std::vector<int64_t> group = {encoding.ids[t]};
        int start = encoding.offsets[t].first;
        int end = encoding.offsets[t].second;
        std::size_t next = t + 1;
        while (next < encoding.ids.size() && encoding.offsets[next].first < end) {
            group.push_back(encoding.ids[next]);
            end = std::max(end, encoding.offsets[next].second);
            ++next;
        }
        std::string decoded = roberta().decode(group);
        const std::size_t first = decoded.find_first_not_of(' ');
        decoded = first == std::string::npos ? std::string() : decoded.substr(first, decoded.find_last_not_of(' ') - first + 1);
        QVERIFY(start >= 0 && start <= end && end <= static_cast<int>(cps.size()));
        const std::string selected = utf8Of(cps.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(end - start)));
        QVERIFY2(decoded == selected, qPrintable(QStringLiteral("tokens from %1: decoded \"%2\", offsets [%3,%4] select \"%5\"")
                                                     .arg(t)
                                                     .arg(QString::fromStdString(decoded))
                                                     .arg(start)
                                                     .arg(end)
                                                     .arg(QString::fromStdString(selected))));
        t = next;
    }
}

void TestTokenizer::decodeRoundTrip()
{
    REQUIRE_ROBERTA();
    const std::string prose =
        "The Eiffel Tower, completed in 1889, is 324 metres (1,063 ft) tall.\n"
        "It was the world's tallest man-made structure for 41 years \u2014 until 1930. Gustave Eiffel's "
        "company built it; visitors still say \"C'est magnifique!\" and \u00abtr\u00e8s belle\u00bb.\n\n"
        "  Indented line\twith a tab, \u65e5\u672c\u8a9e, and an emoji \U0001F600 at the end.  ";
    const Encoding encoding = roberta().encode(prose);
    QCOMPARE(roberta().decode(encoding.ids), prose);
    QCOMPARE(roberta().decode(encoding.ids, false), "<s>" + prose + "</s>");
    // Ids that end in the middle of a character decode to those bytes as they are.
    const Encoding cjk = roberta().encodeText("\u65e5");
    QVERIFY(cjk.ids.size() >= 2);
    QCOMPARE(roberta().decode({cjk.ids.front()}) + roberta().decode(std::vector<int64_t>(cjk.ids.begin() + 1, cjk.ids.end())),
             std::string("\u65e5"));
}

void TestTokenizer::tokenStringsAndSpecialIds()
{
    REQUIRE_ROBERTA();
    const BpeTokenizer& tokenizer = roberta();
    QCOMPARE(tokenizer.bosId(), robertaId("<s>"));
    QCOMPARE(tokenizer.eosId(), robertaId("</s>"));
    QCOMPARE(tokenizer.padId(), robertaId("<pad>"));
    QCOMPARE(tokenizer.unkId(), robertaId("<unk>"));
    QCOMPARE(tokenizer.maskId(), robertaId("<mask>"));
    QCOMPARE(tokenizer.vocabSize(), static_cast<int64_t>(robertaVocab().size()));
    QCOMPARE(tokenizer.tokenString(232), std::string("Ġworld"));
    QCOMPARE(tokenizer.tokenText(232), std::string(" world"));
    QCOMPARE(tokenizer.tokenString(robertaId("Ċ")), std::string("Ċ"));
    QCOMPARE(tokenizer.tokenText(robertaId("Ċ")), std::string("\n"));
    QCOMPARE(tokenizer.tokenText(tokenizer.maskId()), std::string("<mask>"));
    QCOMPARE(tokenizer.decode({tokenizer.bosId(), 31414, tokenizer.maskId(), 232, tokenizer.eosId()}), std::string("Hello world"));
}

void TestTokenizer::concurrentEncoding()
{
    REQUIRE_ROBERTA();
    const std::vector<std::string> texts = {"Hello world!", "The quick brown fox jumps over the lazy dog.",
                                            "naïve café 日本 😀", "don't stop <mask> now"};
    std::vector<std::vector<int64_t>> expected;
    for (const std::string& text : texts)
        expected.push_back(roberta().encode(text).ids);
    std::vector<int> mismatches(2, 0);
    std::vector<std::thread> threads;
    for (int worker = 0; worker < 2; ++worker) {
        threads.emplace_back([&, worker] {
            for (int round = 0; round < 300; ++round) {
                const std::size_t which = static_cast<std::size_t>(round + worker) % texts.size();
                // Fresh words each round so the cache is written while the other thread reads it.
                const std::string extra = " w" + std::to_string(worker) + "x" + std::to_string(round);
                if (roberta().encode(texts[which]).ids != expected[which])
                    ++mismatches[static_cast<std::size_t>(worker)];
                if (roberta().encodeText(extra).ids.empty())
                    ++mismatches[static_cast<std::size_t>(worker)];
            }
        });
    }
    for (std::thread& thread : threads)
        thread.join();
    QCOMPARE(mismatches, (std::vector<int>{0, 0}));
}

void TestTokenizer::longText()
{
    REQUIRE_ROBERTA();
    std::string sentence = "Hello world! ";
    std::string text;
    while (text.size() + sentence.size() <= 1000000)
        text += sentence;
    const Encoding encoding = roberta().encodeText(text);
    // "Hello world! " repeats as Hello/ĠHello, Ġworld, ! and ends with one "Ġ".
    const std::size_t repeats = text.size() / sentence.size();
    QCOMPARE(encoding.ids.size(), repeats * 3 + 1);
    QCOMPARE(encoding.ids[3], robertaId("ĠHello"));
    QCOMPARE(encoding.offsets.back(), std::make_pair(static_cast<int>(text.size()), static_cast<int>(text.size())));

    const std::string tooLong(10u * 1024u * 1024u + 1u, 'a');
    QVERIFY_THROWS_EXCEPTION(Error, roberta().encodeText(tooLong));
    QVERIFY_THROWS_EXCEPTION(Error, roberta().encodePair("question", tooLong));
}

// ---- without the shared data ---------------------------------------------------------------------

void TestTokenizer::codePointHelpers_data()
{
    QTest::addColumn<QByteArray>("utf8");
    QTest::addColumn<int>("count");
    QTest::addColumn<int>("codePoint");
    QTest::addColumn<int>("byteOffset");

    QTest::newRow("empty") << QByteArray("") << 0 << 0 << 0;
    QTest::newRow("empty, past the end") << QByteArray("") << 0 << 3 << 0;
    QTest::newRow("ascii") << QByteArray("abc") << 3 << 2 << 2;
    QTest::newRow("ascii, past the end") << QByteArray("abc") << 3 << 10 << 3;
    QTest::newRow("negative index") << QByteArray("abc") << 3 << -1 << 0;
    QTest::newRow("two-byte e acute") << QByteArray("caf\xc3\xa9!") << 5 << 4 << 5;
    QTest::newRow("three-byte cjk") << QByteArray("\xe6\x97\xa5\xe6\x9c\xac") << 2 << 1 << 3;
    QTest::newRow("four-byte emoji") << QByteArray("\xf0\x9f\x98\x80x") << 2 << 1 << 4;
    QTest::newRow("invalid bytes count one each") << QByteArray("\xff\xfe" "a") << 3 << 2 << 2;
    QTest::newRow("truncated sequence") << QByteArray("a\xe6\x97") << 3 << 2 << 2;
    QTest::newRow("stray continuation byte") << QByteArray("\x80\xc3\xa9") << 2 << 1 << 1;
}

void TestTokenizer::codePointHelpers()
{
    QFETCH(QByteArray, utf8);
    QFETCH(int, count);
    QFETCH(int, codePoint);
    QFETCH(int, byteOffset);
    const std::string text = utf8.toStdString();
    QCOMPARE(codePointCount(text), count);
    QCOMPARE(byteOffsetOfCodePoint(text, codePoint), static_cast<std::size_t>(byteOffset));
}

void TestTokenizer::byteAlphabetAnchors()
{
    // The test's byte alphabet against symbols known from GPT-2 vocabularies.
    QCOMPARE(byteSymbol(' '), std::string("Ġ"));
    QCOMPARE(byteSymbol('\n'), std::string("Ċ"));
    QCOMPARE(byteSymbol('\t'), std::string("ĉ"));
    QCOMPARE(byteSymbol('a'), std::string("a"));
    QCOMPARE(byteSymbol(0xE9), std::string("é"));
    QCOMPARE(byteSymbol(0xAD), std::string("Ń"));
}

// Merge ranks: e r(1) l o(2) lo w(3) Ġ low(4) low er(5) n e(6) ne w(7) e s(8) es t(9) new est(10) Ċ Ġ(11).
void TestTokenizer::tinyVocabMerges_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("tokens");

    // e r, l o, lo w, low er.
    QTest::newRow("lower") << "lower" << QStringList{"lower"};
    // n e, ne w, e s, es t, new est.
    QTest::newRow("newest") << "newest" << QStringList{"newest"};
    // e r comes first and leaves "new" + "er", which never merge.
    QTest::newRow("newer") << "newer" << QStringList{"new", "er"};
    // After "low" forms, Ġ low (rank 4) beats low er (rank 5), and "Ġlow" + "er" never merge.
    QTest::newRow("space lower") << " lower" << QStringList{"Ġlow", "er"};
    QTest::newRow("lowest") << "lowest" << QStringList{"low", "est"};
    QTest::newRow("slow") << "slow" << QStringList{"s", "low"};
    // "x y" was skipped at load time since "xy" is not in the vocabulary.
    QTest::newRow("unusable merge") << "xy" << QStringList{"x", "y"};
    QTest::newRow("space newest") << " newest" << QStringList{"Ġ", "newest"};
    QTest::newRow("mask") << "lower <mask>" << QStringList{"lower", "<mask>"};
}

void TestTokenizer::tinyVocabMerges()
{
    QFETCH(QString, text);
    QFETCH(QStringList, tokens);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto tokenizer = loadTiny(dir);
    std::vector<int64_t> expected;
    for (const QString& token : tokens)
        expected.push_back(tinyId(token.toStdString()));
    const Encoding encoding = tokenizer->encodeText(text.toStdString());
    QVERIFY2(encoding.ids == expected,
             qPrintable(QStringLiteral("got %1, expected %2").arg(describe(encoding.ids), describe(expected))));
    // Decoding gives the text back, except for the space that <mask> absorbs.
    if (!text.contains("<mask>"))
        QCOMPARE(tokenizer->decode(encoding.ids, false), text.toStdString());
}

void TestTokenizer::tinyVocabOffsets()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto tokenizer = loadTiny(dir);
    const Encoding encoding = tokenizer->encode("lower newest newer");
    const std::vector<int64_t> expectedIds = {0,
                                              tinyId("lower"),
                                              tinyId("\xC4\xA0"),
                                              tinyId("newest"),
                                              tinyId("\xC4\xA0"),
                                              tinyId("new"),
                                              tinyId("er"),
                                              2};
    QCOMPARE(encoding.ids, expectedIds);
    // A lone "Ġ" token keeps an empty span where its space ends.
    const std::vector<std::pair<int, int>> expectedOffsets = {{0, 0}, {0, 5},   {6, 6},   {6, 12},
                                                              {13, 13}, {13, 16}, {16, 18}, {0, 0}};
    QCOMPARE(encoding.offsets, expectedOffsets);
    QCOMPARE(tokenizer->vocabSize(), int64_t{kTinyMaskId + 1});
    QCOMPARE(tokenizer->maskId(), int64_t{kTinyMaskId});
    QCOMPARE(tokenizer->padId(), int64_t{1});
    QCOMPARE(tokenizer->unkId(), int64_t{3});

    // "\n  b": the whitespace run leaves its last space to "b", so "\n " merges into "ĊĠ", whose
    // trailing space is trimmed from its span; the lone "Ġ" before "b" gets an empty span.
    const Encoding trailing = tokenizer->encodeText("a\n  b");
    QCOMPARE(trailing.ids, (std::vector<int64_t>{tinyId("a"), tinyId("\xC4\x8A\xC4\xA0"), tinyId("\xC4\xA0"), tinyId("b")}));
    QCOMPARE(trailing.offsets, (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {4, 4}, {4, 5}}));
}

void TestTokenizer::missingByteSymbolBecomesUnk()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto tokenizer = loadTiny(dir, true, 'z');
    const Encoding encoding = tokenizer->encodeText("azb lazy");
    const std::vector<int64_t> expected = {tinyId("a"), 3, tinyId("b"), tinyId("\xC4\xA0"), tinyId("l"), tinyId("a"), 3, tinyId("y")};
    QCOMPARE(encoding.ids, expected);
    const std::vector<std::pair<int, int>> offsets = {{0, 1}, {1, 2}, {2, 3}, {4, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 8}};
    QCOMPARE(encoding.offsets, offsets);
}

void TestTokenizer::tokenizerJsonMatchesVocabAndMerges_data()
{
    QTest::addColumn<bool>("mergesAsPairs");
    QTest::addColumn<bool>("versionLine");
    QTest::addColumn<QString>("newline");
    QTest::newRow("merges as strings") << false << true << "\n";
    QTest::newRow("merges as pairs") << true << true << "\n";
    QTest::newRow("merges.txt without version line, CRLF") << false << false << "\r\n";
}

void TestTokenizer::tokenizerJsonMatchesVocabAndMerges()
{
    QFETCH(bool, mergesAsPairs);
    QFETCH(bool, versionLine);
    QFETCH(QString, newline);
    QTemporaryDir filesDir;
    QTemporaryDir jsonDir;
    QVERIFY(filesDir.isValid() && jsonDir.isValid());
    const std::string files = filesDir.path().toStdString();
    writeFile(files + "/vocab.json", tinyVocab().dump());
    writeFile(files + "/merges.txt", tinyMergesTxt(versionLine, newline.toStdString()));
    writeFile(jsonDir.path().toStdString() + "/tokenizer.json", tinyTokenizerJson(mergesAsPairs).dump());
    const auto fromFiles = BpeTokenizer::loadFromDirectory(files);
    const auto fromJson = BpeTokenizer::loadFromDirectory(jsonDir.path().toStdString());
    QCOMPARE(fromJson->maskId(), int64_t{kTinyMaskId});
    QCOMPARE(fromJson->vocabSize(), fromFiles->vocabSize());
    for (const std::string text : {"lower newest newer", " lower <mask>", "slow xy lowest", "h\u00e9llo \u65e5\u672c  "}) {
        const Encoding a = fromFiles->encodePair(text, "newer lower");
        const Encoding b = fromJson->encodePair(text, "newer lower");
        QCOMPARE(b.ids, a.ids);
        QCOMPARE(b.offsets, a.offsets);
        QCOMPARE(b.sequenceIds, a.sequenceIds);
        QCOMPARE(fromJson->decode(b.ids), fromFiles->decode(a.ids));
    }
    // Both really merged: "newest" is one token.
    QCOMPARE(fromJson->encodeText("newest").ids, (std::vector<int64_t>{tinyId("newest")}));
}

// Each row writes some files into an empty folder and loads it; the error must name `culprit`.
void TestTokenizer::loadErrors_data()
{
    QTest::addColumn<QByteArray>("vocab");
    QTest::addColumn<QByteArray>("merges");
    QTest::addColumn<QByteArray>("tokenizerJson");
    QTest::addColumn<QString>("culprit");
    QTest::addColumn<QString>("phrase");

    const QByteArray goodVocab = QByteArray::fromStdString(tinyVocab().dump());
    const QByteArray goodMerges = QByteArray::fromStdString(tinyMergesTxt());
    const QByteArray none;

    QTest::newRow("empty folder") << none << none << none << "" << "No tokenizer in";
    QTest::newRow("vocab without merges") << goodVocab << none << none << "" << "expected tokenizer.json or vocab.json and merges.txt";
    QTest::newRow("vocab is not JSON") << QByteArray("{\"a\": 1,") << goodMerges << none << "vocab.json" << "byte";
    QTest::newRow("vocab is a list") << QByteArray("[1, 2]") << goodMerges << none << "vocab.json" << "object";
    QTest::newRow("id is a string") << QByteArray("{\"a\": \"1\"}") << goodMerges << none << "vocab.json" << "\"a\"";
    QTest::newRow("id is negative") << QByteArray("{\"a\": -1}") << goodMerges << none << "vocab.json" << "-1";
    QTest::newRow("id is fractional") << QByteArray("{\"a\": 1.5}") << goodMerges << none << "vocab.json" << "1.5";
    QTest::newRow("id beyond ten million") << QByteArray("{\"a\": 10000000}") << goodMerges << none << "vocab.json" << "10000000";
    QTest::newRow("merge of three symbols") << goodVocab << QByteArray("#version: 0.2\nl o\na b c\n") << none << "merges.txt" << "line 3";
    QTest::newRow("merge of one symbol") << goodVocab << QByteArray("#version: 0.2\nl o\ne r\nlow\n") << none << "merges.txt" << "line 4";
    QTest::newRow("merge with double space") << goodVocab << QByteArray("l  o\n") << none << "merges.txt" << "line 1";
    QTest::newRow("no <mask>") << QByteArray::fromStdString(tinyVocab(false).dump()) << goodMerges << none << "vocab.json" << "<mask>";
    QTest::newRow("no <pad>") << QByteArray::fromStdString(tinyVocab(true, -1, "<pad>").dump()) << goodMerges << none
                              << "vocab.json" << "<pad>";

    nlohmann::json wordPiece = tinyTokenizerJson(false);
    wordPiece["model"]["type"] = "WordPiece";
    QTest::newRow("WordPiece model") << none << none << QByteArray::fromStdString(wordPiece.dump()) << "tokenizer.json" << "WordPiece";
    QTest::newRow("tokenizer.json is not JSON") << none << none << QByteArray("{\"model\": ") << "tokenizer.json" << "byte";
    nlohmann::json badPair = tinyTokenizerJson(true);
    badPair["model"]["merges"].push_back(nlohmann::json::array({"l", 5}));
    QTest::newRow("merge pair with a number") << none << none << QByteArray::fromStdString(badPair.dump()) << "tokenizer.json" << "merges";
    nlohmann::json badString = tinyTokenizerJson(false);
    badString["model"]["merges"].push_back("a b c");
    QTest::newRow("merge string of three symbols") << none << none << QByteArray::fromStdString(badString.dump()) << "tokenizer.json" << "merges";
    nlohmann::json noBos = tinyTokenizerJson(false);
    noBos["model"]["vocab"].erase("<s>");
    noBos["added_tokens"].erase(0);
    QTest::newRow("no <s> anywhere") << none << none << QByteArray::fromStdString(noBos.dump()) << "tokenizer.json" << "<s>";
    nlohmann::json listVocab = tinyTokenizerJson(false);
    listVocab["model"]["vocab"] = nlohmann::json::array({"a", "b"});
    QTest::newRow("model.vocab is a list") << none << none << QByteArray::fromStdString(listVocab.dump()) << "tokenizer.json" << "vocab";
    nlohmann::json negativeAdded = tinyTokenizerJson(false);
    negativeAdded["added_tokens"][4]["id"] = -3;
    QTest::newRow("added token with negative id") << none << none << QByteArray::fromStdString(negativeAdded.dump()) << "tokenizer.json" << "<mask>";
    nlohmann::json metaspace = tinyTokenizerJson(false);
    metaspace["pre_tokenizer"] = {{"type", "Metaspace"}};
    QTest::newRow("not byte-level") << none << none << QByteArray::fromStdString(metaspace.dump()) << "tokenizer.json" << "byte-level";
}

void TestTokenizer::loadErrors()
{
    QFETCH(QByteArray, vocab);
    QFETCH(QByteArray, merges);
    QFETCH(QByteArray, tokenizerJson);
    QFETCH(QString, culprit);
    QFETCH(QString, phrase);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string base = dir.path().toStdString();
    if (!vocab.isNull())
        writeFile(base + "/vocab.json", vocab.toStdString());
    if (!merges.isNull())
        writeFile(base + "/merges.txt", merges.toStdString());
    if (!tokenizerJson.isNull())
        writeFile(base + "/tokenizer.json", tokenizerJson.toStdString());
    const std::string named = culprit.isEmpty() ? base : base + "/" + culprit.toStdString();
    try {
        BpeTokenizer::loadFromDirectory(base);
        QFAIL("loading succeeded");
    } catch (const Error& e) {
        const std::string message = e.what();
        QVERIFY2(message.find(named) != std::string::npos, e.what());
        QVERIFY2(message.find(phrase.toStdString()) != std::string::npos, e.what());
    }
}

void TestTokenizer::decodeRejectsUnknownId()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto tokenizer = loadTiny(dir);
    QVERIFY_THROWS_EXCEPTION(Error, tokenizer->decode({kTinyMaskId + 1}));
    QVERIFY_THROWS_EXCEPTION(Error, tokenizer->decode({-1}));
    QVERIFY_THROWS_EXCEPTION(Error, tokenizer->tokenString(100000));
    QCOMPARE(tokenizer->decode({tinyId("low"), tinyId("er")}), std::string("lower"));
}

QTEST_GUILESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
