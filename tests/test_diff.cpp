// diff A B (issue 32): two quantized checkpoints of the same tiny float model side by side. A
// checkpoint against itself has no differences; channel against tensor quantization lists every
// Linear's scheme change and counts code differences exactly (checked against a count made here
// from the files' bytes with this file's own E4M3 decoder); a weight_scale element moved by one
// float ULP and a code moved by one E4M3 step are named as such; the CLI's JSON keys and its one
// sentence for a bad path.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/text_files.h"
#include "engine/encoder_model.h"
#include "engine/quantize.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "report/charts.h"
#include "report/result_json.h"
#include "support/cli_process.h"
#include "support/fixtures.h"
#include "tasks/checkpoint_diff.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

QString q(const std::string& s)
{
    return QString::fromStdString(s);
}

// E4M3FN decoded from its fields (bias 7, subnormals, S.1111.111 NaN), independent of numerics/fp8.
double decodeHere(uint8_t code)
{
    const int sign = code & 0x80 ? -1 : 1;
    const int exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
    if (exponent == 0xF && mantissa == 0x7)
        return std::nan("");
    if (exponent == 0)
        return sign * std::ldexp(mantissa / 8.0, -6);
    return sign * std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
}

// The finite E4M3 values in increasing order, zero once: a value's index is its place on the line,
// so two values are |index(b) - index(a)| E4M3 steps apart.
std::map<double, int> e4m3ValueIndex()
{
    std::set<double> values;
    for (int c = 0; c < 256; ++c)
        if (!std::isnan(decodeHere(uint8_t(c))))
            values.insert(decodeHere(uint8_t(c)) == 0.0 ? 0.0 : decodeHere(uint8_t(c)));
    std::map<double, int> index;
    int i = 0;
    for (double v : values)
        index[v] = i++;
    return index;
}

struct CodeCount {
    int64_t differing = 0;
    std::map<int64_t, int64_t> steps;
};

CodeCount countHere(const TensorView& a, const TensorView& b)
{
    static const std::map<double, int> index = e4m3ValueIndex();
    CodeCount count;
    for (int64_t i = 0; i < a.numel(); ++i) {
        const double va = decodeHere(a.data[i]), vb = decodeHere(b.data[i]);
        if (va == vb)
            continue; // +0 and -0 compare equal: the same value
        ++count.differing;
        ++count.steps[std::abs(index.at(vb == 0.0 ? 0.0 : vb) - index.at(va == 0.0 ? 0.0 : va))];
    }
    return count;
}

const TensorDifference* findTensor(const CheckpointDiff& diff, const std::string& name)
{
    for (const TensorDifference& t : diff.tensors)
        if (t.name == name)
            return &t;
    return nullptr;
}

const std::string kScaleTensor = "roberta.encoder.layer.1.attention.self.key.weight_scale";
const std::string kCodeTensor = "roberta.encoder.layer.0.output.dense.weight";

} // namespace

class TestDiff : public QObject {
    Q_OBJECT

    std::string root_, float_, channel_, tensor_;

private slots:
    void initTestCase()
    {
        root_ = makeTempDir("scalescope-diff");
        float_ = root_ + "/float";
        channel_ = root_ + "/channel";
        tensor_ = root_ + "/tensor";
        TinyModelSpec spec;
        spec.outlierChannels = {3};
        spec.outlierFactor = 6.0f;
        writeTinyFloatCheckpoint(float_, spec);
        QuantizeOptions options;
        options.weights = WeightStrategy::Channel;
        quantizeCheckpoint(float_, channel_, options);
        options.weights = WeightStrategy::Tensor;
        quantizeCheckpoint(float_, tensor_, options);
    }

    void cleanupTestCase() { std::filesystem::remove_all(root_); }

