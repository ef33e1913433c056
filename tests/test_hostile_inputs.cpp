// Hostile inputs beyond parser fuzzing (issue 20): outputs that are not regular files, quantize
// --force on folders it must not destroy, a parked destination of a killed writer (the rule for
// stale temporaries is tests/test_outputs.cpp's), plots on a full disk and into a folder another
// run is writing (issue 30 item 3), nesting deep enough
// to overflow a recursive parser, a mapped checkpoint rewritten in place, NaN and infinity in
// weights and outputs, bytes that are not UTF-8 in JSON, terminal escapes and spreadsheet formulas.
// Device nodes, FIFOs, sockets and links are made privately in temporary folders; nothing here
// touches a system path.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "common/error.h"
#include "common/text_files.h"
#include "engine/compute_threads.h"
#include "io/atomic_write.h"
#include "io/output_folder.h"
#include "io/safetensors.h"
#include "io/temporary_owner.h"
#include "model/checkpoint.h"
#include "model/quantization_config.h"
#include "numerics/metrics.h"
#include "report/csv.h"
#include "support/cli_process.h"
#include "support/fixtures.h"
#include "text/bpe_tokenizer.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

mode_t typeOf(const std::string& path)
{
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0 ? (info.st_mode & S_IFMT) : 0;
}

// The pid of a process that has certainly ended (its child reaped).
long deadPid()
{
    const pid_t child = ::fork();
    if (child == 0)
        ::_exit(0);
    ::waitpid(child, nullptr, 0);
    return child;
}

// Rewrites one element of one tensor of dir/model.safetensors (float dtypes).
void setElement(const std::string& dir, const std::string& tensor, std::size_t index, float value)
{
    const std::string path = dir + "/model.safetensors";
    std::vector<TensorToWrite> tensors;
    {
        auto store = TensorStore::openFile(path);
        for (const TensorView* view : store->tensors()) {
            TensorToWrite copy;
            copy.name = view->name;
            copy.dtype = view->dtype;
            copy.shape = view->shape;
            copy.bytes.assign(view->data, view->data + view->byteSize);
            if (view->name == tensor) {
                QVERIFY(view->dtype == Dtype::F32);
                std::memcpy(copy.bytes.data() + index * sizeof(float), &value, sizeof value);
            }
            tensors.push_back(std::move(copy));
        }
    }
    writeSafetensors(path, tensors);
}

bool hasFinding(const std::vector<Finding>& findings, const std::string& code, const std::string& subject)
{
    for (const Finding& f : findings)
        if (f.code == code && (subject.empty() || f.subject == subject))
            return true;
    return false;
}

} // namespace

class TestHostileInputs : public QObject {
    Q_OBJECT
    std::string floatDir_;
    std::string mlmDir_;
    std::string ids_ = "0,280,281,100,290,77,45,2";
    std::string fp8Dir_;

    // The FP8 version of floatDir_, made on first use.
    const std::string& fp8Dir()
    {
        if (fp8Dir_.empty()) {
            const std::string dir = makeTempDir("hostile-fp8") + "/model";
            const CliResult r = runCli({"quantize", q(floatDir_), q(dir)});
            if (r.exitCode != 0)
                qFatal("quantize failed: %s", qPrintable(r.err));
            fp8Dir_ = dir;
        }
        return fp8Dir_;
    }

private slots:
    void initTestCase()
    {
        floatDir_ = makeTempDir("hostile-float");
        writeTinyFloatCheckpoint(floatDir_, TinyModelSpec());
        TinyModelSpec mlm;
        mlm.architecture = "RobertaForMaskedLM";
        mlmDir_ = makeTempDir("hostile-mlm");
        writeTinyFloatCheckpoint(mlmDir_, mlm);
    }

    // ---- item 1: --force replaces only a regular file ----------------------------------------

