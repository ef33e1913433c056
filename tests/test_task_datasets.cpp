// The task dataset readers (core/tasks/task_datasets.h) on files the test writes: what each good
// file reads as, and for each bad input the one sentence that names the file (and the line).
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "tasks/fix_task_input.h"
#include "tasks/task_datasets.h"

using namespace scalescope;

namespace {

using Strings = std::vector<std::string>;

// Runs read, which must throw scalescope::Error; returns its message ("" when nothing was thrown).
QString errorOf(const std::function<void()>& read)
{
    try {
        read();
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

class TestTaskDatasets : public QObject {
    Q_OBJECT

private:
    QTemporaryDir dir_;

    std::string write(const QString& name, const QByteArray& bytes)
    {
        const QString path = dir_.filePath(name);
        QDir().mkpath(QFileInfo(path).absolutePath());
        QFile file(path);
        if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(bytes) != bytes.size())
            qFatal("cannot write %s", qPrintable(path));
        return path.toStdString();
    }

    // A message is one sentence: it names `path` (and `where`, e.g. "line 3"), holds `detail`, ends
    // with a full stop and has no line break.
    static void checkSentence(const QString& message, const std::string& path, const QString& where,
                              const QString& detail)
    {
        QVERIFY2(!message.isEmpty(), "no scalescope::Error was thrown");
        QVERIFY2(message.contains(QString::fromStdString(path)), qPrintable(message));
        QVERIFY2(where.isEmpty() || message.contains(where), qPrintable(message));
        QVERIFY2(message.contains(detail), qPrintable(message));
        QVERIFY2(message.endsWith('.') && !message.contains('\n'), qPrintable(message));
    }

    // A BEIR folder with the given files (an empty QByteArray: the file is not written).
    std::string beirFolder(const QString& name, const QByteArray& corpus, const QByteArray& queries,
                           const QByteArray& qrels)
    {
        QDir(dir_.path()).mkpath(name);
        if (!corpus.isNull())
            write(name + "/corpus.jsonl", corpus);
        if (!queries.isNull())
            write(name + "/queries.jsonl", queries);
        if (!qrels.isNull())
            write(name + "/qrels/test.tsv", qrels);
        return dir_.filePath(name).toStdString();
    }

    static QByteArray goodCorpus()
    {
        return "{\"_id\": \"d1\", \"title\": \"Paris\", \"text\": \"capital of France\"}\n"
               "{\"_id\": \"d2\", \"title\": \"\", \"text\": \"  no title here \"}\n"
               "{\"_id\": 3, \"text\": \"an integer id\\u00a0\", \"title\": null}\n"
               "{\"_id\": \"d4\", \"title\": \" T \", \"text\": \"\"}\n";
    }
    static QByteArray goodQueries()
    {
        return "{\"_id\": \"q1\", \"text\": \"where is Paris\"}\n"
               "{\"_id\": \"q2\", \"text\": \"an unjudged query\"}\n"
               "{\"_id\": \"q3\", \"text\": \"integers\", \"metadata\": {}}\n";
    }
    static QByteArray goodQrels()
    {
        return "query-id\tcorpus-id\tscore\n"
               "q1\td1\t2\n"
               "q1\td2\t0\n"
               "q3\t3\t1\n"
               "q3\tgone\t1\n"
               "q1\td2\t1\n"; // replaces the grade 0 of line 3, as BEIR's dict does
    }

private slots:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void textsOnePerLine()
    {
        // A byte order mark, CRLF endings, blank and space-only lines (skipped), a text with a tab.
        const std::string path = write("lines.txt", "\xEF\xBB\xBF" "first text\r\n\r\n   \nsecond\ttext\n{not json\n");
        const TextsFile file = readTextsFile(path);
        QCOMPARE(file.format, TextsFile::Format::Lines);
        QCOMPARE(file.texts, (Strings{"first text", "second\ttext", "{not json"}));
        QCOMPARE(file.lines, (std::vector<std::size_t>{1, 4, 5}));
        QCOMPARE(file.inFile, std::size_t{3});
        const TextsFile firstTwo = readTextsFile(path, 2);
        QCOMPARE(firstTwo.texts, (Strings{"first text", "second\ttext"}));
        QCOMPARE(firstTwo.inFile, std::size_t{3});
    }

    void textsJsonl()
    {
        const std::string path = write("texts.jsonl", "{\"text\": \"caf\\u00e9\", \"id\": 7}\n\n{\"text\": \"\"}\n");
        const TextsFile file = readTextsFile(path);
        QCOMPARE(file.format, TextsFile::Format::Jsonl);
        QCOMPARE(file.texts, (Strings{"caf\xC3\xA9", ""}));
        QCOMPARE(file.lines, (std::vector<std::size_t>{1, 3}));
    }

    void textsBadInput_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("where");
        QTest::addColumn<QString>("detail");
        QTest::newRow("plain then JSON") << QByteArray("a text\n{\"text\": \"b\"}\n") << "line 2" << "not both";
        QTest::newRow("JSON then plain") << QByteArray("{\"text\": \"a\"}\nplain\n") << "line 2" << "not both";
        QTest::newRow("bad JSON line") << QByteArray("{\"text\": \"a\"}\n{\"text\": \"b\"\n") << "line 2" << "is not valid JSON";
        QTest::newRow("no text key") << QByteArray("{\"text\": \"a\"}\n\n{\"body\": \"b\"}\n") << "line 3"
                                     << "\"text\" is missing";
        QTest::newRow("text not a string") << QByteArray("{\"text\": 5}\n") << "line 1" << "must be a string";
        QTest::newRow("not UTF-8") << QByteArray("ok\nbad \xFF byte\n") << "line 2" << "not UTF-8";
        QTest::newRow("empty") << QByteArray(" \n\n") << "" << "holds no text";
    }

    void textsBadInput()
    {
        QFETCH(QByteArray, content);
        QFETCH(QString, where);
        QFETCH(QString, detail);
        const std::string path = write("bad_texts.txt", content);
        checkSentence(errorOf([&] { readTextsFile(path); }), path, where, detail);
    }

    void stsTsvByHeaderName()
    {
        // stsbenchmark.tsv's layout: extra columns, score before the sentences; quotes kept as text.
        const std::string path = write("sts.tsv",
                                       "split\tscore\tsentence1\tsentence2\n"
                                       "test\t5.000\tA man plays.\tA \"man\" is playing.\n"
                                       "test\t +0.5 \tA cat.\tA dog.\n"
                                       "test\t1e0\tx\ty\n");
        const StsDataset dataset = readStsFile(path);
        QCOMPARE(dataset.format, StsDataset::Format::Tsv);
        QCOMPARE(dataset.pairs.size(), std::size_t{3});
        QCOMPARE(dataset.pairs[0].sentence1, std::string("A man plays."));
        QCOMPARE(dataset.pairs[0].sentence2, std::string("A \"man\" is playing."));
        QCOMPARE(dataset.pairs[0].score, 5.0);
        QCOMPARE(dataset.pairs[1].score, 0.5);
        QCOMPARE(dataset.pairs[2].score, 1.0);
        QCOMPARE(dataset.pairs[2].line, std::size_t{4});
        const StsDataset first = readStsFile(path, 1);
        QCOMPARE(first.pairs.size(), std::size_t{1});
        QCOMPARE(first.inFile, std::size_t{3});
    }

    void stsJsonl()
    {
        const std::string path = write("sts.jsonl",
                                       "{\"sentence1\": \"a\", \"sentence2\": \"b\", \"score\": 4.25}\n"
                                       "{\"score\": 1, \"sentence2\": \"d\", \"sentence1\": \"c\"}\n");
        const StsDataset dataset = readStsFile(path);
        QCOMPARE(dataset.format, StsDataset::Format::Jsonl);
        QCOMPARE(dataset.pairs.size(), std::size_t{2});
        QCOMPARE(dataset.pairs[0].score, 4.25);
        QCOMPARE(dataset.pairs[1].sentence1, std::string("c"));
        QCOMPARE(dataset.pairs[1].score, 1.0);
    }

    void stsBadInput_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("where");
        QTest::addColumn<QString>("detail");
        QTest::newRow("missing column") << QByteArray("sentence1\tsentence2\tlabel\na\tb\t1\n") << "line 1"
                                        << "no \"score\" column";
        QTest::newRow("non-numeric score") << QByteArray("sentence1\tsentence2\tscore\na\tb\t1.5\nc\td\thigh\n")
                                           << "line 3" << "the score \"high\" is not a number";
        QTest::newRow("comma decimal") << QByteArray("sentence1\tsentence2\tscore\na\tb\t4,5\n") << "line 2"
                                       << "is not a number";
        QTest::newRow("not finite") << QByteArray("sentence1\tsentence2\tscore\na\tb\tnan\n") << "line 2"
                                    << "is not a number";
        QTest::newRow("field count") << QByteArray("sentence1\tsentence2\tscore\na\tb\n") << "line 2"
                                     << "2 tab-separated fields where the header row has 3";
        QTest::newRow("header only") << QByteArray("sentence1\tsentence2\tscore\n") << "" << "holds no sentence pairs";
        QTest::newRow("JSONL score string")
            << QByteArray("{\"sentence1\": \"a\", \"sentence2\": \"b\", \"score\": \"4\"}\n") << "line 1"
            << "\"score\" must be a number";
        QTest::newRow("JSONL missing key") << QByteArray("{\"sentence1\": \"a\", \"score\": 4}\n") << "line 1"
                                           << "\"sentence2\" is missing";
        QTest::newRow("JSONL bad line")
            << QByteArray("{\"sentence1\": \"a\", \"sentence2\": \"b\", \"score\": 4}\n[1, 2\n") << "line 2"
            << "is not valid JSON";
        QTest::newRow("JSONL array row")
            << QByteArray("{\"sentence1\": \"a\", \"sentence2\": \"b\", \"score\": 4}\n[1, 2]\n") << "line 2"
            << "is a JSON array, not an object";
    }