    void checkpointAgainstItselfHasNoDifferences()
    {
        const auto a = Checkpoint::open(channel_);
        const std::string copy = root_ + "/channel-copy";
        copyCheckpoint(channel_, copy);
        const auto b = Checkpoint::open(copy);
        for (const Checkpoint* other : {a.get(), b.get()}) {
            const CheckpointDiff diff = diffCheckpoints(*a, *other);
            QVERIFY(diff.identical());
            QVERIFY(diff.config.empty());
            QVERIFY(diff.linears.empty());
            QVERIFY(diff.onlyInA.empty() && diff.onlyInB.empty());
            QCOMPARE(diff.tensors.size(), a->tensors().tensors().size());
            for (const TensorDifference& t : diff.tensors) {
                QCOMPARE(t.verdict, std::string(kDiffIdentical));
                QCOMPARE(t.codesDiffering, int64_t(0));
                QCOMPARE(t.valuesDiffering, int64_t(0));
            }
        }
    }

    void channelAgainstTensorListsEverySchemeAndCountsCodes()
    {
        const auto a = Checkpoint::open(channel_);
        const auto b = Checkpoint::open(tensor_);
        const CheckpointDiff diff = diffCheckpoints(*a, *b);
        QVERIFY(!diff.identical());
        // The config's weights strategy changes...
        bool strategyInConfig = false;
        for (const FieldDifference& d : diff.config)
            strategyInConfig
                |= d.field.find("weights.strategy") != std::string::npos && d.a == "channel" && d.b == "tensor";
        QVERIFY(strategyInConfig);
        // ... and so does every quantized Linear's, each listed once; the float head is not.
        std::set<std::string> listed;
        for (const LinearDifference& l : diff.linears) {
            QVERIFY2(listed.insert(l.module).second, l.module.c_str());
            bool strategy = false;
            for (const FieldDifference& d : l.differences)
                strategy |= d.field == "weights.strategy" && d.a == "channel" && d.b == "tensor";
            QVERIFY2(strategy, l.module.c_str());
        }
        std::set<std::string> quantized;
        for (const LinearInfo& linear : a->plan().linears())
            if (linear.quantized)
                quantized.insert(linear.module);
        QCOMPARE(quantized.size(), std::size_t(12));
        QCOMPARE(listed, quantized);

        // Codes: counted here from the bytes of both files.
        int64_t checkedTensors = 0;
        for (const std::string& module : quantized) {
            const std::string name = module + ".weight";
            const TensorDifference* t = findTensor(diff, name);
            QVERIFY(t);
            QVERIFY(t->fp8Codes);
            const CodeCount expected = countHere(a->tensors().require(name), b->tensors().require(name));
            QCOMPARE(t->codesDiffering, expected.differing);
            QCOMPARE(t->codeStepHistogram, expected.steps);
            QCOMPARE(t->verdict,
                std::string(expected.differing == 0           ? kDiffIdentical
                        : expected.steps.rbegin()->first <= 1 ? kDiffWithinOneStep
                                                              : kDiffDifferent));
            // weight_scale: [out, 1] against [1], so no element pairs and "different".
            const TensorDifference* scale = findTensor(diff, module + ".weight_scale");
            QVERIFY(scale);
            QCOMPARE(scale->verdict, std::string(kDiffDifferent));
            QVERIFY(scale->shapeA != scale->shapeB);
            checkedTensors += expected.differing > 0;
        }
        QVERIFY(checkedTensors > 0); // the outlier channel makes per-tensor codes differ

        // The float tensors (embeddings, LayerNorms, biases, the head) are the same bytes.
        const TensorDifference* embeddings = findTensor(diff, "roberta.embeddings.word_embeddings.weight");
        QVERIFY(embeddings);
        QCOMPARE(embeddings->verdict, std::string(kDiffIdentical));
    }

