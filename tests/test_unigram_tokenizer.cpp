// Unigram SentencePiece tokenizer (XLM-RoBERTa). Against Hugging Face's own tokenizers library:
// tests/data/unigram/golden.json holds the ids and offsets that the npm tokenizers package gave for
// every text and pair of strings.json with the two tokenizer.json layouts and a variant with other
// options (regenerate.sh); the tokenizer must reproduce all of them from tokenizer.json (current and
// legacy converter output, the variant), from sentencepiece.bpe.model alone (read as today's
// converter writes it, so the current layout's results) and from both files (tokenizer.json wins).
// Then decoding, malformed UTF-8, and every loading error as one sentence naming its file, with
// corrupted precompiled_charsmaps refused or harmless, never a crash.
#include <QtTest>

#include <QFile>
#include <QTemporaryDir>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "text/bpe_tokenizer.h"
#include "text/tokenizer.h"
#include "text/unigram_tokenizer.h"

using namespace scalescope;

namespace {

const std::string kData = SCALESCOPE_UNIGRAM_DATA;

std::string readFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, const std::string& content)
{
    std::ofstream out(path, std::ios::binary);
    out << content;
}

const nlohmann::json& strings()
{
    static const nlohmann::json root = nlohmann::json::parse(readFile(kData + "/strings.json"));
    return root;
}

const nlohmann::json& golden()
{
    static const nlohmann::json root = nlohmann::json::parse(readFile(kData + "/golden.json"));
    return root;
}

nlohmann::json encodingJson(const Encoding& encoding)
{
    nlohmann::json offsets = nlohmann::json::array();
    for (const auto& [start, end] : encoding.offsets)
        offsets.push_back({start, end});
    return {{"ids", encoding.ids}, {"offsets", offsets}};
}

QString errorOf(const std::function<void()>& action)
{
    try {
        action();
    } catch (const Error& e) {
        return QString::fromUtf8(e.what());
    }
    return QString();
}

// One sentence: ends with a full stop, has no line break.
bool isOneSentence(const QString& message)
{
    return message.endsWith('.') && !message.contains('\n');
}

// A protobuf length-delimited field or varint field, for hand-made ModelProtos.
std::string varint(uint64_t value)
{
    std::string out;
    do {
        out += static_cast<char>((value & 0x7F) | (value >= 0x80 ? 0x80 : 0));
        value >>= 7;
    } while (value != 0);
    return out;
}
std::string bytesField(int number, const std::string& content)
{
    return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(content.size()) + content;
}
std::string piece(const std::string& text, float score, int type)
{
    std::string scoreBytes(4, '\0');
    std::memcpy(scoreBytes.data(), &score, 4);
    return bytesField(1, bytesField(1, text) + varint(2 << 3 | 5) + scoreBytes + varint(3 << 3) + varint(type));
}

// A SentencePiece model of six pieces, no normalization rules: <unk> <s> </s> ▁ a b.
std::string tinyModel(int firstPieceType = 2)
{
    return piece("<unk>", 0.0f, firstPieceType) + piece("<s>", 0.0f, 3) + piece("</s>", 0.0f, 3) +
           piece("\xE2\x96\x81", -1.0f, 1) + piece("a", -2.0f, 1) + piece("b", -2.5f, 1) +
           bytesField(2, varint(3 << 3) + varint(1) + varint(40 << 3) + varint(0));
}

// The real charsmap of the test model, to corrupt.
std::string testCharsmap()
{
    const nlohmann::json root = nlohmann::json::parse(readFile(kData + "/tokenizer.json"));
    return root["normalizer"]["normalizers"][0]["precompiled_charsmap"].get<std::string>();
}

std::string base64(const std::string& bytes)
{
    static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
        uint32_t group = static_cast<unsigned char>(bytes[i]) << 16;
        if (i + 1 < bytes.size())
            group |= static_cast<unsigned char>(bytes[i + 1]) << 8;
        if (i + 2 < bytes.size())
            group |= static_cast<unsigned char>(bytes[i + 2]);
        out += alphabet[(group >> 18) & 63];
        out += alphabet[(group >> 12) & 63];
        out += i + 1 < bytes.size() ? alphabet[(group >> 6) & 63] : '=';
        out += i + 2 < bytes.size() ? alphabet[group & 63] : '=';
    }
    return out;
}

