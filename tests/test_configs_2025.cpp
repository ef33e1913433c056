// Checkpoints as compressed-tensors 0.13-0.18 writes them (DESIGN "Configs written since 2025",
// issue 29 item 1): full args blocks (scale_dtype, zp_dtype, observer, observer_kwargs), a
// transform_config, per-group formats, block_structure as "128x128", the strategies and dynamic
// mode a run refuses (tensor_group, attn_head, dynamic "local"), and quantization_status judged
// from the tensors. Every checkpoint here is an FP8 fixture whose config.json is rewritten by
// rewriteConfigAsCompressedTensors018 (tests/support), the way 0.18's ModelCompressor writes it.
#include <QProcess>
#include <QtTest>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "analysis/consumers.h"
#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "common/error.h"
#include "common/text_files.h"
#include "engine/encoder_model.h"
#include "model/checkpoint.h"
#include "model/quantization_config.h"
#include "support/cli_process.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

const std::vector<int64_t> kIds = {0, 280, 100, 290, 77, 45, 2};
const std::string kQuery0 = "roberta.encoder.layer.0.attention.self.query";

// A Hadamard rotation as compressed-tensors 0.18 serialises a TransformConfig (QuIP-style "u").
const char* const kHadamard = R"({"config_groups": {"u": {"type": "hadamard", "apply": [
    {"targets": ["Linear"], "location": "weight_input", "inverse": false, "ignore": []},
    {"targets": ["Linear"], "location": "input", "inverse": true, "ignore": []}],
    "randomize": false, "requires_grad": false, "head_dim": null, "precision": "torch.float32"}}})";

void editConfig(const std::string& dir, const std::function<void(json&)>& edit)
{
    const std::string path = dir + "/config.json";
    json config = json::parse(readFileToString(path));
    edit(config);
    std::ofstream(path, std::ios::trunc) << config.dump(2) << "\n";
}

json& group0(json& config)
{
    return config["quantization_config"]["config_groups"]["group_0"];
}

std::vector<float> logits(const std::string& dir, RunMode mode = RunMode::Fp8)
{
    ForwardOptions options;
    options.mode = mode;
    const ForwardResult result = EncoderModel::load(dir)->forward({{kIds}, {}, {}, {}}, options);
    for (const NamedTensor& t : result.outputs)
        if (t.name == "start_logits")
            return t.tensor.values;
    throw Error("no start_logits");
}

// The sentence a run refuses with ("" when it runs): loading builds every Linear, which throws.
std::string refusal(const std::string& dir)
{
    try {
        logits(dir);
        return "";
    } catch (const Error& e) {
        return e.what();
    }
}

const Finding* findingOf(const std::vector<Finding>& findings, const std::string& code)
{
    for (const Finding& f : findings)
        if (f.code == code)
            return &f;
    return nullptr;
}

std::vector<Finding> diagnose(const std::string& dir)
{
    const auto checkpoint = Checkpoint::open(dir);
    return diagnoseCheckpoint(*checkpoint, computeScaleStatistics(*checkpoint));
}

} // namespace

class TestConfigs2025 : public QObject {
    Q_OBJECT

    QTemporaryDir temp_;
    std::string floatDir_;
    int made_ = 0;

    // A fresh FP8 fixture of `scheme` (pre-2025 config, as the fixture writes it).
    std::string fp8(const Fp8Scheme& scheme = {})
    {
        const std::string dir = temp_.path().toStdString() + "/fp8-" + std::to_string(made_++);
        writeTinyFp8Checkpoint(floatDir_, dir, scheme);
        return dir;
    }

    std::string fp8As018(const CompressedTensors018& options, const Fp8Scheme& scheme = {})
    {
        const std::string dir = fp8(scheme);
        rewriteConfigAsCompressedTensors018(dir, options);
        return dir;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(temp_.isValid());
        floatDir_ = temp_.path().toStdString() + "/float";
        writeTinyFloatCheckpoint(floatDir_, TinyModelSpec{});
    }

