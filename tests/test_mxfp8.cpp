// MXFP8 (compressed-tensors' `mxfp8-quantized` format, issue 29 item 3): the E8M0 exponent rule on
// hand-derived amax values, the activation kernel against the test's own statement of the rule,
// tiny MXFP8 and MXFP8A16 checkpoints (written here as compressed-tensors writes them) run in fp8,
// dequant and fp16 against the independent reference forward and, Linear by Linear, against a
// product computed here from the file's codes and exponents; inspect, diagnostics, the AIU verdict,
// the dl16 refusal and the refusal of an E8M0 NaN scale.
#include <QtTest>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "analysis/consumers.h"
#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "common/error.h"
#include "common/text_files.h"
#include "engine/activation_kernels.h"
#include "engine/compute_threads.h"
#include "engine/encoder_model.h"
#include "io/safetensors.h"
#include "model/quantization_config.h"
#include "numerics/mx.h"
#include "report/result_json.h"
#include "support/fixtures.h"
#include "support/reference_forward.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

const std::vector<int64_t> kIds = {0, 280, 281, 100, 290, 77, 301, 45, 2};

const FloatTensor& output(const ForwardResult& result, const std::string& name)
{
    for (const NamedTensor& t : result.outputs)
        if (t.name == name)
            return t.tensor;
    for (const NamedTensor& t : result.captures)
        if (t.name == name)
            return t.tensor;
    throw std::runtime_error("no tensor " + name);
}

double sqnrDb(const std::vector<float>& values, const std::vector<float>& reference)
{
    double signal = 0, noise = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double e = double(values[i]) - double(reference[i]);
        signal += double(reference[i]) * reference[i];
        noise += e * e;
    }
    return noise == 0 ? INFINITY : 10 * std::log10(signal / noise);
}

double maxAbsDifference(const std::vector<float>& values, const std::vector<float>& reference, double* range)
{
    double d = 0;
    *range = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        d = std::max(d, std::fabs(double(values[i]) - double(reference[i])));
        *range = std::max(*range, std::fabs(double(reference[i])));
    }
    return d;
}

EncoderInputs inputsFor(const std::vector<int64_t>& ids, const std::vector<int64_t>& types)
{
    EncoderInputs inputs;
    inputs.inputIds = {ids};
    inputs.tokenTypeIds = {types};
    return inputs;
}

std::vector<int64_t> typeIdsFor(const Checkpoint& checkpoint, std::size_t count)
{
    std::vector<int64_t> types(count, 0);
    if (checkpoint.config().typeVocabSize > 1)
        for (std::size_t i = count / 2; i < count; ++i)
            types[i] = 1;
    return types;
}

// The test's own statement of the activation rule: each run of 32 channels of a row quantized
// with the scale 2^(referenceMxfp8Exponent(amax) - 127), E4M3 by exhaustive search.
std::vector<float> quantizeRunsHere(const std::vector<float>& x, int64_t rows, int64_t features)
{
    std::vector<float> out(x.size());
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t begin = 0; begin < features; begin += 32) {
            const int64_t end = std::min(features, begin + 32);
            float amax = 0;
            for (int64_t c = begin; c < end; ++c)
                amax = std::max(amax, std::fabs(x[std::size_t(r * features + c)]));
            const float scale = std::ldexp(1.0f, int(referenceMxfp8Exponent(amax)) - 127);
            for (int64_t c = begin; c < end; ++c) {
                const std::size_t i = std::size_t(r * features + c);
                out[i] = referenceRoundToE4M3(x[i] / scale) * scale;
            }
        }
    return out;
}

struct Mxfp8Pair {
    std::string floatDir, mxDir;
};

