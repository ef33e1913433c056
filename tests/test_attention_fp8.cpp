// AIU FP8 attention (docs/ARCHITECTURE.md "Run modes", `--attention fp8-aiu`), held against what is
// written here from the design's words: the per-sequence K/V cast (scale from the fixed ranges over
// every head, E4M3 rounding by the exhaustive code table, the 1e-5 floor, padding left out), the
// forward's logits against the test-side reference forward (>= 100 dB where both forwards' casts
// chose the same codes), the cast capture points, the headroom per head in compare's result and
// JSON, the sweep's "attention of layer N in FP8" entries, the overrides and the refusals.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/attention_headroom.h"
#include "common/error.h"
#include "engine/compute_threads.h"
#include "engine/encoder_model.h"
#include "numerics/attention_fp8.h"
#include "support/cli_process.h"
#include "support/fixtures.h"
#include "support/float_bits.h"
#include "support/reference_forward.h"
#include "tasks/compare_runs.h"
#include "tasks/sensitivity.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

const std::string kQuestion = "what is the capital of France ?";
const std::string kContext = "Paris is the capital of France . the cat sat on the mat . a dog sat on the cat";
const std::vector<int64_t> kIds = {0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 2};

double sqnrDb(const std::vector<float>& reference, const std::vector<float>& x)
{
    double signal = 0, noise = 0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
        signal += double(reference[i]) * reference[i];
        noise += (double(reference[i]) - x[i]) * (double(reference[i]) - x[i]);
    }
    return noise == 0 ? INFINITY : 10 * std::log10(signal / noise);
}

// The cast as the design words it, for one sequence of real rows: scale = max(amax / range, 1e-5)
// over every value, x' = E4M3(x / scale) * scale with E4M3 found in the exhaustive code table.
std::vector<float> castFromWords(const std::vector<float>& x, float range, float& scale)
{
    float amax = 0;
    for (float v : x)
        amax = std::max(amax, std::fabs(v));
    scale = std::max(amax / range, 1e-5f);
    std::vector<float> out;
    for (float v : x)
        out.push_back(referenceRoundToE4M3(v / scale) * scale);
    return out;
}

const FloatTensor& captured(const ForwardResult& result, const std::string& name)
{
    for (const NamedTensor& t : result.captures)
        if (t.name == name)
            return t.tensor;
    throw Error("no capture " + name);
}

// Where the engine's K/V casts first chose other E4M3 codes than the reference forward's.
struct CastDisagreement {
    int codes = 0;           // values of that cast that took another code (0: every cast agreed)
    bool atMidpoints = true; // each of them a neighbouring code, its x / scale at their midpoint
    std::string where;
};

// Every cast puts its largest value at x / scale = range, and both ranges (100: between 96 and 104;
// 200: between 192 and 208) are E4M3 rounding midpoints. So whether that value rounds up or down
// turns on the last bit of amax / (amax / range), and a K or V that differs from the reference's
// in its last bits (the float GEMM's summation order) may round it the other way: an 8 % change of
// the largest value, which bounds the logits' agreement near 35 dB (seen with OpenBLAS on an AVX2
// EPYC; oneDNN there agreed). The casts are compared in forward order up to the first that
// differs (later layers inherit the difference), as codes found by the words from each forward's
// own cast input.
CastDisagreement firstCastDisagreement(const std::map<std::string, ReferenceTensor>& reference,
                                       const ForwardResult& result, const EncoderLayout& layout, int layers)
{
    CastDisagreement found;
    for (int layer = 0; layer < layers; ++layer)
        for (bool key : {true, false}) {
            const std::string module = key ? layout.keyCastModule(layer) : layout.valueCastModule(layer);
            const float range = key ? 200.0f : 100.0f;
            const std::vector<float>& theirs = reference.at(module + ".input").values;
            const std::vector<float>& ours = captured(result, module + ".input").values;
            float theirScale = 0, ourScale = 0;
            castFromWords(theirs, range, theirScale);
            castFromWords(ours, range, ourScale);
            for (std::size_t i = 0; i < ours.size(); ++i) {
                const float theirCode = referenceRoundToE4M3(theirs[i] / theirScale);
                const float ourCode = referenceRoundToE4M3(ours[i] / ourScale);
                if (theirCode == ourCode)
                    continue;
                const double midpoint = (double(theirCode) + ourCode) / 2;
                const double x = double(theirs[i]) / theirScale;
                const bool neighbours = referenceRoundToE4M3(float(midpoint)) == theirCode ||
                                        referenceRoundToE4M3(float(midpoint)) == ourCode;
                const bool atMidpoint = std::fabs(x - midpoint) <= 1e-5 * std::fabs(midpoint);
                found.atMidpoints = found.atMidpoints && neighbours && atMidpoint;
                ++found.codes;
                found.where += module + "[" + std::to_string(i) + "]: x / scale " + std::to_string(x) + ", code " +
                               std::to_string(ourCode) + " here, " + std::to_string(theirCode) + " in the reference; ";
            }
            if (found.codes > 0)
                return found;
        }
    return found;
}

} // namespace