    // Item 1: the args keys 0.18 writes are read into QuantizationArgs (inspect shows them), none
    // is an unknown key, and none stops the run.
    void readsTheArgsKeysOf018()
    {
        CompressedTensors018 options;
        options.weightScaleDtype = "torch.bfloat16";
        const std::string dir = fp8As018(options, {"channel", "tensor"});
        editConfig(dir, [](json& c) {
            group0(c)["weights"]["observer"] = "mse";
            group0(c)["weights"]["observer_kwargs"] = {{"maxshrink", 0.2}, {"grid", 100}};
            group0(c)["weights"]["zp_dtype"] = "torch.float8_e4m3fn";
        });
        const auto checkpoint = Checkpoint::open(dir);
        const QuantizationConfig& q = *checkpoint->config().quantization;
        QVERIFY(q.unknownKeys.empty());
        const QuantizationArgs& w = *q.groups[0].weights;
        QCOMPARE(w.scaleDtype, std::string("torch.bfloat16"));
        QCOMPARE(w.zpDtype, std::string("torch.float8_e4m3fn"));
        QCOMPARE(w.observer, std::string("mse"));
        QCOMPARE(w.observerKwargs, (json{{"grid", 100}, {"maxshrink", 0.2}}));
        const QuantizationArgs& a = *q.groups[0].inputActivations;
        QCOMPARE(a.observer, std::string("static_minmax"));
        QVERIFY(a.scaleDtype.empty());
        QVERIFY(a.observerKwargs.empty());
        QVERIFY(!unsupportedSchemeReason(q, q.groups[0]));

        const json shown = argsSummaryJson(w);
        QCOMPARE(shown["scale_dtype"], json("torch.bfloat16"));
        QCOMPARE(shown["zp_dtype"], json("torch.float8_e4m3fn"));
        QCOMPARE(shown["observer"], json("mse"));
        QCOMPARE(shown["observer_kwargs"]["maxshrink"], json(0.2));
        QCOMPARE(shown["dynamic"], json(false));
        QCOMPARE(argsSummaryJson(a)["scale_dtype"], json(nullptr));
        QCOMPARE(describeArgsExtras(a), std::string("observer static_minmax"));
        QVERIFY(!findingOf(diagnose(dir), "config-unknown-key"));
    }

    // "The wild configs that loaded before still load identically (bit for bit)": the same tensors
    // under the pre-2025 config and under 0.18's (every extra key, null scale_dtype, "dtype",
    // transform_config {}) give the same logits, bit for bit, in every mode.
    void a018ConfigRunsBitIdenticalToItsPre2025Form_data()
    {
        QTest::addColumn<QString>("weights");
        QTest::addColumn<QString>("activations");
        QTest::addColumn<QString>("scaleDtype");
        QTest::addColumn<QString>("writtenScaleDtype"); // scale_dtype in the 0.18 config
        QTest::newRow("channel/token, null") << "channel" << "token" << "F32" << "";
        QTest::newRow("tensor/static tensor, null") << "tensor" << "tensor" << "F32" << "";
        QTest::newRow("block/group, null") << "block" << "group" << "F32" << "";
        QTest::newRow("channel/none bf16 scales, torch.bfloat16") << "channel" << "none" << "BF16" << "torch.bfloat16";
        QTest::newRow("channel/token, torch.float32") << "channel" << "token" << "F32" << "torch.float32";
        // 0.18 rounds such scales to E4M3 values but stores them in the model dtype: runs as stored.
        QTest::newRow("channel/static tensor, torch.float8_e4m3fn") << "channel" << "tensor" << "F32" << "torch.float8_e4m3fn";
    }
    void a018ConfigRunsBitIdenticalToItsPre2025Form()
    {
        QFETCH(QString, weights);
        QFETCH(QString, activations);
        QFETCH(QString, scaleDtype);
        QFETCH(QString, writtenScaleDtype);
        const Fp8Scheme scheme{weights.toStdString(), activations.toStdString(), scaleDtype.toStdString()};
        const std::string before = fp8(scheme);
        const std::string after = fp8(scheme);
        CompressedTensors018 options;
        options.weightScaleDtype = writtenScaleDtype.toStdString();
        options.activationScaleDtype = activations == "tensor" ? writtenScaleDtype.toStdString() : "";
        rewriteConfigAsCompressedTensors018(after, options);
        QVERIFY(readFileToString(after + "/config.json").find("\"observer_kwargs\"") != std::string::npos);
        for (RunMode mode : {RunMode::Fp8, RunMode::Dequant, RunMode::Fp16}) {
            const std::vector<float> a = logits(before, mode), b = logits(after, mode);
            QCOMPARE(b.size(), a.size());
            QVERIFY2(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0, runModeName(mode));
        }
    }

