// The calibration lab (engine/calibration_lab.h) and `scalescope-cli calibrate`, checked against
// what the test computes itself from the float model's captured Linear inputs: static_minmax's
// scale after n samples is max |x| over the first n texts' real tokens / 448 (DESIGN: the running
// max over the calibration set), and an element clips when |x / s| > 448 up to float rounding
// (docs/ARCHITECTURE.md; the threshold is 448 + 4 * 2^-15).
#include <QtTest>

#include <QDir>
#include <QFileInfo>
#include <QProcess>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "engine/calibration_lab.h"
#include "engine/encoder_model.h"
#include "engine/quantize.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "support/cli_process.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

constexpr float kClipThreshold = 448.0f + 4.0f / 32768.0f;

// Per text, per encoder Linear: that Linear's input values [tokens x features] on the float model.
struct Captured {
    int64_t features = 0;
    std::vector<float> values;
};
using TextCaptures = std::map<std::string, Captured>;

std::vector<TextCaptures> captureInputs(const std::string& floatDir, const std::vector<std::string>& texts,
                                        std::vector<std::string>& modules)
{
    std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(floatDir);
    modules.clear();
    for (const LayoutLinear& linear : checkpoint->layout().linears())
        if (checkpoint->layout().isEncoderLinear(linear.module))
            modules.push_back(linear.module);
    std::unique_ptr<EncoderModel> model = EncoderModel::load(checkpoint);
    ForwardOptions options;
    options.mode = RunMode::Dequant;
    for (const std::string& module : modules)
        options.capture.names.push_back(module + ".input");
    std::vector<TextCaptures> out;
    for (const std::string& text : texts) {
        EncoderInputs inputs;
        inputs.addSequence(checkpoint->tokenizer().encode(text)); // short texts: no truncation
        const ForwardResult result = model->forward(inputs, options);
        TextCaptures& captures = out.emplace_back();
        for (const NamedTensor& capture : result.captures) {
            const std::string module = capture.name.substr(0, capture.name.size() - std::string(".input").size());
            captures[module] = {capture.tensor.shape.back(), capture.tensor.values};
        }
    }
    return out;
}

float maxAbs(const std::vector<float>& values)
{
    float m = 0;
    for (float v : values)
        m = std::max(m, std::fabs(v));
    return m;
}

// The documented order k: Fisher-Yates over 0..count-1 with std::mt19937_64 seeded with k.
std::vector<std::size_t> documentedOrder(std::size_t count, int order)
{
    std::vector<std::size_t> indices(count);
    for (std::size_t i = 0; i < count; ++i)
        indices[i] = i;
    if (order == 0)
        return indices;
    std::mt19937_64 random(static_cast<uint64_t>(order));
    for (std::size_t i = count; i > 1; --i)
        std::swap(indices[i - 1], indices[static_cast<std::size_t>(random() % i)]);
    return indices;
}

QString q(const std::string& s) { return QString::fromStdString(s); }

void writeLines(const std::string& path, const std::vector<std::string>& lines)
{
    std::ofstream out(path);
    for (const std::string& line : lines)
        out << line << "\n";
}

} // namespace

class TestCalibrationLab : public QObject {
    Q_OBJECT

    std::string floatDir_;
    std::vector<std::string> calibration_, evaluation_;

private slots:
    void initTestCase()
    {
        floatDir_ = makeTempDir("calib-float");
        TinyModelSpec spec;
        spec.outlierChannels = {3};
        spec.outlierFactor = 6.0f;
        writeTinyFloatCheckpoint(floatDir_, spec);
        // Texts of different lengths and words, so that each one's amax differs.
        calibration_ = {"the cat sat", "Paris is the capital of France", "a dog", "where is the mat ?",
                        "the cat sat on the mat", "what is the capital of France ?", "the dog sat on a cat",
                        "France", "the mat", "a cat is on the mat ? a dog is on the mat", "what", "the capital"};
        evaluation_ = {"the dog is the capital of the cat ?", "Paris Paris Paris", "on the mat sat a dog",
                       "what is France ?", "a cat"};
    }

