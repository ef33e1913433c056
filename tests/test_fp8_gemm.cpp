// fp8 mode's factored GEMM (core/engine/fp8_gemm.h) against float64 recomputations of the same FP8
// products: the kernel alone on random codes, and whole Linears of a model from their captured
// inputs with the tests' own exhaustive-search FP8 rounding. And the float32 fallback: selectable,
// and giving the same answers within the tolerance of a different summation order.
// The factored path runs on bf16 sources where the CPU has them and on float32 sources elsewhere
// (the same numbers: every product is exact either way), so these tests run on every machine.
// Also the engine's other oneDNN GEMMs, float32 Linears and attention's per-head products
// (float_gemm.h), against float64, and the output scan every module output passes (its SSE2 lanes
// against a plain loop over values with inf, NaN and subnormals in them).
#include <QtTest>

#include <cfloat>
#include <cstring>
#include <fstream>
#include <cmath>
#include <algorithm>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "engine/compute_threads.h"
#include "engine/activation_kernels.h"
#include "engine/float_gemm.h"
#include "engine/fp8_gemm.h"
#include "engine/matmul_benchmark.h"
#include "numerics/fp8.h"
#include "io/safetensors.h"
#include "engine/encoder_model.h"
#include "support/fixtures.h"
#include "support/float_bits.h"
#include "support/reference_forward.h"

using namespace scalescope;
using namespace scalescope::testing;

namespace {

struct Agreement {
    double sqnrDb = INFINITY;
    double worstErrorOverBound = 0; // max |y - exact| / (K * 2^-23 * sum |terms|): <= 1 in float32
};

void accumulate(double value, double exact, double bound, double& signal, double& noise, Agreement& a)
{
    signal += exact * exact;
    noise += (value - exact) * (value - exact);
    a.worstErrorOverBound = std::max(a.worstErrorOverBound, std::fabs(value - exact) / bound);
}

std::vector<uint8_t> randomCodes(std::mt19937& random, std::size_t n)
{
    std::vector<uint8_t> codes(n);
    for (uint8_t& code : codes) {
        do
            code = static_cast<uint8_t>(random() & 0xFF);
        while ((code & 0x7F) == 0x7F); // NaN
    }
    return codes;
}

const FloatTensor& capture(const ForwardResult& result, const std::string& name)
{
    for (const NamedTensor& t : result.captures)
        if (t.name == name)
            return t.tensor;
    throw std::runtime_error("no capture " + name);
}

double sqnr(const std::vector<float>& x, const std::vector<float>& reference)
{
    double signal = 0, noise = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        signal += double(reference[i]) * reference[i];
        noise += (double(x[i]) - reference[i]) * (double(x[i]) - reference[i]);
    }
    return noise == 0 ? INFINITY : 10 * std::log10(signal / noise);
}

// The factored path this machine can run: bf16 when available, else float32 sources.
Fp8GemmPath factoredSources()
{
    return fp8GemmStatus().bf16Available ? Fp8GemmPath::Bf16 : Fp8GemmPath::FactoredFloat32;
}

// Forces a path for the scope of a test.
class ForcedPath {
public:
    explicit ForcedPath(Fp8GemmPath path) { forceFp8GemmPath(&path); }
    ~ForcedPath() { forceFp8GemmPath(nullptr); }
    ForcedPath(const ForcedPath&) = delete;
    ForcedPath& operator=(const ForcedPath&) = delete;
};

// docs/ARCHITECTURE.md's activation rule, written out for one run of values with the codec
// (encode, then decode the code): s = max(amax(|run|) / 448, FLT_MIN) for a dynamic scale (a NaN
// is no magnitude), or the given static one; the E4M3 value of x / s, and that times s.
struct RuleRun {
    float scale = 0;
    std::vector<float> values, dequantized;
};
RuleRun activationRule(const float* x, int64_t n, const float* staticScale)
{
    RuleRun r;
    float amax = 0;
    for (int64_t i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax)
            amax = std::fabs(x[i]);
    r.scale = staticScale ? *staticScale : std::max(amax / 448.0f, FLT_MIN);
    for (int64_t i = 0; i < n; ++i) {
        const float value = fp8::decodeE4M3(fp8::encodeE4M3(x[i] / r.scale));
        r.values.push_back(value);
        r.dequantized.push_back(value * r.scale);
    }
    return r;
}