    // Item 1: dynamic scales that compressed-tensors would round to E4M3 at every forward.
    void refusesDynamicE4m3Scales()
    {
        CompressedTensors018 options;
        options.activationScaleDtype = "torch.float8_e4m3fn";
        const std::string dir = fp8As018(options, {"channel", "token"});
        QCOMPARE(refusal(dir),
                 "Module '" + kQuery0 + "' uses dynamic input activations with scale_dtype \"torch.float8_e4m3fn\" "
                 "(group group_0), whose scales compressed-tensors rounds to FP8 E4M3 values at every forward, which "
                 "this version does not emulate; only float dynamic scales run.");
    }

    // Item 2: a non-empty transform_config refused by every run, with one sentence naming it;
    // {} and null load.
    void refusesTransformConfig()
    {
        CompressedTensors018 options;
        options.transformConfigJson = kHadamard;
        const std::string dir = fp8As018(options);
        const std::string expected =
            "quantization_config.transform_config holds rotations that are part of the model (scheme \"u\": type "
            "\"hadamard\" on \"Linear\" at \"weight_input\", \"input\"), and this version does not apply them, so it "
            "does not run this checkpoint.";
        QCOMPARE(refusal(dir), expected);
        const auto checkpoint = Checkpoint::open(dir); // inspect still opens it
        const QuantizationConfig& q = *checkpoint->config().quantization;
        QCOMPARE(q.transforms.size(), std::size_t(1));
        QCOMPARE(q.transforms[0].type, std::string("hadamard"));
        QCOMPARE(q.transforms[0].locations, (std::vector<std::string>{"weight_input", "input"}));
        for (const LinearInfo& linear : checkpoint->plan().linears())
            QCOMPARE(checkpoint->plan().problem(linear.module), expected);
        const std::vector<Finding> findings = diagnose(dir);
        const Finding* f = findingOf(findings, "transform-config");
        QVERIFY(f);
        QCOMPARE(f->severity, Severity::Error);

        for (const char* empty : {"{}", "null", R"({"config_groups": {}})"}) {
            CompressedTensors018 plain;
            plain.transformConfigJson = empty;
            const std::string loads = fp8As018(plain);
            QVERIFY2(refusal(loads).empty(), empty);
            QVERIFY(!findingOf(diagnose(loads), "transform-config"));
        }
    }

