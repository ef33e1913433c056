// Device checks (core/tasks/device_check.h, core/report/check_report.h, `noise-floor` and `check`):
// the percentile and bootstrap rules against test-side implementations of the rules as DESIGN
// states them, the gate on hand-built measurements, the thresholds file, JUnit XML, and end to end
// through the CLI: a runner that runs one Linear differently is located at that Linear, the same
// runner without the difference passes, and the thresholds file is reproducible.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "report/check_report.h"
#include "numerics/metrics.h"
#include "support/cli_process.h"
#include "support/fixtures.h"
#include "tasks/device_check.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// numpy's default percentile written out from its definition: rank p/100 * (n - 1) on the sorted
// values, linear between the two closest ranks.
double numpyPercentile(std::vector<double> values, double p)
{
    std::sort(values.begin(), values.end());
    const double rank = p / 100.0 * double(values.size() - 1);
    const auto below = std::size_t(std::floor(rank));
    const auto above = std::min(below + 1, values.size() - 1);
    return values[below] + (rank - double(below)) * (values[above] - values[below]);
}

CheckValues values(double sqnr, double cosine = kNan, double maxAbs = kNan, double ce = kNan, double diff = kNan)
{
    return {sqnr, cosine, maxAbs, ce, diff};
}

// A measurement of `inputs` inputs over the named points against one twin, every value `base`.
RunMeasurements syntheticMeasurement(const std::vector<std::string>& points, std::size_t inputs, double baseSqnr)
{
    RunMeasurements m;
    m.kind = CheckInputSet::Kind::Texts;
    m.runName = "device";
    m.twinNames = {"emulation"};
    m.twinDescriptions = {"the emulation"};
    m.points = points;
    m.pointLabels = points;
    m.pointLayers.assign(points.size(), -1);
    for (std::size_t i = 0; i < inputs; ++i) {
        InputMeasurement input;
        input.id = "text " + std::to_string(i + 1);
        input.values.assign(1, std::vector<CheckValues>(points.size(), values(baseSqnr, 1.0, 0.0)));
        m.inputs.push_back(input);
    }
    return m;
}

ThresholdSet flatThresholds(const std::vector<std::string>& points, double sqnr)
{
    ThresholdSet set;
    for (const std::string& point : points)
        set.points.push_back({point, 10, values(sqnr, kNan, kNan)});
    return set;
}

// The tiny fixture takes 128 tokens at most.
const QStringList kWindowOptions = {"--max-seq-len", "128", "--doc-stride", "32"};

// The CLI on the tiny fixture's windows; a check runs many forwards, so it gets ten minutes.
CliResult runCheckCli(const QStringList& args)
{
    return runCli(args + kWindowOptions, 600000);
}

QString q(const std::string& text)
{
    return QString::fromStdString(text);
}

void writeText(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary);
    out << text;
}

