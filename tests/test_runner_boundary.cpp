// The runner as a trust boundary (issue 30): what a runner accepts from a peer it cannot trust
// (packaging/runners/PROTOCOL.md), and what the client does about a runner that never answers.
//
// The runner side drives real `scalescope-cli runner` processes with hand-made byte streams: a
// commit of other bytes under a genuine checkpoint hash, files the manifest does not list, the
// cache folder's permissions, framing errors (a bad "bytes", a line that cannot be read, a
// payload whose request fails in any way), the line limit (measured in process, where the bytes
// read can be counted) and integers beyond 64 bits. The client side starts runner scripts that
// report progress forever and never answer: the request's overall deadline ends them.
#include <sys/stat.h>
#include <unistd.h>

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QProcess>
#include <QScopeGuard>
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <streambuf>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "device/checkpoint_manifest.h"
#include "device/runner_backend.h"
#include "engine/compute_threads.h"
#include "engine/encoder_model.h"
#include "engine/runner_server.h"
#include "io/sha256.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

std::string shellQuote(const std::string& text)
{
    std::string quoted = "'";
    for (char c : text)
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

// hello and load answer at once (protocol 1); a forward gets a progress line every 0.2 s for 30 s
// and never an answer, then the script exits.
const char* kProgressForeverRunner = R"(#!/bin/sh
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"op":"hello"'*) printf '{"id":%s,"ok":true,"protocol":1,"device":"cpu","name":"stuck"}\n' "$id" ;;
    *'"op":"load"'*) printf '{"id":%s,"ok":true}\n' "$id" ;;
    *'"op":"forward"'*)
      i=0
      while [ $i -lt 150 ]; do
        printf '{"id":%s,"progress":0.5,"stage":"Compiling for AIU"}\n' "$id"
        sleep 0.2
        i=$((i + 1))
      done
      exit 0 ;;
    *'"op":"shutdown"'*) printf '{"id":%s,"ok":true}\n' "$id"; exit 0 ;;
  esac
done
)";

struct Fixtures {
    std::string root;
    std::string fp8Qa; // 4 encoder layers
    std::string fp8Mlm;
    std::string progressScript;
};

Fixtures& fixtures()
{
    static Fixtures f;
    return f;
}

QByteArray line(const json& request) { return QByteArray::fromStdString(request.dump()) + '\n'; }

QByteArray helloV2(int id = 1) { return line({{"id", id}, {"op", "hello"}, {"protocols", {1, 2}}}); }

// An upload whose announced SHA-256 is that of the bytes sent: each upload on its own is honest.
QByteArray upload(int id, const std::string& hash, const std::string& name, const std::string& data)
{
    return line({{"id", id}, {"op", "upload"}, {"hash", hash}, {"name", name}, {"sha256", sha256Hex(data)},
                 {"bytes", data.size()}}) +
           QByteArray::fromStdString(data);
}

// Uploads of every manifest file (with `replaced` bytes in place of some), then the commit of the
// manifest's own (genuine) file list.
QByteArray uploadAndCommit(const CheckpointManifest& manifest, int firstId,
                           const std::map<std::string, std::string>& replaced = {})
{
    QByteArray stream;
    int id = firstId;
    for (const ManifestFile& file : manifest.files) {
        const auto swap = replaced.find(file.name);
        stream += upload(id++, manifest.hash, file.name,
                         swap != replaced.end() ? swap->second : readFileToString(file.path));
    }
    return stream + line({{"id", id}, {"op", "commit_checkpoint"}, {"hash", manifest.hash}, {"files", manifest.filesJson()}});
}

struct Session {
    std::vector<json> responses; // in order; a blob that follows a response is skipped
    std::string log;
    int exitCode = -1;
    bool finished = false;

    const json* byId(const json& id) const
    {
        for (const json& response : responses)
            if (response.value("id", json()) == id)
                return &response;
        return nullptr;
    }
    std::vector<json> ids() const
    {
        std::vector<json> out;
        for (const json& response : responses)
            out.push_back(response.value("id", json()));
        return out;
    }
};

std::vector<json> responsesOf(const QByteArray& data)
{
    std::vector<json> responses;
    qsizetype at = 0;
    while (at < data.size()) {
        const qsizetype newline = data.indexOf('\n', at);
        if (newline < 0)
            break;
        const json response = json::parse(data.mid(at, newline - at).toStdString());
        at = newline + 1;
        if (response.contains("bytes") && response["bytes"].is_number_unsigned())
            at += static_cast<qsizetype>(response["bytes"].get<uint64_t>());
        responses.push_back(response);
    }
    return responses;
}