    // Item 3: a group's own format wins over the top-level one; mixed-precision with formats per
    // group runs; naive-quantized is FP8 weight-only (fp8 mode equals dequant: nothing else quantizes).
    void perGroupFormatWins()
    {
        const std::string mixed = fp8As018({});
        editConfig(mixed, [](json& c) { c["quantization_config"]["format"] = "mixed-precision"; });
        QVERIFY(refusal(mixed).empty());
        QCOMPARE(Checkpoint::open(mixed)->config().quantization->groups[0].format, std::string("float-quantized"));

        const std::string other = fp8As018({});
        editConfig(other, [](json& c) { c["quantization_config"]["format"] = "pack-quantized"; });
        QVERIFY(refusal(other).empty());

        // A group without its own format takes the top-level one, which a run cannot take.
        const std::string bare = fp8As018({});
        editConfig(bare, [](json& c) {
            c["quantization_config"]["format"] = "mixed-precision";
            group0(c).erase("format");
        });
        QVERIFY2(refusal(bare).find("format \"mixed-precision\" (group group_0)") != std::string::npos, refusal(bare).c_str());

        const std::string naive = fp8As018({}, {"channel", "none"});
        editConfig(naive, [](json& c) {
            c["quantization_config"]["format"] = "naive-quantized";
            group0(c)["format"] = "naive-quantized";
        });
        const std::vector<float> run = logits(naive, RunMode::Fp8), dequant = logits(naive, RunMode::Dequant);
        QCOMPARE(run, dequant);
        QVERIFY(!Checkpoint::open(naive)->plan().linears().empty());
        QVERIFY(Checkpoint::open(naive)->plan().find(kQuery0)->quantized);
    }

    // Item 4: block_structure written as the legacy string reads as the list.
    void readsBlockStructureAsText()
    {
        CompressedTensors018 options;
        options.blockStructureAsText = true;
        const Fp8Scheme block{"block", "group"};
        const std::string text = fp8As018(options, block);
        QVERIFY(readFileToString(text + "/config.json").find("\"16x16\"") != std::string::npos);
        QCOMPARE(Checkpoint::open(text)->config().quantization->groups[0].weights->blockStructure, (std::vector<int>{16, 16}));
        const std::string list = fp8As018({}, block);
        QCOMPARE(logits(text), logits(list));

        // In range, zero and negative sizes reach the scheme check, which shows them; any other text is
        // refused as written (issue 52 item 7: past the bound or not a number, it was shown as 0).
        const std::string asText = "; written as text it must be \"RxC\"";
        for (const auto& [written, read] : std::vector<std::pair<std::string, std::string>>{
                 {"16x", "block_structure\" is \"16x\"" + asText}, {"ax16", "block_structure\" is \"ax16\"" + asText},
                 {"16", "block_structure\" is \"16\"" + asText}, {"16x16x16", "is \"16x16x16\"" + asText},
                 {"-99999999999x16", "is \"-99999999999x16\"" + asText}, {"1073741825x16", "is \"1073741825x16\"" + asText},
                 {"0x16", "block_structure [0, 16]"}, {"-5x16", "block_structure [-5, 16]"},
                 {"16x-1073741824", "block_structure [16, -1073741824]"}}) {
            const std::string bad = fp8As018(options, block);
            editConfig(bad, [&](json& c) { group0(c)["weights"]["block_structure"] = written; });
            QVERIFY2(refusal(bad).find(read) != std::string::npos, refusal(bad).c_str());
        }
    }

