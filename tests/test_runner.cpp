// Out-of-process runners: RunnerBackend talking to a real `scalescope-cli runner` child on generated
// checkpoints must give bit-identical logits and captures to the in-process EncoderModel, in fp8 and
// dequant modes, and the same QA answers. Misbehaving runners (shell scripts that exit, hang, write
// garbage, answer with the wrong id or refuse, but only the first time, through a marker file) must
// each give one clear Error, and the next request must restart the runner and work. The server side
// is also driven directly with malformed requests.
#include <unistd.h>

#include <QDir>
#include <QProcess>
#include <QStandardPaths>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tasks/compare_runs.h"
#include "common/error.h"
#include "device/backend_pool.h"
#include "engine/open_backend.h"
#include "device/runner_backend.h"
#include "engine/runner_server.h"
#include "engine/compute_threads.h"
#include "io/safetensors.h"
#include "io/temporary_owner.h"
#include "engine/encoder_model.h"
#include "support/fixtures.h"
#include "tasks/answer_question.h"
#include "tasks/fill_mask.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

std::string shellQuote(const std::string& text)
{
    std::string quoted = "'";
    for (char c : text) {
        if (c == '\'')
            quoted += "'\\''";
        else
            quoted += c;
    }
    return quoted + "'";
}

std::string cliRunnerCommand() { return shellQuote(SCALESCOPE_CLI) + " runner"; }

// A runner that misbehaves in one way on its first forward (the first time it is started, as
// recorded by a marker file) and is the real CPU runner from then on.
const char* kFlakyRunner = R"(#!/bin/sh
marker="$1"; cli="$2"; behaviour="$3"
if [ -e "$marker" ]; then exec "$cli" runner; fi
: > "$marker"
if [ "$behaviour" = flood ]; then
  # 1 MB on stderr before anything else: a client that does not drain stderr would deadlock.
  i=0
  while [ $i -lt 2000 ]; do
    echo "log line $i: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" >&2
    i=$((i + 1))
  done
  exec "$cli" runner
fi
if [ "$behaviour" = protocol3 ]; then
  read -r line
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  printf '{"id":%s,"ok":true,"protocol":3,"device":"cpu","name":"future"}\n' "$id"
  read -r line
  exit 0
fi
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"op":"hello"'*) printf '{"id":%s,"ok":true,"protocol":1,"device":"cpu","name":"flaky"}\n' "$id" ;;
    *'"op":"load"'*) printf '{"id":%s,"ok":true}\n' "$id" ;;
    *'"op":"forward"'*)
      case "$behaviour" in
        exit) echo "boom: simulated crash on forward" >&2; exit 3 ;;
        hang) echo "thinking forever" >&2; sleep 1000 ;;
        garbage) echo "this is not json" ;;
        wrongid) printf '{"id":999,"ok":true,"output":"x"}\n' ;;
        refuse) printf '{"id":%s,"ok":false,"error":"device fault on card 0."}\n' "$id" ;;
        nofile) printf '{"id":%s,"ok":true,"output":"nowhere","elapsed_ms":1}\n' "$id" ;;
      esac ;;
    *'"op":"shutdown"'*) printf '{"id":%s,"ok":true}\n' "$id"; exit 0 ;;
  esac
done
)";

struct Fixtures {
    std::string root;
    std::string floatQa, fp8Qa, fp8QaStatic, fp8Mlm, floatMlm;
    std::string flakyScript;
};

Fixtures& fixtures()
{
    static Fixtures f;
    return f;
}

std::string checkpointNamed(const QString& name)
{
    const Fixtures& f = fixtures();
    if (name == "float-qa")
        return f.floatQa;
    if (name == "fp8-qa")
        return f.fp8Qa;
    if (name == "fp8-qa-static")
        return f.fp8QaStatic;
    if (name == "fp8-mlm")
        return f.fp8Mlm;
    return f.floatMlm;
}

std::string flakyCommand(const std::string& behaviour, std::string* marker = nullptr)
{
    const std::string markerPath = makeTempDir("runner-marker") + "/started";
    if (marker)
        *marker = markerPath;
    return "sh " + shellQuote(fixtures().flakyScript) + " " + shellQuote(markerPath) + " " + shellQuote(SCALESCOPE_CLI) +
           " " + behaviour;
}

// Bitwise equality of two lists of named tensors: names, order, shapes and every float's bytes.
void compareTensorsBitwise(const std::vector<NamedTensor>& ours, const std::vector<NamedTensor>& expected)
{
    QCOMPARE(ours.size(), expected.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
        QCOMPARE(ours[i].name, expected[i].name);
        QCOMPARE(ours[i].tensor.shape, expected[i].tensor.shape);
        QCOMPARE(ours[i].tensor.values.size(), expected[i].tensor.values.size());
        QVERIFY2(std::memcmp(ours[i].tensor.values.data(), expected[i].tensor.values.data(),
                             ours[i].tensor.values.size() * sizeof(float)) == 0,
                 qPrintable(QString::fromStdString("tensor " + ours[i].name + " differs")));
    }
}

EncoderInputs raggedBatch()
{
    // Two rows of different lengths: the shorter is padded, its mask says so.
    return {{{0, 40, 41, 42, 43, 44, 2}, {0, 50, 51, 2}}, {{1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1}}, {}, {}};
}

// A SQuAD file of 12 questions on one tiny context, for evaluations spread over devices.
std::string writePoolSquad()
{
    const std::string path = makeTempDir("pool-squad") + "/squad.json";
    json qas = json::array();
    const char* questions[] = {"where is the cat", "what sat on the mat", "where is Paris", "what is the capital"};
    for (int i = 0; i < 12; ++i)
        qas.push_back({{"id", "q" + std::to_string(i)},
                       {"question", questions[i % 4]},
                       {"answers", {{{"text", "the mat"}, {"answer_start", 15}}}}});
    json paragraph = {{"context", "the cat sat on the mat of the dog in Paris"}, {"qas", qas}};
    json article = {{"title", "t"}, {"paragraphs", json::array({paragraph})}};
    json document = {{"version", "1.1"}, {"data", json::array({article})}};
    std::ofstream(path) << document.dump();
    return path;
}

// `scalescope-cli evaluate --json` on these devices (none: the in-process CPU).
json evaluateOn(const std::string& checkpoint, const std::string& squad, const QStringList& devices)
{
    QStringList args = {"evaluate", QString::fromStdString(checkpoint), "--squad", QString::fromStdString(squad),
                        "--max-seq-len", "32", "--doc-stride", "8", "--batch-size", "4", "--json"};
    args << devices;
    QProcess cli;
    cli.start(QStringLiteral(SCALESCOPE_CLI), args);
    cli.waitForFinished(120000);
    if (cli.exitCode() != 0)
        qWarning("%s", cli.readAllStandardError().constData());
    return json::parse(cli.readAllStandardOutput().toStdString());
}

json withoutTimings(json value)
{
    if (value.is_object())
        for (const char* timing : {"seconds", "questions_per_second", "elapsed_ms"})
            value.erase(timing);
    return value;
}