// A darts-clone trie with the one key "a" whose leaf unit is `leaf`, in `units` units.
std::string handTrie(std::size_t units, uint32_t leaf, const std::string& strings)
{
    std::vector<uint32_t> array(units, 0);
    array[0] = 1u << 10;                       // root: children at offset 1
    array[0x60] = 0x61u | (1u << 8) | (1u << 10); // 'a' at 1 ^ 0x61, with a leaf at 0x60 ^ 1
    if (0x61 < units)
        array[0x61] = leaf;
    std::string blob(4, '\0');
    const uint32_t size = static_cast<uint32_t>(units * 4);
    std::memcpy(blob.data(), &size, 4);
    for (const uint32_t unit : array)
        blob.append(reinterpret_cast<const char*>(&unit), 4);
    return blob + strings;
}

} // namespace

class TestUnigramTokenizer : public QObject {
    Q_OBJECT

private slots:
    void matchesHuggingFace_data();
    void matchesHuggingFace();
    void xlmRobertaLayout();
    void decodesBack();
    void handMadeModel();
    void malformedTextStaysInBounds();
    void loadErrors_data();
    void loadErrors();
    void corruptedCharsmapNeverCrashes();
};

void TestUnigramTokenizer::matchesHuggingFace_data()
{
    QTest::addColumn<QStringList>("files");    // source file in tests/data/unigram -> name in the folder
    QTest::addColumn<QString>("goldenLayout"); // the golden.json layout it must reproduce
    QTest::newRow("tokenizer.json, current converter")
        << QStringList{"tokenizer.json", "tokenizer.json"} << "current";
    QTest::newRow("tokenizer.json, legacy converter")
        << QStringList{"tokenizer_legacy.json", "tokenizer.json"} << "legacy";
    // prepend_scheme "first", String patterns, <mask> matched after normalization with rstrip, a
    // non-special added token (tokenizer_variant.json, make_variant.py).
    QTest::newRow("tokenizer.json, other options")
        << QStringList{"tokenizer_variant.json", "tokenizer.json"} << "variant";
    QTest::newRow("sentencepiece.bpe.model alone")
        << QStringList{"sentencepiece.bpe.model", "sentencepiece.bpe.model"} << "current";
    // The legacy tokenizer.json beside the .model: the results are the legacy ones, so
    // tokenizer.json won (the .model alone gives the current layout's).
    QTest::newRow("both files")
        << QStringList{"sentencepiece.bpe.model", "sentencepiece.bpe.model", "tokenizer_legacy.json", "tokenizer.json"}
        << "legacy";
}

void TestUnigramTokenizer::matchesHuggingFace()
{
    QFETCH(QStringList, files);
    QFETCH(QString, goldenLayout);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    for (int i = 0; i + 1 < files.size(); i += 2)
        QVERIFY(QFile::copy(QString::fromStdString(kData) + "/" + files[i], dir.path() + "/" + files[i + 1]));
    const auto detected = loadTokenizer(dir.path().toStdString());
    QVERIFY(dynamic_cast<const UnigramTokenizer*>(detected.get()) != nullptr);
    const auto tokenizer = loadTokenizer(dir.path().toStdString(), TokenizerKind::Unigram);

    const nlohmann::json& expected = golden()["layouts"][goldenLayout.toStdString()];
    const nlohmann::json& singles = strings()["single"];
    const nlohmann::json& pairs = strings()["pairs"];
    QVERIFY(singles.size() >= 300 && pairs.size() >= 40);
    QCOMPARE(expected["single"].size(), singles.size());
    int mismatches = 0;
    QString first;
    const auto check = [&](const Encoding& ours, const nlohmann::json& theirs, const std::string& what) {
        const nlohmann::json got = encodingJson(ours);
        if (got == theirs)
            return;
        if (mismatches++ == 0)
            first = QString::fromStdString(what + "\n ours " + got.dump() + "\n HF   " + theirs.dump());
    };
    for (std::size_t i = 0; i < singles.size(); ++i) {
        const std::string text = singles[i].get<std::string>();
        check(tokenizer->encode(text), expected["single"][i], nlohmann::json(text).dump());
        check(detected->encode(text), expected["single"][i], nlohmann::json(text).dump());
    }
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        const std::string a = pairs[i][0].get<std::string>();
        const std::string b = pairs[i][1].get<std::string>();
        check(tokenizer->encodePair(a, b), expected["pairs"][i], nlohmann::json(pairs[i]).dump());
    }
    qInfo("%s: %d of %d encodings differ from Hugging Face tokenizers %s", qPrintable(goldenLayout), mismatches,
          static_cast<int>(2 * singles.size() + pairs.size()), golden()["tokenizers"].get<std::string>().c_str());
    QVERIFY2(mismatches == 0, qPrintable(first));
}

