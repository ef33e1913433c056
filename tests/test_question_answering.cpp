// Extractive-QA windowing and n-best post-processing, checked against hand-derived windows, spans
// and softmax values. Windowing runs on a tiny byte-level BPE tokenizer the test writes itself
// (every word one token, so token positions are known by hand) and, when the shared data is there,
// on the real roberta-base tokenizer. Post-processing runs on windows laid out by hand.
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "support/option_flags.h"
#include "common/error.h"
#include "tasks/question_answering.h"
#include "support/fixtures.h"
#include "text/bpe_tokenizer.h"

using namespace scalescope;

using LogitMap = std::map<int, float>;
Q_DECLARE_METATYPE(LogitMap)

namespace {

constexpr int64_t kBos = 0;
constexpr int64_t kEos = 2;

// GPT-2's reversible byte -> printable code point table: printable Latin-1 bytes map to
// themselves, the rest to 256, 257, ... in byte order.
std::vector<std::string> byteSymbols() {
    auto utf8 = [](unsigned codePoint) {
        std::string out;
        if (codePoint < 0x80) {
            out += static_cast<char>(codePoint);
        } else {
            out += static_cast<char>(0xC0 | (codePoint >> 6));
            out += static_cast<char>(0x80 | (codePoint & 0x3F));
        }
        return out;
    };
    std::vector<std::string> symbols(256);
    unsigned next = 256;
    for (unsigned b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        symbols[b] = utf8(printable ? b : next++);
    }
    return symbols;
}

// vocab.json + merges.txt in RoBERTa's layout (<s>=0 <pad>=1 </s>=2 <unk>=3, byte symbols,
// merge results, <mask> last). Every word gets a left-to-right chain of merges both with the
// leading-space symbol and bare. All space-prefixed chains rank before all bare chains, and a
// space-prefixed chain only ever merges a pair whose left part starts with the space symbol, so
// chains cannot steal each other's pairs: each listed word encodes to exactly one token.
void writeWordTokenizer(const QString& dir, const std::vector<std::string>& words) {
    const auto symbols = byteSymbols();
    QJsonObject vocab;
    int nextId = 0;
    auto addToken = [&](const std::string& token) {
        const QString key = QString::fromUtf8(token.c_str());
        if (!vocab.contains(key))
            vocab.insert(key, nextId++);
    };
    for (const char* special : {"<s>", "<pad>", "</s>", "<unk>"})
        addToken(special);
    for (const auto& symbol : symbols)
        addToken(symbol);

    std::vector<std::pair<std::string, std::string>> merges;
    std::set<std::pair<std::string, std::string>> seen;
    auto addChain = [&](const std::string& prefix, const std::string& word) {
        std::vector<std::string> parts;
        if (!prefix.empty())
            parts.push_back(prefix);
        for (unsigned char byte : word)
            parts.push_back(symbols[byte]);
        std::string left = parts[0];
        for (std::size_t i = 1; i < parts.size(); ++i) {
            if (seen.insert({left, parts[i]}).second)
                merges.emplace_back(left, parts[i]);
            left += parts[i];
            addToken(left);
        }
    };
    const std::string spaceSymbol = symbols[' '];
    for (const auto& word : words)
        addChain(spaceSymbol, word);
    for (const auto& word : words)
        addChain("", word);
    addToken("<mask>");

    QFile vocabFile(dir + "/vocab.json");
    QVERIFY(vocabFile.open(QIODevice::WriteOnly));
    vocabFile.write(QJsonDocument(vocab).toJson());
    QFile mergesFile(dir + "/merges.txt");
    QVERIFY(mergesFile.open(QIODevice::WriteOnly));
    mergesFile.write("#version: 0.2\n");
    for (const auto& [left, right] : merges)
        mergesFile.write((left + " " + right + "\n").c_str());
}

const std::vector<std::string> kTinyWords = {"the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to",
                                             "park", "where", "is", "na\xC3\xAFve", "caf\xC3\xA9",
                                             "\xC3\xBC" "ber"};

// The context as text plus the [start, end) code points of each word (all words here are ASCII
// unless stated, so code points equal bytes).
struct WordText {
    std::string text;
    std::vector<std::pair<int, int>> wordSpans;
};

WordText joinWords(const std::vector<std::string>& words) {
    WordText out;
    int position = 0;
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (i > 0) {
            out.text += ' ';
            ++position;
        }
        out.text += words[i];
        const int length = static_cast<int>(words[i].size());
        out.wordSpans.emplace_back(position, position + length);
        position += length;
    }
    return out;
}

WordText asciiContext(int wordCount) {
    static const std::vector<std::string> cycle = {"the", "cat", "sat", "on", "a", "mat", "the", "dog",
                                                   "ran", "to", "the", "park"};
    std::vector<std::string> words;
    for (int i = 0; i < wordCount; ++i)
        words.push_back(cycle[static_cast<std::size_t>(i) % cycle.size()]);
    return joinWords(words);
}

// Closed forms for HF-style striding: window w starts at w * (room - stride); the count is the
// smallest number of such windows whose last one reaches the end of the context.
int expectedWindowCount(int contextTokens, int room, int stride) {
    if (contextTokens <= room)
        return 1;
    const int step = room - stride;
    return 1 + (contextTokens - room + step - 1) / step;
}