class TestAttentionFp8 : public QObject {
    Q_OBJECT

    std::string root_, float_, fp8_;

    ComparisonInput qaInput() const
    {
        ComparisonInput input;
        input.question = kQuestion;
        input.context = kContext;
        return input;
    }

private slots:
    void initTestCase()
    {
        setComputeThreads(2);
        root_ = makeTempDir("scalescope-attention-fp8");
        float_ = root_ + "/float";
        fp8_ = root_ + "/fp8";
        TinyModelSpec spec;
        spec.hiddenSize = 32;
        spec.numHeads = 4;
        spec.numLayers = 2;
        writeTinyFloatCheckpoint(float_, spec);
        writeTinyFp8Checkpoint(float_, fp8_, Fp8Scheme{});
    }

    void cleanupTestCase() { std::filesystem::remove_all(root_); }

    // Two heads of 2 channels, rows 0-1 real, row 2 padding (its huge values must not set the scale).
    void castMatchesTheWordsAndCountsPerHead()
    {
        const std::vector<float> x = {4.0f, -0.5f, 0.04f, 1e-6f,      // row 0: head 0 | head 1
                                      -2.0f, 0.0002f, -0.03f, 0.0f,  // row 1
                                      1000.0f, 1000.0f, 1000.0f, 1000.0f}; // row 2: padding
        const uint8_t real[] = {1, 1, 0};
        std::vector<float> out(x.size());
        const attention_fp8::SequenceCast cast =
            attention_fp8::castSequence(x.data(), out.data(), 3, 4, 2, real, attention_fp8::kKeyRange, false);
        float scale = 0;
        const std::vector<float> expected =
            castFromWords(std::vector<float>(x.begin(), x.begin() + 8), 200.0f, scale);
        QCOMPARE(bitsOf(cast.scale), bitsOf(scale)); // 4 / 200: from the real rows only
        for (std::size_t i = 0; i < expected.size(); ++i)
            QVERIFY2(bitsOf(out[i]) == bitsOf(expected[i]), qPrintable(QString("value %1").arg(i)));
        // Padding is cast with the same scale: 1000 / 0.02 = 50000, clamped to 448 by E4M3.
        QCOMPARE(out[8], 448.0f * scale);
        QCOMPARE(cast.headAmax[0], 4.0f);
        QCOMPARE(cast.headAmax[1], 0.04f);
        QCOMPARE(cast.values[0], int64_t(4));
        QCOMPARE(cast.values[1], int64_t(4));
        // Head 1: 1e-6 / 0.02 = 5e-5 is below half of E4M3's smallest subnormal (2^-10): zero.
        // 0.04 / 0.02 = 2 and -0.03 / 0.02 = -1.5 are normal; 0.0 counts as neither.
        QCOMPARE(cast.zeros[1], int64_t(1));
        QCOMPARE(cast.subnormals[1], int64_t(0));
        // Head 0: 0.0002 / 0.02 = 0.01, below 2^-6: a subnormal (5 steps of 2^-9).
        QCOMPARE(cast.subnormals[0], int64_t(1));
        QCOMPARE(out[5], 5 * 0.001953125f * scale);
        QCOMPARE(cast.zeros[0], int64_t(0));
    }