// The ids, sequence ids and type ids XLM-RoBERTa's model takes, read from the tokenizer.
void TestUnigramTokenizer::xlmRobertaLayout()
{
    const auto tokenizer = UnigramTokenizer::loadFromSentencePieceModel(kData + "/sentencepiece.bpe.model");
    QCOMPARE(tokenizer->clsId(), int64_t{0});
    QCOMPARE(tokenizer->padId(), int64_t{1});
    QCOMPARE(tokenizer->sepId(), int64_t{2});
    QCOMPARE(tokenizer->unkId(), int64_t{3});
    QCOMPARE(tokenizer->maskId(), tokenizer->vocabSize() - 1);
    QCOMPARE(tokenizer->maskToken(), std::string("<mask>"));
    QCOMPARE(tokenizer->tokenString(tokenizer->maskId()), std::string("<mask>"));
    QCOMPARE(tokenizer->specialTokensInSingle(), 2);
    QCOMPARE(tokenizer->specialTokensInPair(), 4);
    const Encoding first = tokenizer->encodeText("Hello <mask> world");
    const Encoding second = tokenizer->encodeText("Привет");
    const Encoding pair = tokenizer->assemblePair(first, second);
    QCOMPARE(pair.ids.size(), first.ids.size() + second.ids.size() + 4);
    QCOMPARE(pair.typeIds, std::vector<int64_t>(pair.ids.size(), 0));
    QCOMPARE(pair.sequenceIds.front(), -1);
    QCOMPARE(pair.sequenceIds[first.ids.size() + 1], -1);
    QCOMPARE(pair.sequenceIds[first.ids.size() + 2], -1);
    QCOMPARE(pair.sequenceIds[first.ids.size() + 3], 1);
    QCOMPARE(pair.sequenceIds.back(), -1);
    QVERIFY(std::find(first.ids.begin(), first.ids.end(), tokenizer->maskId()) != first.ids.end());
    QCOMPARE(encodingJson(tokenizer->encodePair("Hello <mask> world", "Привет")), encodingJson(pair));
}

// Text the model covers without <unk> decodes back to itself (spaces from "▁", the prefix dropped).
void TestUnigramTokenizer::decodesBack()
{
    const auto tokenizer = UnigramTokenizer::loadFromTokenizerJson(kData + "/tokenizer.json");
    for (const std::string text : {"The quick brown fox jumps over the lazy dog.", "Москва — столица России.",
                                   "東京タワーに行きましょう。", "Café au lait, crème brûlée"}) {
        const Encoding encoding = tokenizer->encode(text);
        QCOMPARE(tokenizer->decode(encoding.ids), text);
        QVERIFY(tokenizer->decode(encoding.ids, false).rfind("<s>", 0) == 0);
    }
    const Encoding word = tokenizer->encodeText("the");
    QCOMPARE(tokenizer->tokenText(word.ids.front()).front(), ' ');
}

// A ModelProto written here: the reader takes its pieces, scores and ids as fairseq lays them out.
void TestUnigramTokenizer::handMadeModel()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.path().toStdString() + "/sentencepiece.bpe.model";
    writeFile(path, tinyModel());
    const auto tokenizer = loadTokenizer(dir.path().toStdString());
    // fairseq: <s> <pad> </s> <unk>, then ▁ a b at 4 5 6, <mask> 7.
    QCOMPARE(tokenizer->vocabSize(), int64_t{8});
    QCOMPARE(tokenizer->tokenString(5), std::string("a"));
    QCOMPARE(tokenizer->maskId(), int64_t{7});
    // "ab c": ▁ a b, then ▁ and the unknown c (one character, so offsets 3..4).
    const Encoding encoding = tokenizer->encodeText("ab c");
    QCOMPARE(encoding.ids, (std::vector<int64_t>{4, 5, 6, 4, 3}));
    QCOMPARE(encoding.offsets, (std::vector<std::pair<int, int>>{{0, 1}, {0, 1}, {1, 2}, {2, 3}, {3, 4}}));
    // Unknown characters in a row are one <unk>.
    QCOMPARE(tokenizer->encodeText("cdé").ids, (std::vector<int64_t>{4, 3}));
    QCOMPARE(tokenizer->encodeText("").ids, std::vector<int64_t>{});
}

