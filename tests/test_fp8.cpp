// FP8 (E4M3FN, E5M2) and 16-bit float codecs against values derived here from the bit fields
// (std::ldexp on the sign/exponent/mantissa), a brute-force nearest-value search, and hand-written
// anchors. The two E4M3 rounding paths (encodeE4M3 and roundToE4M3) are also held to each other.
#include <QtTest>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "numerics/fp8.h"
#include "numerics/half.h"
#include "support/float_bits.h"

using namespace scalescope;
using namespace scalescope::testing;

namespace {

float floatFromBits(uint32_t bits)
{
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

QString describe(float value)
{
    return QString::number(static_cast<double>(value), 'g', 9) + QString(" (0x%1)").arg(bitsOf(value), 8, 16, QChar('0'));
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// E4M3FN from its fields: exponent 0 -> m * 2^-9; else (8 + m) * 2^(e - 7 - 3); S.1111.111 NaN.
float e4m3FromFields(int code)
{
    const bool negative = code & 0x80;
    const int exponent = (code >> 3) & 0xF;
    const int mantissa = code & 0x7;
    if (exponent == 15 && mantissa == 7)
        return kNaN;
    const double magnitude = exponent == 0 ? std::ldexp(mantissa, -9) : std::ldexp(8 + mantissa, exponent - 10);
    return static_cast<float>(negative ? -magnitude : magnitude);
}

// E5M2 from its fields: exponent 0 -> m * 2^-16; 31 -> Inf/NaN; else (4 + m) * 2^(e - 15 - 2).
float e5m2FromFields(int code)
{
    const bool negative = code & 0x80;
    const int exponent = (code >> 2) & 0x1F;
    const int mantissa = code & 0x3;
    double magnitude;
    if (exponent == 31)
        magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    else
        magnitude = exponent == 0 ? std::ldexp(mantissa, -16) : std::ldexp(4 + mantissa, exponent - 17);
    return static_cast<float>(negative ? -magnitude : magnitude);
}

float f16FromFields(int bits)
{
    const bool negative = bits & 0x8000;
    const int exponent = (bits >> 10) & 0x1F;
    const int mantissa = bits & 0x3FF;
    double magnitude;
    if (exponent == 31)
        magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    else
        magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
    return static_cast<float>(negative ? -magnitude : magnitude);
}

float bf16FromFields(int bits)
{
    const bool negative = bits & 0x8000;
    const int exponent = (bits >> 7) & 0xFF;
    const int mantissa = bits & 0x7F;
    double magnitude;
    if (exponent == 255)
        magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    else
        magnitude = exponent == 0 ? std::ldexp(mantissa, -133) : std::ldexp(128 + mantissa, exponent - 134);
    return static_cast<float>(negative ? -magnitude : magnitude);
}

// Independent oracle: the E4M3 value nearest to clamp(x, -448, 448) by exhaustive search over the
// positive finite codes, ties to the even code.
float nearestE4M3BySearch(float x)
{
    const double clamped = std::min(448.0, std::fabs(static_cast<double>(x)));
    int best = 0;
    double bestDistance = std::numeric_limits<double>::infinity();
    for (int code = 0; code <= 0x7E; ++code) {
        const double distance = std::fabs(static_cast<double>(e4m3FromFields(code)) - clamped);
        if (distance < bestDistance || (distance == bestDistance && code % 2 == 0)) {
            best = code;
            bestDistance = distance;
        }
    }
    const float magnitude = e4m3FromFields(best);
    return std::signbit(x) ? -magnitude : magnitude;
}

// What quantDequantE4M3 must compute per element, spelled out in float32 steps.
float quantDequantByFormula(float x, float scale)
{
    volatile float scaled = x / scale; // forces a float32 rounding of the quotient
    return fp8::decodeE4M3(fp8::encodeE4M3(scaled)) * scale;
}

} // namespace

class TestFp8 : public QObject {
    Q_OBJECT

private slots:
    void decodeE4M3MatchesBitFields_data();
    void decodeE4M3MatchesBitFields();
    void decodeE4M3Anchors();
    void encodeE4M3InvertsDecode();
    void e4m3MidpointsRoundToEven();
    void e4m3Saturates_data();
    void e4m3Saturates();
    void e4m3Subnormals_data();
    void e4m3Subnormals();
    void e4m3NaN();
    void roundToE4M3MatchesEncodeDecode();
    void roundToE4M3MatchesNearestSearch();
    void quantDequantMatchesFormula_data();
    void quantDequantMatchesFormula();
    void quantDequantTailsAndOffsets();
    void batchQuantizeAndDequantize();
    void bf16ValuesAreTheRoundedValuesUpperHalves();
    void decodeE5M2MatchesBitFields();
    void encodeE5M2InvertsDecode();
    void e5m2MidpointsRoundToEven();
    void e5m2Rounding_data();
    void e5m2Rounding();
    void f16HandValues_data();
    void f16HandValues();
    void f16AllCodes();
    void bf16HandValues_data();
    void bf16HandValues();
    void bf16AllCodes();
    void narrowingKeepsNaN();
    void roundToHalfPicksTheNearestHalf();
    void roundToHalfAgreesWithTheCodec();
};

void TestFp8::decodeE4M3MatchesBitFields_data()
{
    QTest::addColumn<int>("code");
    for (int code = 0; code < 256; ++code)
        QTest::addRow("0x%02x", code) << code;
}

void TestFp8::decodeE4M3MatchesBitFields()
{
    QFETCH(int, code);
    const float decoded = fp8::decodeE4M3(static_cast<uint8_t>(code));
    const float expected = e4m3FromFields(code);
    QVERIFY2(sameFloat(decoded, expected), qPrintable(describe(decoded) + " != " + describe(expected)));
}

void TestFp8::decodeE4M3Anchors()
{
    QCOMPARE(fp8::decodeE4M3(0x7E), 448.0f);
    QCOMPARE(fp8::decodeE4M3(0xFE), -448.0f);
    QCOMPARE(fp8::decodeE4M3(0x7D), 416.0f);
    QCOMPARE(fp8::decodeE4M3(0x08), 0.015625f);      // 2^-6, smallest normal
    QCOMPARE(fp8::decodeE4M3(0x07), 0.013671875f);   // 7 * 2^-9, largest subnormal
    QCOMPARE(fp8::decodeE4M3(0x01), 0.001953125f);   // 2^-9, smallest subnormal
    QCOMPARE(fp8::decodeE4M3(0x38), 1.0f);
    QCOMPARE(fp8::decodeE4M3(0x39), 1.125f);
    QCOMPARE(fp8::decodeE4M3(0xC0), -2.0f);
    QCOMPARE(fp8::decodeE4M3(0x77), 240.0f);
    QVERIFY(std::isnan(fp8::decodeE4M3(0x7F)));
    QVERIFY(std::isnan(fp8::decodeE4M3(0xFF)));
    QCOMPARE(fp8::decodeE4M3(0x00), 0.0f);
    QVERIFY(!std::signbit(fp8::decodeE4M3(0x00)));
    QCOMPARE(fp8::decodeE4M3(0x80), 0.0f);
    QVERIFY(std::signbit(fp8::decodeE4M3(0x80)));
    QCOMPARE(fp8::kE4M3Max, 448.0f);
    QCOMPARE(fp8::kE4M3NaN, uint8_t(0x7F));
}

void TestFp8::encodeE4M3InvertsDecode()
{
    for (int code = 0; code < 256; ++code) {
        if ((code & 0x7F) == 0x7F)
            continue;
        const float value = fp8::decodeE4M3(static_cast<uint8_t>(code));
        QVERIFY2(fp8::encodeE4M3(value) == code,
                 qPrintable(QString("code 0x%1 re-encodes to 0x%2").arg(code, 2, 16, QChar('0'))
                                .arg(fp8::encodeE4M3(value), 2, 16, QChar('0'))));
        QVERIFY(sameFloat(fp8::roundToE4M3(value), value));
    }
}

void TestFp8::e4m3MidpointsRoundToEven()
{
    // Positive codes 0x00..0x7E increase in value, so neighbours in code are neighbours in value.
    for (int low = 0; low < 0x7E; ++low) {
        const int high = low + 1;
        const double lowValue = e4m3FromFields(low);
        const double highValue = e4m3FromFields(high);
        const float midpoint = static_cast<float>((lowValue + highValue) / 2); // exact: 5 significant bits
        QCOMPARE(static_cast<double>(midpoint), (lowValue + highValue) / 2);
        const int even = low % 2 == 0 ? low : high;
        const QString where = QString("between 0x%1 and 0x%2").arg(low, 2, 16, QChar('0')).arg(high, 2, 16, QChar('0'));

        QVERIFY2(fp8::encodeE4M3(midpoint) == even, qPrintable("midpoint " + where));
        QVERIFY2(fp8::encodeE4M3(-midpoint) == (0x80 | even), qPrintable("negative midpoint " + where));
        QVERIFY2(fp8::encodeE4M3(std::nextafter(midpoint, kInf)) == high, qPrintable("above midpoint " + where));
        QVERIFY2(fp8::encodeE4M3(std::nextafter(midpoint, 0.0f)) == low, qPrintable("below midpoint " + where));
        QVERIFY2(fp8::encodeE4M3(-std::nextafter(midpoint, kInf)) == (0x80 | high), qPrintable("-above " + where));

        QVERIFY2(sameFloat(fp8::roundToE4M3(midpoint), e4m3FromFields(even)), qPrintable("round midpoint " + where));
        QVERIFY2(sameFloat(fp8::roundToE4M3(-midpoint), -e4m3FromFields(even)), qPrintable("round -midpoint " + where));
        QVERIFY2(sameFloat(fp8::roundToE4M3(std::nextafter(midpoint, kInf)), static_cast<float>(highValue)),
                 qPrintable("round above midpoint " + where));
        QVERIFY2(sameFloat(fp8::roundToE4M3(std::nextafter(midpoint, 0.0f)), static_cast<float>(lowValue)),
                 qPrintable("round below midpoint " + where));
    }
}

void TestFp8::e4m3Saturates_data()
{
    QTest::addColumn<float>("value");
    QTest::addColumn<int>("code");
    QTest::newRow("448") << 448.0f << 0x7E;
    QTest::newRow("447 rounds up to 448") << 447.0f << 0x7E;
    QTest::newRow("433 rounds up to 448") << 433.0f << 0x7E;
    QTest::newRow("431 rounds down to 416") << 431.0f << 0x7D;
    QTest::newRow("432 ties to the even code 448") << 432.0f << 0x7E;
    QTest::newRow("449") << 449.0f << 0x7E;
    QTest::newRow("464 would tie to the NaN slot") << 464.0f << 0x7E;
    QTest::newRow("480") << 480.0f << 0x7E;
    QTest::newRow("1e9") << 1e9f << 0x7E;
    QTest::newRow("FLT_MAX") << FLT_MAX << 0x7E;
    QTest::newRow("+inf") << kInf << 0x7E;
    QTest::newRow("-449") << -449.0f << 0xFE;
    QTest::newRow("-1e9") << -1e9f << 0xFE;
    QTest::newRow("-inf") << -kInf << 0xFE;
}

void TestFp8::e4m3Saturates()
{
    QFETCH(float, value);
    QFETCH(int, code);
    QCOMPARE(int(fp8::encodeE4M3(value)), code);
    QCOMPARE(fp8::roundToE4M3(value), e4m3FromFields(code));
}

void TestFp8::e4m3Subnormals_data()
{
    QTest::addColumn<float>("value");
    QTest::addColumn<int>("code");
    const auto p2 = [](int e) { return static_cast<float>(std::ldexp(1.0, e)); };
    QTest::newRow("2^-9") << p2(-9) << 0x01;
    QTest::newRow("2^-10 ties to 0") << p2(-10) << 0x00;
    QTest::newRow("just above 2^-10") << std::nextafter(p2(-10), 1.0f) << 0x01;
    QTest::newRow("1.5 * 2^-9 ties to 2") << 1.5f * p2(-9) << 0x02;
    QTest::newRow("2.5 * 2^-9 ties to 2") << 2.5f * p2(-9) << 0x02;
    QTest::newRow("3 * 2^-9") << 3.0f * p2(-9) << 0x03;
    QTest::newRow("2^-7") << p2(-7) << 0x04;
    QTest::newRow("7.5 * 2^-9 ties up to 2^-6") << 7.5f * p2(-9) << 0x08;
    QTest::newRow("7.4 * 2^-9") << 7.4f * p2(-9) << 0x07;
    QTest::newRow("-3 * 2^-9") << -3.0f * p2(-9) << 0x83;
    QTest::newRow("1e-30") << 1e-30f << 0x00;
    QTest::newRow("-1e-30 keeps the sign") << -1e-30f << 0x80;
    QTest::newRow("float32 denormal") << floatFromBits(1) << 0x00;
    QTest::newRow("-0") << -0.0f << 0x80;
    QTest::newRow("+0") << 0.0f << 0x00;
}

void TestFp8::e4m3Subnormals()
{
    QFETCH(float, value);
    QFETCH(int, code);
    QCOMPARE(int(fp8::encodeE4M3(value)), code);
    QVERIFY(sameFloat(fp8::roundToE4M3(value), e4m3FromFields(code)));
}

void TestFp8::e4m3NaN()
{
    QCOMPARE(int(fp8::encodeE4M3(kNaN)), 0x7F);
    QCOMPARE(int(fp8::encodeE4M3(-kNaN)), 0x7F); // fp8.h: NaN gives 0x7F
    QCOMPARE(int(fp8::encodeE4M3(floatFromBits(0x7F800001))), 0x7F); // signalling NaN
    QVERIFY(std::isnan(fp8::roundToE4M3(kNaN)));
    QVERIFY(std::isnan(fp8::roundToE4M3(floatFromBits(0x7F800001)))); // must not become Inf or 448
    QVERIFY(std::isnan(fp8::roundToE4M3(floatFromBits(0xFF800001))));
    std::vector<float> values = {1.0f, kNaN, 2.0f, -kNaN, floatFromBits(0x7F800001), 3.0f};
    fp8::quantDequantE4M3(values.data(), values.size(), 0.5f);
    QCOMPARE(values[0], 1.0f);
    QVERIFY(std::isnan(values[1]));
    QCOMPARE(values[2], 2.0f);
    QVERIFY(std::isnan(values[3]));
    QVERIFY(std::isnan(values[4]));
    QCOMPARE(values[5], 3.0f);
}

void TestFp8::roundToE4M3MatchesEncodeDecode()
{
    std::vector<float> samples;
    std::mt19937 generator(20240611);
    std::uniform_real_distribution<float> uniform(-600.0f, 600.0f);
    for (int i = 0; i < 1000000; ++i)
        samples.push_back(uniform(generator));
    // Uniform samples rarely land near zero; also sweep magnitudes from 2^-24 to 2^12 with
    // random mantissas and signs.
    std::uniform_int_distribution<uint32_t> mantissa(0, 0x7FFFFF);
    std::uniform_int_distribution<uint32_t> exponent(127 - 24, 127 + 12);
    std::uniform_int_distribution<uint32_t> sign(0, 1);
    for (int i = 0; i < 1000000; ++i)
        samples.push_back(floatFromBits((sign(generator) << 31) | (exponent(generator) << 23) | mantissa(generator)));
    for (int code = 0; code <= 0x7E; ++code) {
        const float value = e4m3FromFields(code);
        for (float around : {value, std::nextafter(value, kInf), std::nextafter(value, -kInf)})
            samples.insert(samples.end(), {around, -around});
        if (code < 0x7E) {
            const float midpoint = static_cast<float>((static_cast<double>(value) + e4m3FromFields(code + 1)) / 2);
            for (float around : {midpoint, std::nextafter(midpoint, kInf), std::nextafter(midpoint, -kInf)})
                samples.insert(samples.end(), {around, -around});
        }
    }
    samples.insert(samples.end(), {kInf, -kInf, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 0.0f, -0.0f});

    int mismatches = 0;
    QString first;
    for (float x : samples) {
        const float fast = fp8::roundToE4M3(x);
        const float viaCode = fp8::decodeE4M3(fp8::encodeE4M3(x));
        if (!sameFloat(fast, viaCode)) {
            if (mismatches++ == 0)
                first = describe(x) + ": roundToE4M3 " + describe(fast) + ", decode(encode) " + describe(viaCode);
        }
    }
    QVERIFY2(mismatches == 0, qPrintable(QString::number(mismatches) + " mismatches; first at " + first));

    // The batched path must agree with the scalar one on every sample (scale 1 leaves x / s = x).
    std::vector<float> batch = samples;
    fp8::quantDequantE4M3(batch.data(), batch.size(), 1.0f);
    for (std::size_t i = 0; i < samples.size(); ++i)
        if (!sameFloat(batch[i], fp8::roundToE4M3(samples[i])))
            QFAIL(qPrintable("quantDequantE4M3 differs from roundToE4M3 at " + describe(samples[i])));
}

void TestFp8::roundToE4M3MatchesNearestSearch()
{
    std::mt19937 generator(7);
    std::uniform_real_distribution<float> logMagnitude(-14.0f, 10.0f);
    std::uniform_int_distribution<int> sign(0, 1);
    for (int i = 0; i < 50000; ++i) {
        const float magnitude = std::exp2(logMagnitude(generator));
        const float x = sign(generator) ? -magnitude : magnitude;
        const float expected = nearestE4M3BySearch(x);
        if (!sameFloat(fp8::roundToE4M3(x), expected))
            QFAIL(qPrintable("roundToE4M3(" + describe(x) + ") = " + describe(fp8::roundToE4M3(x)) + ", nearest is " +
                             describe(expected)));
        if (!sameFloat(fp8::decodeE4M3(fp8::encodeE4M3(x)), expected))
            QFAIL(qPrintable("encodeE4M3(" + describe(x) + ") decodes to " +
                             describe(fp8::decodeE4M3(fp8::encodeE4M3(x))) + ", nearest is " + describe(expected)));
    }
}

void TestFp8::quantDequantMatchesFormula_data()
{
    QTest::addColumn<float>("scale");
    QTest::newRow("1") << 1.0f;
    QTest::newRow("0.0123") << 0.0123f;
    QTest::newRow("3.7") << 3.7f;
    QTest::newRow("amax 600 / 448") << 600.0f / 448.0f;
    QTest::newRow("amax 0.02 / 448") << 0.02f / 448.0f;
    QTest::newRow("1e-3") << 1e-3f;
    QTest::newRow("FLT_MIN") << FLT_MIN;
    QTest::newRow("1e4") << 1e4f;
}

void TestFp8::quantDequantMatchesFormula()
{
    QFETCH(float, scale);
    std::mt19937 generator(99);
    std::uniform_real_distribution<float> uniform(-600.0f, 600.0f);
    std::normal_distribution<float> small(0.0f, 0.05f);
    std::vector<float> values;
    for (int i = 0; i < 5001; ++i)
        values.push_back(i % 2 ? uniform(generator) : small(generator));
    values.insert(values.end(), {0.0f, -0.0f, 448.0f * scale, -448.0f * scale, 1e30f, -1e30f, FLT_MIN});
    std::vector<float> expected(values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
        expected[i] = quantDequantByFormula(values[i], scale);

    std::vector<float> actual = values;
    fp8::quantDequantE4M3(actual.data(), actual.size(), scale);
    for (std::size_t i = 0; i < values.size(); ++i)
        if (!sameFloat(actual[i], expected[i]))
            QFAIL(qPrintable("x = " + describe(values[i]) + ": got " + describe(actual[i]) + ", expected " +
                             describe(expected[i])));
}

void TestFp8::quantDequantTailsAndOffsets()
{
    // Every start offset and length around the batch width (8 values), so both the batched and the
    // leftover elements are checked, and nothing outside [start, start + n) is touched.
    std::vector<float> source;
    for (int i = 0; i < 80; ++i)
        source.push_back(static_cast<float>(i) * 0.73f - 29.0f);
    const float scale = 0.11f;
    for (std::size_t start = 0; start < 5; ++start) {
        for (std::size_t n = 0; n < 40; ++n) { // several 8-value batches and every tail
            std::vector<float> values = source;
            fp8::quantDequantE4M3(values.data() + start, n, scale);
            for (std::size_t i = 0; i < values.size(); ++i) {
                const bool inside = i >= start && i < start + n;
                const float expected = inside ? quantDequantByFormula(source[i], scale) : source[i];
                QVERIFY2(sameFloat(values[i], expected),
                         qPrintable(QString("start %1, n %2, index %3").arg(start).arg(n).arg(i)));
            }
        }
    }
}

// The bf16 GEMM's input (fp8::quantizeToE4M3Bf16): for every E4M3 value, its neighbours and the
// midpoints between codes, both signs, scaled, at every start offset around the lane width, the
// bits are the upper half of the formula's float, x / s rounded (DESIGN: E4M3 values are exact
// in bf16, so the lower half is zero).
void TestFp8::bf16ValuesAreTheRoundedValuesUpperHalves()
{
    const float scale = 0.0371f;
    std::vector<float> source;
    for (int code = 0; code <= 0x7E; ++code) {
        const float value = e4m3FromFields(code) * scale;
        source.insert(source.end(), {value, -value, std::nextafter(value, kInf), std::nextafter(value, -kInf)});
        if (code < 0x7E) {
            const float midpoint = static_cast<float>((double(e4m3FromFields(code)) + e4m3FromFields(code + 1)) / 2) * scale;
            source.insert(source.end(), {midpoint, -midpoint});
        }
    }
    source.insert(source.end(), {500.0f * scale, -1e6f, 0.0f, -0.0f, FLT_MIN});
    for (std::size_t start = 0; start < 9; ++start) {
        const std::size_t n = source.size() - start;
        std::vector<uint16_t> bits(n, 0xFFFF);
        fp8::quantizeToE4M3Bf16(source.data() + start, n, scale, bits.data());
        for (std::size_t i = 0; i < n; ++i) {
            const float expected = fp8::roundToE4M3(source[start + i] / scale);
            uint32_t expectedBits;
            std::memcpy(&expectedBits, &expected, sizeof expectedBits);
            QCOMPARE(expectedBits & 0xFFFFu, 0u);
            QVERIFY2(bits[i] == expectedBits >> 16,
                     qPrintable(QString("start %1, value %2: bits %3, expected %4")
                                    .arg(start).arg(source[start + i]).arg(bits[i], 0, 16).arg(expectedBits >> 16, 0, 16)));
        }
    }
}

void TestFp8::batchQuantizeAndDequantize()
{
    std::vector<uint8_t> codes(256);
    for (int i = 0; i < 256; ++i)
        codes[i] = static_cast<uint8_t>(i);
    const float scale = 0.375f;
    std::vector<float> dequantized(256);
    fp8::dequantizeE4M3(codes.data(), codes.size(), scale, dequantized.data());
    for (int i = 0; i < 256; ++i)
        QVERIFY(sameFloat(dequantized[i], e4m3FromFields(i) * scale));

    std::mt19937 generator(5);
    std::uniform_real_distribution<float> uniform(-300.0f, 300.0f);
    std::vector<float> values(1001);
    for (float& v : values)
        v = uniform(generator);
    std::vector<uint8_t> quantized(values.size());
    fp8::quantizeE4M3(values.data(), values.size(), scale, quantized.data());
    for (std::size_t i = 0; i < values.size(); ++i) {
        volatile float scaled = values[i] / scale;
        QCOMPARE(int(quantized[i]), int(fp8::encodeE4M3(scaled)));
    }
    // Values past 448 * scale saturate rather than producing NaN codes.
    const float big[2] = {1000.0f, -1000.0f};
    uint8_t bigCodes[2];
    fp8::quantizeE4M3(big, 2, scale, bigCodes);
    QCOMPARE(int(bigCodes[0]), 0x7E);
    QCOMPARE(int(bigCodes[1]), 0xFE);
}

void TestFp8::decodeE5M2MatchesBitFields()
{
    for (int code = 0; code < 256; ++code) {
        const float decoded = fp8::decodeE5M2(static_cast<uint8_t>(code));
        QVERIFY2(sameFloat(decoded, e5m2FromFields(code)),
                 qPrintable(QString("0x%1: ").arg(code, 2, 16, QChar('0')) + describe(decoded)));
    }
    QCOMPARE(fp8::decodeE5M2(0x3C), 1.0f);
    QCOMPARE(fp8::decodeE5M2(0x7B), 57344.0f);
    QCOMPARE(fp8::decodeE5M2(0x04), 6.103515625e-05f); // 2^-14
    QCOMPARE(fp8::decodeE5M2(0x01), 1.52587890625e-05f); // 2^-16
    QCOMPARE(fp8::decodeE5M2(0x7C), kInf);
    QCOMPARE(fp8::decodeE5M2(0xFC), -kInf);
    for (int nan : {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF})
        QVERIFY(std::isnan(fp8::decodeE5M2(static_cast<uint8_t>(nan))));
    QVERIFY(std::signbit(fp8::decodeE5M2(0x80)));
    QCOMPARE(fp8::kE5M2Max, 57344.0f);
}

void TestFp8::encodeE5M2InvertsDecode()
{
    for (int code = 0; code < 256; ++code) {
        const int magnitude = code & 0x7F;
        if (magnitude >= 0x7D)
            continue;
        QCOMPARE(int(fp8::encodeE5M2(fp8::decodeE5M2(static_cast<uint8_t>(code)))), code);
    }
}

void TestFp8::e5m2MidpointsRoundToEven()
{
    for (int low = 0; low < 0x7B; ++low) {
        const int high = low + 1;
        const double lowValue = e5m2FromFields(low);
        const double highValue = e5m2FromFields(high);
        const float midpoint = static_cast<float>((lowValue + highValue) / 2);
        const int even = low % 2 == 0 ? low : high;
        QCOMPARE(int(fp8::encodeE5M2(midpoint)), even);
        QCOMPARE(int(fp8::encodeE5M2(-midpoint)), 0x80 | even);
        QCOMPARE(int(fp8::encodeE5M2(std::nextafter(midpoint, kInf))), high);
        QCOMPARE(int(fp8::encodeE5M2(std::nextafter(midpoint, 0.0f))), low);
    }
}

void TestFp8::e5m2Rounding_data()
{
    QTest::addColumn<float>("value");
    QTest::addColumn<int>("code");
    const auto p2 = [](int e) { return static_cast<float>(std::ldexp(1.0, e)); };
    QTest::newRow("1") << 1.0f << 0x3C;
    QTest::newRow("1.125 ties to 1") << 1.125f << 0x3C;
    QTest::newRow("just above 1.125") << std::nextafter(1.125f, 2.0f) << 0x3D;
    QTest::newRow("1.375 ties to 1.5") << 1.375f << 0x3E;
    QTest::newRow("-2.5") << -2.5f << 0xC1;
    QTest::newRow("57344") << 57344.0f << 0x7B;
    QTest::newRow("61439 rounds down to max") << 61439.0f << 0x7B;
    QTest::newRow("61440 ties past max to Inf") << 61440.0f << 0x7C;
    QTest::newRow("1e6") << 1e6f << 0x7C;
    QTest::newRow("-1e6") << -1e6f << 0xFC;
    QTest::newRow("+inf") << kInf << 0x7C;
    QTest::newRow("-inf") << -kInf << 0xFC;
    QTest::newRow("2^-14") << p2(-14) << 0x04;
    QTest::newRow("2^-16") << p2(-16) << 0x01;
    QTest::newRow("2^-17 ties to 0") << p2(-17) << 0x00;
    QTest::newRow("1.5 * 2^-16 ties to 2") << 1.5f * p2(-16) << 0x02;
    QTest::newRow("3.5 * 2^-16 ties up to 2^-14") << 3.5f * p2(-16) << 0x04;
    QTest::newRow("-0") << -0.0f << 0x80;
    QTest::newRow("NaN") << kNaN << 0x7F;
}

void TestFp8::e5m2Rounding()
{
    QFETCH(float, value);
    QFETCH(int, code);
    QCOMPARE(int(fp8::encodeE5M2(value)), code);
}

void TestFp8::f16HandValues_data()
{
    QTest::addColumn<float>("value");
    QTest::addColumn<int>("bits");
    const auto p2 = [](int e) { return static_cast<float>(std::ldexp(1.0, e)); };
    QTest::newRow("1") << 1.0f << 0x3C00;
    QTest::newRow("-2.5") << -2.5f << 0xC100;
    QTest::newRow("0.1") << 0.1f << 0x2E66;
    QTest::newRow("65504 max") << 65504.0f << 0x7BFF;
    QTest::newRow("65519 rounds to max") << 65519.0f << 0x7BFF;
    QTest::newRow("65520 ties to Inf") << 65520.0f << 0x7C00;
    QTest::newRow("-65520") << -65520.0f << 0xFC00;
    QTest::newRow("1e6") << 1e6f << 0x7C00;
    QTest::newRow("inf") << kInf << 0x7C00;
    QTest::newRow("-inf") << -kInf << 0xFC00;
    QTest::newRow("2^-14 smallest normal") << p2(-14) << 0x0400;
    QTest::newRow("1023 * 2^-24 largest subnormal") << 1023.0f * p2(-24) << 0x03FF;
    QTest::newRow("2^-24 smallest subnormal") << p2(-24) << 0x0001;
    QTest::newRow("2^-25 ties to 0") << p2(-25) << 0x0000;
    QTest::newRow("just above 2^-25") << std::nextafter(p2(-25), 1.0f) << 0x0001;
    QTest::newRow("3 * 2^-25 ties to 2") << 3.0f * p2(-25) << 0x0002;
    QTest::newRow("1 + 2^-11 ties to 1") << 1.0f + p2(-11) << 0x3C00;
    QTest::newRow("1 + 3 * 2^-11 ties to 1 + 2^-9") << 1.0f + 3.0f * p2(-11) << 0x3C02;
    QTest::newRow("1 + 2^-11 + 2^-20") << 1.0f + p2(-11) + p2(-20) << 0x3C01;
    QTest::newRow("-0") << -0.0f << 0x8000;
    QTest::newRow("1e-10 underflows") << 1e-10f << 0x0000;
}

void TestFp8::f16HandValues()
{
    QFETCH(float, value);
    QFETCH(int, bits);
    QCOMPARE(int(half::floatToF16(value)), bits);
}

void TestFp8::f16AllCodes()
{
    for (int bits = 0; bits < 65536; ++bits) {
        const float value = half::f16ToFloat(static_cast<uint16_t>(bits));
        const float expected = f16FromFields(bits);
        if (!sameFloat(value, expected))
            QFAIL(qPrintable(QString("f16 0x%1 decodes to ").arg(bits, 4, 16, QChar('0')) + describe(value)));
        const bool isNaN = (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF);
        if (isNaN) {
            QVERIFY(std::isnan(value));
            const uint16_t back = half::floatToF16(value);
            QVERIFY((back & 0x7C00) == 0x7C00 && (back & 0x3FF) != 0);
        } else if (half::floatToF16(value) != bits) {
            QFAIL(qPrintable(QString("f16 0x%1 does not survive a round trip").arg(bits, 4, 16, QChar('0'))));
        }
    }
}

void TestFp8::bf16HandValues_data()
{
    QTest::addColumn<float>("value");
    QTest::addColumn<int>("bits");
    const auto p2 = [](int e) { return static_cast<float>(std::ldexp(1.0, e)); };
    QTest::newRow("1") << 1.0f << 0x3F80;
    QTest::newRow("-2.5") << -2.5f << 0xC020;
    QTest::newRow("3") << 3.0f << 0x4040;
    QTest::newRow("1 + 2^-8 ties to 1") << 1.0f + p2(-8) << 0x3F80;
    QTest::newRow("1 + 3 * 2^-8 ties to 1 + 2^-6") << 1.0f + 3.0f * p2(-8) << 0x3F82;
    QTest::newRow("1 + 2^-8 + 2^-20") << 1.0f + p2(-8) + p2(-20) << 0x3F81;
    QTest::newRow("FLT_MAX rounds to Inf") << FLT_MAX << 0x7F80;
    QTest::newRow("inf") << kInf << 0x7F80;
    QTest::newRow("-inf") << -kInf << 0xFF80;
    QTest::newRow("-0") << -0.0f << 0x8000;
    QTest::newRow("2^-133 smallest bf16 subnormal") << floatFromBits(0x00010000) << 0x0001;
    QTest::newRow("2^-149 rounds to 0") << floatFromBits(0x00000001) << 0x0000;
    QTest::newRow("2^-134 ties to 0") << floatFromBits(0x00008000) << 0x0000;
    QTest::newRow("3 * 2^-134 ties to 2") << floatFromBits(0x00018000) << 0x0002;
}

void TestFp8::bf16HandValues()
{
    QFETCH(float, value);
    QFETCH(int, bits);
    QCOMPARE(int(half::floatToBf16(value)), bits);
}

void TestFp8::bf16AllCodes()
{
    for (int bits = 0; bits < 65536; ++bits) {
        const float value = half::bf16ToFloat(static_cast<uint16_t>(bits));
        if (!sameFloat(value, bf16FromFields(bits)))
            QFAIL(qPrintable(QString("bf16 0x%1 decodes to ").arg(bits, 4, 16, QChar('0')) + describe(value)));
        const bool isNaN = (bits & 0x7F80) == 0x7F80 && (bits & 0x7F);
        if (!isNaN && half::floatToBf16(value) != bits)
            QFAIL(qPrintable(QString("bf16 0x%1 does not survive a round trip").arg(bits, 4, 16, QChar('0'))));
    }
}

void TestFp8::narrowingKeepsNaN()
{
    // Payload bits that truncation alone would drop: naive narrowing turns these into infinities.
    for (uint32_t nanBits : {0x7F800001u, 0xFF800001u, 0x7FC00000u, 0xFFFFFFFFu, 0x7F801000u}) {
        const float nan = floatFromBits(nanBits);
        const uint16_t bf16 = half::floatToBf16(nan);
        QVERIFY((bf16 & 0x7F80) == 0x7F80 && (bf16 & 0x7F) != 0);
        QCOMPARE(bool(bf16 & 0x8000), bool(nanBits >> 31));
        QVERIFY(std::isnan(half::bf16ToFloat(bf16)));
        const uint16_t f16 = half::floatToF16(nan);
        QVERIFY((f16 & 0x7C00) == 0x7C00 && (f16 & 0x3FF) != 0);
        QCOMPARE(bool(f16 & 0x8000), bool(nanBits >> 31));
        QVERIFY(std::isnan(half::f16ToFloat(f16)));
    }
}

// Every pair of neighbouring finite halves, from the bit fields: the values themselves, the midpoint
// (ties to the even code), and the floats on either side of it; past 65504 the midpoint to the next
// binade (65520) and above become inf. Runs through roundToHalfInPlace in one long array so the
// vector path and its scalar tail both see these values.
void TestFp8::roundToHalfPicksTheNearestHalf()
{
    std::vector<float> input, expected;
    auto expect = [&](float value, float result) {
        input.push_back(value);
        expected.push_back(result);
        input.push_back(-value);
        expected.push_back(-result);
    };
    for (int bits = 0; bits < 0x7BFF; ++bits) { // up to the code below 65504
        const float low = f16FromFields(bits), high = f16FromFields(bits + 1);
        const float midpoint = low + (high - low) / 2; // exact: halves have 11 significant bits
        const float even = (bits & 1) ? high : low;
        expect(low, low);
        expect(midpoint, even);
        expect(std::nextafter(midpoint, 0.0f), low);
        expect(std::nextafter(midpoint, kInf), high);
    }
    expect(65504.0f, 65504.0f);
    expect(std::nextafter(65520.0f, 0.0f), 65504.0f);
    expect(65520.0f, kInf); // the tie between 65504 and 2^16 goes to the even pattern, which is inf
    expect(1e6f, kInf);
    expect(FLT_MAX, kInf);
    expect(kInf, kInf);
    expect(floatFromBits(0x00000001), 0.0f); // float subnormals are far below half's 2^-24
    input.push_back(std::nanf(""));
    expected.push_back(std::nanf(""));
    std::vector<float> rounded = input;
    half::roundToHalfInPlace(rounded.data(), rounded.size());
    for (std::size_t i = 0; i < input.size(); ++i)
        if (!sameFloat(rounded[i], expected[i]) && !(std::isnan(rounded[i]) && std::isnan(expected[i])))
            QFAIL(qPrintable("roundToHalfInPlace(" + describe(input[i]) + ") = " + describe(rounded[i]) +
                             ", expected " + describe(expected[i])));
}

// Random float bit patterns of every exponent (NaNs included), at every length 0..40 so each tail
// size of the vector path is used: the same as the exhaustively tested codec, bit for bit
// (NaN: a NaN of the same sign).
void TestFp8::roundToHalfAgreesWithTheCodec()
{
    std::mt19937 random(2024);
    for (int length = 0; length <= 40; ++length) {
        for (int repeat = 0; repeat < 2000; ++repeat) {
            std::vector<float> values(static_cast<std::size_t>(length));
            for (float& value : values)
                value = floatFromBits(static_cast<uint32_t>(random()));
            std::vector<float> rounded = values;
            half::roundToHalfInPlace(rounded.data(), rounded.size());
            for (std::size_t i = 0; i < values.size(); ++i) {
                const float codec = half::f16ToFloat(half::floatToF16(values[i]));
                const bool same = std::isnan(codec) ? std::isnan(rounded[i]) && std::signbit(rounded[i]) == std::signbit(codec)
                                                    : sameFloat(rounded[i], codec);
                if (!same)
                    QFAIL(qPrintable("roundToHalfInPlace(" + describe(values[i]) + ") = " + describe(rounded[i]) +
                                     ", the codec gives " + describe(codec)));
            }
        }
    }
}

QTEST_GUILESS_MAIN(TestFp8)
#include "test_fp8.moc"