    void scaleOneUlpApartIsWithinOneStep()
    {
        const std::string copy = root_ + "/channel-ulp";
        copyCheckpoint(channel_, copy);
        float original = 0, changed = 0;
        editTensorBytes(copy, kScaleTensor, [&](std::vector<uint8_t>& bytes) {
            std::memcpy(&original, bytes.data() + 4 * 5, 4);
            changed = std::nextafter(original, 1.0f);
            std::memcpy(bytes.data() + 4 * 5, &changed, 4);
        });
        QVERIFY(changed != original);
        const auto a = Checkpoint::open(channel_);
        const auto b = Checkpoint::open(copy);
        const CheckpointDiff diff = diffCheckpoints(*a, *b);
        QVERIFY(!diff.identical());
        QVERIFY(diff.linears.empty());
        for (const TensorDifference& t : diff.tensors) {
            if (t.name != kScaleTensor) {
                QCOMPARE(t.verdict, std::string(kDiffIdentical));
                continue;
            }
            QCOMPARE(t.verdict, std::string(kDiffWithinOneStep));
            QCOMPARE(t.valuesDiffering, int64_t(1));
            QCOMPARE(t.valuesOneUlpApart, int64_t(1));
            QCOMPARE(t.maxUlps, uint64_t(1));
            QCOMPARE(t.ulpHistogram, (std::map<uint64_t, int64_t>{{1, 1}}));
            QCOMPARE(t.ulpUnit, std::string("F32"));
            QVERIFY(t.hasRatio);
            QCOMPARE(t.ratioMin, 1.0);
            QCOMPARE(t.ratioMax, double(changed) / double(original));
        }
        // Two ULPs are "different".
        editTensorBytes(copy, kScaleTensor, [&](std::vector<uint8_t>& bytes) {
            const float twice = std::nextafter(changed, 1.0f);
            std::memcpy(bytes.data() + 4 * 5, &twice, 4);
        });
        const auto c = Checkpoint::open(copy);
        const TensorDifference* t = findTensor(diffCheckpoints(*a, *c), kScaleTensor);
        QVERIFY(t);
        QCOMPARE(t->verdict, std::string(kDiffDifferent));
        QCOMPARE(t->maxUlps, uint64_t(2));
    }

    // A NaN scale is a NaN mismatch: no ULP distance of its bits, no ratio (issue 52 item 7).
    // Issue 52 item 7: config leaves as written. {} is shown as {} (json::flatten made it null), a
    // list replaced by null or removed is a difference, and a list is one field shown whole.
    void configLeavesAsWritten_data()
    {
        QTest::addColumn<QString>("patchA");
        QTest::addColumn<QString>("patchB");
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("shownA");
        QTest::addColumn<QString>("shownB");
        QTest::newRow("{} against absent") << R"({"transform_config": {}})" << R"({})"
                                           << "transform_config" << "{}" << "(none)";
        QTest::newRow("[] against null") << R"({"kv_cache_scheme": []})" << R"({"kv_cache_scheme": null})"
                                         << "kv_cache_scheme" << "[]" << "null";
        QTest::newRow("{} against null") << R"({"sparsity_config": {}})" << R"({"sparsity_config": null})"
                                         << "sparsity_config" << "{}" << "null";
        QTest::newRow("a list removed") << R"({"ignore": ["qa_outputs", "lm_head"]})" << R"({"ignore": "REMOVE"})"
                                        << "ignore" << R"(["qa_outputs","lm_head"])" << "(none)";
        QTest::newRow("a list emptied") << R"({"ignore": ["qa_outputs"]})" << R"({"ignore": []})"
                                        << "ignore" << R"(["qa_outputs"])" << "[]";
        QTest::newRow("first entry dropped") << R"({"ignore": ["a", "b", "c"]})" << R"({"ignore": ["b", "c"]})"
                                             << "ignore" << R"(["a","b","c"])" << R"(["b","c"])";
    }
    void configLeavesAsWritten()
    {
        QFETCH(QString, patchA);
        QFETCH(QString, patchB);
        QFETCH(QString, field);
        QFETCH(QString, shownA);
        QFETCH(QString, shownB);
        const auto edited = [&](const std::string& name, const QString& patch) {
            const std::string dir = root_ + "/" + name;
            std::filesystem::remove_all(dir);
            copyCheckpoint(channel_, dir);
            const std::string path = dir + "/config.json";
            nlohmann::json config = nlohmann::json::parse(readFileToString(path));
            nlohmann::json& q = config["quantization_config"];
            const nlohmann::json edits = nlohmann::json::parse(patch.toStdString());
            for (const auto& [key, value] : edits.items())
                if (value == "REMOVE")
                    q.erase(key);
                else
                    q[key] = value;
            std::ofstream(path, std::ios::trunc) << config.dump(2);
            return dir;
        };
        const auto a = Checkpoint::open(edited("leaves-a", patchA));
        const auto b = Checkpoint::open(edited("leaves-b", patchB));
        const CheckpointDiff diff = diffCheckpoints(*a, *b);
        // The config's leaves only (a changed ignore list also changes consumer verdicts).
        const std::string prefix = "config.quantization_config.";
        std::vector<FieldDifference> leaves;
        std::string listedFields;
        for (const FieldDifference& d : diff.config) {
            listedFields += d.field + ": " + d.a + " -> " + d.b + "\n";
            if (d.field.rfind(prefix, 0) == 0)
                leaves.push_back(d);
        }
        QVERIFY2(leaves.size() == 1 && leaves[0].field == prefix + field.toStdString(), listedFields.c_str());
        QCOMPARE(QString::fromStdString(leaves[0].a), shownA);
        QCOMPARE(QString::fromStdString(leaves[0].b), shownB);
    }