    void stsBadInput()
    {
        QFETCH(QByteArray, content);
        QFETCH(QString, where);
        QFETCH(QString, detail);
        const std::string path = write("bad_sts.tsv", content);
        checkSentence(errorOf([&] { readStsFile(path); }), path, where, detail);
    }

    void beirFolder()
    {
        const std::string folder = beirFolder("beir", goodCorpus(), goodQueries(), goodQrels());
        const BeirDataset dataset = readBeirFolder(folder);
        QCOMPARE(dataset.corpus.size(), std::size_t{4});
        // (title + " " + text) stripped at both ends, U+00A0 included (Python's str.strip()).
        QCOMPARE(dataset.corpus[0].text, std::string("Paris capital of France"));
        QCOMPARE(dataset.corpus[1].text, std::string("no title here"));
        QCOMPARE(dataset.corpus[2].id, std::string("3"));
        QCOMPARE(dataset.corpus[2].text, std::string("an integer id"));
        QCOMPARE(dataset.corpus[3].text, std::string("T"));
        // q2 has no qrels: dropped; q1 and q3 in queries.jsonl order.
        QCOMPARE(dataset.queriesInFile, std::size_t{3});
        QCOMPARE(dataset.judgedQueries, std::size_t{2});
        QCOMPARE(dataset.queries.size(), std::size_t{2});
        QCOMPARE(dataset.queries[0].id, std::string("q1"));
        QCOMPARE(dataset.queries[0].text, std::string("where is Paris"));
        // The later line for (q1, d2) wins: grade 1.
        QCOMPARE(dataset.queries[0].qrels.grades, (std::map<std::size_t, int>{{0, 2}, {1, 1}}));
        // q3 judges document "3" (an integer _id) and "gone", which is not in the corpus.
        QCOMPARE(dataset.queries[1].qrels.grades, (std::map<std::size_t, int>{{2, 1}}));
        QCOMPARE(dataset.queries[1].qrels.absentDocumentGrades, std::vector<int>{1});
        QCOMPARE(dataset.qrelsForAbsentDocuments, std::size_t{1});
        // --max-samples 1: the first judged query.
        const BeirDataset first = readBeirFolder(folder, 1);
        QCOMPARE(first.queries.size(), std::size_t{1});
        QCOMPARE(first.queries[0].id, std::string("q1"));
        QCOMPARE(first.judgedQueries, std::size_t{2});
        QCOMPARE(first.qrelsForAbsentDocuments, std::size_t{0});
        QCOMPARE(first.corpus.size(), std::size_t{4});
    }

