// SQuAD evaluation: the official metric's aggregation against hand-computed scores (v1 and v2
// no-answer cases), the SQuAD reader's errors and version detection, evaluateSquad end to end on
// generated checkpoints (batched answers equal per-question answers, per-layer detail equals
// compareRuns, cancellation keeps finished questions), the shared SQuAD 2.0 sample, and the CLI.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <atomic>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/option_flags.h"
#include "tasks/compare_runs.h"
#include "analysis/squad_metric.h"
#include "common/error.h"
#include "engine/compute_threads.h"
#include "engine/encoder_model.h"
#include "tasks/answer_question.h"
#include "tasks/evaluate.h"
#include "tasks/squad_dataset.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

SquadExample example(const std::string& id, std::vector<std::string> golds)
{
    SquadExample e;
    e.id = id;
    e.question = "q " + id;
    e.context = "c";
    e.golds = std::move(golds);
    e.isImpossible = e.golds.empty();
    return e;
}

void writeText(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary);
    out << text;
}

std::string readText(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// What the reader threw, or "" when it did not.
QString readerError(const std::string& text)
{
    try {
        parseSquadJson(text, "sample.json");
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

// A small SQuAD 2.0 file in the tiny fixture's vocabulary (other words still encode, byte by byte).
json tinySquad()
{
    const std::string longContext = [] {
        std::string text;
        for (int i = 0; i < 12; ++i)
            text += "the dog sat on the mat and a cat sat on a dog . ";
        return text + "Paris is the capital of France";
    }();
    return {
        {"version", "v2.0"},
        {"data",
         {{{"title", "Cats"},
           {"paragraphs",
            {{{"context", "the cat sat on the mat"},
              {"qas",
               {{{"id", "q1"}, {"question", "where is the cat ?"},
                 {"answers", {{{"text", "on the mat"}, {"answer_start", 12}}}}, {"is_impossible", false}},
                {{"id", "q2"}, {"question", "what sat on the mat ?"},
                 {"answers", {{{"text", "the cat"}, {"answer_start", 0}}, {{"text", "cat"}, {"answer_start", 4}}}},
                 {"is_impossible", false}},
                {{"id", "q3"}, {"question", "where is the dog ?"}, {"answers", json::array()},
                 {"plausible_answers", {{{"text", "mat"}, {"answer_start", 19}}}}, {"is_impossible", true}}}}},
             {{"context", "Paris is the capital of France"},
              {"qas",
               {{{"id", "q4"}, {"question", "what is the capital of France ?"},
                 {"answers", {{{"text", "Paris"}, {"answer_start", 0}}}}, {"is_impossible", false}},
                {{"id", "q5"}, {"question", "where is Paris ?"},
                 {"answers", {{{"text", "France"}, {"answer_start", 24}}}}, {"is_impossible", false}},
                {{"id", "q6"}, {"question", "what is the capital of the dog ?"}, {"answers", json::array()},
                 {"is_impossible", true}}}}},
             {{"context", longContext},
              {"qas",
               {{{"id", "q7"}, {"question", "what is the capital of France ?"},
                 {"answers", {{{"text", "Paris"}, {"answer_start", int(longContext.size()) - 30}}}},
                 {"is_impossible", false}},
                {{"id", "q8"}, {"question", "where is the dog ?"},
                 {"answers", {{{"text", "on the mat"}, {"answer_start", 12}}}}, {"is_impossible", false}}}}}}}}}},
    };
}

EvaluationOptions smallWindows()
{
    EvaluationOptions options;
    options.qa.maxSeqLen = 48; // the long context needs several windows
    options.qa.docStride = 8;
    options.batchSize = 5;     // batches cut across questions and through the middle of one
    return options;
}

std::string predictionOf(const QaAnswer& answer)
{
    return answer.isNull ? std::string() : answer.text;
}

} // namespace

class TestEvaluate : public QObject {
    Q_OBJECT

private:
    std::string floatDir_;
    std::string fp8Dir_;
    std::string otherFloatDir_; // same sizes, other weights: a reference that disagrees often
    std::vector<std::string> tempDirs_;

    std::string tempDir(const std::string& prefix)
    {
        tempDirs_.push_back(makeTempDir(prefix));
        return tempDirs_.back();
    }

private slots:
    void initTestCase()
    {
        setComputeThreads(2);
        TinyModelSpec spec;
        floatDir_ = tempDir("eval-float");
        writeTinyFloatCheckpoint(floatDir_, spec);
        fp8Dir_ = tempDir("eval-fp8") + "/m";
        writeTinyFp8Checkpoint(floatDir_, fp8Dir_, {"channel", "token", "F32"});
        TinyModelSpec other = spec;
        other.seed = 99;
        otherFloatDir_ = tempDir("eval-other");
        writeTinyFloatCheckpoint(otherFloatDir_, other);
    }

    void cleanupTestCase()
    {
        for (const std::string& dir : tempDirs_)
            QDir(QString::fromStdString(dir)).removeRecursively();
    }

    // ---- the metric ------------------------------------------------------------------------

    void perQuestionScore_data()
    {
        QTest::addColumn<QString>("prediction");
        QTest::addColumn<QStringList>("golds");
        QTest::addColumn<double>("exact");
        QTest::addColumn<double>("f1");
        QTest::newRow("exact after normalisation") << "the Paris." << QStringList{"Paris"} << 1.0 << 1.0;
        QTest::newRow("best of several golds") << "city of Paris" << QStringList{"Paris", "the city of Paris"} << 1.0
                                               << 1.0;
        // pred {in, paris}, gold {paris}: precision 1/2, recall 1 -> 2/3.
        QTest::newRow("partial") << "in Paris" << QStringList{"Paris"} << 0.0 << 2.0 / 3.0;
        // gold 1 {10th, and, 11th, centuries}: common 1, P 1/2, R 1/4 -> 1/3;
        // gold 2 {in, 10th, and, 11th, centuries}: P 1/2, R 1/5 -> 2/7; the max is 1/3.
        QTest::newRow("max F1 over golds") << "10th century"
                                           << QStringList{"10th and 11th centuries", "in the 10th and 11th centuries"}
                                           << 0.0 << 1.0 / 3.0;
        QTest::newRow("v2: no answer predicted for no-answer") << "" << QStringList{} << 1.0 << 1.0;
        QTest::newRow("v2: answer predicted for no-answer") << "Normandy" << QStringList{} << 0.0 << 0.0;
        QTest::newRow("v2: no answer predicted for answerable") << "" << QStringList{"Rollo"} << 0.0 << 0.0;
        // The official script drops golds that normalise to nothing; none left means "" is expected.
        QTest::newRow("golds that normalise away") << "" << QStringList{"The", "."} << 1.0 << 1.0;
        QTest::newRow("golds that normalise away, answered") << "Rollo" << QStringList{"The"} << 0.0 << 0.0;
    }
    void perQuestionScore()
    {
        QFETCH(QString, prediction);
        QFETCH(QStringList, golds);
        QFETCH(double, exact);
        QFETCH(double, f1);
        std::vector<std::string> g;
        for (const QString& s : golds)
            g.push_back(s.toStdString());
        const ExampleScore score = scorePrediction(example("x", g), prediction.toStdString());
        QCOMPARE(score.exact, exact);
        QVERIFY2(std::fabs(score.f1 - f1) < 1e-12, qPrintable(QString::number(score.f1)));
    }

    void aggregationV2()
    {
        const std::vector<SquadExample> examples = {
            example("a", {"Denmark, Iceland and Norway"}),
            example("b", {"10th and 11th centuries", "in the 10th and 11th centuries"}),
            example("c", {"Rollo", "Rollo"}),
            example("d", {}),
            example("e", {}),
        };
        const std::vector<std::string> predictions = {"Iceland and Norway", "10th century", "rollo", "", "Normandy"};
        // Per question (exact, f1): a (0, 6/7: P 1, R 3/4), b (0, 1/3), c (1, 1), d (1, 1), e (0, 0).
        const SquadScores s = scorePredictions(examples, predictions);
        QCOMPARE(s.total, std::size_t(5));
        QVERIFY(std::fabs(s.exact - 40.0) < 1e-9);
        QVERIFY(std::fabs(s.f1 - 100.0 * 67.0 / 105.0) < 1e-9); // (6/7 + 1/3 + 1 + 1 + 0) / 5
        QCOMPARE(s.hasAnsTotal, std::size_t(3));
        QVERIFY(std::fabs(s.hasAnsExact - 100.0 / 3.0) < 1e-9);
        QVERIFY(std::fabs(s.hasAnsF1 - 100.0 * 46.0 / 63.0) < 1e-9); // (6/7 + 1/3 + 1) / 3
        QCOMPARE(s.noAnsTotal, std::size_t(2));
        QVERIFY(std::fabs(s.noAnsExact - 50.0) < 1e-9);
        QVERIFY(std::fabs(s.noAnsF1 - 50.0) < 1e-9);
    }

    void aggregationV1()
    {
        const std::vector<SquadExample> examples = {example("a", {"Paris"}), example("b", {"France", "in France"})};
        const SquadScores s = scorePredictions(examples, {"Paris", "France ."});
        QCOMPARE(s.exact, 100.0);
        QCOMPARE(s.f1, 100.0);
        QCOMPARE(s.hasAnsTotal, std::size_t(2));
        QCOMPARE(s.noAnsTotal, std::size_t(0));

        const SquadScores none = scorePredictions({}, {});
        QCOMPARE(none.total, std::size_t(0));
        QCOMPARE(none.exact, 0.0);

        bool threw = false;
        try {
            scorePredictions(examples, {"Paris"});
        } catch (const Error& e) {
            threw = QString(e.what()).contains("1 predictions for 2 questions");
        }
        QVERIFY(threw);
    }

    // ---- the reader ------------------------------------------------------------------------

    void readerFlattensQuestions()
    {
        const SquadDataset d = parseSquadJson(tinySquad().dump(), "tiny.json");
        QCOMPARE(d.version, std::string("v2.0"));
        QVERIFY(d.isV2);
        QCOMPARE(d.articles, std::size_t(1));
        QCOMPARE(d.paragraphs, std::size_t(3));
        QCOMPARE(d.examples.size(), std::size_t(8));
        QCOMPARE(d.examples[1].id, std::string("q2"));
        QCOMPARE(d.examples[1].title, std::string("Cats"));
        QCOMPARE(d.examples[1].context, std::string("the cat sat on the mat"));
        QCOMPARE(d.examples[1].golds, (std::vector<std::string>{"the cat", "cat"}));
        QVERIFY(!d.examples[1].isImpossible);
        QVERIFY(d.examples[2].isImpossible);
        QVERIFY(d.examples[2].golds.empty()); // plausible answers are not answers
        QCOMPARE(d.examples[3].context, std::string("Paris is the capital of France"));
    }

    void versionDetection_data()
    {
        QTest::addColumn<QString>("version");      // "" = no version key
        QTest::addColumn<bool>("impossibleKey");   // is_impossible: false on the question
        QTest::addColumn<bool>("isV2");
        QTest::newRow("v1.1") << "1.1" << false << false;
        QTest::newRow("no version, no key") << "" << false << false;
        QTest::newRow("is_impossible key") << "1.1" << true << true;
        QTest::newRow("is_impossible key, no version") << "" << true << true;
        QTest::newRow("version v2.0") << "v2.0" << false << true;
    }
    void versionDetection()
    {
        QFETCH(QString, version);
        QFETCH(bool, impossibleKey);
        QFETCH(bool, isV2);
        json qa = {{"id", "1"}, {"question", "who?"}, {"answers", {{{"text", "me"}, {"answer_start", 0}}}}};
        if (impossibleKey)
            qa["is_impossible"] = false;
        json root = {{"data", {{{"title", "t"}, {"paragraphs", {{{"context", "me"}, {"qas", {qa}}}}}}}}};
        if (!version.isEmpty())
            root["version"] = version.toStdString();
        const SquadDataset d = parseSquadJson(root.dump(), "v.json");
        QCOMPARE(d.isV2, isV2);
        QCOMPARE(d.version, version.toStdString());
    }

    void syntaxErrorPosition_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("offset"); // 0-based offset of the offending byte
        QTest::addColumn<int>("line");
        QTest::addColumn<int>("column");
        const QString doubleComma = "{\"version\": \"1.1\",\n  \"data\": [,]}";
        QTest::newRow("stray comma") << doubleComma << int(doubleComma.indexOf(",]")) << 2 << 12;
        const QString badLiteral = "{\n\n\"data\": tru}";
        QTest::newRow("bad literal") << badLiteral << int(badLiteral.indexOf("}")) << 3 << 12;
    }
    void syntaxErrorPosition()
    {
        QFETCH(QString, text);
        QFETCH(int, offset);
        QFETCH(int, line);
        QFETCH(int, column);
        const QString message = readerError(text.toStdString());
        QVERIFY2(message.startsWith("sample.json is not valid JSON"), qPrintable(message));
        const QString where = QString("line %1, column %2 (byte %3)").arg(line).arg(column).arg(offset + 1);
        QVERIFY2(message.contains(where), qPrintable(message + " <> " + where));
    }

    void malformedEntries_data()
    {
        QTest::addColumn<QString>("path");    // JSON pointer of the value to change
        QTest::addColumn<QString>("value");   // JSON text, or "remove"
        QTest::addColumn<QString>("expected");
        QTest::newRow("question missing") << "/data/0/paragraphs/1/qas/0/question" << "remove"
                                          << "tiny.json: data[0].paragraphs[1].qas[0]: \"question\" is missing.";
        QTest::newRow("context missing") << "/data/0/paragraphs/2/context" << "remove"
                                         << "tiny.json: data[0].paragraphs[2]: \"context\" is missing.";
        QTest::newRow("answers missing") << "/data/0/paragraphs/0/qas/1/answers" << "remove"
                                         << "data[0].paragraphs[0].qas[1]: \"answers\" is missing.";
        QTest::newRow("data missing") << "/data" << "remove" << "tiny.json: the top level: \"data\" is missing.";
        QTest::newRow("question a number") << "/data/0/paragraphs/0/qas/2/question" << "7"
                                           << "data[0].paragraphs[0].qas[2].question must be a string, found number.";
        QTest::newRow("answer text missing") << "/data/0/paragraphs/0/qas/1/answers/1/text" << "remove"
                                             << "data[0].paragraphs[0].qas[1].answers[1]: \"text\" is missing.";
        QTest::newRow("paragraphs an object") << "/data/0/paragraphs" << "{}"
                                              << "data[0].paragraphs must be an array, found object.";
        QTest::newRow("qas null") << "/data/0/paragraphs/1/qas" << "null"
                                  << "data[0].paragraphs[1].qas must be an array, found null.";
        QTest::newRow("impossible with answers") << "/data/0/paragraphs/0/qas/0/is_impossible" << "true"
                                                 << "data[0].paragraphs[0].qas[0] has \"is_impossible\": true but also answers.";
        QTest::newRow("is_impossible a string") << "/data/0/paragraphs/0/qas/0/is_impossible" << "\"no\""
                                                << "data[0].paragraphs[0].qas[0].is_impossible must be true or false";
        QTest::newRow("duplicate id") << "/data/0/paragraphs/1/qas/1/id" << "\"q1\""
                                      << "data[0].paragraphs[1].qas[1] repeats the id \"q1\" of data[0].paragraphs[0].qas[0].";
        QTest::newRow("empty id") << "/data/0/paragraphs/1/qas/1/id" << "\"\"" << "data[0].paragraphs[1].qas[1].id is empty.";
        QTest::newRow("answer_start a string") << "/data/0/paragraphs/0/qas/0/answers/0/answer_start" << "\"12\""
                                               << "data[0].paragraphs[0].qas[0].answers[0].answer_start must be an integer";
        QTest::newRow("no questions") << "/data" << "[]" << "tiny.json holds no questions.";
        QTest::newRow("top level an array") << "" << "[1, 2]" << "the top level must be an object";
    }
    void malformedEntries()
    {
        QFETCH(QString, path);
        QFETCH(QString, value);
        QFETCH(QString, expected);
        json root = tinySquad();
        const json::json_pointer pointer(path.toStdString());
        if (value == "remove")
            root[pointer.parent_pointer()].erase(pointer.back());
        else
            root[pointer] = json::parse(value.toStdString());
        QString message;
        try {
            parseSquadJson(root.dump(), "tiny.json");
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains(expected), qPrintable(message));
    }

    void v1QuestionWithoutAnswers()
    {
        json root = tinySquad();
        root.erase("version");
        for (auto& paragraph : root["data"][0]["paragraphs"])
            for (auto& qa : paragraph["qas"])
                qa.erase("is_impossible");
        const QString message = readerError(root.dump());
        QVERIFY2(message.contains("data[0].paragraphs[0].qas[2] has no answers, which a SQuAD v1.1 file does not allow"),
                 qPrintable(message));
        // The same questions in a file declared v2.0 are no-answer questions.
        root["version"] = "v2.0";
        const SquadDataset d = parseSquadJson(root.dump(), "tiny.json");
        QVERIFY(d.isV2 && d.examples[2].isImpossible);
    }

    void limits()
    {
        SquadLimits tight;
        tight.maxQuestions = 3;
        QString message;
        try {
            parseSquadJson(tinySquad().dump(), "tiny.json", tight);
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains("more than 3 questions"), qPrintable(message));

        tight = SquadLimits();
        tight.maxContextBytes = 10;
        try {
            parseSquadJson(tinySquad().dump(), "tiny.json", tight);
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains("data[0].paragraphs[0].context is 22 bytes long"), qPrintable(message));

        // Deep nesting is refused before parsing, with its position; brackets inside strings do not count.
        const std::string deep = "{\"title\": \"[[[[\", \"data\": " + std::string(100, '[') + std::string(100, ']') + "}";
        message = readerError(deep);
        QVERIFY2(message.contains("more than 32 levels deep") && message.contains("(byte 58)"), qPrintable(message));

        tight = SquadLimits();
        tight.maxFileBytes = 100;
        try {
            parseSquadJson(tinySquad().dump(), "tiny.json", tight);
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains("more than the limit of 100"), qPrintable(message));
    }

    void readsFiles()
    {
        const std::string dir = tempDir("eval-read");
        const std::string path = dir + "/tiny.json";
        writeText(path, tinySquad().dump(1));
        QCOMPARE(readSquadFile(path).examples.size(), std::size_t(8));
        QCOMPARE(readSquadFile(path).path, path);

        QString message;
        try {
            readSquadFile(dir + "/absent.json");
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains(QString::fromStdString(dir + "/absent.json")), qPrintable(message));

        writeText(dir + "/broken.json", "{\"data\": [");
        try {
            readSquadFile(dir + "/broken.json");
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.startsWith(QString::fromStdString(dir + "/broken.json is not valid JSON")), qPrintable(message));
    }

    // ---- evaluation on generated checkpoints ----------------------------------------------

    void batchedAnswersEqualSingleQuestions()
    {
        auto run = EncoderModel::load(fp8Dir_);
        auto reference = EncoderModel::load(floatDir_);
        const SquadDataset dataset = parseSquadJson(tinySquad().dump(), "tiny.json");
        EvaluationOptions options = smallWindows();
        std::vector<double> fractions;
        std::vector<std::size_t> done;
        options.onUpdate = [&](const EvaluationUpdate& u) {
            done.push_back(u.done);
            QCOMPARE(u.total, std::size_t(8));
        };
        Progress progress;
        progress.callback = [&](double f, const std::string&) { fractions.push_back(f); };
        const EvaluationResult result = evaluateSquad(*run, reference.get(), dataset, options, progress);

        QVERIFY(result.complete);
        QVERIFY(!result.referenceIsStandIn);
        QVERIFY(result.note.empty());
        QCOMPARE(result.examples.size(), std::size_t(8));
        QVERIFY(result.skipped.empty());
        QVERIFY(result.qa.nullThreshold && *result.qa.nullThreshold == 0.0f); // v2 default
        QVERIFY(result.examples[6].windows > 1);
        QVERIFY(result.questionsPerSecond > 0);

        // Each question alone through answerQuestion gives the same best answer.
        QaOptions single = result.qa;
        std::vector<ExampleScore> runScores, referenceScores;
        std::vector<bool> hasAnswer;
        std::size_t agreeing = 0;
        for (std::size_t i = 0; i < dataset.examples.size(); ++i) {
            const SquadExample& ex = dataset.examples[i];
            const EvaluatedExample& got = result.examples[i];
            QCOMPARE(got.index, i);
            QCOMPARE(got.example.id, ex.id);
            const auto runAnswers = answerQuestion(*run, ex.question, ex.context, RunSettings{RunMode::Fp8}, single).answers;
            const auto refAnswers = answerQuestion(*reference, ex.question, ex.context, referenceRunSettings(), single).answers;
            QVERIFY(!runAnswers.empty() && !refAnswers.empty());
            for (const auto& [mine, theirs] : {std::make_pair(got.runAnswer, runAnswers[0]),
                                               std::make_pair(got.referenceAnswer, refAnswers[0])}) {
                QCOMPARE(mine.isNull, theirs.isNull);
                QCOMPARE(mine.start, theirs.start);
                QCOMPARE(mine.end, theirs.end);
                QCOMPARE(mine.text, theirs.text);
                QVERIFY(std::fabs(mine.startLogit - theirs.startLogit) < 1e-4f);
            }
            // Scores from the metric's own functions, max over the golds.
            const double runExact = maxOverGold(exactMatchScore, predictionOf(runAnswers[0]), ex.golds);
            const double runF1 = maxOverGold(f1Score, predictionOf(runAnswers[0]), ex.golds);
            QCOMPARE(got.run.exact, runExact);
            QCOMPARE(got.run.f1, runF1);
            runScores.push_back({runExact, runF1});
            referenceScores.push_back({maxOverGold(exactMatchScore, predictionOf(refAnswers[0]), ex.golds),
                                       maxOverGold(f1Score, predictionOf(refAnswers[0]), ex.golds)});
            hasAnswer.push_back(!ex.isImpossible);
            const bool same = normalizeAnswer(predictionOf(runAnswers[0])) == normalizeAnswer(predictionOf(refAnswers[0]));
            QCOMPARE(got.agree, same);
            agreeing += same ? 1 : 0;
        }
        const SquadScores expectedRun = aggregateScores(runScores, hasAnswer);
        QCOMPARE(result.runScores.exact, expectedRun.exact);
        QCOMPARE(result.runScores.f1, expectedRun.f1);
        QCOMPARE(result.runScores.hasAnsTotal, std::size_t(6));
        QCOMPARE(result.runScores.noAnsTotal, std::size_t(2));
        QCOMPARE(result.referenceScores.f1, aggregateScores(referenceScores, hasAnswer).f1);
        QCOMPARE(result.agreeing, agreeing);
        QCOMPARE(result.agreement, double(agreeing) / 8.0);
        QCOMPARE(result.disagreements.size(), 8 - agreeing);

        // Progress: one update per batch, questions done never decrease, the bar ends full.
        QVERIFY(done.size() >= 3);
        QVERIFY(std::is_sorted(done.begin(), done.end()));
        QCOMPARE(done.back(), std::size_t(8));
        QVERIFY(std::is_sorted(fractions.begin(), fractions.end()));
        QCOMPARE(fractions.back(), 1.0);

        // The batch size changes the grouping, not the answers.
        EvaluationOptions oneByOne = smallWindows();
        oneByOne.batchSize = 1;
        const EvaluationResult again = evaluateSquad(*run, reference.get(), dataset, oneByOne);
        for (std::size_t i = 0; i < 8; ++i) {
            QCOMPARE(again.examples[i].runAnswer.text, result.examples[i].runAnswer.text);
            QCOMPARE(again.examples[i].referenceAnswer.isNull, result.examples[i].referenceAnswer.isNull);
        }
    }

    void disagreementsCarryPerLayerError()
    {
        auto run = EncoderModel::load(fp8Dir_);
        auto other = EncoderModel::load(otherFloatDir_); // unrelated weights: answers differ
        const SquadDataset dataset = parseSquadJson(tinySquad().dump(), "tiny.json");
        EvaluationOptions options = smallWindows();
        options.maxDetailedDisagreements = 2;
        const EvaluationResult result = evaluateSquad(*run, other.get(), dataset, options);
        QVERIFY(result.complete);
        QVERIFY2(result.disagreements.size() >= 3, "the unrelated reference should disagree at least 3 times");
        QCOMPARE(result.detailLimit, std::size_t(2));
        QCOMPARE(result.detailed, std::size_t(2));
        for (std::size_t k = 0; k < result.disagreements.size(); ++k) {
            const Disagreement& d = result.disagreements[k];
            const EvaluatedExample& e = result.examples[d.example];
            QVERIFY(!e.agree);
            QCOMPARE(d.detailed, k < 2);
            if (!d.detailed) {
                QVERIFY(d.layers.empty());
                continue;
            }
            // Embeddings plus one entry per encoder layer, equal to compareRuns on this example alone.
            QCOMPARE(d.layers.size(), std::size_t(3));
            ComparisonInput input;
            input.question = e.example.question;
            input.context = e.example.context;
            input.qaOptions = result.qa;
            const ComparisonResult direct = compareRuns(*run, other.get(), input);
            for (const CapturePointMetrics& p : direct.points)
                if (p.name == d.layers[2].name)
                    QCOMPARE(d.layers[2].metrics.sqnrDb, p.metrics.sqnrDb);
            QCOMPARE(d.layers[0].name, std::string("roberta.embeddings.output"));
            QCOMPARE(d.layers[2].name, std::string("roberta.encoder.layer.1.output"));
            QCOMPARE(d.finalLogits.sqnrDb, direct.finalLogits.sqnrDb);
        }
        QVERIFY(result.examples.size() - result.agreeing == result.disagreements.size());
    }

    void identicalModelsAgreeEverywhere()
    {
        // The float checkpoint as its own run: fp8 mode has nothing to quantize, so both runs match.
        auto run = EncoderModel::load(floatDir_);
        const SquadDataset dataset = parseSquadJson(tinySquad().dump(), "tiny.json");
        const EvaluationResult result = evaluateSquad(*run, nullptr, dataset, smallWindows());
        QVERIFY(result.referenceIsStandIn);
        QCOMPARE(result.referenceLabel, std::string("dequant"));
        QVERIFY(result.note.find("stands in") != std::string::npos);
        QCOMPARE(result.agreement, 1.0);
        QVERIFY(result.disagreements.empty());
        QCOMPARE(result.runScores.f1, result.referenceScores.f1);
    }

    void samplesSkipsAndV1()
    {
        auto run = EncoderModel::load(fp8Dir_);
        json root = tinySquad();
        root.erase("version");
        // v1: drop the no-answer questions and the is_impossible keys.
        for (auto& paragraph : root["data"][0]["paragraphs"]) {
            json kept = json::array();
            for (auto& qa : paragraph["qas"])
                if (!qa["answers"].empty()) {
                    qa.erase("is_impossible");
                    kept.push_back(qa);
                }
            paragraph["qas"] = kept;
        }
        // A question too long for the windows is skipped, not fatal.
        root["data"][0]["paragraphs"][0]["qas"][1]["question"] = std::string(60, 'x') + " ?";
        const SquadDataset dataset = parseSquadJson(root.dump(), "v1.json");
        QVERIFY(!dataset.isV2);
        QCOMPARE(dataset.examples.size(), std::size_t(6));

        EvaluationOptions options = smallWindows();
        options.maxSamples = 4;
        const EvaluationResult result = evaluateSquad(*run, nullptr, dataset, options);
        QVERIFY(result.complete);
        QVERIFY(!result.qa.nullThreshold); // v1: spans only
        QCOMPARE(result.questionsInFile, std::size_t(6));
        QCOMPARE(result.questionsSelected, std::size_t(4));
        QCOMPARE(result.skipped.size(), std::size_t(1));
        QCOMPARE(result.skipped[0].id, std::string("q2"));
        QVERIFY2(result.skipped[0].reason.find("too long") != std::string::npos, result.skipped[0].reason.c_str());
        QCOMPARE(result.examples.size(), std::size_t(3));
        QCOMPARE(result.runScores.total, std::size_t(3));
        QCOMPARE(result.runScores.noAnsTotal, std::size_t(0));
        for (const EvaluatedExample& e : result.examples)
            QVERIFY(!e.runAnswer.isNull && !e.referenceAnswer.isNull);
    }

    void nonFiniteLogitsSkipTheQuestion()
    {
        // Embedding columns scaled beyond float range: LayerNorm turns them into NaN, so do the logits.
        TinyModelSpec spec;
        spec.outlierChannels = {3};
        spec.outlierFactor = 1e38f;
        const std::string dir = tempDir("eval-nan");
        writeTinyFloatCheckpoint(dir, spec);
        auto run = EncoderModel::load(dir);
        const SquadDataset dataset = parseSquadJson(tinySquad().dump(), "tiny.json");
        EvaluationOptions options = smallWindows();
        options.maxSamples = 2;
        const EvaluationResult result = evaluateSquad(*run, nullptr, dataset, options);
        QVERIFY(result.complete);
        QVERIFY(result.examples.empty());
        QCOMPARE(result.skipped.size(), std::size_t(2));
        QCOMPARE(result.skipped[1].id, std::string("q2"));
        QVERIFY2(result.skipped[0].reason.rfind("fp8 run: ", 0) == 0 &&
                     result.skipped[0].reason.find("not finite") != std::string::npos,
                 result.skipped[0].reason.c_str());
        QCOMPARE(result.runScores.total, std::size_t(0));
    }

    // evaluate on the fp16 twin: a planted channel of layer 1's FFN up-projection far past 65,504
    // makes every question's run go non-finite there; each question names it, the summary counts
    // them under that module, and the same evaluation in fp8 has none.
    void fp16TwinNamesWhereEachQuestionOverflows()
    {
        const std::string floatDir = tempDir("eval-fp16-float");
        writeTinyFloatCheckpoint(floatDir, TinyModelSpec{});
        const std::string planted = "roberta.encoder.layer.1.intermediate.dense";
        plantOutputPeak(floatDir, planted, {0, 5, 6, 7, 8, 9, 2}, 1e7f);
        const std::string fp8Dir = tempDir("eval-fp16") + "/m";
        writeTinyFp8Checkpoint(floatDir, fp8Dir, {"channel", "token", "F32"});
        auto run = EncoderModel::load(fp8Dir);
        const SquadDataset dataset = parseSquadJson(tinySquad().dump(), "tiny.json");
        EvaluationOptions options = smallWindows();
        options.maxSamples = 4;
        options.runs.run.mode = RunMode::Fp16;
        const EvaluationResult twin = evaluateSquad(*run, nullptr, dataset, options);
        QCOMPARE(twin.runLabel, std::string("fp16"));
        QCOMPARE(twin.nonFiniteQuestions, std::size_t(4));
        QCOMPARE(twin.nonFiniteStarts.size(), std::size_t(1));
        QCOMPARE(twin.nonFiniteStarts[0].module, planted);
        QCOMPARE(twin.nonFiniteStarts[0].questions, std::size_t(4));
        for (const SkippedExample& e : twin.skipped) {
            QCOMPARE(e.firstNonFinite, planted);
            QVERIFY2(e.reason.rfind("fp16 run: ", 0) == 0 && e.reason.find("(inf/NaN first at " + planted + ")") != std::string::npos,
                     e.reason.c_str());
        }
        for (const EvaluatedExample& e : twin.examples)
            QCOMPARE(e.firstNonFinite, planted);

        options.runs.run.mode = RunMode::Fp8;
        const EvaluationResult fp8 = evaluateSquad(*run, nullptr, dataset, options);
        QCOMPARE(fp8.nonFiniteQuestions, std::size_t(0));
        QVERIFY(fp8.nonFiniteStarts.empty());
        QCOMPARE(fp8.examples.size(), std::size_t(4));
    }

    void invalidSetupThrowsBeforeRunning_data()
    {
        QTest::addColumn<int>("maxSeqLen");
        QTest::addColumn<int>("docStride");
        QTest::addColumn<int>("batchSize");
        QTest::addColumn<QString>("expected");
        // The tiny model has 130 positions: 128 tokens.
        QTest::newRow("too long for the model") << 384 << 128 << 16 << "--max-seq-len 384 is longer than the 128 tokens";
        QTest::newRow("stride too large") << 48 << 44 << 16 << "--doc-stride must be from 0 to 42";
        QTest::newRow("batch size zero") << 48 << 8 << 0 << "--batch-size must be from 1";
    }
    void invalidSetupThrowsBeforeRunning()
    {
        QFETCH(int, maxSeqLen);
        QFETCH(int, docStride);
        QFETCH(int, batchSize);
        QFETCH(QString, expected);
        auto run = EncoderModel::load(fp8Dir_);
        const SquadDataset dataset = parseSquadJson(tinySquad().dump(), "tiny.json");
        EvaluationOptions options;
        options.qa.maxSeqLen = maxSeqLen;
        options.qa.docStride = docStride;
        options.batchSize = batchSize;
        bool called = false;
        options.onUpdate = [&](const EvaluationUpdate&) { called = true; };
        QString message;
        try {
            evaluateSquad(*run, nullptr, dataset, options);
        } catch (const Error& e) {
            message = QString::fromStdString(asCliMessage(e));
        }
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY(!called);
    }

    void wrongModelsThrow()
    {
        const SquadDataset dataset = parseSquadJson(tinySquad().dump(), "tiny.json");
        TinyModelSpec maskedLm;
        maskedLm.architecture = "RobertaForMaskedLM";
        const std::string mlmDir = tempDir("eval-mlm");
        writeTinyFloatCheckpoint(mlmDir, maskedLm);
        auto mlm = EncoderModel::load(mlmDir);
        QString message;
        try {
            evaluateSquad(*mlm, nullptr, dataset, smallWindows());
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains("needs a RobertaForQuestionAnswering, BertForQuestionAnswering or "
                                  "XLMRobertaForQuestionAnswering checkpoint; " + QString::fromStdString(mlmDir) +
                                  " is RobertaForMaskedLM."),
                 qPrintable(message));

        TinyModelSpec wider;
        wider.hiddenSize = 48;
        wider.numHeads = 4;
        const std::string widerDir = tempDir("eval-wide");
        writeTinyFloatCheckpoint(widerDir, wider);
        auto run = EncoderModel::load(fp8Dir_);
        auto widerModel = EncoderModel::load(widerDir);
        try {
            evaluateSquad(*run, widerModel.get(), dataset, smallWindows());
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains("does not match"), qPrintable(message));
    }

    void cancelKeepsFinishedQuestions()
    {
        auto run = EncoderModel::load(fp8Dir_);
        const SquadDataset dataset = parseSquadJson(tinySquad().dump(), "tiny.json");
        std::atomic<bool> cancel{false};
        Progress progress;
        progress.cancel = &cancel;
        EvaluationOptions options = smallWindows();
        options.batchSize = 1;
        options.groupByLength = false; // questions finish one at a time, in file order
        std::size_t updates = 0;
        options.onUpdate = [&](const EvaluationUpdate& u) {
            if (++updates == 1)
                QCOMPARE(u.finished.size(), std::size_t(1)); // q1 has a single window
            if (u.done >= 3)
                cancel.store(true);
        };
        const EvaluationResult result = evaluateSquad(*run, nullptr, dataset, options, progress);
        QVERIFY(!result.complete);
        QVERIFY2(result.stoppedReason.find("Cancelled after 3 of 8 questions") != std::string::npos,
                 result.stoppedReason.c_str());
        QCOMPARE(result.examples.size(), std::size_t(3));
        for (std::size_t i = 0; i < 3; ++i)
            QCOMPARE(result.examples[i].example.id, dataset.examples[i].id);
        QCOMPARE(result.runScores.total, std::size_t(3));
        QCOMPARE(result.runScores.hasAnsTotal + result.runScores.noAnsTotal, std::size_t(3));
        QCOMPARE(result.detailed, std::size_t(0)); // no per-layer work after a cancel

        // Cancelled before any question finished: nothing to keep, the caller gets Cancelled.
        cancel.store(true);
        bool cancelled = false;
        try {
            evaluateSquad(*run, nullptr, dataset, options, progress);
        } catch (const Cancelled&) {
            cancelled = true;
        }
        QVERIFY(cancelled);
    }

    void errorHalfWayKeepsFinishedQuestions()
    {
        auto run = EncoderModel::load(fp8Dir_);
        const SquadDataset dataset = parseSquadJson(tinySquad().dump(), "tiny.json");
        EvaluationOptions options = smallWindows();
        options.batchSize = 1;
        options.onUpdate = [&](const EvaluationUpdate& u) {
            if (u.done >= 2)
                throw Error("The results table could not be updated.");
        };
        const EvaluationResult result = evaluateSquad(*run, nullptr, dataset, options);
        QVERIFY(!result.complete);
        QVERIFY2(result.stoppedReason.find("after 2 of 8 questions: The results table could not be updated.") !=
                     std::string::npos,
                 result.stoppedReason.c_str());
        QCOMPARE(result.examples.size(), std::size_t(2));
    }

    // ---- shared data -----------------------------------------------------------------------

    void sharedSquadSample()
    {
        const QString path = QStringLiteral(SCALESCOPE_SHARED_DATA) + "/squad/squad2-dev-sample.json";
        if (!QFileInfo::exists(path))
            QSKIP("../shared/data/squad is not available");
        const SquadDataset dataset = readSquadFile(path.toStdString());

        // Independent counts with Qt's JSON parser.
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject root = QJsonDocument::fromJson(file.readAll()).object();
        std::size_t questions = 0, impossible = 0, paragraphs = 0;
        std::vector<bool> hasAnswer;
        for (const QJsonValue article : root["data"].toArray())
            for (const QJsonValue paragraph : article.toObject()["paragraphs"].toArray()) {
                ++paragraphs;
                for (const QJsonValue qa : paragraph.toObject()["qas"].toArray()) {
                    ++questions;
                    const bool none = qa.toObject()["is_impossible"].toBool();
                    impossible += none ? 1 : 0;
                    hasAnswer.push_back(!none);
                }
            }
        QVERIFY(dataset.isV2);
        QCOMPARE(dataset.articles, std::size_t(2));
        QCOMPARE(dataset.paragraphs, paragraphs);
        QCOMPARE(dataset.examples.size(), questions);
        QCOMPARE(questions, std::size_t(626)); // as ../shared/data/README.md says
        QCOMPARE(impossible, std::size_t(333));
        std::size_t readImpossible = 0;
        for (const SquadExample& e : dataset.examples)
            readImpossible += e.isImpossible ? 1 : 0;
        QCOMPARE(readImpossible, impossible);

        // A generated model with 128 positions; the byte-level fixture tokenizer encodes any text.
        auto run = EncoderModel::load(fp8Dir_);
        auto reference = EncoderModel::load(floatDir_);
        EvaluationOptions options;
        options.qa.maxSeqLen = 128;
        options.qa.docStride = 32;
        options.maxSamples = 24;
        const EvaluationResult result = evaluateSquad(*run, reference.get(), dataset, options);
        QVERIFY(result.complete);
        QCOMPARE(result.questionsSelected, std::size_t(24));
        QCOMPARE(result.examples.size() + result.skipped.size(), std::size_t(24));
        std::size_t expectedHasAns = 0;
        for (const EvaluatedExample& e : result.examples)
            expectedHasAns += hasAnswer[e.index] ? 1 : 0;
        for (const SquadScores& s : {result.runScores, result.referenceScores}) {
            QCOMPARE(s.total, result.examples.size());
            QCOMPARE(s.hasAnsTotal, expectedHasAns);
            QCOMPARE(s.noAnsTotal, result.examples.size() - expectedHasAns);
            QVERIFY(s.exact >= 0 && s.exact <= s.f1 + 1e-9 && s.f1 <= 100);
        }
        QVERIFY(result.questionsPerSecond > 0);
        qInfo("shared sample: %zu questions, %.1f q/s (%.2f s, forward %.0f + %.0f ms), agreement %.3f, fp8 F1 %.2f, "
              "reference F1 %.2f",
              result.examples.size(), result.questionsPerSecond, result.seconds, result.runForwardMs,
              result.referenceForwardMs, result.agreement, result.runScores.f1, result.referenceScores.f1);
    }

    // Batches of windows of similar length (the default) against batches in file order, padded to
    // their longest window as before: on real SQuAD questions with the real roberta-base tokenizer,
    // every answer of both models is the same, and the grouped batches pad less.
    void lengthGroupedBatchesAnswerAsFileOrder()
    {
        const QString squad = QStringLiteral(SCALESCOPE_SHARED_DATA) + "/squad/squad2-dev-sample.json";
        const QString tokenizer = QStringLiteral(SCALESCOPE_SHARED_DATA) + "/roberta-base-tokenizer";
        if (!QFileInfo::exists(squad) || !QFileInfo::exists(tokenizer + "/vocab.json"))
            QSKIP("../shared/data (SQuAD sample, roberta-base tokenizer) is not available");
        TinyModelSpec spec;
        spec.vocabularySize = 50265;
        spec.maxPositionEmbeddings = 258;
        const std::string floatDir = tempDir("eval-real-float"), fp8Dir = tempDir("eval-real-fp8") + "/m";
        writeTinyFloatCheckpoint(floatDir, spec);
        for (const char* file : {"vocab.json", "merges.txt"}) {
            const QString target = QString::fromStdString(floatDir) + "/" + file;
            QFile::remove(target);
            QVERIFY(QFile::copy(tokenizer + "/" + file, target));
        }
        writeTinyFp8Checkpoint(floatDir, fp8Dir, {"channel", "token", "F32"});
        auto run = EncoderModel::load(fp8Dir);
        auto reference = EncoderModel::load(floatDir);
        const SquadDataset dataset = readSquadFile(squad.toStdString());
        EvaluationOptions options;
        options.qa.maxSeqLen = 256;
        options.qa.docStride = 64;
        options.maxSamples = 160;
        options.batchSize = 8;
        options.maxDetailedDisagreements = 0;
        const EvaluationResult grouped = evaluateSquad(*run, reference.get(), dataset, options);
        options.groupByLength = false;
        const EvaluationResult fileOrder = evaluateSquad(*run, reference.get(), dataset, options);

        QVERIFY(grouped.complete && fileOrder.complete);
        QCOMPARE(grouped.examples.size(), fileOrder.examples.size());
        QVERIFY(grouped.examples.size() > 150);
        QCOMPARE(grouped.skipped.size(), fileOrder.skipped.size());
        std::size_t multiWindow = 0;
        for (std::size_t i = 0; i < grouped.examples.size(); ++i) {
            const EvaluatedExample &a = grouped.examples[i], &b = fileOrder.examples[i];
            QCOMPARE(a.index, b.index);
            multiWindow += a.windows > 1 ? 1 : 0;
            for (const auto& [x, y] : {std::make_pair(a.runAnswer, b.runAnswer), std::make_pair(a.referenceAnswer, b.referenceAnswer)}) {
                QCOMPARE(x.isNull, y.isNull);
                QCOMPARE(x.text, y.text);
                QCOMPARE(x.start, y.start);
                QCOMPARE(x.end, y.end);
                QVERIFY(std::fabs(x.score - y.score) <= 1e-3f * std::max(1.0f, std::fabs(y.score)));
            }
            QCOMPARE(a.agree, b.agree);
        }
        QVERIFY(multiWindow > 0); // windows of one question may land in different batches
        QCOMPARE(grouped.windowTokens, fileOrder.windowTokens);
        QVERIFY(grouped.batchTokens < fileOrder.batchTokens);
        QVERIFY(grouped.batchTokens >= grouped.windowTokens);
        qInfo("positions computed: %zu grouped, %zu in file order, %zu real", grouped.batchTokens, fileOrder.batchTokens,
              grouped.windowTokens);
    }

    // ---- the command line ------------------------------------------------------------------

    void commandLine()
    {
        const QString cli = QStringLiteral(SCALESCOPE_CLI);
        if (!QFileInfo::exists(cli))
            QSKIP("scalescope-cli is not built");
        const std::string dir = tempDir("eval-cli");
        const std::string squad = dir + "/tiny.json";
        writeText(squad, tinySquad().dump());
        const std::string csv = dir + "/out.csv";
        const QStringList args = {"evaluate", QString::fromStdString(fp8Dir_), "--squad", QString::fromStdString(squad),
                                  "--reference", QString::fromStdString(floatDir_), "--max-seq-len", "48",
                                  "--doc-stride", "8", "--csv", QString::fromStdString(csv), "--json"};
        QProcess process;
        process.start(cli, args);
        QVERIFY(process.waitForFinished(300000));
        const QString err = QString::fromUtf8(process.readAllStandardError());
        QCOMPARE(process.exitCode(), 0);
        QVERIFY2(err.contains("evaluated 8/8 questions"), qPrintable(err));
        const json out = json::parse(process.readAllStandardOutput().toStdString());
        QCOMPARE(out["complete"].get<bool>(), true);
        QCOMPARE(out["run"]["total"].get<int>(), 8);
        QCOMPARE(out["run"]["HasAns_total"].get<int>(), 6);
        QCOMPARE(out["run"]["NoAns_total"].get<int>(), 2);
        QCOMPARE(out["reference"]["stand_in"].get<bool>(), false);
        QVERIFY(out["run"].contains("exact") && out["reference"].contains("f1"));
        QVERIFY(out["throughput"]["questions_per_second"].get<double>() > 0);
        const int agreeing = out["agreeing"].get<int>();
        QCOMPARE(out["disagreements"].size(), std::size_t(8 - agreeing));

        // The CSV holds one row per question, consistent with the JSON's agreement.
        const std::string csvText = readText(csv);
        QVERIFY(csvText.rfind("id,question,golds,run_answer,reference_answer,run_exact,run_f1,reference_exact,"
                              "reference_f1,logits_sqnr_db,agree\r\n", 0) == 0);
        QVERIFY(csvText.find("\"q2\",\"what sat on the mat ?\",\"the cat | cat\",") != std::string::npos);
        int rows = 0, agreeRows = 0;
        std::istringstream lines(csvText);
        std::string line;
        std::getline(lines, line);
        while (std::getline(lines, line)) {
            ++rows;
            agreeRows += line.size() >= 2 && line[line.size() - 2] == '1' ? 1 : 0; // "...,1\r"
        }
        QCOMPARE(rows, 8);
        QCOMPARE(agreeRows, agreeing);

        // An existing CSV is refused without --force, before any work, and left as it was.
        process.start(cli, args);
        QVERIFY(process.waitForFinished(300000));
        QCOMPARE(process.exitCode(), 1);
        QVERIFY(QString::fromUtf8(process.readAllStandardError()).contains("already exists; pass --force"));
        QCOMPARE(readText(csv), csvText);
        process.start(cli, QStringList(args) << "--force");
        QVERIFY(process.waitForFinished(300000));
        QCOMPARE(process.exitCode(), 0);

        // A broken SQuAD file: one sentence naming the file and the place.
        writeText(dir + "/bad.json", "{\"data\": [}");
        process.start(cli, {"evaluate", QString::fromStdString(fp8Dir_), "--squad", QString::fromStdString(dir + "/bad.json")});
        QVERIFY(process.waitForFinished(300000));
        QCOMPARE(process.exitCode(), 1);
        const QString badErr = QString::fromUtf8(process.readAllStandardError());
        QVERIFY2(badErr.contains("bad.json is not valid JSON: syntax error at line 1, column 11 (byte 11)"),
                 qPrintable(badErr));

        // Human-readable output names the stand-in reference.
        process.start(cli, {"evaluate", QString::fromStdString(fp8Dir_), "--squad", QString::fromStdString(squad),
                            "--max-seq-len", "48", "--doc-stride", "8", "--max-samples", "3"});
        QVERIFY(process.waitForFinished(300000));
        QCOMPARE(process.exitCode(), 0);
        const QString text = QString::fromUtf8(process.readAllStandardOutput());
        QVERIFY2(text.contains("stands in for the reference") && text.contains("3 of 3 selected questions evaluated") &&
                     text.contains("Agreement:"),
                 qPrintable(text));
    }
};

QTEST_GUILESS_MAIN(TestEvaluate)
#include "test_evaluate.moc"
