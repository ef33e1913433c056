// WordPiece tokenizer (BERT). Against Hugging Face's own tokenizers library: the expectations in
// tests/data/wordpiece were written by make_expectations.mjs with the real bert-base-uncased and
// bert-base-cased vocabularies (skipped when ../shared/data is absent) and with a tiny
// tokenizer.json the library saved itself (always run). Against hand-worked cases on vocabularies
// written here: greedy longest-match-first pieces, [UNK] words, offsets into the original text
// after accent stripping and control-character removal, special tokens kept whole, pair type ids.
// And every loading error as one sentence naming its file.
#include <QtTest>

#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "text/bpe_tokenizer.h"
#include "text/tokenizer.h"
#include "text/wordpiece_tokenizer.h"

using namespace scalescope;

namespace {

const std::string kSharedData = SCALESCOPE_SHARED_DATA;
const std::string kWordPieceData = SCALESCOPE_WORDPIECE_DATA;

bool sharedVocabAvailable(const std::string& dirName)
{
    return QFileInfo::exists(QString::fromStdString(kSharedData + "/" + dirName + "/vocab.txt"));
}

void writeFile(const std::string& path, const std::string& content)
{
    std::ofstream out(path, std::ios::binary);
    out << content;
}

nlohmann::json readJson(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return nlohmann::json::parse(in);
}

const nlohmann::json& expectations()
{
    static const nlohmann::json root = readJson(kWordPieceData + "/expectations.json");
    return root;
}

const nlohmann::json& expectationConfig(const std::string& name)
{
    for (const auto& config : expectations()["configs"])
        if (config["name"] == name)
            return config;
    throw std::runtime_error("no expectation configuration " + name);
}

// Loads the tokenizer an expectation configuration describes: the shared vocab.txt with the
// tokenizer_config.json it names (written to a scratch folder, as a model folder would hold it).
const WordPieceTokenizer& configuredTokenizer(const std::string& name)
{
    static std::map<std::string, std::unique_ptr<WordPieceTokenizer>> cache;
    static QTemporaryDir scratch;
    auto& slot = cache[name];
    if (!slot) {
        const nlohmann::json& config = expectationConfig(name);
        const std::string vocab = kSharedData + "/" + config["vocab_dir"].get<std::string>() + "/vocab.txt";
        std::string configPath = kSharedData + "/" + config["vocab_dir"].get<std::string>() + "/tokenizer_config.json";
        if (!config["tokenizer_config"].is_null()) {
            configPath = scratch.path().toStdString() + "/" + name + "-tokenizer_config.json";
            writeFile(configPath, config["tokenizer_config"].dump());
        }
        slot = WordPieceTokenizer::loadFromVocabTxt(vocab, configPath);
    }
    return *slot;
}

std::vector<std::pair<int, int>> offsetsOf(const nlohmann::json& list)
{
    std::vector<std::pair<int, int>> out;
    for (const auto& pair : list)
        out.emplace_back(pair[0].get<int>(), pair[1].get<int>());
    return out;
}

QString describe(const std::vector<int64_t>& ids)
{
    QStringList parts;
    for (const int64_t id : ids)
        parts << QString::number(id);
    return parts.join(' ');
}

QString describe(const std::vector<std::pair<int, int>>& offsets)
{
    QStringList parts;
    for (const auto& [start, end] : offsets)
        parts << QStringLiteral("[%1,%2]").arg(start).arg(end);
    return parts.join(' ');
}

struct MatchCount {
    int cases = 0, casesMatched = 0;
    long ids = 0, idsMatched = 0;
    long offsets = 0, offsetsMatched = 0;
    int decoded = 0, decodedMatched = 0;
};

// Compares one expectation entry; returns an empty string when everything matches.
QString compareCase(const Tokenizer& tokenizer, const nlohmann::json& entry, MatchCount* count = nullptr)
{
    const std::string text = entry["text"].get<std::string>();
    const bool isPair = entry.contains("pair");
    const Encoding encoding = isPair ? tokenizer.encodePair(text, entry["pair"].get<std::string>()) : tokenizer.encode(text);
    const std::vector<int64_t> ids = entry["ids"].get<std::vector<int64_t>>();
    const std::vector<std::pair<int, int>> offsets = offsetsOf(entry["offsets"]);
    const std::vector<int64_t> typeIds = entry["type_ids"].get<std::vector<int64_t>>();
    if (count) {
        ++count->cases;
        count->ids += static_cast<long>(ids.size());
        count->offsets += static_cast<long>(offsets.size());
        for (std::size_t i = 0; i < ids.size(); ++i) {
            count->idsMatched += i < encoding.ids.size() && encoding.ids[i] == ids[i];
            count->offsetsMatched += i < encoding.offsets.size() && encoding.offsets[i] == offsets[i];
        }
    }
    QStringList problems;
    if (encoding.ids != ids)
        problems << QStringLiteral("ids %1, Hugging Face %2").arg(describe(encoding.ids), describe(ids));
    if (encoding.offsets != offsets)
        problems << QStringLiteral("offsets %1, Hugging Face %2").arg(describe(encoding.offsets), describe(offsets));
    if (encoding.typeIds != typeIds)
        problems << QStringLiteral("type ids %1, Hugging Face %2").arg(describe(encoding.typeIds), describe(typeIds));
    if (encoding.sequenceIds.size() != encoding.ids.size())
        problems << QStringLiteral("%1 sequence ids for %2 tokens").arg(encoding.sequenceIds.size()).arg(encoding.ids.size());
    if (entry.contains("decoded")) {
        const std::string decoded = tokenizer.decode(encoding.ids);
        if (count) {
            ++count->decoded;
            count->decodedMatched += decoded == entry["decoded"].get<std::string>();
        }
        if (decoded != entry["decoded"].get<std::string>())
            problems << QStringLiteral("decoded \"%1\", Hugging Face \"%2\"")
                            .arg(QString::fromStdString(decoded), QString::fromStdString(entry["decoded"].get<std::string>()));
    }
    if (count && problems.isEmpty())
        ++count->casesMatched;
    return problems.join("; ");
}

// A tiny vocabulary in vocab.txt order; ids are line numbers.
const std::vector<std::string> kHandVocab = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "##a", "##ff", "a", "##b", "b",
    "cafe", "!", ".", "naive", "x", "##x", "hello", "日", "本", "[", "]", "mask", "i", "##s", "e", "##e",
};