    void nanScaleIsANanMismatch()
    {
        const std::string copy = root_ + "/channel-nan";
        copyCheckpoint(channel_, copy);
        editTensorBytes(copy, kScaleTensor, [&](std::vector<uint8_t>& bytes) {
            const float nan = std::numeric_limits<float>::quiet_NaN();
            std::memcpy(bytes.data() + 4 * 5, &nan, 4);
        });
        const auto a = Checkpoint::open(channel_);
        const auto b = Checkpoint::open(copy);
        const TensorDifference* t = findTensor(diffCheckpoints(*a, *b), kScaleTensor);
        QVERIFY(t);
        QCOMPARE(t->verdict, std::string(kDiffDifferent));
        QCOMPARE(t->nanMismatches, int64_t(1));
        QCOMPARE(t->valuesDiffering, int64_t(0));
        QCOMPARE(t->maxUlps, uint64_t(0));
        QVERIFY(t->ulpHistogram.empty());
        // NaN on both sides is no difference.
        const TensorDifference* same = findTensor(diffCheckpoints(*b, *b), kScaleTensor);
        QVERIFY(same);
        QCOMPARE(same->nanMismatches, int64_t(0));
    }

    void codeOneStepApart_data()
    {
        QTest::addColumn<int>("direction");
        QTest::newRow("up") << 1;
        QTest::newRow("down") << -1;
    }

    void codeOneStepApart()
    {
        QFETCH(int, direction);
        const std::string copy = root_ + "/channel-step" + std::to_string(direction + 1);
        copyCheckpoint(channel_, copy);
        uint8_t before = 0, after = 0;
        editTensorBytes(copy, kCodeTensor, [&](std::vector<uint8_t>& bytes) {
            // A positive code with room either way: +-1 on its magnitude is its neighbour by value.
            for (uint8_t& code : bytes)
                if (code > 0x08 && code < 0x70) {
                    before = code;
                    code = uint8_t(code + direction);
                    after = code;
                    break;
                }
        });
        QVERIFY(before != after);
        QCOMPARE(std::fabs(decodeHere(after)) > std::fabs(decodeHere(before)), direction > 0);
        const auto a = Checkpoint::open(channel_);
        const auto b = Checkpoint::open(copy);
        const CheckpointDiff diff = diffCheckpoints(*a, *b);
        const TensorDifference* t = findTensor(diff, kCodeTensor);
        QVERIFY(t);
        QCOMPARE(t->verdict, std::string(kDiffWithinOneStep));
        QCOMPARE(t->codesDiffering, int64_t(1));
        QCOMPARE(t->codeStepHistogram, (std::map<int64_t, int64_t>{{1, 1}}));
        const json document = diffJson(diff, nullptr);
        for (const json& entry : document["tensors"])
            if (entry["name"] == kCodeTensor)
                QCOMPARE(entry["code_step_histogram"], json({{"1", 1}}));
    }

    void signedZeroAndStepsAcrossZero()
    {
        QCOMPARE(fp8Step(0x00), 0);
        QCOMPARE(fp8Step(0x80), 0);
        QCOMPARE(fp8Step(0x01), 1); // the smallest subnormal is one step above zero
        QCOMPARE(fp8Step(0x81), -1); // and its negative one below: two steps apart
        QCOMPARE(fp8Step(0x7E), 126); // 448
        // Independent: the value line built here from the decoded codes.
        const std::map<double, int> index = e4m3ValueIndex();
        const int zero = index.at(0.0);
        for (int c = 0; c < 256; ++c) {
            const double v = decodeHere(uint8_t(c));
            if (std::isnan(v))
                continue;
            QCOMPARE(fp8Step(uint8_t(c)), index.at(v == 0.0 ? 0.0 : v) - zero);
        }
    }