    void scalesAfterNAreTheRunningMax()
    {
        CalibrationLabOptions options;
        options.calibrationTexts = calibration_;
        options.sizes = {1, 2, 4, 8};
        options.orders = 3;
        const CalibrationLabResult result = runCalibrationLab(floatDir_, options);
        QCOMPARE(result.sizes, (std::vector<int64_t>{1, 2, 4, 8, 12}));
        QCOMPARE(result.calibrationSamples, int64_t(12));

        std::vector<std::string> modules;
        const std::vector<TextCaptures> captures = captureInputs(floatDir_, calibration_, modules);
        QCOMPARE(result.linears.size(), modules.size());
        bool someDiffer = false;
        for (std::size_t l = 0; l < modules.size(); ++l) {
            const CalibrationLinear& linear = result.linears[l];
            QCOMPARE(linear.module, modules[l]);
            std::vector<float> amax;
            for (const TextCaptures& text : captures)
                amax.push_back(maxAbs(text.at(modules[l]).values));
            const float full = *std::max_element(amax.begin(), amax.end()) / 448.0f;
            QCOMPARE(linear.fullScale, full);
            for (int order = 0; order < 3; ++order) {
                const std::vector<std::size_t> indices = documentedOrder(amax.size(), order);
                float running = 0;
                int64_t converged = 0;
                for (std::size_t k = 0; k < indices.size(); ++k) {
                    running = std::max(running, amax[indices[k]]);
                    if (!converged && running / 448.0f == full)
                        converged = int64_t(k) + 1;
                    for (const CalibrationSizeScales& size : linear.bySize)
                        if (size.n == int64_t(k) + 1) {
                            QCOMPARE(size.scales[std::size_t(order)], running / 448.0f);
                            QCOMPARE(size.ratioToFull[std::size_t(order)], double(running / 448.0f) / double(full));
                            someDiffer = someDiffer || running / 448.0f != full;
                        }
                }
                QCOMPARE(linear.convergedAt[std::size_t(order)], converged);
            }
        }
        QVERIFY2(someDiffer, "the fixture must make some scale after n differ from the full set's");
        // Without evaluation texts: no clip shares and no end-to-end result.
        QVERIFY(result.endToEnd.empty());
        QVERIFY(result.linears[0].bySize[0].clipTokenShare.empty());
        QVERIFY(!result.sentence.empty());
    }