    // Item 5: tensor_group, attn_head and dynamic "local" are named and refused by a run.
    void refusesTheNewStrategies_data()
    {
        QTest::addColumn<QString>("block");
        QTest::addColumn<QString>("args");
        QTest::addColumn<QString>("sentence");
        QTest::newRow("weights tensor_group")
            << "weights" << R"({"strategy": "tensor_group", "group_size": 16})"
            << "uses weight strategy \"tensor_group\" (NVFP4's per-group scales under one global scale) (group "
               "group_0) is not supported; only tensor, channel, block and MXFP8 run.";
        QTest::newRow("activations attn_head")
            << "input_activations" << R"({"strategy": "attn_head", "dynamic": false})"
            << "uses input activation strategy \"attn_head\" (one scale per attention head) (static) (group group_0) "
               "is not supported; only dynamic token, dynamic group and static tensor run.";
        QTest::newRow("activations tensor_group local")
            << "input_activations" << R"({"strategy": "tensor_group", "group_size": 16, "dynamic": "local"})"
            << "uses input activations with dynamic \"local\" (group group_0), NVFP4's dynamic per-group scales "
               "under a static global scale, which this version does not run; only dynamic true or false runs.";
        // Invalid for compressed-tensors ("local" is only for tensor_group), but written by hand: it
        // used to run as plain dynamic per-token activations.
        QTest::newRow("activations token local")
            << "input_activations" << R"({"strategy": "token", "dynamic": "local"})"
            << "uses input activations with dynamic \"local\"";
    }
    void refusesTheNewStrategies()
    {
        QFETCH(QString, block);
        QFETCH(QString, args);
        QFETCH(QString, sentence);
        const std::string dir = fp8As018({});
        const json edits = json::parse(args.toStdString());
        editConfig(dir, [&](json& c) {
            for (auto edit = edits.begin(); edit != edits.end(); ++edit)
                group0(c)[block.toStdString()][edit.key()] = edit.value();
        });
        const std::string refused = refusal(dir);
        QVERIFY2(refused.rfind("Module '" + kQuery0 + "' " + sentence.toStdString(), 0) == 0, refused.c_str());
        const auto checkpoint = Checkpoint::open(dir);
        const QuantizationConfig& q = *checkpoint->config().quantization;
        QVERIFY(unsupportedSchemeReason(q, q.groups[0]));
        QVERIFY(findingOf(diagnose(dir), "unsupported-scheme"));
        const json shown = argsSummaryJson(block == "weights" ? *q.groups[0].weights : *q.groups[0].inputActivations);
        const json given = json::parse(args.toStdString());
        QCOMPARE(shown["strategy"], given["strategy"]);
        if (given.contains("dynamic"))
            QCOMPARE(shown["dynamic"], given["dynamic"]);
    }

    // Item 6: the label is judged from the tensors. FP8 weights on disk run as compressed under any
    // label, and inspect names the consumers that misread it; a "compressed" label over float weights
    // is refused.
    void judgesStatusFromTheTensors_data()
    {
        QTest::addColumn<QString>("status"); // "" = missing
        QTest::newRow("frozen") << "frozen";
        QTest::newRow("missing") << "";
        QTest::newRow("initialized") << "initialized";
        QTest::newRow("calibration") << "calibration";
    }
    void judgesStatusFromTheTensors()
    {
        QFETCH(QString, status);
        CompressedTensors018 compressed;
        const std::string labelled = fp8As018(compressed);
        CompressedTensors018 mislabelled;
        mislabelled.status = status.toStdString();
        const std::string dir = fp8As018(mislabelled);
        const std::vector<float> a = logits(labelled), b = logits(dir);
        QVERIFY(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);

        const auto checkpoint = Checkpoint::open(dir);
        const std::vector<StatusMisreading> misread = statusMisreadings(*checkpoint);
        QCOMPARE(misread.size(), std::size_t(2));
        QCOMPARE(misread[0].consumer, Consumer::Aiu);
        QCOMPARE(misread[1].consumer, Consumer::CompressedTensors);
        QVERIFY(statusMisreadings(*Checkpoint::open(labelled)).empty());

        const std::vector<Finding> findings = diagnose(dir);
        const Finding* f = findingOf(findings, "status-from-tensors");
        QVERIFY(f);
        QCOMPARE(f->severity, Severity::Warning);
        const std::string label = status.isEmpty() ? "missing" : "\"" + status.toStdString() + "\"";
        QVERIFY2(f->message.rfind("quantization_status is " + label + " but 12 Linears", 0) == 0, f->message.c_str());
        for (const char* named : {"fms_mo", "compressed-tensors", "vLLM does not read the label"})
            QVERIFY2(f->message.find(named) != std::string::npos, f->message.c_str());
        QVERIFY(!findingOf(diagnose(labelled), "status-from-tensors"));

        const std::vector<ConsumerReport> reports = assessConsumers(*checkpoint);
        QCOMPARE(reports[1].consumer, Consumer::Vllm);
        QCOMPARE(reports[1].verdict, ConsumerVerdict::AsIntended);
        bool ignored = false;
        for (const ConsumerFinding& finding : reports[1].findings)
            ignored = ignored || finding.code == "vllm-status-ignored";
        QVERIFY(ignored);
    }

