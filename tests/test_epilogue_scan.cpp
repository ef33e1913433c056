// The fused kernels of issue 53: GELU, the attention's softmax and the residual LayerNorm against
// float64 (fused_lanes.h),
// and the output scan folded into the factored FP8 GEMM's epilogue: scans of row ranges
// combine to the whole output's scan, the epilogue hands every row over once and final, and a
// forward's module ranges are those of its outputs on every FP8 GEMM path (the fold on the
// factored ones, the separate pass on float32), with padding rows left out.
#include <QtTest>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <mutex>
#include <random>

#include "engine/activation_kernels.h"
#include "engine/compute_threads.h"
#include "engine/encoder_model.h"
#include "engine/fp8_gemm.h"
#include "engine/fused_lanes.h"
#include "engine/output_scan_lanes.h"
#include "model/linear_plan.h"
#include "numerics/metrics.h"
#include "numerics/fp8.h"
#include "support/fixtures.h"
#include "support/reference_forward.h"

using namespace scalescope;
using namespace scalescope::testing;

namespace {

void compareScans(const OutputScan& got, const OutputScan& expected, const QString& what)
{
    QVERIFY2(got.nonFinite == expected.nonFinite, qPrintable(what + ": non-finite count"));
    QVERIFY2(got.belowHalfNormal == expected.belowHalfNormal, qPrintable(what + ": below half normal"));
    QVERIFY2(got.elements == expected.elements, qPrintable(what + ": elements"));
    QVERIFY2(got.maxAbs == expected.maxAbs, qPrintable(what + QString(": max %1 vs %2").arg(got.maxAbs).arg(expected.maxAbs)));
}

// The factored sources this machine runs: float32 always, bf16 where the CPU has it.
std::vector<Fp8GemmPath> factoredSources()
{
    std::vector<Fp8GemmPath> sources = {Fp8GemmPath::FactoredFloat32};
    if (fp8GemmStatus().bf16Available)
        sources.push_back(Fp8GemmPath::Bf16);
    return sources;
}

const FloatTensor* findCapture(const ForwardResult& result, const std::string& name)
{
    for (const NamedTensor& t : result.captures)
        if (t.name == name)
            return &t.tensor;
    return nullptr;
}

// The first capture point whose name ends with `suffix`, or "".
std::string pointEndingWith(const ForwardResult& result, const std::string& suffix)
{
    for (const NamedTensor& t : result.captures)
        if (t.name.size() >= suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0)
            return t.name;
    return {};
}

// GELU(x) = x Phi(x) = x erfc(-x / sqrt 2) / 2 in float64 (the erfc form: 1 + erf(x / sqrt 2)
// cancels for negative x).
double geluFloat64(double x)
{
    return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

// Whether `got` is GELU(x) within fused_lanes.h's bounds: relative 4e-7 for x >= 0, 2e-6 down to
// -3, 4e-5 below (where |GELU| < 0.005), and flushed to zero only where float64's is under 2e-38
// in magnitude; non-finite exactly where float64's is, with the same sign for inf.
bool geluWithinBounds(float x, float got)
{
    const double expected = geluFloat64(x);
    if (!std::isfinite(expected))
        return std::isnan(expected) ? std::isnan(got) : got == expected;
    if (!std::isfinite(got))
        return false;
    const double bound = x >= 0 ? 4e-7 : x >= -3 ? 2e-6 : 4e-5;
    return std::fabs(got - expected) <= bound * std::fabs(expected) || (got == 0 && std::fabs(expected) < 2e-38);
}

using MaskedSoftmax = void (*)(float* scores, int64_t rows, int64_t width, float scale, const float* mask);

// One softmax version against float64 (maskedSoftmaxMatchesFloat64).
void checkMaskedSoftmax(MaskedSoftmax softmax)
{
    std::mt19937 random(59);
    std::normal_distribution<float> normal(0.0f, 250.0f);
    const float scale = 0.125f;
    for (const int64_t width : {1, 7, 16, 33, 384}) {
        const int64_t rows = 40;
        std::vector<float> raw(static_cast<std::size_t>(rows * width)), mask(static_cast<std::size_t>(width));
        for (float& v : raw)
            v = normal(random);
        for (std::size_t key = 0; key < mask.size(); ++key)
            mask[key] = key % 5 == 4 ? std::numeric_limits<float>::lowest() : 0.0f;
        std::vector<float> probabilities = raw;
        softmax(probabilities.data(), rows, width, scale, mask.data());
        int64_t flushed = 0;
        for (int64_t row = 0; row < rows; ++row) {
            std::vector<float> masked(static_cast<std::size_t>(width));
            float maximum = -INFINITY;
            for (int64_t key = 0; key < width; ++key) {
                masked[std::size_t(key)] = mask[std::size_t(key)] + raw[std::size_t(row * width + key)] * scale;
                maximum = std::max(maximum, masked[std::size_t(key)]);
            }
            double sum = 0;
            for (const float m : masked)
                sum += std::exp(double(m) - maximum);
            for (int64_t key = 0; key < width; ++key) {
                const double below = double(maximum) - masked[std::size_t(key)];
                const double expected = std::exp(-below) / sum;
                const float got = probabilities[std::size_t(row * width + key)];
                const bool flush = got == 0 && expected < 2e-38;
                flushed += flush && expected > 0;
                QVERIFY2(flush || std::fabs(got - expected) <= expected * (1e-6 + 1.2e-7 * below),
                         qPrintable(QString("width %1, row %2, key %3: %4, float64 %5").arg(width).arg(row).arg(key)
                                        .arg(double(got), 0, 'g', 9).arg(expected, 0, 'g', 9)));
            }
        }
        if (width == 384)
            QVERIFY(flushed > 0); // the spread reached the flush, so the check above covered it
    }
}

} // namespace

class TestEpilogueScan : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        setComputeThreads(2);
        qInfo("output scan lanes: %s", scan_lanes::avx512Available() ? "AVX-512 (and SSE2 tested beside it)" : "SSE2");
    }

    // Rows split into random disjoint ranges, scanned alone and combined in a shuffled order, give
    // scanOutput's result over all rows: inf, NaN, subnormals, padding rows, a row stride.
    void rowRangesCombineToTheWholeScan()
    {
        std::mt19937 random(41);
        std::uniform_real_distribution<float> uniform(-5.0f, 5.0f);
        const float specials[] = {INFINITY, -INFINITY, NAN, 1e-40f, -2e-5f, 0.0f, 65504.0f};
        for (const int64_t features : {1, 7, 16, 768}) {
            const int64_t rows = 23, stride = features + 5;
            std::vector<float> values(static_cast<std::size_t>(rows * stride));
            for (float& v : values)
                v = random() % 6 == 0 ? specials[random() % std::size(specials)] : uniform(random);
            std::vector<uint8_t> real(static_cast<std::size_t>(rows));
            for (uint8_t& r : real)
                r = random() % 4 != 0;
            std::vector<std::pair<int64_t, int64_t>> ranges;
            for (int64_t begin = 0; begin < rows;) {
                const int64_t end = std::min(rows, begin + 1 + static_cast<int64_t>(random() % 5));
                ranges.emplace_back(begin, end);
                begin = end;
            }
            std::shuffle(ranges.begin(), ranges.end(), random);
            OutputScan combined;
            for (const auto& [begin, end] : ranges)
                combineScans(combined, scanOutputRows(values.data(), begin, end, features, stride, real));
            compareScans(combined, scanOutput(values.data(), rows, features, stride, real),
                         QString("features %1").arg(features));
        }
    }

    // Every version of the row scan this machine runs (output_scan_lanes.h: SSE2's four lanes
    // everywhere, AVX-512's sixteen where the CPU has them, and the one the engine chose) against a
    // plain loop, at widths around the lane counts where whole vectors and the scalar tail meet,
    // with inf, NaN and subnormals.
    void scanLanesMatchAPlainLoop()
    {
        std::mt19937 random(47);
        std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
        const float specials[] = {INFINITY, -INFINITY, NAN, -NAN, 1e-40f, 3e-5f, 0.0f, -0.0f, 6.103515625e-05f, FLT_MAX};
        for (const int64_t features : {15, 16, 17, 31, 32, 33, 48, 100}) {
            std::vector<float> row(static_cast<std::size_t>(features));
            for (int trial = 0; trial < 20; ++trial) {
                for (float& v : row)
                    v = random() % 4 == 0 ? specials[random() % std::size(specials)] : uniform(random);
                OutputScan expected;
                for (const float v : row) {
                    const float magnitude = std::fabs(v);
                    expected.nonFinite += std::isfinite(magnitude) ? 0 : 1;
                    expected.belowHalfNormal += magnitude > 0 && magnitude < 6.103515625e-05f ? 1 : 0;
                    if (!std::isnan(magnitude))
                        expected.maxAbs = std::max(expected.maxAbs, magnitude);
                }
                expected.elements = features;
                const QString where = QString("features %1, trial %2").arg(features).arg(trial);
                compareScans(scanOutputRows(row.data(), 0, 1, features, features, {}), expected, where);
                compareScans(scan_lanes::portableRow(row.data(), features, 0.0f), expected, "portable, " + where);
                if (scan_lanes::avx512Available())
                    compareScans(scan_lanes::avx512Row(row.data(), features, 0.0f), expected, "AVX-512, " + where);
            }
        }
    }

    // The epilogue calls rowsDone once for every row, after writing it: the rows it sees are the
    // GEMM's final output, and the output is the same as without a callback.
    void epilogueHandsOverEveryFinalRowOnce()
    {
        std::mt19937 random(43);
        const int64_t rows = 61, in = 96, out = 200;
        std::vector<uint8_t> codes(static_cast<std::size_t>(out * in));
        for (uint8_t& code : codes)
            do
                code = static_cast<uint8_t>(random() & 0xFF);
            while ((code & 0x7F) == fp8::kE4M3NaN);
        std::vector<float> values(static_cast<std::size_t>(rows * in)), rowScales(static_cast<std::size_t>(rows));
        std::vector<float> weightScales(static_cast<std::size_t>(out)), bias(static_cast<std::size_t>(out));
        for (float& v : values)
            v = fp8::decodeE4M3(static_cast<uint8_t>(random() % 0x7E));
        for (float& s : rowScales)
            s = 0.01f + float(random() % 100) / 1000.0f;
        for (float& s : weightScales)
            s = 0.002f + float(random() % 100) / 10000.0f;
        for (float& b : bias)
            b = float(int(random() % 200) - 100) / 50.0f;
        for (const Fp8GemmPath sources : factoredSources()) {
            const Fp8FactoredGemm gemm("epilogue", codes.data(), out, in, weightScales, bias, sources);
            std::vector<float> plain(static_cast<std::size_t>(rows * out)), folded(plain.size()), seen(plain.size());
            gemm.run(values.data(), rowScales.data(), rows, plain.data());
            std::vector<int> times(static_cast<std::size_t>(rows), 0);
            std::mutex lock;
            gemm.run(values.data(), rowScales.data(), rows, folded.data(), [&](int64_t begin, int64_t end) {
                const std::lock_guard<std::mutex> guard(lock);
                for (int64_t row = begin; row < end; ++row) {
                    ++times[static_cast<std::size_t>(row)];
                    std::copy_n(folded.data() + row * out, out, seen.data() + row * out);
                }
            });
            QVERIFY(std::all_of(times.begin(), times.end(), [](int n) { return n == 1; }));
            QVERIFY(folded == plain);
            QVERIFY(seen == plain);
        }
    }

    // The GELU fused into the epilogue, against float64 on a sweep of [-20, 20] every 0.0007,
    // random values up to 1e4, and the edges (zeros, subnormals, FLT_MAX, inf, NaN), at lengths
    // that leave tails: in every version this CPU runs (portable; AVX2 and AVX-512, with FMA).
    void geluLanesMatchFloat64()
    {
        std::vector<float> inputs;
        for (double x = -20; x <= 20; x += 0.0007)
            inputs.push_back(static_cast<float>(x));
        std::mt19937 random(53);
        std::uniform_real_distribution<float> wide(-1e4f, 1e4f);
        for (int i = 0; i < 20000; ++i)
            inputs.push_back(wide(random));
        for (const float edge : {0.0f, -0.0f, 1e-40f, -1e-40f, FLT_MIN, -FLT_MIN, 1e-8f, -1e-8f, FLT_MAX, -FLT_MAX,
                                 INFINITY, -INFINITY, NAN, -13.0f, -13.5f})
            inputs.push_back(edge);
        int versions = 0;
        for (const auto& [runs, gelu] : {std::pair{true, &fused_lanes::portableGelu},
                                         std::pair{fused_lanes::avx2Available(), &fused_lanes::avx2Gelu},
                                         std::pair{scan_lanes::avx512Available(), &fused_lanes::avx512Gelu}}) {
            if (!runs)
                continue;
            ++versions;
            for (const std::size_t length : {inputs.size(), std::size_t(1), std::size_t(15), std::size_t(17)}) {
                std::vector<float> values(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(length));
                gelu(values.data(), static_cast<int64_t>(length));
                for (std::size_t i = 0; i < length; ++i)
                    QVERIFY2(geluWithinBounds(inputs[i], values[i]),
                             qPrintable(QString("version %1: GELU(%2) = %3, float64 %4").arg(versions)
                                            .arg(double(inputs[i]), 0, 'g', 9).arg(double(values[i]), 0, 'g', 9)
                                            .arg(geluFloat64(inputs[i]), 0, 'g', 9)));
            }
        }
        qInfo("GELU versions checked: %d", versions);
    }

    // The attention's masked, scaled softmax against float64's softmax of the same masked scores:
    // rows of widths that leave tails, padding keys (the lowest float), a spread of scores wide
    // enough that some probabilities flush; in every version this CPU runs. A row with a NaN, or
    // a +inf, is NaN throughout.
    void maskedSoftmaxMatchesFloat64()
    {
        for (const auto& [runs, softmax] :
             {std::pair{true, &fused_lanes::portableMaskedSoftmax},
              std::pair{fused_lanes::avx2Available(), &fused_lanes::avx2MaskedSoftmax},
              std::pair{scan_lanes::avx512Available(), &fused_lanes::avx512MaskedSoftmax}})
            if (runs)
                checkMaskedSoftmax(softmax);
        const std::vector<float> noMask(3, 0.0f);
        for (const float special : {NAN, INFINITY}) {
            std::vector<float> row = {1.0f, special, 2.0f};
            fused_lanes::maskedSoftmax(row.data(), 1, 3, 1.0f, noMask.data());
            for (const float p : row)
                QVERIFY(std::isnan(p));
        }
    }

    // The residual sum and LayerNorm in one pass against float64's LayerNorm of the same sum: rows
    // of widths that leave tails (one value: the variance is 0 and the output beta), an offset far
    // from zero (so a mean taken carelessly would cancel), random gamma and beta; every version.
    void addLayerNormMatchesFloat64()
    {
        using AddLayerNorm = void (*)(const float*, const float*, const float*, const float*, float, int64_t, int64_t,
                                      float*);
        std::mt19937 random(61);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        const float epsilon = 1e-5f;
        for (const auto& [runs, addLayerNorm] :
             {std::pair<bool, AddLayerNorm>{true, &fused_lanes::portableAddLayerNorm},
              std::pair<bool, AddLayerNorm>{fused_lanes::avx2Available(), &fused_lanes::avx2AddLayerNorm},
              std::pair<bool, AddLayerNorm>{scan_lanes::avx512Available(), &fused_lanes::avx512AddLayerNorm}}) {
            if (!runs)
                continue;
            for (const int64_t width : {1, 7, 16, 33, 768}) {
                const int64_t rows = 20;
                std::vector<float> x(static_cast<std::size_t>(rows * width)), residual(x.size()), out(x.size());
                std::vector<float> gamma(static_cast<std::size_t>(width)), beta(gamma.size());
                for (float& v : x)
                    v = normal(random) + 40.0f;
                for (float& v : residual)
                    v = normal(random);
                for (std::size_t i = 0; i < gamma.size(); ++i) {
                    gamma[i] = 1.0f + 0.3f * normal(random);
                    beta[i] = 0.1f * normal(random);
                }
                addLayerNorm(x.data(), residual.data(), gamma.data(), beta.data(), epsilon, rows, width, out.data());
                for (int64_t row = 0; row < rows; ++row) {
                    std::vector<double> sum(static_cast<std::size_t>(width));
                    double mean = 0, variance = 0;
                    for (int64_t i = 0; i < width; ++i) {
                        // the sum as float32 stores it: both forwards round it alike
                        sum[std::size_t(i)] = double(x[std::size_t(row * width + i)] + residual[std::size_t(row * width + i)]);
                        mean += sum[std::size_t(i)] / double(width);
                    }
                    for (const double v : sum)
                        variance += (v - mean) * (v - mean) / double(width);
                    for (int64_t i = 0; i < width; ++i) {
                        const double normalized = (sum[std::size_t(i)] - mean) / std::sqrt(variance + epsilon);
                        const double expected = normalized * gamma[std::size_t(i)] + beta[std::size_t(i)];
                        const double bound =
                            1e-5 * (std::fabs(gamma[std::size_t(i)]) * (std::fabs(normalized) + 1) + std::fabs(beta[std::size_t(i)]));
                        const float got = out[std::size_t(row * width + i)];
                        QVERIFY2(std::fabs(got - expected) <= bound,
                                 qPrintable(QString("width %1, row %2, %3: %4, float64 %5").arg(width).arg(row).arg(i)
                                                .arg(double(got), 0, 'g', 9).arg(expected, 0, 'g', 9)));
                    }
                }
            }
        }
    }

    // Float attention with the fused softmax and GELU keeps DESIGN's float32 accuracy: every layer's
    // output of a dequant forward (no activation rounding to flip) >= 60 dB against the tests'
    // independent forward (plain loops, float64 sums and softmax); fp8 mode's printed beside it.
    void fusedKernelsKeepTheForwardFloat32Accurate()
    {
        const std::string floatDir = makeTempDir("float"), fp8Dir = makeTempDir("fp8") + "/model";
        writeTinyFloatCheckpoint(floatDir, TinyModelSpec{});
        writeTinyFp8Checkpoint(floatDir, fp8Dir, Fp8Scheme{});
        const std::vector<int64_t> ids = {0, 5, 9, 13, 17, 21, 25, 29, 33, 2};
        const std::unique_ptr<EncoderModel> model = EncoderModel::load(fp8Dir);
        for (const std::string mode : {"dequant", "fp8"}) {
            ForwardOptions options;
            parseRunMode(mode, options.mode);
            options.capture.all = true;
            const ForwardResult result = model->forward({{ids}, {}, {}, {}}, options);
            const auto reference = referenceForward(fp8Dir, ids, mode);
            int layers = 0;
            double lowest = INFINITY;
            for (const auto& [name, tensor] : reference) {
                const bool layerOutput = name.find(".encoder.layer.") != std::string::npos &&
                                         name.size() > 7 && name.compare(name.size() - 7, 7, ".output") == 0 &&
                                         std::count(name.begin(), name.end(), '.') == 4;
                const FloatTensor* ours = layerOutput ? findCapture(result, name) : nullptr;
                if (!ours)
                    continue;
                lowest = std::min(lowest, computeErrorMetrics(ours->values, tensor.values).sqnrDb);
                ++layers;
            }
            qInfo("%s: lowest layer output %.1f dB against the independent forward over %d layers", mode.c_str(), lowest,
                  layers);
            QVERIFY(layers >= 2);
            if (mode == "dequant")
                QVERIFY2(lowest >= 60, qPrintable(QString("%1 dB").arg(lowest)));
        }
    }

    // A forward's GELU on the factored path (fused into the intermediate Linear's epilogue: its
    // output not captured) is float64's GELU of that Linear's output (captured in another forward,
    // which runs LibTorch's GELU), and the Linear's reported range is still its own output's.
    void fusedGeluInAForwardIsGeluOfTheLinearOutput()
    {
        const std::string floatDir = makeTempDir("float"), fp8Dir = makeTempDir("fp8") + "/model";
        writeTinyFloatCheckpoint(floatDir, TinyModelSpec{});
        writeTinyFp8Checkpoint(floatDir, fp8Dir, Fp8Scheme{});
        EncoderInputs inputs;
        inputs.inputIds = {{0, 5, 9, 13, 17, 21, 2}, {0, 7, 11, 2}};
        for (const Fp8GemmPath path : factoredSources()) {
            forceFp8GemmPath(&path);
            const std::unique_ptr<EncoderModel> model = EncoderModel::load(fp8Dir);
            ForwardOptions everything;
            everything.capture.all = true;
            const ForwardResult unfused = model->forward(inputs, everything);
            const std::string linearOutput = pointEndingWith(unfused, "layer.0.intermediate.dense.output");
            const std::string geluOutput = pointEndingWith(unfused, "layer.0.output.dense.input");
            QVERIFY(!linearOutput.empty() && !geluOutput.empty());
            ForwardOptions geluOnly;
            geluOnly.capture.names = {geluOutput};
            const ForwardResult fused = model->forward(inputs, geluOnly);
            const FloatTensor* before = findCapture(unfused, linearOutput);
            const FloatTensor* after = findCapture(fused, geluOutput);
            QVERIFY(before && after && before->values.size() == after->values.size());
            int64_t negative = 0;
            for (std::size_t i = 0; i < before->values.size(); ++i) {
                QVERIFY2(geluWithinBounds(before->values[i], after->values[i]),
                         qPrintable(QString("GELU(%1) = %2").arg(double(before->values[i])).arg(double(after->values[i]))));
                negative += before->values[i] < 0;
            }
            QVERIFY(negative > 0 && negative < static_cast<int64_t>(before->values.size())); // both branches ran
            const std::string module = linearOutput.substr(0, linearOutput.rfind('.'));
            auto rangeOf = [&](const ForwardResult& result) {
                for (const ModuleOutputRange& range : result.outputRanges)
                    if (range.module == module)
                        return range;
                return ModuleOutputRange{};
            };
            QCOMPARE(rangeOf(fused).maxAbs, rangeOf(unfused).maxAbs);
            QCOMPARE(rangeOf(fused).elements, rangeOf(unfused).elements);
            QVERIFY(rangeOf(fused).maxAbs > 0);
        }
        forceFp8GemmPath(nullptr);
    }

    // Every module range a forward reports for a Linear output is the scan of that output as
    // captured, on the real rows of a padded batch of two, on every FP8 GEMM path this machine runs.
    void forwardRangesAreTheScansOfTheOutputs()
    {
        const std::string floatDir = makeTempDir("float"), fp8Dir = makeTempDir("fp8") + "/model";
        writeTinyFloatCheckpoint(floatDir, TinyModelSpec{});
        writeTinyFp8Checkpoint(floatDir, fp8Dir, Fp8Scheme{});
        EncoderInputs inputs;
        inputs.inputIds = {{0, 5, 9, 13, 17, 21, 2}, {0, 7, 11, 2}};
        std::vector<Fp8GemmPath> paths = factoredSources();
        paths.push_back(Fp8GemmPath::Float32);
        for (const Fp8GemmPath path : paths) {
            forceFp8GemmPath(&path);
            const std::unique_ptr<EncoderModel> model = EncoderModel::load(fp8Dir);
            ForwardOptions options;
            options.capture.all = true;
            const ForwardResult result = model->forward(inputs, options);
            int linears = 0;
            for (const ModuleOutputRange& range : result.outputRanges) {
                const FloatTensor* output = findCapture(result, range.module + ".output");
                const bool linear = range.module.find("dense") != std::string::npos ||
                                    range.module.find("self.") != std::string::npos;
                if (!output || !linear || output->shape.size() != 3)
                    continue;
                const int64_t features = output->shape.back(), seq = output->shape[1];
                std::vector<uint8_t> real;
                for (std::size_t row = 0; row < inputs.inputIds.size(); ++row)
                    for (int64_t t = 0; t < seq; ++t)
                        real.push_back(t < static_cast<int64_t>(inputs.inputIds[row].size()));
                const OutputScan expected = scanOutput(output->values.data(), static_cast<int64_t>(real.size()), features,
                                                       features, real);
                compareScans(OutputScan{0, range.maxAbs, range.belowHalfNormal, range.elements}, expected,
                             QString::fromStdString(range.module));
                ++linears;
            }
            QVERIFY2(linears >= 12, qPrintable(QString("%1 Linear outputs checked").arg(linears)));
        }
        forceFp8GemmPath(nullptr);
    }
};

QTEST_GUILESS_MAIN(TestEpilogueScan)
#include "test_epilogue_scan.moc"