int64_t handId(const std::string& token)
{
    const auto it = std::find(kHandVocab.begin(), kHandVocab.end(), token);
    return it == kHandVocab.end() ? -1 : static_cast<int64_t>(it - kHandVocab.begin());
}

std::string handVocabTxt()
{
    std::string out;
    for (const std::string& token : kHandVocab)
        out += token + "\n";
    return out;
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

} // namespace

class TestWordPiece : public QObject {
    Q_OBJECT

private slots:
    void knownTruth_data();
    void knownTruth();
    void matchesHuggingFace_data();
    void matchesHuggingFace();
    void matchSummary();
    void tinyTokenizerJsonMatchesHuggingFace();
    void tokenizerJsonWithRealVocabulary();
    void handCases_data();
    void handCases();
    void specialTokensAndPairs();
    void lowerCaseWithoutAccentStripping();
    void interfaceAndFactory();
    void malformedTextStaysInBounds();
    void loadErrors_data();
    void loadErrors();
};

void TestWordPiece::knownTruth_data()
{
    QTest::addColumn<QString>("vocabDir");
    QTest::addColumn<QList<qlonglong>>("ids");
    QTest::newRow("uncased") << "bert-base-uncased-tokenizer" << QList<qlonglong>{101, 7592, 2088, 999, 102};
    QTest::newRow("cased") << "bert-base-cased-tokenizer" << QList<qlonglong>{101, 8667, 1362, 106, 102};
}

void TestWordPiece::knownTruth()
{
    QFETCH(QString, vocabDir);
    QFETCH(QList<qlonglong>, ids);
    if (!sharedVocabAvailable(vocabDir.toStdString()))
        QSKIP("the BERT vocabularies are not in the shared data folder");
    const auto tokenizer = loadTokenizer(kSharedData + "/" + vocabDir.toStdString());
    const Encoding encoding = tokenizer->encode("Hello world!");
    QCOMPARE(encoding.ids, std::vector<int64_t>(ids.begin(), ids.end()));
    QCOMPARE(encoding.offsets, (std::vector<std::pair<int, int>>{{0, 0}, {0, 5}, {6, 11}, {11, 12}, {0, 0}}));
    QCOMPARE(encoding.typeIds, std::vector<int64_t>(5, 0));
    QCOMPARE(tokenizer->maskToken(), std::string("[MASK]"));
    QCOMPARE(tokenizer->maskId(), int64_t{103});
    QCOMPARE(tokenizer->clsId(), int64_t{101});
    QCOMPARE(tokenizer->sepId(), int64_t{102});
    QCOMPARE(tokenizer->padId(), int64_t{0});
    QCOMPARE(tokenizer->unkId(), int64_t{100});
}