    void castFloorsTheScaleAndRoundsItInHalf()
    {
        const std::vector<float> zeros(8, 0.0f);
        std::vector<float> out(8);
        const auto cast = attention_fp8::castSequence(zeros.data(), out.data(), 2, 4, 2, nullptr, 100.0f, false);
        QCOMPARE(cast.scale, 1e-5f);
        // fp16: the amax / range step runs in half, as torch does on half K.
        const std::vector<float> x = {3.0f, 0.1f, -0.2f, 0.3f};
        const auto half = attention_fp8::castSequence(x.data(), out.data(), 1, 4, 1, nullptr, 200.0f, true);
        const float expected = static_cast<float>(static_cast<_Float16>(static_cast<_Float16>(3.0f) / static_cast<_Float16>(200.0f)));
        QCOMPARE(bitsOf(half.scale), bitsOf(expected));
        QVERIFY(half.scale != 3.0f / 200.0f); // 0.015 is not a half
    }

    // The acceptance point: the engine's fp8-mode logits against the test-side forward >= 100 dB,
    // and in every mode the K/V casts bit for bit against the words applied to the engine's own K
    // and V. The logits are held to that floor when both forwards' casts chose the same codes;
    // where the first cast that differs does so only at rounding midpoints (last-bit differences
    // in K or V, see firstCastDisagreement), the logits cannot agree closely and the bit-exact cast
    // check is the precise one. In dequant the two forwards' K differ in the last float bits
    // (float32 against double sums), which bounds the logits' agreement near 80 dB even without a
    // flip.
    void forwardAgreesWithTheIndependentRecomputation()
    {
        for (const auto& [mode, floorDb] : {std::pair<std::string, double>{"fp8", 100.0}, {"dequant", 60.0}}) {
            auto model = EncoderModel::load(fp8_);
            ForwardOptions options;
            parseRunMode(mode, options.mode);
            options.attention = AttentionPrecision::Fp8Aiu;
            options.capture.all = true;
            const ForwardResult result = model->forward({{kIds}, {}, {}, {}}, options);
            const auto reference = referenceForward(fp8_, kIds, mode, {}, "fp8-aiu");
            const CastDisagreement disagreement = firstCastDisagreement(reference, result, model->checkpoint().layout(), 2);
            QVERIFY2(disagreement.atMidpoints, qPrintable(QString::fromStdString(mode + ": " + disagreement.where)));
            if (disagreement.codes > 0)
                qInfo("%s: the casts rounded %d value(s) at a midpoint the other way: %s", mode.c_str(),
                      disagreement.codes, disagreement.where.c_str());
            // One flipped largest value still leaves the logits near 35 dB: far from an unrelated run.
            const double logitsFloorDb = disagreement.codes == 0 ? floorDb : 25.0;
            for (const std::string& logits : {std::string("start_logits"), std::string("end_logits")}) {
                const double db = sqnrDb(reference.at(logits).values, result.output(logits).values);
                QVERIFY2(db >= logitsFloorDb, qPrintable(QString("%1 %2: %3 dB").arg(q(mode), q(logits)).arg(db)));
            }
            // FP8 attention changes the answer's logits: the float-attention run is far from it.
            ForwardOptions floatAttention = options;
            floatAttention.attention = AttentionPrecision::Float;
            const ForwardResult plain = model->forward({{kIds}, {}, {}, {}}, floatAttention);
            QVERIFY(sqnrDb(reference.at("start_logits").values, plain.output("start_logits").values) < 90);
            const EncoderLayout& layout = model->checkpoint().layout();
            for (int layer = 0; layer < 2; ++layer)
                for (bool key : {true, false}) {
                    const std::string module = key ? layout.keyCastModule(layer) : layout.valueCastModule(layer);
                    const FloatTensor& before = captured(result, module + ".input");
                    const FloatTensor& after = captured(result, module + ".output");
                    float scale = 0;
                    const std::vector<float> expected = castFromWords(before.values, key ? 200.0f : 100.0f, scale);
                    QCOMPARE(after.values.size(), expected.size());
                    for (std::size_t i = 0; i < expected.size(); ++i)
                        QVERIFY2(bitsOf(after.values[i]) == bitsOf(expected[i]),
                                 qPrintable(QString("%1[%2]").arg(q(module)).arg(i)));
                    QCOMPARE(result.attentionCasts[std::size_t(layer * 2 + (key ? 0 : 1))].scales.at(0), scale);
                }
            QCOMPARE(result.attentionCasts.size(), std::size_t(4));
        }
    }