// Bytes that are not UTF-8 count one code point each; offsets stay inside the text.
void TestUnigramTokenizer::malformedTextStaysInBounds()
{
    const auto tokenizer = UnigramTokenizer::loadFromTokenizerJson(kData + "/tokenizer.json");
    const std::string texts[] = {std::string("a\xff\xfe b"), std::string("\xe6\x97"), std::string("x\xc3"),
                                 std::string("<mask\xc3\xa9>"), std::string(1, '\0') + "a",
                                 std::string("\xed\xa0\x80 surrogate"), std::string("\xc3 <mask>")};
    for (const std::string& text : texts) {
        const Encoding encoding = tokenizer->encodePair(text, text);
        QCOMPARE(encoding.offsets.size(), encoding.ids.size());
        QCOMPARE(encoding.typeIds.size(), encoding.ids.size());
        const int length = codePointCount(text);
        for (const auto& [start, end] : encoding.offsets)
            QVERIFY(start >= 0 && start <= end && end <= length);
    }
}

void TestUnigramTokenizer::loadErrors_data()
{
    QTest::addColumn<QByteArray>("tokenizerJson");
    QTest::addColumn<QByteArray>("model");
    QTest::addColumn<QString>("culprit");
    QTest::addColumn<QString>("phrase");
    const QByteArray none;
    const std::string current = readFile(kData + "/tokenizer.json");
    const auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
        nlohmann::json root = nlohmann::json::parse(current);
        edit(root);
        return QByteArray::fromStdString(root.dump());
    };
    const auto withCharsmap = [&](const std::string& blob) {
        return edited([&](nlohmann::json& j) { j["normalizer"]["normalizers"][0]["precompiled_charsmap"] = base64(blob); });
    };
    const std::string realModel = readFile(kData + "/sentencepiece.bpe.model");

    QTest::newRow("charsmap cut short") << edited([&](nlohmann::json& j) {
        std::string& blob = j["normalizer"]["normalizers"][0]["precompiled_charsmap"].get_ref<std::string&>();
        blob = blob.substr(0, 4000);
    }) << none << "tokenizer.json" << "runs past the end";
    QTest::newRow("charsmap shorter than its size") << withCharsmap("\x01\x00") << none << "tokenizer.json"
                                                    << "precompiled_charsmap";
    QTest::newRow("charsmap empty trie") << withCharsmap(std::string(4, '\0')) << none << "tokenizer.json" << "empty";
    QTest::newRow("charsmap not base64") << edited([](nlohmann::json& j) {
        j["normalizer"]["normalizers"][0]["precompiled_charsmap"] = "@@@@";
    }) << none << "tokenizer.json" << "base64";
    QTest::newRow("charsmap leaf past the trie") << withCharsmap(handTrie(0x61, 0, "x")) << none << "tokenizer.json"
                                                 << "past the end of the trie";
    QTest::newRow("charsmap value past the strings") << withCharsmap(handTrie(0x62, (1u << 31) | 50u, "x")) << none
                                                     << "tokenizer.json" << "outside its replacement strings";
    QTest::newRow("charsmap strings not UTF-8") << withCharsmap(handTrie(0x62, 1u << 31, "\xff")) << none
                                                << "tokenizer.json" << "UTF-8";
    QTest::newRow("no unk_id") << edited([](nlohmann::json& j) { j["model"]["unk_id"] = nullptr; }) << none
                               << "tokenizer.json" << "unk_id";
    QTest::newRow("unk_id out of range") << edited([](nlohmann::json& j) { j["model"]["unk_id"] = 100000; }) << none
                                         << "tokenizer.json" << "unk_id";
    QTest::newRow("no <unk> token") << edited([](nlohmann::json& j) {
        j["model"]["vocab"][3][0] = "<unknown>";
        j["added_tokens"].erase(3);
    }) << none << "tokenizer.json" << "<unk>";
    QTest::newRow("vocab entry not a pair") << edited([](nlohmann::json& j) { j["model"]["vocab"][5] = "a"; }) << none
                                            << "tokenizer.json" << "model.vocab entry 5";
    QTest::newRow("other normalizer") << edited([](nlohmann::json& j) { j["normalizer"] = {{"type", "NFKC"}}; }) << none
                                      << "tokenizer.json" << "normalizer";
    QTest::newRow("unsupported regex") << edited([](nlohmann::json& j) {
        j["normalizer"]["normalizers"][2]["pattern"]["Regex"] = "\\s+|x";
    }) << none << "tokenizer.json" << "regex";
    QTest::newRow("other pre-tokenizer") << edited([](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "ByteLevel"}}; })
                                         << none << "tokenizer.json" << "pre_tokenizer";
    QTest::newRow("other post-processor") << edited([](nlohmann::json& j) {
        j["post_processor"] = {{"type", "BertProcessing"}};
    }) << none << "tokenizer.json" << "post-processor";
    QTest::newRow("tokenizer.json truncated") << QByteArray::fromStdString(current.substr(0, 300)) << none
                                              << "tokenizer.json" << "byte";
    QTest::newRow("model is text") << none << QByteArray("this is not a protobuf message at all")
                                   << "sentencepiece.bpe.model" << "not a SentencePiece model";
    QTest::newRow("model cut short") << none << QByteArray::fromStdString(realModel.substr(0, 3000))
                                     << "sentencepiece.bpe.model" << "runs past the end";
    QTest::newRow("model empty") << none << QByteArray("") << "sentencepiece.bpe.model" << "no pieces";
    QTest::newRow("model without <unk>") << none << QByteArray::fromStdString(tinyModel(1))
                                         << "sentencepiece.bpe.model" << "<unk>";
}