    void forceNeverReplacesSpecialFiles()
    {
        const std::string dir = makeTempDir("hostile-special");
        // A private copy of /dev/null's device number: what `--output /dev/null --force` once
        // replaced with a regular file.
        const std::string device = dir + "/null";
        QCOMPARE(::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
        const std::string fifo = dir + "/fifo";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        const std::string socketPath = dir + "/socket";
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address {};
        address.sun_family = AF_UNIX;
        std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socketPath.c_str());
        QCOMPARE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        const std::string target = dir + "/target.txt";
        writeAll(target, "keep me");
        const std::string link = dir + "/link";
        QCOMPARE(::symlink(target.c_str(), link.c_str()), 0);
        const std::string stdoutLike = dir + "/stdout";
        QCOMPARE(::symlink("/proc/self/fd/1", stdoutLike.c_str()), 0);

        const std::vector<std::pair<std::string, mode_t>> specials = {
            {device, S_IFCHR}, {fifo, S_IFIFO}, {socketPath, S_IFSOCK}, {link, S_IFLNK}, {stdoutLike, S_IFLNK}};
        for (const auto& [path, type] : specials) {
            const CliResult r = runCli({"forward", q(floatDir_), "--input-ids", q(ids_), "--output", q(path), "--force"});
            QVERIFY2(!r.crashed && r.exitCode == 1, qPrintable(q(path) + ": " + r.err));
            QVERIFY2(r.err.contains("not a regular file") && r.err.contains(q(path)), qPrintable(r.err));
            QCOMPARE(typeOf(path), type);
            QVERIFY(r.out.isEmpty());
            // The core refuses too, whatever the caller passes.
            const QString core = [&] {
                try {
                    writeBytesAtomically(path, "x", true);
                } catch (const Error& e) {
                    return QString::fromStdString(e.what());
                }
                return QString();
            }();
            QVERIFY2(core.contains("only a regular file is ever replaced"), qPrintable(core));
            QCOMPARE(typeOf(path), type);
        }
        ::close(fd);
        QCOMPARE(readAll(target), std::string("keep me"));
        // No temporary is left behind by the refusals.
        QCOMPARE(QDir(q(dir)).entryList(QDir::Hidden | QDir::System | QDir::AllEntries | QDir::NoDotAndDotDot).size(), 6);

        // A regular file is still replaced with --force, and the result is a valid output.
        const std::string regular = dir + "/out.safetensors";
        writeAll(regular, "old");
        const CliResult r = runCli({"forward", q(floatDir_), "--input-ids", q(ids_), "--output", q(regular), "--force"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY(TensorStore::openFile(regular)->find("start_logits"));
    }

    // ---- item 11: a dangling link is an existing path; stale temporaries are cleaned ----------

    void danglingLinkIsNotReplacedWithoutForce()
    {
        const std::string dir = makeTempDir("hostile-dangling");
        const std::string link = dir + "/out.safetensors";
        QCOMPARE(::symlink((dir + "/nowhere").c_str(), link.c_str()), 0);
        const CliResult r = runCli({"forward", q(floatDir_), "--input-ids", q(ids_), "--output", q(link)});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("already exists"), qPrintable(r.err));
        QCOMPARE(typeOf(link), mode_t(S_IFLNK));
        QVERIFY(!QFile::exists(q(dir + "/nowhere")));
    }

    // ---- issue 30 item 3: plot files ------------------------------------------------------------

    // A disk that fills up while --plots writes: QCustomPlot's own save reported success and the
    // truncated PNG was renamed into place. RLIMIT_FSIZE in the CLI's process (SIGXFSZ ignored, so
    // write() fails with EFBIG) refuses every byte past 16 KB, as a full disk refuses them.
    void plotsOnAFullDiskLeaveNoTruncatedImage()
    {
        const std::string plots = makeTempDir("hostile-fsize") + "/plots";
        QProcess process;
        process.setChildProcessModifier([] {
            ::signal(SIGXFSZ, SIG_IGN);
            const rlimit limit{16 * 1024, 16 * 1024};
            ::setrlimit(RLIMIT_FSIZE, &limit);
        });
        process.start(QStringLiteral(SCALESCOPE_CLI), {"compare", q(fp8Dir()), "--reference", q(floatDir_), "--input-ids",
                                                       q(ids_), "--plots", q(plots), "--format", "png"});
        QVERIFY(process.waitForFinished(300000));
        const QString err = QString::fromUtf8(process.readAllStandardError());
        QCOMPARE(process.exitStatus(), QProcess::NormalExit);
        QVERIFY2(process.exitCode() == 1 && err.contains("File too large"), qPrintable(err));
        const QStringList left = QDir(q(plots)).entryList(QDir::Hidden | QDir::Files | QDir::NoDotAndDotDot);
        for (const QString& name : left) {
            QVERIFY2(!name.startsWith('.'), qPrintable(name)); // no temporary, no lock file
            if (!name.endsWith(".png"))
                continue;
            // A whole PNG ends with its IEND chunk.
            const std::string bytes = readAll(plots + "/" + name.toStdString());
            QVERIFY2(bytes.size() > 12 && bytes.compare(bytes.size() - 8, 4, "IEND") == 0,
                     qPrintable(name + " is truncated at " + QString::number(bytes.size()) + " bytes"));
        }
    }

    // Two runs into one --plots folder at once: the folder is reserved before any file is checked
    // or written, so the second run is refused while the first one writes (held here by the test).
    void plotsIntoAFolderBeingWrittenAreRefused()
    {
        const std::string plots = makeTempDir("hostile-reserved") + "/plots";
        QVERIFY(QDir().mkpath(q(plots)));
        const QStringList args = {"compare", q(fp8Dir()), "--reference", q(floatDir_), "--input-ids", q(ids_),
                                  "--plots", q(plots), "--format", "svg"};
        std::optional<FolderReservation> firstRun(std::in_place, plots);
        const CliResult refused = runCli(args);
        QVERIFY2(refused.exitCode == 1 && refused.err.contains("another ScaleScope run is writing there"),
                 qPrintable(refused.err));
        QCOMPARE(QDir(q(plots)).entryList(QDir::Hidden | QDir::AllEntries | QDir::NoDotAndDotDot),
                 QStringList{".scalescope-writing.lock"});
        firstRun.reset();
        const CliResult after = runCli(args);
        QVERIFY2(after.exitCode == 0, qPrintable(after.err));
        const QStringList written = QDir(q(plots)).entryList(QDir::Hidden | QDir::AllEntries | QDir::NoDotAndDotDot);
        QVERIFY2(written.contains("compare.json") && !written.join(',').contains(".scalescope"), qPrintable(written.join(',')));
    }

    // ---- item 2: quantize --force ------------------------------------------------------------

    void quantizeForceRefusesDestructiveDestinations()
    {
        const std::string root = makeTempDir("hostile-quantize");
        const std::string source = root + "/outer/src";
        QVERIFY(QDir().mkpath(q(source)));
        writeTinyFloatCheckpoint(source, TinyModelSpec());
        const std::string sourceWeights = readAll(source + "/model.safetensors");
        writeAll(root + "/outer/notes.txt", "unrelated work");

        auto refused = [&](const QStringList& args, const QString& expected) {
            const CliResult r = runCli(args);
            QVERIFY2(!r.crashed && r.exitCode == 1, qPrintable(args.join(' ') + " -> " + r.err));
            QVERIFY2(r.err.contains(expected), qPrintable(r.err));
        };
        // DST holds SRC, is SRC (also through a link), or lies inside SRC.
        refused({"quantize", q(source), q(root + "/outer"), "--force"}, "contains the source checkpoint");
        refused({"quantize", q(source), q(source), "--force"}, "is the source checkpoint");
        QCOMPARE(::symlink(source.c_str(), (root + "/alias").c_str()), 0);
        refused({"quantize", q(source), q(root + "/alias"), "--force"}, "is the source checkpoint");
        refused({"quantize", q(source), q(source + "/fp8"), "--force"}, "inside the source checkpoint");
        // DST holds the calibration file.
        const std::string calibrationDir = root + "/calibration";
        QVERIFY(QDir().mkpath(q(calibrationDir)));
        writeAll(calibrationDir + "/texts.txt", "the cat sat on the mat\n");
        refused({"quantize", q(source), q(calibrationDir), "--activations", "tensor", "--calibration",
                 q(calibrationDir + "/texts.txt"), "--force"},
                "contains the input file");
        // A folder that is not a checkpoint, and a regular file.
        const std::string work = root + "/work";
        QVERIFY(QDir().mkpath(q(work)));
        writeAll(work + "/config.json", "{}");
        writeAll(work + "/thesis.tex", "years of work");
        refused({"quantize", q(source), q(work), "--force"}, "thesis.tex, which is not part of a checkpoint");
        writeAll(root + "/file", "a file");
        refused({"quantize", q(source), q(root + "/file"), "--force"}, "is not a folder");

        QCOMPARE(readAll(source + "/model.safetensors"), sourceWeights);
        QCOMPARE(readAll(root + "/outer/notes.txt"), std::string("unrelated work"));
        QCOMPARE(readAll(work + "/thesis.tex"), std::string("years of work"));
        QCOMPARE(readAll(calibrationDir + "/texts.txt"), std::string("the cat sat on the mat\n"));
        QCOMPARE(readAll(root + "/file"), std::string("a file"));

        // A checkpoint folder is replaced, in one step, and nothing is left beside it.
        const std::string destination = root + "/fp8";
        QVERIFY(runCli({"quantize", q(source), q(destination), "--weights", "tensor"}).exitCode == 0);
        QVERIFY(json::parse(readAll(destination + "/config.json"))["quantization_config"]["config_groups"]["group_0"]
                    ["weights"]["strategy"] == "tensor");
        const CliResult again = runCli({"quantize", q(source), q(destination), "--weights", "channel", "--force"});
        QVERIFY2(again.exitCode == 0, qPrintable(again.err));
        QVERIFY(json::parse(readAll(destination + "/config.json"))["quantization_config"]["config_groups"]["group_0"]
                    ["weights"]["strategy"] == "channel");
        const QStringList leftovers =
            QDir(q(root)).entryList(QStringList{".fp8*"}, QDir::Hidden | QDir::AllEntries | QDir::NoDotAndDotDot);
        QVERIFY2(leftovers.isEmpty(), qPrintable(leftovers.join(',')));
    }

    // A replacement killed between parking the old DST and moving the new one in (file systems
    // without an atomic exchange) leaves ".DST.old-PID": the next run puts it back.
    void parkedDestinationOfAKilledRunIsRestored()
    {
        const std::string root = makeTempDir("hostile-parked");
        const std::string destination = root + "/fp8";
        QVERIFY(runCli({"quantize", q(floatDir_), q(destination)}).exitCode == 0);
        const std::string config = readAll(destination + "/config.json");
        const std::string parked = root + "/.fp8.old-" + thisHostTag() + "-" + std::to_string(deadPid());
        QVERIFY(QDir().rename(q(destination), q(parked)));
        const CliResult r = runCli({"quantize", q(floatDir_), q(destination)});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("already exists"), qPrintable(r.err));
        QCOMPARE(readAll(destination + "/config.json"), config);
        QVERIFY(!QFileInfo::exists(q(parked)));
    }