    // A sequence's scale comes from its real tokens: padded in a batch with a longer one it gets
    // the same casts as alone.
    void paddedSequenceKeepsItsOwnScale()
    {
        auto model = EncoderModel::load(fp8_);
        ForwardOptions options;
        options.attention = AttentionPrecision::Fp8Aiu;
        const std::vector<int64_t> shorter = {0, 7, 8, 9, 2};
        const ForwardResult alone = model->forward({{shorter}, {}, {}, {}}, options);
        const ForwardResult batched = model->forward({{kIds, shorter}, {}, {}, {}}, options);
        for (std::size_t cast = 0; cast < alone.attentionCasts.size(); ++cast) {
            QCOMPARE(batched.attentionCasts[cast].scales.size(), std::size_t(2));
            QCOMPARE(batched.attentionCasts[cast].scales[1], alone.attentionCasts[cast].scales[0]);
            for (int64_t h = 0; h < alone.attentionCasts[cast].heads; ++h)
                QCOMPARE(batched.attentionCasts[cast].headAmax[std::size_t(4 + h)],
                         alone.attentionCasts[cast].headAmax[std::size_t(h)]);
        }
    }

    // Asking for the cast points alone changes nothing: float attention, the same logits bit for bit.
    void castPointsAloneLeaveTheRunUnchanged()
    {
        auto model = EncoderModel::load(fp8_);
        ForwardOptions plain;
        ForwardOptions withPoints;
        withPoints.attentionCastPoints = true;
        withPoints.capture.all = true;
        const ForwardResult a = model->forward({{kIds}, {}, {}, {}}, plain);
        const ForwardResult b = model->forward({{kIds}, {}, {}, {}}, withPoints);
        QVERIFY(a.output("start_logits").values == b.output("start_logits").values);
        QVERIFY(b.attentionCasts.empty());
        const std::string key = model->checkpoint().layout().keyCastModule(1);
        QVERIFY(captured(b, key + ".input").values == captured(b, key + ".output").values);
    }