    void metricsAgainstOneReference()
    {
        const auto a = EncoderModel::load(channel_);
        const auto b = EncoderModel::load(tensor_);
        ComparisonInput input;
        input.inputIds = {{0, 5, 6, 7, 8, 9, 2}};
        const DiffMetrics same = diffMetrics(*a, *a, nullptr, input);
        QVERIFY(!same.points.empty());
        for (const PointDifference& p : same.points)
            QCOMPARE(p.sqnrDifferenceDb, 0.0);

        const DiffMetrics metrics = diffMetrics(*a, *b, nullptr, input);
        QVERIFY(metrics.referenceIsStandIn);
        // A's side is compare's own result (A against its dequant); B's is measured against the same
        // A dequant run, which a comparison of B with A as its reference also does.
        const ComparisonResult alone = compareRuns(*a, nullptr, input);
        const ComparisonResult bAgainstA = compareRuns(*b, a.get(), input);
        QCOMPARE(metrics.points.size(), alone.points.size());
        for (std::size_t i = 0; i < metrics.points.size(); ++i) {
            QCOMPARE(metrics.points[i].a.sqnrDb, alone.points[i].metrics.sqnrDb);
            QCOMPARE(metrics.points[i].b.sqnrDb, bAgainstA.points[i].metrics.sqnrDb);
        }
        // Ranked by |B - A|, largest first, each point once.
        QCOMPARE(metrics.ranked.size(), metrics.points.size());
        for (std::size_t r = 1; r < metrics.ranked.size(); ++r)
            QVERIFY(std::fabs(metrics.points[metrics.ranked[r - 1]].sqnrDifferenceDb)
                >= std::fabs(metrics.points[metrics.ranked[r]].sqnrDifferenceDb));
        // The overlay chart carries both series.
        const ChartData overlay = overlayCharts(layerSqnrChart(metrics.runA), layerSqnrChart(metrics.runB), "A", "B");
        QCOMPARE(overlay.series.size(), std::size_t(2));
        QCOMPARE(overlay.series[1].color, std::string(kOverlayColorB));
    }

    // What a compared chart says when B has nothing for it, and B on repeated categories (the
    // tokens of a QA window: "the" twice) stays at its own positions.
    void overlayOrAbsentNamesTheMissingSide()
    {
        ChartData a;
        a.title = "logits";
        a.categories = {"the", "cat", "the", "mat"};
        a.series = {ChartSeries{"start", SeriesStyle::Line, {0, 1, 2, 3}, {1, 2, 3, 4}, {}, "#0072B2"}};
        const ChartData notRun = overlayOrAbsent(a, nullptr, "A", "B");
        QCOMPARE(notRun.title, std::string("logits (A; B: not run)"));
        QCOMPARE(notRun.series.size(), std::size_t(1));
        QCOMPARE(notRun.series[0].name, std::string("A: start"));
        const ChartData none{};
        QCOMPARE(overlayOrAbsent(a, &none, "A", "B").title, std::string("logits (A; B: no values)"));
        // A without series stays as it is (nothing of B on an empty chart).
        const ChartData emptyA = overlayOrAbsent(none, nullptr, "A", "B");
        QVERIFY(emptyA.title.empty() && emptyA.series.empty());

        ChartData b = a;
        b.series[0].y = {5, 6, 7, 8};
        const ChartData both = overlayOrAbsent(a, &b, "A", "B");
        QCOMPARE(both.title, std::string("logits (A and B)"));
        QCOMPARE(both.series.size(), std::size_t(2));
        QCOMPARE(both.series[1].name, std::string("B: start"));
        QCOMPARE(both.categories.size(), std::size_t(4));
        QCOMPARE(both.series[1].x, (std::vector<double>{0, 1, 2, 3}));
        QVERIFY(both.series[1].color != both.series[0].color);

        // Heat maps: B's cells would cover A's, so B is named absent rather than drawn.
        ChartData cellsA = a, cellsB = b;
        cellsA.series[0].style = cellsB.series[0].style = SeriesStyle::Cells;
        QCOMPARE(overlayOrAbsent(cellsA, &cellsB, "A", "B").title, std::string("logits (A; B: heat map not overlaid)"));
    }