void TestWordPiece::matchesHuggingFace_data()
{
    QTest::addColumn<QString>("config");
    QTest::addColumn<int>("index");
    for (const auto& config : expectations()["configs"]) {
        const std::string name = config["name"].get<std::string>();
        for (std::size_t i = 0; i < config["cases"].size(); ++i)
            QTest::addRow("%s #%d", name.c_str(), static_cast<int>(i)) << QString::fromStdString(name) << static_cast<int>(i);
    }
}

void TestWordPiece::matchesHuggingFace()
{
    QFETCH(QString, config);
    QFETCH(int, index);
    const nlohmann::json& entry = expectationConfig(config.toStdString())["cases"][static_cast<std::size_t>(index)];
    if (!sharedVocabAvailable(expectationConfig(config.toStdString())["vocab_dir"].get<std::string>()))
        QSKIP("the BERT vocabularies are not in the shared data folder");
    const QString problems = compareCase(configuredTokenizer(config.toStdString()), entry);
    QVERIFY2(problems.isEmpty(), qPrintable(QString::fromStdString(entry["text"].dump()) + ": " + problems));
}

// The totals the data-driven rows above check one by one, for the record.
void TestWordPiece::matchSummary()
{
    if (!sharedVocabAvailable("bert-base-uncased-tokenizer") || !sharedVocabAvailable("bert-base-cased-tokenizer"))
        QSKIP("the BERT vocabularies are not in the shared data folder");
    MatchCount count;
    for (const auto& config : expectations()["configs"])
        for (const auto& entry : config["cases"])
            compareCase(configuredTokenizer(config["name"].get<std::string>()), entry, &count);
    qInfo("Hugging Face tokenizers %s: %d/%d encodings, %ld/%ld ids, %ld/%ld offsets, %d/%d decodes match",
          expectations()["tokenizers_version"].get<std::string>().c_str(), count.casesMatched, count.cases,
          count.idsMatched, count.ids, count.offsetsMatched, count.offsets, count.decodedMatched, count.decoded);
    QVERIFY(count.cases > 300);
    QCOMPARE(count.casesMatched, count.cases);
    QCOMPARE(count.idsMatched, count.ids);
    QCOMPARE(count.offsetsMatched, count.offsets);
}

void TestWordPiece::tinyTokenizerJsonMatchesHuggingFace()
{
    const std::string dir = kWordPieceData + "/tiny-tokenizer";
    const auto tokenizer = loadTokenizer(dir);
    QVERIFY(dynamic_cast<const WordPieceTokenizer*>(tokenizer.get()) != nullptr);
    // Settings that differ from vocab.txt's defaults must come from the file.
    const auto& wordPiece = dynamic_cast<const WordPieceTokenizer&>(*tokenizer);
    QVERIFY(!wordPiece.lowercases());
    QVERIFY(wordPiece.stripsAccents());
    QCOMPARE(tokenizer->maskId(), int64_t{23});
    QCOMPARE(tokenizer->clsId(), int64_t{21});
    const nlohmann::json root = readJson(dir + "/expectations.json");
    QVERIFY(root["cases"].size() >= 10);
    for (const auto& entry : root["cases"]) {
        const QString problems = compareCase(*tokenizer, entry);
        QVERIFY2(problems.isEmpty(), qPrintable(QString::fromStdString(entry["text"].dump()) + ": " + problems));
    }
}