    // Overrides name a layer's FP8 attention: Fp8 turns it on in one layer only, Float turns it off.
    void overridesChooseTheLayers()
    {
        auto model = EncoderModel::load(fp8_);
        const EncoderLayout& layout = model->checkpoint().layout();
        ForwardOptions onlyFirst;
        onlyFirst.overrides.modules[layout.fp8AttentionUnit(0)] = Precision::Fp8;
        onlyFirst.overrides.othersFloat = true;
        const ForwardResult first = model->forward({{kIds}, {}, {}, {}}, onlyFirst);
        QCOMPARE(first.attentionCasts.size(), std::size_t(2));
        QCOMPARE(first.attentionCasts[0].layer, 0);
        ForwardOptions allButSecond;
        allButSecond.attention = AttentionPrecision::Fp8Aiu;
        allButSecond.overrides.modules[layout.fp8AttentionUnit(1)] = Precision::Float;
        QCOMPARE(model->forward({{kIds}, {}, {}, {}}, allButSecond).attentionCasts.size(), std::size_t(2));
        ForwardOptions bogus;
        bogus.overrides.modules["roberta.encoder.layer.0.attention.self.math_fp9"] = Precision::Fp8;
        QVERIFY_THROWS_EXCEPTION(Error, model->forward({{kIds}, {}, {}, {}}, bogus));
        QCOMPARE(layout.shortLabel(layout.fp8AttentionUnit(1)), std::string("L1.attn.fp8"));
        QCOMPARE(layout.shortLabel(layout.keyCastModule(0)), std::string("L0.k.fp8"));
    }

    // compare: both sides record the cast points; the headroom per head equals what the captures say.
    void compareReportsHeadroomPerHead()
    {
        auto run = EncoderModel::load(fp8_);
        auto reference = EncoderModel::load(float_);
        ComparisonInput input = qaInput();
        input.runs.run.attention = AttentionPrecision::Fp8Aiu;
        const ComparisonResult result = compareRuns(*run, reference.get(), input);
        QCOMPARE(result.attentionHeadroom.size(), std::size_t(4));
        const EncoderLayout& layout = run->checkpoint().layout();
        bool sawCast = false;
        for (const CapturePointMetrics& p : result.points)
            sawCast = sawCast || p.name == layout.valueCastModule(1) + ".output";
        QVERIFY(sawCast);

        // Independently: the same windows' K of layer 0 from a forward's captures.
        const PreparedComparisonInput prepared = prepareComparisonInput(*run, input);
        ForwardOptions options;
        options.attention = AttentionPrecision::Fp8Aiu;
        options.capture.names = {layout.keyCastModule(0) + ".input"};
        const ForwardResult forward = run->forward(prepared.inputs, options);
        const FloatTensor& k = forward.captures.at(0).tensor; // [windows, seq, hidden]
        const int64_t seq = k.shape[1], hidden = k.shape[2], heads = 4, width = hidden / heads;
        std::vector<std::vector<double>> tops(heads);
        for (std::size_t w = 0; w < prepared.lengths.size(); ++w) {
            std::vector<float> headAmax(heads, 0.0f);
            for (std::size_t t = 0; t < prepared.lengths[w]; ++t)
                for (int64_t c = 0; c < hidden; ++c)
                    headAmax[std::size_t(c / width)] = std::max(
                        headAmax[std::size_t(c / width)], std::fabs(k.values[(w * seq + t) * hidden + c]));
            const float scale = std::max(*std::max_element(headAmax.begin(), headAmax.end()) / 200.0f, 1e-5f);
            for (int64_t h = 0; h < heads; ++h)
                tops[h].push_back(double(headAmax[h]) / scale);
        }
        const CastHeadroom& key0 = result.attentionHeadroom.front();
        QCOMPARE(key0.module, layout.keyCastModule(0));
        QVERIFY(key0.key);
        QCOMPARE(key0.range, 200.0);
        QCOMPARE(key0.sequences, prepared.lengths.size());
        std::size_t setters = 0;
        for (int64_t h = 0; h < heads; ++h) {
            std::vector<double> t = tops[h];
            std::sort(t.begin(), t.end());
            const double median = t.size() % 2 ? t[t.size() / 2] : (t[t.size() / 2 - 1] + t[t.size() / 2]) / 2;
            QCOMPARE(key0.heads[h].topMedian, median);
            QCOMPARE(key0.heads[h].topMin, t.front());
            QVERIFY(key0.heads[h].topMedian <= 200.0 * (1 + 1e-6));
            QCOMPARE(key0.heads[h].unusedBinades, std::log2(448.0 / median));
            setters += key0.heads[h].setsScale;
        }
        QVERIFY(setters >= prepared.lengths.size()); // some head sets each sequence's scale
        QCOMPARE(result.attentionHeadroom[1].range, 100.0);
        QVERIFY(!result.attentionHeadroom[1].key);

        // Without the option: no cast points, no headroom.
        const ComparisonResult plain = compareRuns(*run, reference.get(), qaInput());
        QVERIFY(plain.attentionHeadroom.empty());
        QCOMPARE(plain.points.size() + 8, result.points.size());
    }