Mxfp8Pair writeMxfp8(const std::string& architecture, const std::string& activations, int hidden = 64,
                     int intermediate = 96)
{
    TinyModelSpec spec;
    spec.architecture = architecture;
    spec.hiddenSize = hidden;
    spec.intermediateSize = intermediate;
    Mxfp8Pair pair{makeTempDir("float"), makeTempDir("mxfp8") + "/model"};
    writeTinyFloatCheckpoint(pair.floatDir, spec);
    Fp8Scheme scheme;
    scheme.weights = "mxfp8";
    scheme.activations = activations;
    writeTinyFp8Checkpoint(pair.floatDir, pair.mxDir, scheme);
    return pair;
}

// Rewrites one byte of a tensor of model.safetensors (everything else as it was).
void setTensorByte(const std::string& dir, const std::string& name, std::size_t index, uint8_t value)
{
    std::vector<TensorToWrite> tensors;
    {
        const auto store = TensorStore::openDirectory(dir);
        for (const TensorView* view : store->tensors()) {
            TensorToWrite copy{view->name, view->dtype, view->shape, {}};
            copy.bytes.assign(view->data, view->data + view->byteSize);
            if (view->name == name)
                copy.bytes.at(index) = value;
            tensors.push_back(std::move(copy));
        }
    }
    writeSafetensors(joinPath(dir, "model.safetensors"), tensors, {{"format", "pt"}});
}

bool hasFinding(const std::vector<Finding>& findings, const std::string& code, Severity severity)
{
    return std::any_of(findings.begin(), findings.end(),
                       [&](const Finding& f) { return f.code == code && f.severity == severity; });
}

} // namespace