// Checks one set of windows against the question and context encodings produced independently
// by the same tokenizer: <s> question </s></s> context </s> (RoBERTa, all type 0) or
// [CLS] question [SEP] context [SEP] (BERT, type 1 from the context on).
void checkWindowLayout(const std::vector<QaWindow>& windows, const Encoding& question, const Encoding& context,
                       const QaOptions& options, const Tokenizer& tokenizer) {
    const int q = static_cast<int>(question.ids.size());
    const int n = static_cast<int>(context.ids.size());
    const int specials = tokenizer.specialTokensInPair();
    QVERIFY(specials == 3 || specials == 4);
    const int64_t bos = tokenizer.clsId();
    const int64_t eos = tokenizer.sepId();
    const int64_t secondType = tokenizer.encodePair("a", "b").typeIds.back();
    const int room = options.maxSeqLen - q - specials;
    QCOMPARE(static_cast<int>(windows.size()), expectedWindowCount(n, room, options.docStride));

    std::vector<int> coverage(static_cast<std::size_t>(n), 0);
    for (std::size_t w = 0; w < windows.size(); ++w) {
        const auto& window = windows[w];
        const auto& enc = window.encoding;
        const int firstContextToken = static_cast<int>(w) * (room - options.docStride);
        const int lastContextTokenEnd = (w + 1 == windows.size()) ? n : firstContextToken + room;
        const int sliceLength = lastContextTokenEnd - firstContextToken;
        const int length = static_cast<int>(enc.ids.size());

        QVERIFY(length <= options.maxSeqLen);
        QCOMPARE(length, q + sliceLength + specials);
        QCOMPARE(enc.offsets.size(), enc.ids.size());
        QCOMPARE(enc.sequenceIds.size(), enc.ids.size());
        QCOMPARE(enc.typeIds.size(), enc.ids.size());
        QCOMPARE(window.contextTokenBegin, q + specials - 1);
        QCOMPARE(window.contextTokenEnd, q + specials - 1 + sliceLength);
        if (w + 1 < windows.size())
            QCOMPARE(sliceLength, room);

        // Specials: <s> question </s></s> context </s>, or [CLS] question [SEP] context [SEP].
        std::vector<int> specialPositions = {0, q + 1, length - 1};
        if (specials == 4)
            specialPositions.push_back(q + 2);
        for (int position : specialPositions) {
            QCOMPARE(enc.ids[position], position == 0 ? bos : eos);
            QCOMPARE(enc.sequenceIds[position], -1);
            QCOMPARE(enc.offsets[position], std::make_pair(0, 0));
        }
        for (int position = 0; position < length; ++position)
            QCOMPARE(enc.typeIds[position], position >= window.contextTokenBegin ? secondType : int64_t(0));
        for (int i = 0; i < q; ++i) {
            QCOMPARE(enc.ids[1 + i], question.ids[i]);
            QCOMPARE(enc.offsets[1 + i], question.offsets[i]);
            QCOMPARE(enc.sequenceIds[1 + i], 0);
        }
        for (int i = 0; i < sliceLength; ++i) {
            const int position = window.contextTokenBegin + i;
            QCOMPARE(enc.ids[position], context.ids[firstContextToken + i]);
            QCOMPARE(enc.offsets[position], context.offsets[firstContextToken + i]);
            QCOMPARE(enc.sequenceIds[position], 1);
            ++coverage[static_cast<std::size_t>(firstContextToken + i)];
        }

        if (w > 0) {
            // The first docStride context tokens of this window are the last of the previous one.
            const auto& previous = windows[w - 1];
            const int previousSlice = previous.contextTokenEnd - previous.contextTokenBegin;
            for (int i = 0; i < options.docStride; ++i)
                QCOMPARE(enc.ids[window.contextTokenBegin + i],
                         previous.encoding.ids[previous.contextTokenBegin + previousSlice - options.docStride + i]);
            QCOMPARE(enc.offsets[window.contextTokenBegin + options.docStride],
                     context.offsets[firstContextToken + options.docStride]);
            QCOMPARE(previous.encoding.offsets[previous.contextTokenEnd - 1],
                     context.offsets[firstContextToken + options.docStride - 1]);
        }
    }
    for (int i = 0; i < n; ++i)
        QVERIFY2(coverage[static_cast<std::size_t>(i)] >= 1, qPrintable(QString("context token %1 uncovered").arg(i)));
    if (n > 0) {
        QCOMPARE(windows.front().encoding.offsets[windows.front().contextTokenBegin], context.offsets.front());
        QCOMPARE(windows.back().encoding.offsets[windows.back().contextTokenEnd - 1], context.offsets.back());
    }
}

// A window laid out by hand: <s>, questionTokens question tokens, </s></s>, the context tokens
// with the given code-point offsets, </s>.
QaWindow makeWindow(int questionTokens, const std::vector<std::pair<int, int>>& contextOffsets) {
    QaWindow window;
    auto& enc = window.encoding;
    auto add = [&](int64_t id, std::pair<int, int> offset, int sequence) {
        enc.ids.push_back(id);
        enc.offsets.push_back(offset);
        enc.sequenceIds.push_back(sequence);
    };
    add(kBos, {0, 0}, -1);
    for (int i = 0; i < questionTokens; ++i)
        add(100 + i, {i, i + 1}, 0);
    add(kEos, {0, 0}, -1);
    add(kEos, {0, 0}, -1);
    window.contextTokenBegin = static_cast<int>(enc.ids.size());
    for (std::size_t i = 0; i < contextOffsets.size(); ++i)
        add(200 + static_cast<int64_t>(i), contextOffsets[i], 1);
    window.contextTokenEnd = static_cast<int>(enc.ids.size());
    add(kEos, {0, 0}, -1);
    return window;
}

std::vector<float> makeLogits(const QaWindow& window, const LogitMap& values, float baseline = -5.0f) {
    std::vector<float> logits(window.encoding.ids.size(), baseline);
    for (const auto& [index, value] : values)
        logits[static_cast<std::size_t>(index)] = value;
    return logits;
}

// "The quick brown fox jumps over the lazy dog" in a window with a 2-token question:
// 0 <s> | 1-2 question | 3-4 </s></s> | 5 The 6 quick 7 brown 8 fox 9 jumps 10 over 11 the
// 12 lazy 13 dog | 14 </s>.
const std::string kFoxContext = "The quick brown fox jumps over the lazy dog";
const std::vector<std::pair<int, int>> kFoxOffsets = {{0, 3},   {4, 9},   {10, 15}, {16, 19}, {20, 25},
                                                      {26, 30}, {31, 34}, {35, 39}, {40, 43}};

QaOptions optionsWith(int nBest, int topK, int maxAnswerLen = 30) {
    QaOptions options;
    options.nBest = nBest;
    options.topK = topK;
    options.maxAnswerLen = maxAnswerLen;
    return options;
}

template <typename Fn>
QString errorOf(Fn&& fn) {
    try {
        fn();
    } catch (const Error& error) {
        return QString::fromStdString(scalescope::testing::asCliMessage(error));
    }
    return {};
}

} // namespace