// Equality up to float32 summation order: a GEMM over fewer rows may add in another order, so a
// row's values depend on its batch by a few ulps on any one device too.
void compareTensorsClose(const std::vector<NamedTensor>& ours, const std::vector<NamedTensor>& expected)
{
    QCOMPARE(ours.size(), expected.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
        QCOMPARE(ours[i].name, expected[i].name);
        QCOMPARE(ours[i].tensor.shape, expected[i].tensor.shape);
        float largest = 0, worst = 0;
        for (std::size_t k = 0; k < expected[i].tensor.values.size(); ++k) {
            largest = std::max(largest, std::fabs(expected[i].tensor.values[k]));
            worst = std::max(worst, std::fabs(ours[i].tensor.values[k] - expected[i].tensor.values[k]));
        }
        QVERIFY2(worst <= 1e-5f * largest + 1e-6f,
                 qPrintable(QString::fromStdString(ours[i].name + " differs by " + std::to_string(worst))));
    }
}

// Runs a shell command and returns its stdout lines (stderr in *log).
std::vector<std::string> runShell(const std::string& command, std::string* log)
{
    QProcess process;
    process.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), QString::fromStdString(command)});
    process.waitForFinished(30000);
    if (log)
        *log = process.readAllStandardError().toStdString();
    std::vector<std::string> lines;
    for (const QByteArray& line : process.readAllStandardOutput().split('\n'))
        if (!line.isEmpty())
            lines.push_back(line.toStdString());
    return lines;
}

std::vector<std::string> runServer(const std::vector<std::string>& lines, std::string* log = nullptr)
{
    std::string input;
    for (const std::string& line : lines)
        input += line + "\n";
    std::istringstream in(input);
    std::ostringstream out, err;
    serveRunner(in, out, err);
    if (log)
        *log = err.str();
    std::vector<std::string> responses;
    std::istringstream answers(out.str());
    std::string line;
    while (std::getline(answers, line))
        responses.push_back(line);
    return responses;
}

bool processExists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

} // namespace