QProcessEnvironment environmentWithCache(const std::string& cache)
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("SCALESCOPE_RUNNER_CACHE", QString::fromStdString(cache));
    return environment;
}

// `scalescope-cli runner` as a child process fed `input` on stdin, then end of input.
Session runRunner(const QByteArray& input, const QProcessEnvironment& environment, int timeoutMs = 60000)
{
    Session session;
    QProcess process;
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(SCALESCOPE_CLI), {QStringLiteral("runner")});
    if (!process.waitForStarted())
        return session;
    process.write(input);
    process.closeWriteChannel();
    session.finished = process.waitForFinished(timeoutMs);
    if (!session.finished) {
        process.kill();
        process.waitForFinished();
    }
    session.exitCode = process.exitCode();
    session.log = process.readAllStandardError().toStdString();
    session.responses = responsesOf(process.readAllStandardOutput());
    return session;
}

std::string errorOf(const json* response)
{
    return response && response->contains("error") && (*response)["error"].is_string() ? (*response)["error"].get<std::string>()
                                                                                       : std::string("(no error)");
}

bool okOf(const json* response) { return response && response->value("ok", false); }

int modeOf(const std::string& path)
{
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 ? static_cast<int>(info.st_mode & 07777) : -1;
}

QStringList entriesUnder(const std::string& folder)
{
    QStringList names;
    QDirIterator it(QString::fromStdString(folder), QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System,
                    QDirIterator::Subdirectories);
    while (it.hasNext())
        names << QDir(QString::fromStdString(folder)).relativeFilePath(it.next());
    names.sort();
    return names;
}

void compareTensorsBitwise(const std::vector<NamedTensor>& ours, const std::vector<NamedTensor>& expected)
{
    QCOMPARE(ours.size(), expected.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
        QCOMPARE(ours[i].name, expected[i].name);
        QCOMPARE(ours[i].tensor.shape, expected[i].tensor.shape);
        QVERIFY2(ours[i].tensor.values == expected[i].tensor.values,
                 qPrintable(QString::fromStdString("tensor " + ours[i].name + " differs")));
    }
}

EncoderInputs twoRows() { return {{{0, 40, 41, 42, 43, 44, 2}, {0, 50, 51, 2}}, {{1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1}}, {}, {}}; }

// A stream of `size` bytes of 'x' and no newline, counting what the reader took.
class EndlessLine : public std::streambuf {
public:
    explicit EndlessLine(uint64_t size) : left_(size), chunk_(1 << 16, 'x') {}
    uint64_t consumed() const { return served_ - static_cast<uint64_t>(egptr() - gptr()); }

protected:
    int_type underflow() override
    {
        if (left_ == 0)
            return traits_type::eof();
        const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(left_, chunk_.size()));
        left_ -= n;
        served_ += n;
        setg(chunk_.data(), chunk_.data(), chunk_.data() + n);
        return traits_type::to_int_type(*gptr());
    }

private:
    uint64_t left_;
    uint64_t served_ = 0;
    std::string chunk_;
};

} // namespace