class TestQuestionAnswering : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tinyDir_;
    std::unique_ptr<BpeTokenizer> tiny_;

private slots:
    void initTestCase() {
        QVERIFY(tinyDir_.isValid());
        writeWordTokenizer(tinyDir_.path(), kTinyWords);
        tiny_ = BpeTokenizer::loadFromDirectory(tinyDir_.path().toStdString());
        QVERIFY(tiny_);
        // The hand counts below rest on every listed word being one token.
        const WordText sample = asciiContext(12);
        const Encoding encoded = tiny_->encodeText(sample.text);
        QCOMPARE(static_cast<int>(encoded.ids.size()), 12);
        for (int i = 0; i < 12; ++i)
            QCOMPARE(encoded.offsets[i], sample.wordSpans[i]);
    }

    // ---- windowing ------------------------------------------------------------------------

    void windowsCoverContext_data() {
        QTest::addColumn<int>("contextWords");
        QTest::addColumn<int>("maxSeqLen");
        QTest::addColumn<int>("docStride");
        QTest::addColumn<int>("expectedWindows");
        // Question "where is the cat" is 4 tokens, so room = maxSeqLen - 8 context tokens.
        // 20 tokens, room 8, step 5: starts 0, 5, 10, 15 (the last reaches 20).
        QTest::newRow("long context, stride 3") << 20 << 16 << 3 << 4;
        // room 8 exactly filled by one window.
        QTest::newRow("exactly one window") << 8 << 16 << 3 << 1;
        // One token over: starts 0, 5.
        QTest::newRow("one token over") << 9 << 16 << 3 << 2;
        // No overlap: starts 0, 8, 16.
        QTest::newRow("stride 0") << 20 << 16 << 0 << 3;
        // step 1: starts 0..12, the window at 12 ends at 20.
        QTest::newRow("largest stride") << 20 << 16 << 7 << 13;
        // room 1: one token per window, stride must be 0.
        QTest::newRow("room of one token") << 5 << 9 << 0 << 5;
        // room 40, step 24: starts 0, 24, 48 (48 + 40 >= 70).
        QTest::newRow("wider windows") << 70 << 48 << 16 << 3;
        QTest::newRow("short context") << 3 << 384 << 128 << 1;
        QTest::newRow("empty context") << 0 << 16 << 3 << 1;
    }

    void windowsCoverContext() {
        QFETCH(int, contextWords);
        QFETCH(int, maxSeqLen);
        QFETCH(int, docStride);
        QFETCH(int, expectedWindows);

        const std::string question = "where is the cat";
        const WordText context = asciiContext(contextWords);
        QaOptions options;
        options.maxSeqLen = maxSeqLen;
        options.docStride = docStride;

        const auto windows = buildQaWindows(*tiny_, question, context.text, options);
        QCOMPARE(static_cast<int>(windows.size()), expectedWindows);

        const Encoding questionEncoding = tiny_->encodeText(question);
        const Encoding contextEncoding = tiny_->encodeText(context.text);
        QCOMPARE(static_cast<int>(questionEncoding.ids.size()), 4);
        QCOMPARE(static_cast<int>(contextEncoding.ids.size()), contextWords);
        QCOMPARE(tiny_->clsId(), kBos);
        QCOMPARE(tiny_->sepId(), kEos);
        checkWindowLayout(windows, questionEncoding, contextEncoding, options, *tiny_);

        // Question offsets point into the question: "where" [0,5), "is" [6,8), ...
        QCOMPARE(windows.front().encoding.offsets[1], std::make_pair(0, 5));
        QCOMPARE(windows.front().encoding.offsets[4], std::make_pair(13, 16));
        if (contextWords > 0) {
            const auto& first = windows.front();
            QCOMPARE(first.encoding.offsets[first.contextTokenBegin], context.wordSpans.front());
            const auto& last = windows.back();
            QCOMPARE(last.encoding.offsets[last.contextTokenEnd - 1], context.wordSpans.back());
        } else {
            QCOMPARE(windows.front().contextTokenBegin, windows.front().contextTokenEnd);
            QCOMPARE(static_cast<int>(windows.front().encoding.ids.size()), 4 + 4);
        }
    }

    void windowsOnRobertaTokenizer_data() {
        QTest::addColumn<int>("maxSeqLen");
        QTest::addColumn<int>("docStride");
        QTest::newRow("64/16") << 64 << 16;
        QTest::newRow("40/0") << 40 << 0;
        QTest::newRow("384/128 (one window)") << 384 << 128;
    }

    void windowsOnRobertaTokenizer() {
        QFETCH(int, maxSeqLen);
        QFETCH(int, docStride);
        const QString dir = QStringLiteral(SCALESCOPE_SHARED_DATA) + "/roberta-base-tokenizer";
        if (!QFile::exists(dir + "/vocab.json"))
            QSKIP("shared data roberta-base-tokenizer is absent");
        static std::unique_ptr<BpeTokenizer> roberta = BpeTokenizer::loadFromDirectory(dir.toStdString());

        const std::string question = "Hello world!";
        std::string context;
        for (int i = 0; i < 8; ++i)
            context += "The Normans were the people who in the 10th and 11th centuries gave their name to "
                       "Normandy, a region in France. ";
        QaOptions options;
        options.maxSeqLen = maxSeqLen;
        options.docStride = docStride;
        const auto windows = buildQaWindows(*roberta, question, context, options);

        const Encoding questionEncoding = roberta->encodeText(question);
        const Encoding contextEncoding = roberta->encodeText(context);
        // Known roberta-base ids of "Hello world!".
        QCOMPARE(questionEncoding.ids, (std::vector<int64_t>{31414, 232, 328}));
        QVERIFY(contextEncoding.ids.size() > 100);
        checkWindowLayout(windows, questionEncoding, contextEncoding, options, *roberta);
        for (const auto& window : windows)
            QCOMPARE(window.encoding.ids.front(), int64_t(0));
    }

    // BERT windows: [CLS] question [SEP] context [SEP], the context and its [SEP] of type 1, on a
    // tiny WordPiece vocabulary (every word one token) and on the real bert-base-uncased one.
    void windowsOnWordPieceTokenizer_data() {
        QTest::addColumn<bool>("real");
        QTest::addColumn<int>("maxSeqLen");
        QTest::addColumn<int>("docStride");
        QTest::newRow("tiny 16/3") << false << 16 << 3;
        QTest::newRow("tiny 12/0") << false << 12 << 0;
        QTest::newRow("bert-base-uncased 64/16") << true << 64 << 16;
        QTest::newRow("bert-base-uncased 384/128 (one window)") << true << 384 << 128;
    }

    void windowsOnWordPieceTokenizer() {
        QFETCH(bool, real);
        QFETCH(int, maxSeqLen);
        QFETCH(int, docStride);
        std::unique_ptr<Tokenizer> tokenizer;
        QTemporaryDir tiny;
        std::string context;
        if (real) {
            const QString dir = QStringLiteral(SCALESCOPE_SHARED_DATA) + "/bert-base-uncased-tokenizer";
            if (!QFile::exists(dir + "/vocab.txt"))
                QSKIP("shared data bert-base-uncased-tokenizer is absent");
            tokenizer = loadTokenizer(dir.toStdString());
            for (int i = 0; i < 8; ++i)
                context += "The Normans were the people who in the 10th and 11th centuries gave their name to "
                           "Normandy, a region in France. ";
        } else {
            QVERIFY(tiny.isValid());
            testing::writeTinyWordPieceTokenizer(tiny.path().toStdString(), kTinyWords);
            tokenizer = loadTokenizer(tiny.path().toStdString());
            context = asciiContext(20).text;
        }
        QCOMPARE(tokenizer->specialTokensInPair(), 3);
        const std::string question = real ? "Hello world!" : "Where is the cat?";
        QaOptions options;
        options.maxSeqLen = maxSeqLen;
        options.docStride = docStride;
        const auto windows = buildQaWindows(*tokenizer, question, context, options);
        const Encoding questionEncoding = tokenizer->encodeText(question);
        const Encoding contextEncoding = tokenizer->encodeText(context);
        if (real) {
            // Known bert-base-uncased ids: [CLS]=101, hello=7592, world=2088, !=999, [SEP]=102.
            QCOMPARE(questionEncoding.ids, (std::vector<int64_t>{7592, 2088, 999}));
            QCOMPARE(windows.front().encoding.ids.front(), int64_t(101));
            QCOMPARE(windows.front().encoding.ids[4], int64_t(102));
            QVERIFY(contextEncoding.ids.size() > 100);
        } else {
            QCOMPARE(static_cast<int>(contextEncoding.ids.size()), 20);
        }
        QVERIFY(windows.size() >= 1);
        checkWindowLayout(windows, questionEncoding, contextEncoding, options, *tokenizer);
        // The windows are what the tokenizer's own pair encoding gives for the question and slice.
        if (windows.size() == 1)
            QCOMPARE(windows.front().encoding.typeIds, tokenizer->encodePair(question, context).typeIds);
    }

    void optionValidation_data() {
        QTest::addColumn<int>("maxSeqLen");
        QTest::addColumn<int>("docStride");
        QTest::addColumn<int>("maxAnswerLen");
        QTest::addColumn<int>("nBest");
        QTest::addColumn<int>("topK");
        QTest::addColumn<QString>("expected");
        // The 4-token question leaves maxSeqLen - 8 context tokens.
        QTest::newRow("max-seq-len below 8") << 7 << 0 << 30 << 20 << 1 << "--max-seq-len";
        QTest::newRow("question leaves no room") << 8 << 0 << 30 << 20 << 1 << "--max-seq-len";
        QTest::newRow("negative doc-stride") << 384 << -1 << 30 << 20 << 1 << "--doc-stride";
        QTest::newRow("doc-stride equals room") << 16 << 8 << 30 << 20 << 1 << "--doc-stride";
        QTest::newRow("doc-stride above room") << 16 << 128 << 30 << 20 << 1 << "--doc-stride";
        QTest::newRow("max-answer-len 0") << 384 << 128 << 0 << 20 << 1 << "--max-answer-len";
        QTest::newRow("n-best 0") << 384 << 128 << 30 << 0 << 1 << "n-best";
        QTest::newRow("top-k 0") << 384 << 128 << 30 << 20 << 0 << "--top-k";
        QTest::newRow("valid: room 1, stride 0") << 9 << 0 << 1 << 1 << 1 << "";
        QTest::newRow("valid: stride room - 1") << 16 << 7 << 30 << 20 << 1 << "";
    }

    void optionValidation() {
        QFETCH(int, maxSeqLen);
        QFETCH(int, docStride);
        QFETCH(int, maxAnswerLen);
        QFETCH(int, nBest);
        QFETCH(int, topK);
        QFETCH(QString, expected);
        QaOptions options;
        options.maxSeqLen = maxSeqLen;
        options.docStride = docStride;
        options.maxAnswerLen = maxAnswerLen;
        options.nBest = nBest;
        options.topK = topK;
        const QString message =
            errorOf([&] { buildQaWindows(*tiny_, "where is the cat", asciiContext(30).text, options); });
        if (expected.isEmpty()) {
            QVERIFY2(message.isEmpty(), qPrintable(message));
        } else {
            QVERIFY2(message.contains(expected), qPrintable(message));
        }
        if (expected == "--max-seq-len" && maxSeqLen == 8)
            QVERIFY2(message.contains("question"), qPrintable(message));
    }

    void postprocessOptionValidation_data() {
        QTest::addColumn<int>("maxAnswerLen");
        QTest::addColumn<int>("nBest");
        QTest::addColumn<int>("topK");
        QTest::addColumn<QString>("expected");
        QTest::newRow("max-answer-len 0") << 0 << 20 << 1 << "--max-answer-len";
        QTest::newRow("n-best -1") << 30 << -1 << 1 << "n-best";
        QTest::newRow("top-k -3") << 30 << 20 << -3 << "--top-k";
    }

    void postprocessOptionValidation() {
        QFETCH(int, maxAnswerLen);
        QFETCH(int, nBest);
        QFETCH(int, topK);
        QFETCH(QString, expected);
        const QaWindow window = makeWindow(2, kFoxOffsets);
        const auto logits = makeLogits(window, {});
        const QString message = errorOf([&] {
            postprocessQa({window}, {logits}, {logits}, kFoxContext, optionsWith(nBest, topK, maxAnswerLen));
        });
        QVERIFY2(message.contains(expected), qPrintable(message));
    }

    // ---- post-processing --------------------------------------------------------------------

    void spanSelection_data() {
        QTest::addColumn<LogitMap>("starts");
        QTest::addColumn<LogitMap>("ends");
        QTest::addColumn<int>("maxAnswerLen");
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("start");
        QTest::addColumn<int>("end");
        QTest::addColumn<float>("startLogit");
        QTest::addColumn<float>("endLogit");
        // Baseline -5 everywhere else; token layout in kFoxOffsets' comment.
        QTest::newRow("inside one window") << LogitMap{{7, 5}} << LogitMap{{8, 4}} << 30 << "brown fox" << 10 << 19
                                           << 5.f << 4.f;
        QTest::newRow("single token") << LogitMap{{12, 2}} << LogitMap{{12, 1}} << 30 << "lazy" << 35 << 39 << 2.f
                                      << 1.f;
        // (1, 8) would score 14 but starts in the question.
        QTest::newRow("start in question rejected") << LogitMap{{1, 10}, {7, 3}} << LogitMap{{8, 4}} << 30
                                                    << "brown fox" << 10 << 19 << 3.f << 4.f;
        // (0, 8) would score 14 but starts on <s>.
        QTest::newRow("start on <s> rejected") << LogitMap{{0, 10}, {7, 3}} << LogitMap{{8, 4}} << 30 << "brown fox"
                                               << 10 << 19 << 3.f << 4.f;
        // (7, 14) would score 13 but ends on the final </s>.
        QTest::newRow("end on </s> rejected") << LogitMap{{7, 3}} << LogitMap{{14, 10}, {8, 4}} << 30 << "brown fox"
                                              << 10 << 19 << 3.f << 4.f;
        // (13, 5) scores 20 backwards; the best valid pairs: (7, 8) = 7 beats (13, 13) = 5, (5, 5) = 5.
        QTest::newRow("end before start rejected") << LogitMap{{13, 10}, {7, 3}} << LogitMap{{5, 10}, {8, 4}} << 30
                                                   << "brown fox" << 10 << 19 << 3.f << 4.f;
        // (5, 13) = 20 is 9 tokens, (5, 8) = 14 is 4 tokens; with 3 allowed, (7, 8) = 7 wins.
        QTest::newRow("longer than max-answer-len rejected") << LogitMap{{5, 10}, {7, 3}}
                                                             << LogitMap{{13, 10}, {8, 4}} << 3 << "brown fox" << 10
                                                             << 19 << 3.f << 4.f;
        QTest::newRow("exactly max-answer-len accepted") << LogitMap{{5, 10}, {7, 3}} << LogitMap{{13, 10}, {8, 4}}
                                                         << 4 << "The quick brown fox" << 0 << 19 << 10.f << 4.f;
    }

    void spanSelection() {
        QFETCH(LogitMap, starts);
        QFETCH(LogitMap, ends);
        QFETCH(int, maxAnswerLen);
        QFETCH(QString, text);
        QFETCH(int, start);
        QFETCH(int, end);
        QFETCH(float, startLogit);
        QFETCH(float, endLogit);
        const QaWindow window = makeWindow(2, kFoxOffsets);
        const auto answers = postprocessQa({window}, {makeLogits(window, starts)}, {makeLogits(window, ends)},
                                           kFoxContext, optionsWith(20, 1, maxAnswerLen));
        QCOMPARE(answers.size(), std::size_t(1));
        const QaAnswer& best = answers.front();
        QCOMPARE(QString::fromStdString(best.text), text);
        QCOMPARE(best.start, start);
        QCOMPARE(best.end, end);
        QCOMPARE(best.text, kFoxContext.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(end - start)));
        QCOMPARE(best.startLogit, startLogit);
        QCOMPARE(best.endLogit, endLogit);
        QCOMPARE(best.window, 0);
        QVERIFY(!best.isNull);
        QVERIFY(best.score > 0.0f && best.score <= 1.0f);
    }

    void nBestLimitsCandidates() {
        // nBest 2: starts {7 (3), 6 (2)}, ends {9 (1), 8 (0.5)}; pairs 4, 3.5, 3, 2.5; two are kept.
        const QaWindow window = makeWindow(2, kFoxOffsets);
        const auto starts = makeLogits(window, {{7, 3}, {6, 2}});
        const auto ends = makeLogits(window, {{9, 1}, {8, 0.5f}});
        const auto answers = postprocessQa({window}, {starts}, {ends}, kFoxContext, optionsWith(2, 10));
        QCOMPARE(answers.size(), std::size_t(2));
        QCOMPARE(answers[0].text, std::string("brown fox jumps"));
        QCOMPARE(answers[1].text, std::string("brown fox"));
        // softmax over {4, 3.5}: 1 / (1 + e^-0.5) and its complement.
        QVERIFY(qAbs(answers[0].score - 0.6224593f) < 1e-5f);
        QVERIFY(qAbs(answers[1].score - 0.3775407f) < 1e-5f);

        // nBest 1 leaves the single pair (7, 9).
        const auto single = postprocessQa({window}, {starts}, {ends}, kFoxContext, optionsWith(1, 10));
        QCOMPARE(single.size(), std::size_t(1));
        QCOMPARE(single[0].text, std::string("brown fox jumps"));
        QCOMPARE(single[0].score, 1.0f);
    }

    void tiesPreferLowerIndex() {
        // Equal start logits at 6 and 7 and nBest 1: the lower index (6, "quick") is the candidate.
        const QaWindow window = makeWindow(2, kFoxOffsets);
        const auto answers = postprocessQa({window}, {makeLogits(window, {{6, 2}, {7, 2}})},
                                           {makeLogits(window, {{8, 1}})}, kFoxContext, optionsWith(1, 5));
        QCOMPARE(answers.size(), std::size_t(1));
        QCOMPARE(answers[0].text, std::string("quick brown fox"));
    }

    void probabilitiesAreSoftmax() {
        // Two context tokens "ab" [0,2) and "cd" [3,5): candidates (a,a) 1.5, (a,b) 3, (b,b) 2.
        const std::string context = "ab cd";
        const QaWindow window = makeWindow(1, {{0, 2}, {3, 5}});
        // Layout: 0 <s>, 1 question, 2-3 </s></s>, 4 ab, 5 cd, 6 </s>.
        const auto starts = makeLogits(window, {{4, 1.0f}, {5, 0.0f}});
        const auto ends = makeLogits(window, {{4, 0.5f}, {5, 2.0f}});
        const auto answers = postprocessQa({window}, {starts}, {ends}, context, optionsWith(20, 10));
        QCOMPARE(answers.size(), std::size_t(3));
        QCOMPARE(answers[0].text, std::string("ab cd"));
        QCOMPARE(answers[1].text, std::string("cd"));
        QCOMPARE(answers[2].text, std::string("ab"));
        // e^0, e^-1, e^-1.5 over their sum 1.5910096.
        QVERIFY(qAbs(answers[0].score - 0.6285317f) < 1e-5f);
        QVERIFY(qAbs(answers[1].score - 0.2312239f) < 1e-5f);
        QVERIFY(qAbs(answers[2].score - 0.1402444f) < 1e-5f);

        // Large logits must not overflow: the same differences shifted by 1000.
        auto shift = [](std::vector<float> v) {
            for (auto& x : v)
                x += 1000.0f;
            return v;
        };
        const auto shifted = postprocessQa({window}, {shift(starts)}, {shift(ends)}, context, optionsWith(20, 10));
        QCOMPARE(shifted.size(), std::size_t(3));
        QVERIFY(qAbs(shifted[0].score - 0.6285317f) < 1e-4f);
    }

    void probabilitiesSumToOne() {
        const QaWindow window = makeWindow(2, kFoxOffsets);
        std::vector<float> starts(window.encoding.ids.size());
        std::vector<float> ends(window.encoding.ids.size());
        for (std::size_t i = 0; i < starts.size(); ++i) {
            starts[i] = std::sin(static_cast<float>(i) * 1.7f) * 3.0f;
            ends[i] = std::cos(static_cast<float>(i) * 0.9f) * 3.0f;
        }
        // 9 context tokens, every pair e >= s is a candidate: 9 * 10 / 2 = 45.
        const auto answers = postprocessQa({window}, {starts}, {ends}, kFoxContext, optionsWith(100, 100));
        QCOMPARE(answers.size(), std::size_t(45));
        double sum = 0;
        for (std::size_t i = 0; i < answers.size(); ++i) {
            sum += answers[i].score;
            if (i > 0)
                QVERIFY(answers[i - 1].startLogit + answers[i - 1].endLogit >=
                        answers[i].startLogit + answers[i].endLogit);
        }
        QVERIFY(qAbs(sum - 1.0) < 1e-5);
        // Ratios of probabilities follow the score differences.
        const double ratio = answers[0].score / answers[1].score;
        const double expected = std::exp(double(answers[0].startLogit + answers[0].endLogit) -
                                         double(answers[1].startLogit + answers[1].endLogit));
        QVERIFY(qAbs(ratio - expected) < 1e-3 * expected);
    }

    void topKLimitsAnswers_data() {
        QTest::addColumn<int>("topK");
        QTest::addColumn<int>("expected");
        QTest::newRow("1") << 1 << 1;
        QTest::newRow("2") << 2 << 2;
        QTest::newRow("3 of 3") << 3 << 3;
        QTest::newRow("more than candidates") << 7 << 3;
    }

    void topKLimitsAnswers() {
        QFETCH(int, topK);
        QFETCH(int, expected);
        const QaWindow window = makeWindow(1, {{0, 2}, {3, 5}});
        const auto answers = postprocessQa({window}, {makeLogits(window, {{4, 1.0f}, {5, 0.0f}})},
                                           {makeLogits(window, {{4, 0.5f}, {5, 2.0f}})}, "ab cd",
                                           optionsWith(20, topK));
        QCOMPARE(static_cast<int>(answers.size()), expected);
        const std::vector<std::string> order = {"ab cd", "cd", "ab"};
        for (std::size_t i = 0; i < answers.size(); ++i)
            QCOMPARE(answers[i].text, order[i]);
    }

    void nullAnswer_data() {
        QTest::addColumn<bool>("thresholdSet");
        QTest::addColumn<float>("threshold");
        QTest::addColumn<bool>("nullWins");
        // Null score 4 + 3 = 7, best span (7, 8) 3 + 2 = 5: difference 2.
        QTest::newRow("threshold below difference") << true << 1.5f << true;
        QTest::newRow("threshold equal to difference") << true << 2.0f << false;
        QTest::newRow("threshold above difference") << true << 2.5f << false;
        QTest::newRow("negative threshold") << true << -3.0f << true;
        QTest::newRow("no threshold") << false << 0.0f << false;
    }

    void nullAnswer() {
        QFETCH(bool, thresholdSet);
        QFETCH(float, threshold);
        QFETCH(bool, nullWins);
        const QaWindow window = makeWindow(2, kFoxOffsets);
        const auto starts = makeLogits(window, {{0, 4}, {7, 3}});
        const auto ends = makeLogits(window, {{0, 3}, {8, 2}});
        // nBest 2: starts {0, 7}, ends {0, 8}; only (7, 8) avoids <s>, so it is the single span.
        QaOptions options = optionsWith(2, 3);
        if (thresholdSet)
            options.nullThreshold = threshold;
        const auto answers = postprocessQa({window}, {starts}, {ends}, kFoxContext, options);

        // With null competing: softmax over {7, 5} = 1 / (1 + e^-2) and e^-2 / (1 + e^-2).
        const float nullProbability = 0.8807971f;
        const float spanProbability = thresholdSet ? 0.1192029f : 1.0f;
        if (nullWins) {
            QCOMPARE(answers.size(), std::size_t(2));
            QVERIFY(answers[0].isNull);
            QCOMPARE(answers[0].text, std::string());
            QCOMPARE(answers[0].start, 0);
            QCOMPARE(answers[0].end, 0);
            QCOMPARE(answers[0].window, -1);
            QCOMPARE(answers[0].startLogit, 4.0f);
            QCOMPARE(answers[0].endLogit, 3.0f);
            QVERIFY(qAbs(answers[0].score - nullProbability) < 1e-5f);
        } else {
            QCOMPARE(answers.size(), std::size_t(1));
        }
        const QaAnswer& span = answers.back();
        QVERIFY(!span.isNull);
        QCOMPARE(span.text, std::string("brown fox"));
        QVERIFY(qAbs(span.score - spanProbability) < 1e-5f);
        // The null margin, what the threshold is compared with: 7 - 5 on every answer; NaN when
        // the null answer does not compete.
        for (const QaAnswer& a : answers) {
            if (thresholdSet)
                QCOMPARE(a.nullMargin, 2.0f);
            else
                QVERIFY(std::isnan(a.nullMargin));
        }
    }

    void nullScoreIsMinimumOverWindows() {
        // Window 0: null 4 + 3 = 7; window 1: null 1 + 2 = 3; best span 5 (window 0).
        // With threshold 0: min null 3 - 5 < 0, the span wins (the max, 7, would let null win).
        const QaWindow first = makeWindow(2, {{0, 3}, {4, 9}, {10, 15}, {16, 19}});
        const QaWindow second = makeWindow(2, {{10, 15}, {16, 19}, {20, 25}, {26, 30}});
        const std::vector<std::vector<float>> starts = {makeLogits(first, {{0, 4}, {7, 3}}),
                                                        makeLogits(second, {{0, 1}})};
        const std::vector<std::vector<float>> ends = {makeLogits(first, {{0, 3}, {8, 2}}),
                                                      makeLogits(second, {{0, 2}})};
        QaOptions options = optionsWith(20, 1);
        options.nullThreshold = 0.0f;
        auto answers = postprocessQa({first, second}, starts, ends, kFoxContext, options);
        QCOMPARE(answers.size(), std::size_t(1));
        QVERIFY(!answers[0].isNull);
        QCOMPARE(answers[0].text, std::string("brown fox"));

        // Threshold -2.5: 3 - 5 = -2 > -2.5, null wins, carrying window 1's logits.
        options.nullThreshold = -2.5f;
        answers = postprocessQa({first, second}, starts, ends, kFoxContext, options);
        QCOMPARE(answers.size(), std::size_t(1));
        QVERIFY(answers[0].isNull);
        QCOMPARE(answers[0].startLogit, 1.0f);
        QCOMPARE(answers[0].endLogit, 2.0f);
    }

    void noCandidates() {
        // A window without context tokens (empty context) has no span.
        const QaWindow window = makeWindow(3, {});
        const auto starts = makeLogits(window, {{0, 1}});
        const auto ends = makeLogits(window, {{0, 1}});
        QaOptions options = optionsWith(20, 3);
        QVERIFY(postprocessQa({window}, {starts}, {ends}, "", options).empty());

        options.nullThreshold = 0.0f;
        const auto answers = postprocessQa({window}, {starts}, {ends}, "", options);
        QCOMPARE(answers.size(), std::size_t(1));
        QVERIFY(answers[0].isNull);
        QCOMPARE(answers[0].score, 1.0f);
        QVERIFY(std::isinf(answers[0].nullMargin)); // no span at all

        // Spans that all break a rule are no candidates either: maxAnswerLen 1 and only a
        // two-token pair in the top-1 lists.
        const QaWindow fox = makeWindow(2, kFoxOffsets);
        QVERIFY(postprocessQa({fox}, {makeLogits(fox, {{7, 3}})}, {makeLogits(fox, {{8, 3}})}, kFoxContext,
                              optionsWith(1, 3, 1))
                    .empty());
    }

    void duplicateSpansKeepBestWindow() {
        // "brown" and "fox" sit in both windows; window 1 scores the span 8, window 0 scores it 5.
        const QaWindow first = makeWindow(2, {{0, 3}, {4, 9}, {10, 15}, {16, 19}});
        const QaWindow second = makeWindow(2, {{10, 15}, {16, 19}, {20, 25}, {26, 30}});
        // first: 5 The 6 quick 7 brown 8 fox; second: 5 brown 6 fox 7 jumps 8 over.
        const std::vector<std::vector<float>> starts = {makeLogits(first, {{7, 3}}), makeLogits(second, {{5, 5}})};
        const std::vector<std::vector<float>> ends = {makeLogits(first, {{8, 2}}), makeLogits(second, {{6, 3}})};
        const auto answers = postprocessQa({first, second}, starts, ends, kFoxContext, optionsWith(20, 100));
        int brownFoxCount = 0;
        for (const auto& answer : answers)
            brownFoxCount += (answer.start == 10 && answer.end == 19) ? 1 : 0;
        QCOMPARE(brownFoxCount, 1);
        QCOMPARE(answers[0].text, std::string("brown fox"));
        QCOMPARE(answers[0].window, 1);
        QCOMPARE(answers[0].startLogit, 5.0f);
        QCOMPARE(answers[0].endLogit, 3.0f);
        // Distinct spans in the union of both windows: 4 * 5 / 2 = 10 per window, 3 shared.
        QCOMPARE(answers.size(), std::size_t(17));
    }

    void nonAsciiContext_data() {
        QTest::addColumn<int>("startToken");
        QTest::addColumn<int>("endToken");
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("start");
        QTest::addColumn<int>("end");
        // "naïve café über": naïve [0,5), café [6,10), über [11,15) in code points; the bytes of
        // ï, é and ü are two each, so byte positions would differ from these.
        QTest::newRow("two words") << 1 << 2 << QString::fromUtf8("caf\xC3\xA9 \xC3\xBC" "ber") << 6 << 15;
        QTest::newRow("last word") << 2 << 2 << QString::fromUtf8("\xC3\xBC" "ber") << 11 << 15;
        QTest::newRow("first word") << 0 << 0 << QString::fromUtf8("na\xC3\xAFve") << 0 << 5;
    }

    void nonAsciiContext() {
        QFETCH(int, startToken);
        QFETCH(int, endToken);
        QFETCH(QString, text);
        QFETCH(int, start);
        QFETCH(int, end);
        const std::string context = "na\xC3\xAFve caf\xC3\xA9 \xC3\xBC" "ber";
        const QaWindow window = makeWindow(2, {{0, 5}, {6, 10}, {11, 15}});
        const auto answers = postprocessQa({window}, {makeLogits(window, {{window.contextTokenBegin + startToken, 4}})},
                                           {makeLogits(window, {{window.contextTokenBegin + endToken, 4}})}, context,
                                           optionsWith(20, 1));
        QCOMPARE(answers.size(), std::size_t(1));
        QCOMPARE(QString::fromStdString(answers[0].text), text);
        QCOMPARE(answers[0].start, start);
        QCOMPARE(answers[0].end, end);
        QCOMPARE(QString::fromUtf8(context.c_str()).mid(start, end - start), text);
    }

    void logitValidation_data() {
        QTest::addColumn<int>("startWindows");
        QTest::addColumn<int>("startDelta");
        QTest::addColumn<int>("endDelta");
        QTest::addColumn<bool>("nanLogit");
        QTest::addColumn<QString>("expected");
        QTest::newRow("start logits one short") << 1 << -1 << 0 << false << "start logits of window 0";
        QTest::newRow("end logits one long") << 1 << 0 << 1 << false << "end logits of window 0";
        QTest::newRow("missing window") << 0 << 0 << 0 << false << "windows";
        QTest::newRow("extra window") << 2 << 0 << 0 << false << "windows";
        QTest::newRow("NaN logit") << 1 << 0 << 0 << true << "not finite";
    }

    void logitValidation() {
        QFETCH(int, startWindows);
        QFETCH(int, startDelta);
        QFETCH(int, endDelta);
        QFETCH(bool, nanLogit);
        QFETCH(QString, expected);
        const QaWindow window = makeWindow(2, kFoxOffsets);
        const std::size_t length = window.encoding.ids.size();
        std::vector<float> start(length + static_cast<std::size_t>(startDelta), 0.0f);
        const std::vector<float> end(length + static_cast<std::size_t>(endDelta), 0.0f);
        if (nanLogit)
            start[7] = std::nanf("");
        std::vector<std::vector<float>> starts(static_cast<std::size_t>(startWindows), start);
        const QString message =
            errorOf([&] { postprocessQa({window}, starts, {end}, kFoxContext, optionsWith(20, 1)); });
        QVERIFY2(message.contains(expected), qPrintable(message));
    }

    // ---- windowing and post-processing together ---------------------------------------------

    void bestSpanInSecondWindow() {
        // 20 context words, question 4 tokens, maxSeqLen 16, stride 3: room 8, window 1 holds
        // context tokens 5..12, of which 8..12 are in no other earlier window.
        const std::string question = "where is the cat";
        const WordText context = asciiContext(20);
        QaOptions options;
        options.maxSeqLen = 16;
        options.docStride = 3;
        options.topK = 2;
        const auto windows = buildQaWindows(*tiny_, question, context.text, options);
        QCOMPARE(windows.size(), std::size_t(4));

        std::vector<std::vector<float>> starts;
        std::vector<std::vector<float>> ends;
        for (const auto& window : windows) {
            starts.push_back(makeLogits(window, {}));
            ends.push_back(makeLogits(window, {}));
        }
        // Window 0: context tokens 1..2 score 2 + 2 = 4.
        starts[0][static_cast<std::size_t>(windows[0].contextTokenBegin + 1)] = 2;
        ends[0][static_cast<std::size_t>(windows[0].contextTokenBegin + 2)] = 2;
        // Window 1: context tokens 9..11 ("to the park") score 3 + 4 = 7.
        const int startInWindow = windows[1].contextTokenBegin + (9 - 5);
        const int endInWindow = windows[1].contextTokenBegin + (11 - 5);
        starts[1][static_cast<std::size_t>(startInWindow)] = 3;
        ends[1][static_cast<std::size_t>(endInWindow)] = 4;

        const auto answers = postprocessQa(windows, starts, ends, context.text, options);
        QCOMPARE(answers.size(), std::size_t(2));
        QCOMPARE(answers[0].window, 1);
        QCOMPARE(answers[0].start, context.wordSpans[9].first);
        QCOMPARE(answers[0].end, context.wordSpans[11].second);
        QCOMPARE(answers[0].text, std::string("to the park"));
        QCOMPARE(answers[0].text, context.text.substr(static_cast<std::size_t>(answers[0].start),
                                                      static_cast<std::size_t>(answers[0].end - answers[0].start)));
        QCOMPARE(answers[1].window, 0);
        QCOMPARE(answers[1].text, std::string("cat sat"));
        // Probabilities keep the ratio of exp(score): e^(7 - 4).
        QVERIFY(qAbs(answers[0].score / answers[1].score - std::exp(3.0f)) < 1e-2f);
    }

    void nonAsciiContextThroughTokenizer() {
        const std::string context = "na\xC3\xAFve caf\xC3\xA9 \xC3\xBC" "ber the cat";
        QaOptions options;
        options.maxSeqLen = 16;
        options.docStride = 1;
        const auto windows = buildQaWindows(*tiny_, "where is the cat", context, options);
        QCOMPARE(windows.size(), std::size_t(1));
        const auto& window = windows[0];
        QCOMPARE(window.contextTokenEnd - window.contextTokenBegin, 5);
        const std::vector<std::pair<int, int>> wordSpans = {{0, 5}, {6, 10}, {11, 15}, {16, 19}, {20, 23}};
        for (int i = 0; i < 5; ++i)
            QCOMPARE(window.encoding.offsets[window.contextTokenBegin + i], wordSpans[i]);

        const auto answers = postprocessQa(windows, {makeLogits(window, {{window.contextTokenBegin + 1, 6}})},
                                           {makeLogits(window, {{window.contextTokenBegin + 2, 6}})}, context, options);
        QCOMPARE(answers.size(), std::size_t(1));
        QCOMPARE(answers[0].text, std::string("caf\xC3\xA9 \xC3\xBC" "ber"));
        QCOMPARE(answers[0].start, 6);
        QCOMPARE(answers[0].end, 15);
    }
};

QTEST_GUILESS_MAIN(TestQuestionAnswering)
#include "test_question_answering.moc"