// A tokenizer.json holding the real uncased vocabulary, written here in Hugging Face's layout (the
// tiny file above shows the layout is the library's), must tokenize as vocab.txt does.
void TestWordPiece::tokenizerJsonWithRealVocabulary()
{
    if (!sharedVocabAvailable("bert-base-uncased-tokenizer"))
        QSKIP("the BERT vocabularies are not in the shared data folder");
    nlohmann::json root = readJson(kWordPieceData + "/tiny-tokenizer/tokenizer.json");
    nlohmann::json vocab = nlohmann::json::object();
    std::ifstream in(kSharedData + "/bert-base-uncased-tokenizer/vocab.txt", std::ios::binary);
    std::string line;
    int64_t id = 0;
    while (std::getline(in, line))
        vocab[line] = id++;
    root["model"]["vocab"] = vocab;
    root["model"]["max_input_chars_per_word"] = 100;
    root["normalizer"] = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                          {"strip_accents", nullptr}, {"lowercase", true}};
    for (auto& added : root["added_tokens"])
        added["id"] = vocab[added["content"].get<std::string>()];
    for (const char* name : {"[CLS]", "[SEP]"})
        root["post_processor"]["special_tokens"][name]["ids"] = {vocab[name]};
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeFile(dir.path().toStdString() + "/tokenizer.json", root.dump());
    const auto tokenizer = loadTokenizer(dir.path().toStdString());
    QCOMPARE(tokenizer->vocabSize(), int64_t{30522});
    int compared = 0;
    for (const auto& entry : expectationConfig("uncased")["cases"]) {
        const QString problems = compareCase(*tokenizer, entry);
        QVERIFY2(problems.isEmpty(), qPrintable(QString::fromStdString(entry["text"].dump()) + ": " + problems));
        ++compared;
    }
    QVERIFY(compared > 80);
}

// Worked out by hand from BERT's rules on kHandVocab (lower-casing and accent stripping on).
void TestWordPiece::handCases_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("tokens");
    QTest::addColumn<QList<int>>("offsets");

    // Longest piece first at each position: "un" then "##aff" (not "##a" + "##ff"), then "##able".
    QTest::newRow("greedy") << "unaffable" << QStringList{"un", "##aff", "##able"} << QList<int>{0, 2, 2, 5, 5, 9};
    // The rest of a word continues with "##" pieces.
    QTest::newRow("continuation") << "unaffx" << QStringList{"un", "##aff", "##x"} << QList<int>{0, 2, 2, 5, 5, 6};
    // One part without a piece makes the whole word [UNK], spanning the word.
    QTest::newRow("unknown part") << "unaffz ab" << QStringList{"[UNK]", "a", "##b"} << QList<int>{0, 6, 7, 8, 8, 9};
    // Accents stripped after NFD; offsets still cover the original characters.
    QTest::newRow("accents") << QString::fromUtf8("Café NAÏVE") << QStringList{"cafe", "naive"} << QList<int>{0, 4, 5, 10};
    // A stripped mark belongs to no token: "cafe" ends where its "e" does.
    QTest::newRow("combining") << QString::fromUtf8("cafe\u0301!") << QStringList{"cafe", "!"} << QList<int>{0, 4, 5, 6};
    // Control and format characters vanish without moving the offsets of what follows, and the
    // word around them spans only its kept characters.
    QTest::newRow("controls") << QString::fromUtf8("he\x01llo\u200B x") << QStringList{"hello", "x"}
                              << QList<int>{0, 6, 8, 9};
    // CJK characters are words of their own even without spaces.
    QTest::newRow("cjk") << QString::fromUtf8("x日本x") << QStringList{"x", "日", "本", "x"} << QList<int>{0, 1, 1, 2, 2, 3, 3, 4};
    // Punctuation is split off, one character each.
    QTest::newRow("punctuation") << "hello!!." << QStringList{"hello", "!", "!", "."} << QList<int>{0, 5, 5, 6, 6, 7, 7, 8};
    // 100 characters is still a word; 101 is [UNK].
    QTest::newRow("100 chars") << QString(100, 'x') << (QStringList{"x"} + QStringList(99, QStringLiteral("##x")))
                               << [] {
                                      QList<int> out;
                                      for (int i = 0; i < 100; ++i)
                                          out << i << i + 1;
                                      return out;
                                  }();
    QTest::newRow("101 chars") << QString(101, 'x') << QStringList{"[UNK]"} << QList<int>{0, 101};
    // The mask literal is one token, also glued to words; lower-case "[mask]" is ordinary text.
    QTest::newRow("mask") << "a[MASK]b [mask]" << QStringList{"a", "[MASK]", "b", "[", "mask", "]"}
                          << QList<int>{0, 1, 1, 7, 7, 8, 9, 10, 10, 14, 14, 15};
    // Astral characters count one code point each, as in Python.
    QTest::newRow("astral") << QString::fromUtf8("\U0001F600 is") << QStringList{"[UNK]", "i", "##s"} << QList<int>{0, 1, 2, 3, 3, 4};
}