class TestRunnerBoundary : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        setComputeThreads(2);
        qputenv("SCALESCOPE_THREADS", "2");
        QVERIFY(QFileInfo::exists(SCALESCOPE_CLI));
        Fixtures& f = fixtures();
        f.root = makeTempDir("runner-boundary");
        TinyModelSpec qa;
        qa.numLayers = 4;
        writeTinyFloatCheckpoint(f.root + "/float-qa", qa);
        f.fp8Qa = f.root + "/fp8-qa";
        writeTinyFp8Checkpoint(f.root + "/float-qa", f.fp8Qa, {"channel", "token", "F32"});
        TinyModelSpec mlm;
        mlm.architecture = "RobertaForMaskedLM";
        writeTinyFloatCheckpoint(f.root + "/float-mlm", mlm);
        f.fp8Mlm = f.root + "/fp8-mlm";
        writeTinyFp8Checkpoint(f.root + "/float-mlm", f.fp8Mlm, {"channel", "token", "F32"});
        f.progressScript = f.root + "/progress-forever.sh";
        std::ofstream(f.progressScript) << kProgressForeverRunner;
    }

    void cleanupTestCase() { QDir(QString::fromStdString(fixtures().root)).removeRecursively(); }

    // ---- the checkpoint cache ---------------------------------------------------------------------

    // The acceptance test of issue 30 item 1: a client uploads a config.json of the same size that
    // says 1 layer instead of 4 (its upload is honest about its own SHA-256) and commits it under
    // the genuine checkpoint's hash with the genuine file list. The runner refuses the commit, the
    // cache holds no entry for the hash, and a later client gets the genuine model.
    void commitOfOtherBytesUnderAGenuineHashIsRefused()
    {
        const std::string cache = makeTempDir("cache-poison") + "/cache";
        const CheckpointManifest manifest = CheckpointManifest::of(fixtures().fp8Qa);
        std::string forged = readFileToString(fixtures().fp8Qa + "/config.json");
        const std::string genuineLayers = "\"num_hidden_layers\": 4";
        const std::size_t at = forged.find(genuineLayers);
        QVERIFY2(at != std::string::npos, forged.c_str());
        forged.replace(at, genuineLayers.size(), "\"num_hidden_layers\": 1");
        QCOMPARE(forged.size(), std::size_t(std::filesystem::file_size(fixtures().fp8Qa + "/config.json")));

        const int commitId = 2 + static_cast<int>(manifest.files.size());
        const Session attack = runRunner(helloV2() + uploadAndCommit(manifest, 2, {{"config.json", forged}}) +
                                             line({{"id", 90}, {"op", "has_checkpoint"}, {"hash", manifest.hash}}),
                                         environmentWithCache(cache));
        QVERIFY2(attack.finished, attack.log.c_str());
        const json* commit = attack.byId(commitId);
        QVERIFY2(commit && !okOf(commit), commit ? commit->dump().c_str() : attack.log.c_str());
        const std::string error = errorOf(commit);
        QVERIFY2(error.find("config.json") != std::string::npos && error.find(sha256Hex(forged)) != std::string::npos,
                 error.c_str());
        const json* cached = attack.byId(90);
        QVERIFY2(okOf(cached) && (*cached)["cached"] == json(false), attack.log.c_str());
        QVERIFY(!QFileInfo::exists(QString::fromStdString(cache + "/" + manifest.hash)));

        // A later client uploads the genuine files and runs the genuine model.
        auto runner = RunnerBackend::start("SCALESCOPE_RUNNER_CACHE=" + shellQuote(cache) + " " +
                                               shellQuote(SCALESCOPE_CLI) + " runner",
                                           fixtures().fp8Qa);
        QCOMPARE(runner->protocolVersion(), 2);
        ForwardOptions options;
        options.capture.all = true;
        const ForwardResult remote = runner->forward(twoRows(), options);
        const ForwardResult local = EncoderModel::load(fixtures().fp8Qa)->forward(twoRows(), options);
        compareTensorsBitwise(remote.outputs, local.outputs);
        compareTensorsBitwise(remote.captures, local.captures);
        QCOMPARE(CheckpointManifest::of(cache + "/" + manifest.hash).hash, manifest.hash);
    }

    // A file uploaded next to the checkpoint's own (planted.sh) is never published: the cache
    // entry holds exactly the manifest's files, and nothing else is left in the cache.
    void commitPublishesOnlyTheManifestsFiles()
    {
        const std::string cache = makeTempDir("cache-planted") + "/cache";
        const CheckpointManifest manifest = CheckpointManifest::of(fixtures().fp8Qa);
        const Session session = runRunner(helloV2() + upload(2, manifest.hash, "planted.sh", "#!/bin/sh\nrm -rf ~\n") +
                                              uploadAndCommit(manifest, 3) +
                                              line({{"id", 90}, {"op", "load"}, {"hash", manifest.hash}}),
                                          environmentWithCache(cache));
        QVERIFY2(session.finished, session.log.c_str());
        for (const json& response : session.responses)
            QVERIFY2(response.value("ok", false) || response["id"] == 2, response.dump().c_str());
        QVERIFY2(okOf(session.byId(90)), session.log.c_str());
        QStringList expected;
        for (const ManifestFile& file : manifest.files)
            expected << QString::fromStdString(manifest.hash + "/" + file.name);
        expected << QString::fromStdString(manifest.hash);
        expected.sort();
        QCOMPARE(entriesUnder(cache), expected);
    }

    // The default cache is the user's own ($XDG_CACHE_HOME/scalescope-runner here), created 0700,
    // and so is every entry published in it.
    void defaultCacheIsPrivate()
    {
        const std::string xdg = makeTempDir("cache-xdg");
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.remove("SCALESCOPE_RUNNER_CACHE");
        environment.insert("XDG_CACHE_HOME", QString::fromStdString(xdg));
        const CheckpointManifest manifest = CheckpointManifest::of(fixtures().fp8Qa);
        const Session session = runRunner(helloV2() + uploadAndCommit(manifest, 2), environment);
        QVERIFY2(session.finished, session.log.c_str());
        for (const json& response : session.responses)
            QVERIFY2(response.value("ok", false), response.dump().c_str());
        const std::string cache = xdg + "/scalescope-runner";
        QCOMPARE(modeOf(cache), 0700);
        QCOMPARE(modeOf(cache + "/" + manifest.hash), 0700);
        for (const ManifestFile& file : manifest.files)
            QVERIFY2((modeOf(cache + "/" + manifest.hash + "/" + file.name) & 077) == 0, file.name.c_str());
    }

    // A cache folder others can write is one anybody could fill with a model under any hash: the
    // runner refuses to use it (and still reads the upload's bytes, so the stream stays framed).
    void cacheWritableByOthersIsRefused()
    {
        const std::string cache = makeTempDir("cache-shared") + "/cache";
        QVERIFY(QDir().mkpath(QString::fromStdString(cache)));
        QCOMPARE(::chmod(cache.c_str(), 0777), 0);
        const CheckpointManifest manifest = CheckpointManifest::of(fixtures().fp8Qa);
        const Session session =
            runRunner(helloV2() + upload(2, manifest.hash, "config.json", "{\"id\":3,\"op\":\"shutdown\"}\n") +
                          line({{"id", 4}, {"op", "has_checkpoint"}, {"hash", manifest.hash}}) +
                          line({{"id", 5}, {"op", "hello"}}),
                      environmentWithCache(cache));
        QVERIFY2(session.finished, session.log.c_str());
        QCOMPARE(session.ids(), (std::vector<json>{1, 2, 4, 5}));
        for (const int id : {2, 4}) {
            const std::string error = errorOf(session.byId(id));
            QVERIFY2(error.find(cache) != std::string::npos && error.find("other users") != std::string::npos,
                     error.c_str());
        }
        QVERIFY(okOf(session.byId(5)));
        QCOMPARE(entriesUnder(cache), QStringList());
    }

    // ---- framing ----------------------------------------------------------------------------------

    void badByteCountStopsReading_data()
    {
        QTest::addColumn<QString>("bytes");
        QTest::newRow("string") << "\"26\"";
        QTest::newRow("negative") << "-26";
        QTest::newRow("fraction") << "26.5";
        QTest::newRow("exponent") << "2.6e1";
        QTest::newRow("boolean") << "true";
        QTest::newRow("null") << "null";
        QTest::newRow("beyond 64 bits") << "18446744073709551642";
    }
    // After a "bytes" that is not a byte count the runner answers once and reads nothing more: the
    // bytes that follow (here a shutdown and a hello) are never parsed as requests.
    void badByteCountStopsReading()
    {
        QFETCH(QString, bytes);
        const std::string cache = makeTempDir("cache-bytes") + "/cache";
        const QByteArray bad = "{\"id\":2,\"op\":\"upload\",\"hash\":\"" + QByteArray(64, 'a') +
                               "\",\"name\":\"config.json\",\"sha256\":\"" + QByteArray(64, 'b') +
                               "\",\"bytes\":" + bytes.toUtf8() + "}\n";
        const Session session = runRunner(helloV2() + bad + line({{"id", 3}, {"op", "shutdown"}}) +
                                              line({{"id", 4}, {"op", "hello"}}),
                                          environmentWithCache(cache));
        QVERIFY2(session.finished, session.log.c_str());
        QCOMPARE(session.ids(), (std::vector<json>{1, 2}));
        const std::string error = errorOf(session.byId(2));
        QVERIFY2(error.find("byte count") != std::string::npos && error.find("stops reading") != std::string::npos,
                 error.c_str());
        QCOMPARE(session.exitCode, 1);
    }

    void unreadableLineStopsReading_data()
    {
        QTest::addColumn<QByteArray>("request");
        QTest::addColumn<QString>("phrase");
        QTest::newRow("not json") << QByteArray("{\"id\":2,\"op\":") << "not valid JSON";
        QTest::newRow("truncated upload") << QByteArray("{\"id\":2,\"op\":\"upload\",\"bytes\":24") << "not valid JSON";
        QTest::newRow("invalid utf-8") << QByteArray("{\"id\":2,\"op\":\"hello\",\"x\":\"\xff\xfe\"}") << "not valid JSON";
        QTest::newRow("deep") << ("{\"id\":2,\"op\":\"hello\",\"x\":" + QByteArray(100000, '[') + QByteArray(100000, ']') + "}")
                              << "64 levels";
        QByteArray values = "{\"id\":2,\"op\":\"hello\",\"x\":[0";
        values += QByteArray(",0").repeated(8 << 20);
        QTest::newRow("too many values") << values + "]}" << "8388608 values";
        QByteArray containers = "{\"id\":2,\"op\":\"hello\",\"x\":[{}";
        containers += QByteArray(",{}").repeated((1 << 20) + 1);
        QTest::newRow("too many objects") << containers + "]}" << "1048576 arrays or objects";
    }
    // A line the runner cannot read might have announced a payload it cannot see, so the runner
    // answers it once (id null) and stops reading: the shutdown after it is never run.
    void unreadableLineStopsReading()
    {
        QFETCH(QByteArray, request);
        QFETCH(QString, phrase);
        const Session session = runRunner(request + "\n" + line({{"id", 3}, {"op", "shutdown"}}) +
                                              line({{"id", 4}, {"op", "hello"}}),
                                          environmentWithCache(makeTempDir("cache-unreadable") + "/cache"));
        QVERIFY2(session.finished, session.log.c_str());
        QCOMPARE(session.responses.size(), std::size_t(1));
        QCOMPARE(session.responses[0]["id"], json(nullptr));
        const std::string error = errorOf(&session.responses[0]);
        QVERIFY2(error.find(phrase.toStdString()) != std::string::npos && error.find("stops reading") != std::string::npos,
                 error.c_str());
        QCOMPARE(session.exitCode, 1);
    }

    // The cache folder cannot be created (its parent is a file, as a read-only disk would refuse
    // it): the upload is refused naming the folder, its payload is read and dropped, and the
    // payload's own text (a shutdown request) is never run.
    void unusableCacheStillConsumesThePayload()
    {
        const std::string parent = makeTempDir("cache-unusable") + "/a-file";
        std::ofstream(parent) << "not a folder";
        const std::string cache = parent + "/cache";
        const std::string payload = "{\"id\":3,\"op\":\"shutdown\"}\n";
        const Session session = runRunner(helloV2() + upload(2, std::string(64, 'c'), "config.json", payload) +
                                              line({{"id", 4}, {"op", "hello"}, {"protocols", {1, 2}}}),
                                          environmentWithCache(cache));
        QVERIFY2(session.finished, session.log.c_str());
        QCOMPARE(session.ids(), (std::vector<json>{1, 2, 4}));
        const std::string error = errorOf(session.byId(2));
        QVERIFY2(error.find(cache) != std::string::npos, error.c_str());
        QVERIFY2(error.back() == '.' && error.find('\n') == std::string::npos, error.c_str());
        QVERIFY(okOf(session.byId(4)));
        QCOMPARE(session.exitCode, 0);
    }

    // PROTOCOL.md's 64 MiB per line is enforced while reading: 200 MB without a newline are not
    // buffered, the runner answers once after at most the limit and stops.
    void lineLimitIsEnforcedWhileReading()
    {
        EndlessLine source(200ull << 20);
        std::istream in(&source);
        std::ostringstream out, log;
        serveRunner(in, out, log);
        QVERIFY2(source.consumed() <= (64ull << 20) + (1 << 16), qPrintable(QString::number(source.consumed())));
        const std::string answers = out.str();
        QCOMPARE(std::count(answers.begin(), answers.end(), '\n'), 1);
        const json answer = json::parse(answers);
        QCOMPARE(answer["id"], json(nullptr));
        QVERIFY2(answer["error"].get<std::string>().find("64 MiB") != std::string::npos, answers.c_str());
    }

    // The same through a process: a line one byte over the limit is refused, the hello after it
    // is not read; a line at the limit is served.
    void longLineThroughAProcess()
    {
        const std::string cache = makeTempDir("cache-long") + "/cache";
        QByteArray atLimit = "{\"id\":2,\"op\":\"hello\",\"pad\":\"";
        atLimit += QByteArray((64 << 20) - atLimit.size() - 2, 'x') + "\"}";
        QCOMPARE(atLimit.size(), qsizetype(64 << 20));
        Session session = runRunner(atLimit + "\n" + line({{"id", 3}, {"op", "hello"}}), environmentWithCache(cache));
        QCOMPARE(session.ids(), (std::vector<json>{2, 3}));
        QByteArray overLimit = atLimit;
        overLimit.insert(30, 'x');
        session = runRunner(overLimit + "\n" + line({{"id", 3}, {"op", "hello"}}), environmentWithCache(cache));
        QCOMPARE(session.ids(), (std::vector<json>{nullptr}));
        QVERIFY2(errorOf(&session.responses[0]).find("longer than 64 MiB") != std::string::npos,
                 session.responses[0].dump().c_str());
        QCOMPARE(session.exitCode, 1);
    }

    void integersAreRangeCheckedAs64Bit_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("phrase");
        QTest::newRow("logit position past 2^32") << "\"logit_positions\":[[0,4294967297]]" << "4294967297";
        QTest::newRow("logit row past 2^32") << "\"logit_positions\":[[4294967296,1]]" << "4294967296";
        QTest::newRow("logit position past 2^63") << "\"logit_positions\":[[0,9223372036854775808]]"
                                                  << "9223372036854775808";
        QTest::newRow("logit position past 2^64") << "\"logit_positions\":[[0,18446744073709551617]]"
                                                  << "18446744073709551617";
        QTest::newRow("token id past 2^64") << "\"input_ids\":[[0,18446744073709551621,2]]" << "18446744073709551621";
        QTest::newRow("negative beyond 64 bits") << "\"input_ids\":[[0,-9223372036854775809,2]]"
                                                 << "-9223372036854775809";
    }
    // Every integer the runner reads is a 64-bit value checked against its range, and a refusal
    // quotes it as the request wrote it: position 2^32 + 1 is not position 1.
    void integersAreRangeCheckedAs64Bit()
    {
        QFETCH(QString, field);
        QFETCH(QString, phrase);
        json forward = {{"id", 3}, {"op", "forward"}, {"input_ids", {{0, 5, 2}}}, {"attention_mask", {{1, 1, 1}}},
                        {"output", fixtures().root + "/range.safetensors"}};
        std::string text = forward.dump();
        const std::string key = field.toStdString().substr(0, field.indexOf(':'));
        const std::size_t at = text.find(key + ":");
        if (at != std::string::npos) { // replace the default field
            const std::size_t end = text.find("]]", at) + 2;
            text.replace(at, end - at, field.toStdString());
        } else {
            text.insert(text.size() - 1, "," + field.toStdString());
        }
        const Session session =
            runRunner(line({{"id", 1}, {"op", "hello"}}) +
                          line({{"id", 2}, {"op", "load"}, {"checkpoint", fixtures().fp8Mlm}, {"mode", "fp8"}}) +
                          QByteArray::fromStdString(text) + "\n" + line({{"id", 4}, {"op", "hello"}}),
                      environmentWithCache(fixtures().root + "/unused-cache"));
        QVERIFY2(session.finished, session.log.c_str());
        QVERIFY2(okOf(session.byId(2)), session.log.c_str());
        const json* answer = session.byId(3);
        QVERIFY2(answer && !okOf(answer), answer ? answer->dump().c_str() : text.c_str());
        QVERIFY2(errorOf(answer).find(phrase.toStdString()) != std::string::npos, errorOf(answer).c_str());
        QVERIFY(okOf(session.byId(4)));
    }

    // ---- the client: an overall deadline per request --------------------------------------------

    // A runner that repeats a progress line and never answers: each line restarts the 2 s idle
    // timeout, but the forward's 3 s deadline does not move. One error, naming the runner and the
    // request, and the progress reached the caller on the way.
    void progressDoesNotPostponeTheDeadline()
    {
        RunnerOptions options;
        options.forwardTimeout = std::chrono::milliseconds(2000);
        options.deadlines["forward"] = std::chrono::milliseconds(3000);
        std::vector<std::string> lines;
        options.onProgressLine = [&](const RunnerProgressLine& progress) { lines.push_back(progress.stage); };
        auto runner = RunnerBackend::start("sh " + shellQuote(fixtures().progressScript), fixtures().fp8Qa, options);
        std::vector<std::string> stages;
        Progress progress;
        progress.callback = [&](double, const std::string& stage) { stages.push_back(stage); };
        const auto started = std::chrono::steady_clock::now();
        std::string message;
        try {
            runner->forward(twoRows(), {}, progress);
            QFAIL("a forward that never answers returned");
        } catch (const Error& e) {
            message = e.what();
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QVERIFY2(seconds >= 2.9 && seconds < 8, qPrintable(QString::number(seconds)));
        QVERIFY2(message.rfind("The runner \"sh ", 0) == 0, message.c_str());
        QVERIFY2(message.find("did not finish the forward request within its 3 s deadline") != std::string::npos,
                 message.c_str());
        QVERIFY2(message.find("Compiling for AIU") != std::string::npos, message.c_str());
        QVERIFY2(message.back() == '.' && message.find('\n') == std::string::npos, message.c_str());
        QVERIFY(std::count(stages.begin(), stages.end(), "Compiling for AIU") >= 5);
        QVERIFY(std::count(lines.begin(), lines.end(), "Compiling for AIU") >= 5);
        QVERIFY(!runner->isRunning());
    }

    // SCALESCOPE_RUNNER_DEADLINES sets the deadlines (seconds per request kind); a value that is
    // not one is refused with a sentence naming the variable.
    void deadlinesComeFromTheEnvironment()
    {
        qputenv("SCALESCOPE_RUNNER_DEADLINES", "load=600, forward=1.5");
        const auto restore = qScopeGuard([] { qunsetenv("SCALESCOPE_RUNNER_DEADLINES"); });
        auto runner = RunnerBackend::start("sh " + shellQuote(fixtures().progressScript), fixtures().fp8Qa);
        const auto started = std::chrono::steady_clock::now();
        try {
            runner->forward(twoRows(), {});
            QFAIL("a forward that never answers returned");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("within its 1.5 s deadline") != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find("SCALESCOPE_RUNNER_DEADLINES") != std::string::npos, e.what());
        }
        QVERIFY(std::chrono::steady_clock::now() - started < std::chrono::seconds(6));
        for (const char* bad : {"forward", "forward=soon", "forward=-3", "compile=10", "forward=0"}) {
            qputenv("SCALESCOPE_RUNNER_DEADLINES", bad);
            try {
                RunnerBackend::start("sh " + shellQuote(fixtures().progressScript), fixtures().fp8Qa);
                QFAIL(qPrintable(QString("SCALESCOPE_RUNNER_DEADLINES=%1 was accepted").arg(bad)));
            } catch (const Error& e) {
                QVERIFY2(std::string(e.what()).rfind("SCALESCOPE_RUNNER_DEADLINES", 0) == 0, e.what());
                QVERIFY2(std::string(e.what()).find(bad) != std::string::npos, e.what());
            }
        }
    }

    // The CLI prints the runner's progress on stderr while it waits, and ends at the deadline with
    // one sentence and exit code 1 instead of waiting forever.
    void cliPrintsRunnerProgressAndTheDeadline()
    {
        QProcess cli;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert("SCALESCOPE_RUNNER_DEADLINES", "forward=2");
        cli.setProcessEnvironment(environment);
        const auto started = std::chrono::steady_clock::now();
        cli.start(QStringLiteral(SCALESCOPE_CLI),
                  {"forward", QString::fromStdString(fixtures().fp8Qa), "--input-ids", "0,5,2", "--output",
                   QString::fromStdString(fixtures().root + "/cli-deadline.safetensors"), "--device",
                   QString::fromStdString("runner:sh " + shellQuote(fixtures().progressScript))});
        QVERIFY(cli.waitForFinished(60000));
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        const QString log = QString::fromUtf8(cli.readAllStandardError());
        QCOMPARE(cli.exitCode(), 1);
        QVERIFY2(seconds < 15, qPrintable(log));
        QVERIFY2(log.contains("Compiling for AIU (50 %)"), qPrintable(log));
        QVERIFY2(log.contains("did not finish the forward request within its 2 s deadline"), qPrintable(log));
        QVERIFY(!QFileInfo::exists(QString::fromStdString(fixtures().root + "/cli-deadline.safetensors")));
    }
};

QTEST_GUILESS_MAIN(TestRunnerBoundary)
#include "test_runner_boundary.moc"