std::string readText(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Questions in the tiny fixture's vocabulary (fixed seed): contexts of 10 to 16 words, each question
// asking for a word of its context.
json generatedSquad(int questions)
{
    const std::vector<std::string> words = {"the", "cat", "sat", "on", "mat", "a", "dog", "Paris", "is", "capital", "of", "France"};
    std::mt19937 generator(42);
    json qas = json::array();
    json paragraphs = json::array();
    for (int i = 0; i < questions; ++i) {
        std::string context;
        const int length = 10 + int(generator() % 7);
        std::vector<std::pair<std::size_t, std::string>> starts;
        for (int w = 0; w < length; ++w) {
            const std::string& word = words[generator() % words.size()];
            if (!context.empty())
                context += ' ';
            starts.push_back({context.size(), word});
            context += word;
        }
        const auto& [start, answer] = starts[generator() % starts.size()];
        json qa = {{"id", "g" + std::to_string(i)},
                   {"question", "where is the " + answer + " ?"},
                   {"answers", {{{"text", answer}, {"answer_start", start}}}},
                   {"is_impossible", false}};
        paragraphs.push_back({{"context", context}, {"qas", {qa}}});
    }
    return {{"version", "v2.0"}, {"data", {{{"title", "generated"}, {"paragraphs", paragraphs}}}}};
}

// A command's JSON document, or null (the test then fails on what it reads) when it printed none.
json parsedJson(const QString& text)
{
    return json::parse(text.toStdString(), nullptr, false);
}

std::string shellQuote(const std::string& text)
{
    std::string out = "'";
    for (char c : text)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

} // namespace

class TestDeviceCheck : public QObject {
    Q_OBJECT

private:
    QTemporaryDir dir_;
    std::string floatDir_, fp8Dir_, perturbedFp8Dir_, squadPath_, proxyScript_;

private slots:
    void initTestCase()
    {
        QVERIFY(dir_.isValid());
        const std::string root = dir_.path().toStdString();
        // The CLI's check cache goes into this test's folder, never into the user's.
        qputenv("SCALESCOPE_CHECK_CACHE", QByteArray::fromStdString(root + "/check-cache"));
        floatDir_ = root + "/float";
        fp8Dir_ = root + "/fp8";
        perturbedFp8Dir_ = root + "/fp8-perturbed";
        TinyModelSpec spec;
        spec.numLayers = 3;
        writeTinyFloatCheckpoint(floatDir_, spec);
        writeTinyFp8Checkpoint(floatDir_, fp8Dir_, Fp8Scheme{});
        // The device's copy: the same checkpoint with layer 1's attention output Linear running
        // four output channels 1.5x too large (weights and scales requantized from a float copy
        // whose rows were scaled), everything else identical.
        const std::string perturbedFloat = root + "/float-perturbed";
        writeTinyFloatCheckpoint(perturbedFloat, spec);
        for (int64_t row = 0; row < 4; ++row)
            scaleLinearRow(perturbedFloat, "roberta.encoder.layer.1.attention.output.dense", row, 1.5f);
        writeTinyFp8Checkpoint(perturbedFloat, perturbedFp8Dir_, Fp8Scheme{});
        squadPath_ = root + "/questions.json";
        writeText(squadPath_, generatedSquad(24).dump());
        // A proxy runner: the CPU runner behind a filter that makes it speak protocol 1 (the
        // checkpoint is named by path) and load the perturbed copy instead of the checkpoint asked
        // for. The client still sees one checkpoint: only the device runs differently.
        proxyScript_ = root + "/proxy-runner.sh";
        writeText(proxyScript_, "#!/bin/sh\n"
                                "sed -u -e 's/\"protocols\":\\[1,2\\]/\"protocols\":[1]/' "
                                "-e \"s#\\\"checkpoint\\\":\\\"$2\\\"#\\\"checkpoint\\\":\\\"$3\\\"#\" | exec \"$1\" runner\n");
    }

    void percentileFollowsTheLinearRankRule_data()
    {
        QTest::addColumn<std::vector<double>>("values");
        QTest::addColumn<double>("p");
        QTest::newRow("median of four") << std::vector<double>{4, 1, 3, 2} << 50.0;
        QTest::newRow("99th of four") << std::vector<double>{4, 1, 3, 2} << 99.0;
        QTest::newRow("1st of five") << std::vector<double>{10, -2, 7, 7, 3} << 1.0;
        QTest::newRow("one value") << std::vector<double>{5} << 99.0;
        QTest::newRow("100th") << std::vector<double>{0.5, 0.25} << 100.0;
    }
    void percentileFollowsTheLinearRankRule()
    {
        QFETCH(std::vector<double>, values);
        QFETCH(double, p);
        QCOMPARE(percentileOf(values, p), numpyPercentile(values, p));
    }

    void percentileHandValuesNanAndInfinity()
    {
        // rank 0.99 * 3 = 2.97 between 3 and 4.
        QCOMPARE(percentileOf({1, 2, 3, 4}, 99), 3.97);
        QCOMPARE(percentileOf({1, kNan, 3}, 50), 2.0);
        QVERIFY(std::isnan(percentileOf({kNan}, 50)));
        QCOMPARE(percentileOf({1, kInf, kInf}, 99), kInf);
        QCOMPARE(percentileOf({30, kInf, kInf, kInf}, 1), 30.0 + 0.03 * (kInf - 30.0));
    }

    void bootstrapMatchesTheStatedRule()
    {
        // The rule as the header states it, written again here: std::mt19937_64(seed), index =
        // generator() % n, resampled means, interval at the 2.5th and 97.5th percentiles.
        const std::vector<double> differences = {0, 0, -100, 0, 50, 0, 0, -100, 0, 0, 100, 0};
        const int resamples = 500;
        const std::uint64_t seed = 7;
        std::mt19937_64 generator(seed);
        std::vector<double> means;
        for (int r = 0; r < resamples; ++r) {
            double sum = 0;
            for (std::size_t i = 0; i < differences.size(); ++i)
                sum += differences[generator() % differences.size()];
            means.push_back(sum / double(differences.size()));
        }
        const BootstrapInterval interval = pairedBootstrap(differences, resamples, seed);
        QCOMPARE(interval.low, numpyPercentile(means, 2.5));
        QCOMPARE(interval.high, numpyPercentile(means, 97.5));
        QCOMPARE(interval.mean, -50.0 / 12.0);
        QVERIFY(interval.low < interval.mean && interval.mean < interval.high);
    }

    void bootstrapHandComputedCases()
    {
        // Every difference the same: every resample's mean is that value.
        const BootstrapInterval constant = pairedBootstrap({-2.5, -2.5, -2.5});
        QCOMPARE(constant.low, -2.5);
        QCOMPARE(constant.high, -2.5);
        // Two questions, differences 0 and 1: a resample's mean is 0, 0.5 or 1 with chances 1/4,
        // 1/2, 1/4, so with 2,000 resamples the 2.5th percentile is 0 and the 97.5th is 1.
        const BootstrapInterval two = pairedBootstrap({0, 1});
        QCOMPARE(two.low, 0.0);
        QCOMPARE(two.high, 1.0);
        QCOMPARE(two.mean, 0.5);
        QCOMPARE(two.seed, kBootstrapSeed);
    }

    void noiseFloorTakesTheBadTailOfEachMetric()
    {
        RunMeasurements m = syntheticMeasurement({"a"}, 101, 0);
        for (std::size_t i = 0; i < m.inputs.size(); ++i)
            m.inputs[i].values[0][0] = values(40.0 + double(i), 1.0 - 1e-4 * double(i), double(i), kNan, kNan);
        const ThresholdSet set = noiseFloorThresholds(m);
        QCOMPARE(set.points.size(), std::size_t(1));
        const CheckValues& t = set.points[0].thresholds;
        // 101 values: rank 1 and rank 99 exactly.
        QCOMPARE(t[std::size_t(CheckMetric::SqnrDb)], 41.0);            // 1st percentile: lower is worse
        QCOMPARE(t[std::size_t(CheckMetric::Cosine)], 1.0 - 1e-4 * 99);  // 1st percentile of the cosines
        QCOMPARE(t[std::size_t(CheckMetric::MaxAbs)], 99.0);             // 99th percentile: higher is worse
        QVERIFY(std::isnan(t[std::size_t(CheckMetric::CrossEntropy)]));
        QCOMPARE(set.points[0].samples, std::size_t(101));
    }

    void checkLocatesTheFirstFailingPoint()
    {
        const std::vector<std::string> points = {"emb", "L0.out", "L1.in", "L1.out", "logits"};
        RunMeasurements m = syntheticMeasurement(points, 10, 80.0);
        // Inputs 0..5 depart at L1.out (and stay departed), input 6 only at the logits.
        for (std::size_t i = 0; i < 6; ++i) {
            m.inputs[i].values[0][3][0] = 20.0;
            m.inputs[i].values[0][4][0] = 25.0;
        }
        m.inputs[6].values[0][4][0] = 25.0;
        m.inputs[9].skipped = true;
        const CheckResult result = evaluateCheck(m, flatThresholds(points, 50.0), CheckGate{});
        QVERIFY(!result.passed);
        const TwinCheck& twin = result.twins[0];
        QCOMPARE(twin.departureStart, std::string("L1.out"));
        QCOMPARE(twin.departureStartInputs, std::size_t(6));
        QCOMPARE(twin.points[3].failures, std::size_t(6));
        QCOMPARE(twin.points[3].inputs, std::size_t(9));
        QCOMPARE(twin.points[3].failureRate, 6.0 / 9.0);
        QCOMPARE(twin.points[4].failures, std::size_t(7));
        QCOMPARE(twin.points[4].departuresStartHere, std::size_t(1));
        for (std::size_t p = 0; p < 3; ++p)
            QCOMPARE(twin.points[p].failures, std::size_t(0));
        QCOMPARE(twin.firstFailingPoint[0], std::string("L1.out"));
        QCOMPARE(twin.firstFailingPoint[6], std::string("logits"));
        QCOMPARE(twin.firstFailingPoint[7], std::string());
        QCOMPARE(twin.failingInputs, std::size_t(7));
        QCOMPARE(twin.failedPoints, std::size_t(2));
        QVERIFY(result.verdictSentence.find("L1.out on 6 of 9 inputs") != std::string::npos);

        // The same run within a 70 % allowed rate passes; without any departure it passes at 1 %.
        CheckGate lenient;
        lenient.maxFailureRate = 0.8;
        QVERIFY(evaluateCheck(m, flatThresholds(points, 50.0), lenient).passed);
        QVERIFY(evaluateCheck(syntheticMeasurement(points, 10, 80.0), flatThresholds(points, 50.0), CheckGate{}).passed);
        // A NaN value never passes; a point the thresholds do not name is not checked.
        RunMeasurements nan = syntheticMeasurement(points, 4, 80.0);
        nan.inputs[0].values[0][1][0] = kNan;
        ThresholdSet partial = flatThresholds({"L0.out"}, 50.0);
        const CheckResult nanResult = evaluateCheck(nan, partial, CheckGate{});
        QCOMPARE(nanResult.twins[0].points[1].failures, std::size_t(1));
        QVERIFY(!nanResult.twins[0].points[0].checked);
        QVERIFY_THROWS_EXCEPTION(Error, evaluateCheck(nan, flatThresholds({"elsewhere"}, 50.0), CheckGate{}));
    }

    void f1DropGate()
    {
        const std::vector<std::string> points = {"logits"};
        RunMeasurements m = syntheticMeasurement(points, 40, 80.0);
        m.kind = CheckInputSet::Kind::Squad;
        for (std::size_t i = 0; i < m.inputs.size(); ++i) {
            InputMeasurement& input = m.inputs[i];
            input.hasAnswer = true;
            input.twinScores = {ExampleScore{1, 1}};
            input.runScore = ExampleScore{1, 1};
            input.twinPredictions = {"x"};
        }
        // Four of 40 answers lost: F1 10 points lower on average.
        for (std::size_t i = 0; i < 4; ++i)
            m.inputs[i].runScore = ExampleScore{0, 0};
        const CheckResult result = evaluateCheck(m, flatThresholds(points, 50.0), CheckGate{});
        QVERIFY(!result.passed);
        const BootstrapInterval& f1 = *result.twins[0].f1Difference;
        QCOMPARE(f1.mean, -10.0);
        QVERIFY(f1.low < -10.0 && f1.high > -10.0 && f1.high <= 0.0);
        QCOMPARE(result.runScores->f1, 90.0);
        QCOMPARE(result.twins[0].twinScores->f1, 100.0);
        QCOMPARE(result.reasons.size(), std::size_t(1));
        QVERIFY(result.reasons[0].find("F1 drop") != std::string::npos);
        CheckGate generous;
        generous.maxF1Drop = 50;
        QVERIFY(evaluateCheck(m, flatThresholds(points, 50.0), generous).passed);
    }

    void thresholdsFileRoundTrip()
    {
        ThresholdSet set;
        set.percentile = 99;
        set.points.push_back({"a", 12, values(kInf, 0.5, 0.0, kNan, 1e-6)});
        set.points.push_back({"b", 3, values(-kInf, kNan, 2.5, 0.25, kNan)});
        set.provenance["runs"] = "reference,reference-fp16";
        const ThresholdSet back = thresholdsFromJson(json::parse(thresholdsJson(set).dump()), "t.json");
        QCOMPARE(back.points.size(), std::size_t(2));
        for (std::size_t p = 0; p < 2; ++p) {
            QCOMPARE(back.points[p].point, set.points[p].point);
            QCOMPARE(back.points[p].samples, set.points[p].samples);
            for (std::size_t m = 0; m < kCheckMetricCount; ++m) {
                const double a = set.points[p].thresholds[m], b = back.points[p].thresholds[m];
                QVERIFY2((std::isnan(a) && std::isnan(b)) || a == b, checkMetricName(CheckMetric(m)));
            }
        }
        QCOMPARE(back.provenance.at("runs"), std::string("reference,reference-fp16"));

        const auto refused = [](const json& document) {
            try {
                thresholdsFromJson(document, "bad.json");
            } catch (const Error& e) {
                return std::string(e.what());
            }
            return std::string();
        };
        json good = thresholdsJson(set);
        QVERIFY(refused(json::object()).find("bad.json is not a thresholds file") == 0);
        json wrongMetric = good;
        wrongMetric["points"][0]["thresholds"]["snr"] = 1;
        QVERIFY(refused(wrongMetric).find("unknown metric \"snr\"") != std::string::npos);
        json notNumber = good;
        notNumber["points"][1]["thresholds"]["max_abs"] = "big";
        QVERIFY(refused(notNumber).find("not a number") != std::string::npos);
        json twice = good;
        twice["points"][1]["point"] = "a";
        QVERIFY(refused(twice).find("twice") != std::string::npos);
    }

    void thresholdsOutsideTheirMetricsRangeAreRefused()
    {
        ThresholdSet set;
        set.points.push_back({"a", 12, values(kInf, 1.0, 0.0, 0.0, 0.0)});
        set.points.push_back({"L2.out", 12, values(-kInf, -1.0, kInf, kInf, 1.0)});
        const json good = thresholdsJson(set);
        QCOMPARE(thresholdsFromJson(good, "t.json").points.size(), std::size_t(2)); // the ends are in range
        const auto refusal = [&](const char* metric, const json& value) {
            json document = good;
            document["points"][1]["thresholds"][metric] = value;
            try {
                thresholdsFromJson(document, "t.json");
            } catch (const Error& e) {
                return std::string(e.what());
            }
            return std::string();
        };
        QCOMPARE(refusal("cosine", 2.0),
                 std::string("t.json gives cosine at point L2.out the threshold 2.0, outside the metric's range -1.0 to 1.0."));
        // What a noise floor of cosines rounded past 1 wrote: quoted to the digit that puts it outside.
        QVERIFY2(refusal("cosine", std::nextafter(1.0, 2.0)).find("the threshold 1.0000000000000002, outside") != std::string::npos,
                 refusal("cosine", std::nextafter(1.0, 2.0)).c_str());
        QVERIFY(refusal("cosine", "-inf").find("cosine at point L2.out") != std::string::npos);
        QVERIFY(refusal("max_abs", -0.5).find("max_abs at point L2.out the threshold -0.5, outside the metric's range 0.0 to inf") !=
                std::string::npos);
        QVERIFY(refusal("cross_entropy", -1e-18).find("cross_entropy at point L2.out") != std::string::npos);
        QVERIFY(refusal("mean_probability_difference", 1.5).find("mean_probability_difference at point L2.out") != std::string::npos);
        json percentile = good;
        percentile["percentile"] = 101;
        try {
            thresholdsFromJson(percentile, "t.json");
            QFAIL("a percentile of 101 was accepted");
        } catch (const Error& e) {
            QCOMPARE(std::string(e.what()), std::string("t.json has a \"percentile\" of 101, outside 0 to 100."));
        }
    }

    void aRunIdenticalToItsTwinPassesEveryNoiseFloor()
    {
        // Cosines of identical values are 1 exactly, whatever rounding does to the quotient of the
        // sums, and no cosine passes 1 (found by a search over random vectors, before: 1 +- 2^-52).
        std::mt19937 random(7);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        for (int trial = 0; trial < 2000; ++trial) {
            std::vector<float> x(std::size_t(1 + trial % 97));
            for (float& v : x)
                v = normal(random);
            QCOMPARE(computeErrorMetrics(x, x).cosine, 1.0);
            std::vector<float> near = x;
            near[0] = std::nextafter(near[0], 100.0f);
            QVERIFY(computeErrorMetrics(near, x).cosine <= 1.0);
        }
        // A noise floor whose cosines rounded past 1 (measured before the metric was bounded) still
        // writes a threshold a run identical to its twin meets.
        RunMeasurements floor = syntheticMeasurement({"a", "logits"}, 10, 60.0);
        for (InputMeasurement& input : floor.inputs)
            input.values[0] = {values(60.0, std::nextafter(1.0, 2.0), 0.0, -1e-17, 0.0),
                               values(60.0, std::nextafter(1.0, 2.0), 0.0, -1e-17, 0.0)};
        const ThresholdSet thresholds = noiseFloorThresholds(floor);
        for (const PointThresholds& point : thresholds.points)
            for (CheckMetric metric : allCheckMetrics())
                QVERIFY2(checkMetricRange(metric).contains(point.thresholds[std::size_t(metric)]), checkMetricName(metric));
        RunMeasurements identical = syntheticMeasurement({"a", "logits"}, 10, kInf);
        for (InputMeasurement& input : identical.inputs)
            input.values[0] = {values(kInf, 1.0, 0.0, 0.0, 0.0), values(kInf, 1.0, 0.0, 0.0, 0.0)};
        const CheckResult result = evaluateCheck(identical, thresholds, CheckGate{});
        QVERIFY2(result.passed, result.verdictSentence.c_str());
        // And the file it writes reads back.
        QCOMPARE(thresholdsFromJson(thresholdsJson(thresholds), "t.json").points.size(), std::size_t(2));
    }

    void aLargeThresholdsFileIsReadWhole()
    {
        // 200,000 points: reading took 67 s when each point was looked for among those before it.
        constexpr std::size_t count = 200000;
        json document = thresholdsJson(flatThresholds({"p"}, 50.0));
        json& points = document["points"];
        points = json::array();
        for (std::size_t i = 0; i < count; ++i)
            points.push_back({{"point", "point " + std::to_string(i)}, {"samples", i}, {"thresholds", {{"sqnr_db", double(i)}}}});
        const ThresholdSet set = thresholdsFromJson(document, "big.json");
        QCOMPARE(set.points.size(), count);
        QCOMPARE(set.points.back().point, "point " + std::to_string(count - 1));
        QCOMPARE(set.points.back().thresholds[std::size_t(CheckMetric::SqnrDb)], double(count - 1));
        QCOMPARE(set.points.back().samples, count - 1);
        // A repeated name is still found, however far apart the two are.
        points.push_back(points[0]);
        QVERIFY_THROWS_EXCEPTION(Error, thresholdsFromJson(document, "big.json"));
    }

    void junitHasACasePerCheckedPointAndOneEndToEnd()
    {
        const std::vector<std::string> points = {"emb", "L0 <out>", "logits"};
        RunMeasurements m = syntheticMeasurement(points, 5, 80.0);
        m.inputs[0].values[0][1][0] = 10.0;
        const CheckResult result = evaluateCheck(m, flatThresholds(points, 50.0), CheckGate{});
        const QString xml = QString::fromStdString(checkJunitXml(result));
        QXmlStreamReader reader(xml);
        int cases = 0, failures = 0;
        QStringList failing;
        QString current;
        while (!reader.atEnd()) {
            reader.readNext();
            if (reader.isStartElement() && reader.name() == QStringLiteral("testcase")) {
                ++cases;
                current = reader.attributes().value("name").toString();
            }
            if (reader.isStartElement() && reader.name() == QStringLiteral("failure")) {
                ++failures;
                failing << current;
            }
        }
        QVERIFY2(!reader.hasError(), qPrintable(reader.errorString()));
        QCOMPARE(cases, 4);
        QCOMPARE(failures, 2);
        QCOMPARE(failing, (QStringList{"L0 <out>", "end to end"}));
    }

    void textInputsFile()
    {
        const std::string path = dir_.path().toStdString() + "/texts.txt";
        writeText(path, "the cat sat\n\n  \r\nParis is the capital of France\r\n");
        const CheckInputSet inputs = textCheckInputs(path, 0);
        QCOMPARE(inputs.texts, (std::vector<std::string>{"the cat sat", "Paris is the capital of France"}));
        QCOMPARE(inputs.inputId(1), std::string("text 2"));
        writeText(path, "ok\n\xff\xfe bad\n");
        try {
            textCheckInputs(path, 0);
            QFAIL("a line that is not UTF-8 was read");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()) == path + " line 2: is not UTF-8 text.", e.what());
        }
        writeText(path, "\n \n");
        QVERIFY_THROWS_EXCEPTION(Error, textCheckInputs(path, 0));
        // JSONL with pairs, as readTextsFile reads it (the one texts reader).
        writeText(path, "{\"text\": \"what is it\", \"pair\": \"a cat\"}\n{\"text\": \"alone\"}\n");
        const CheckInputSet paired = textCheckInputs(path, 0);
        QCOMPARE(paired.texts, (std::vector<std::string>{"what is it", "alone"}));
        QCOMPARE(paired.pairs.size(), std::size_t(2));
        QCOMPARE(paired.pairs[0].value_or(""), std::string("a cat"));
        QVERIFY(!paired.pairs[1]);
    }

    void noiseFloorFileIsReproducible()
    {
        const std::string root = dir_.path().toStdString();
        QStringList args = {"noise-floor", q(fp8Dir_), "--reference", q(floatDir_), "--squad", q(squadPath_), "--output"};
        const CliResult first = runCheckCli(args + QStringList{q(root + "/t1.json")});
        QVERIFY2(first.exitCode == 0, qPrintable(first.err));
        const CliResult second = runCheckCli(args + QStringList{q(root + "/t2.json")});
        QVERIFY2(second.exitCode == 0, qPrintable(second.err));
        json a = json::parse(readText(root + "/t1.json"));
        json b = json::parse(readText(root + "/t2.json"));
        QCOMPARE(a["format"], json("scalescope-thresholds"));
        QCOMPARE(a["provenance"]["runs"], json("reference,reference-fp16"));
        QCOMPARE(a["provenance"]["inputs_count"], json("24"));
        QVERIFY(a["provenance"]["checkpoint_sha256"].get<std::string>().size() == 64);
        QVERIFY(a["provenance"]["reference_sha256"].get<std::string>().size() == 64);
        QVERIFY(a["provenance"].contains("created"));
        a["provenance"].erase("created");
        b["provenance"].erase("created");
        QCOMPARE(a.dump(), b.dump());
        // Every capture point, then the logits with the two distribution metrics.
        const json& points = a["points"];
        QVERIFY(points.size() > 10);
        QCOMPARE(points.front()["point"], json("roberta.embeddings.output"));
        QCOMPARE(points.back()["point"], json("qa_logits"));
        for (const char* metric : {"sqnr_db", "cosine", "max_abs", "cross_entropy", "mean_probability_difference"})
            QVERIFY2(points.back()["thresholds"].contains(metric), metric);
        QVERIFY(!points.front()["thresholds"].contains("cross_entropy"));
        // float32 against half differ by rounding only: tens of dB, never exact.
        const double sqnr = points.front()["thresholds"]["sqnr_db"].get<double>();
        QVERIFY2(sqnr > 40 && sqnr < 120, qPrintable(QString::number(sqnr)));

        // An existing output is not replaced without --force, and nothing is written on a usage error.
        const CliResult again = runCheckCli(args + QStringList{q(root + "/t1.json")});
        QCOMPARE(again.exitCode, 1);
        QVERIFY2(again.err.contains("already exists"), qPrintable(again.err));
        const CliResult badRuns = runCheckCli({"noise-floor", q(fp8Dir_), "--squad", q(squadPath_), "--runs",
            "reference,gpu", "--output", q(root + "/t3.json")});
        QVERIFY(badRuns.exitCode != 0);
        QVERIFY2(badRuns.err.contains("--runs") && badRuns.err.contains("gpu"), qPrintable(badRuns.err));
        QVERIFY(!QFile::exists(q(root + "/t3.json")));
    }

    void deviceThatDepartsAtOneLinearIsLocatedThere()
    {
        const std::string root = dir_.path().toStdString();
        const std::string thresholds = root + "/thresholds.json";
        const CliResult floor = runCheckCli({"noise-floor", q(fp8Dir_), "--reference", q(floatDir_), "--squad",
            q(squadPath_), "--output", q(thresholds), "--force"});
        QVERIFY2(floor.exitCode == 0, qPrintable(floor.err));

        const std::string proxy = "runner:sh " + shellQuote(proxyScript_) + " " + shellQuote(SCALESCOPE_CLI) + " " +
                                  shellQuote(fp8Dir_) + " " + shellQuote(perturbedFp8Dir_);
        const std::string junit = root + "/check.xml";
        const CliResult departing = runCheckCli({"check", q(fp8Dir_), "--device", q(proxy), "--thresholds",
            q(thresholds), "--squad", q(squadPath_), "--junit", q(junit), "--json"});
        QVERIFY2(departing.exitCode == 1, qPrintable(departing.err + departing.out.left(2000)));
        const json result = parsedJson(departing.out);
        QCOMPARE(result["verdict"], json("fail"));
        const json& twin = result["twins"][0];
        QCOMPARE(twin["name"], json("emulation"));
        const std::string planted = "roberta.encoder.layer.1.attention.output.dense.output";
        QCOMPARE(twin["departure_start"], json(planted));
        QVERIFY2(twin["departure_start_inputs"].get<int>() > 12, twin.dump().c_str());
        bool reached = false;
        for (const json& point : twin["points"]) {
            if (point["point"] == planted) {
                reached = true;
                QVERIFY(point["failure_rate"].get<double>() > 0.01);
                QCOMPARE(point["failed"], json(true));
            }
            if (!reached)
                QVERIFY2(point["failures"] == 0, point.dump().c_str());
        }
        QVERIFY(reached);
        QVERIFY(QFile::exists(q(junit)));
        QVERIFY(readText(junit).find("name=\"" + planted + "\">") != std::string::npos);

        // The same runner without the difference tracks the emulation: exit 0.
        const std::string plain = "runner:" + shellQuote(SCALESCOPE_CLI) + " runner";
        const CliResult same = runCheckCli({"check", q(fp8Dir_), "--device", q(plain), "--thresholds", q(thresholds),
            "--squad", q(squadPath_), "--json"});
        QVERIFY2(same.exitCode == 0, qPrintable(same.err + same.out.left(3000)));
        const json passed = parsedJson(same.out);
        QCOMPARE(passed["verdict"], json("pass"));
        QVERIFY(passed["twins"][0]["departure_start"].is_null());
    }

    void secondCheckReadsTheCpuSideFromTheCache()
    {
        const std::string root = dir_.path().toStdString();
        const std::string cacheDir = root + "/cache-test";
        qputenv("SCALESCOPE_CHECK_CACHE", QByteArray::fromStdString(cacheDir));
        const QStringList args = {"check", q(fp8Dir_), "--reference", q(floatDir_), "--squad", q(squadPath_),
                                  "--against", "emulation,fp16", "--max-samples", "12", "--json"};
        const CliResult first = runCheckCli(args);
        const CliResult second = runCheckCli(args);
        qputenv("SCALESCOPE_CHECK_CACHE", QByteArray::fromStdString(root + "/check-cache"));
        json a = parsedJson(first.out), b = parsedJson(second.out);
        QVERIFY2(a.is_object() && b.is_object(), qPrintable(first.err + second.err));
        // The noise floor's fp16 reference and the two twins, 12 inputs in batches of 8: 2 batches each.
        QCOMPARE(a["cache"]["hits"], json(0));
        QCOMPARE(a["cache"]["misses"], json(6));
        QCOMPARE(b["cache"]["hits"], json(6));
        QCOMPARE(b["cache"]["misses"], json(0));
        QCOMPARE(b["cache"]["folder"], json(cacheDir));
        for (json* document : {&a, &b}) {
            document->erase("cache");
            document->erase("timing");
        }
        QCOMPARE(a.dump(), b.dump());

        // A damaged entry is a miss, is removed and computed again; the result does not change.
        QDir folder(q(cacheDir));
        const QStringList entries = folder.entryList({"*.safetensors"}, QDir::Files);
        QCOMPARE(entries.size(), 6);
        QFile damaged(folder.filePath(entries.front()));
        QVERIFY(damaged.resize(damaged.size() / 2));
        qputenv("SCALESCOPE_CHECK_CACHE", QByteArray::fromStdString(cacheDir));
        const CliResult third = runCheckCli(args);
        // A cap of 0 MB keeps nothing: every entry is removed right after it is stored.
        qputenv("SCALESCOPE_CHECK_CACHE_MB", "0");
        const CliResult capped = runCheckCli(args);
        qunsetenv("SCALESCOPE_CHECK_CACHE_MB");
        qputenv("SCALESCOPE_CHECK_CACHE", QByteArray::fromStdString(root + "/check-cache"));
        json c = parsedJson(third.out);
        QVERIFY2(c.is_object(), qPrintable(third.err));
        QCOMPARE(c["cache"]["hits"], json(5));
        QCOMPARE(c["cache"]["misses"], json(1));
        c.erase("cache");
        c.erase("timing");
        QCOMPARE(c.dump(), a.dump());
        QVERIFY2(capped.exitCode == first.exitCode, qPrintable(capped.err));
        QCOMPARE(QDir(q(cacheDir)).entryList({"*.safetensors"}, QDir::Files).size(), 0);
    }

    void checkSaysWhichTwinTheDeviceTracks()
    {
        // A runner summing its FP8 products as the DL16 model does: against the plain emulation it
        // departs somewhere after FP8 first acts, and wherever the two twins differ at all it tracks
        // the dl16 twin; it never fails against that one.
        const std::string root = dir_.path().toStdString();
        const std::string thresholds = root + "/thresholds-dl16.json";
        const CliResult floor = runCheckCli({"noise-floor", q(fp8Dir_), "--reference", q(floatDir_), "--squad",
            q(squadPath_), "--output", q(thresholds)});
        QVERIFY2(floor.exitCode == 0, qPrintable(floor.err));
        const std::string runner = "runner:" + shellQuote(SCALESCOPE_CLI) + " runner";
        const CliResult r = runCheckCli({"check", q(fp8Dir_), "--device", q(runner), "--accumulate", "dl16",
            "--thresholds", q(thresholds), "--squad", q(squadPath_), "--against", "emulation,dl16", "--json"});
        QVERIFY2(r.exitCode == 1, qPrintable(r.err));
        const json result = parsedJson(r.out);
        QVERIFY2(result.is_object(), qPrintable(r.err));
        QVERIFY(result["twins"][0]["departure_start"].is_string());
        QCOMPARE(result["twins"][1]["name"], json("dl16"));
        QCOMPARE(result["twins"][1]["failed_points"], json(0));
        QVERIFY(result["run"]["description"].get<std::string>().find("fp8+dl16") != std::string::npos);
        const json& againstEmulation = result["twins"][0]["points"];
        std::size_t differing = 0;
        for (std::size_t p = 0; p < againstEmulation.size(); ++p) {
            const json& median = againstEmulation[p]["median"];
            if (median.contains("sqnr_db") && median["sqnr_db"] != "inf") {
                ++differing;
                QVERIFY2(result["best_twin_per_point"][p]["twin"] == "dl16", againstEmulation[p].dump().c_str());
            } else {
                QCOMPARE(againstEmulation[p]["failures"], json(0));
            }
        }
        // Embeddings and the first Linears' inputs are the same float values in both runs.
        QVERIFY(differing > 10 && differing < againstEmulation.size());
        // Against the dl16 twin alone it passes.
        const CliResult alone = runCheckCli({"check", q(fp8Dir_), "--device", q(runner), "--accumulate", "dl16",
            "--thresholds", q(thresholds), "--squad", q(squadPath_), "--against", "dl16", "--json"});
        QVERIFY2(alone.exitCode == 0, qPrintable(alone.err + alone.out.left(2000)));
    }

    void badInputsGetOneSentence()
    {
        const std::string root = dir_.path().toStdString();
        const std::string garbage = root + "/garbage.json";
        writeText(garbage, "{\"format\": \"scalescope-thresholds\", \"version\": 1, \"percentile\": 99, \"points\": [{\"point\": 3}]}");
        const CliResult bad = runCheckCli({"check", q(fp8Dir_), "--thresholds", q(garbage), "--squad", q(squadPath_)});
        QCOMPARE(bad.exitCode, 1);
        QVERIFY2(bad.err.contains(q(garbage)) && bad.err.contains("without a \"point\" name"), qPrintable(bad.err));
        QCOMPARE(bad.err.count('\n'), 1);

        const std::string foreign = root + "/foreign.json";
        writeText(foreign, "{\"format\": \"scalescope-thresholds\", \"version\": 1, \"percentile\": 99, "
                           "\"points\": [{\"point\": \"bert.encoder.layer.0.output\", \"thresholds\": {\"sqnr_db\": 60}}]}");
        const CliResult other
            = runCheckCli({"check", q(fp8Dir_), "--thresholds", q(foreign), "--squad", q(squadPath_)});
        QCOMPARE(other.exitCode, 1);
        QVERIFY2(other.err.contains("name none of this model's capture points"), qPrintable(other.err));

        const CliResult both = runCheckCli({"check", q(fp8Dir_), "--squad", q(squadPath_), "--texts", q(squadPath_)});
        QCOMPARE(both.exitCode, 2);
        const CliResult missing = runCheckCli(
            {"noise-floor", q(fp8Dir_), "--texts", q(root + "/none.txt"), "--output", q(root + "/never.json")});
        QCOMPARE(missing.exitCode, 1);
        QVERIFY2(missing.err.contains(q(root + "/none.txt")), qPrintable(missing.err));
        QVERIFY(!QFile::exists(q(root + "/never.json")));
        const CliResult rate = runCheckCli({"check", q(fp8Dir_), "--squad", q(squadPath_), "--max-failure-rate", "5"});
        QCOMPARE(rate.exitCode, 2);
        QVERIFY2(rate.err.contains("--max-failure-rate"), qPrintable(rate.err));
        const CliResult twin = runCheckCli({"check", q(fp8Dir_), "--squad", q(squadPath_), "--against", "gpu"});
        QVERIFY(twin.exitCode != 0);
        QVERIFY2(twin.err.contains("--against") && twin.err.contains("dl16"), qPrintable(twin.err));

        // JUnit onto what --force cannot replace is refused without advising --force; an empty
        // path is refused, not ignored.
        QDir(q(root)).mkpath("junit-folder");
        QFile::link(q(squadPath_), q(root + "/junit-link.xml"));
        for (const std::string& target : {root + "/junit-folder", root + "/junit-link.xml", std::string("/dev/null")}) {
            const CliResult junit = runCli({"check", q(fp8Dir_), "--squad", q(squadPath_), "--junit", q(target)});
            QCOMPARE(junit.exitCode, 1);
            QVERIFY2(junit.err.contains(q(target)) && junit.err.contains("even when forced") && !junit.err.contains("pass --force"),
                     qPrintable(junit.err));
        }
        const CliResult emptyJunit = runCli({"check", q(fp8Dir_), "--squad", q(squadPath_), "--junit", ""});
        QCOMPARE(emptyJunit.exitCode, 1);
        QVERIFY2(emptyJunit.err.contains("The output path is empty"), qPrintable(emptyJunit.err));
    }

    void fp8AgainstTheReferenceDepartsFromTheFirstQuantizedLinear()
    {
        // With no device, the FP8 run is held against the float reference: it departs where FP8
        // first acts, the first Linear's output (its input is the same float embeddings).
        const CliResult r = runCheckCli({"check", q(fp8Dir_), "--reference", q(floatDir_), "--squad", q(squadPath_),
            "--against", "reference,fp16", "--json"});
        QVERIFY2(r.exitCode == 1, qPrintable(r.err));
        const json result = parsedJson(r.out);
        QCOMPARE(result["thresholds_source"].get<std::string>().rfind("measured now", 0), std::size_t(0));
        QCOMPARE(result["twins"].size(), std::size_t(2));
        QCOMPARE(result["twins"][0]["departure_start"], json("roberta.encoder.layer.0.attention.self.query.output"));
        QCOMPARE(result["twins"][1]["name"], json("fp16"));
        QVERIFY(result["twins"][0].contains("f1_difference"));
        // The fp16 twin of the same FP8 checkpoint is the closer twin of the fp8 run at the first Linear.
        for (const json& entry : result["best_twin_per_point"])
            if (entry["point"] == "roberta.encoder.layer.0.attention.self.query.output")
                QCOMPARE(entry["twin"], json("fp16"));
    }
};

QTEST_GUILESS_MAIN(TestDeviceCheck)
#include "test_device_check.moc"
