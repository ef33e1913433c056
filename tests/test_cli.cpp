// scalescope-cli end to end, as a script would use it: a real child process on generated
// checkpoints, JSON read back, safetensors outputs read back, and every kind of bad input giving
// one clear sentence on stderr with a non-zero exit code.
#include <QtTest>

#include <QCryptographicHash>
#include <QImage>
#include <QXmlStreamReader>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "support/cli_process.h"
#include "support/fixtures.h"
#include "support/reference_forward.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

json runJson(const QStringList& args)
{
    const CliResult r = runCli(args);
    if (r.exitCode != 0 || r.crashed)
        throw std::runtime_error("cli failed: " + r.err.toStdString());
    return json::parse(r.out.toStdString());
}

std::vector<float> readTensor(const std::string& file, const std::string& name)
{
    auto store = TensorStore::openFile(file);
    return store->require(name).toFloat().values;
}

double sqnrDb(const std::vector<float>& x, const std::vector<float>& reference)
{
    double signal = 0, noise = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        signal += double(reference[i]) * reference[i];
        noise += (double(reference[i]) - x[i]) * (double(reference[i]) - x[i]);
    }
    return noise == 0 ? INFINITY : 10 * std::log10(signal / noise);
}

QString q(const std::string& s) { return QString::fromStdString(s); }

void copyFolder(const std::string& from, const std::string& to)
{
    QDir().mkpath(q(to));
    for (const QString& name : QDir(q(from)).entryList(QDir::Files))
        QFile::copy(q(from) + "/" + name, q(to) + "/" + name);
}

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

} // namespace