class TestRunner : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        // The child runner uses SCALESCOPE_THREADS; the same intra-op thread count on both sides
        // keeps the BLAS partitioning, and so the bits, the same.
        setComputeThreads(2);
        qputenv("SCALESCOPE_THREADS", "2");
        QVERIFY(QFileInfo::exists(SCALESCOPE_CLI));

        Fixtures& f = fixtures();
        f.root = makeTempDir("runner-fixtures");
        TinyModelSpec qa;
        f.floatQa = f.root + "/float-qa";
        writeTinyFloatCheckpoint(f.floatQa, qa);
        f.fp8Qa = f.root + "/fp8-qa";
        writeTinyFp8Checkpoint(f.floatQa, f.fp8Qa, {"channel", "token", "F32"});
        f.fp8QaStatic = f.root + "/fp8-qa-static";
        writeTinyFp8Checkpoint(f.floatQa, f.fp8QaStatic, {"tensor", "tensor", "BF16"});
        TinyModelSpec mlm;
        mlm.architecture = "RobertaForMaskedLM";
        mlm.seed = 77;
        f.floatMlm = f.root + "/float-mlm";
        writeTinyFloatCheckpoint(f.floatMlm, mlm);
        f.fp8Mlm = f.root + "/fp8-mlm";
        writeTinyFp8Checkpoint(f.floatMlm, f.fp8Mlm, {"channel", "token", "F32"});

        f.flakyScript = f.root + "/flaky-runner.sh";
        std::ofstream(f.flakyScript) << kFlakyRunner;
    }

    void cleanupTestCase() { QDir(QString::fromStdString(fixtures().root)).removeRecursively(); }

    // ---- local descriptions of the checkpoint ---------------------------------------------------

    void linearsAndPointsMatchTheEngine_data()
    {
        QTest::addColumn<QString>("checkpoint");
        for (const char* name : {"float-qa", "fp8-qa", "fp8-qa-static", "fp8-mlm", "float-mlm"})
            QTest::newRow(name) << name;
    }
    void linearsAndPointsMatchTheEngine()
    {
        QFETCH(QString, checkpoint);
        const std::string dir = checkpointNamed(checkpoint);
        auto opened = Checkpoint::open(dir);
        auto model = EncoderModel::load(dir);
        const std::vector<LinearInfo> ours = opened->plan().linears();
        const std::vector<LinearInfo>& engine = model->linears();
        QCOMPARE(ours.size(), engine.size());
        for (std::size_t i = 0; i < ours.size(); ++i) {
            QCOMPARE(ours[i].module, engine[i].module);
            QCOMPARE(ours[i].inFeatures, engine[i].inFeatures);
            QCOMPARE(ours[i].outFeatures, engine[i].outFeatures);
            QCOMPARE(ours[i].quantized, engine[i].quantized);
            QCOMPARE(ours[i].weightStrategy, engine[i].weightStrategy);
            QCOMPARE(int(ours[i].activations), int(engine[i].activations));
            QCOMPARE(ours[i].inputScale, engine[i].inputScale);
            QCOMPARE(ours[i].group, engine[i].group);
        }
        QCOMPARE(opened->layout().capturePoints(), model->capturePoints());
        // Hand-derived: 2 layers x 6 Linears, then the head (1 for QA, 2 for MaskedLM).
        const bool mlm = checkpoint.endsWith("mlm");
        QCOMPARE(ours.size(), std::size_t(12 + (mlm ? 2 : 1)));
        QCOMPARE(opened->layout().capturePoints().size(), std::size_t(1 + 2 * (12 + 1) + 2 * (mlm ? 2 : 1)));
        if (checkpoint == "fp8-qa-static") {
            // The static scale is the tensor's value, read from the file here.
            auto store = TensorStore::openDirectory(dir);
            float expected = 0;
            store->require("roberta.encoder.layer.1.intermediate.dense.input_scale").toFloat(&expected);
            QCOMPARE(ours[10].module, std::string("roberta.encoder.layer.1.intermediate.dense"));
            QCOMPARE(ours[10].inputScale, expected);
            QVERIFY(ours[10].inputScale > 0);
        }
    }

    // ---- bit identity with the in-process engine ------------------------------------------------

    void forwardIsBitIdentical_data()
    {
        QTest::addColumn<QString>("checkpoint");
        QTest::addColumn<QString>("mode");
        QTest::addColumn<QString>("capture");
        for (const char* checkpoint : {"fp8-qa", "fp8-qa-static", "float-qa"})
            for (const char* mode : {"fp8", "dequant"})
                QTest::addRow("%s-%s-all", checkpoint, mode) << checkpoint << mode << "all";
        QTest::newRow("fp8-qa-fp8-one-module") << "fp8-qa" << "fp8" << "roberta.encoder.layer.1.attention.self.key";
        QTest::newRow("fp8-qa-fp8-points") << "fp8-qa" << "fp8" << "roberta.embeddings.output,qa_outputs.input";
        QTest::newRow("fp8-qa-fp8-unknown-name") << "fp8-qa" << "fp8" << "no.such.module";
        QTest::newRow("fp8-qa-fp8-none") << "fp8-qa" << "fp8" << "";
        QTest::newRow("fp8-mlm-fp8-all") << "fp8-mlm" << "fp8" << "all";
        QTest::newRow("fp8-mlm-dequant-all") << "fp8-mlm" << "dequant" << "all";
    }
    void forwardIsBitIdentical()
    {
        QFETCH(QString, checkpoint);
        QFETCH(QString, mode);
        QFETCH(QString, capture);
        const std::string dir = checkpointNamed(checkpoint);
        ForwardOptions options;
        options.mode = mode == "fp8" ? RunMode::Fp8 : RunMode::Dequant;
        if (capture == "all")
            options.capture.all = true;
        else if (!capture.isEmpty())
            for (const QString& name : capture.split(','))
                options.capture.names.push_back(name.toStdString());

        auto engine = EncoderModel::load(dir);
        const ForwardResult expected = engine->forward(raggedBatch(), options);
        auto runner = RunnerBackend::start(cliRunnerCommand(), dir);
        const ForwardResult ours = runner->forward(raggedBatch(), options);
        compareTensorsBitwise(ours.outputs, expected.outputs);
        compareTensorsBitwise(ours.captures, expected.captures);
        QVERIFY(ours.elapsedMs > 0);
        QVERIFY(runner->lastRoundTripMs() >= ours.elapsedMs);
        // Hand-derived expectations of the selection: "all" is every point, a module is its two
        // points, an unknown name selects nothing (as in the engine).
        if (capture == "all")
            QCOMPARE(ours.captures.size(), runner->capturePoints().size());
        else if (capture.startsWith("roberta.encoder.layer.1.attention.self.key"))
            QCOMPARE(ours.captures.size(), std::size_t(2));
        else if (capture.contains(','))
            QCOMPARE(ours.captures.size(), std::size_t(2));
        else
            QCOMPARE(ours.captures.size(), std::size_t(0));
        // The exchange folder holds nothing once the result is read.
        QCOMPARE(QDir(QString::fromStdString(runner->exchangeDirectory())).entryList(QDir::Files).size(), 0);
        QCOMPARE(runner->runnerDevice(), std::string("cpu"));
        QVERIFY(runner->deviceName().find("ScaleScope CPU runner") != std::string::npos);
    }

    void modeSwitchesReloadWithoutRestart()
    {
        const std::string dir = fixtures().fp8Qa;
        auto engine = EncoderModel::load(dir);
        auto runner = RunnerBackend::start(cliRunnerCommand(), dir);
        for (RunMode mode : {RunMode::Fp8, RunMode::Dequant, RunMode::Fp8, RunMode::Dequant}) {
            ForwardOptions options;
            options.mode = mode;
            compareTensorsBitwise(runner->forward(raggedBatch(), options).outputs,
                                  engine->forward(raggedBatch(), options).outputs);
        }
        // fp8 and dequant differ on this checkpoint, so the runner did switch.
        ForwardOptions fp8, dequant;
        dequant.mode = RunMode::Dequant;
        const auto a = runner->forward(raggedBatch(), fp8).outputs[0].tensor.values;
        const auto b = runner->forward(raggedBatch(), dequant).outputs[0].tensor.values;
        QVERIFY(a != b);
        QCOMPARE(runner->startCount(), 1);
    }

    void fillMaskThroughRunner()
    {
        const std::string dir = fixtures().fp8Mlm;
        auto engine = EncoderModel::load(dir);
        auto runner = RunnerBackend::start(cliRunnerCommand(), dir);
        // Logits only at the mask positions travel as logit_positions.
        const RunSettings fp8{RunMode::Fp8};
        const FillMaskResult expected = runFillMask(*engine, "the cat <mask> on the <mask>", fp8, 5);
        const FillMaskResult ours = runFillMask(*runner, "the cat <mask> on the <mask>", fp8, 5);
        QCOMPARE(ours.maskPositions, expected.maskPositions);
        QCOMPARE(ours.predictions.size(), std::size_t(2));
        for (std::size_t m = 0; m < ours.predictions.size(); ++m) {
            QCOMPARE(ours.distributions[m], expected.distributions[m]);
            for (std::size_t k = 0; k < ours.predictions[m].size(); ++k)
                QCOMPARE(ours.predictions[m][k].tokenId, expected.predictions[m][k].tokenId);
        }
    }

    void questionAnsweringThroughRunner_data()
    {
        QTest::addColumn<QString>("checkpoint");
        QTest::addColumn<QString>("mode");
        QTest::newRow("fp8") << "fp8-qa" << "fp8";
        QTest::newRow("dequant") << "fp8-qa" << "dequant";
        QTest::newRow("static-fp8") << "fp8-qa-static" << "fp8";
    }
    void questionAnsweringThroughRunner()
    {
        QFETCH(QString, checkpoint);
        QFETCH(QString, mode);
        const std::string dir = checkpointNamed(checkpoint);
        const RunMode runMode = mode == "fp8" ? RunMode::Fp8 : RunMode::Dequant;
        QaOptions options;
        options.topK = 3;
        options.maxSeqLen = 24; // several windows, so several batches
        options.docStride = 8;
        const std::string question = "where is the cat?";
        const std::string context = "the cat sat on the mat and the dog sat on a mat of the capital of France";
        auto engine = EncoderModel::load(dir);
        auto runner = RunnerBackend::start(cliRunnerCommand(), dir);
        const QaResult expected = answerQuestion(*engine, question, context, RunSettings{runMode}, options);
        const QaResult ours = answerQuestion(*runner, question, context, RunSettings{runMode}, options);
        QVERIFY(expected.windows.size() > 1);
        QCOMPARE(ours.windows.size(), expected.windows.size());
        QCOMPARE(ours.startLogits, expected.startLogits);
        QCOMPARE(ours.endLogits, expected.endLogits);
        QCOMPARE(ours.answers.size(), expected.answers.size());
        for (std::size_t i = 0; i < ours.answers.size(); ++i) {
            QCOMPARE(ours.answers[i].text, expected.answers[i].text);
            QCOMPARE(ours.answers[i].score, expected.answers[i].score);
            QCOMPARE(ours.answers[i].start, expected.answers[i].start);
            QCOMPARE(ours.answers[i].end, expected.answers[i].end);
        }
    }

    void comparisonThroughRunner()
    {
        // compareRuns with the runner as the run and dequant on the same runner standing in:
        // per-point metrics equal the in-process ones; activation statistics are in-process only.
        const std::string dir = fixtures().fp8Qa;
        ComparisonInput input;
        input.inputIds = raggedBatch().inputIds;
        auto engine = EncoderModel::load(dir);
        auto runner = RunnerBackend::start(cliRunnerCommand(), dir);
        const ComparisonResult expected = compareRuns(*engine, nullptr, input);
        const ComparisonResult ours = compareRuns(*runner, nullptr, input);
        QCOMPARE(ours.points.size(), expected.points.size());
        for (std::size_t i = 0; i < ours.points.size(); ++i) {
            QCOMPARE(ours.points[i].name, expected.points[i].name);
            QCOMPARE(ours.points[i].metrics.mse, expected.points[i].metrics.mse);
        }
        QVERIFY(!expected.activations.empty());
        QVERIFY(ours.activations.empty());
    }

    // ---- several runners at once -------------------------------------------------------------------

    void poolSplitsRowsAndMatchesOneDevice()
    {
        const std::string dir = fixtures().fp8Qa;
        auto engine = EncoderModel::load(dir);
        EncoderInputs batch = raggedBatch();
        batch.inputIds.push_back({0, 60, 61, 62, 2});
        batch.attentionMask.push_back({1, 1, 1, 1, 1});
        ForwardOptions options;
        options.capture.all = true;
        const ForwardResult expected = engine->forward(batch, options);

        std::vector<std::unique_ptr<InferenceBackend>> members;
        members.push_back(RunnerBackend::start(cliRunnerCommand(), dir));
        members.push_back(RunnerBackend::start(cliRunnerCommand(), dir));
        BackendPool pool(std::move(members));
        const ForwardResult pooled = pool.forward(batch, options);
        compareTensorsClose(pooled.outputs, expected.outputs);
        compareTensorsClose(pooled.captures, expected.captures);
        QCOMPARE(pool.liveMemberCount(), 2);
        QVERIFY(pool.retirements().empty());
    }

    void poolRunsAFailedMembersRowsElsewhere()
    {
        const std::string dir = fixtures().fp8Qa;
        auto engine = EncoderModel::load(dir);
        const ForwardResult expected = engine->forward(raggedBatch(), ForwardOptions());
        std::vector<std::unique_ptr<InferenceBackend>> members;
        members.push_back(RunnerBackend::start(flakyCommand("exit"), dir)); // dies on its first forward
        members.push_back(RunnerBackend::start(cliRunnerCommand(), dir));
        BackendPool pool(std::move(members));
        const ForwardResult pooled = pool.forward(raggedBatch(), ForwardOptions());
        compareTensorsClose(pooled.outputs, expected.outputs);
        QCOMPARE(pool.liveMemberCount(), 1);
        QCOMPARE(pool.retirements().size(), std::size_t(1));
        QVERIFY2(pool.retirements()[0].find("boom: simulated crash on forward") != std::string::npos,
                 pool.retirements()[0].c_str());
        QVERIFY(pool.deviceName().find("(failed)") != std::string::npos);
        // The next forward goes to the member that is left.
        compareTensorsClose(pool.forward(raggedBatch(), ForwardOptions()).outputs, expected.outputs);
    }

    void evaluateOverTwoRunnersEqualsOneDevice()
    {
        const std::string squad = writePoolSquad();
        const json one = evaluateOn(fixtures().fp8Qa, squad, {});
        const QString runner = QString::fromStdString("runner:" + cliRunnerCommand());
        const json two = evaluateOn(fixtures().fp8Qa, squad, {"--device", runner, "--device", runner});
        QCOMPARE(two["device"].get<std::string>().rfind("pool of 2:", 0), std::size_t(0));
        for (const char* key : {"run", "reference", "agreement", "disagreements", "questions"})
            QVERIFY2(withoutTimings(one[key]) == withoutTimings(two[key]), key);
    }

    // ---- misbehaving runners --------------------------------------------------------------------

    void misbehaviourGivesErrorThenRestarts_data()
    {
        QTest::addColumn<QString>("behaviour");
        QTest::addColumn<QStringList>("expectedPhrases");
        QTest::newRow("exits") << "exit" << QStringList{"exited (exit code 3) during the forward request", "boom: simulated crash on forward"};
        QTest::newRow("hangs") << "hang" << QStringList{"did not answer the forward request within 2 s", "thinking forever"};
        QTest::newRow("garbage") << "garbage" << QStringList{"not JSON", "this is not json"};
        QTest::newRow("wrong id") << "wrongid" << QStringList{"with the id of another request: 999"};
        QTest::newRow("refuses") << "refuse" << QStringList{"refused the forward request: device fault on card 0"};
        QTest::newRow("no output file") << "nofile" << QStringList{"wrote an output that does not fit the request"};
    }
    void misbehaviourGivesErrorThenRestarts()
    {
        QFETCH(QString, behaviour);
        QFETCH(QStringList, expectedPhrases);
        const std::string dir = fixtures().fp8Qa;
        RunnerOptions options;
        options.forwardTimeout = std::chrono::milliseconds(2000);
        std::string marker;
        auto runner = RunnerBackend::start(flakyCommand(behaviour.toStdString(), &marker), dir, options);
        QCOMPARE(runner->deviceName(), std::string("flaky"));

        ForwardOptions forward;
        forward.capture.all = true;
        const auto started = std::chrono::steady_clock::now();
        QString message;
        try {
            runner->forward(raggedBatch(), forward);
            QFAIL("The misbehaving runner's forward did not throw.");
        } catch (const Cancelled&) {
            QFAIL("A misbehaving runner is not a cancel.");
        } catch (const Error& e) {
            message = QString::fromUtf8(e.what());
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        for (const QString& phrase : expectedPhrases)
            QVERIFY2(message.contains(phrase), qPrintable("\"" + message + "\" lacks \"" + phrase + "\""));
        QVERIFY2(message.startsWith("The runner \"sh "), qPrintable(message));
        QVERIFY2(message.endsWith('.') && !message.endsWith(".."), qPrintable(message));
        QVERIFY2(seconds < 10, qPrintable(QString("the failure took %1 s").arg(seconds)));
        QVERIFY(!runner->isRunning());

        // The next request restarts the runner (now the real one) and works, bit-identically.
        auto engine = EncoderModel::load(dir);
        const ForwardResult ours = runner->forward(raggedBatch(), forward);
        const ForwardResult expected = engine->forward(raggedBatch(), forward);
        compareTensorsBitwise(ours.outputs, expected.outputs);
        compareTensorsBitwise(ours.captures, expected.captures);
        QCOMPARE(runner->startCount(), 2);
        QVERIFY(runner->isRunning());
        QVERIFY(runner->deviceName().find("ScaleScope CPU runner") != std::string::npos);
        QDir(QString::fromStdString(marker)).removeRecursively();
    }

    void cancelStopsAWaitingRequest()
    {
        RunnerOptions options;
        options.forwardTimeout = std::chrono::milliseconds(60000);
        auto runner = RunnerBackend::start(flakyCommand("hang"), fixtures().fp8Qa, options);
        std::atomic<bool> cancel{false};
        Progress progress;
        progress.cancel = &cancel;
        std::thread canceller([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            cancel = true;
        });
        const auto started = std::chrono::steady_clock::now();
        bool cancelled = false;
        try {
            runner->forward(raggedBatch(), {}, progress);
        } catch (const Cancelled&) {
            cancelled = true;
        } catch (const Error& e) {
            QWARN(e.what());
        }
        canceller.join();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QVERIFY(cancelled);
        QVERIFY2(seconds < 5, qPrintable(QString("the cancel took %1 s").arg(seconds)));
        cancel = false;
        QCOMPARE(runner->forward(raggedBatch(), {}, progress).outputs.size(), std::size_t(2));
        QCOMPARE(runner->startCount(), 2);
    }

    void floodedStderrDoesNotBlockTheRunner()
    {
        // The script writes over 1 MB to stderr before serving; the pipe holds 64 kB, so a client that
        // did not drain stderr while waiting would see the hello time out.
        RunnerOptions options;
        options.helloTimeout = std::chrono::milliseconds(30000);
        std::vector<std::string> seen;
        options.onLogLine = [&](const std::string& line) { seen.push_back(line); };
        auto runner = RunnerBackend::start(flakyCommand("flood"), fixtures().fp8Qa, options);
        QVERIFY(runner->isRunning());
        QVERIFY(seen.size() >= 2000);
        QCOMPARE(seen.front().substr(0, 11), std::string("log line 0:"));
        QCOMPARE(runner->recentLogLines().size(), options.stderrLinesKept);
    }

    void startFailures_data()
    {
        QTest::addColumn<QString>("command");
        QTest::addColumn<QStringList>("expectedPhrases");
        QTest::newRow("command not found") << "/nonexistent/runner-program --serve"
                                           << QStringList{"exited (exit code 127) during the hello request", "not found"};
        QTest::newRow("protocol 3") << QString::fromStdString(flakyCommand("protocol3"))
                                    << QStringList{"speaks protocol version 3, but this ScaleScope speaks versions 1 and 2"};
        QTest::newRow("exits at once") << "echo 'no AIU cards found' >&2; exit 4"
                                       << QStringList{"exited (exit code 4) during the hello request", "no AIU cards found"};
        QTest::newRow("silent") << "sleep 30" << QStringList{"did not answer the hello request within 1 s"};
        QTest::newRow("empty") << "  " << QStringList{"The runner command is empty."};
    }
    void startFailures()
    {
        QFETCH(QString, command);
        QFETCH(QStringList, expectedPhrases);
        RunnerOptions options;
        options.helloTimeout = std::chrono::milliseconds(1000);
        QString message;
        try {
            RunnerBackend::start(command.toStdString(), fixtures().fp8Qa, options);
            QFAIL("start() did not throw.");
        } catch (const Error& e) {
            message = QString::fromUtf8(e.what());
        }
        for (const QString& phrase : expectedPhrases)
            QVERIFY2(message.contains(phrase), qPrintable("\"" + message + "\" lacks \"" + phrase + "\""));
    }

    void architectureMismatchIsRefused()
    {
        // A runner that loads something else than the folder seen here (a wrong mount, say).
        const std::string script = fixtures().root + "/wrong-arch.sh";
        std::ofstream(script) << "while IFS= read -r line; do\n"
                                 "  id=$(printf '%s' \"$line\" | sed -n 's/.*\"id\":\\([0-9]*\\).*/\\1/p')\n"
                                 "  case \"$line\" in\n"
                                 "    *'\"op\":\"hello\"'*) printf '{\"id\":%s,\"ok\":true,\"protocol\":1}\\n' \"$id\" ;;\n"
                                 "    *) printf '{\"id\":%s,\"ok\":true,\"architecture\":\"RobertaForMaskedLM\"}\\n' \"$id\" ;;\n"
                                 "  esac\n"
                                 "done\n";
        try {
            RunnerBackend::start("sh " + shellQuote(script), fixtures().fp8Qa);
            QFAIL("start() did not throw.");
        } catch (const Error& e) {
            const QString message = QString::fromUtf8(e.what());
            QVERIFY2(message.contains("as RobertaForMaskedLM, but it is RobertaForQuestionAnswering here"), qPrintable(message));
        }
    }

    void badInputsAreRefusedWithoutRestart()
    {
        auto runner = RunnerBackend::start(cliRunnerCommand(), fixtures().fp8Qa);
        const int64_t vocab = runner->config().vocabSize;
        const std::vector<std::pair<EncoderInputs, QString>> cases = {
            {{{{0, vocab, 2}}, {}, {}, {}}, "outside the vocabulary"},
            {{{}, {}, {}, {}}, "no input sequence"},
            {{{{0, 5, 2}}, {{1, 1}}, {}, {}}, "Attention mask row 0 has 2 entries"},
            {{{std::vector<int64_t>(200, 5)}, {}, {}, {}}, "this model takes at most"},
        };
        for (const auto& [inputs, phrase] : cases) {
            try {
                runner->forward(inputs, {});
                QFAIL("forward() did not throw.");
            } catch (const Error& e) {
                QVERIFY2(QString::fromUtf8(e.what()).contains(phrase), e.what());
            }
        }
        QVERIFY(runner->isRunning());
        QCOMPARE(runner->startCount(), 1);
    }

    void destructionStopsTheRunnerAndRemovesTheFolder()
    {
        const std::string pidFile = fixtures().root + "/runner.pid";
        const std::string command = "echo $$ > " + shellQuote(pidFile) + "; exec " + cliRunnerCommand();
        std::string exchange;
        {
            auto runner = RunnerBackend::start(command, fixtures().fp8Qa);
            runner->forward(raggedBatch(), {});
            exchange = runner->exchangeDirectory();
            QVERIFY(QFileInfo(QString::fromStdString(exchange)).isDir());
        }
        std::ifstream in(pidFile);
        pid_t pid = 0;
        in >> pid;
        QVERIFY(pid > 0);
        QVERIFY(!processExists(pid));
        QVERIFY(!QFileInfo::exists(QString::fromStdString(exchange)));
    }

    void openBackendSelectsTheDevice()
    {
        auto cpu = openBackend("cpu", fixtures().fp8Qa);
        QCOMPARE(cpu->deviceName(), std::string("CPU (in-process)"));
        auto runner = openBackend("runner:" + cliRunnerCommand(), fixtures().fp8Qa);
        QVERIFY(dynamic_cast<RunnerBackend*>(runner.get()) != nullptr);
        compareTensorsBitwise(runner->forward(raggedBatch(), {}).outputs, cpu->forward(raggedBatch(), {}).outputs);
        for (const char* device : {"gpu", "runner:", "runner:   ", "CPU"}) {
            try {
                openBackend(device, fixtures().fp8Qa);
                QFAIL(qPrintable(QString("device \"%1\" was accepted").arg(device)));
            } catch (const Error& e) {
                const std::string message = e.what();
                QVERIFY2(message.find("runner:COMMAND") != std::string::npos ||
                             message.find("needs a command") != std::string::npos,
                         e.what());
            }
        }
    }

    // ---- protocol 2: nothing shared ----------------------------------------------------------

    // A runner in its own mount namespace with an empty tmpfs over the fixtures' folder: it cannot
    // see the checkpoint or anything the client writes there, so the checkpoint must travel by
    // upload and the tensors in-band. Its cache lives inside that private tmpfs.
    void protocol2WorksWithoutASharedFileSystem()
    {
        if (::geteuid() != 0 || QStandardPaths::findExecutable("unshare").isEmpty())
            QSKIP("needs root and unshare for a private mount namespace");
        const std::string hidden = fixtures().root;
        if (std::string(SCALESCOPE_CLI).rfind(hidden, 0) == 0)
            QSKIP("the CLI lives inside the folder that would be hidden");
        const std::string command = "unshare -m sh -c " +
                                    shellQuote("mount -t tmpfs none " + shellQuote(hidden) +
                                               " && SCALESCOPE_RUNNER_CACHE=" + shellQuote(hidden + "/cache") +
                                               " exec " + shellQuote(SCALESCOPE_CLI) + " runner");
        // The runner really does not see the checkpoint: loading it by path fails in there.
        std::string log;
        const std::vector<std::string> probe = runShell(
            "unshare -m sh -c " + shellQuote("mount -t tmpfs none " + shellQuote(hidden) + " && ls " +
                                             shellQuote(fixtures().fp8Qa) + " 2>&1; echo done"),
            &log);
        QVERIFY2(!probe.empty() && probe.back() == "done", log.c_str());
        QVERIFY2(probe.size() >= 2 && probe.front().find("No such file") != std::string::npos, log.c_str());

        auto runner = RunnerBackend::start(command, fixtures().fp8Qa);
        QCOMPARE(runner->protocolVersion(), 2);
        auto local = EncoderModel::load(fixtures().fp8Qa);
        ForwardOptions options;
        options.capture.all = true;
        const ForwardResult remote = runner->forward(raggedBatch(), options);
        const ForwardResult here = local->forward(raggedBatch(), options);
        compareTensorsBitwise(remote.outputs, here.outputs);
        compareTensorsBitwise(remote.captures, here.captures);
    }

    // The same checkpoint in a second session is not sent again: the runner finds it by hash.
    void protocol2UploadsACheckpointOnce()
    {
        const std::string cache = makeTempDir("runner-cache");
        const std::string command = "SCALESCOPE_RUNNER_CACHE=" + shellQuote(cache) + " " + cliRunnerCommand();
        auto received = [](const RunnerBackend& runner) {
            int count = 0;
            for (const std::string& line : runner.recentLogLines())
                count += line.find("received checkpoint") != std::string::npos;
            return count;
        };
        {
            auto first = RunnerBackend::start(command, fixtures().fp8Qa);
            first->forward(raggedBatch(), {});
            QCOMPARE(received(*first), 1);
        }
        auto second = RunnerBackend::start(command, fixtures().fp8Qa);
        second->forward(raggedBatch(), {});
        QCOMPARE(received(*second), 0);
        QCOMPARE(QDir(QString::fromStdString(cache)).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 1);
    }

    // Precision overrides travel with forward and give what they give in-process, bit for bit.
    void overridesThroughTheRunnerEqualInProcess()
    {
        auto runner = RunnerBackend::start(cliRunnerCommand(), fixtures().fp8Qa);
        auto local = EncoderModel::load(fixtures().fp8Qa);
        ForwardOptions options;
        options.overrides.modules[local->linears().front().module] = Precision::Float;
        compareTensorsBitwise(runner->forward(raggedBatch(), options).outputs,
                              local->forward(raggedBatch(), options).outputs);
        ForwardOptions fp8Only;
        fp8Only.overrides.othersFloat = true;
        fp8Only.overrides.modules[local->linears().front().module] = Precision::Fp8;
        const auto remote = runner->forward(raggedBatch(), fp8Only).outputs;
        compareTensorsBitwise(remote, local->forward(raggedBatch(), fp8Only).outputs);
        // ... and they change the result: the override is not ignored on the way.
        QVERIFY(remote.front().tensor.values != local->forward(raggedBatch(), {}).outputs.front().tensor.values);
    }

    // A request nested 100,000 levels deep gets one sentence, and the runner reads nothing more
    // (PROTOCOL.md: a line it cannot read might have announced a payload).
    void serverRefusesDeepNesting()
    {
        const std::string deep = "{\"id\":" + std::string(100000, '[') + std::string(100000, ']') + ",\"op\":\"hello\"}";
        const std::vector<std::string> responses = runServer({deep, R"({"id":2,"op":"hello"})"});
        QCOMPARE(responses.size(), std::size_t(1));
        QVERIFY2(json::parse(responses[0])["error"].get<std::string>().find("64 levels") != std::string::npos,
                 responses[0].c_str());
        QCOMPARE(json::parse(responses[0])["id"], json(nullptr));
    }

    // A runner that answers with a deeply nested id is stopped with a sentence, not a crash.
    void clientRefusesDeepNesting()
    {
        const std::string script = "read -r line; printf '{\"id\":" + std::string(20000, '[') +
                                   std::string(20000, ']') + ",\"ok\":true}\\n'; sleep 5";
        try {
            RunnerBackend::start(script, fixtures().fp8Qa);
            QFAIL("start() accepted a deeply nested answer");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("nested more than 64 levels") != std::string::npos, e.what());
        }
    }

    // SIGTERM to the CLI while it waits on a runner stops the runner too (it lives in its own
    // process group, so nothing else would) and leaves no exchange folder for the next run.
    void signalStopsTheRunner()
    {
        const std::string folder = makeTempDir("runner-signal");
        const std::string pidFile = folder + "/runner.pid";
        const std::string runner = "echo $$ > " + shellQuote(pidFile) + "; exec sleep 300";
        QProcess cli;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert("SCALESCOPE_RUNNER_EXCHANGE_DIR", QString::fromStdString(folder));
        cli.setProcessEnvironment(environment);
        cli.start(QStringLiteral(SCALESCOPE_CLI), {"forward", QString::fromStdString(fixtures().fp8Qa), "--input-ids",
                                                   "0,5,2", "--output", QString::fromStdString(folder + "/out.safetensors"),
                                                   "--device", QString::fromStdString("runner:" + runner)});
        QVERIFY(cli.waitForStarted());
        QTRY_VERIFY2_WITH_TIMEOUT(QFileInfo(QString::fromStdString(pidFile)).size() > 0,
                                  cli.readAllStandardError().constData(), 10000);
        std::ifstream in(pidFile);
        pid_t pid = 0;
        in >> pid;
        QVERIFY(pid > 0 && ::kill(pid, 0) == 0);
        ::kill(static_cast<pid_t>(cli.processId()), SIGTERM);
        QVERIFY(cli.waitForFinished(10000));
        QCOMPARE(cli.exitStatus(), QProcess::CrashExit); // died of the signal, as a killed program does
        QTRY_VERIFY_WITH_TIMEOUT(::kill(pid, 0) != 0, 15000); // generous: a loaded machine is slow to reap
        // The client removed its exchange folder before it died (issue 30 item 3).
        const QStringList left =
            QDir(QString::fromStdString(folder)).entryList({"scalescope-runner-*"}, QDir::Dirs | QDir::Hidden);
        QVERIFY2(left.isEmpty(), qPrintable(left.join(',')));
    }

    // What a client killed without a chance to clean up (kill -9) left is removed by the next
    // client starting in the same parent folder, but only when it is this host's and its owner is
    // gone: the parent may be shared with other hosts, whose pids mean nothing here.
    void staleExchangeFoldersOfThisHostAreRemoved()
    {
        const std::string folder = makeTempDir("runner-stale");
        const pid_t child = ::fork();
        if (child == 0)
            ::_exit(0);
        ::waitpid(child, nullptr, 0);
        const std::string dead = std::to_string(child);
        const std::string elsewhere = thisHostTag() == "0123456789abcdef" ? "fedcba9876543210" : "0123456789abcdef";
        const std::string killedHere = folder + "/scalescope-runner-" + thisHostTag() + "-" + dead + "-a1b2c3";
        const std::string otherHost = folder + "/scalescope-runner-" + elsewhere + "-" + dead + "-d4e5f6";
        const std::string oldFormat = folder + "/scalescope-runner-" + dead + "-g7h8i9";
        for (const std::string& dir : {killedHere, otherHost, oldFormat}) {
            QVERIFY(QDir().mkpath(QString::fromStdString(dir)));
            std::ofstream(dir + "/forward-1.safetensors") << "bytes";
        }
        // Idle for two days: a session elsewhere may well be; its folder is not taken by age.
        const timespec twoDaysAgo{::time(nullptr) - 2 * 24 * 3600, 0};
        const timespec times[2] = {twoDaysAgo, twoDaysAgo};
        for (const std::string& path : {otherHost + "/forward-1.safetensors", otherHost})
            QCOMPARE(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
        auto next = RunnerBackend::start(cliRunnerCommand(), fixtures().fp8Qa, [&] {
            RunnerOptions options;
            options.exchangeParent = folder;
            return options;
        }());
        QVERIFY(!QFileInfo::exists(QString::fromStdString(killedHere)));
        QVERIFY(QFileInfo::exists(QString::fromStdString(otherHost + "/forward-1.safetensors")));
        QVERIFY(QFileInfo::exists(QString::fromStdString(oldFormat + "/forward-1.safetensors")));
        const QStringList left = QDir(QString::fromStdString(folder)).entryList({"scalescope-runner-*"}, QDir::Dirs);
        QCOMPARE(left.size(), 3); // the new client's own, and the two that are not this host's
    }

    // ---- the Python AIU runner's protocol side ------------------------------------------------

    void pythonRunnerSpeaksTheSameProtocol()
    {
        // aiu_runner.py with the stand-in model of its own tests, whose outputs are known by hand:
        // start_logits = 0.5 * id, end_logits = -id, one-hot MaskedLM logits at the input id, and
        // capture point k (execution order) holding k + t / 4 at token t.
        const QString script = QDir(QStringLiteral(QT_TESTCASE_SOURCEDIR)).absoluteFilePath(
            QStringLiteral("../packaging/runners/aiu_runner.py"));
        if (!QFileInfo::exists(script))
            QSKIP("packaging/runners/aiu_runner.py is not next to the tests' sources.");
        if (!QFileInfo::exists(QStringLiteral("/usr/bin/python3")))
            QSKIP("/usr/bin/python3 is not installed.");
        // -B: no __pycache__ in the source tree.
        const std::string command = "/usr/bin/python3 -B " + shellQuote(QFileInfo(script).canonicalFilePath().toStdString()) +
                                    " --device-type cpu --adapter test_aiu_runner:FakeAdapter";

        auto qa = RunnerBackend::start(command, fixtures().fp8Qa);
        QCOMPARE(qa->runnerDevice(), std::string("fake"));
        QCOMPARE(qa->deviceName(), std::string("fake model for tests"));
        ForwardOptions options;
        options.capture.names = {"roberta.embeddings.output", "qa_outputs"};
        const ForwardResult result = qa->forward(raggedBatch(), options);
        QCOMPARE(result.outputs.size(), std::size_t(2));
        QCOMPARE(result.outputs[0].name, std::string("start_logits"));
        QCOMPARE(result.outputs[0].tensor.shape, (std::vector<int64_t>{2, 7}));
        // The short row arrives padded with pad_token_id 1.
        const std::vector<float> start = {0, 20, 20.5f, 21, 21.5f, 22, 1, 0, 25, 25.5f, 1, 0.5f, 0.5f, 0.5f};
        QCOMPARE(result.outputs[0].tensor.values, start);
        QCOMPARE(result.outputs[1].tensor.values[1], -40.0f);
        QCOMPARE(result.captures.size(), std::size_t(3));
        const std::vector<std::string> names = {"roberta.embeddings.output", "qa_outputs.input", "qa_outputs.output"};
        const std::vector<float> indices = {0, 27, 28}; // 1 + 2 layers x 13 points, then the head
        for (std::size_t i = 0; i < names.size(); ++i) {
            QCOMPARE(result.captures[i].name, names[i]);
            QCOMPARE(result.captures[i].tensor.shape, (std::vector<int64_t>{2, 7}));
            QCOMPARE(result.captures[i].tensor.values[3], indices[i] + 0.75f);
        }
        ForwardOptions dequant;
        dequant.mode = RunMode::Dequant;
        QCOMPARE(qa->forward(raggedBatch(), dequant).outputs[1].tensor.values[2], -41.0f);
        QCOMPARE(qa->startCount(), 1);

        auto mlm = RunnerBackend::start(command, fixtures().fp8Mlm);
        const FillMaskResult fill = runFillMask(*mlm, "the cat <mask> on the mat", RunSettings{RunMode::Fp8}, 3);
        QCOMPARE(fill.predictions.size(), std::size_t(1));
        const int64_t maskId = mlm->checkpoint().tokenizer().maskId();
        const double vocab = double(mlm->config().vocabSize);
        QCOMPARE(fill.predictions[0][0].tokenId, maskId);
        QVERIFY(std::fabs(fill.predictions[0][0].probability - std::exp(1.0) / (std::exp(1.0) + vocab - 1)) < 1e-6);
    }

    // ---- the server side ------------------------------------------------------------------------

    void serverAnswersMalformedRequests_data()
    {
        QTest::addColumn<bool>("loadFirst");
        QTest::addColumn<QString>("request");
        QTest::addColumn<QString>("expectedId");
        QTest::addColumn<QString>("errorPhrase");
        const QString out = "\"output\":\"" + QString::fromStdString(fixtures().root) + "/server-out.safetensors\"";
        // (A line that is not JSON stops the serving: tests/test_runner_boundary.cpp.)
        QTest::newRow("array") << false << "[1,2]" << "null" << "not a JSON object";
        QTest::newRow("no op") << false << "{\"id\":7}" << "7" << "no \"op\"";
        QTest::newRow("op not a string") << false << "{\"id\":7,\"op\":3}" << "7" << "no \"op\"";
        QTest::newRow("unknown op") << false << "{\"id\":8,\"op\":\"launch\"}" << "8" << "Unknown op \"launch\"";
        QTest::newRow("forward before load") << false << "{\"id\":9,\"op\":\"forward\",\"input_ids\":[[0,2]]," + out + "}"
                                             << "9" << "No checkpoint is loaded";
        QTest::newRow("load without folder") << false << "{\"id\":10,\"op\":\"load\"}" << "10" << "no \"checkpoint\" field";
        QTest::newRow("load bad mode") << false
                                       << "{\"id\":11,\"op\":\"load\",\"checkpoint\":\"" + QString::fromStdString(fixtures().fp8Qa) +
                                              "\",\"mode\":\"int4\"}"
                                       << "11" << "mode \"int4\" is not fp8 or dequant";
        QTest::newRow("load missing folder") << false << "{\"id\":12,\"op\":\"load\",\"checkpoint\":\"/no/such/folder\"}" << "12"
                                             << "/no/such/folder";
        QTest::newRow("ids not lists") << true << "{\"id\":13,\"op\":\"forward\",\"input_ids\":[0,2]," + out + "}" << "13"
                                       << "\"input_ids\" must be a list of lists";
        QTest::newRow("negative id") << true << "{\"id\":14,\"op\":\"forward\",\"input_ids\":[[0,-5,2]]," + out + "}" << "14"
                                     << "non-negative integers";
        QTest::newRow("id out of vocabulary") << true << "{\"id\":15,\"op\":\"forward\",\"input_ids\":[[0,99999,2]]," + out + "}"
                                              << "15" << "outside the vocabulary";
        QTest::newRow("no output") << true << "{\"id\":16,\"op\":\"forward\",\"input_ids\":[[0,2]]}" << "16" << "no \"output\" field";
        QTest::newRow("unknown capture") << true
                                         << "{\"id\":17,\"op\":\"forward\",\"input_ids\":[[0,2]],\"capture\":[\"bogus\"]," + out + "}"
                                         << "17" << "Unknown capture point \"bogus\"";
        QTest::newRow("mask rows") << true
                                   << "{\"id\":18,\"op\":\"forward\",\"input_ids\":[[0,2]],\"attention_mask\":[[1,1],[1]]," + out + "}"
                                   << "18" << "attention mask has 2 rows";
        QTest::newRow("output folder missing") << true
                                               << "{\"id\":\"x\",\"op\":\"forward\",\"input_ids\":[[0,2]],\"output\":\"/no/such/dir/f.safetensors\"}"
                                               << "\"x\"" << "/no/such/dir";
    }
    void serverAnswersMalformedRequests()
    {
        QFETCH(bool, loadFirst);
        QFETCH(QString, request);
        QFETCH(QString, expectedId);
        QFETCH(QString, errorPhrase);
        std::vector<std::string> lines;
        if (loadFirst)
            lines.push_back(json{{"id", 1}, {"op", "load"}, {"checkpoint", fixtures().fp8Qa}, {"mode", "fp8"}}.dump());
        lines.push_back(request.toStdString());
        // Serving goes on after the error: a hello afterwards is answered.
        lines.push_back(R"({"id":99,"op":"hello"})");
        const std::vector<std::string> responses = runServer(lines);
        QCOMPARE(responses.size(), lines.size());
        if (loadFirst)
            QCOMPARE(json::parse(responses[0])["ok"], json(true));
        const json answer = json::parse(responses[responses.size() - 2]);
        QCOMPARE(answer["ok"], json(false));
        QCOMPARE(QString::fromStdString(answer["id"].dump()), expectedId);
        const QString error = QString::fromStdString(answer["error"].get<std::string>());
        QVERIFY2(error.contains(errorPhrase, Qt::CaseInsensitive), qPrintable(error));
        QVERIFY2(error.endsWith('.'), qPrintable(error));
        const json hello = json::parse(responses.back());
        QCOMPARE(hello["ok"], json(true));
        QCOMPARE(hello["protocol"], json(kRunnerProtocolVersion));
        QCOMPARE(hello["id"], json(99));
    }

    void serverForwardWritesTheFile()
    {
        const std::string output = fixtures().root + "/server-forward.safetensors";
        const json forward = {{"id", 3},
                              {"op", "forward"},
                              {"input_ids", raggedBatch().inputIds},
                              {"attention_mask", raggedBatch().attentionMask},
                              {"capture", {"roberta.encoder.layer.0.output", "qa_outputs"}},
                              {"output", output}};
        const std::vector<std::string> responses = runServer({
            json{{"id", 1}, {"op", "hello"}}.dump(),
            json{{"id", 2}, {"op", "load"}, {"checkpoint", fixtures().fp8Qa}, {"mode", "dequant"}}.dump(),
            forward.dump(),
            json{{"id", 4}, {"op", "shutdown"}}.dump(),
            json{{"id", 5}, {"op", "hello"}}.dump(), // after shutdown: not served
        });
        QCOMPARE(responses.size(), std::size_t(4));
        QCOMPARE(json::parse(responses[1])["architecture"], json("RobertaForQuestionAnswering"));
        const json answer = json::parse(responses[2]);
        QCOMPARE(answer["ok"], json(true));
        QCOMPARE(answer["output"], json(output));
        QVERIFY(answer["elapsed_ms"].get<double>() > 0);
        QCOMPARE(json::parse(responses[3]), (json{{"id", 4}, {"ok", true}}));

        // The file holds the logits first, then the captures in execution order, and equals the
        // engine's own dequant forward bit for bit.
        auto store = TensorStore::openFile(output);
        std::vector<std::string> names;
        for (const TensorView* view : store->tensors())
            names.push_back(view->name);
        std::sort(names.begin(), names.end());
        QCOMPARE(names, (std::vector<std::string>{"end_logits", "qa_outputs.input", "qa_outputs.output",
                                                  "roberta.encoder.layer.0.output", "start_logits"}));
        ForwardOptions options;
        options.mode = RunMode::Dequant;
        options.capture.names = {"roberta.encoder.layer.0.output", "qa_outputs"};
        const ForwardResult expected = EncoderModel::load(fixtures().fp8Qa)->forward(raggedBatch(), options);
        for (const auto& list : {expected.outputs, expected.captures})
            for (const NamedTensor& t : list) {
                const FloatTensor ours = store->require(t.name).toFloat();
                QCOMPARE(ours.shape, t.tensor.shape);
                QVERIFY(std::memcmp(ours.values.data(), t.tensor.values.data(), ours.values.size() * sizeof(float)) == 0);
            }
        QCOMPARE(store->require("start_logits").shape, (std::vector<int64_t>{2, 7}));
    }

    // ---- timing (reported, not asserted beyond sanity) -------------------------------------------

    void timingThroughRunnerVersusInProcess()
    {
        TinyModelSpec spec;
        spec.hiddenSize = 256;
        spec.numLayers = 4;
        spec.numHeads = 4;
        spec.intermediateSize = 1024;
        spec.maxPositionEmbeddings = 514;
        const std::string floatDir = fixtures().root + "/timing-float";
        const std::string fp8Dir = fixtures().root + "/timing-fp8";
        writeTinyFloatCheckpoint(floatDir, spec);
        writeTinyFp8Checkpoint(floatDir, fp8Dir, {"channel", "token", "F32"});
        EncoderInputs inputs;
        for (int b = 0; b < 4; ++b) {
            std::vector<int64_t> row(128);
            for (int t = 0; t < 128; ++t)
                row[static_cast<std::size_t>(t)] = 4 + (t * 7 + b) % 250;
            inputs.inputIds.push_back(row);
        }
        auto engine = EncoderModel::load(fp8Dir);
        auto runner = RunnerBackend::start(cliRunnerCommand(), fp8Dir);
        // Best of seven, the two sides interleaved: the machine is shared, and the fastest run of
        // each is the least disturbed one.
        auto timed = [](auto&& run) {
            const auto started = std::chrono::steady_clock::now();
            run();
            return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
        };
        ForwardOptions plain, captured;
        captured.capture.all = true;
        double inProcess = 1e300, throughRunner = 1e300, runnerCompute = 1e300;
        double inProcessCaptured = 1e300, throughRunnerCaptured = 1e300, overheadCaptured = 1e300;
        for (int i = 0; i < 7; ++i) {
            inProcess = std::min(inProcess, timed([&] { engine->forward(inputs, plain); }));
            throughRunner = std::min(throughRunner, timed([&] {
                runnerCompute = std::min(runnerCompute, runner->forward(inputs, plain).elapsedMs);
            }));
            inProcessCaptured = std::min(inProcessCaptured, timed([&] { engine->forward(inputs, captured); }));
            double compute = 0;
            const double roundTrip = timed([&] { compute = runner->forward(inputs, captured).elapsedMs; });
            throughRunnerCaptured = std::min(throughRunnerCaptured, roundTrip);
            overheadCaptured = std::min(overheadCaptured, roundTrip - compute);
        }
        qInfo("forward 4 x 128 tokens, hidden 256, 4 layers, fp8 (best of 7): in-process %.1f ms; through the runner "
              "%.1f ms round trip (runner's own compute %.1f ms); with all %zu captures: %.1f ms vs %.1f ms, of which "
              "%.1f ms beyond the runner's compute (file exchange, protocol)",
              inProcess, throughRunner, runnerCompute, runner->capturePoints().size(), inProcessCaptured,
              throughRunnerCaptured, overheadCaptured);
        QVERIFY(throughRunner > 0 && inProcess > 0);
        compareTensorsBitwise(runner->forward(inputs, captured).captures, engine->forward(inputs, captured).captures);
    }
};

QTEST_GUILESS_MAIN(TestRunner)
#include "test_runner.moc"