void TestUnigramTokenizer::loadErrors()
{
    QFETCH(QByteArray, tokenizerJson);
    QFETCH(QByteArray, model);
    QFETCH(QString, culprit);
    QFETCH(QString, phrase);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string base = dir.path().toStdString();
    if (!tokenizerJson.isNull())
        writeFile(base + "/tokenizer.json", tokenizerJson.toStdString());
    if (!model.isNull())
        writeFile(base + "/sentencepiece.bpe.model", model.toStdString());
    const QString message = errorOf([&] { loadTokenizer(base, TokenizerKind::Unigram); });
    QVERIFY2(!message.isEmpty(), "loading succeeded");
    QVERIFY2(message.contains(QString::fromStdString(base + "/") + culprit), qPrintable(message));
    QVERIFY2(message.contains(phrase), qPrintable(message));
    QVERIFY2(isOneSentence(message), qPrintable(message));
}

// Bytes of the real charsmap overwritten one unit at a time: each tokenizer.json either is refused
// with one sentence or tokenizes the test strings with offsets inside them.
void TestUnigramTokenizer::corruptedCharsmapNeverCrashes()
{
    const std::string encoded = testCharsmap();
    nlohmann::json root = nlohmann::json::parse(readFile(kData + "/tokenizer.json"));
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.path().toStdString() + "/tokenizer.json";
    int refused = 0;
    int loaded = 0;
    for (std::size_t at = 8; at < 200 * 997; at += 997) {
        std::string blob = QByteArray::fromBase64(QByteArray::fromStdString(encoded)).toStdString();
        if (at + 4 > blob.size())
            break;
        const uint32_t noise = static_cast<uint32_t>(at * 2654435761u);
        std::memcpy(blob.data() + at, &noise, 4);
        root["normalizer"]["normalizers"][0]["precompiled_charsmap"] = base64(blob);
        writeFile(path, root.dump());
        try {
            const auto tokenizer = UnigramTokenizer::loadFromTokenizerJson(path);
            ++loaded;
            for (std::size_t i = 0; i < strings()["single"].size(); i += 7) {
                const std::string text = strings()["single"][i].get<std::string>();
                const Encoding encoding = tokenizer->encode(text);
                for (const auto& [start, end] : encoding.offsets)
                    QVERIFY(start >= 0 && start <= end && end <= codePointCount(text));
            }
        } catch (const Error& e) {
            ++refused;
            QVERIFY2(isOneSentence(QString::fromUtf8(e.what())), e.what());
        }
    }
    qInfo("corrupted charsmaps: %d refused, %d loaded and harmless", refused, loaded);
    QVERIFY(loaded + refused > 100);
}

QTEST_GUILESS_MAIN(TestUnigramTokenizer)
#include "test_unigram_tokenizer.moc"