    void beirMissingFiles_data()
    {
        QTest::addColumn<int>("missing");
        QTest::addColumn<QString>("file");
        QTest::newRow("corpus") << 0 << "corpus.jsonl";
        QTest::newRow("queries") << 1 << "queries.jsonl";
        QTest::newRow("qrels") << 2 << "qrels/test.tsv";
    }

    void beirMissingFiles()
    {
        QFETCH(int, missing);
        QFETCH(QString, file);
        const QString name = "beir_missing_" + QString::number(missing);
        const std::string folder = beirFolder(name, missing == 0 ? QByteArray() : goodCorpus(),
                                              missing == 1 ? QByteArray() : goodQueries(),
                                              missing == 2 ? QByteArray() : goodQrels());
        checkSentence(errorOf([&] { readBeirFolder(folder); }), folder + "/" + file.toStdString(), "",
                      "is missing; a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/test.tsv");
        const std::string notThere = dir_.filePath("no_such_folder").toStdString();
        checkSentence(errorOf([&] { readBeirFolder(notThere); }), notThere, "", "it is not a folder");
    }

    void beirBadInput_data()
    {
        QTest::addColumn<QByteArray>("corpus");
        QTest::addColumn<QByteArray>("queries");
        QTest::addColumn<QByteArray>("qrels");
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("where");
        QTest::addColumn<QString>("detail");
        const QByteArray corpus = goodCorpus(), queries = goodQueries(), qrels = goodQrels();
        QTest::newRow("unknown query") << corpus << queries << QByteArray(qrels + "q9\td1\t1\n") << "qrels/test.tsv"
                                       << "line 7" << "the query-id \"q9\" is not in queries.jsonl";
        QTest::newRow("non-integer grade") << corpus << queries << QByteArray("query-id\tcorpus-id\tscore\nq1\td1\t1.5\n")
                                           << "qrels/test.tsv" << "line 2" << "is not an integer grade";
        QTest::newRow("qrels field count") << corpus << queries << QByteArray("query-id\tcorpus-id\tscore\nq1 d1 1\n")
                                           << "qrels/test.tsv" << "line 2" << "has 1 tab-separated fields";
        QTest::newRow("no header") << corpus << queries << QByteArray("q1\td1\t1\n") << "qrels/test.tsv" << "line 1"
                                   << "header row";
        QTest::newRow("no judgements") << corpus << queries << QByteArray("query-id\tcorpus-id\tscore\n")
                                       << "qrels/test.tsv" << "" << "holds no judgements";
        QTest::newRow("bad corpus JSON") << QByteArray(corpus + "{\"_id\": \"d9\", \"text\": }\n") << queries << qrels
                                         << "corpus.jsonl" << "line 5" << "is not valid JSON";
        QTest::newRow("corpus without text") << QByteArray("{\"_id\": \"d1\", \"title\": \"t\"}\n") << queries << qrels
                                             << "corpus.jsonl" << "line 1" << "\"text\" is missing";
        QTest::newRow("duplicate id") << QByteArray(corpus + "{\"_id\": \"d2\", \"text\": \"again\"}\n") << queries
                                      << qrels << "corpus.jsonl" << "line 5" << "already given on line 2";
        QTest::newRow("query id type") << corpus << QByteArray("{\"_id\": [1], \"text\": \"x\"}\n") << qrels
                                       << "queries.jsonl" << "line 1" << "\"_id\" must be a string";
        QTest::newRow("empty corpus") << QByteArray("\n") << queries << qrels << "corpus.jsonl" << ""
                                      << "holds no entries";
    }

