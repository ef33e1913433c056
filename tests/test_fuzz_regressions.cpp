// Replays every input the fuzzers ever crashed on (tests/data/fuzz_regressions/<target>/), and the
// fuzzers' seed corpora (fuzz/corpus/<target>/), through the same entry points the fuzzers call
// (fuzz/fuzz_entry_points.h): each must end in success or a scalescope::Error, never in another
// exception or a crash. Then checks, at and just past each bound, the limits that keep hostile
// files from exhausting memory or time.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <unistd.h>

#include "../fuzz/fuzz_entry_points.h"

using namespace scalescope;

namespace {

// The tests folder (CMake defines it; __FILE__ may be relative when ccache rewrites paths).
const QString kSourceDir = QStringLiteral(QT_TESTCASE_SOURCEDIR);
const QStringList kTargets = {"safetensors",      "config",         "tokenizer_files", "wordpiece_files", "unigram_files",
                               "tokenizer_encode", "squad",          "runner_request",  "thresholds",      "task_datasets"};

std::string readBytes(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    const QByteArray bytes = file.readAll();
    return std::string(bytes.constData(), static_cast<std::size_t>(bytes.size()));
}

void writeBytes(const QString& path, const std::string& bytes)
{
    QFile file(path);
    QVERIFY2(file.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(path));
    QCOMPARE(file.write(bytes.data(), static_cast<qint64>(bytes.size())), static_cast<qint64>(bytes.size()));
}

std::string littleEndian64(uint64_t value)
{
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i)
        bytes[static_cast<std::size_t>(i)] = static_cast<char>((value >> (8 * i)) & 0xFF);
    return bytes;
}

// A safetensors file with `count` zero-size U8 tensors (they need no data bytes), and optionally a
// __metadata__ entry, which is not a tensor.
std::string manyEmptyTensors(std::size_t count, bool withMetadata)
{
    std::string header = withMetadata ? "{\"__metadata__\":{\"format\":\"pt\"}" : "{";
    for (std::size_t i = 0; i < count; ++i) {
        if (i || withMetadata)
            header += ',';
        header += "\"t" + std::to_string(i) + "\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}";
    }
    header += '}';
    return littleEndian64(header.size()) + header;
}