    void refusesACompressedLabelOverFloatWeights()
    {
        // The float checkpoint's tensors under an FP8 config labelled "compressed".
        const std::string dir = fp8As018({});
        const std::string floatWeights = readFileToString(floatDir_ + "/model.safetensors");
        std::ofstream(dir + "/model.safetensors", std::ios::binary | std::ios::trunc) << floatWeights;
        QCOMPARE(refusal(dir), "Tensor '" + kQuery0 + ".weight' in " + dir + "/model.safetensors has dtype F32, but "
                               "quantization_config group group_0 targets module '" + kQuery0 +
                               "', so it should be F8_E4M3.");
        QVERIFY(findingOf(diagnose(dir), "weight-not-fp8"));
        // Labelled frozen, the same float tensors are a float model: it runs, nothing to misread.
        editConfig(dir, [](json& c) { c["quantization_config"]["quantization_status"] = "frozen"; });
        QVERIFY(refusal(dir).empty());
        QVERIFY(statusMisreadings(*Checkpoint::open(dir)).empty());
    }

    // inspect shows all of it (text and --json); a CLI run refuses a transform with one sentence.
    void inspectShowsTheNewKeys()
    {
        CompressedTensors018 options;
        options.transformConfigJson = kHadamard;
        options.status = "frozen";
        const std::string dir = fp8As018(options);
        const CliResult inspect = runCli({"inspect", QString::fromStdString(dir), "--json"});
        QCOMPARE(inspect.exitCode, 0);
        const json document = json::parse(inspect.out.toStdString());
        const json& scheme = document["schemes"][0];
        QCOMPARE(scheme["weights"]["observer"], json("memoryless_minmax"));
        QCOMPARE(scheme["weights"]["scale_dtype"], json(nullptr));
        QCOMPARE(scheme["weights"]["observer_kwargs"], json::object());
        QCOMPARE(scheme["input_activations"]["dynamic"], json(true));
        QCOMPARE(scheme["input_activations"]["observer"], json(nullptr));
        QCOMPARE(document["transforms"][0]["name"], json("u"));
        QCOMPARE(document["transforms"][0]["type"], json("hadamard"));
        QVERIFY(document["transform_refusal"].get<std::string>().find("\"hadamard\"") != std::string::npos);
        QCOMPARE(document["quantization_status"]["label"], json("frozen"));
        QCOMPARE(document["quantization_status"]["runs_as_compressed"], json(true));
        QCOMPARE(document["quantization_status"]["misread_by"], (json{"aiu", "compressed-tensors"}));

        const CliResult text = runCli({"inspect", QString::fromStdString(dir)});
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains("    weights: observer memoryless_minmax"), qPrintable(text.out));
        QVERIFY(text.out.contains("  transform_config: quantization_config.transform_config holds rotations"));
        QVERIFY(text.out.contains("  quantization_status: \"frozen\"; FP8 weights on disk, run as compressed"));
        QVERIFY(text.out.contains("status-from-tensors"));