class TestMxfp8 : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { setComputeThreads(2); }

    // compressed-tensors (ac8e2ba8) mxfp_utils.py + helpers.py: e = 127 + E - 8 for amax = m * 2^E,
    // E + 1 when m >= 1.75, clamped to [0, 255]; derived by hand for each row.
    void exponentRule_data()
    {
        QTest::addColumn<float>("amax");
        QTest::addColumn<int>("exponent");
        QTest::newRow("exactly 1 = 2^0") << 1.0f << 119;                        // scale 2^-8: 1 -> 256
        QTest::newRow("exactly 2^-3") << 0.125f << 116;
        QTest::newRow("just above 2^0") << std::nextafter(1.0f, 2.0f) << 119;
        QTest::newRow("just below 1.75") << std::nextafter(1.75f, 0.0f) << 119; // -> 447.99997, no clamp
        QTest::newRow("exactly 1.75 rounds up") << 1.75f << 120;                // scale 2^-7: 1.75 -> 224
        QTest::newRow("just below 2") << std::nextafter(2.0f, 0.0f) << 120;
        QTest::newRow("448 = 1.75 * 2^8") << 448.0f << 128;                     // scale 2: 448 -> 224
        QTest::newRow("zero run") << 0.0f << 0;                                 // log2(0) = -inf -> 0
        QTest::newRow("subnormal amax") << 1e-40f << 0;
        QTest::newRow("2^-120 clamps") << std::ldexp(1.0f, -120) << 0;
        QTest::newRow("2^-119 is 0") << std::ldexp(1.0f, -119) << 0;
        QTest::newRow("1.75 * 2^-120 rounds to 2^-119") << std::ldexp(1.75f, -120) << 0;
        QTest::newRow("2^-118") << std::ldexp(1.0f, -118) << 1;
        QTest::newRow("1e-30 = 1.58 * 2^-100") << 1e-30f << 19;
        QTest::newRow("2^127") << std::ldexp(1.0f, 127) << 246;
        QTest::newRow("FLT_MAX rounds to inf") << FLT_MAX << 255;
        QTest::newRow("inf") << INFINITY << 255;
    }
    void exponentRule()
    {
        QFETCH(float, amax);
        QFETCH(int, exponent);
        QCOMPARE(int(mx::scaleExponent(amax)), exponent);
        QCOMPARE(int(mx::scaleExponent(-amax)), exponent);
        QCOMPARE(int(referenceMxfp8Exponent(amax)), exponent); // the test-side statement agrees
    }

    void exponentDecoding()
    {
        QCOMPARE(mx::scaleFromExponent(127), 1.0f);
        QCOMPARE(mx::scaleFromExponent(119), 1.0f / 256);
        QCOMPARE(mx::scaleFromExponent(0), std::ldexp(1.0f, -127)); // a float32 subnormal, not 0
        QVERIFY(mx::scaleFromExponent(0) > 0);
        QCOMPARE(mx::scaleFromExponent(254), std::ldexp(1.0f, 127));
        QVERIFY(std::isinf(mx::scaleFromExponent(255)));
    }

    // One 32-channel run each, worked by hand: the value, the run's amax, what MXFP8 makes of it.
    void activationRunsByHand_data()
    {
        QTest::addColumn<float>("amax");
        QTest::addColumn<float>("value");
        QTest::addColumn<float>("expected");
        QTest::addColumn<float>("expectedScale");
        // 1.74 * 256 = 445.44 -> 448 (E4M3 step 32 above 256) -> 1.75; amax / 448 would keep 1.74.
        QTest::newRow("1.74 in its own run") << 1.74f << 1.74f << 1.75f << std::ldexp(1.0f, -8);
        // 0.3 * 256 = 76.8 -> 80 (step 8 in [64, 128)) -> 0.3125.
        QTest::newRow("0.3 beside amax 1") << 1.0f << 0.3f << 0.3125f << std::ldexp(1.0f, -8);
        // Rounded up: scale 2^-7; 1.3 * 128 = 166.4 -> 160 (step 16) -> 1.25.
        QTest::newRow("1.3 beside amax 1.75") << 1.75f << 1.3f << 1.25f << std::ldexp(1.0f, -7);
        // 1.9 = 1.9 * 2^0 rounds the scale up to 2^-7: 243.2 -> 240 (step 16) -> 1.875. A scale of
        // 2^-8 (no rounding up) would put it at 486.4, clamped to 448 -> 1.75.
        QTest::newRow("1.9 rounds the scale up") << 1.9f << 1.9f << 1.875f << std::ldexp(1.0f, -7);
        // 448 -> scale 2, 448 / 2 = 224 exact; 3 / 2 = 1.5 exact.
        QTest::newRow("448 itself") << 448.0f << 448.0f << 448.0f << 2.0f;
        QTest::newRow("3 beside 448") << 448.0f << 3.0f << 3.0f << 2.0f;
        // e = 0: scale 2^-127; 2^-125 / 2^-127 = 4 exact.
        QTest::newRow("tiny 2^-125") << std::ldexp(1.0f, -125) << std::ldexp(1.0f, -125) << std::ldexp(1.0f, -125)
                                     << std::ldexp(1.0f, -127);
        // 1e-30: e = 19, scale 2^-108; 1e-30 * 2^108 = 324.5 -> 320 -> 320 * 2^-108.
        QTest::newRow("1e-30") << 1e-30f << 1e-30f << std::ldexp(320.0f, -108) << std::ldexp(1.0f, -108);
        QTest::newRow("zero run") << 0.0f << 0.0f << 0.0f << std::ldexp(1.0f, -127);
    }
    void activationRunsByHand()
    {
        QFETCH(float, amax);
        QFETCH(float, value);
        QFETCH(float, expected);
        QFETCH(float, expectedScale);
        // Row of 64: the first run holds amax at channel 5 and the value at channel 9; the second
        // run is all zeros.
        std::vector<float> x(64, 0.0f), y(64, -1.0f);
        x[5] = amax;
        x[9] = value;
        const std::vector<float> scales = quantDequantActivations(
            x.data(), y.data(), 1, 64, ActivationQuantization::DynamicPerGroup, 0.0f, 32, true);
        QCOMPARE(scales.size(), std::size_t(2));
        QCOMPARE(scales[0], expectedScale);
        QCOMPARE(scales[1], std::ldexp(1.0f, -127));
        QCOMPARE(y[9], expected);
        for (int c = 32; c < 64; ++c)
            QCOMPARE(y[std::size_t(c)], 0.0f);
    }

    // Random rows of three runs, magnitudes from 1e-6 to 1e4, with an all-zero run: bit for bit.
    void activationKernelMatchesRule()
    {
        std::mt19937 engine(29);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::uniform_real_distribution<float> exponent(-20.0f, 14.0f);
        const int64_t rows = 40, features = 96;
        std::vector<float> x(std::size_t(rows * features));
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t run = 0; run < 3; ++run) {
                const float magnitude = (r % 7 == 3 && run == 1) ? 0.0f : std::exp2(exponent(engine));
                for (int64_t c = 0; c < 32; ++c)
                    x[std::size_t(r * features + run * 32 + c)] = normal(engine) * magnitude;
            }
        std::vector<float> y(x.size());
        const std::vector<float> scales = quantDequantActivations(
            x.data(), y.data(), rows, features, ActivationQuantization::DynamicPerGroup, 0.0f, 32, true);
        const std::vector<float> expected = quantizeRunsHere(x, rows, features);
        // E4M3 rounding of x / s is the same for any power of two s away from 448 and the
        // subnormals, so the scales are checked on their own: one per run, row by row.
        QCOMPARE(scales.size(), std::size_t(rows * 3));
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t run = 0; run < 3; ++run) {
                float amax = 0;
                for (int64_t c = 0; c < 32; ++c)
                    amax = std::max(amax, std::fabs(x[std::size_t(r * features + run * 32 + c)]));
                QCOMPARE(scales[std::size_t(r * 3 + run)], std::ldexp(1.0f, int(referenceMxfp8Exponent(amax)) - 127));
            }
        for (std::size_t i = 0; i < x.size(); ++i)
            QVERIFY2(y[i] == expected[i], qPrintable(QString("element %1: %2 vs %3").arg(i).arg(y[i]).arg(expected[i])));
        // Not the amax / 448 rule of other group activations.
        std::vector<float> plain(x.size());
        quantDequantActivations(x.data(), plain.data(), rows, features, ActivationQuantization::DynamicPerGroup, 0.0f, 32);
        QVERIFY(plain != y);
    }

    void planAndScheme()
    {
        const Mxfp8Pair pair = writeMxfp8("RobertaForQuestionAnswering", "mxfp8");
        const auto checkpoint = Checkpoint::open(pair.mxDir);
        const ConfigGroup& group = checkpoint->config().quantization->groups.at(0);
        QCOMPARE(group.format, std::string("mxfp8-quantized"));
        QVERIFY(!unsupportedSchemeReason(*checkpoint->config().quantization, group));
        QCOMPARE(describeScheme(group), std::string("MXFP8 weights per 32-channel block with E8M0 scales, dynamic MXFP8 "
                                                    "activations (per 32 channels, E8M0 scales)"));
        QVERIFY(!runsOnAiu(group));
        const LinearInfo& query = *checkpoint->plan().find("roberta.encoder.layer.0.attention.self.query");
        QVERIFY(query.quantized);
        QVERIFY(query.mxfp8Weights);
        QVERIFY(query.mxfp8Activations);
        QCOMPARE(query.activations, ActivationQuantization::DynamicPerGroup);
        QCOMPARE(query.activationGroupSize, int64_t(32));
        QVERIFY(checkpoint->plan().problem(query.module).empty());
        const TensorView& scale = checkpoint->tensors().require(query.module + ".weight_scale");
        QCOMPARE(scale.dtype, Dtype::U8);
        QCOMPARE(scale.shape, (std::vector<int64_t>{64, 2}));

        // The uint8 scale dtype only in MXFP8's layout: float-quantized with the same args, or
        // group_size 16 with uint8 scales, is refused with a sentence.
        QuantizationConfig config = *checkpoint->config().quantization;
        config.groups[0].format = "float-quantized";
        const auto wrongFormat = unsupportedSchemeReason(config, config.groups[0]);
        QVERIFY(wrongFormat && wrongFormat->find("mxfp8-quantized") != std::string::npos);
        config = *checkpoint->config().quantization;
        config.groups[0].weights->groupSize = 16;
        QVERIFY(unsupportedSchemeReason(config, config.groups[0]));
        config = *checkpoint->config().quantization;
        config.groups[0].inputActivations->groupSize = 16;
        QVERIFY(unsupportedSchemeReason(config, config.groups[0]));
    }

    void forwardMatchesReference_data()
    {
        QTest::addColumn<QString>("architecture");
        QTest::addColumn<QString>("activations");
        QTest::newRow("roberta-qa-mxfp8") << "RobertaForQuestionAnswering" << "mxfp8";
        QTest::newRow("bert-mlm-mxfp8") << "BertForMaskedLM" << "mxfp8";
        QTest::newRow("roberta-qa-mxfp8a16") << "RobertaForQuestionAnswering" << "none";
    }
    void forwardMatchesReference()
    {
        QFETCH(QString, architecture);
        QFETCH(QString, activations);
        const Mxfp8Pair pair = writeMxfp8(architecture.toStdString(), activations.toStdString());
        auto model = EncoderModel::load(pair.mxDir);
        QVERIFY(model->isQuantized());
        std::vector<int64_t> ids; // valid for the tiny tokenizer's vocabulary, whatever its size
        for (int64_t id : kIds)
            ids.push_back(id % model->checkpoint().config().vocabSize);
        const std::vector<int64_t> types = typeIdsFor(model->checkpoint(), ids.size());
        const bool qa = architecture.endsWith("QuestionAnswering");
        const std::vector<std::string> finals = qa ? std::vector<std::string>{"start_logits", "end_logits"}
                                                   : std::vector<std::string>{"logits"};
        for (const char* mode : {"fp8", "dequant", "fp16"}) {
            ForwardOptions options;
            QVERIFY(parseRunMode(mode, options.mode));
            options.capture.all = true;
            const ForwardResult result = model->forward(inputsFor(ids, types), options);
            const auto reference = referenceForward(pair.mxDir, ids, mode, types);
            for (const std::string& name : finals) {
                double range = 0;
                const double d = maxAbsDifference(output(result, name).values, reference.at(name).values, &range);
                const double sqnr = sqnrDb(output(result, name).values, reference.at(name).values);
                qInfo("%s %s %s: SQNR %.1f dB, max abs diff %.3g (range %.3g)", qPrintable(architecture), mode,
                      name.c_str(), sqnr, d, range);
                // float32 against double accumulation; fp16 rounds every module output to half.
                const double relative = std::string(mode) == "fp16" ? 5e-3 : std::string(mode) == "fp8" ? 2e-3 : 1e-4;
                QVERIFY2(d <= relative * std::max(1.0, range),
                         qPrintable(QString("%1 %2: max abs diff %3 (range %4)").arg(mode, QString::fromStdString(name)).arg(d).arg(range)));
            }
        }

        // Linear by Linear in fp8 mode: the engine's output against x quantized here and W decoded
        // here from the file's codes and E8M0 bytes (the same input, so only summation order differs).
        ForwardOptions fp8;
        fp8.capture.all = true;
        const ForwardResult result = model->forward(inputsFor(ids, types), fp8);
        const auto store = TensorStore::openDirectory(pair.mxDir);
        int checked = 0;
        double worst = INFINITY;
        for (const LinearInfo& linear : model->checkpoint().plan().linears()) {
            if (!linear.quantized)
                continue;
            const TensorView& codes = store->require(linear.module + ".weight");
            const TensorView& exponents = store->require(linear.module + ".weight_scale");
            const int64_t out = linear.outFeatures, in = linear.inFeatures, runs = (in + 31) / 32;
            QCOMPARE(exponents.shape, (std::vector<int64_t>{out, runs}));
            std::vector<double> w(std::size_t(out * in));
            for (int64_t o = 0; o < out; ++o)
                for (int64_t i = 0; i < in; ++i)
                    w[std::size_t(o * in + i)] = double(referenceDecodeE4M3(codes.data[o * in + i])) *
                                                 std::ldexp(1.0, int(exponents.data[o * runs + i / 32]) - 127);
            const FloatTensor& x = output(result, linear.module + ".input");
            const int64_t rows = int64_t(x.values.size()) / in;
            const std::vector<float> qx = activations == "mxfp8" ? quantizeRunsHere(x.values, rows, in) : x.values;
            std::vector<float> bias(std::size_t(out), 0.0f);
            if (const TensorView* b = store->find(linear.module + ".bias"))
                bias = b->toFloat().values;
            std::vector<float> expected(std::size_t(rows * out));
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t o = 0; o < out; ++o) {
                    double sum = 0;
                    for (int64_t i = 0; i < in; ++i)
                        sum += double(qx[std::size_t(r * in + i)]) * w[std::size_t(o * in + i)];
                    expected[std::size_t(r * out + o)] = float(sum) + bias[std::size_t(o)];
                }
            const double sqnr = sqnrDb(output(result, linear.module + ".output").values, expected);
            worst = std::min(worst, sqnr);
            QVERIFY2(sqnr >= 120, qPrintable(QString("%1: SQNR %2 dB").arg(QString::fromStdString(linear.module)).arg(sqnr)));
            ++checked;
        }
        qInfo("%d MXFP8 Linears, worst SQNR against the product computed here %.1f dB", checked, worst);
        QVERIFY(checked >= 12);

        // fp8 departs from dequant exactly when activations are quantized.
        ForwardOptions dequant;
        dequant.mode = RunMode::Dequant;
        const auto a = model->forward(inputsFor(ids, types), ForwardOptions{});
        const auto b = model->forward(inputsFor(ids, types), dequant);
        const double d = sqnrDb(output(a, finals[0]).values, output(b, finals[0]).values);
        if (activations == "none")
            QVERIFY(std::isinf(d));
        else
            QVERIFY2(std::isfinite(d) && d > 10, qPrintable(QString("fp8 vs dequant %1 dB").arg(d)));
    }

    void dl16IsRefused()
    {
        const Mxfp8Pair pair = writeMxfp8("RobertaForQuestionAnswering", "mxfp8");
        auto model = EncoderModel::load(pair.mxDir);
        ForwardOptions options;
        options.accumulation = Accumulation::Dl16;
        try {
            model->forward(inputsFor(kIds, std::vector<int64_t>(kIds.size(), 0)), options);
            QFAIL("an MXFP8 Linear ran with dl16");
        } catch (const Error& e) {
            const QString message = e.what();
            QVERIFY2(message.contains("roberta.encoder.layer.0.attention.self.query") && message.contains("MXFP8") &&
                         message.contains("DL16"),
                     e.what());
            QCOMPARE(message.count(". "), 0); // one sentence
        }
        // MXFP8A16 has no FP8 x FP8 products: dl16 leaves it as float32 runs it.
        const Mxfp8Pair weightOnly = writeMxfp8("RobertaForQuestionAnswering", "none");
        auto a16 = EncoderModel::load(weightOnly.mxDir);
        const EncoderInputs inputs = inputsFor(kIds, std::vector<int64_t>(kIds.size(), 0));
        QCOMPARE(output(a16->forward(inputs, options), "start_logits").values,
                 output(a16->forward(inputs, ForwardOptions{}), "start_logits").values);
    }

    void inspectSaysSchemeAndAiu()
    {
        const Mxfp8Pair pair = writeMxfp8("RobertaForQuestionAnswering", "mxfp8");
        const auto checkpoint = Checkpoint::open(pair.mxDir);
        const auto statistics = computeScaleStatistics(*checkpoint);
        const auto findings = diagnoseCheckpoint(*checkpoint, statistics);
        for (const Finding& f : findings)
            QVERIFY2(f.severity != Severity::Error, f.message.c_str());
        QVERIFY(hasFinding(findings, "aiu-unsupported", Severity::Warning));
        const json document = inspectJson(*checkpoint, statistics, findings);
        QCOMPARE(document["schemes"][0]["supported"].get<bool>(), true);
        QCOMPARE(document["schemes"][0]["runs_on_aiu"].get<bool>(), false);
        QVERIFY(document["schemes"][0]["description"].get<std::string>().find("MXFP8 weights per 32-channel block") == 0);
        // The E8M0 scales read as powers of two, one per 32 channels of a row.
        const LinearScaleStatistics& query = statistics.front();
        QCOMPARE(query.gridColumns, int64_t(2));
        QCOMPARE(query.blockColumns, int64_t(32));
        QCOMPARE(query.scaleDtype, std::string("U8"));
        for (float s : query.channelScales)
            QCOMPARE(std::exp2(std::round(std::log2(s))), double(s));

        for (const ConsumerReport& report : assessConsumers(*checkpoint))
            if (report.consumer == Consumer::Aiu) {
                QCOMPARE(report.verdict, ConsumerVerdict::Fails);
                QVERIFY(std::any_of(report.findings.begin(), report.findings.end(), [](const ConsumerFinding& f) {
                    return f.code == "aiu-weights-unsupported" && f.message.find("MXFP8 weights") != std::string::npos;
                }));
            }

        QProcess cli;
        cli.start(QStringLiteral(SCALESCOPE_CLI), {"inspect", QString::fromStdString(pair.mxDir)});
        QVERIFY(cli.waitForFinished(120000));
        const QString text = QString::fromUtf8(cli.readAllStandardOutput());
        QCOMPARE(cli.exitCode(), 0);
        QVERIFY2(text.contains("MXFP8 weights per 32-channel block with E8M0 scales, dynamic MXFP8 activations"),
                 qPrintable(text));
        QVERIFY2(text.contains("aiu-unsupported") && text.contains("cannot run on AIU"), qPrintable(text));
        cli.start(QStringLiteral(SCALESCOPE_CLI), {"inspect", "--json", QString::fromStdString(pair.mxDir)});
        QVERIFY(cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 0);
        const json cliJson = json::parse(cli.readAllStandardOutput().toStdString());
        QCOMPARE(cliJson["schemes"][0]["runs_on_aiu"].get<bool>(), false);
    }

    // E8M0 255 is NaN in the OCP MX format (compressed-tensors would decode it as 2^128): a run
    // refuses the checkpoint naming the tensor, and inspect reports it.
    void nanScaleIsRefused()
    {
        const Mxfp8Pair pair = writeMxfp8("RobertaForQuestionAnswering", "mxfp8");
        const std::string tensor = "roberta.encoder.layer.1.output.dense.weight_scale";
        setTensorByte(pair.mxDir, tensor, 5, 255);
        try {
            EncoderModel::load(pair.mxDir);
            QFAIL("an E8M0 NaN scale loaded");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains(QString::fromStdString(tensor)) && QString(e.what()).contains("255"), e.what());
        }
        const auto checkpoint = Checkpoint::open(pair.mxDir);
        const auto findings = diagnoseCheckpoint(*checkpoint, computeScaleStatistics(*checkpoint));
        QVERIFY(hasFinding(findings, "scale-invalid", Severity::Error));
    }
};

QTEST_GUILESS_MAIN(TestMxfp8)
#include "test_mxfp8.moc"
