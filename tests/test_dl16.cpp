// The DL16 accumulation twin (docs/ARCHITECTURE.md "Run modes", accumulation option `dl16`), held
// against computations written here from the design's words: the DL16 rounding bit by bit (half away
// from zero, the carry into the exponent, the inf and zero bounds), the DL8 flush, chunk
// boundaries, every FP8 Linear of a tiny checkpoint run through the engine and recomputed bit for
// bit (fp8 and fp16 modes, dynamic and static activations), the refusals, `--accumulate dl16`
// through the CLI and a CPU runner.
#include <QtTest>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "device/runner_backend.h"
#include "engine/encoder_model.h"
#include "engine/runner_server.h"
#include "io/safetensors.h"
#include "numerics/dl16.h"
#include "numerics/fp8.h"
#include "numerics/half.h"
#include "support/cli_process.h"
#include "support/fixtures.h"
#include "support/float_bits.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

float fromBits(uint32_t bits)
{
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

// DL16 as the design words it: add 0x2000 to the float32 bit pattern, clear the low 14 bits; a
// magnitude at or above 8581545984 becomes inf, one below 4.665707820095122e-10 becomes 0.
float dl16FromWords(float value)
{
    const float rounded = fromBits((bitsOf(value) + 0x2000u) & 0xFFFFC000u);
    const double magnitude = std::fabs(double(rounded));
    if (magnitude >= 8581545984.0)
        return rounded > 0 ? INFINITY : -INFINITY;
    if (magnitude < 4.665707820095122e-10)
        return 0.0f;
    return rounded;
}

// FP8 values below 2^-7 * 1.125 in magnitude are 0 in DL8.
float dl8FromWords(float value) { return std::fabs(double(value)) < 0.0087890625 ? 0.0f : value; }

// The chunked product as the design words it: flush both, chunks of 32 from the first element,
// each chunk's float32 sum rounded to DL16, the chunk results summed in float32.
float dotFromWords(const float* a, const float* b, std::size_t n)
{
    float total = 0.0f;
    for (std::size_t start = 0; start < n; start += 32) {
        float chunk = 0.0f;
        for (std::size_t k = start; k < std::min(n, start + 32); ++k)
            chunk += dl8FromWords(a[k]) * dl8FromWords(b[k]);
        total += dl16FromWords(chunk);
    }
    return total;
}

float halfOf(float value) { return half::f16ToFloat(half::floatToF16(value)); }

// E4M3 value of x / s as the FP8 codec gives it (encode, then decode), clamped to +-448.
float e4m3Value(float x, float scale)
{
    const float v = std::max(-448.0f, std::min(448.0f, x / scale));
    return fp8::decodeE4M3(fp8::encodeE4M3(v));
}

std::vector<float> randomE4M3Values(std::size_t n, std::mt19937& rng)
{
    std::uniform_int_distribution<int> code(0, 255);
    std::vector<float> values;
    while (values.size() < n) {
        const uint8_t c = static_cast<uint8_t>(code(rng));
        if ((c & 0x7F) != 0x7F)
            values.push_back(fp8::decodeE4M3(c));
    }
    return values;
}

bool sameBits(float a, float b) { return bitsOf(a) == bitsOf(b); }

// Bit-exact comparison: QCOMPARE on floats is fuzzy and takes 4.7e-10 for 0.
#define COMPARE_BITS(actual, expected)                                                                    \
    do {                                                                                                   \
        const float a_ = (actual), e_ = static_cast<float>(expected);                                       \
        QVERIFY2(sameBits(a_, e_), qPrintable(QString("%1 (0x%2), expected %3 (0x%4)")                     \
                                                  .arg(double(a_), 0, 'g', 17)                             \
                                                  .arg(bitsOf(a_), 8, 16, QChar('0'))                      \
                                                  .arg(double(e_), 0, 'g', 17)                             \
                                                  .arg(bitsOf(e_), 8, 16, QChar('0'))));                   \
    } while (false)

std::string shellQuote(const std::string& text)
{
    std::string quoted = "'";
    for (char c : text)
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

const EncoderInputs kInputs{{{0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 2}}, {}, {}, {}};

struct Fixtures {
    std::string floatQa, tokenQa, staticQa, blockQa, groupQa, weightOnlyQa, outlierQa;
    Fixtures()
    {
        TinyModelSpec spec;
        spec.hiddenSize = 40;       // in = 40: one chunk of 32 and one of 8
        spec.intermediateSize = 72; // in = 72: two chunks of 32 and one of 8
        spec.numHeads = 4;
        spec.numLayers = 2;
        floatQa = makeTempDir("dl16-float") + "/m";
        writeTinyFloatCheckpoint(floatQa, spec);
        auto fp8 = [&](const std::string& weights, const std::string& activations) {
            const std::string dir = makeTempDir("dl16-" + weights + "-" + activations) + "/m";
            Fp8Scheme scheme;
            scheme.weights = weights;
            scheme.activations = activations;
            writeTinyFp8Checkpoint(floatQa, dir, scheme);
            return dir;
        };
        tokenQa = fp8("channel", "token");
        staticQa = fp8("tensor", "tensor");
        blockQa = fp8("block", "token");
        groupQa = fp8("channel", "group");
        weightOnlyQa = fp8("channel", "none");
        // Outlier channels make the other values of a row small beside its scale: many fall below
        // DL8's smallest, so the flush shows in the engine's Linears.
        TinyModelSpec outliers = spec;
        outliers.outlierChannels = {3, 17};
        outliers.outlierFactor = 400.0f;
        const std::string outlierFloat = makeTempDir("dl16-outlier-float") + "/m";
        writeTinyFloatCheckpoint(outlierFloat, outliers);
        outlierQa = makeTempDir("dl16-outlier") + "/m";
        writeTinyFp8Checkpoint(outlierFloat, outlierQa, Fp8Scheme{});
    }
};

Fixtures& fixtures()
{
    static Fixtures f;
    return f;
}

ForwardOptions dl16Options(RunMode mode = RunMode::Fp8)
{
    ForwardOptions options;
    options.mode = mode;
    options.accumulation = Accumulation::Dl16;
    return options;
}

const FloatTensor& captured(const ForwardResult& result, const std::string& name)
{
    for (const NamedTensor& t : result.captures)
        if (t.name == name)
            return t.tensor;
    throw Error("no capture " + name);
}

} // namespace

class TestDl16 : public QObject {
    Q_OBJECT
private slots:
    void roundsHalfAwayFromZero()
    {
        // 1 + 2^-10 lies halfway between the DL16 neighbours 1 and 1 + 2^-9: away from zero.
        const float halfway = fromBits(0x3F800000u | 0x2000u);
        QCOMPARE(double(halfway), 1.0 + std::ldexp(1.0, -10));
        COMPARE_BITS(dl16::roundToDl16(halfway), 1.0 + std::ldexp(1.0, -9));
        COMPARE_BITS(dl16::roundToDl16(-halfway), -(1.0 + std::ldexp(1.0, -9)));
        // One float32 step below halfway rounds down (toward zero), on both sides.
        COMPARE_BITS(dl16::roundToDl16(fromBits(0x3F801FFFu)), 1.0);
        COMPARE_BITS(dl16::roundToDl16(-fromBits(0x3F801FFFu)), -1.0);
        // Every DL16 value is kept as it is.
        COMPARE_BITS(dl16::roundToDl16(1.0f + 0x1p-9f), 1.0 + std::ldexp(1.0, -9));
        COMPARE_BITS(dl16::roundToDl16(-3.5f), -3.5);
        COMPARE_BITS(dl16::roundToDl16(0.0f), 0.0f);
    }

    void carriesIntoTheExponent()
    {
        // All nine fraction bits set and the round bit too: the carry makes 2.0 (exponent + 1).
        const float below = fromBits(0x3FFFE000u); // 2 - 2^-10
        QCOMPARE(double(below), 2.0 - std::ldexp(1.0, -10));
        COMPARE_BITS(dl16::roundToDl16(below), 2.0);
        COMPARE_BITS(dl16::roundToDl16(-below), -2.0);
        // Without the round bit the largest fraction stays: 2 - 2^-9.
        COMPARE_BITS(dl16::roundToDl16(fromBits(0x3FFFDFFFu)), 2.0 - std::ldexp(1.0, -9));
    }

    void infinityBound()
    {
        const float bound = 8581545984.0f; // 2^32 * (2 - 2^-9), exact in float32
        QCOMPARE(double(bound), std::ldexp(1.0, 32) * (2.0 - std::ldexp(1.0, -9)));
        COMPARE_BITS(dl16::roundToDl16(bound), INFINITY);
        COMPARE_BITS(dl16::roundToDl16(-bound), -INFINITY);
        // The DL16 value below it stays finite.
        const float below = fromBits(bitsOf(bound) - 0x4000u);
        QCOMPARE(double(below), std::ldexp(1.0, 32) * (2.0 - 2 * std::ldexp(1.0, -9)));
        COMPARE_BITS(dl16::roundToDl16(below), below);
        COMPARE_BITS(dl16::roundToDl16(-below), -below);
        // Halfway between them rounds up to the bound, so to inf; one step less stays finite.
        COMPARE_BITS(dl16::roundToDl16(fromBits(bitsOf(bound) - 0x2000u)), INFINITY);
        COMPARE_BITS(dl16::roundToDl16(fromBits(bitsOf(bound) - 0x2001u)), below);
        COMPARE_BITS(dl16::roundToDl16(FLT_MAX), INFINITY);
        COMPARE_BITS(dl16::roundToDl16(INFINITY), INFINITY);
        QVERIFY(std::isnan(dl16::roundToDl16(NAN)));
        QVERIFY(std::isnan(dl16::roundToDl16(fromBits(0x7F800001u)))); // a NaN whose payload would carry into inf
    }

    void zeroBound()
    {
        const float bound = 4.665707820095122e-10f; // 2^-31 * (1 + 2^-9), exact in float32
        QCOMPARE(double(bound), std::ldexp(1.0, -31) * (1.0 + std::ldexp(1.0, -9)));
        COMPARE_BITS(dl16::roundToDl16(bound), bound);
        COMPARE_BITS(dl16::roundToDl16(-bound), -bound);
        // Halfway below it rounds up to it (away from zero) and is kept.
        COMPARE_BITS(dl16::roundToDl16(fromBits(bitsOf(bound) - 0x2000u)), bound);
        // One step less rounds to 2^-31, which is below the bound: 0.
        COMPARE_BITS(dl16::roundToDl16(fromBits(bitsOf(bound) - 0x2001u)), 0.0f);
        COMPARE_BITS(dl16::roundToDl16(std::ldexp(1.0f, -31)), 0.0f);
        COMPARE_BITS(dl16::roundToDl16(-std::ldexp(1.0f, -31)), 0.0f);
        COMPARE_BITS(dl16::roundToDl16(1e-20f), 0.0f);
        // Just above: the next DL16 value is kept.
        const float above = fromBits(bitsOf(bound) + 0x4000u);
        COMPARE_BITS(dl16::roundToDl16(above), above);
    }

    void roundingMatchesTheWordsOverManyPatterns()
    {
        std::mt19937 rng(7);
        std::uniform_int_distribution<uint32_t> any;
        std::size_t checked = 0;
        auto check = [&](uint32_t bits) {
            const float value = fromBits(bits);
            if (std::isnan(value))
                return;
            const float ours = dl16::roundToDl16(value), expected = dl16FromWords(value);
            if (!sameBits(ours, expected))
                QFAIL(qPrintable(QString("0x%1 rounds to 0x%2, not 0x%3")
                                     .arg(bits, 8, 16, QChar('0'))
                                     .arg(bitsOf(ours), 8, 16, QChar('0'))
                                     .arg(bitsOf(expected), 8, 16, QChar('0'))));
            ++checked;
        };
        for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 65521)
            check(static_cast<uint32_t>(bits));
        for (int i = 0; i < 1000000; ++i)
            check(any(rng));
        QVERIFY(checked > 1000000);
    }

    void dl8Flush()
    {
        const float smallest = 0.0087890625f; // 2^-7 * 1.125
        QCOMPARE(double(smallest), std::ldexp(1.125, -7));
        QVERIFY(!dl16::flushedInDl8(smallest));
        QVERIFY(!dl16::flushedInDl8(-smallest));
        QVERIFY(dl16::flushedInDl8(std::nextafter(smallest, 0.0f)));
        QVERIFY(dl16::flushedInDl8(-std::nextafter(smallest, 0.0f)));
        QVERIFY(!dl16::flushedInDl8(std::nextafter(smallest, 1.0f)));
        QVERIFY(!dl16::flushedInDl8(-std::nextafter(smallest, 1.0f)));
        QVERIFY(dl16::flushedInDl8(0.0f));
        // On the E4M3 grid: subnormals up to 4 * 2^-9 are flushed, 5 * 2^-9 and above are kept.
        COMPARE_BITS(dl16::flushDl8(4 * 0x1p-9f), 0.0f);
        COMPARE_BITS(dl16::flushDl8(-4 * 0x1p-9f), 0.0f);
        COMPARE_BITS(dl16::flushDl8(5 * 0x1p-9f), 5 * 0x1p-9f);
        COMPARE_BITS(dl16::flushDl8(-5 * 0x1p-9f), -5 * 0x1p-9f);
        // In a product: a flushed factor contributes nothing whatever the other.
        const float a[2] = {4 * 0x1p-9f, 5 * 0x1p-9f}, b[2] = {448.0f, 448.0f};
        COMPARE_BITS(dl16::chunkedDot(a, b, 1), 0.0f);
        COMPARE_BITS(dl16::chunkedDot(b, a, 1), 0.0f);
        COMPARE_BITS(dl16::chunkedDot(a, b, 2), dl16FromWords(5 * 0x1p-9f * 448.0f));
    }

    void chunkBoundaries_data()
    {
        QTest::addColumn<int>("n");
        for (int n : {1, 31, 32, 33, 64, 65, 100})
            QTest::newRow(qPrintable(QString::number(n))) << n;
    }

    void chunkBoundaries()
    {
        QFETCH(int, n);
        const std::size_t count = static_cast<std::size_t>(n);
        // Where the boundary falls decides the result: products 1 at index 0 and 2^-10 at the last
        // index of every chunk and the first of the next. In one chunk 1 + 2^-10 rounds to
        // 1 + 2^-9; a chunk holding 2^-10 alone (or 2^-10 + 2^-10) is exact.
        std::vector<float> a(count, 0.0f), b(count, 0.0f);
        a[0] = 1.0f;
        b[0] = 1.0f;
        for (std::size_t k = 31; k < count; k += 32) {
            a[k] = b[k] = 0x1p-5f;
            if (k + 1 < count)
                a[k + 1] = b[k + 1] = 0x1p-5f;
        }
        double expected = 0;
        for (std::size_t start = 0; start < count; start += 32) {
            double chunk = 0;
            for (std::size_t k = start; k < std::min(count, start + 32); ++k)
                chunk += double(a[k]) * double(b[k]);
            // 1 + 2^-10 (the first chunk of n >= 32) is the one sum that is not already in DL16.
            expected += chunk == 1.0 + std::ldexp(1.0, -10) ? 1.0 + std::ldexp(1.0, -9) : chunk;
        }
        COMPARE_BITS(dl16::chunkedDot(a.data(), b.data(), n), expected);
        COMPARE_BITS(dotFromWords(a.data(), b.data(), count), expected);

        // Random FP8 values, against the words.
        std::mt19937 rng(static_cast<uint32_t>(n));
        for (int trial = 0; trial < 200; ++trial) {
            const std::vector<float> x = randomE4M3Values(count, rng), w = randomE4M3Values(count, rng);
            const float ours = dl16::chunkedDot(x.data(), w.data(), n);
            const float words = dotFromWords(x.data(), w.data(), count);
            QVERIFY2(sameBits(ours, words), qPrintable(QString("%1 vs %2").arg(double(ours)).arg(double(words))));
        }
    }

    void linearKernelMatchesTheWords()
    {
        // dl16Linear over rows, with scales and bias: (dot * s_a) * s_w + bias, per the design.
        std::mt19937 rng(3);
        std::uniform_real_distribution<float> scale(0.001f, 0.1f);
        const int64_t rows = 5, in = 70, out = 9;
        const std::vector<float> values = randomE4M3Values(static_cast<std::size_t>(rows * in), rng);
        const std::vector<float> weight = randomE4M3Values(static_cast<std::size_t>(out * in), rng);
        std::vector<float> rowScales(rows), weightScales(out), bias(out);
        for (float& s : rowScales)
            s = scale(rng);
        for (float& s : weightScales)
            s = scale(rng);
        for (float& b : bias)
            b = scale(rng) - 0.05f;
        std::vector<float> weightT(static_cast<std::size_t>(out * in)), y(static_cast<std::size_t>(rows * out));
        dl16::prepareWeight(weight.data(), out, in, weightT.data());
        dl16::dl16Linear(values.data(), rowScales.data(), weightT.data(), weightScales.data(), bias.data(), in, out, 0,
                         rows, y.data());
        for (int64_t t = 0; t < rows; ++t)
            for (int64_t o = 0; o < out; ++o) {
                const float dot = dotFromWords(values.data() + t * in, weight.data() + o * in, std::size_t(in));
                const float expected = dot * rowScales[t] * weightScales[o] + bias[o];
                QVERIFY(sameBits(y[static_cast<std::size_t>(t * out + o)], expected));
            }
    }

    void names()
    {
        Accumulation a = Accumulation::Float32;
        QVERIFY(parseAccumulation("dl16", a) && a == Accumulation::Dl16);
        QVERIFY(parseAccumulation("float32", a) && a == Accumulation::Float32);
        QVERIFY(!parseAccumulation("DL16", a) && !parseAccumulation("", a));
        QCOMPARE(runLabel(RunMode::Fp8, Accumulation::Dl16), std::string("fp8+dl16"));
        QCOMPARE(runLabel(RunMode::Fp16, Accumulation::Float32), std::string("fp16"));
        RunMode mode = RunMode::Dequant;
        QVERIFY(parseRunLabel("fp16+dl16", mode, a) && mode == RunMode::Fp16 && a == Accumulation::Dl16);
        QVERIFY(parseRunLabel("dequant", mode, a) && mode == RunMode::Dequant && a == Accumulation::Float32);
        QVERIFY(!parseRunLabel("dequant+dl16", mode, a));
        QVERIFY(!parseRunLabel("fp8+float32", mode, a));
        QVERIFY(!accumulationProblem(RunMode::Dequant, Accumulation::Dl16).empty());
        QVERIFY(accumulationProblem(RunMode::Fp16, Accumulation::Dl16).empty());
    }

    // Every FP8 Linear of a tiny checkpoint through the engine with dl16, recomputed here from the
    // checkpoint's codes, scales and bias and the Linear's captured input, bit for bit.
    void engineLinearsBitForBit_data()
    {
        QTest::addColumn<QString>("scheme");
        QTest::addColumn<QString>("mode");
        QTest::newRow("token fp8") << "token" << "fp8";
        QTest::newRow("token fp16") << "token" << "fp16";
        QTest::newRow("static fp8") << "static" << "fp8";
        QTest::newRow("static fp16") << "static" << "fp16";
        QTest::newRow("outliers fp8") << "outliers" << "fp8";
        // (Not in fp16: the outliers overflow half in the attention scores, and NaN is all there is to compare.)
    }

    void engineLinearsBitForBit()
    {
        QFETCH(QString, scheme);
        QFETCH(QString, mode);
        const std::string dir = scheme == "token"    ? fixtures().tokenQa
                                : scheme == "static" ? fixtures().staticQa
                                                     : fixtures().outlierQa;
        const bool halfMode = mode == "fp16";
        auto model = EncoderModel::load(dir);
        ForwardOptions options = dl16Options(halfMode ? RunMode::Fp16 : RunMode::Fp8);
        options.capture.all = true;
        const ForwardResult result = model->forward(kInputs, options);
        ForwardOptions plain = options;
        plain.accumulation = Accumulation::Float32;
        const ForwardResult float32 = model->forward(kInputs, plain);

        const TensorStore& store = model->checkpoint().tensors();
        auto stored = [&](const TensorView& view) {
            std::vector<float> values = view.toFloat().values;
            if (halfMode)
                for (float& v : values)
                    v = halfOf(v);
            return values;
        };
        int linears = 0, differing = 0;
        int64_t flushedActivations = 0, flushedWeights = 0;
        for (const LinearInfo& info : model->linears()) {
            if (!info.quantized)
                continue;
            ++linears;
            const int64_t in = info.inFeatures, out = info.outFeatures;
            const FloatTensor& x = captured(result, info.module + ".input");
            const FloatTensor& y = captured(result, info.module + ".output");
            const int64_t rows = static_cast<int64_t>(x.values.size()) / in;
            const TensorView& codes = store.require(info.module + ".weight");
            const std::vector<float> weightScales = stored(store.require(info.module + ".weight_scale"));
            const std::vector<float> bias = stored(store.require(info.module + ".bias"));
            std::vector<float> weight(static_cast<std::size_t>(out * in));
            for (std::size_t i = 0; i < weight.size(); ++i) {
                weight[i] = fp8::decodeE4M3(codes.data[i]);
                flushedWeights += weight[i] != 0 && dl8FromWords(weight[i]) == 0;
            }
            for (int64_t t = 0; t < rows; ++t) {
                const float* row = x.values.data() + t * in;
                float scale;
                if (scheme == "static") {
                    scale = stored(store.require(info.module + ".input_scale"))[0];
                } else {
                    float amax = 0;
                    for (int64_t k = 0; k < in; ++k)
                        amax = std::max(amax, std::fabs(row[k]));
                    scale = std::max(amax / 448.0f, FLT_MIN);
                }
                std::vector<float> values(static_cast<std::size_t>(in));
                for (int64_t k = 0; k < in; ++k) {
                    values[static_cast<std::size_t>(k)] = e4m3Value(row[k], scale);
                    flushedActivations += values[static_cast<std::size_t>(k)] != 0 && dl8FromWords(values[k]) == 0;
                }
                for (int64_t o = 0; o < out; ++o) {
                    const float dot = dotFromWords(values.data(), weight.data() + o * in, std::size_t(in));
                    const std::size_t s = weightScales.size() == 1 ? 0 : static_cast<std::size_t>(o);
                    float expected = dot * scale * weightScales[s] + bias[static_cast<std::size_t>(o)];
                    if (halfMode)
                        expected = halfOf(expected);
                    const float got = y.values[static_cast<std::size_t>(t * out + o)];
                    if (!sameBits(got, expected))
                        QFAIL(qPrintable(QString::fromStdString(info.module) +
                                         QString(" row %1 channel %2: %3, expected %4").arg(t).arg(o).arg(double(got)).arg(double(expected))));
                }
            }
            const FloatTensor& plainY = captured(float32, info.module + ".output");
            differing += std::memcmp(plainY.values.data(), y.values.data(), y.values.size() * sizeof(float)) != 0;
        }
        QCOMPARE(linears, 12); // six per layer, two layers (the QA head stays float)
        QVERIFY2(differing > 0, "dl16 changed no Linear's output");
        qInfo("flushed: %lld activation values, %lld weight values; %d of %d Linears differ from float32",
              static_cast<long long>(flushedActivations), static_cast<long long>(flushedWeights), differing, linears);
        if (scheme == "outliers")
            QVERIFY2(flushedActivations > 0 && flushedWeights > 0,
                     "no FP8 value fell below DL8's smallest: the flush went untested");
    }

    void refusals()
    {
        auto token = EncoderModel::load(fixtures().tokenQa);
        ForwardOptions dequant = dl16Options(RunMode::Dequant);
        try {
            token->forward(kInputs, dequant);
            QFAIL("dequant with dl16 ran");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("dequant"), e.what());
        }
        for (const std::string& dir : {fixtures().blockQa, fixtures().groupQa}) {
            auto model = EncoderModel::load(dir);
            try {
                model->forward(kInputs, dl16Options());
                QFAIL("a Linear whose scales vary along the reduction ran with dl16");
            } catch (const Error& e) {
                const QString message = e.what();
                QVERIFY2(message.contains("roberta.encoder.layer.0.attention.self.query") &&
                             (message.contains("block") || message.contains("group")),
                         e.what());
            }
            // The same model with every Linear kept float has no FP8 products: it runs.
            ForwardOptions allFloat = dl16Options();
            allFloat.overrides.othersFloat = true;
            model->forward(kInputs, allFloat);
        }
        // Weight-only FP8 has no FP8 x FP8 products: dl16 leaves it as float32 runs it.
        auto weightOnly = EncoderModel::load(fixtures().weightOnlyQa);
        ForwardOptions plain;
        const ForwardResult a = weightOnly->forward(kInputs, dl16Options());
        const ForwardResult b = weightOnly->forward(kInputs, plain);
        const FloatTensor& sa = a.output("start_logits");
        const FloatTensor& sb = b.output("start_logits");
        QVERIFY(std::memcmp(sa.values.data(), sb.values.data(), sa.values.size() * sizeof(float)) == 0);
        // A float override on one Linear takes it out of dl16 too: that Linear matches float32's.
        ForwardOptions oneFloat = dl16Options();
        oneFloat.capture.names = {"roberta.encoder.layer.0.intermediate.dense"};
        oneFloat.overrides.modules["roberta.encoder.layer.0.intermediate.dense"] = Precision::Float;
        ForwardOptions oneFloatPlain = oneFloat;
        oneFloatPlain.accumulation = Accumulation::Float32;
        oneFloatPlain.overrides.othersFloat = true; // everything before it float too, so its input is the same
        oneFloat.overrides.othersFloat = true;
        const ForwardResult c = token->forward(kInputs, oneFloat), d = token->forward(kInputs, oneFloatPlain);
        const FloatTensor& yc = captured(c, "roberta.encoder.layer.0.intermediate.dense.output");
        const FloatTensor& yd = captured(d, "roberta.encoder.layer.0.intermediate.dense.output");
        QVERIFY(std::memcmp(yc.values.data(), yd.values.data(), yc.values.size() * sizeof(float)) == 0);
    }

    void cliForwardAndQa()
    {
        const std::string dir = fixtures().tokenQa;
        const std::string output = makeTempDir("dl16-cli") + "/out.safetensors";
        const CliResult forward = runCli({"forward", QString::fromStdString(dir), "--input-ids",
            "0,5,6,7,8,9,10,11,12,13,2", "--accumulate", "dl16", "--output", QString::fromStdString(output), "--json"});
        QVERIFY2(forward.exitCode == 0, qPrintable(forward.err));
        const json document = json::parse(forward.out.toStdString());
        QCOMPARE(document.at("accumulation").get<std::string>(), std::string("dl16"));
        QCOMPARE(document.at("mode").get<std::string>(), std::string("fp8"));
        // The file holds the in-process dl16 logits, bit for bit (and not the float32 ones).
        auto model = EncoderModel::load(dir);
        const ForwardResult dl16 = model->forward(kInputs, dl16Options());
        const ForwardResult plain = model->forward(kInputs, ForwardOptions{});
        auto file = SafetensorsFile::open(output);
        const FloatTensor written = file->find("start_logits")->toFloat();
        const FloatTensor& expected = dl16.output("start_logits");
        QCOMPARE(written.values.size(), expected.values.size());
        QVERIFY(std::memcmp(written.values.data(), expected.values.data(), expected.values.size() * sizeof(float)) == 0);
        QVERIFY(std::memcmp(written.values.data(), plain.output("start_logits").values.data(),
                            expected.values.size() * sizeof(float)) != 0);
        QCOMPARE(file->metadata().at("accumulation"), std::string("dl16"));

        const CliResult qa = runCli({"qa", QString::fromStdString(dir), "--question", "where is the cat", "--context",
            "the cat sat on the mat", "--accumulate", "dl16", "--json"});
        QVERIFY2(qa.exitCode == 0, qPrintable(qa.err));
        QCOMPARE(json::parse(qa.out.toStdString()).at("accumulation").get<std::string>(), std::string("dl16"));
        const CliResult qaFp16 = runCli({"qa", QString::fromStdString(dir), "--question", "where is the cat",
            "--context", "the cat sat on the mat", "--mode", "fp16", "--accumulate", "dl16", "--json"});
        QVERIFY2(qaFp16.exitCode == 0, qPrintable(qaFp16.err));

        // Refusals: one sentence, usage errors.
        const CliResult bogus = runCli({"forward", QString::fromStdString(dir), "--input-ids", "0,5,2", "--accumulate",
            "dl8", "--output", QString::fromStdString(output + ".2")});
        QCOMPARE(bogus.exitCode, 2);
        QVERIFY2(bogus.err.contains("--accumulate must be float32 or dl16"), qPrintable(bogus.err));
        const CliResult dequant = runCli({"qa", QString::fromStdString(dir), "--question", "q", "--context", "c",
            "--mode", "dequant", "--accumulate", "dl16"});
        QCOMPARE(dequant.exitCode, 2);
        QVERIFY2(dequant.err.contains("fp8 or fp16"), qPrintable(dequant.err));
        QCOMPARE(dequant.err.count('\n'), 1);
        const CliResult block = runCli({"forward", QString::fromStdString(fixtures().blockQa), "--input-ids", "0,5,2",
            "--accumulate", "dl16", "--output", QString::fromStdString(output + ".3")});
        QVERIFY(block.exitCode != 0);
        QVERIFY2(block.err.contains("block"), qPrintable(block.err));
        QVERIFY(!QFileInfo::exists(QString::fromStdString(output + ".3")));
    }

    void cliCompareAndEvaluate()
    {
        const std::string dir = fixtures().tokenQa;
        const CliResult compare = runCli({"compare", QString::fromStdString(dir), "--reference",
            QString::fromStdString(fixtures().floatQa), "--question", "where is the cat", "--context",
            "the cat sat on the mat", "--accumulate", "dl16", "--json"});
        QVERIFY2(compare.exitCode == 0, qPrintable(compare.err));
        const json c = json::parse(compare.out.toStdString());
        QCOMPARE(c.at("run").get<std::string>(), std::string("fp8+dl16"));
        QCOMPARE(c.at("accumulation").get<std::string>(), std::string("dl16"));

        const std::string squad = makeTempDir("dl16-squad") + "/squad.json";
        {
            json qa = {{"id", "q1"}, {"question", "where is the cat"},
                       {"answers", json::array({{{"text", "on the mat"}, {"answer_start", 12}}})}};
            json paragraph = {{"context", "the cat sat on the mat"}, {"qas", json::array({qa})}};
            json document = {{"version", "1.1"},
                             {"data", json::array({{{"title", "t"}, {"paragraphs", json::array({paragraph})}}})}};
            std::ofstream(squad) << document.dump();
        }
        const CliResult evaluate
            = runCli({"evaluate", QString::fromStdString(dir), "--squad", QString::fromStdString(squad),
                "--max-seq-len", "64", "--doc-stride", "16", "--accumulate", "dl16", "--json"});
        QVERIFY2(evaluate.exitCode == 0, qPrintable(evaluate.err));
        const json e = json::parse(evaluate.out.toStdString());
        QVERIFY2(e.dump().find("fp8+dl16") != std::string::npos, e.dump().c_str());
    }

    void cpuRunner()
    {
        const std::string dir = fixtures().tokenQa;
        auto model = EncoderModel::load(dir);
        RunnerOptions runnerOptions;
        runnerOptions.initialSettings.accumulation = Accumulation::Dl16;
        auto runner = RunnerBackend::start(shellQuote(SCALESCOPE_CLI) + " runner", dir, runnerOptions);
        for (RunMode mode : {RunMode::Fp8, RunMode::Fp16}) {
            for (Accumulation accumulation : {Accumulation::Dl16, Accumulation::Float32, Accumulation::Dl16}) {
                ForwardOptions options;
                options.mode = mode;
                options.accumulation = accumulation;
                options.capture.all = true;
                const ForwardResult there = runner->forward(kInputs, options);
                const ForwardResult here = model->forward(kInputs, options);
                QCOMPARE(there.captures.size(), here.captures.size());
                for (std::size_t i = 0; i < here.captures.size(); ++i)
                    QVERIFY2(std::memcmp(there.captures[i].tensor.values.data(), here.captures[i].tensor.values.data(),
                                         here.captures[i].tensor.values.size() * sizeof(float)) == 0,
                             here.captures[i].name.c_str());
                const FloatTensor& a = there.output("end_logits");
                const FloatTensor& b = here.output("end_logits");
                QVERIFY(std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0);
            }
        }
        try {
            runner->forward(kInputs, dl16Options(RunMode::Dequant));
            QFAIL("dequant with dl16 ran on the runner");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("dequant"), e.what());
        }
    }

    void runnerLoadRequests()
    {
        auto serve = [](const json& request) {
            std::istringstream in(request.dump() + "\n");
            std::ostringstream out, err;
            serveRunner(in, out, err);
            return json::parse(out.str().substr(0, out.str().find('\n')));
        };
        const json bogus = serve({{"id", 1}, {"op", "load"}, {"checkpoint", fixtures().tokenQa}, {"accumulate", "dl8"}});
        QCOMPARE(bogus.at("ok").get<bool>(), false);
        QVERIFY2(bogus.at("error").get<std::string>().find("\"accumulate\" must be \"float32\" or \"dl16\"") != std::string::npos,
                 bogus.dump().c_str());
        const json notString = serve({{"id", 1}, {"op", "load"}, {"checkpoint", fixtures().tokenQa}, {"accumulate", 16}});
        QCOMPARE(notString.at("ok").get<bool>(), false);
        const json dequant = serve(
            {{"id", 2}, {"op", "load"}, {"checkpoint", fixtures().tokenQa}, {"mode", "dequant"}, {"accumulate", "dl16"}});
        QCOMPARE(dequant.at("ok").get<bool>(), false);
        QVERIFY2(dequant.at("error").get<std::string>().find("dequant") != std::string::npos, dequant.dump().c_str());
        const json good = serve({{"id", 3}, {"op", "load"}, {"checkpoint", fixtures().tokenQa}, {"accumulate", "dl16"}});
        QCOMPARE(good.at("ok").get<bool>(), true);
        QCOMPARE(good.at("accumulate").get<std::string>(), std::string("dl16"));
        const json plain = serve({{"id", 4}, {"op", "load"}, {"checkpoint", fixtures().tokenQa}});
        QCOMPARE(plain.at("ok").get<bool>(), true);
        QVERIFY(!plain.contains("accumulate"));
    }
};

QTEST_GUILESS_MAIN(TestDl16)
#include "test_dl16.moc"