void TestWordPiece::handCases()
{
    QFETCH(QString, text);
    QFETCH(QStringList, tokens);
    QFETCH(QList<int>, offsets);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeFile(dir.path().toStdString() + "/vocab.txt", handVocabTxt());
    const auto tokenizer = loadTokenizer(dir.path().toStdString());
    const Encoding encoding = tokenizer->encodeText(text.toStdString());
    std::vector<int64_t> expectedIds;
    for (const QString& token : tokens)
        expectedIds.push_back(handId(token.toStdString()));
    QCOMPARE(encoding.ids, expectedIds);
    std::vector<std::pair<int, int>> expectedOffsets;
    for (int i = 0; i + 1 < offsets.size(); i += 2)
        expectedOffsets.emplace_back(offsets[i], offsets[i + 1]);
    QCOMPARE(encoding.offsets, expectedOffsets);
    // Every offset lies inside the text as Python counts it (Qt's UCS-4 length is that count).
    const int length = static_cast<int>(text.toUcs4().size());
    for (const auto& [start, end] : encoding.offsets)
        QVERIFY(start >= 0 && start < end && end <= length);
}

void TestWordPiece::specialTokensAndPairs()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeFile(dir.path().toStdString() + "/vocab.txt", handVocabTxt());
    const auto tokenizer = loadTokenizer(dir.path().toStdString());
    const Encoding pair = tokenizer->encodePair("hello", "a [SEP] b");
    QCOMPARE(pair.ids, (std::vector<int64_t>{handId("[CLS]"), handId("hello"), handId("[SEP]"), handId("a"),
                                             handId("[SEP]"), handId("b"), handId("[SEP]")}));
    QCOMPARE(pair.typeIds, (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 1}));
    QCOMPARE(pair.sequenceIds, (std::vector<int>{-1, 0, -1, 1, 1, 1, -1}));
    // The second text's offsets refer to the second text.
    QCOMPARE(pair.offsets, (std::vector<std::pair<int, int>>{{0, 0}, {0, 5}, {0, 0}, {0, 1}, {2, 7}, {8, 9}, {0, 0}}));
    QCOMPARE(tokenizer->specialTokensInPair(), 3);
    QCOMPARE(tokenizer->specialTokensInSingle(), 2);
    QCOMPARE(static_cast<int>(tokenizer->encodePair("", "").ids.size()), tokenizer->specialTokensInPair());
    QCOMPARE(static_cast<int>(tokenizer->encode("").ids.size()), tokenizer->specialTokensInSingle());
    // Decoding glues continuations and drops specials unless asked to keep them.
    QCOMPARE(tokenizer->decode(tokenizer->encode("unaffable hello!").ids), std::string("unaffable hello!"));
    QCOMPARE(tokenizer->decode({handId("[CLS]"), handId("a")}, false), std::string("[CLS] a"));
    QCOMPARE(tokenizer->tokenString(handId("##aff")), std::string("##aff"));
    QVERIFY_THROWS_EXCEPTION(Error, tokenizer->decode({static_cast<int64_t>(kHandVocab.size())}));
}

// do_lower_case with strip_accents false keeps the accents (no NFD at all), tokenize_chinese_chars
// false keeps CJK runs together: settings BertTokenizerFast takes from tokenizer_config.json.
void TestWordPiece::lowerCaseWithoutAccentStripping()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string base = dir.path().toStdString();
    std::string vocab = handVocabTxt() + "café\n日本\n";
    writeFile(base + "/vocab.txt", vocab);
    writeFile(base + "/tokenizer_config.json", R"({"do_lower_case": true, "strip_accents": false, "tokenize_chinese_chars": false})");
    const auto tokenizer = loadTokenizer(base);
    const int64_t cafeAccented = static_cast<int64_t>(kHandVocab.size());
    QCOMPARE(tokenizer->encodeText("CAFÉ 日本").ids, (std::vector<int64_t>{cafeAccented, cafeAccented + 1}));
    writeFile(base + "/tokenizer_config.json", R"({"do_lower_case": false})");
    const auto cased = loadTokenizer(base);
    QCOMPARE(cased->encodeText("hello Hello").ids, (std::vector<int64_t>{handId("hello"), handId("[UNK]")}));
}

