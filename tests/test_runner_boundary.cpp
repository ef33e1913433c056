// The runner as a trust boundary (issue 30): what a runner accepts from a peer it cannot trust
// (packaging/runners/PROTOCOL.md).
//
// Real `scalescope-cli runner` processes are fed hand-made byte streams: a commit of other bytes
// under a genuine checkpoint hash, files the manifest does not list, the cache folder's
// permissions, and a payload whose request fails in a way other than a refusal.
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

struct Fixtures {
    std::string root;
    std::string fp8Qa; // 4 encoder layers
    std::string fp8Mlm;
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
};

QTEST_GUILESS_MAIN(TestRunnerBoundary)
#include "test_runner_boundary.moc"