    void beirBadInput()
    {
        QFETCH(QByteArray, corpus);
        QFETCH(QByteArray, queries);
        QFETCH(QByteArray, qrels);
        QFETCH(QString, file);
        QFETCH(QString, where);
        QFETCH(QString, detail);
        const std::string folder = beirFolder(QString("beir_bad_") + QTest::currentDataTag(), corpus, queries, qrels);
        checkSentence(errorOf([&] { readBeirFolder(folder); }), folder + "/" + file.toStdString(), where, detail);
    }

    void classification()
    {
        const Strings labels = {"negative", "positive"};
        const std::string path = write("cls.jsonl",
                                       "{\"text\": \"great\", \"label\": 1}\n"
                                       "{\"text\": \"q\", \"pair\": \"p\", \"label\": \"negative\"}\n"
                                       "{\"text\": \"r\", \"pair\": null, \"label\": 1.0}\n");
        const ClassificationDataset dataset = readClassificationFile(path, labels);
        QVERIFY(dataset.hasLabels);
        QCOMPARE(dataset.examples.size(), std::size_t{3});
        QCOMPARE(dataset.examples[0].label, std::optional<std::size_t>(1));
        QVERIFY(!dataset.examples[0].pair);
        QCOMPARE(dataset.examples[1].pair, std::optional<std::string>("p"));
        QCOMPARE(dataset.examples[1].label, std::optional<std::size_t>(0));
        QCOMPARE(dataset.examples[2].label, std::optional<std::size_t>(1));
        QVERIFY(!dataset.examples[2].pair);
        const ClassificationDataset first = readClassificationFile(path, labels, 2);
        QCOMPARE(first.examples.size(), std::size_t{2});
        QCOMPARE(first.inFile, std::size_t{3});
        // Without labels at all: the sides are compared with each other only.
        const std::string unlabelled = write("cls_unlabelled.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\"}\n");
        QVERIFY(!readClassificationFile(unlabelled, labels).hasLabels);
        // Label names unknown (empty list): ids are kept as given, names cannot be resolved.
        const std::string ids = write("cls_ids.jsonl", "{\"text\": \"a\", \"label\": 7}\n");
        QCOMPARE(readClassificationFile(ids, {}).examples[0].label, std::optional<std::size_t>(7));
        checkSentence(errorOf([&] { readClassificationFile(path, {}); }), path, "line 2",
                      "the label \"negative\" is a name, but the model's label names are not known");
    }