    void cliCompareWritesHeadroomAndRefusesAnUnknownAttention()
    {
        const CliResult compare = runCli({"compare", q(fp8_), "--reference", q(float_), "--question", q(kQuestion),
            "--context", q(kContext), "--attention", "fp8-aiu", "--json"});
        QVERIFY2(compare.exitCode == 0, qPrintable(compare.err));
        const json document = json::parse(compare.out.toStdString());
        QCOMPARE(document.at("attention").get<std::string>(), std::string("fp8-aiu"));
        const json& headroom = document.at("attention_headroom");
        QCOMPARE(headroom.size(), std::size_t(4));
        QCOMPARE(headroom[0].at("tensor").get<std::string>(), std::string("key"));
        QCOMPARE(headroom[0].at("heads").size(), std::size_t(4));
        for (const json& head : headroom[0].at("heads")) {
            QVERIFY(head.at("top_median").get<double>() > 0);
            QVERIFY(head.at("zero_share").get<double>() >= 0);
            QVERIFY(head.contains("subnormal_share"));
        }
        const CliResult bad
            = runCli({"qa", q(fp8_), "--question", q(kQuestion), "--context", q(kContext), "--attention", "fp8"});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("--attention must be float or fp8-aiu"), qPrintable(bad.err));
        const CliResult qa = runCli(
            {"qa", q(fp8_), "--question", q(kQuestion), "--context", q(kContext), "--attention", "fp8-aiu", "--json"});
        QVERIFY2(qa.exitCode == 0, qPrintable(qa.err));
        QCOMPARE(json::parse(qa.out.toStdString()).at("attention").get<std::string>(), std::string("fp8-aiu"));
    }

    // The sweep: one "attention of layer N in FP8" entry per layer, measured, never suggested.
    void sweepHasAnAttentionEntryPerLayer()
    {
        auto run = EncoderModel::load(fp8_);
        auto reference = EncoderModel::load(float_);
        SensitivityInput input;
        input.single = qaInput();
        SensitivityOptions options;
        options.run.attention = AttentionPrecision::Fp8Aiu;
        options.targetSqnrDb = 1000; // unreachable: every prefix is verified
        const SensitivityResult result = runSensitivity(*run, reference.get(), input, options);
        const EncoderLayout& layout = run->checkpoint().layout();
        int attentionEntries = 0;
        for (const SensitivityEntry& e : result.entries) {
            QCOMPARE(e.fp8Attention, layout.fp8AttentionLayer(e.module) >= 0);
            if (!e.fp8Attention)
                continue;
            ++attentionEntries;
            QCOMPARE(e.label, layout.shortLabel(e.module));
            QVERIFY2(e.lostAloneDb > 0, qPrintable(q(e.label) + " loses nothing alone"));
            QVERIFY(std::isfinite(e.recoveredDb));
        }
        QCOMPARE(attentionEntries, 2);
        for (const std::string& name : result.suggestedFloat)
            QVERIFY2(layout.findLinear(name), name.c_str());
        QCOMPARE(result.run.attention, AttentionPrecision::Fp8Aiu);

        SensitivityOptions plain;
        const SensitivityResult without = runSensitivity(*run, reference.get(), input, plain);
        QCOMPARE(without.entries.size() + 2, result.entries.size());
    }

private:
    static QString q(const std::string& s) { return QString::fromStdString(s); }
};

QTEST_MAIN(TestAttentionFp8)
#include "test_attention_fp8.moc"