    void clipSharesAreCountedExactly()
    {
        CalibrationLabOptions options;
        options.calibrationTexts = calibration_;
        options.evalTexts = evaluation_;
        options.sizes = {1, 2, 4};
        options.orders = 2;
        const CalibrationLabResult result = runCalibrationLab(floatDir_, options);
        std::vector<std::string> modules;
        const std::vector<TextCaptures> eval = captureInputs(floatDir_, evaluation_, modules);
        bool someClip = false;
        for (std::size_t l = 0; l < modules.size(); ++l) {
            const CalibrationLinear& linear = result.linears[l];
            int64_t tokens = 0, elements = 0;
            for (const TextCaptures& text : eval) {
                tokens += int64_t(text.at(modules[l]).values.size()) / text.at(modules[l]).features;
                elements += int64_t(text.at(modules[l]).values.size());
            }
            QCOMPARE(linear.evalTokens, tokens);
            QCOMPARE(linear.evalElements, elements);
            for (const CalibrationSizeScales& size : linear.bySize)
                for (std::size_t o = 0; o < size.scales.size(); ++o) {
                    const float s = size.scales[o];
                    int64_t clippedTokens = 0, clippedElements = 0;
                    for (const TextCaptures& text : eval) {
                        const Captured& c = text.at(modules[l]);
                        for (std::size_t row = 0; row * std::size_t(c.features) < c.values.size(); ++row) {
                            int64_t inRow = 0;
                            for (int64_t i = 0; i < c.features; ++i)
                                inRow += std::fabs(c.values[row * std::size_t(c.features) + std::size_t(i)] / s) > kClipThreshold;
                            clippedTokens += inRow > 0;
                            clippedElements += inRow;
                        }
                    }
                    someClip = someClip || clippedElements > 0;
                    QCOMPARE(size.clipTokenShare[o], double(clippedTokens) / double(tokens));
                    QCOMPARE(size.clipElementShare[o], double(clippedElements) / double(elements));
                }
        }
        QVERIFY2(someClip, "the fixture must make some evaluation element clip");
        // End to end: one SQNR per size and order, the suggestion one of the sizes, said with its number.
        QCOMPARE(result.endToEnd.size(), result.sizes.size());
        for (const CalibrationEndToEnd& e : result.endToEnd)
            QCOMPARE(e.sqnrDb.size(), std::size_t(2));
        // The full set gives the same scales in every order, so the same result.
        QCOMPARE(result.endToEnd.back().sqnrDb[0], result.endToEnd.back().sqnrDb[1]);
        // The full set's SQNR: the checkpoint quantize writes from all texts, run in FP8 against the
        // float model on the evaluation texts, 10 log10(sum ref^2 / sum (ref - x)^2) over every logit.
        {
            const std::string dst = makeTempDir("calib-e2e") + "/m";
            quantizeCheckpoint(floatDir_, dst, calibratedQuantizeOptions(calibration_, int64_t(calibration_.size())));
            std::unique_ptr<EncoderModel> fp8 = EncoderModel::load(dst);
            std::unique_ptr<EncoderModel> reference = EncoderModel::load(floatDir_);
            ForwardOptions fp8Options, floatOptions;
            floatOptions.mode = RunMode::Dequant;
            double signal = 0, noise = 0;
            for (const std::string& text : evaluation_) {
                EncoderInputs inputs;
                inputs.addSequence(reference->checkpoint().tokenizer().encode(text));
                const ForwardResult x = fp8->forward(inputs, fp8Options);
                const ForwardResult ref = reference->forward(inputs, floatOptions);
                for (const NamedTensor& r : ref.outputs) {
                    const std::vector<float>& run = x.output(r.name).values;
                    for (std::size_t i = 0; i < run.size(); ++i) {
                        signal += double(r.tensor.values[i]) * double(r.tensor.values[i]);
                        noise += (double(r.tensor.values[i]) - double(run[i])) * (double(r.tensor.values[i]) - double(run[i]));
                    }
                }
            }
            const double expected = 10.0 * std::log10(signal / noise);
            QVERIFY2(std::fabs(result.endToEnd.back().sqnrDb[0] - expected) < 1e-6,
                     qPrintable(QString("%1 vs %2").arg(result.endToEnd.back().sqnrDb[0]).arg(expected)));
        }
        // The spread: the full set and the bootstrap draws, one per order.
        QCOMPARE(result.resampledSqnrDb.size(), std::size_t(2));
        double low = result.endToEnd.back().sqnrDb[0], high = low;
        for (double db : result.resampledSqnrDb) {
            low = std::min(low, db);
            high = std::max(high, db);
        }
        QCOMPARE(result.spreadDb, high - low);
        QVERIFY(std::find(result.sizes.begin(), result.sizes.end(), result.suggestedSize) != result.sizes.end());
        QVERIFY(QString::fromStdString(result.sentence).contains(QString::number(result.suggestedSize)));
    }

    void theChosenSizeWritesItsScales()
    {
        CalibrationLabOptions options;
        options.calibrationTexts = calibration_;
        options.sizes = {2, 4};
        options.orders = 1;
        const CalibrationLabResult result = runCalibrationLab(floatDir_, options);
        std::vector<std::string> modules;
        const std::vector<TextCaptures> captures = captureInputs(floatDir_, calibration_, modules);
        for (std::size_t s = 0; s < 2; ++s) {
            const int64_t n = result.sizes[s];
            const std::string dst = makeTempDir("calib-write") + "/m";
            quantizeCheckpoint(floatDir_, dst, calibratedQuantizeOptions(calibration_, n));
            auto store = TensorStore::openFile(dst + "/model.safetensors");
            for (std::size_t l = 0; l < modules.size(); ++l) {
                const std::vector<float> written = store->require(modules[l] + ".input_scale").toFloat().values;
                QCOMPARE(written.size(), std::size_t(1));
                QCOMPARE(written[0], result.linears[l].bySize[s].scales[0]);
                float amax = 0;
                for (int64_t k = 0; k < n; ++k)
                    amax = std::max(amax, maxAbs(captures[std::size_t(k)].at(modules[l]).values));
                QCOMPARE(written[0], amax / 448.0f);
            }
        }
    }