    void classificationBadInput_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("where");
        QTest::addColumn<QString>("detail");
        QTest::newRow("unknown label name")
            << QByteArray("{\"text\": \"a\", \"label\": 0}\n{\"text\": \"b\", \"label\": \"neutral\"}\n") << "line 2"
            << "the label \"neutral\" is not one of the model's labels (\"negative\" and \"positive\")";
        QTest::newRow("id past labels") << QByteArray("{\"text\": \"a\", \"label\": 2}\n") << "line 1"
                                        << "past the model's 2 labels";
        QTest::newRow("negative id") << QByteArray("{\"text\": \"a\", \"label\": -1}\n") << "line 1" << "negative";
        QTest::newRow("fractional id") << QByteArray("{\"text\": \"a\", \"label\": 0.5}\n") << "line 1"
                                       << "is not an integer id";
        QTest::newRow("boolean label") << QByteArray("{\"text\": \"a\", \"label\": true}\n") << "line 1"
                                       << "must be an integer id or a label name, found boolean";
        QTest::newRow("labelled then not")
            << QByteArray("{\"text\": \"a\", \"label\": 0}\n{\"text\": \"b\"}\n") << "line 2" << "has no \"label\"";
        QTest::newRow("bad JSON line") << QByteArray("{\"text\": \"a\", \"label\": 0}\n{\"text\": \"b\", \n") << "line 2"
                                       << "is not valid JSON";
        QTest::newRow("pair not a string") << QByteArray("{\"text\": \"a\", \"pair\": 3, \"label\": 0}\n") << "line 1"
                                           << "\"pair\" must be a string";
        QTest::newRow("huge number") << QByteArray("{\"text\": \"a\", \"label\": 1e400}\n") << "line 1"
                                     << "too large";
        QTest::newRow("deep nesting") << QByteArray("{\"text\": " + QByteArray(200, '[') + "}\n") << "line 1"
                                      << "levels deep";
    }

    void classificationBadInput()
    {
        QFETCH(QByteArray, content);
        QFETCH(QString, where);
        QFETCH(QString, detail);
        const std::string path = write("bad_cls.jsonl", content);
        checkSentence(errorOf([&] { readClassificationFile(path, {"negative", "positive"}); }), path, where, detail);
    }

    void unreadablePaths()
    {
        const std::string missing = dir_.filePath("absent.txt").toStdString();
        checkSentence(errorOf([&] { readTextsFile(missing); }), missing, "", "Cannot read");
        checkSentence(errorOf([&] { readStsFile(dir_.path().toStdString()); }), dir_.path().toStdString(), "",
                      "it is a folder");
    }

    void pythonStrip()
    {
        // ASCII white space, U+00A0, U+3000 and U+2028 go; U+200B (zero width space) is not white
        // space to Python and stays.
        QCOMPARE(stripPythonWhitespace(" \t\xC2\xA0" "a b\xE3\x80\x80\xE2\x80\xA8\n"), std::string("a b"));
        QCOMPARE(stripPythonWhitespace("\xE2\x80\x8B" "x"), std::string("\xE2\x80\x8B" "x"));
        QCOMPARE(stripPythonWhitespace("   "), std::string());
        QCOMPARE(stripPythonWhitespace("\xFF "), std::string("\xFF"));
    }

    // A fix's recorded input as its task panel reruns it (tasks/fix_task_input.h): the window's own
    // record in its kind; the CLI's --text / --pair and texts file (read again while it is the file
    // measured, SHA-256 computed here by Qt) as the open head's panel takes them.
    void fixTaskInputReadsTheRecordedInput()
    {
        using nlohmann::json;
        auto provenanceOf = [](const json& inputs) { return json{{"measurement", {{"inputs", inputs}}}}; };
        const json recorded = rerankTaskJson("q", {"a", "b", "c"}, 1);
        FixTaskInput input = provenanceTaskInput(provenanceOf({{"text", "q"}, {"pair", "b"}, {"task", recorded}}), FixTaskKind::Classify);
        QCOMPARE(int(input.kind), int(FixTaskKind::Rerank)); // the record's own kind wins
        QCOMPARE(input.query, std::string("q"));
        QCOMPARE(input.passages, (Strings{"a", "b", "c"}));
        QCOMPARE(input.comparedPassage, 1);
        QVERIFY(input.problem.empty());
        input = provenanceTaskInput(provenanceOf({{"task", embedTaskJson({"x", "y"}, "query")}}), FixTaskKind::None);
        QCOMPARE(int(input.kind), int(FixTaskKind::Embed));
        QCOMPARE(input.texts, (Strings{"x", "y"}));
        QCOMPARE(input.prompt, std::string("query"));
        // --text / --pair from the CLI.
        input = provenanceTaskInput(provenanceOf({{"text", "q"}, {"pair", "p"}}), FixTaskKind::Rerank);
        QCOMPARE(input.query, std::string("q"));
        QCOMPARE(input.passages, (Strings{"p"}));
        QCOMPARE(input.comparedPassage, -1);
        input = provenanceTaskInput(provenanceOf({{"text", "t"}, {"pair", "p"}}), FixTaskKind::Classify);
        QCOMPARE(input.text, std::string("t"));
        QCOMPARE(input.pair, std::string("p"));
        QVERIFY(!provenanceTaskInput(provenanceOf({{"text", "q"}}), FixTaskKind::Rerank).problem.empty()); // no passage
        // A question, or no measurement at all: nothing for a task panel.
        QCOMPARE(int(provenanceTaskInput(provenanceOf({{"question", "q"}, {"context", "c"}}), FixTaskKind::Rerank).kind),
                 int(FixTaskKind::None));
        QCOMPARE(int(provenanceTaskInput(json::object(), FixTaskKind::Embed).kind), int(FixTaskKind::None));

        // A texts file: one query's passages as JSONL pairs.
        const QByteArray pairs = "{\"text\": \"q\", \"pair\": \"p1\"}\n{\"text\": \"q\", \"pair\": \"p2\"}\n";
        const std::string file = write("fix/pairs.jsonl", pairs);
        const std::string sha = QCryptographicHash::hash(pairs, QCryptographicHash::Sha256).toHex().toStdString();
        const json fileInputs = {{"texts", file}, {"sha256", sha}, {"rows", 2}};
        input = provenanceTaskInput(provenanceOf(fileInputs), FixTaskKind::Rerank);
        QVERIFY2(input.problem.empty(), input.problem.c_str());
        QCOMPARE(input.query, std::string("q"));
        QCOMPARE(input.passages, (Strings{"p1", "p2"}));
        input = provenanceTaskInput(provenanceOf(fileInputs), FixTaskKind::Embed);
        QCOMPARE(input.texts, (Strings{"q", "q"}));
        // Changed since, two queries, or gone: one sentence naming the file, no input.
        write("fix/changed.jsonl", pairs + "{\"text\": \"q\", \"pair\": \"p3\"}\n");
        input = provenanceTaskInput(provenanceOf({{"texts", dir_.filePath("fix/changed.jsonl").toStdString()}, {"sha256", sha}}),
                                    FixTaskKind::Rerank);
        QVERIFY2(QString::fromStdString(input.problem).contains("changed since"), input.problem.c_str());
        const std::string mixed = write("fix/mixed.jsonl", "{\"text\": \"q\", \"pair\": \"p1\"}\n{\"text\": \"r\", \"pair\": \"p2\"}\n");
        input = provenanceTaskInput(provenanceOf({{"texts", mixed}}), FixTaskKind::Rerank);
        QVERIFY2(QString::fromStdString(input.problem).contains(QString::fromStdString(mixed)), input.problem.c_str());
        QVERIFY(input.passages.empty());
        input = provenanceTaskInput(provenanceOf({{"texts", dir_.filePath("fix/none.jsonl").toStdString()}}), FixTaskKind::Embed);
        QVERIFY2(QString::fromStdString(input.problem).contains("no longer there"), input.problem.c_str());
        QVERIFY(input.texts.empty());
    }
};

QTEST_GUILESS_MAIN(TestTaskDatasets)
#include "test_task_datasets.moc"