    // ---- item 3: nesting depth ---------------------------------------------------------------

    void deepJsonIsRefusedWithOneSentence_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("config.json") << "config.json";
        QTest::newRow("vocab.json") << "vocab.json";
        QTest::newRow("index.json") << "model.safetensors.index.json";
        QTest::newRow("safetensors header") << "model.safetensors";
    }

    void deepJsonIsRefusedWithOneSentence()
    {
        QFETCH(QString, file);
        const std::string dir = makeTempDir("hostile-deep");
        writeTinyFloatCheckpoint(dir, TinyModelSpec());
        // 100,000 levels in 200 KB: what overflowed the stack.
        const std::string deep = std::string(100000, '[') + std::string(100000, ']');
        const std::string path = dir + "/" + file.toStdString();
        if (file == "model.safetensors") {
            std::string header = "{\"__metadata__\":" + deep + "}";
            std::string length(8, '\0');
            for (int i = 0; i < 8; ++i)
                length[std::size_t(i)] = char((header.size() >> (8 * i)) & 0xFF);
            writeAll(path, length + header);
        } else if (file == "config.json") {
            json config = json::parse(readAll(path));
            std::string text = config.dump();
            text.insert(1, "\"deep\":" + deep + ",");
            writeAll(path, text);
        } else {
            writeAll(path, "{\"weight_map\":" + deep + "}");
        }
        // A damaged tokenizer is reported by the commands that need text.
        const CliResult r = file == "vocab.json" ? runCli({"tokenize", q(dir), "--text", "the cat", "--json"})
                                                 : runCli({"inspect", q(dir), "--json"});
        QVERIFY2(!r.crashed, "the CLI crashed");
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("more than 128 levels deep") && r.err.contains(q(path)), qPrintable(r.err));
        QCOMPARE(r.err.count('\n'), 1);
    }

    void deepPatternsAreRefusedNotCompiled()
    {
        const std::string dir = makeTempDir("hostile-pattern");
        const std::string fp8 = dir + "/fp8";
        QVERIFY(runCli({"quantize", q(floatDir_), q(fp8)}).exitCode == 0);
        json config = json::parse(readAll(fp8 + "/config.json"));
        // 20,000 nested groups (40 KB), and a repetition that expands to a million states.
        const std::string nested = "re:" + std::string(20000, '(') + "x" + std::string(20000, ')');
        config["quantization_config"]["ignore"].push_back(nested);
        config["quantization_config"]["ignore"].push_back("re:((x{1000}){1000})");
        writeAll(fp8 + "/config.json", config.dump());

        const CliResult inspect = runCli({"inspect", q(fp8), "--json"});
        QVERIFY2(!inspect.crashed && inspect.exitCode == 0, qPrintable(inspect.err));
        const json document = json::parse(inspect.out.toStdString());
        int refused = 0;
        for (const json& finding : document["diagnostics"])
            if (finding["code"] == "pattern-invalid") {
                const std::string message = finding["message"];
                QVERIFY2(message.find("nests groups more than 16 levels") != std::string::npos ||
                             message.find("more than 10000 states") != std::string::npos ||
                             message.find("characters long") != std::string::npos,
                         message.c_str());
                QVERIFY(message.size() < 600);
                ++refused;
            }
        QCOMPARE(refused, 2);
        // A run matches the refused patterns against nothing and answers as before.
        const CliResult qa = runCli({"qa", q(fp8), "--question", "what is the capital", "--context",
                                     "Paris is the capital of France", "--json"});
        QVERIFY2(!qa.crashed && qa.exitCode == 0, qPrintable(qa.err));

        QVERIFY(targetPatternProblem(".*attention\\.self\\.(query|key|value)$") == std::nullopt);
        QVERIFY(targetPatternProblem("lm_head\\..*") == std::nullopt);
        QVERIFY(targetPatternProblem("(a{90}){100}") == std::nullopt); // 9,292 states, within the bound
        QVERIFY(targetPatternProblem("(a{100}){101}").has_value());
        QVERIFY(targetPatternProblem(std::string(16, '(') + std::string(16, ')')) == std::nullopt);
        QVERIFY(targetPatternProblem(std::string(17, '(') + std::string(17, ')')).has_value());
        QVERIFY(!matchesTarget(nested, "x", "Linear"));
    }

    // ---- item 4: a mapped checkpoint rewritten in place ----------------------------------------

    void mappedFileTruncatedInPlaceIsReportedNotFatal()
    {
        const std::string dir = makeTempDir("hostile-sigbus");
        const std::string path = dir + "/t.safetensors";
        FloatTensor big;
        big.shape = {4096, 64}; // 1 MiB: many pages past a truncation point
        big.values.assign(4096 * 64, 1.5f);
        writeSafetensors(path, {makeF32Tensor("big", big)});
        auto store = TensorStore::openFile(path);
        const TensorView& view = store->require("big");
        store->checkUnchanged();

        // What `cp other.safetensors model.safetensors` does to an open checkpoint: truncate, then
        // write a shorter file under the same inode.
        const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
        QVERIFY(fd >= 0);
        QCOMPARE(::write(fd, "12345678", 8), ssize_t(8));
        ::close(fd);

        // Reading the mapping past the new end raised SIGBUS; now the read completes.
        double sum = 0;
        for (std::size_t i = 0; i < view.byteSize; i += 4096)
            sum += view.data[i];
        const std::vector<float> values = view.toFloat().values;
        QCOMPARE(values.size(), std::size_t(4096 * 64));
        QVERIFY(sum >= 0);
        try {
            store->checkUnchanged();
            QFAIL("a truncated mapping went unnoticed");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains(q(path) + " changed on disk after it was opened"), e.what());
        }
    }

    void sameSizeRewriteInPlaceIsReported()
    {
        const std::string dir = makeTempDir("hostile-rewrite");
        const std::string path = dir + "/t.safetensors";
        FloatTensor small;
        small.shape = {4};
        small.values = {1, 2, 3, 4};
        writeSafetensors(path, {makeF32Tensor("s", small)});
        auto store = TensorStore::openFile(path);
        const std::string bytes = readAll(path);
        // Same bytes, same size: only the modification time tells.
        struct timespec times[2] = {{0, UTIME_OMIT}, {1, 0}};
        const int fd = ::open(path.c_str(), O_WRONLY);
        QCOMPARE(::pwrite(fd, bytes.data(), bytes.size(), 0), ssize_t(bytes.size()));
        QCOMPARE(::futimens(fd, times), 0);
        ::close(fd);
        bool reported = false;
        try {
            store->checkUnchanged();
        } catch (const Error&) {
            reported = true;
        }
        QVERIFY(reported);
        // A file replaced by rename (how this program writes) leaves the open mapping intact.
        auto second = TensorStore::openFile(path);
        writeSafetensors(path, {makeF32Tensor("s", small)});
        second->checkUnchanged();
        QCOMPARE(second->require("s").toFloat().values, small.values);
    }

    // ---- item 5: NaN and infinity --------------------------------------------------------------

    void nonFiniteValuesAreCountedAcrossALargeTensor()
    {
        // 4,000 x 32 word embeddings: more values than the check converts at a time (65,536).
        TinyModelSpec spec;
        spec.vocabularySize = 4000;
        const std::string dir = makeTempDir("hostile-nan-large");
        writeTinyFloatCheckpoint(dir, spec);
        const std::string table = "roberta.embeddings.word_embeddings.weight";
        setElement(dir, table, 70001, NAN);
        setElement(dir, table, 127999, INFINITY);
        auto checkpoint = Checkpoint::open(dir);
        const auto findings = diagnoseCheckpoint(*checkpoint, computeScaleStatistics(*checkpoint));
        bool found = false;
        for (const Finding& f : findings)
            if (f.subject == table && f.code == "tensor-nonfinite") {
                found = true;
                QVERIFY2(f.message.find("1 NaN and 1 infinite values of 128000 (first at index 70001)") != std::string::npos,
                         f.message.c_str());
            }
        QVERIFY(found);
    }

    void nonFiniteWeightsAreFlaggedAndRefused()
    {
        const std::string dir = makeTempDir("hostile-nan");
        writeTinyFloatCheckpoint(dir, TinyModelSpec());
        setElement(dir, "roberta.encoder.layer.1.output.LayerNorm.weight", 3, NAN);
        setElement(dir, "roberta.encoder.layer.0.attention.self.query.bias", 0, INFINITY);
        setElement(dir, "roberta.encoder.layer.0.intermediate.dense.weight", 7, -INFINITY);

        auto checkpoint = Checkpoint::open(dir);
        const auto findings = diagnoseCheckpoint(*checkpoint, computeScaleStatistics(*checkpoint));
        QVERIFY(hasFinding(findings, "tensor-nonfinite", "roberta.encoder.layer.1.output.LayerNorm.weight"));
        QVERIFY(hasFinding(findings, "tensor-nonfinite", "roberta.encoder.layer.0.attention.self.query.bias"));
        QVERIFY(hasFinding(findings, "tensor-nonfinite", "roberta.encoder.layer.0.intermediate.dense.weight"));
        QVERIFY(!hasFinding(findings, "tensor-nonfinite", "roberta.encoder.layer.0.output.dense.weight"));
        for (const Finding& f : findings)
            if (f.subject == "roberta.encoder.layer.0.intermediate.dense.weight" && f.code == "tensor-nonfinite")
                QVERIFY2(f.message.find("0 NaN and 1 infinite values") != std::string::npos &&
                             f.message.find("first at index 7") != std::string::npos,
                         f.message.c_str());

        const CliResult quantize = runCli({"quantize", q(dir), q(makeTempDir("hostile-nan-out") + "/fp8")});
        QCOMPARE(quantize.exitCode, 1);
        // Tensors are checked in name order; the first non-finite one is named.
        QVERIFY2(quantize.err.contains("Tensor 'roberta.encoder.layer.0.attention.self.query.bias'") &&
                     quantize.err.contains("an infinite value at element 0"),
                 qPrintable(quantize.err));
    }

    void subnormalAndFlushingScalesAreFlagged()
    {
        const std::string dir = makeTempDir("hostile-scales");
        const std::string fp8 = dir + "/fp8";
        QVERIFY(runCli({"quantize", q(floatDir_), q(fp8), "--weights", "tensor"}).exitCode == 0);
        const std::string module = "roberta.encoder.layer.0.attention.output.dense";
        setElement(fp8, module + ".weight_scale", 0, 1e-40f); // float32 subnormal
        auto checkpoint = Checkpoint::open(fp8);
        const auto findings = diagnoseCheckpoint(*checkpoint, computeScaleStatistics(*checkpoint));
        QVERIFY(hasFinding(findings, "scale-subnormal", module + ".weight_scale"));
        QCOMPARE(std::count_if(findings.begin(), findings.end(), [](const Finding& f) { return f.code == "scale-subnormal"; }),
                 std::ptrdiff_t(1));

        // Observed amax 0.5 against a static scale of 1024: 0.5 / 1024 < 2^-10, every input is 0.
        LinearInfo info;
        info.module = module;
        info.activations = ActivationQuantization::StaticPerTensor;
        info.inputScale = 1024;
        ActivationStatistics stats;
        stats.module = module;
        stats.amax = 0.5f;
        stats.inputScale = 1024;
        stats.elements = 100;
        stats.flushedToZero = 100;
        auto flush = diagnoseActivations({stats}, {info});
        QCOMPARE(flush.size(), std::size_t(1));
        QCOMPARE(flush[0].code, std::string("static-scale-flush"));
        stats.amax = 2.0f; // 2 / 1024 = 2^-9 is the smallest subnormal: not everything is lost
        QVERIFY(!hasFinding(diagnoseActivations({stats}, {info}), "static-scale-flush", ""));
    }

    void forwardNamesTheFirstNonFiniteModule()
    {
        const std::string dir = makeTempDir("hostile-inf-bias");
        for (const QString& name : QDir(q(floatDir_)).entryList(QDir::Files))
            QVERIFY(QFile::copy(q(floatDir_) + "/" + name, q(dir) + "/" + name));
        // One infinite bias entry: that Linear's output is inf in one column of every token, and
        // everything after it is poisoned; everything before it stays finite.
        const std::string planted = "roberta.encoder.layer.1.intermediate.dense";
        setElement(dir, planted + ".bias", 5, INFINITY);
        const std::size_t tokens = std::count(ids_.begin(), ids_.end(), ',') + 1;

        const std::string runner = "runner:" + std::string(SCALESCOPE_CLI) + " runner";
        for (const std::string& device : {std::string("cpu"), runner}) {
            const CliResult r = runCli({"forward", q(dir), "--input-ids", q(ids_), "--device", q(device), "--output",
                                        q(dir + "/out.safetensors"), "--force", "--json"});
            QVERIFY2(r.exitCode == 0, qPrintable(r.err));
            const json out = json::parse(r.out.toStdString());
            QCOMPARE(out["first_nonfinite"].get<std::string>(), planted);
            QCOMPARE(out["nonfinite"][0]["module"].get<std::string>(), planted);
            QCOMPARE(out["nonfinite"][0]["count"].get<std::size_t>(), tokens);
            // In execution order: the next Linear, output.dense, follows.
            QCOMPARE(out["nonfinite"][1]["module"].get<std::string>(),
                     std::string("roberta.encoder.layer.1.output.dense"));
        }
        // No answer is ranked from NaN logits: qa names where they start instead.
        const CliResult qa = runCli({"qa", q(dir), "--question", "where", "--context", "the cat sat on the mat"});
        QCOMPARE(qa.exitCode, 1);
        QVERIFY2(qa.err.contains(q("first appears in " + planted)), qPrintable(qa.err));

        const CliResult clean = runCli({"forward", q(floatDir_), "--input-ids", q(ids_), "--output",
                                        q(dir + "/clean.safetensors"), "--json"});
        QVERIFY2(clean.exitCode == 0, qPrintable(clean.err));
        const json out = json::parse(clean.out.toStdString());
        QVERIFY(out["nonfinite"].is_array() && out["nonfinite"].empty());
        QVERIFY(out["first_nonfinite"].is_null());
    }

    void nanOutputsNeverAgree()
    {
        const std::string dir = makeTempDir("hostile-nan-mlm");
        for (const QString& name : QDir(q(mlmDir_)).entryList(QDir::Files))
            QVERIFY(QFile::copy(q(mlmDir_) + "/" + name, q(dir) + "/" + name));
        // One NaN in the head's LayerNorm reaches every logit.
        setElement(dir, "lm_head.layer_norm.weight", 0, NAN);

        const CliResult fill = runCli({"fill-mask", q(dir), "--text", "the <mask> sat", "--json"});
        QVERIFY2(!fill.crashed, "fill-mask crashed");
        QCOMPARE(fill.exitCode, 1);
        QVERIFY2(fill.err.contains("NaN or infinite"), qPrintable(fill.err));
        const json out = json::parse(fill.out.toStdString());
        QVERIFY(out["nonfinite_logits"][0].get<int64_t>() > 0);
        QVERIFY(out.contains("error"));
        // The LayerNorm is not a module of its own: the decoder Linear after it is the first output.
        QCOMPARE(out["first_nonfinite"].get<std::string>(), std::string("lm_head.decoder"));

        const CliResult compare = runCli({"compare", q(dir), "--text", "the <mask> sat", "--json"});
        QVERIFY2(!compare.crashed && compare.exitCode == 0, qPrintable(compare.err));
        const json document = json::parse(compare.out.toStdString());
        QCOMPARE(document["final"]["fill_mask"]["masks"][0]["top1_agrees"].get<bool>(), false);
        QCOMPARE(document["final"]["nonfinite"]["run_outputs"].get<bool>(), true);
        // The first capture point with NaN is the head's LayerNorm output feeding the decoder (the
        // earlier points, up to lm_head.dense, are finite).
        const json first = document["final"]["nonfinite"]["run_first"];
        QVERIFY2(first.is_string() && first.get<std::string>().rfind("lm_head.decoder", 0) == 0, first.dump().c_str());
        QVERIFY(document["final"]["nonfinite"]["note"].get<std::string>().find("not claimed") != std::string::npos);

        // Issue 30: a maximum over NaN errors is NaN (JSON null), never the 0.0 std::max left.
        for (const json& point : document["points"])
            if (point["name"].get<std::string>() == "lm_head.decoder.output")
                QVERIFY2(point["max_abs_error"].is_null(), point.dump().c_str());
        QVERIFY(document["final"]["logits"]["max_abs_error"].is_null());
        // The findings carry the checkpoint's error (inspect's) and the first non-finite module.
        bool weightFinding = false, outputFinding = false;
        for (const json& finding : document["findings"]) {
            weightFinding = weightFinding || (finding["code"] == "tensor-nonfinite" &&
                                              finding["subject"] == "lm_head.layer_norm.weight");
            outputFinding = outputFinding || (finding["code"] == "non-finite-output" &&
                                              finding["subject"] == "lm_head.decoder");
        }
        QVERIFY2(weightFinding && outputFinding, document["findings"].dump().c_str());

        const CliResult text = runCli({"compare", q(dir), "--text", "the <mask> sat"});
        QVERIFY(text.out.contains("not compared (non-finite outputs)"));
        QVERIFY(!text.out.contains("agrees"));
        QVERIFY2(!text.out.contains("Diagnostics: none"), qPrintable(text.out));
    }

    void maximumKeepsNan()
    {
        const float values[] = {1.0f, NAN, 3.0f, 0.5f, 2.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
        const float reference[10] = {};
        // NaN in the vectorised part and in the tail alike.
        QVERIFY(std::isnan(computeErrorMetrics(values, reference, 10).maxAbsError));
        QVERIFY(std::isnan(computeErrorMetrics(values + 1, reference, 1).maxAbsError));
        QCOMPARE(computeErrorMetrics(values + 2, reference, 1).maxAbsError, 3.0);
        QVERIFY(std::isnan(maxKeepingNan(1.0, double(NAN))) && std::isnan(maxKeepingNan(double(NAN), 1.0)));
    }

    // ---- item 6: JSON of strings that are not UTF-8 ---------------------------------------------

    void jsonOutputSurvivesInvalidUtf8()
    {
        QCOMPARE(escapeInvalidUtf8("caf\xe9 \xc3\xa9 \xf0\x9f\x99\x82 \xed\xa0\x80 \xc3"),
                 std::string("caf\\xE9 \xc3\xa9 \xf0\x9f\x99\x82 \\xED\\xA0\\x80 \\xC3"));
        const json repaired = withValidUtf8(json{{"k\xff", {"\xe2\x82", 1}}});
        QCOMPARE(repaired.dump(), std::string(R"({"k\\xFF":["\\xE2\\x82",1]})"));

        // A Latin-1 folder name, passed as raw bytes through the shell.
        const std::string root = makeTempDir("hostile-latin1");
        const std::string folder = root + "/caf\xe9";
        QVERIFY(::mkdir(folder.c_str(), 0755) == 0);
        for (const char* name : {"config.json", "model.safetensors", "vocab.json", "merges.txt"})
            writeAll(folder + "/" + name, readAll(floatDir_ + "/" + name));
        const CliResult r = runProgram("/bin/sh", {"-c", "exec \"$0\" inspect \"$1/$(printf 'caf\\351')\" --json",
                                                   QStringLiteral(SCALESCOPE_CLI), q(root)});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const json document = json::parse(r.rawOut.toStdString());
        QCOMPARE(document["checkpoint"].get<std::string>(), root + "/caf\\xE9");
    }

    void fillMaskJsonKeepsPartialUtf8Tokens()
    {
        const QString demo = QStringLiteral(SCALESCOPE_DEMO_DIR) + "/mlm-fp8";
        if (!QFileInfo::exists(demo))
            QSKIP("the demo MLM is absent");
        const CliResult r = runCli({"fill-mask", demo, "--text", "The capital of France is <mask>.", "--top-k", "50", "--json"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const json out = json::parse(r.out.toStdString());
        QCOMPARE(out["masks"][0].size(), std::size_t(50));
    }

    // ---- item 8: evaluate --csv ----------------------------------------------------------------

    void evaluateChecksCsvBeforeTheRun()
    {
        const std::string dir = makeTempDir("hostile-csv");
        const std::string squad = dir + "/squad.json";
        writeAll(squad, R"({"version":"1.1","data":[{"title":"t","paragraphs":[{"context":"Paris is the capital of France",
            "qas":[{"id":"q1","question":"what is the capital","answers":[{"text":"Paris","answer_start":0}]}]}]}]})");
        QVERIFY(QDir().mkpath(q(dir + "/folder.csv")));
        QCOMPARE(::symlink((dir + "/nowhere").c_str(), (dir + "/dangling.csv").c_str()), 0);
        QCOMPARE(::mknod((dir + "/device.csv").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
        for (const char* name : {"folder.csv", "dangling.csv", "device.csv"}) {
            for (bool force : {false, true}) {
                QStringList args = {"evaluate", q(floatDir_), "--squad", q(squad), "--max-seq-len", "128", "--doc-stride", "64", "--csv",
                                    q(dir + "/" + name), "--json"};
                if (force)
                    args << "--force";
                const CliResult r = runCli(args);
                QCOMPARE(r.exitCode, 1);
                QVERIFY2(r.out.isEmpty(), "refused before the run, so nothing was evaluated");
                QVERIFY2(r.err.contains(name), qPrintable(r.err));
            }
        }
        QCOMPARE(typeOf(dir + "/dangling.csv"), mode_t(S_IFLNK));
        QCOMPARE(typeOf(dir + "/device.csv"), mode_t(S_IFCHR));
        const CliResult ok = runCli({"evaluate", q(floatDir_), "--squad", q(squad), "--max-seq-len", "128", "--doc-stride", "64", "--csv",
                                     q(dir + "/out.csv"), "--json"});
        QVERIFY2(ok.exitCode == 0, qPrintable(ok.err));
        QCOMPARE(json::parse(ok.out.toStdString())["csv"].get<std::string>(), dir + "/out.csv");
    }

    void evaluateKeepsItsResultsWhenTheCsvWriteFails()
    {
        // The path passes every check before the run; writing it fails afterwards, as on a full
        // disk: a file size limit of 1 KiB (SIGXFSZ ignored, so the write returns EFBIG).
        const std::string dir = makeTempDir("hostile-csv-full");
        json squad = {{"version", "1.1"}, {"data", json::array()}};
        json qas = json::array();
        for (int i = 0; i < 40; ++i)
            qas.push_back({{"id", "question-" + std::to_string(i)},
                           {"question", "what is the capital"},
                           {"answers", {{{"text", "Paris"}, {"answer_start", 0}}}}});
        squad["data"].push_back(
            {{"title", "t"}, {"paragraphs", {{{"context", "Paris is the capital of France"}, {"qas", qas}}}}});
        writeAll(dir + "/squad.json", squad.dump());
        const std::string csv = dir + "/out.csv";
        const CliResult r = runProgram("/bin/sh", {"-c", "trap '' XFSZ; ulimit -f 1; exec \"$0\" evaluate \"$1\" --squad "
                                                         "\"$2\" --max-seq-len 128 --doc-stride 64 --csv \"$3\" --json",
                                                   QStringLiteral(SCALESCOPE_CLI), q(floatDir_), q(dir + "/squad.json"),
                                                   q(csv)});
        QVERIFY2(!r.crashed, "evaluate crashed");
        QCOMPARE(r.exitCode, 1);
        const json document = json::parse(r.out.toStdString());
        QCOMPARE(document["questions"]["evaluated"].get<int>(), 40);
        QVERIFY(document["csv"].is_null());
        QVERIFY(document["csv_error"].is_string());
        QVERIFY2(r.err.contains("only the CSV is missing"), qPrintable(r.err));
        // Nothing under the CSV's name, and no temporary left behind.
        QCOMPARE(QDir(q(dir)).entryList(QDir::Files | QDir::Hidden | QDir::System), QStringList{"squad.json"});
    }

    // ---- item 12: terminal escapes, spreadsheet formulas, exit codes ----------------------------

    void terminalEscapesAreShownNotSent()
    {
        QCOMPARE(terminalSafe("ok \x1b[31mred\x1b[0m \xc2\x9b" "2J \x07 caf\xc3\xa9\n"),
                 std::string("ok \\x1B[31mred\\x1B[0m \\xC2\\x9B2J \\x07 caf\xc3\xa9\\x0A"));
        QCOMPARE(terminalSafe("a\nb", true), std::string("a\nb"));

        const std::string dir = makeTempDir("hostile-escape");
        for (const QString& name : QDir(q(floatDir_)).entryList(QDir::Files))
            QVERIFY(QFile::copy(q(floatDir_) + "/" + name, q(dir) + "/" + name));
        json config = json::parse(readAll(dir + "/config.json"));
        config["quantization_config"] = {{"quant_method", "compressed-tensors"}, {"format", "float-quantized"},
                                         {"config_groups", {{"g\x1b]0;pwned\x07", {{"targets", {"Linear"}}}}}}};
        writeAll(dir + "/config.json", config.dump());
        const CliResult r = runCli({"inspect", q(dir)});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY(!r.out.contains(QChar(0x1b)) && !r.out.contains(QChar(0x07)));
        QVERIFY(r.out.contains("g\\x1B]0;pwned\\x07"));
    }

    void csvCellsNeverStartFormulas()
    {
        QCOMPARE(csvField("=HYPERLINK(\"http://x\")"), std::string("\"'=HYPERLINK(\"\"http://x\"\")\""));
        QCOMPARE(csvField("@SUM(A1)"), std::string("'@SUM(A1)"));
        QCOMPARE(csvField("+1+cmd"), std::string("'+1+cmd"));
        QCOMPARE(csvField("-2+3"), std::string("'-2+3"));
        QCOMPARE(csvField("\tx"), std::string("'\tx"));
        QCOMPARE(csvField("-1.5e-3"), std::string("-1.5e-3"));
        QCOMPARE(csvField("-inf"), std::string("-inf"));
        QCOMPARE(csvField("+7"), std::string("+7"));
        QCOMPARE(csvField("Paris"), std::string("Paris"));
    }

    // ---- issue 30 item 5: inputs that are not regular files, caps, bounded quotes ---------------

    // --squad <(cat f.json) hands over a pipe, whose st_size is 0: it is read to its end.
    void pipesAreReadToTheirEnd()
    {
        int fds[2];
        QCOMPARE(::pipe(fds), 0);
        const std::string text = "{\"version\": \"1.1\", \"data\": []}";
        QCOMPARE(::write(fds[1], text.data(), text.size()), ssize_t(text.size()));
        ::close(fds[1]);
        const std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
        QCOMPARE(readFileToString(path), text);
        ::close(fds[0]);

        // Past the cap, the sentence names the file and the cap.
        QCOMPARE(::pipe(fds), 0);
        QCOMPARE(::write(fds[1], std::string(300, 'x').data(), 300), ssize_t(300));
        ::close(fds[1]);
        const std::string capped = "/proc/self/fd/" + std::to_string(fds[0]);
        QString message;
        try {
            readFileToString(capped, 100);
        } catch (const Error& e) {
            message = e.what();
        }
        ::close(fds[0]);
        QVERIFY2(message.contains(q(capped)) && message.contains("limit of 100 bytes"), qPrintable(message));
    }

    // A FIFO no program writes to once blocked open() forever. The child's alarm is only a
    // backstop so that the old behaviour fails this test instead of hanging it.
    void fifoWithoutWriterIsRefusedNotAwaited()
    {
        const std::string fifo = makeTempDir("hostile-fifo") + "/squad.json";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        int report[2];
        QCOMPARE(::pipe(report), 0);
        const pid_t child = ::fork();
        if (child == 0) {
            ::alarm(60);
            std::string message = "returned";
            try {
                readFileToString(fifo);
            } catch (const Error& e) {
                message = e.what();
            }
            (void)!::write(report[1], message.data(), message.size());
            ::_exit(0);
        }
        ::close(report[1]);
        std::string message;
        char buffer[512];
        for (ssize_t got; (got = ::read(report[0], buffer, sizeof buffer)) > 0;)
            message.append(buffer, static_cast<std::size_t>(got));
        ::close(report[0]);
        int status = 0;
        ::waitpid(child, &status, 0);
        QVERIFY2(WIFEXITED(status), "reading a FIFO without a writer did not return");
        QVERIFY2(message.find(fifo) != std::string::npos && message.find("no program wrote") != std::string::npos,
                 message.c_str());
    }

    // A folder or a FIFO where model.safetensors or a shard belongs is named as what it is.
    void nonFileTensorFilesAreNamed()
    {
        const std::string folder = makeTempDir("hostile-folder-weights");
        QVERIFY(QFile::copy(q(floatDir_) + "/config.json", q(folder) + "/config.json"));
        QVERIFY(QDir().mkdir(q(folder) + "/model.safetensors"));
        QString message;
        try {
            TensorStore::openDirectory(folder);
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains("is a folder") && message.contains("model.safetensors"), qPrintable(message));

        const std::string fifo = makeTempDir("hostile-fifo-weights");
        QCOMPARE(::mkfifo((fifo + "/model.safetensors").c_str(), 0600), 0);
        message.clear();
        try {
            TensorStore::openDirectory(fifo);
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains("a FIFO"), qPrintable(message));

        const std::string sharded = makeTempDir("hostile-fifo-shard");
        writeAll(sharded + "/model.safetensors.index.json", R"({"weight_map": {"w": "model-00001.safetensors"}})");
        QCOMPARE(::mkfifo((sharded + "/model-00001.safetensors").c_str(), 0600), 0);
        message.clear();
        try {
            TensorStore::openDirectory(sharded);
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains("a FIFO") && message.contains("model-00001.safetensors"), qPrintable(message));
    }

    // A 100 KB value in vocab.json is quoted in a few dozen characters, not whole.
    void vocabularyErrorsQuoteBoundedPrefixes()
    {
        const std::string dir = makeTempDir("hostile-vocab-quote");
        const std::string huge(100000, 'z');
        writeAll(dir + "/vocab.json", "{\"<s>\": 0, \"" + huge + "\": \"" + huge + "\"}");
        writeAll(dir + "/merges.txt", "#version: 0.2\n");
        QString message;
        try {
            BpeTokenizer::loadFromFiles(dir + "/vocab.json", dir + "/merges.txt");
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains(q(dir + "/vocab.json")) && message.contains("not to a non-negative integer id"),
                 qPrintable(message.left(300)));
        QVERIFY2(message.size() < 400, qPrintable(QString::number(message.size()) + " characters"));
    }

    void threadSettingIsChecked_data()
    {
        QTest::addColumn<QString>("value");
        QTest::newRow("not a number") << "abc";
        QTest::newRow("beyond the bound") << "100000";
        QTest::newRow("zero") << "0";
        QTest::newRow("trailing text") << "4x";
    }

    void threadSettingIsChecked()
    {
        QFETCH(QString, value);
        QProcess process;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert("SCALESCOPE_THREADS", value);
        process.setProcessEnvironment(environment);
        process.start(QStringLiteral(SCALESCOPE_CLI), {"tokenize", q(floatDir_), "--text", "the cat"});
        QVERIFY(process.waitForFinished(300000));
        const QString err = QString::fromUtf8(process.readAllStandardError());
        QCOMPARE(process.exitStatus(), QProcess::NormalExit);
        QCOMPARE(process.exitCode(), 1);
        QVERIFY2(err.contains("SCALESCOPE_THREADS=\"" + value + "\"") && err.contains("from 1 to 1024"), qPrintable(err));
        QCOMPARE(computeThreadsFromEnvironment("3"), 3);
        QCOMPARE(computeThreadsFromEnvironment(nullptr), 0);
    }

    // Every variable the program reads is checked like SCALESCOPE_THREADS: none is ignored.
    void environmentSettingsAreChecked_data()
    {
        QTest::addColumn<QString>("variable");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("allowed");
        const QString megabytes = "it must be an integer from 0 to 1073741824 (unset, 4096)";
        QTest::newRow("cache size not a number") << "SCALESCOPE_CHECK_CACHE_MB" << "abc" << megabytes;
        QTest::newRow("cache size negative") << "SCALESCOPE_CHECK_CACHE_MB" << "-5" << megabytes;
        QTest::newRow("cache size an expression") << "SCALESCOPE_CHECK_CACHE_MB" << "2^40" << megabytes;
        QTest::newRow("cache size beyond the bound") << "SCALESCOPE_CHECK_CACHE_MB" << "1099511627776" << megabytes;
        QTest::newRow("cache size with a space") << "SCALESCOPE_CHECK_CACHE_MB" << " 64" << megabytes;
        QTest::newRow("fp8 gemm unknown") << "SCALESCOPE_FP8_GEMM" << "bf16-fast"
                                          << "is not one of float32, factored-float32";
        QTest::newRow("fp8 gemm in capitals") << "SCALESCOPE_FP8_GEMM" << "FLOAT32"
                                              << "is not one of float32, factored-float32";
        QTest::newRow("float gemm unknown") << "SCALESCOPE_FLOAT_GEMM" << "cublas" << "is not one of blas, onednn, measure";
    }

    void environmentSettingsAreChecked()
    {
        QFETCH(QString, variable);
        QFETCH(QString, value);
        QFETCH(QString, allowed);
        QProcess process;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(variable, value);
        process.setProcessEnvironment(environment);
        process.start(QStringLiteral(SCALESCOPE_CLI), {"tokenize", q(floatDir_), "--text", "the cat"});
        QVERIFY(process.waitForFinished(300000));
        const QString err = QString::fromUtf8(process.readAllStandardError());
        QCOMPARE(process.exitStatus(), QProcess::NormalExit);
        QCOMPARE(process.exitCode(), 1);
        QVERIFY2(err.startsWith("scalescope-cli: " + variable + "=\"" + value + "\" is not ") && err.contains(allowed),
                 qPrintable(err));
        QCOMPARE(err.count('\n'), 1);
        QVERIFY(process.readAllStandardOutput().isEmpty());
    }

    // What --force cannot fix is said without advising --force, and before any forward runs.
    void forwardOutputProblemsComeFirst()
    {
        const std::string folder = makeTempDir("hostile-output-folder");
        const CliResult toFolder = runCli({"forward", q(floatDir_), "--input-ids", q(ids_), "--output", q(folder)});
        QCOMPARE(toFolder.exitCode, 1);
        QVERIFY2(toFolder.err.contains("a folder") && !toFolder.err.contains("--force"), qPrintable(toFolder.err));
        const CliResult empty = runCli({"forward", q(floatDir_), "--input-ids", q(ids_), "--output", ""});
        QCOMPARE(empty.exitCode, 1);
        QVERIFY2(empty.err.contains("output path is empty"), qPrintable(empty.err));
    }

    // ---- issue 30 item 4: tensors a run leaves unused, and a window the model cannot take ------

    void unusedLayerTensorsAreReported()
    {
        const std::string dir = makeTempDir("hostile-unused-layers");
        TinyModelSpec spec;
        spec.architecture = "RobertaForMaskedLM";
        spec.numLayers = 4;
        writeTinyFloatCheckpoint(dir, spec);
        json config = json::parse(readAll(dir + "/config.json"));
        config["num_hidden_layers"] = 2;
        writeAll(dir + "/config.json", config.dump());

        auto checkpoint = Checkpoint::open(dir);
        QCOMPARE(checkpoint->unusedLayerTensors().size(), std::size_t(32)); // 2 layers of 16 tensors
        const auto findings = diagnoseCheckpoint(*checkpoint, computeScaleStatistics(*checkpoint));
        QVERIFY(hasFinding(findings, "unused-tensors", ""));

        const CliResult fill = runCli({"fill-mask", q(dir), "--text", "the <mask> sat", "--json"});
        QVERIFY2(fill.exitCode == 0, qPrintable(fill.err));
        const std::string note = json::parse(fill.out.toStdString()).value("note", "");
        QVERIFY2(note.find("32 tensors") != std::string::npos && note.find("layers 2 to 3") != std::string::npos,
                 note.c_str());
    }

    // A tokenizer with ids past vocab_size is named with its file when it is loaded, and inspect
    // warns, instead of "token id N is outside the vocabulary" at the first forward.
    void tokenizerBeyondVocabSizeIsNamed()
    {
        const std::string dir = makeTempDir("hostile-tokenizer-ids");
        for (const QString& name : QDir(q(floatDir_)).entryList(QDir::Files))
            QVERIFY(QFile::copy(q(floatDir_) + "/" + name, q(dir) + "/" + name));
        json config = json::parse(readAll(dir + "/config.json"));
        config["vocab_size"] = 10;
        writeAll(dir + "/config.json", config.dump());
        auto checkpoint = Checkpoint::open(dir);
        QString message;
        try {
            checkpoint->tokenizer();
        } catch (const Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains(q(dir + "/vocab.json")) && message.contains("beyond vocab_size 10"), qPrintable(message));
        const auto findings = diagnoseCheckpoint(*checkpoint, computeScaleStatistics(*checkpoint));
        QVERIFY(hasFinding(findings, "tokenizer-vocab-size", dir));
    }

    // A window longer than the 128 tokens the model takes names the option in every command that
    // windows a question (issue 52 item 7: compare and sensitivity said "this model takes at most
    // 128"); a short context still runs with the default 384 on this model.
    void qaWindowBeyondTheModelNamesTheOption_data()
    {
        QTest::addColumn<QStringList>("command");
        // FP8: sensitivity sweeps only a checkpoint with FP8 Linears.
        QTest::newRow("qa") << QStringList{"qa", q(fp8Dir())};
        QTest::newRow("compare") << QStringList{"compare", q(fp8Dir())};
        QTest::newRow("sensitivity") << QStringList{"sensitivity", q(fp8Dir())};
    }
    void qaWindowBeyondTheModelNamesTheOption()
    {
        QFETCH(QStringList, command);
        std::string context;
        for (int i = 0; i < 200; ++i)
            context += "the cat sat on the mat ";
        const CliResult tooLong = runCli(command + QStringList{"--question", "where", "--context", q(context),
                                                               "--max-seq-len", "1000", "--doc-stride", "64"});
        QCOMPARE(tooLong.exitCode, 1);
        QVERIFY2(tooLong.err.contains("--max-seq-len 1000 is longer than the 128 tokens the model takes") &&
                     !tooLong.err.contains("The input has") && !tooLong.err.contains("takes at most"),
                 qPrintable(tooLong.err));
        const CliResult shortContext =
            runCli(command + QStringList{"--question", "where", "--context", "the cat sat on the mat", "--json"});
        QVERIFY2(shortContext.exitCode == 0, qPrintable(shortContext.err));
    }

    // sensitivity --squad leaves out a question it cannot window; when the option left out every
    // one, the option is named, not "no question fits".
    void sensitivitySquadBeyondTheModelNamesTheOption()
    {
        std::string context;
        for (int i = 0; i < 200; ++i)
            context += "the cat sat on the mat ";
        json question = {{"id", "q1"}, {"question", "where"}};
        question["answers"] = json::array({json{{"text", "cat"}, {"answer_start", 4}}});
        json paragraph = {{"context", context}};
        paragraph["qas"] = json::array({question});
        json article = {{"title", "t"}};
        article["paragraphs"] = json::array({paragraph});
        json squad = {{"version", "1.1"}};
        squad["data"] = json::array({article});
        const std::string path = makeTempDir("hostile-squad") + "/long.json";
        writeAll(path, squad.dump());
        const CliResult r = runCli({"sensitivity", q(fp8Dir()), "--squad", q(path), "--max-seq-len", "1000",
                                    "--doc-stride", "64"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("--max-seq-len 1000 is longer than the 128 tokens the model takes"), qPrintable(r.err));
    }

    void badOptionValuesExitTwoEverywhere()
    {
        const std::string dir = makeTempDir("hostile-exit");
        const std::vector<QStringList> usage = {
            {"quantize", q(floatDir_), q(dir + "/a"), "--weights", "bogus"},
            {"quantize", q(floatDir_), q(dir + "/b"), "--scale-dtype", "bogus"},
            {"inspect", q(floatDir_), "--plots", q(dir + "/p"), "--format", "bmp"},
            {"compare", q(floatDir_), "--input-ids", q(ids_), "--plots", q(dir + "/p"), "--format", "bmp"},
        };
        for (const QStringList& args : usage) {
            const CliResult r = runCli(args);
            QVERIFY2(r.exitCode == 2, qPrintable(args.join(' ') + " -> " + QString::number(r.exitCode) + " " + r.err));
        }
        QVERIFY(!QFileInfo::exists(q(dir + "/a")) && !QFileInfo::exists(q(dir + "/p")));
    }
};

QTEST_GUILESS_MAIN(TestHostileInputs)
#include "test_hostile_inputs.moc"