// Rows of normal values with the cases the rounding treats apart: zeros, NaN, infinities, the
// largest float, subnormals, and exact E4M3 midpoints of the row's own scale.
std::vector<float> activationRows(std::mt19937& random, int64_t rows, int64_t features)
{
    std::normal_distribution<float> normal(0.0f, 3.0f);
    const float specials[] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY, FLT_MAX, 1e-40f, -3e-39f, 1e-3f};
    std::vector<float> x(static_cast<std::size_t>(rows * features));
    for (float& v : x)
        v = normal(random);
    for (int64_t row = 0; row < rows; ++row) {
        float* r = x.data() + row * features;
        if (row % 5 == 1) // a special somewhere in the row
            r[random() % features] = specials[random() % std::size(specials)];
        if (row % 7 == 3 && features > 2) { // amax 224 puts a per-token scale at 0.5, x / s at the midpoints 13.5 and -0.328125
            r[0] = 224.0f;
            r[1] = 6.75f;
            r[2] = -0.1640625f;
        }
    }
    return x;
}

// Values x whose x / scale is exactly an E4M3 midpoint (ties to even) while x * (1 / scale) is
// not: a quantizer that multiplies by the reciprocal instead of dividing rounds them differently.
std::vector<float> divisionMidpoints(float scale)
{
    std::vector<float> found;
    const float inverse = 1.0f / scale;
    for (int code = 0; code < 0x7E; ++code) {
        const float midpoint = (fp8::decodeE4M3(static_cast<uint8_t>(code)) + fp8::decodeE4M3(static_cast<uint8_t>(code + 1))) / 2;
        float x = midpoint * scale;
        for (int step = 0; step < 8; ++step, x = std::nextafter(x, INFINITY))
            if (x / scale == midpoint && x * inverse != midpoint) {
                found.push_back(code % 2 ? x : -x);
                break;
            }
    }
    return found;
}

} // namespace