        const CliResult forward = runCli({"forward", QString::fromStdString(dir), "--input-ids", "0,280,100,2",
                                          "--output", QString::fromStdString(dir + "/out.safetensors")});
        QVERIFY(forward.exitCode != 0);
        QVERIFY2(forward.err.contains("transform_config holds rotations") && forward.err.contains("\"hadamard\""),
                 qPrintable(forward.err));
        QCOMPARE(forward.err.trimmed().count('\n'), 0);
        QVERIFY(!QFile::exists(QString::fromStdString(dir + "/out.safetensors")));
    }

    // Issue 52 item 5: every config the loader refuses is refused by the consumer rules too, with the
    // sentence the run throws, in inspect --json as in the core; none is "as intended". One row per
    // refusal of the loader (model/linear_plan.cpp over model/quantization_config.cpp's scheme
    // check), each a merge patch of quantization_config on an FP8 fixture.
    void consumersRefuseWhatARunRefuses_data()
    {
        QTest::addColumn<QString>("patch");
        QTest::addColumn<bool>("fp8Embeddings");
        const auto row = [](const char* name, const std::string& patch, bool embeddings = false) {
            QTest::newRow(name) << QString::fromStdString(patch) << embeddings;
        };
        const auto group0Weights = [](const std::string& args) {
            return R"({"config_groups": {"group_0": {"weights": )" + args + "}}}";
        };
        const auto group0Inputs = [](const std::string& args) {
            return R"({"config_groups": {"group_0": {"input_activations": )" + args + "}}}";
        };
        row("format int-quantized", R"({"format": "int-quantized"})");
        row("format of the group pack-quantized", R"({"config_groups": {"group_0": {"format": "pack-quantized"}}})");
        row("scale_dtype float64", group0Weights(R"({"scale_dtype": "torch.float64"})"));
        row("scale_dtype e8m0", group0Weights(R"({"scale_dtype": "torch.float8_e8m0fnu"})"));
        row("scale_dtype unknown", group0Weights(R"({"scale_dtype": "torch.banana"})"));
        row("activation scale_dtype float64", group0Inputs(R"({"scale_dtype": "torch.float64"})"));
        row("weights int", group0Weights(R"({"type": "int"})"));
        row("weights 4 bits", group0Weights(R"({"num_bits": 4})"));
        row("weights tensor_group", group0Weights(R"({"strategy": "tensor_group", "group_size": 16})"));
        row("weights block [0, 16]", group0Weights(R"({"strategy": "block", "block_structure": [0, 16]})"));
        row("weights dynamic local", group0Weights(R"({"dynamic": "local"})"));
        row("weights asymmetric", group0Weights(R"({"symmetric": false})"));
        row("weights MXFP8 in float-quantized",
            group0Weights(R"({"strategy": "group", "group_size": 32, "scale_dtype": "torch.uint8"})"));
        row("format mxfp8 over channel weights", R"({"format": "mxfp8-quantized"})");
        row("activations int", group0Inputs(R"({"type": "int"})"));
        row("activations per channel", group0Inputs(R"({"strategy": "channel"})"));
        row("activations group without a size", group0Inputs(R"({"strategy": "group"})"));
        row("output activations", R"({"config_groups": {"group_0": {"output_activations":
            {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true, "symmetric": true}}}})");
        row("quant_method awq", R"({"quant_method": "awq"})");
        row("quant_method fp8", R"({"quant_method": "fp8"})");
        row("transform_config", std::string(R"({"transform_config": )") + kHadamard + "}");
        row("an FP8 Linear ignored", R"({"ignore": ["qa_outputs", ")" + kQuery0 + R"("]})");
        row("a float Linear targeted", R"({"ignore": []})");
        row("two groups at one level", R"({"config_groups": {"group_1": {"targets": ["Linear"], "weights":
            {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": true, "dynamic": false}}}})");
        row("FP8 embeddings untargeted", R"({"config_groups": {"group_1": {"targets": ["re:nothing"]}}})", true);
        row("FP8 embeddings in blocks", R"({"config_groups": {"group_1": {"weights": {"strategy": "block",
            "block_structure": [16, 16]}}}})", true);
        row("FP8 embeddings in an unknown scale_dtype",
            R"({"config_groups": {"group_1": {"weights": {"scale_dtype": "torch.float64"}}}})", true);
    }
    void consumersRefuseWhatARunRefuses()
    {
        QFETCH(QString, patch);
        QFETCH(bool, fp8Embeddings);
        const std::string dir = temp_.path().toStdString() + "/refused-" + std::to_string(made_++);
        Fp8Edits edits;
        if (fp8Embeddings)
            edits.embeddingWeights = "channel";
        writeTinyFp8Checkpoint(floatDir_, dir, {}, {0, 5, 6, 7, 8, 9, 2}, edits);
        editConfig(dir, [&](json& c) { c["quantization_config"].merge_patch(json::parse(patch.toStdString())); });
        const std::string refused = refusal(dir);
        QVERIFY2(!refused.empty(), "the loader runs this config; the row tests nothing");

        // The core: each consumer fails on the sentence the run throws, naming the module it stops.
        const auto checkpoint = Checkpoint::open(dir);
        for (const ConsumerReport& report : assessConsumers(*checkpoint)) {
            QCOMPARE(report.verdict, ConsumerVerdict::Fails);
            const bool named = std::any_of(report.findings.begin(), report.findings.end(), [&](const ConsumerFinding& f) {
                return f.message == refused && f.severity == Severity::Error &&
                       f.code == std::string(report.consumer == Consumer::CompressedTensors ? "ct" : consumerName(report.consumer)) + "-run-refused";
            });
            QVERIFY2(named, (std::string(consumerName(report.consumer)) + " does not say: " + refused).c_str());
        }
        // Every refusal of the plan is in every consumer's findings with its modules.
        for (const PlanRefusal& r : checkpoint->plan().refusals())
            for (const ConsumerReport& report : assessConsumers(*checkpoint))
                QVERIFY(std::any_of(report.findings.begin(), report.findings.end(), [&](const ConsumerFinding& f) {
                    return f.message == r.sentence && f.modules == r.modules;
                }));

        // inspect --json says the same.
        const CliResult inspect = runCli({"inspect", QString::fromStdString(dir), "--json"});
        QVERIFY2(inspect.exitCode == 0, qPrintable(inspect.err));
        const json consumers = json::parse(inspect.out.toStdString())["consumers"];
        QCOMPARE(consumers.size(), std::size_t(3));
        for (const json& consumer : consumers) {
            QCOMPARE(consumer["verdict"].get<std::string>(), std::string("fails"));
            bool said = false;
            for (const json& f : consumer["findings"])
                said = said || f["message"] == refused;
            QVERIFY2(said, consumer.dump().c_str());
        }
    }

    // What the config reader itself refuses never reaches a verdict: inspect refuses it with the
    // run's sentence.
    void inspectRefusesWhatTheConfigReaderRefuses_data()
    {
        QTest::addColumn<QString>("patch");
        QTest::newRow("dynamic yes") << R"({"config_groups": {"group_0": {"weights": {"dynamic": "yes"}}}})";
        QTest::newRow("num_bits 0") << R"({"config_groups": {"group_0": {"weights": {"num_bits": 0}}}})";
        QTest::newRow("block_structure a number") << R"({"config_groups": {"group_0": {"weights": {"block_structure": 128}}}})";
        QTest::newRow("a group that is a list") << R"({"config_groups": {"group_0": [1]}})";
        QTest::newRow("targets a number") << R"({"config_groups": {"group_0": {"targets": 5}}})";
        QTest::newRow("format a number") << R"({"format": 8})";
    }
    void inspectRefusesWhatTheConfigReaderRefuses()
    {
        QFETCH(QString, patch);
        const std::string dir = fp8();
        editConfig(dir, [&](json& c) { c["quantization_config"].merge_patch(json::parse(patch.toStdString())); });
        const std::string refused = refusal(dir);
        QVERIFY(!refused.empty());
        const CliResult inspect = runCli({"inspect", QString::fromStdString(dir), "--json"});
        QVERIFY(inspect.exitCode != 0);
        QVERIFY2(inspect.err.toStdString().find(refused) != std::string::npos,
                 qPrintable(inspect.err + " / " + QString::fromStdString(refused)));
    }
};

QTEST_GUILESS_MAIN(TestConfigs2025)
#include "test_configs_2025.moc"