class TestCli : public QObject {
    Q_OBJECT
    std::string floatDir_;
    std::string fp8Dir_;
    std::string ids_ = "0,280,281,100,290,77,45,2";

private slots:
    void initTestCase()
    {
        TinyModelSpec spec;
        floatDir_ = makeTempDir("cli-float");
        writeTinyFloatCheckpoint(floatDir_, spec);
        fp8Dir_ = makeTempDir("cli-fp8") + "/model";
        const CliResult r = runCli({"quantize", q(floatDir_), q(fp8Dir_), "--weights", "channel", "--activations", "token"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const json config = json::parse(readAll(fp8Dir_ + "/config.json"));
        QCOMPARE(config["quantization_config"]["config_groups"]["group_0"]["weights"]["strategy"].get<std::string>(),
                 std::string("channel"));
    }

    void versionAndUsage()
    {
        const CliResult version = runCli({"--version"});
        QCOMPARE(version.exitCode, 0);
        QVERIFY(version.out.startsWith("scalescope-cli "));
        // The second line says which FP8 GEMM path runs; the environment can force the float32 one.
        QVERIFY2(version.out.contains("\nFP8 GEMM: "), qPrintable(version.out));
        QProcess forced;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert("SCALESCOPE_FP8_GEMM", "float32");
        forced.setProcessEnvironment(environment);
        forced.start(QStringLiteral(SCALESCOPE_CLI), {"--version"});
        QVERIFY(forced.waitForFinished(60000));
        QVERIFY(QString::fromUtf8(forced.readAllStandardOutput()).contains("FP8 GEMM: float32 on dequantized values"));
        const CliResult unknown = runCli({"frobnicate"});
        QCOMPARE(unknown.exitCode, 2);
        const CliResult badOption = runCli({"qa", q(fp8Dir_), "--question", "x", "--context", "y", "--bogus", "1"});
        QCOMPARE(badOption.exitCode, 2);
        QVERIFY(badOption.err.contains("--bogus"));
    }

    // The third line of --version names the float32 GEMM and how it was chosen: measured the first
    // time on a machine (kept in the cache folder), read from the cache after that, measured again
    // when the cache is damaged, or forced by SCALESCOPE_FLOAT_GEMM. The measurement runs on the
    // threads SCALESCOPE_THREADS asks for, as every other command does (it once ran on LibTorch's
    // default of one and was kept for runs on two).
    void versionNamesTheFloatGemm()
    {
        const QString cache = QString::fromStdString(makeTempDir("float-gemm-cache"));
        auto version = [&](const QString& forced) {
            QProcess process;
            QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
            environment.insert("XDG_CACHE_HOME", cache);
            environment.remove("SCALESCOPE_FLOAT_GEMM");
            environment.insert("SCALESCOPE_THREADS", "2");
            if (!forced.isEmpty())
                environment.insert("SCALESCOPE_FLOAT_GEMM", forced);
            process.setProcessEnvironment(environment);
            process.start(QStringLiteral(SCALESCOPE_CLI), {"--version"});
            return process.waitForFinished(120000) ? QString::fromUtf8(process.readAllStandardOutput()) : QString();
        };
        const QString cacheFile = cache + "/scalescope/float-gemm.json";
        const QString first = version({});
        QVERIFY2(first.contains("\nfloat32 GEMM: ") && first.contains(", measured at 384 x 768/3072:"), qPrintable(first));
        QVERIFY2(first.contains(" onednn ") && first.contains(" blas "), qPrintable(first));
        QVERIFY(QFile::exists(cacheFile));
        const QString second = version({});
        QVERIFY2(second.contains(", cached at 384 x 768/3072:"), qPrintable(second));
        // The path in use is the one the measurement kept.
        const json kept = json::parse(readAll(cacheFile.toStdString()));
        const bool blas = kept.begin().value()["path"] == "blas";
        QCOMPARE(kept.begin().value()["threads"].get<int>(), 2);
        QCOMPARE(kept.begin().value()["measured"].get<std::string>(), std::string("float32 layer"));
        QVERIFY2(second.contains(blas ? "float32 GEMM: BLAS (" : "float32 GEMM: oneDNN "), qPrintable(second));
        QFile damaged(cacheFile);
        QVERIFY(damaged.open(QIODevice::WriteOnly | QIODevice::Truncate));
        damaged.write("{\"not\": json");
        damaged.close();
        QVERIFY2(version({}).contains(", measured at"), "a damaged cache is measured again");
        QVERIFY(json::parse(readAll(cacheFile.toStdString())).is_object());
        const QString forcedBlas = version("blas");
        QVERIFY2(forcedBlas.contains("float32 GEMM: BLAS (") && forcedBlas.contains("SCALESCOPE_FLOAT_GEMM"),
                 qPrintable(forcedBlas));
        QVERIFY2(version("onednn").contains("float32 GEMM: oneDNN "), "forced oneDNN");
    }

    // Processes started together on one machine make one measurement and keep its choice: the
    // first measures while the others wait for it and read the cache (the CPU runner's float32 bits
    // match the workbench's only when both run the same path).
    void concurrentStartsAgreeOnTheFloatGemm()
    {
        const QString cache = QString::fromStdString(makeTempDir("float-gemm-together"));
        std::vector<std::unique_ptr<QProcess>> processes;
        for (int i = 0; i < 3; ++i) {
            auto process = std::make_unique<QProcess>();
            QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
            environment.insert("XDG_CACHE_HOME", cache);
            environment.remove("SCALESCOPE_FLOAT_GEMM");
            environment.insert("SCALESCOPE_THREADS", "2");
            process->setProcessEnvironment(environment);
            process->start(QStringLiteral(SCALESCOPE_CLI), {"--version"});
            QVERIFY(process->waitForStarted());
            processes.push_back(std::move(process));
        }
        int measured = 0, cached = 0;
        QStringList paths;
        for (auto& process : processes) {
            QVERIFY(process->waitForFinished(180000));
            QCOMPARE(process->exitCode(), 0);
            const QString out = QString::fromUtf8(process->readAllStandardOutput());
            measured += out.contains(", measured at 384 x 768/3072:");
            cached += out.contains(", cached at 384 x 768/3072:");
            const int at = out.indexOf("float32 GEMM: ");
            QVERIFY2(at >= 0, qPrintable(out));
            paths << out.mid(at, out.indexOf(' ', at + 14) - at);
        }
        QCOMPARE(measured, 1);
        QCOMPARE(cached, 2);
        QVERIFY2(paths.count(paths.front()) == 3, qPrintable(paths.join(" | ")));
        const json kept = json::parse(readAll((cache + "/scalescope/float-gemm.json").toStdString()));
        QCOMPARE(kept.size(), std::size_t(1));
        QVERIFY2(paths.front().contains(kept.begin().value()["path"] == "blas" ? "BLAS" : "oneDNN"),
                 qPrintable(paths.front()));
    }

    void tokenizeJson()
    {
        const json out = runJson({"tokenize", q(fp8Dir_), "--text", "the cat sat", "--json"});
        const auto ids = out["input_ids"].get<std::vector<int64_t>>();
        QCOMPARE(ids.front(), int64_t(0));
        QCOMPARE(ids.back(), int64_t(2));
        QCOMPARE(out["offsets"].size(), ids.size());
        // Each word token's offsets select that word in the text.
        const std::string text = "the cat sat";
        const std::vector<std::string> words = {"the", "cat", "sat"};
        QCOMPARE(ids.size(), std::size_t(5));
        for (std::size_t i = 0; i < 3; ++i) {
            const int start = out["offsets"][i + 1][0], end = out["offsets"][i + 1][1];
            QCOMPARE(text.substr(std::size_t(start), std::size_t(end - start)), words[i]);
        }
        const json pair = runJson({"tokenize", q(fp8Dir_), "--text", "where", "--pair", "on the mat", "--json"});
        const auto pairIds = pair["input_ids"].get<std::vector<int64_t>>();
        QCOMPARE(pairIds.size(), std::size_t(1 + 1 + 2 + 3 + 1)); // <s> Q </s></s> C(3) </s>
        QCOMPARE(pair["offsets"][5][0].get<int>(), 3);            // "the" in the second text
    }

    void fp8DequantReferenceDiffer()
    {
        const std::string out = makeTempDir("cli-forward");
        for (const char* mode : {"fp8", "dequant"}) {
            const CliResult r = runCli({"forward", q(fp8Dir_), "--input-ids", q(ids_), "--mode", mode, "--capture", "all",
                                        "--output", q(out + "/" + mode + ".safetensors")});
            QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        }
        const CliResult ref = runCli({"forward", q(fp8Dir_), "--input-ids", q(ids_), "--mode", "reference", "--reference",
                                      q(floatDir_), "--output", q(out + "/reference.safetensors"), "--json"});
        QVERIFY2(ref.exitCode == 0, qPrintable(ref.err));
        const CliResult standIn = runCli({"forward", q(fp8Dir_), "--input-ids", q(ids_), "--mode", "reference",
                                          "--output", q(out + "/standin.safetensors"), "--json"});
        QVERIFY(json::parse(standIn.out.toStdString()).contains("note"));

        for (const char* name : {"start_logits", "end_logits"}) {
            const auto fp8 = readTensor(out + "/fp8.safetensors", name);
            const auto dequant = readTensor(out + "/dequant.safetensors", name);
            const auto reference = readTensor(out + "/reference.safetensors", name);
            const double vsDequant = sqnrDb(fp8, dequant);
            const double vsReference = sqnrDb(fp8, reference);
            const double dequantVsReference = sqnrDb(dequant, reference);
            qInfo("%s SQNR: fp8 vs dequant %.2f dB, fp8 vs reference %.2f dB, dequant vs reference %.2f dB", name,
                  vsDequant, vsReference, dequantVsReference);
            // Small but non-zero: finite SQNR, well above noise level.
            QVERIFY(std::isfinite(vsDequant) && vsDequant > 15);
            QVERIFY(std::isfinite(vsReference) && vsReference > 15);
        }
        // Captures are in the file under their module names.
        auto store = TensorStore::openFile(out + "/fp8.safetensors");
        QVERIFY(store->find("roberta.encoder.layer.0.attention.self.query.input"));
        QVERIFY(store->find("roberta.encoder.layer.1.output"));
        QVERIFY(store->find("roberta.embeddings.output"));
    }

    void perTensorLosesToPerChannelOnOutliers()
    {
        TinyModelSpec spec;
        spec.outlierChannels = {3, 17};
        spec.outlierFactor = 30.0f;
        const std::string floatDir = makeTempDir("cli-outlier");
        writeTinyFloatCheckpoint(floatDir, spec);
        const std::string base = makeTempDir("cli-outlier-q");
        const std::string query = "roberta.encoder.layer.0.attention.self.query";
        std::map<std::string, double> sqnr;
        for (const char* weights : {"channel", "tensor"}) {
            const std::string dst = base + "/" + weights;
            QCOMPARE(runCli({"quantize", q(floatDir), q(dst), "--weights", weights, "--activations", "none"}).exitCode, 0);
            const std::string fp8 = base + "/" + weights + ".safetensors";
            QCOMPARE(runCli({"forward", q(dst), "--input-ids", q(ids_), "--capture", q(query + ",roberta.encoder.layer.1"),
                             "--output", q(fp8)}).exitCode, 0);
            const std::string reference = base + "/ref-" + weights + ".safetensors";
            QCOMPARE(runCli({"forward", q(dst), "--input-ids", q(ids_), "--mode", "reference", "--reference", q(floatDir),
                             "--capture", q(query + ",roberta.encoder.layer.1"), "--output", q(reference)}).exitCode, 0);
            for (const std::string& name : {query + ".output", std::string("roberta.encoder.layer.1.output"), std::string("start_logits")}) {
                sqnr[std::string(weights) + " " + name] = sqnrDb(readTensor(fp8, name), readTensor(reference, name));
                qInfo("outliers x30, weights per %s: %s SQNR %.2f dB", weights, name.c_str(), sqnr[std::string(weights) + " " + name]);
            }
        }
        QVERIFY(sqnr["tensor " + query + ".output"] < sqnr["channel " + query + ".output"] - 3);
        QVERIFY(sqnr["tensor roberta.encoder.layer.1.output"] < sqnr["channel roberta.encoder.layer.1.output"] - 3);
        // The final logits are reported, not asserted: the float head and the last LayerNorm can mask
        // the encoder's error on a model this small.
    }

    // Numbers for the report: per-Linear output SQNR against the float model on input-channel
    // outliers, for tensor, channel and block weights, and for token and group activations.
    void blockAndGroupOnOutliers()
    {
        TinyModelSpec spec;
        spec.outlierChannels = {3, 17};
        spec.outlierFactor = 30.0f;
        const std::string floatDir = makeTempDir("cli-bg-float");
        writeTinyFloatCheckpoint(floatDir, spec);
        const std::string base = makeTempDir("cli-bg");
        const std::string reference = base + "/reference.safetensors";
        QCOMPARE(runCli({"forward", q(floatDir), "--input-ids", q(ids_), "--capture", "all", "--output", q(reference)}).exitCode, 0);
        struct Scheme {
            const char* name;
            QStringList args;
        };
        const std::vector<Scheme> schemes = {
            {"tensor", {"--weights", "tensor", "--activations", "none"}},
            {"channel", {"--weights", "channel", "--activations", "none"}},
            {"block32x32", {"--weights", "block", "--block", "32x32", "--activations", "none"}},
            {"block8x8", {"--weights", "block", "--block", "8x8", "--activations", "none"}},
            {"channel+token", {"--weights", "channel", "--activations", "token"}},
            {"channel+group8", {"--weights", "channel", "--activations", "group", "--group-size", "8"}},
        };
        const auto linears = Checkpoint::open(floatDir)->layout().linearModules();
        std::map<std::string, std::map<std::string, double>> sqnr; // scheme -> Linear -> dB
        for (const Scheme& scheme : schemes) {
            const std::string dst = base + "/" + scheme.name;
            const CliResult quantized = runCli(QStringList{"quantize", q(floatDir), q(dst)} + scheme.args);
            QVERIFY2(quantized.exitCode == 0, qPrintable(quantized.err));
            const std::string out = dst + ".safetensors";
            QCOMPARE(runCli({"forward", q(dst), "--input-ids", q(ids_), "--capture", "all", "--output", q(out)}).exitCode, 0);
            QString line = QString("%1:").arg(scheme.name, -15);
            for (const std::string& linear : linears) {
                const std::string point = linear + ".output";
                sqnr[scheme.name][linear] = sqnrDb(readTensor(out, point), readTensor(reference, point));
                line += QString(" %1").arg(sqnr[scheme.name][linear], 6, 'f', 1);
            }
            qInfo("%s", qPrintable(line));
        }
        auto mean = [&](const char* scheme) {
            double sum = 0;
            for (const std::string& linear : linears)
                sum += sqnr[scheme][linear];
            return sum / double(linears.size());
        };
        for (const Scheme& scheme : schemes)
            qInfo("mean Linear-output SQNR, %s: %.2f dB", scheme.name, mean(scheme.name));
        // 8x8 blocks give the blocks without an outlier input channel scales of their own; on a
        // 32-wide model a 32x32 block is the whole query weight, so it matches per-tensor there.
        const std::string query = "roberta.encoder.layer.0.attention.self.query";
        QCOMPARE(sqnr["block32x32"][query], sqnr["tensor"][query]);
        QVERIFY(mean("block8x8") > mean("tensor") + 3);
        // E4M3's exponent already spans the range inside a token row (2^-6..448 times its scale),
        // so runs of 8 channels change the rounding but not its relative size: token and group
        // activations land within a few dB of each other.
        QVERIFY(std::fabs(mean("channel+group8") - mean("channel+token")) < 3);
    }

    // quantize --weights block --activations group, read back: every block's scale is the amax of
    // its own elements over 448 (partial last blocks too), every weight is within half an FP8 step
    // of the original, and forward agrees with the independent reference forward.
    void blockGroupRoundTrip()
    {
        const std::string dst = makeTempDir("cli-bg-rt") + "/model";
        const CliResult r = runCli({"quantize", q(floatDir_), q(dst), "--weights", "block", "--block", "12x20",
                                    "--activations", "group", "--group-size", "16", "--json"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const json summary = json::parse(r.out.toStdString());
        QCOMPARE(summary["block_structure"], json({12, 20}));
        QCOMPARE(summary["group_size"], json(16));
        auto source = TensorStore::openDirectory(floatDir_);
        auto quantized = TensorStore::openDirectory(dst);
        int64_t blocks = 0, partialBlocks = 0;
        double worstStepShare = 0;
        for (const std::string& module : Checkpoint::open(dst)->layout().linearModules()) {
            if (module.rfind("roberta.encoder.", 0) != 0)
                continue;
            const TensorView& codes = quantized->require(module + ".weight");
            QCOMPARE(codes.dtype, Dtype::F8_E4M3);
            const int64_t rows = codes.shape[0], columns = codes.shape[1];
            const std::vector<float> w = source->require(module + ".weight").toFloat().values;
            const TensorView& scaleView = quantized->require(module + ".weight_scale");
            QCOMPARE(scaleView.shape, (std::vector<int64_t>{(rows + 11) / 12, (columns + 19) / 20}));
            const std::vector<float> scales = scaleView.toFloat().values;
            for (int64_t br = 0; br * 12 < rows; ++br)
                for (int64_t bc = 0; bc * 20 < columns; ++bc) {
                    ++blocks;
                    partialBlocks += (br + 1) * 12 > rows || (bc + 1) * 20 > columns;
                    const float scale = scales[std::size_t(br * scaleView.shape[1] + bc)];
                    float amax = 0;
                    for (int64_t i = br * 12; i < std::min(rows, (br + 1) * 12); ++i)
                        for (int64_t k = bc * 20; k < std::min(columns, (bc + 1) * 20); ++k)
                            amax = std::max(amax, std::fabs(w[std::size_t(i * columns + k)]));
                    QCOMPARE(scale, amax / 448.0f);
                    for (int64_t i = br * 12; i < std::min(rows, (br + 1) * 12); ++i)
                        for (int64_t k = bc * 20; k < std::min(columns, (bc + 1) * 20); ++k) {
                            const std::size_t at = std::size_t(i * columns + k);
                            const float v = std::fabs(w[at]) / scale;
                            // E4M3 spacing at |v|: 2^(e-3) for normals, 2^-9 below 2^-6.
                            const double step = v < 0.015625f ? std::ldexp(1.0, -9) : std::ldexp(1.0, int(std::floor(std::log2(v))) - 3);
                            const double error = std::fabs(double(referenceDecodeE4M3(codes.data[at])) * scale - w[at]);
                            worstStepShare = std::max(worstStepShare, error / (step * scale));
                        }
                }
        }
        qInfo("%lld blocks (%lld partial); worst |dequantized - original| = %.3f FP8 steps", (long long)blocks,
              (long long)partialBlocks, worstStepShare);
        QVERIFY(partialBlocks > 0);
        QVERIFY(worstStepShare <= 0.5 + 1e-6);

        const std::string out = dst + "-out.safetensors";
        QCOMPARE(runCli({"forward", q(dst), "--input-ids", q(ids_), "--output", q(out)}).exitCode, 0);
        std::vector<int64_t> ids;
        for (const QString& id : q(ids_).split(','))
            ids.push_back(id.toLongLong());
        const auto expected = referenceForward(dst, ids, "fp8");
        const std::vector<float> ours = readTensor(out, "start_logits");
        QVERIFY2(sqnrDb(ours, expected.at("start_logits").values) > 40,
                 qPrintable(QString("start_logits SQNR %1 dB against the reference forward").arg(sqnrDb(ours, expected.at("start_logits").values))));
    }

    // quantize --embeddings fp8 (issue 29 item 2): the word embeddings in F8_E4M3 with one scale per
    // row, amax / 448 of the row, codes the nearest E4M3 value of w / scale (the test's own
    // exhaustive-search rounding), in a weights-only group whose only target is "Embedding"; the
    // checkpoint reopens, runs against the independent reference (the tied decoder on the decoded
    // rows), and inspect shows the table quantized per row. Without the option the table stays float.
    void quantizeWritesFp8EmbeddingsPerRow()
    {
        TinyModelSpec spec;
        spec.architecture = "RobertaForMaskedLM";
        const std::string floatDir = makeTempDir("cli-emb-float");
        writeTinyFloatCheckpoint(floatDir, spec);
        const std::string dst = makeTempDir("cli-emb") + "/model";
        const CliResult r = runCli({"quantize", q(floatDir), q(dst), "--embeddings", "fp8", "--json"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(json::parse(r.out.toStdString())["embeddings"].get<std::string>(), std::string("fp8"));

        const json quantization = json::parse(readAll(dst + "/config.json"))["quantization_config"];
        const json& group = quantization["config_groups"]["group_1"];
        QCOMPARE(group["targets"], json({"Embedding"}));
        QCOMPARE(group["weights"]["strategy"].get<std::string>(), std::string("channel"));
        QCOMPARE(group["weights"]["type"].get<std::string>(), std::string("float"));
        QCOMPARE(group["weights"]["num_bits"].get<int>(), 8);
        QVERIFY(group["input_activations"].is_null());
        QCOMPARE(quantization["config_groups"]["group_0"]["targets"], json({"Linear"}));

        const std::string table = "roberta.embeddings.word_embeddings.weight";
        auto source = TensorStore::openDirectory(floatDir);
        auto quantized = TensorStore::openDirectory(dst);
        const TensorView& codes = quantized->require(table);
        QCOMPARE(codes.dtype, Dtype::F8_E4M3);
        const int64_t rows = codes.shape[0], columns = codes.shape[1];
        const TensorView& scaleView = quantized->require("roberta.embeddings.word_embeddings.weight_scale");
        QCOMPARE(scaleView.dtype, Dtype::F32);
        QCOMPARE(scaleView.shape, (std::vector<int64_t>{rows, 1}));
        const std::vector<float> scales = scaleView.toFloat().values;
        const std::vector<float> w = source->require(table).toFloat().values;
        int64_t distinctScales = 0;
        for (int64_t row = 0; row < rows; ++row) {
            float amax = 0;
            for (int64_t c = 0; c < columns; ++c)
                amax = std::max(amax, std::fabs(w[std::size_t(row * columns + c)]));
            const float scale = amax > 0 ? amax / 448.0f : 1.0f;
            QCOMPARE(scales[std::size_t(row)], scale);
            distinctScales += row > 0 && scales[std::size_t(row)] != scales[std::size_t(row - 1)];
            for (int64_t c = 0; c < columns; ++c) {
                const std::size_t at = std::size_t(row * columns + c);
                const float expected = referenceRoundToE4M3(w[at] / scale);
                if (referenceDecodeE4M3(codes.data[at]) != expected)
                    QFAIL(qPrintable(QString("row %1 column %2: code %3 decodes to %4, expected %5")
                                         .arg(row).arg(c).arg(codes.data[at]).arg(referenceDecodeE4M3(codes.data[at])).arg(expected)));
            }
        }
        QVERIFY(distinctScales > rows / 2); // per row, not one scale copied
        // Default quantize leaves the table float (the suite's shared checkpoint was made without the option).
        QCOMPARE(TensorStore::openDirectory(fp8Dir_)->require(table).dtype, Dtype::F32);

        const std::string out = dst + "-out.safetensors";
        QCOMPARE(runCli({"forward", q(dst), "--input-ids", q(ids_), "--output", q(out)}).exitCode, 0);
        std::vector<int64_t> ids;
        for (const QString& id : q(ids_).split(','))
            ids.push_back(id.toLongLong());
        const auto expected = referenceForward(dst, ids, "fp8");
        const double sqnr = sqnrDb(readTensor(out, "logits"), expected.at("logits").values);
        QVERIFY2(sqnr > 40, qPrintable(QString("logits SQNR %1 dB against the reference forward").arg(sqnr)));

        const json inspected = runJson({"inspect", q(dst), "--json"});
        const json& embeddings = inspected["word_embeddings"];
        QVERIFY(embeddings["quantized"].get<bool>());
        QCOMPARE(embeddings["scale_strategy"].get<std::string>(), std::string("per row"));
        QCOMPARE(embeddings["group"].get<std::string>(), std::string("group_1"));
        QCOMPARE(embeddings["statistics"]["channel_scales"].size(), std::size_t(rows));
        QCOMPARE(embeddings["statistics"]["scale_min"].get<float>(), *std::min_element(scales.begin(), scales.end()));
        QCOMPARE(inspected["summary"]["errors"].get<int>(), 0);
        bool aiuNamed = false;
        for (const json& finding : inspected["consumers"][0]["findings"])
            aiuNamed = aiuNamed || finding["code"] == "aiu-embedding-fp8";
        QVERIFY(aiuNamed);
        QCOMPARE(inspected["consumers"][0]["verdict"].get<std::string>(), std::string("fails"));
        const CliResult text = runCli({"inspect", q(dst)});
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains("word embeddings roberta.embeddings.word_embeddings: FP8 per row"), qPrintable(text.out));
        QVERIFY2(text.out.contains("aiu-embedding-fp8"), qPrintable(text.out));
        QCOMPARE(runJson({"inspect", q(fp8Dir_), "--json"})["word_embeddings"]["quantized"].get<bool>(), false);

        const CliResult bad = runCli({"quantize", q(floatDir), q(dst + "-bad"), "--embeddings", "int8"});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY(bad.err.contains("--embeddings"));
    }

    void blockAndGroupBadInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("named");
        QTest::newRow("zero block") << QStringList{"--weights", "block", "--block", "0x128"} << 2 << "--block";
        QTest::newRow("negative block") << QStringList{"--weights", "block", "--block", "-8x8"} << 2 << "--block";
        QTest::newRow("one size") << QStringList{"--weights", "block", "--block", "128"} << 2 << "--block";
        QTest::newRow("block without block weights") << QStringList{"--block", "8x8"} << 2 << "--weights block";
        QTest::newRow("zero group") << QStringList{"--activations", "group", "--group-size", "0"} << 2 << "--group-size";
        QTest::newRow("group not dividing") << QStringList{"--activations", "group", "--group-size", "24"} << 1
                                            << "roberta.encoder.layer.0.attention.self.query";
    }
    void blockAndGroupBadInput()
    {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, named);
        const std::string dst = makeTempDir("cli-bg-bad") + "/model";
        const CliResult r = runCli(QStringList{"quantize", q(floatDir_), q(dst)} + args);
        QCOMPARE(r.exitCode, exitCode);
        QVERIFY2(r.err.contains(named), qPrintable(r.err));
        QCOMPARE(r.err.trimmed().count('\n'), 0);
        QVERIFY(!QFileInfo::exists(q(dst)));
    }

    void staticActivationsNeedCalibration()
    {
        const std::string dst = makeTempDir("cli-static") + "/model";
        const CliResult missing = runCli({"quantize", q(floatDir_), q(dst), "--activations", "tensor"});
        QCOMPARE(missing.exitCode, 1);
        QVERIFY(missing.err.contains("--calibration"));
        const std::string calibration = makeTempDir("cli-cal") + "/texts.txt";
        writeAll(calibration, "the cat sat on the mat\nwhere is the dog ?\n");
        const CliResult r = runCli({"quantize", q(floatDir_), q(dst), "--activations", "tensor", "--calibration",
                                    q(calibration), "--scale-dtype", "bfloat16"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        auto store = TensorStore::openDirectory(dst);
        const TensorView& scale = store->require("roberta.encoder.layer.0.attention.self.query.input_scale");
        QCOMPARE(scale.dtype, Dtype::BF16);
        QVERIFY(scale.toFloat().values[0] > 0);
        QCOMPARE(runCli({"forward", q(dst), "--input-ids", q(ids_), "--output", q(dst + "-out.safetensors")}).exitCode, 0);
    }

    void quantizeNeverOverwritesWithoutForce()
    {
        const std::string before = readAll(fp8Dir_ + "/model.safetensors");
        const CliResult again = runCli({"quantize", q(floatDir_), q(fp8Dir_), "--weights", "tensor"});
        QCOMPARE(again.exitCode, 1);
        QVERIFY(again.err.contains("--force"));
        QCOMPARE(readAll(fp8Dir_ + "/model.safetensors"), before);
        // The source is never the destination, and a quantized source is refused.
        QCOMPARE(runCli({"quantize", q(floatDir_), q(floatDir_), "--force"}).exitCode, 1);
        QCOMPARE(runCli({"quantize", q(fp8Dir_), q(makeTempDir("x") + "/y")}).exitCode, 1);
        // forward refuses to replace an output file without --force.
        const std::string out = makeTempDir("cli-out") + "/o.safetensors";
        writeAll(out, "keep me");
        QCOMPARE(runCli({"forward", q(fp8Dir_), "--input-ids", q(ids_), "--output", q(out)}).exitCode, 1);
        QCOMPARE(readAll(out), std::string("keep me"));
        QCOMPARE(runCli({"forward", q(fp8Dir_), "--input-ids", q(ids_), "--output", q(out), "--force"}).exitCode, 0);
    }

    void qaOverSeveralWindows()
    {
        std::string context;
        for (int i = 0; i < 40; ++i)
            context += "the cat sat on the mat . ";
        context += "Paris is the capital of France .";
        const json out = runJson({"qa", q(fp8Dir_), "--question", "what is the capital of France ?", "--context",
                                  q(context), "--max-seq-len", "64", "--doc-stride", "16", "--top-k", "3", "--json"});
        QVERIFY(out["input_ids"].size() > 1);
        QCOMPARE(out["start_logits"].size(), out["input_ids"].size());
        for (std::size_t w = 0; w < out["input_ids"].size(); ++w) {
            QVERIFY(out["input_ids"][w].size() <= 64);
            QCOMPARE(out["start_logits"][w].size(), out["input_ids"][w].size());
        }
        QCOMPARE(out["answers"].size(), std::size_t(3));
        for (const auto& answer : out["answers"]) {
            const int start = answer["start"], end = answer["end"];
            QCOMPARE(answer["text"].get<std::string>(), context.substr(std::size_t(start), std::size_t(end - start)));
        }
        QCOMPARE(out["mode"].get<std::string>(), std::string("fp8"));
    }

    void fillMaskJson()
    {
        TinyModelSpec spec;
        spec.architecture = "RobertaForMaskedLM";
        const std::string dir = makeTempDir("cli-mlm");
        writeTinyFloatCheckpoint(dir, spec);
        const json out = runJson({"fill-mask", q(dir), "--text", "the cat <mask> on the mat", "--top-k", "4", "--json"});
        QCOMPARE(out["masks"].size(), std::size_t(1));
        QCOMPARE(out["masks"][0].size(), std::size_t(4));
        double previous = 1.0;
        for (const auto& p : out["masks"][0]) {
            QVERIFY(p.contains("token_id") && p.contains("token"));
            const double probability = p["probability"];
            QVERIFY(probability <= previous && probability > 0);
            previous = probability;
        }
    }

    void inspectReportsSchemeStatisticsAndDiagnostics()
    {
        const json out = runJson({"inspect", q(fp8Dir_), "--json"});
        QCOMPARE(out["architecture"].get<std::string>(), std::string("RobertaForQuestionAnswering"));
        QCOMPARE(out["summary"]["errors"].get<int>(), 0);
        QCOMPARE(out["linears"].size(), std::size_t(2 * 6 + 1)); // 2 layers x 6 Linears + qa_outputs
        const json& query = out["linears"][0];
        QCOMPARE(query["module"].get<std::string>(), std::string("roberta.encoder.layer.0.attention.self.query"));
        QVERIFY(query["quantized"].get<bool>());
        QCOMPARE(query["channel_scales"].size(), std::size_t(32));
        // The reported minimum is the smallest stored scale, read here independently.
        auto store = TensorStore::openDirectory(fp8Dir_);
        const auto scales = store->require("roberta.encoder.layer.0.attention.self.query.weight_scale").toFloat().values;
        QCOMPARE(query["scale_min"].get<float>(), *std::min_element(scales.begin(), scales.end()));
        QVERIFY(out["tensors"].size() > 0);
        QVERIFY(out["schemes"][0]["supported"].get<bool>());
    }

    void inspectReportsConsumersAndFmsNames()
    {
        const json out = runJson({"inspect", q(fp8Dir_), "--json"});
        QCOMPARE(out["consumers"].size(), std::size_t(3));
        std::vector<std::string> names;
        for (const json& consumer : out["consumers"]) {
            names.push_back(consumer["name"].get<std::string>());
            QCOMPARE(consumer["verdict"].get<std::string>(), std::string("as intended"));
            QVERIFY(consumer["findings"].is_array());
        }
        QCOMPARE(names, (std::vector<std::string>{"aiu", "vllm", "compressed-tensors"}));
        QCOMPARE(out["consumers"][0]["loadings"]["fused"].get<std::string>(), std::string("as intended"));
        const json& query = out["linears"][0];
        QCOMPARE(query["fms_name"].get<std::string>(), std::string("base_model.layers.0.attn.in_proj.query"));
        QCOMPARE(query["fms_fused_name"].get<std::string>(), std::string("base_model.layers.0.attn.in_proj.qkv_fused"));
        QCOMPARE(out["linears"][out["linears"].size() - 1]["fms_name"].get<std::string>(), std::string("qa_head"));
        bool scaleNamed = false;
        for (const json& tensor : out["tensors"])
            if (tensor["name"] == "roberta.encoder.layer.1.intermediate.dense.weight_scale")
                scaleNamed = tensor["fms_name"] == "base_model.layers.1.ff_sub_layer.w1.weight_scale";
        QVERIFY(scaleNamed);
        const CliResult text = runCli({"inspect", q(fp8Dir_)});
        QCOMPARE(text.exitCode, 0);
        QVERIFY(text.out.contains("Consumers:\n  aiu: as intended (fused: as intended, unfused: as intended)"));
    }

    void keepFloatForEveryConsumerOnABf16Checkpoint()
    {
        const std::string root = makeTempDir("cli-keep-bf16");
        const std::string source = root + "/bf16";
        Fp8Scheme scheme;
        scheme.scaleDtype = "BF16";
        writeTinyFp8Checkpoint(floatDir_, source, scheme);
        storeFloatTensorsAs(source, "BF16");

        // One of q/k/v alone: vLLM packs them, so --consumer vllm refuses with one sentence.
        const std::string value = "roberta.encoder.layer.0.attention.self.value";
        const std::string refused = root + "/refused";
        CliResult r = runCli({"keep-float", q(source), q(refused), "--modules", q(value), "--consumer", "vllm"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.trimmed().count('\n') == 0 && r.err.contains("keep all three"), qPrintable(r.err));
        QVERIFY(!QFileInfo::exists(q(refused)));
        r = runCli({"keep-float", q(source), q(refused), "--modules", q(value), "--consumer", "gpu"});
        QCOMPARE(r.exitCode, 2);

        const std::string module = "roberta.encoder.layer.0.intermediate.dense";
        const std::string kept = root + "/kept";
        const json doc = runJson({"keep-float", q(source), q(kept), "--modules", q(module), "--reference", q(floatDir_),
                                  "--input-ids", q(ids_), "--json"});
        QCOMPARE(doc["weight_dtype"].get<std::string>(), std::string("BF16"));
        QVERIFY(doc["after"]["sqnr_db"].is_number());
        const auto ignore = doc["ignore"].get<std::vector<std::string>>();
        for (const std::string& name : {module, std::string("base_model.layers.0.ff_sub_layer.w1")})
            QVERIFY2(std::find(ignore.begin(), ignore.end(), name) != ignore.end(), name.c_str());
        // The kept weight is the float reference rounded to bf16 (the test's own rounding).
        const auto written = TensorStore::openDirectory(kept);
        QCOMPARE(written->require(module + ".weight").dtype, Dtype::BF16);
        const std::vector<float> keptValues = written->require(module + ".weight").toFloat().values;
        const std::vector<float> reference = readTensor(floatDir_ + "/model.safetensors", module + ".weight");
        QCOMPARE(keptValues.size(), reference.size());
        for (std::size_t i = 0; i < reference.size(); ++i) {
            uint32_t bits = 0;
            std::memcpy(&bits, &reference[i], 4);
            bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
            float rounded = 0;
            std::memcpy(&rounded, &bits, 4);
            QCOMPARE(keptValues[i], rounded);
        }
        const json inspected = runJson({"inspect", q(kept), "--json"});
        for (const json& consumer : inspected["consumers"])
            QVERIFY2(consumer["verdict"] == "as intended", consumer.dump().c_str());

        // --consumer aiu --unfused allows value alone; the fused loading then fails, and says so.
        const std::string unfused = root + "/unfused";
        r = runCli({"keep-float", q(source), q(unfused), "--modules", q(value), "--consumer", "aiu", "--unfused"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const json aiu = runJson({"inspect", q(unfused), "--json"})["consumers"][0];
        QCOMPARE(aiu["loadings"]["unfused"].get<std::string>(), std::string("as intended"));
        QCOMPARE(aiu["loadings"]["fused"].get<std::string>(), std::string("fails"));
    }

    // Issue 51: the AIU's fused per-tensor q/k/v. keep-float on a per-tensor checkpoint writes for the
    // unfused loading and says so (loading_note, unfused true), and inspect calls that copy "as
    // intended" with written_for; --per-channel-weights writes one the fused loading takes.
    void keepFloatAppliesTheFusedAiuRemedies()
    {
        const std::string root = makeTempDir("cli-keep-fused");
        const std::string source = root + "/tensor";
        writeTinyFp8Checkpoint(floatDir_, source, {"tensor", "token", "F32"});
        const std::string module = "roberta.encoder.layer.1.output.dense";
        const json before = runJson({"inspect", q(source), "--json"})["consumers"][0];
        QCOMPARE(before["verdict"].get<std::string>(), std::string("fails"));

        const std::string unfused = root + "/unfused";
        const json doc = runJson({"keep-float", q(source), q(unfused), "--modules", q(module), "--json"});
        QCOMPARE(doc["unfused"].get<bool>(), true);
        QVERIFY2(doc["loading_note"].get<std::string>().find("--unfuse_weights") != std::string::npos, doc.dump().c_str());
        const json aiu = runJson({"inspect", q(unfused), "--json"})["consumers"][0];
        QCOMPARE(aiu["verdict"].get<std::string>(), std::string("as intended"));
        QCOMPARE(aiu["written_for"].get<std::string>(), std::string("unfused"));
        QCOMPARE(aiu["loadings"]["fused"].get<std::string>(), std::string("fails"));
        const CliResult text = runCli({"inspect", q(unfused)});
        QVERIFY2(text.out.contains("aiu: as intended (written for the unfused loading; fused: fails, unfused: as intended)"),
                 qPrintable(text.out));

        const std::string channel = root + "/channel";
        const json expanded = runJson({"keep-float", q(source), q(channel), "--modules", q(module), "--per-channel-weights", "--json"});
        QCOMPARE(expanded["unfused"].get<bool>(), false);
        QVERIFY(expanded["loading_note"].is_null());
        for (const json& consumer : runJson({"inspect", q(channel), "--json"})["consumers"])
            QVERIFY2(consumer["verdict"] == "as intended" && !consumer.contains("written_for"), consumer.dump().c_str());
    }

    // Issue 51: keep-float records what its copy was verified against in scalescope_provenance.json
    // (the source and its files' sizes and SHA-256, the reference, the Linears kept float, the rerun's
    // before/after numbers and inputs, the tool's version), and inspect shows it in text and JSON.
    void keepFloatRecordsItsProvenanceAndInspectShowsIt()
    {
        const std::string root = makeTempDir("cli-provenance");
        const std::string source = root + "/source";
        writeTinyFp8Checkpoint(floatDir_, source, {"channel", "token", "F32"});
        const std::string module = "roberta.encoder.layer.1.output.dense";
        const std::string kept = root + "/kept";
        const json doc = runJson({"keep-float", q(source), q(kept), "--modules", q(module), "--reference", q(floatDir_),
                                  "--input-ids", q(ids_), "--json"});
        QVERIFY2(QFileInfo::exists(q(kept + "/scalescope_provenance.json")), "keep-float wrote no provenance file");
        const json provenance = json::parse(readAll(kept + "/scalescope_provenance.json"));
        QCOMPARE(provenance["source"]["path"].get<std::string>(), std::filesystem::canonical(source).string());
        QCOMPARE(provenance["reference"].get<std::string>(), std::filesystem::canonical(floatDir_).string());
        QCOMPARE(provenance["kept_float"], json::array({module}));
        QVERIFY(!provenance["tool_version"].get<std::string>().empty());
        // Every file of the source by size and SHA-256, hashed here on their own.
        std::size_t files = 0;
        for (const auto& entry : std::filesystem::directory_iterator(source)) {
            const std::string name = entry.path().filename().string();
            bool found = false;
            for (const json& file : provenance["source"]["files"])
                if (file["name"] == name) {
                    found = true;
                    QCOMPARE(file["bytes"].get<std::uint64_t>(), std::uint64_t(entry.file_size()));
                    const QByteArray bytes = QByteArray::fromStdString(readAll(entry.path().string()));
                    QCOMPARE(QString::fromStdString(file["sha256"].get<std::string>()),
                             QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex()));
                }
            QVERIFY2(found, name.c_str());
            ++files;
        }
        QCOMPARE(provenance["source"]["files"].size(), files);
        const json& measurement = provenance["measurement"];
        QCOMPARE(measurement["before"]["sqnr_db"], doc["before"]["sqnr_db"]);
        QCOMPARE(measurement["after"]["sqnr_db"], doc["after"]["sqnr_db"]);
        QVERIFY(measurement["inputs"].contains("input_ids"));

        const json inspected = runJson({"inspect", q(kept), "--json"});
        QCOMPARE(inspected["provenance"], provenance);
        QVERIFY(runJson({"inspect", q(source), "--json"})["provenance"].is_null());
        const CliResult text = runCli({"inspect", q(kept)});
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains("Provenance") && text.out.contains(q(std::filesystem::canonical(source).string()) + " (unchanged since)") &&
                     text.out.contains("kept float: " + q(module)),
                 qPrintable(text.out));
    }

    void compareWritesPlotsInEveryFormat_data()
    {
        QTest::addColumn<QString>("format");
        QTest::newRow("png") << "png";
        QTest::newRow("pdf") << "pdf";
        QTest::newRow("svg") << "svg";
    }
    void compareWritesPlotsInEveryFormat()
    {
        QFETCH(QString, format);
        const std::string plots = makeTempDir("cli-plots") + "/plots";
        const json out = runJson({"compare", q(fp8Dir_), "--reference", q(floatDir_), "--question", "where is the cat ?",
                                  "--context", "the cat sat on the mat", "--plots", q(plots), "--format", format, "--json"});
        QCOMPARE(out["points"].size(), std::size_t(1 + 2 * (6 * 2 + 1) + 2)); // embeddings, layers, qa_outputs in/out
        QVERIFY(out["final"]["qa"].contains("same_best_answer"));
        QVERIFY(out["plots"].size() >= 9);
        for (const auto& file : out["plots"]) {
            const std::string path = file.get<std::string>();
            const std::string bytes = readAll(path);
            const auto endsWith = [&](const char* suffix) {
                const std::string s(suffix);
                return path.size() > s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
            };
            if (endsWith(".csv") || endsWith(".json")) {
                QVERIFY2(std::count(bytes.begin(), bytes.end(), '\n') >= 2, path.c_str()); // header and data
                continue;
            }
            QVERIFY2(bytes.size() > 1000, path.c_str());
            if (path.size() > 4 && path.compare(path.size() - 4, 4, ".png") == 0) {
                QImage image(q(path));
                QVERIFY(!image.isNull());
                const QRgb background = image.pixel(0, 0);
                int inked = 0;
                for (int y = 0; y < image.height(); y += 2)
                    for (int x = 0; x < image.width(); x += 2)
                        inked += image.pixel(x, y) != background;
                QVERIFY2(inked > image.width() * image.height() / 400, path.c_str());
            } else if (path.size() > 4 && path.compare(path.size() - 4, 4, ".pdf") == 0) {
                QCOMPARE(bytes.substr(0, 4), std::string("%PDF"));
            } else if (path.size() > 4 && path.compare(path.size() - 4, 4, ".svg") == 0) {
                QXmlStreamReader xml(QByteArray::fromStdString(bytes));
                while (!xml.atEnd())
                    xml.readNext();
                QVERIFY2(!xml.hasError(), path.c_str());
            }
        }
        // Running again into the same folder is refused without --force.
        const CliResult again = runCli({"compare", q(fp8Dir_), "--text", "the cat", "--plots", q(plots), "--format", format});
        QCOMPARE(again.exitCode, 1);
        QVERIFY(again.err.contains("--force"));
    }

    // Each damaged checkpoint gives exit code 1 and one line on stderr naming the file or tensor.
    void badInputGivesOneClearError_data()
    {
        QTest::addColumn<QString>("defect");
        QTest::addColumn<QString>("named");
        QTest::newRow("truncated file") << "truncate" << "model.safetensors";
        QTest::newRow("header length past end") << "header-length" << "model.safetensors";
        QTest::newRow("invalid header json") << "header-json" << "model.safetensors";
        QTest::newRow("offsets outside file") << "offsets" << "model.safetensors";
        QTest::newRow("missing tensor") << "missing-tensor" << "roberta.encoder.layer.1.output.dense.weight";
        QTest::newRow("scale of wrong shape") << "scale-shape" << "weight_scale";
        QTest::newRow("unknown architecture") << "architecture" << "config.json";
        QTest::newRow("missing tokenizer") << "tokenizer" << "tokenizer";
        QTest::newRow("missing folder") << "no-folder" << "nowhere";
    }
    void badInputGivesOneClearError()
    {
        QFETCH(QString, defect);
        QFETCH(QString, named);
        const std::string dir = makeTempDir("cli-bad") + "/model";
        copyFolder(fp8Dir_, dir);
        const std::string weights = dir + "/model.safetensors";
        std::string bytes = readAll(weights);
        uint64_t headerLength = 0;
        std::memcpy(&headerLength, bytes.data(), 8);
        std::string header = bytes.substr(8, headerLength);
        auto rewriteHeader = [&](const json& h) {
            std::string text = h.dump();
            text.resize((text.size() + 7) / 8 * 8, ' ');
            const uint64_t length = text.size();
            std::string data = bytes.substr(8 + headerLength);
            std::string out(8, '\0');
            std::memcpy(out.data(), &length, 8);
            writeAll(weights, out + text + data);
        };
        std::string target = dir;
        if (defect == "truncate") {
            writeAll(weights, bytes.substr(0, bytes.size() / 2));
        } else if (defect == "header-length") {
            const uint64_t length = bytes.size() + 100;
            std::memcpy(bytes.data(), &length, 8);
            writeAll(weights, bytes);
        } else if (defect == "header-json") {
            bytes[8] = '[';
            bytes[9] = '}';
            writeAll(weights, bytes);
        } else if (defect == "offsets") {
            json h = json::parse(header);
            h["roberta.embeddings.LayerNorm.bias"]["data_offsets"] = {bytes.size() * 2, bytes.size() * 2 + 128};
            rewriteHeader(h);
        } else if (defect == "missing-tensor") {
            json h = json::parse(header);
            h.erase("roberta.encoder.layer.1.output.dense.weight");
            rewriteHeader(h);
        } else if (defect == "scale-shape") {
            json h = json::parse(header);
            auto& entry = h["roberta.encoder.layer.0.attention.self.query.weight_scale"];
            const int64_t out = entry["shape"][0];
            entry["shape"] = {1, out}; // same bytes, transposed shape: contradicts strategy channel
            rewriteHeader(h);
        } else if (defect == "architecture") {
            json config = json::parse(readAll(dir + "/config.json"));
            config["architectures"] = {"T5ForConditionalGeneration"};
            writeAll(dir + "/config.json", config.dump());
        } else if (defect == "tokenizer") {
            QFile::remove(q(dir + "/vocab.json"));
        } else if (defect == "no-folder") {
            target = dir + "/nowhere";
        }
        const std::string configBefore = readAll(dir + "/config.json");
        const std::string weightsBefore = readAll(weights);
        const CliResult r = runCli({"qa", q(target), "--question", "what", "--context", "the cat sat", "--json"});
        QVERIFY2(!r.crashed, "the CLI crashed");
        QCOMPARE(r.exitCode, 1);
        QVERIFY(r.out.isEmpty());
        const QString message = r.err.trimmed();
        QVERIFY2(!message.contains('\n'), qPrintable(message));
        QVERIFY2(message.contains(named), qPrintable(message));
        // The checkpoint is never modified by a failed run.
        QCOMPARE(readAll(dir + "/config.json"), configBefore);
        QCOMPARE(readAll(weights), weightsBefore);
    }
    // The fp16 twin from the command line, on a checkpoint with a planted overflow (layer 1's FFN
    // up-projection reaches 100,000 on these ids): forward names where inf starts in fp16 and not in
    // fp8; compare --mode fp16 reports the headroom, the error finding and the headroom plot; a
    // mode that does not exist is a usage error naming the modes.
    void fp16TwinOnTheCommandLine()
    {
        const std::string floatDir = makeTempDir("cli-overflow-float");
        writeTinyFloatCheckpoint(floatDir, TinyModelSpec{});
        const std::string planted = "roberta.encoder.layer.1.intermediate.dense";
        std::vector<int64_t> ids;
        for (const QString& id : q(ids_).split(','))
            ids.push_back(id.toLongLong());
        plantOutputPeak(floatDir, planted, ids);
        const std::string dir = makeTempDir("cli-overflow") + "/model";
        const CliResult made = runCli({"quantize", q(floatDir), q(dir), "--weights", "channel", "--activations", "token"});
        QVERIFY2(made.exitCode == 0, qPrintable(made.err));
        const std::string out = makeTempDir("cli-overflow-out");

        const json twin = runJson({"forward", q(dir), "--input-ids", q(ids_), "--mode", "fp16", "--output",
                                   q(out + "/twin.safetensors"), "--json"});
        QCOMPARE(twin["first_nonfinite"].get<std::string>(), planted);
        QCOMPARE(twin["nonfinite"][0]["module"].get<std::string>(), planted);
        const json fp8 = runJson({"forward", q(dir), "--input-ids", q(ids_), "--output", q(out + "/fp8.safetensors"), "--json"});
        QVERIFY(fp8["first_nonfinite"].is_null());

        const json compared = runJson({"compare", q(dir), "--reference", q(floatDir), "--input-ids", q(ids_), "--mode",
                                       "fp16", "--plots", q(out + "/plots"), "--format", "svg", "--json"});
        QCOMPARE(compared["run"].get<std::string>(), std::string("fp16"));
        QCOMPARE(compared["first_nonfinite"].get<std::string>(), planted);
        // The first capture point holding inf or NaN on the run side, found by the metrics pass.
        const std::string runFirst = compared["final"]["nonfinite"]["run_first"].get<std::string>();
        QVERIFY2(runFirst.rfind(planted + ".", 0) == 0, runFirst.c_str());
        QVERIFY(compared["final"]["nonfinite"]["reference_first"].is_null());
        bool sawPlanted = false;
        for (const json& module : compared["headroom"])
            if (module["module"] == planted) {
                sawPlanted = true;
                QCOMPARE(module["max_abs"].get<std::string>(), std::string("inf"));
                QVERIFY(module["overflows_fp16"].get<bool>());
            } else if (module["module"] == "roberta.embeddings") {
                QVERIFY(module["max_abs"].get<double>() < 65504);
            }
        QVERIFY(sawPlanted);
        bool sawError = false;
        for (const json& finding : compared["findings"])
            sawError = sawError || (finding["code"] == "fp16-activation-overflow" && finding["severity"] == "error" &&
                                    finding["subject"] == planted);
        QVERIFY(sawError);
        QVERIFY(QFile::exists(q(out + "/plots/fp16_headroom.svg")));
        QVERIFY(QFile::exists(q(out + "/plots/fp16_headroom.csv")));

        // Without the twin, compare still forecasts it: the fp8 run's headroom passes 65,504 there.
        const json forecast = runJson({"compare", q(dir), "--input-ids", q(ids_), "--json"});
        bool warned = false;
        for (const json& finding : forecast["findings"])
            warned = warned || (finding["code"] == "fp16-activation-overflow" && finding["severity"] == "warning");
        QVERIFY(warned);
        QVERIFY(forecast["first_nonfinite"].is_null());

        const CliResult bad = runCli({"compare", q(dir), "--input-ids", q(ids_), "--mode", "fp4"});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("--mode must be fp8, dequant or fp16"), qPrintable(bad.err));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