void TestWordPiece::interfaceAndFactory()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeFile(dir.path().toStdString() + "/vocab.txt", handVocabTxt());
    const auto wordPiece = loadTokenizer(dir.path().toStdString());
    QVERIFY(dynamic_cast<const WordPieceTokenizer*>(wordPiece.get()) != nullptr);
    QCOMPARE(wordPiece->vocabSize(), static_cast<int64_t>(kHandVocab.size()));
    QCOMPARE(wordPiece->maskToken(), std::string("[MASK]"));

    const std::string roberta = kSharedData + "/roberta-base-tokenizer";
    if (!QFileInfo::exists(QString::fromStdString(roberta + "/vocab.json")))
        QSKIP("roberta-base tokenizer files are not in the shared data folder");
    const auto bpe = loadTokenizer(roberta);
    QVERIFY(dynamic_cast<const BpeTokenizer*>(bpe.get()) != nullptr);
    QCOMPARE(bpe->maskToken(), std::string("<mask>"));
    QCOMPARE(bpe->specialTokensInPair(), 4);
    QCOMPARE(bpe->clsId(), int64_t{0});
    QCOMPARE(bpe->sepId(), int64_t{2});
    const Encoding pair = bpe->encodePair("Hello world!", "Hi");
    QCOMPARE(pair.ids.front(), int64_t{0});
    QCOMPARE(pair.typeIds, std::vector<int64_t>(pair.ids.size(), 0));
    QCOMPARE(bpe->encode("Hello world!").ids, (std::vector<int64_t>{0, 31414, 232, 328, 2}));
}

// Bytes that are not UTF-8 count one code point each (as the BPE tokenizer counts them); whatever
// comes in, offsets stay inside the text and the lists stay parallel.
void TestWordPiece::malformedTextStaysInBounds()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeFile(dir.path().toStdString() + "/vocab.txt", handVocabTxt());
    const auto tokenizer = loadTokenizer(dir.path().toStdString());
    const std::string texts[] = {std::string("a\xff\xfe b"), std::string("\xe6\x97"), std::string("x\xc3"),
                                 std::string("[MASK\xc3\xa9]"), std::string(1, '\0') + "a",
                                 std::string("\xed\xa0\x80 surrogate")};
    for (const std::string& text : texts) {
        const Encoding encoding = tokenizer->encodePair(text, text);
        QCOMPARE(encoding.offsets.size(), encoding.ids.size());
        QCOMPARE(encoding.typeIds.size(), encoding.ids.size());
        const int length = codePointCount(text);
        for (const auto& [start, end] : encoding.offsets)
            QVERIFY(start >= 0 && start <= end && end <= length);
    }
    // The stray byte stands for U+FFFD, which clean-up drops: "a" "##b" around its position.
    const Encoding stray = tokenizer->encodeText(std::string("a\xff" "b"));
    QCOMPARE(stray.ids, (std::vector<int64_t>{handId("a"), handId("##b")}));
    QCOMPARE(stray.offsets, (std::vector<std::pair<int, int>>{{0, 1}, {2, 3}}));
}