    void cliWritesTheSuggestedSizeAndRefusesToOverwrite()
    {
        const std::string dir = makeTempDir("calib-cli");
        writeLines(dir + "/cal.txt", calibration_);
        writeLines(dir + "/eval.txt", evaluation_);
        const std::string dst = dir + "/out";
        const CliResult r = runCli({"calibrate", q(floatDir_), "--calibration", q(dir + "/cal.txt"), "--eval",
                                    q(dir + "/eval.txt"), "--sizes", "2,4,8", "--orders", "3", "--plots",
                                    q(dir + "/plots"), "--write", q(dst), "--json"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const json doc = json::parse(r.out.toStdString());
        QCOMPARE(doc["calibration_samples"].get<int64_t>(), int64_t(12));
        QCOMPARE(doc["eval_samples"].get<int64_t>(), int64_t(5));
        QCOMPARE(doc["sizes"].get<std::vector<int64_t>>(), (std::vector<int64_t>{2, 4, 8, 12}));
        QCOMPARE(doc["orders"].get<int>(), 3);
        QVERIFY(doc["sentence"].is_string());
        const int64_t n = doc["suggested_size"].get<int64_t>();
        for (const char* key : {"module", "full_scale", "by_size", "converged_at"})
            QVERIFY2(doc["linears"][0].contains(key), key);
        for (const char* key : {"n", "scale_min", "scale_max", "ratio_to_full_min", "ratio_to_full_max",
                                "clip_token_share", "clip_element_share"})
            QVERIFY2(doc["linears"][0]["by_size"][0].contains(key), key);
        QCOMPARE(doc["end_to_end"].size(), std::size_t(4));
        QVERIFY(doc["end_to_end"][0].contains("sqnr_db_min") && doc["end_to_end"][0].contains("sqnr_db_max"));
        QVERIFY(QFileInfo::exists(q(dir + "/plots/calibration_convergence.png")));
        QVERIFY(QFileInfo::exists(q(dir + "/plots/calibration_clip_share.png")));
        // The checkpoint holds the scales after the suggested n in file order (order 0).
        std::size_t s = 0;
        while (doc["sizes"][s].get<int64_t>() != n)
            ++s;
        auto store = TensorStore::openFile(dst + "/model.safetensors");
        for (const json& linear : doc["linears"]) {
            const float written = store->require(linear["module"].get<std::string>() + ".input_scale").toFloat().values[0];
            QCOMPARE(written, linear["by_size"][s]["scales"][0].get<float>());
        }
        // A second run without --force refuses before any work, and leaves the checkpoint alone.
        const auto before = std::filesystem::last_write_time(dst + "/model.safetensors");
        const CliResult again = runCli({"calibrate", q(floatDir_), "--calibration", q(dir + "/cal.txt"), "--write", q(dst)});
        QCOMPARE(again.exitCode, 1);
        QVERIFY2(again.err.contains(q(dst)) && again.err.contains("--force"), qPrintable(again.err));
        QVERIFY(std::filesystem::last_write_time(dst + "/model.safetensors") == before);
    }

    void badCalibrationFileGivesOneSentence()
    {
        const std::string dir = makeTempDir("calib-bad");
        writeLines(dir + "/empty.txt", {"", "   "});
        try {
            readCalibrationTexts(dir + "/empty.txt");
            QFAIL("an empty calibration file was accepted");
        } catch (const Error& e) {
            QVERIFY(QString(e.what()).contains(q(dir + "/empty.txt")));
        }
        const CliResult r = runCli({"calibrate", q(floatDir_), "--calibration", q(dir + "/empty.txt"), "--plots",
                                    q(dir + "/plots"), "--json"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY(r.out.isEmpty());
        QCOMPARE(r.err.trimmed().count('\n'), 0);
        QVERIFY2(r.err.contains(q(dir + "/empty.txt")), qPrintable(r.err));
        QVERIFY(!QFileInfo::exists(q(dir + "/plots")));
        const CliResult missing = runCli({"calibrate", q(floatDir_), "--calibration", q(dir + "/absent.txt")});
        QCOMPARE(missing.exitCode, 1);
        QVERIFY2(missing.err.contains(q(dir + "/absent.txt")), qPrintable(missing.err));
        // An empty --eval file is called what it is (it was called "the calibration file").
        writeLines(dir + "/cal.txt", {"the cat sat on the mat"});
        const CliResult emptyEval =
            runCli({"calibrate", q(floatDir_), "--calibration", q(dir + "/cal.txt"), "--eval", q(dir + "/empty.txt")});
        QCOMPARE(emptyEval.exitCode, 1);
        QVERIFY2(emptyEval.err.contains("The evaluation file " + q(dir + "/empty.txt") + " has no text"),
                 qPrintable(emptyEval.err));
    }
};

QTEST_GUILESS_MAIN(TestCalibrationLab)
#include "test_calibration_lab.moc"