    void cliJsonKeysAndErrors()
    {
        CliResult r = runCli({"diff", q(channel_), q(tensor_), "--json", "--input-ids", "0,5,6,7,8,9,2"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const json document = json::parse(r.out.toStdString());
        for (const char* key : {"a", "b", "identical", "linears", "tensors", "metrics"})
            QVERIFY2(document.contains(key), key);
        QCOMPARE(document["a"].get<std::string>(), channel_);
        QCOMPARE(document["identical"].get<bool>(), false);
        QCOMPARE(document["linears"].size(), std::size_t(12));
        for (const char* key : {"module", "differences"})
            QVERIFY(document["linears"][0].contains(key));
        for (const char* key :
            {"name", "verdict", "codes_differing", "code_step_histogram", "scale_ratio_min", "scale_ratio_max"})
            QVERIFY2(document["tensors"][0].contains(key), key);
        QVERIFY(!document["metrics"]["points"].empty());
        QCOMPARE(document["metrics"]["ranked"].size(), document["metrics"]["points"].size());

        r = runCli({"diff", q(channel_), q(channel_), "--json"});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(json::parse(r.out.toStdString())["identical"].get<bool>(), true);

        r = runCli({"diff", q(channel_), q(tensor_)});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("Linears whose scheme differs (12)"));

        // --squad: the points are means over the questions; --plots: the overlays are written.
        const std::string squad = root_ + "/squad.json", plots = root_ + "/plots";
        {
            const json file = {{"version", "1.1"},
                {"data",
                    {{{"title", "t"},
                        {"paragraphs",
                            {{{"context", "Paris is the capital of France . the cat sat on the mat"},
                                {"qas",
                                    {{{"id", "1"}, {"question", "what is the capital of France ?"},
                                         {"answers", {{{"text", "Paris"}, {"answer_start", 0}}}}},
                                        {{"id", "2"}, {"question", "where is the cat ?"},
                                            {"answers", {{{"text", "on the mat"}, {"answer_start", 43}}}}}}}}}}}}}};
            QFile out(q(squad));
            QVERIFY(out.open(QIODevice::WriteOnly));
            out.write(QByteArray::fromStdString(file.dump()));
        }
        r = runCli({"diff", q(channel_), q(tensor_), "--json", "--squad", q(squad), "--max-samples", "2", "--plots",
            q(plots)});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const json squadDocument = json::parse(r.out.toStdString());
        QCOMPARE(squadDocument["metrics"]["samples"].get<int>(), 2);
        QCOMPARE(squadDocument["metrics"]["input"].get<std::string>(), std::string("squad"));
        for (const char* file : {"diff_layer_sqnr.png", "diff_layer_sqnr.csv", "diff_weight_scales.png", "diff.json"})
            QVERIFY2(std::filesystem::exists(plots + "/" + file), file);

        // Another model: the diff itself works, its runs are refused with one sentence naming both.
        const std::string otherFloat = root_ + "/other-float", otherFp8 = root_ + "/other-fp8";
        TinyModelSpec other;
        other.hiddenSize = 16;
        other.intermediateSize = 32;
        writeTinyFloatCheckpoint(otherFloat, other);
        quantizeCheckpoint(otherFloat, otherFp8, {});
        r = runCli({"diff", q(channel_), q(otherFp8), "--json"});
        QCOMPARE(r.exitCode, 0);
        r = runCli({"diff", q(channel_), q(otherFp8), "--json", "--input-ids", "0,5,6,2"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY(r.out.isEmpty());
        QCOMPARE(r.err.trimmed().count('\n'), 0);
        QVERIFY2(r.err.contains(q(otherFp8)) && r.err.contains(q(channel_)), qPrintable(r.err));

        const std::string missing = root_ + "/no-such-checkpoint";
        r = runCli({"diff", q(channel_), q(missing), "--json"});
        QVERIFY(r.exitCode != 0);
        QVERIFY(r.out.isEmpty());
        QCOMPARE(r.err.trimmed().count('\n'), 0);
        QVERIFY2(r.err.contains(q(missing)), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestDiff)
#include "test_diff.moc"