void TestWordPiece::loadErrors_data()
{
    QTest::addColumn<QByteArray>("vocabTxt");
    QTest::addColumn<QByteArray>("config");
    QTest::addColumn<QByteArray>("tokenizerJson");
    QTest::addColumn<QString>("culprit");
    QTest::addColumn<QString>("phrase");

    const QByteArray good = QByteArray::fromStdString(handVocabTxt());
    const QByteArray none;
    const QByteArray tinyJson = [] {
        QFile file(QString::fromStdString(kWordPieceData + "/tiny-tokenizer/tokenizer.json"));
        file.open(QIODevice::ReadOnly);
        return file.readAll();
    }();
    const auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
        nlohmann::json root = nlohmann::json::parse(tinyJson.toStdString());
        edit(root);
        return QByteArray::fromStdString(root.dump());
    };

    QTest::newRow("no tokenizer files") << none << none << none << "" << "No tokenizer in";
    QTest::newRow("empty vocab.txt") << QByteArray("") << none << none << "vocab.txt" << "no tokens";
    QTest::newRow("duplicate token") << QByteArray(good + "hello\n") << none << none << "vocab.txt"
                                     << "lists the token \"hello\" twice, on lines 20 and 30";
    QTest::newRow("blank line") << QByteArray("[PAD]\n\n[UNK]\n") << none << none << "vocab.txt" << "line 2 is empty";
    QTest::newRow("not UTF-8") << QByteArray(good + "\xff\xfe\n") << none << none << "vocab.txt" << "line 30 is not valid UTF-8";
    QTest::newRow("no [UNK]") << QByteArray(good).replace("[UNK]", "[UNKNOWN]") << none << none << "vocab.txt" << "[UNK]";
    QTest::newRow("no [MASK]") << QByteArray(good).replace("[MASK]", "[MASKED]") << none << none << "vocab.txt" << "[MASK]";
    QTest::newRow("config not JSON") << good << QByteArray("{\"do_lower_case\": tru") << none << "tokenizer_config.json" << "byte";
    QTest::newRow("config is a list") << good << QByteArray("[true]") << none << "tokenizer_config.json" << "JSON object";
    QTest::newRow("do_lower_case a string") << good << QByteArray("{\"do_lower_case\": \"yes\"}") << none
                                            << "tokenizer_config.json" << "do_lower_case to \"yes\"";
    QTest::newRow("strip_accents a number") << good << QByteArray("{\"strip_accents\": 1}") << none
                                            << "tokenizer_config.json" << "strip_accents";
    QTest::newRow("mask_token a number") << good << QByteArray("{\"mask_token\": 5}") << none << "tokenizer_config.json"
                                         << "mask_token";
    QTest::newRow("unknown model") << none << none << edited([](nlohmann::json& j) { j["model"]["type"] = "WordLevel"; })
                                   << "tokenizer.json" << "WordLevel";
    QTest::newRow("other normalizer") << none << none
                                      << edited([](nlohmann::json& j) { j["normalizer"] = {{"type", "NFKC"}}; })
                                      << "tokenizer.json" << "BertNormalizer";
    QTest::newRow("other pre-tokenizer") << none << none
                                         << edited([](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; })
                                         << "tokenizer.json" << "BertPreTokenizer";
    QTest::newRow("vocab a list") << none << none << edited([](nlohmann::json& j) { j["model"]["vocab"] = {"a"}; })
                                  << "tokenizer.json" << "model.vocab";
    QTest::newRow("negative id") << none << none << edited([](nlohmann::json& j) { j["model"]["vocab"]["hello"] = -2; })
                                 << "tokenizer.json" << "\"hello\" to -2";
    QTest::newRow("max chars zero") << none << none
                                    << edited([](nlohmann::json& j) { j["model"]["max_input_chars_per_word"] = 0; })
                                    << "tokenizer.json" << "max_input_chars_per_word";
    QTest::newRow("tokenizer.json truncated") << none << none << tinyJson.left(200) << "tokenizer.json" << "byte";
}

void TestWordPiece::loadErrors()
{
    QFETCH(QByteArray, vocabTxt);
    QFETCH(QByteArray, config);
    QFETCH(QByteArray, tokenizerJson);
    QFETCH(QString, culprit);
    QFETCH(QString, phrase);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string base = dir.path().toStdString();
    if (!vocabTxt.isNull())
        writeFile(base + "/vocab.txt", vocabTxt.toStdString());
    if (!config.isNull())
        writeFile(base + "/tokenizer_config.json", config.toStdString());
    if (!tokenizerJson.isNull())
        writeFile(base + "/tokenizer.json", tokenizerJson.toStdString());
    const QString named = QString::fromStdString(culprit.isEmpty() ? base : base + "/" + culprit.toStdString());
    const QString message = errorOf([&] { loadTokenizer(base); });
    QVERIFY2(!message.isEmpty(), "loading succeeded");
    QVERIFY2(message.contains(named), qPrintable(message));
    QVERIFY2(message.contains(phrase), qPrintable(message));
    QVERIFY2(isOneSentence(message), qPrintable(message));
}

QTEST_GUILESS_MAIN(TestWordPiece)
#include "test_wordpiece.moc"