// Runs `call`; returns the scalescope::Error message, or "" when it succeeded.
template <typename Call>
QString errorOf(Call call)
{
    try {
        call();
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

nlohmann::json validConfig()
{
    return {{"architectures", {"RobertaForQuestionAnswering"}},
            {"vocab_size", 50265},
            {"hidden_size", 768},
            {"num_hidden_layers", 12},
            {"num_attention_heads", 12},
            {"intermediate_size", 3072},
            {"max_position_embeddings", 514},
            {"type_vocab_size", 1},
            {"pad_token_id", 1}};
}

nlohmann::json oneQuestionSquad(const std::string& question, std::size_t answers)
{
    nlohmann::json answerList = nlohmann::json::array();
    for (std::size_t i = 0; i < answers; ++i)
        answerList.push_back({{"text", "c"}, {"answer_start", 0}});
    return {{"version", "1.1"},
            {"data",
             {{{"title", "t"},
               {"paragraphs", {{{"context", "c"}, {"qas", {{{"id", "q"}, {"question", question}, {"answers", answerList}}}}}}}}}}};
}

} // namespace

class TestFuzzRegressions : public QObject {
    Q_OBJECT

private:
    fuzz::ScratchDirectory scratch_;
    std::unique_ptr<BpeTokenizer> encodeTokenizer_;

    const BpeTokenizer& encodeTokenizer()
    {
        // The encode fuzzer's tokenizer: roberta-base when the shared data is there, else the tiny
        // byte-level one. Both have all 256 byte symbols, so the lossless check applies to both.
        if (!encodeTokenizer_) {
            const std::string roberta = std::string(SCALESCOPE_SHARED_DATA) + "/roberta-base-tokenizer";
            if (fileExists(joinPath(roberta, "vocab.json"))) {
                encodeTokenizer_ = BpeTokenizer::loadFromDirectory(roberta);
            } else {
                fuzz::writeTinyByteLevelTokenizer(scratch_.path());
                encodeTokenizer_ = BpeTokenizer::loadFromDirectory(scratch_.path());
            }
        }
        return *encodeTokenizer_;
    }

private slots:
    void replaysInput_data()
    {
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("path");
        int regressions = 0;
        for (const QString& target : kTargets) {
            const QStringList folders = {kSourceDir + "/data/fuzz_regressions/" + target,
                                         kSourceDir + "/../fuzz/corpus/" + target};
            for (const QString& folder : folders) {
                const bool isRegression = folder.contains("fuzz_regressions");
                const QFileInfoList files = QDir(folder).entryInfoList(QDir::Files, QDir::Name);
                for (const QFileInfo& file : files) {
                    const QString row = (isRegression ? "regression " : "seed ") + target + "/" + file.fileName();
                    QTest::newRow(qPrintable(row)) << target << file.absoluteFilePath();
                    regressions += isRegression ? 1 : 0;
                }
            }
        }
        // The folders ship with the sources; finding none means the path broke, not that all is well.
        QVERIFY2(regressions > 0, qPrintable("no regression inputs under " + kSourceDir + "/data/fuzz_regressions"));
    }

    void replaysInput()
    {
        QFETCH(QString, target);
        QFETCH(QString, path);
        const std::string input = readBytes(path);
        try {
            if (target == "safetensors")
                fuzz::runSafetensorsInput(input, scratch_.path());
            else if (target == "config")
                fuzz::runConfigInput(input, scratch_.path());
            else if (target == "tokenizer_files")
                fuzz::runTokenizerFilesInput(input, scratch_.path());
            else if (target == "wordpiece_files")
                fuzz::runWordPieceFilesInput(input, scratch_.path());
            else if (target == "unigram_files")
                fuzz::runUnigramFilesInput(input, scratch_.path());
            else if (target == "tokenizer_encode")
                fuzz::runTokenizerEncodeInput(encodeTokenizer(), input, true);
            else if (target == "squad")
                fuzz::runSquadInput(input);
            else if (target == "runner_request")
                fuzz::runRunnerRequestInput(input);
            else if (target == "thresholds")
                fuzz::runThresholdsInput(input, scratch_.path());
            else if (target == "task_datasets")
                fuzz::runTaskDatasetsInput(input, scratch_.path());
            else
                QFAIL(qPrintable("unknown target " + target));
        } catch (const Error& e) {
            // A clean refusal names what it refuses; an empty message would be no help to a user.
            QVERIFY2(std::string(e.what()).size() > 10, e.what());
        } catch (const std::exception& e) {
            QFAIL(qPrintable(QString("an exception other than scalescope::Error escaped: ") + e.what()));
        }
    }

    // The 100 MiB header bound is checked from the 8-byte length alone, before anything is read.
    void safetensorsHeaderLengthLimit_data()
    {
        QTest::addColumn<quint64>("headerLength");
        QTest::addColumn<QString>("expected");
        const quint64 limit = 100ull * 1024 * 1024;
        QTest::newRow("at the limit") << limit << "runs past the end";
        QTest::newRow("one past") << limit + 1 << "larger than the limit of 104857600 bytes";
        QTest::newRow("2^64 - 1") << ~0ull << "larger than the limit of 104857600 bytes";
    }

    void safetensorsHeaderLengthLimit()
    {
        QFETCH(quint64, headerLength);
        QFETCH(QString, expected);
        const QString path = QString::fromStdString(scratch_.path()) + "/length.safetensors";
        writeBytes(path, littleEndian64(headerLength) + "{}");
        const QString message = errorOf([&] { SafetensorsFile::open(path.toStdString()); });
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY2(message.contains(path), qPrintable(message));
    }

    void safetensorsTensorCountLimit_data()
    {
        QTest::addColumn<int>("tensors");
        QTest::addColumn<bool>("withMetadata");
        QTest::addColumn<bool>("accepted");
        QTest::newRow("100000") << 100000 << false << true;
        QTest::newRow("100000 and __metadata__") << 100000 << true << true;
        QTest::newRow("100001") << 100001 << false << false;
        QTest::newRow("100001 and __metadata__") << 100001 << true << false;
    }

    void safetensorsTensorCountLimit()
    {
        QFETCH(int, tensors);
        QFETCH(bool, withMetadata);
        QFETCH(bool, accepted);
        const QString path = QString::fromStdString(scratch_.path()) + "/many.safetensors";
        writeBytes(path, manyEmptyTensors(static_cast<std::size_t>(tensors), withMetadata));
        std::size_t opened = 0;
        const QString message = errorOf([&] { opened = SafetensorsFile::open(path.toStdString())->tensors().size(); });
        if (accepted) {
            QVERIFY2(message.isEmpty(), qPrintable(message));
            QCOMPARE(opened, static_cast<std::size_t>(tensors));
        } else {
            QVERIFY2(message.contains("lists 100001 tensors") && message.contains("limit of 100000"), qPrintable(message));
        }
    }

    void safetensorsIndexTensorCountLimit()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        nlohmann::json weightMap = nlohmann::json::object();
        for (int i = 0; i <= 100000; ++i)
            weightMap["t" + std::to_string(i)] = "model-00001.safetensors";
        writeBytes(dir.filePath("model.safetensors.index.json"), nlohmann::json{{"weight_map", weightMap}}.dump());
        const QString message = errorOf([&] { TensorStore::openDirectory(dir.path().toStdString()); });
        QVERIFY2(message.contains("maps 100001 tensors") && message.contains("limit of 100000"), qPrintable(message));
    }

    // A number past double's range is an out_of_range error in nlohmann::json, not a parse error;
    // every reader must still turn it into one sentence naming the file.
    void numberOverflowIsAnError_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::newRow("config.json") << "config";
        QTest::newRow("safetensors header") << "safetensors";
        QTest::newRow("SQuAD file") << "squad";
        QTest::newRow("vocab.json") << "vocab";
    }

    void numberOverflowIsAnError()
    {
        QFETCH(QString, kind);
        const std::string dir = scratch_.path();
        QString message;
        std::string named;
        if (kind == "config") {
            named = joinPath(dir, "config.json");
            writeBytes(QString::fromStdString(named), R"({"vocab_size": 1e400})");
            message = errorOf([&] { loadModelConfig(named); });
        } else if (kind == "safetensors") {
            named = joinPath(dir, "overflow.safetensors");
            const std::string header = R"({"w":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}})";
            writeBytes(QString::fromStdString(named), littleEndian64(header.size()) + header + "abcd");
            message = errorOf([&] { SafetensorsFile::open(named); });
        } else if (kind == "squad") {
            named = "overflow.json";
            message = errorOf([&] { parseSquadJson(R"({"version": 2e308, "data": []})", named); });
        } else {
            named = joinPath(dir, "vocab.json");
            const std::string merges = joinPath(dir, "merges.txt");
            writeBytes(QString::fromStdString(named), R"({"<s>": -1e500})");
            writeBytes(QString::fromStdString(merges), "");
            message = errorOf([&] { BpeTokenizer::loadFromFiles(named, merges); });
        }
        QVERIFY2(message.contains(QString::fromStdString(named)), qPrintable(message));
        QVERIFY2(message.contains("too large"), qPrintable(message));
    }

    void configSizeLimits_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<qint64>("limit");
        QTest::newRow("vocab_size") << "vocab_size" << qint64(10'000'000);
        QTest::newRow("hidden_size") << "hidden_size" << qint64(65'536);
        QTest::newRow("num_hidden_layers") << "num_hidden_layers" << qint64(1'000);
        QTest::newRow("num_attention_heads") << "num_attention_heads" << qint64(1'024);
        QTest::newRow("intermediate_size") << "intermediate_size" << qint64(1'000'000);
        QTest::newRow("max_position_embeddings") << "max_position_embeddings" << qint64(1'000'000);
        QTest::newRow("type_vocab_size") << "type_vocab_size" << qint64(1'000);
    }

    void configSizeLimits()
    {
        QFETCH(QString, key);
        QFETCH(qint64, limit);
        nlohmann::json config = validConfig();
        // hidden_size must stay a multiple of the head count at both ends of each range.
        if (key == "hidden_size" || key == "num_attention_heads") {
            config["hidden_size"] = 65'536;
            config["num_attention_heads"] = 1'024;
        }
        config[key.toStdString()] = limit;
        QString message = errorOf([&] { parseModelConfig(config, "limits/config.json"); });
        QVERIFY2(message.isEmpty(), qPrintable(message));

        config[key.toStdString()] = limit + 1;
        message = errorOf([&] { parseModelConfig(config, "limits/config.json"); });
        QVERIFY2(message.contains("limits/config.json") && message.contains(key) &&
                     message.contains(QString::number(limit)),
                 qPrintable(message));
    }

    void vocabularyIdLimit()
    {
        const std::string dir = scratch_.path();
        const std::string vocab = joinPath(dir, "vocab.json");
        const std::string merges = joinPath(dir, "merges.txt");
        writeBytes(QString::fromStdString(vocab), R"({"<s>": 0, "far": 10000000})");
        writeBytes(QString::fromStdString(merges), "");
        const QString message = errorOf([&] { BpeTokenizer::loadFromFiles(vocab, merges); });
        QVERIFY2(message.contains(QString::fromStdString(vocab)) && message.contains("10000000") &&
                     message.contains("limit"),
                 qPrintable(message));
    }

    // At the depth bound (128) a file parses; one level more is refused with the file and the
    // byte where the bound is passed; brackets inside strings do not count.
    void jsonNestingLimit_data()
    {
        QTest::addColumn<int>("depth");
        QTest::addColumn<bool>("accepted");
        QTest::newRow("at the limit") << 128 << true;
        QTest::newRow("one past") << 129 << false;
        QTest::newRow("100000 levels") << 100000 << false;
    }

    void jsonNestingLimit()
    {
        QFETCH(int, depth);
        QFETCH(bool, accepted);
        const std::size_t n = static_cast<std::size_t>(depth) - 1; // inside the enclosing object
        const std::string nested = std::string(n, '[') + std::string(n, ']');
        const std::string path = joinPath(scratch_.path(), "deep.json");
        writeBytes(QString::fromStdString(path), "{\"s\": \"[[[[[[[[[[[[[[[[\", \"x\": " + nested + "}");
        QString message = errorOf([&] { readJsonFile(path); });
        if (accepted)
            QVERIFY2(message.isEmpty(), qPrintable(message));
        else
            QVERIFY2(message.contains(QString::fromStdString(path)) && message.contains("more than 128 levels deep") &&
                         message.contains("at byte 158"),
                     qPrintable(message));

        const std::string header = "{\"__metadata__\": {\"n\": \"x\"}, \"deep\": " + nested + "}";
        const std::string file = joinPath(scratch_.path(), "deep.safetensors");
        writeBytes(QString::fromStdString(file), littleEndian64(header.size()) + header);
        message = errorOf([&] { SafetensorsFile::open(file); });
        if (accepted)
            QVERIFY2(!message.contains("levels deep"), qPrintable(message)); // refused later, for its content
        else
            QVERIFY2(message.contains(QString::fromStdString(file)) && message.contains("more than 128 levels deep"),
                     qPrintable(message));
    }

    void textLengthLimit()
    {
        const BpeTokenizer& tokenizer = encodeTokenizer();
        const std::string tooLong(10u * 1024u * 1024u + 1u, 'a');
        const QString message = errorOf([&] { tokenizer.encode(tooLong); });
        QVERIFY2(message.contains("10485761 bytes") && message.contains("limit of 10485760"), qPrintable(message));
    }

    void squadQuestionLimits_data()
    {
        QTest::addColumn<int>("questionBytes");
        QTest::addColumn<int>("answers");
        QTest::addColumn<QString>("expected");
        QTest::newRow("question at the limit") << 20'000 << 1 << "";
        QTest::newRow("question one byte past") << 20'001 << 1 << "question is 20001 bytes long";
        QTest::newRow("answers at the limit") << 5 << 1'000 << "";
        QTest::newRow("answers one past") << 5 << 1'001 << "answers has 1001 entries";
    }

    void squadQuestionLimits()
    {
        QFETCH(int, questionBytes);
        QFETCH(int, answers);
        QFETCH(QString, expected);
        const nlohmann::json squad =
            oneQuestionSquad(std::string(static_cast<std::size_t>(questionBytes), 'q'), static_cast<std::size_t>(answers));
        std::size_t golds = 0;
        const QString message = errorOf([&] { golds = parseSquadJson(squad.dump(), "limits.json").examples[0].golds.size(); });
        if (expected.isEmpty()) {
            QVERIFY2(message.isEmpty(), qPrintable(message));
            QCOMPARE(golds, static_cast<std::size_t>(answers));
        } else {
            QVERIFY2(message.contains("limits.json") && message.contains(expected), qPrintable(message));
        }
    }
};

QTEST_GUILESS_MAIN(TestFuzzRegressions)
#include "test_fuzz_regressions.moc"