class TestFp8Gemm : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        setComputeThreads(2);
        qInfo("%s", fp8GemmDescription().c_str());
    }

    void kernelMatchesFloat64_data()
    {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("in");
        QTest::addColumn<int>("out");
        QTest::addColumn<bool>("withBias");
        QTest::newRow("one row") << 1 << 64 << 48 << true;
        QTest::newRow("odd sizes") << 7 << 200 << 72 << false;
        QTest::newRow("roberta hidden") << 384 << 768 << 96 << true;
        QTest::newRow("long reduction") << 33 << 3072 << 40 << true;
    }
    void selfCheckPasses()
    {
        QCOMPARE(fp8GemmSelfCheck(factoredSources()), std::string());
        // The start-up decision is consistent with what it reports.
        const Fp8GemmStatus& status = fp8GemmStatus();
        QVERIFY(status.bf16Available ? !status.bf16Kernel.empty() : !status.reason.empty());
    }

    void kernelMatchesFloat64()
    {
        QFETCH(int, rows);
        QFETCH(int, in);
        QFETCH(int, out);
        QFETCH(bool, withBias);
        std::mt19937 random(static_cast<uint32_t>(rows * 131 + in));
        const std::vector<uint8_t> a = randomCodes(random, std::size_t(rows) * in);
        const std::vector<uint8_t> w = randomCodes(random, std::size_t(out) * in);
        std::uniform_real_distribution<float> scale(1e-4f, 1e-1f), offset(-2.0f, 2.0f);
        std::vector<float> values(a.size()), rowScales(static_cast<std::size_t>(rows)),
            weightScales(static_cast<std::size_t>(out)), bias;
        for (std::size_t i = 0; i < a.size(); ++i)
            values[i] = referenceDecodeE4M3(a[i]);
        for (float& s : rowScales) s = scale(random);
        for (float& s : weightScales) s = scale(random);
        if (withBias)
            for (int o = 0; o < out; ++o)
                bias.push_back(offset(random));
        const Fp8FactoredGemm gemm("test", w.data(), out, in, weightScales, bias, factoredSources());
        // Twice, with a different row count in between: the cached primitives must not mix up.
        std::vector<float> y(static_cast<std::size_t>(rows) * out), other(static_cast<std::size_t>(out) * 3);
        gemm.run(values.data(), rowScales.data(), rows, y.data());
        gemm.run(values.data(), rowScales.data(), std::min(rows, 3), other.data());
        std::vector<float> again(y.size());
        gemm.run(values.data(), rowScales.data(), rows, again.data());
        QVERIFY(again == y);

        Agreement agreement;
        double signal = 0, noise = 0;
        for (int t = 0; t < rows; ++t) {
            for (int o = 0; o < out; ++o) {
                double sum = 0, magnitude = 0;
                for (int k = 0; k < in; ++k) {
                    const double p = double(values[std::size_t(t) * in + k]) * referenceDecodeE4M3(w[std::size_t(o) * in + k]);
                    sum += p;
                    magnitude += std::fabs(p);
                }
                const double s = double(rowScales[std::size_t(t)]) * weightScales[std::size_t(o)];
                const double b = withBias ? bias[std::size_t(o)] : 0.0;
                const double bound = (in + 4) * std::ldexp(1.0, -23) * (s * magnitude + std::fabs(b)) + 1e-30;
                accumulate(y[std::size_t(t) * out + o], s * sum + b, bound, signal, noise, agreement);
            }
        }
        agreement.sqnrDb = 10 * std::log10(signal / noise);
        QVERIFY2(agreement.worstErrorOverBound <= 1.0, qPrintable(QString("error %1x the float32 bound").arg(agreement.worstErrorOverBound)));
        QVERIFY2(agreement.sqnrDb > 120, qPrintable(QString("SQNR %1 dB").arg(agreement.sqnrDb)));

        // The same codes under other scales and bias (how the fp16 twin borrows the stored weights'
        // buffers): as a GEMM made from the codes with those scales, bit for bit.
        std::vector<float> otherScales = weightScales, otherBias;
        for (float& s : otherScales) s = scale(random);
        if (withBias)
            for (int o = 0; o < out; ++o)
                otherBias.push_back(offset(random));
        const Fp8FactoredGemm borrowing(gemm, otherScales, otherBias);
        const Fp8FactoredGemm fresh("test", w.data(), out, in, otherScales, otherBias, factoredSources());
        QCOMPARE(borrowing.module(), std::string("test"));
        std::vector<float> fromBorrowed(y.size()), fromFresh(y.size());
        borrowing.run(values.data(), rowScales.data(), rows, fromBorrowed.data());
        fresh.run(values.data(), rowScales.data(), rows, fromFresh.data());
        QVERIFY(fromBorrowed == fromFresh);
        QVERIFY(fromBorrowed != y);
        gemm.run(values.data(), rowScales.data(), rows, again.data()); // the lender keeps its own scales
        QVERIFY(again == y);
    }

    // Whole Linears of a model in fp8 mode: from the captured input, the FP8 activation values (the
    // tests' exhaustive-search rounding), the weight codes from the file, products summed in float64.
    void linearsMatchFloat64Recomputation_data()
    {
        QTest::addColumn<QString>("weights");
        QTest::addColumn<QString>("activations");
        QTest::newRow("channel-token") << "channel" << "token";
        QTest::newRow("tensor-token") << "tensor" << "token";
        QTest::newRow("channel-static") << "channel" << "tensor";
    }
    void linearsMatchFloat64Recomputation()
    {
        const ForcedPath factored(factoredSources());
        QFETCH(QString, weights);
        QFETCH(QString, activations);
        const std::string floatDir = makeTempDir("float"), fp8Dir = makeTempDir("fp8") + "/model";
        TinyModelSpec spec;
        spec.hiddenSize = 64;
        spec.intermediateSize = 256;
        writeTinyFloatCheckpoint(floatDir, spec);
        writeTinyFp8Checkpoint(floatDir, fp8Dir, {weights.toStdString(), activations.toStdString(), "F32"});
        auto model = EncoderModel::load(fp8Dir);
        ForwardOptions options;
        options.capture.all = true;
        const std::vector<int64_t> ids = {0, 280, 281, 100, 290, 77, 301, 45, 2};
        const ForwardResult result = model->forward({{ids}, {}, {}, {}}, options);
        const auto store = TensorStore::openFile(fp8Dir + "/model.safetensors");
        for (const char* module : {"roberta.encoder.layer.0.attention.self.query", "roberta.encoder.layer.0.attention.self.value",
                                   "roberta.encoder.layer.1.intermediate.dense", "roberta.encoder.layer.1.output.dense"}) {
            const std::string name = module;
            const FloatTensor& x = capture(result, name + ".input");
            const FloatTensor& y = capture(result, name + ".output");
            const TensorView& codes = store->require(name + ".weight");
            const std::vector<float> weightScale = store->require(name + ".weight_scale").toFloat().values;
            const std::vector<float> bias = store->require(name + ".bias").toFloat().values;
            const float staticScale = activations == "tensor" ? store->require(name + ".input_scale").toFloat().values[0] : 0;
            const int64_t in = codes.shape[1], out = codes.shape[0], rows = int64_t(x.values.size()) / in;
            Agreement agreement;
            double signal = 0, noise = 0;
            for (int64_t t = 0; t < rows; ++t) {
                const float* row = x.values.data() + t * in;
                float amax = 0;
                for (int64_t k = 0; k < in; ++k)
                    amax = std::max(amax, std::fabs(row[k]));
                const float sa = activations == "tensor" ? staticScale : std::max(amax / 448.0f, FLT_MIN);
                for (int64_t o = 0; o < out; ++o) {
                    double sum = 0, magnitude = 0;
                    for (int64_t k = 0; k < in; ++k) {
                        const double p = double(referenceRoundToE4M3(row[k] / sa)) * referenceDecodeE4M3(codes.data[o * in + k]);
                        sum += p;
                        magnitude += std::fabs(p);
                    }
                    const double s = double(sa) * weightScale[weightScale.size() == 1 ? 0 : std::size_t(o)];
                    const double exact = s * sum + bias[std::size_t(o)];
                    const double bound = (in + 4) * std::ldexp(1.0, -23) * (s * magnitude + std::fabs(bias[std::size_t(o)])) + 1e-30;
                    accumulate(y.values[std::size_t(t * out + o)], exact, bound, signal, noise, agreement);
                }
            }
            agreement.sqnrDb = 10 * std::log10(signal / noise);
            QVERIFY2(agreement.worstErrorOverBound <= 1.0,
                     qPrintable(QString("%1: error %2x the float32 bound").arg(module).arg(agreement.worstErrorOverBound)));
            QVERIFY2(agreement.sqnrDb > 120, qPrintable(QString("%1: SQNR %2 dB").arg(module).arg(agreement.sqnrDb)));
        }
    }

    // The float32 path can be forced (for forwards, after a model was loaded on the factored path);
    // it gives the same answers up to summation order (a different
    // order can move an activation across an FP8 rounding boundary, hence not bit-identical).
    void float32PathIsSelectable()
    {
        std::unique_ptr<ForcedPath> factored = std::make_unique<ForcedPath>(factoredSources());
        const std::string floatDir = makeTempDir("float"), fp8Dir = makeTempDir("fp8") + "/model";
        TinyModelSpec spec;
        writeTinyFloatCheckpoint(floatDir, spec);
        writeTinyFp8Checkpoint(floatDir, fp8Dir, {"channel", "token", "F32"});
        auto model = EncoderModel::load(fp8Dir);
        const std::vector<int64_t> ids = {0, 280, 281, 100, 290, 77, 301, 45, 2};
        ForwardOptions options;
        options.capture.all = true;
        options.activationStatistics = true;
        QCOMPARE(fp8GemmPath(), factoredSources());
        QVERIFY(QString::fromStdString(fp8GemmDescription()).contains("FP8 GEMM: "));
        QVERIFY(!QString::fromStdString(fp8GemmDescription()).contains("dequantized"));
        const ForwardResult chosen = model->forward({{ids}, {}, {}, {}}, options);
        factored.reset();
        const Fp8GemmPath float32Path = Fp8GemmPath::Float32;
        forceFp8GemmPath(&float32Path);
        QCOMPARE(fp8GemmPath(), Fp8GemmPath::Float32);
        QVERIFY(QString::fromStdString(fp8GemmDescription()).contains("float32 on dequantized values"));
        const ForwardResult float32 = model->forward({{ids}, {}, {}, {}}, options);
        forceFp8GemmPath(nullptr);
        QCOMPARE(fp8GemmPath(), fp8GemmStatus().bf16Available ? Fp8GemmPath::Bf16 : Fp8GemmPath::Float32);
        QCOMPARE(chosen.captures.size(), float32.captures.size());
        for (std::size_t i = 0; i < chosen.captures.size(); ++i) {
            const double db = sqnr(chosen.captures[i].tensor.values, float32.captures[i].tensor.values);
            QVERIFY2(db > 60, qPrintable(QString("%1: %2 dB").arg(QString::fromStdString(chosen.captures[i].name)).arg(db)));
        }
        for (const char* name : {"start_logits", "end_logits"})
            QVERIFY(sqnr(chosen.output(name).values, float32.output(name).values) > 60);
        // The statistics come from the same FP8 codes on both paths: identical where the inputs are
        // (layer 0's q, k, v), nearly so after a layer of different summation order.
        QCOMPARE(chosen.activationStatistics.size(), float32.activationStatistics.size());
        for (std::size_t i = 0; i < chosen.activationStatistics.size(); ++i) {
            const ActivationStatistics &a = chosen.activationStatistics[i], &b = float32.activationStatistics[i];
            QCOMPARE(a.module, b.module);
            QCOMPARE(a.elements, b.elements);
            const int64_t slack = i < 3 ? 0 : 1 + a.elements / 100;
            QVERIFY(std::abs(a.clipped - b.clipped) <= slack);
            QVERIFY(std::abs(a.flushedToZero - b.flushedToZero) <= slack);
            QVERIFY(std::abs(a.subnormal - b.subnormal) <= slack);
        }
    }
    // y = x W^T + b for odd shapes, with and without bias, and attention's a b / a b^T per batch:
    // each output within float32 accumulation's error bound of a float64 recomputation.
    void floatGemmsMatchFloat64()
    {
        std::mt19937 random(23);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        auto randomValues = [&](std::size_t n) {
            std::vector<float> v(n);
            for (float& value : v)
                value = normal(random);
            return v;
        };
        const int64_t rows = 37, in = 131, out = 45;
        const std::vector<float> x = randomValues(rows * in), w = randomValues(out * in), bias = randomValues(out);
        const std::vector<float> zeros = std::vector<float>(out * in, 0.0f);
        for (const FloatGemmPath path : {FloatGemmPath::OneDnn, FloatGemmPath::Blas}) {
            const QString name = floatGemmPathName(path);
            QCOMPARE(floatGemmSelfCheck(path), std::string());
            for (const bool withBias : {true, false}) {
                std::vector<float> y(rows * out, NAN);
                floatLinearOn(path, x.data(), rows, in, w.data(), out, withBias ? bias.data() : nullptr, y.data());
                for (int64_t r = 0; r < rows; ++r)
                    for (int64_t o = 0; o < out; ++o) {
                        double exact = withBias ? bias[o] : 0.0, magnitude = withBias ? std::fabs(bias[o]) : 0.0;
                        for (int64_t i = 0; i < in; ++i) {
                            exact += double(x[r * in + i]) * w[o * in + i];
                            magnitude += std::fabs(double(x[r * in + i]) * w[o * in + i]);
                        }
                        QVERIFY2(std::fabs(y[r * out + o] - exact) <= (in + 2) * std::ldexp(1.0, -23) * magnitude,
                                 qPrintable(QString("%1 linear y[%2,%3] = %4, float64 %5").arg(name).arg(r).arg(o).arg(y[r * out + o]).arg(exact)));
                    }
            }
            // A zero weight leaves exactly the bias (the BLAS path accumulates into it).
            std::vector<float> y(rows * out, NAN);
            floatLinearOn(path, x.data(), rows, in, zeros.data(), out, bias.data(), y.data());
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t o = 0; o < out; ++o)
                    QCOMPARE(y[r * out + o], bias[o]);
            const int64_t batch = 5, m = 19, k = 24, n = 29;
            const std::vector<float> a = randomValues(batch * m * k), b = randomValues(batch * k * n);
            for (const bool transposed : {false, true}) {
                std::vector<float> c(batch * m * n, NAN);
                floatBatchedMatmulOn(path, a.data(), b.data(), batch, m, k, n, transposed, c.data());
                for (int64_t i = 0; i < batch; ++i)
                    for (int64_t r = 0; r < m; ++r)
                        for (int64_t col = 0; col < n; ++col) {
                            double exact = 0, magnitude = 0;
                            for (int64_t j = 0; j < k; ++j) {
                                // b[i] is [k, n], or [n, k] read as its transpose
                                const float right = transposed ? b[(i * n + col) * k + j] : b[(i * k + j) * n + col];
                                exact += double(a[(i * m + r) * k + j]) * right;
                                magnitude += std::fabs(double(a[(i * m + r) * k + j]) * right);
                            }
                            const float value = c[(i * m + r) * n + col];
                            QVERIFY2(std::fabs(value - exact) <= (k + 2) * std::ldexp(1.0, -23) * magnitude,
                                     qPrintable(QString("%1 batched c[%2,%3,%4] = %5, float64 %6").arg(name).arg(i).arg(r).arg(col).arg(value).arg(exact)));
                        }
            }
        }
    }

    // The float32 GEMM of a model's shapes is measured (both candidates timed or named unusable),
    // the fastest usable one is used, and the measurement is kept in the cache file under the
    // user's cache folder (here a temporary one).
    void floatGemmChoiceIsMeasuredAndKept()
    {
        const std::string cache = makeTempDir("cache");
        const QByteArray previous = qgetenv("XDG_CACHE_HOME");
        const QByteArray forced = qgetenv("SCALESCOPE_FLOAT_GEMM"); // a whole run may force a path
        qputenv("XDG_CACHE_HOME", QByteArray::fromStdString(cache));
        qunsetenv("SCALESCOPE_FLOAT_GEMM");
        const FloatGemmChoice choice = chooseFloatGemm(40, 88, 16); // widths no other test loads
        qputenv("XDG_CACHE_HOME", previous);
        if (!forced.isNull())
            qputenv("SCALESCOPE_FLOAT_GEMM", forced);
        QCOMPARE(choice.source, std::string("measured"));
        QCOMPARE(choice.candidates.size(), std::size_t(2));
        double best = 0;
        for (const FloatGemmCandidate& c : choice.candidates) {
            QVERIFY2(c.problem.empty() ? c.gflops > 0 : c.gflops == 0, c.problem.c_str());
            if (c.problem.empty() && c.gflops > best)
                best = c.gflops;
        }
        for (const FloatGemmCandidate& c : choice.candidates)
            if (c.path == choice.path)
                QCOMPARE(c.gflops, best);
        QCOMPARE(floatGemmPath(), choice.path);
        const nlohmann::json kept = nlohmann::json::parse(std::ifstream(cache + "/scalescope/float-gemm.json"));
        QCOMPARE(kept.size(), std::size_t(1));
        const nlohmann::json& entry = kept.begin().value();
        QCOMPARE(entry["path"].get<std::string>(), std::string(floatGemmPathName(choice.path)));
        QCOMPARE(entry["hidden"].get<int>(), 40);
        QCOMPARE(entry["intermediate"].get<int>(), 88);
        // The same shapes again: the choice made, not a new measurement.
        QCOMPARE(&chooseFloatGemm(40, 88, 16), &chooseFloatGemm(40, 88, 16));
    }

    // The choice's timing runs whole layers on either path: heads of 64 channels where 64 divides
    // the width (128: two), one head where it does not (40, 200), one or several layers in a row.
    void floatLayerTimingRunsAtAnyWidth()
    {
        for (FloatGemmPath path : {FloatGemmPath::OneDnn, FloatGemmPath::Blas})
            for (const auto& [hidden, intermediate, layers] : {std::tuple{128, 256, 2}, {40, 88, 1}, {200, 96, 3}}) {
                const double gflops = measureFloatLayerGflops(path, hidden, intermediate, 24, layers, 1);
                QVERIFY2(std::isfinite(gflops) && gflops > 0,
                         qPrintable(QString("%1 at %2/%3: %4").arg(floatGemmPathName(path)).arg(hidden).arg(intermediate).arg(gflops)));
            }
    }

    // The bf16 GEMM's input made in one pass (quantizeActivationsToBf16) is the upper half of the
    // float32 values quantizeActivationValues makes, with the same scales, for every scheme that
    // factors, at widths around the lane count and with rows spread over threads.
    void bf16ActivationsMatchTheFloatValues()
    {
        std::mt19937 random(31);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        for (const ActivationQuantization scheme : {ActivationQuantization::DynamicPerToken,
                                                    ActivationQuantization::DynamicPerTensor,
                                                    ActivationQuantization::StaticPerTensor}) {
            for (const int64_t features : {1, 7, 8, 33, 768}) {
                const int64_t rows = 45;
                std::vector<float> src(rows * features);
                for (float& v : src)
                    v = normal(random);
                src[3] = 0.0f;
                std::vector<float> values(src.size());
                std::vector<uint16_t> bits(src.size());
                const std::vector<float> floatScales =
                    quantizeActivationValues(src.data(), values.data(), rows, features, scheme, 0.02f);
                const std::vector<float> bf16Scales =
                    quantizeActivationsToBf16(src.data(), bits.data(), rows, features, scheme, 0.02f);
                QCOMPARE(bf16Scales, floatScales);
                for (std::size_t i = 0; i < src.size(); ++i) {
                    uint32_t expected;
                    std::memcpy(&expected, &values[i], sizeof expected);
                    QVERIFY2(bits[i] == expected >> 16,
                             qPrintable(QString("features %1, element %2").arg(features).arg(i)));
                }
            }
        }
    }

    // scanOutput (four lanes at a time where SSE2 is there) against a plain loop, on rows of every
    // length mod 4 with inf, NaN, subnormals, values below half's smallest normal, and padding rows.
    void outputScanMatchesAPlainLoop()
    {
        std::mt19937 random(29);
        std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
        const float specials[] = {INFINITY, -INFINITY, NAN, 1e-40f, -3e-5f, 0.0f, -0.0f, 6.103515625e-05f, 70000.0f};
        for (const int64_t features : {1, 3, 4, 5, 8, 13, 768}) {
            const int64_t rows = 6, stride = features + 3;
            std::vector<float> values(rows * stride);
            for (float& v : values)
                v = random() % 5 == 0 ? specials[random() % std::size(specials)] : uniform(random);
            const std::vector<uint8_t> real = {1, 1, 0, 1, 1, 0};
            OutputScan expected;
            for (int64_t r = 0; r < rows; ++r) {
                if (!real[r])
                    continue;
                for (int64_t i = 0; i < features; ++i) {
                    const float magnitude = std::fabs(values[r * stride + i]);
                    expected.nonFinite += std::isfinite(magnitude) ? 0 : 1;
                    expected.belowHalfNormal += magnitude > 0 && magnitude < 6.103515625e-05f ? 1 : 0;
                    if (!std::isnan(magnitude))
                        expected.maxAbs = std::max(expected.maxAbs, magnitude);
                }
                expected.elements += features;
            }
            const OutputScan scan = scanOutput(values.data(), rows, features, stride, real);
            QCOMPARE(scan.nonFinite, expected.nonFinite);
            QCOMPARE(scan.belowHalfNormal, expected.belowHalfNormal);
            QCOMPARE(scan.elements, expected.elements);
            QCOMPARE(scan.maxAbs, expected.maxAbs);
        }
    }

    // The activation quantizers (one pass per row in 64-byte lanes, rows over two threads) against
    // the rule written out with the codec: every scheme, widths around the lane count, rows with
    // NaN, infinities, subnormals and midpoints. quantDequantActivations is what the float32 FP8
    // path multiplies; quantizeActivationValues and the bf16 bits are what the factored GEMMs read.
    void activationQuantizersFollowTheRule()
    {
        const FloatGemmPath onednn = FloatGemmPath::OneDnn; // so that LibTorch's threads are the compute threads
        forceFloatGemmPath(&onednn);
        setComputeThreads(2);
        std::mt19937 random(37);
        const float staticScale = 0.03f;
        for (const int64_t features : {1, 15, 16, 17, 33, 768, 3072}) {
            const int64_t rows = 64;
            std::vector<float> x = activationRows(random, rows, features);
            const std::vector<float> midpoints = divisionMidpoints(staticScale);
            QVERIFY(midpoints.size() > 10);
            for (std::size_t i = 0; i < midpoints.size() && i < x.size() / 2; ++i) // in the last rows
                x[x.size() - 1 - i] = midpoints[i];
            const std::size_t n = x.size();
            for (const ActivationQuantization scheme :
                 {ActivationQuantization::DynamicPerToken, ActivationQuantization::DynamicPerTensor,
                  ActivationQuantization::StaticPerTensor}) {
                std::vector<RuleRun> expected;
                for (int64_t row = 0; row < rows; ++row) {
                    const float* whole = scheme == ActivationQuantization::DynamicPerToken ? x.data() + row * features : x.data();
                    const int64_t span = scheme == ActivationQuantization::DynamicPerToken ? features : rows * features;
                    RuleRun all = activationRule(whole, span, scheme == ActivationQuantization::StaticPerTensor ? &staticScale : nullptr);
                    expected.push_back(activationRule(x.data() + row * features, features, &all.scale));
                }
                std::vector<float> dequantized(n), values(n);
                std::vector<uint16_t> bits(n);
                const std::vector<float> scalesA =
                    quantDequantActivations(x.data(), dequantized.data(), rows, features, scheme, staticScale);
                const std::vector<float> scalesB =
                    quantizeActivationValues(x.data(), values.data(), rows, features, scheme, staticScale);
                const std::vector<float> scalesC =
                    quantizeActivationsToBf16(x.data(), bits.data(), rows, features, scheme, staticScale);
                for (int64_t row = 0; row < rows; ++row) {
                    const RuleRun& e = expected[static_cast<std::size_t>(row)];
                    const std::size_t r = static_cast<std::size_t>(row);
                    QVERIFY2(sameFloat(scalesA[r], e.scale) && sameFloat(scalesB[r], e.scale) && sameFloat(scalesC[r], e.scale),
                             qPrintable(QString("features %1, row %2: scale").arg(features).arg(row)));
                    for (int64_t i = 0; i < features; ++i) {
                        const std::size_t at = static_cast<std::size_t>(row * features + i);
                        const uint32_t valueBits = bitsOf(e.values[static_cast<std::size_t>(i)]);
                        const bool ok = sameFloat(dequantized[at], e.dequantized[static_cast<std::size_t>(i)]) &&
                                        sameFloat(values[at], e.values[static_cast<std::size_t>(i)]) &&
                                        (std::isnan(e.values[static_cast<std::size_t>(i)]) ? (bits[at] & 0x7F80) == 0x7F80 && (bits[at] & 0x7F) != 0
                                                                                         : bits[at] == valueBits >> 16);
                        QVERIFY2(ok, qPrintable(QString("features %1, row %2, channel %3: x %4, got %5 / %6, rule %7 / %8")
                                                    .arg(features).arg(row).arg(i).arg(double(x[at]))
                                                    .arg(double(dequantized[at])).arg(double(values[at]))
                                                    .arg(double(e.dequantized[static_cast<std::size_t>(i)]))
                                                    .arg(double(e.values[static_cast<std::size_t>(i)]))));
                    }
                }
            }
            // Groups of 32 channels (the last one shorter where 32 does not divide the width).
            const int64_t group = 32, runs = runsPerRow(features, group);
            std::vector<float> dequantized(n);
            const std::vector<float> scales =
                quantDequantActivations(x.data(), dequantized.data(), rows, features, ActivationQuantization::DynamicPerGroup,
                                        0.0f, group);
            QCOMPARE(scales.size(), static_cast<std::size_t>(rows * runs));
            for (int64_t row = 0; row < rows; ++row)
                for (int64_t run = 0; run < runs; ++run) {
                    const int64_t begin = row * features + run * group, width = std::min(group, features - run * group);
                    const RuleRun e = activationRule(x.data() + begin, width, nullptr);
                    QVERIFY(sameFloat(scales[static_cast<std::size_t>(row * runs + run)], e.scale));
                    for (int64_t i = 0; i < width; ++i)
                        QVERIFY2(sameFloat(dequantized[static_cast<std::size_t>(begin + i)], e.dequantized[static_cast<std::size_t>(i)]),
                                 qPrintable(QString("group: features %1, row %2, run %3, channel %4").arg(features).arg(row).arg(run).arg(i)));
                }
        }
        forceFloatGemmPath(nullptr);
        setComputeThreads(2);
    }

    // The engine's element-wise kernels (activation quantization, GEMM epilogues, weight decoding)
    // go through parallelFor: with two compute threads its chunks run on two threads, each index once.
    // (LibTorch's at::parallel_for is inline: compiled without OpenMP it silently ran one thread.)
    void parallelForRunsOnTheComputeThreads()
    {
        const FloatGemmPath onednn = FloatGemmPath::OneDnn; // OpenBLAS GEMMs would take LibTorch's threads
        forceFloatGemmPath(&onednn);
        setComputeThreads(2);
        const int64_t count = 4096;
        std::vector<int> visits(static_cast<std::size_t>(count), 0);
        std::mutex mutex;
        std::set<std::thread::id> threads;
        parallelFor(count, 64, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i)
                ++visits[static_cast<std::size_t>(i)];
            const std::lock_guard<std::mutex> lock(mutex);
            threads.insert(std::this_thread::get_id());
        });
        forceFloatGemmPath(nullptr);
        setComputeThreads(2);
        QCOMPARE(std::count(visits.begin(), visits.end(), 1), static_cast<std::ptrdiff_t>(count));
        QCOMPARE(threads.size(), std::size_t(2));
    }
};

QTEST_GUILESS_MAIN(TestFp8Gemm)
#include "test_fp8_gemm.moc"
