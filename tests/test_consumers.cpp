// How each consumer (the AIU's fms + fms_mo, vLLM, compressed-tensors) loads a checkpoint
// (analysis/consumers.h, issue 26): tiny checkpoints with one known property each, and the verdict
// and finding (consumer, code, modules, loading) docs/ARCHITECTURE.md's "How each consumer loads
// a checkpoint" gives for it; then keep-float writing for every consumer (both names in ignore, kept
// weights in the model's 16-bit dtype, q/k/v alone refused) and its output loading as intended.
#include <QtTest>

#include <set>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "analysis/consumers.h"
#include "common/error.h"
#include "common/text_files.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "support/fixtures.h"
#include "tasks/keep_float.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::ordered_json;

namespace {

const std::string kLayer0 = "roberta.encoder.layer.0.";
const std::string kLayer1 = "roberta.encoder.layer.1.";

std::vector<std::string> encoderLinears()
{
    std::vector<std::string> out;
    for (const std::string& layer : {kLayer0, kLayer1})
        for (const char* linear : {"attention.self.query", "attention.self.key", "attention.self.value",
                                   "attention.output.dense", "intermediate.dense", "output.dense"})
            out.push_back(layer + linear);
    return out;
}

void editConfig(const std::string& dir, const std::function<void(json&)>& edit)
{
    const std::string path = dir + "/config.json";
    json config = json::parse(readFileToString(path));
    edit(config);
    std::ofstream(path, std::ios::trunc) << config.dump(2) << "\n";
}

const ConsumerReport& reportOf(const std::vector<ConsumerReport>& reports, Consumer consumer)
{
    for (const ConsumerReport& r : reports)
        if (r.consumer == consumer)
            return r;
    throw Error("no report");
}

const ConsumerFinding* findingOf(const ConsumerReport& report, const std::string& code)
{
    for (const ConsumerFinding& f : report.findings)
        if (f.code == code)
            return &f;
    return nullptr;
}

ConsumerVerdict loadingVerdict(const ConsumerReport& aiu, AiuLoading loading)
{
    for (const auto& [l, v] : aiu.loadings)
        if (l == loading)
            return v;
    throw Error("no loading");
}

std::string describe(const std::vector<ConsumerReport>& reports)
{
    std::string out;
    for (const ConsumerReport& r : reports) {
        out += std::string(consumerName(r.consumer)) + ": " + verdictName(r.verdict) + "\n";
        for (const ConsumerFinding& f : r.findings)
            out += "  " + f.code + " [" + f.loading + "] " + f.message + "\n";
    }
    return out;
}

bool allAsIntended(const std::vector<ConsumerReport>& reports)
{
    return std::all_of(reports.begin(), reports.end(),
                       [](const ConsumerReport& r) { return r.verdict == ConsumerVerdict::AsIntended; });
}

// The test's own bf16 rounding: to nearest, ties to even, on the float32 bit pattern.
uint16_t bf16Bits(float value)
{
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

} // namespace

class TestConsumers : public QObject {
    Q_OBJECT
    std::string float_;
    std::string root_;

    std::string fp8(const std::string& name, const Fp8Scheme& scheme = {}, const Fp8Edits& edits = {},
                    const std::string& floatDir = "")
    {
        const std::string dir = root_ + "/" + name;
        writeTinyFp8Checkpoint(floatDir.empty() ? float_ : floatDir, dir, scheme, {0, 5, 6, 7, 8, 9, 2}, edits);
        return dir;
    }

    static bool refuses(const std::string& source, const std::string& dst, const KeepFloatOptions& options)
    {
        try {
            keepFloat(source, dst, options);
        } catch (const Error&) {
            return true;
        }
        return false;
    }

    static std::vector<ConsumerReport> assess(const std::string& dir)
    {
        return assessConsumers(*Checkpoint::open(dir));
    }

private slots:
    void initTestCase()
    {
        root_ = makeTempDir("consumers");
        float_ = root_ + "/float";
        writeTinyFloatCheckpoint(float_, TinyModelSpec{});
    }

    void channelTokenCheckpointLoadsAsIntendedEverywhere()
    {
        const auto reports = assess(fp8("default"));
        QCOMPARE(reports.size(), std::size_t(3));
        QVERIFY2(allAsIntended(reports), describe(reports).c_str());
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        QCOMPARE(loadingVerdict(aiu, AiuLoading::Fused), ConsumerVerdict::AsIntended);
        QCOMPARE(loadingVerdict(aiu, AiuLoading::Unfused), ConsumerVerdict::AsIntended);
    }

    void frozenFp8CheckpointFailsOnTheAiu()
    {
        const std::string dir = fp8("frozen");
        editConfig(dir, [](json& c) { c["quantization_config"]["quantization_status"] = "frozen"; });
        const auto reports = assess(dir);
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        QCOMPARE(aiu.verdict, ConsumerVerdict::Fails);
        const ConsumerFinding* f = findingOf(aiu, "aiu-status-not-compressed");
        QVERIFY2(f, describe(reports).c_str());
        QCOMPARE(f->loading, std::string("both"));
        QCOMPARE(f->modules, encoderLinears()); // judged from the tensors: every FP8 Linear
        QVERIFY(f->message.find("\"frozen\"") != std::string::npos);
        const ConsumerReport& ct = reportOf(reports, Consumer::CompressedTensors);
        QCOMPARE(ct.verdict, ConsumerVerdict::Fails);
        QVERIFY(findingOf(ct, "ct-status-not-compressed"));
        QCOMPARE(reportOf(reports, Consumer::Vllm).verdict, ConsumerVerdict::AsIntended);

        // Missing status: the same for the AIU.
        editConfig(dir, [](json& c) { c["quantization_config"].erase("quantization_status"); });
        QVERIFY(findingOf(reportOf(assess(dir), Consumer::Aiu), "aiu-status-not-compressed"));
    }

    // FP8 word embeddings: compressed-tensors decompresses an Embedding like a Linear; fms builds a
    // plain embedding that fms_mo never quantizes, so the AIU loads the codes without their scale.
    void fp8WordEmbeddingsFailOnTheAiu()
    {
        Fp8Edits edits;
        edits.embeddingWeights = "channel";
        const auto reports = assess(fp8("fp8-embeddings", {}, edits));
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        QCOMPARE(aiu.verdict, ConsumerVerdict::Fails);
        const ConsumerFinding* f = findingOf(aiu, "aiu-embedding-fp8");
        QVERIFY2(f, describe(reports).c_str());
        QCOMPARE(f->loading, std::string("both"));
        QCOMPARE(f->severity, Severity::Error);
        QCOMPARE(f->modules, std::vector<std::string>{"roberta.embeddings.word_embeddings"});
        QVERIFY(f->message.find("base_model.embedding.weight") != std::string::npos);
        QVERIFY(!f->fix.empty());
        QCOMPARE(reportOf(reports, Consumer::CompressedTensors).verdict, ConsumerVerdict::AsIntended);
        // The float table of the same scheme loads as intended (the finding follows the dtype), and
        // group_1 picks no Linear, so nothing else changes for the AIU.
        const auto floatTable = assess(fp8("float-embeddings"));
        const ConsumerReport& floatAiu = reportOf(floatTable, Consumer::Aiu);
        QCOMPARE(floatAiu.verdict, ConsumerVerdict::AsIntended);
        std::set<std::string> expected = {"aiu-embedding-fp8"}, codes;
        for (const ConsumerFinding& finding : floatAiu.findings)
            expected.insert(finding.code);
        for (const ConsumerFinding& finding : aiu.findings)
            codes.insert(finding.code);
        QVERIFY2(codes == expected, describe(reports).c_str());
    }

    // A float word-embedding table that group_0 targets by class name under "compressed": it runs
    // float here (inspect warns), but compressed-tensors decompresses an Embedding like a Linear and
    // finds no codes or scale (issue 52 item 5: all three said "as intended").
    void aFloatEmbeddingTargetFailsInCompressedTensors()
    {
        const std::string dir = fp8("embedding-target");
        editConfig(dir, [](json& c) { c["quantization_config"]["config_groups"]["group_0"]["targets"] = {"Linear", "Embedding"}; });
        const auto reports = assess(dir);
        const ConsumerReport& ct = reportOf(reports, Consumer::CompressedTensors);
        QCOMPARE(ct.verdict, ConsumerVerdict::Fails);
        const ConsumerFinding* f = findingOf(ct, "ct-float-built-fp8");
        QVERIFY2(f, describe(reports).c_str());
        QCOMPARE(f->modules, std::vector<std::string>{"roberta.embeddings.word_embeddings"});
        QCOMPARE(reportOf(reports, Consumer::Vllm).verdict, ConsumerVerdict::AsIntended);
    }

    void aSecondGroupIsIgnoredByTheAiu()
    {
        // group_1 takes layer 0's FFN input Linear weight-only (its tensors fit either way): the
        // loaders pick it by exact name; fms_mo reads group_0 only and quantizes its activations.
        const std::string dir = fp8("two-groups");
        const std::string module = kLayer0 + "intermediate.dense";
        editConfig(dir, [&](json& c) {
            json group1 = c["quantization_config"]["config_groups"]["group_0"];
            group1["targets"] = {module};
            group1["input_activations"] = nullptr;
            c["quantization_config"]["config_groups"]["group_1"] = group1;
        });
        const auto reports = assess(dir);
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        QCOMPARE(aiu.verdict, ConsumerVerdict::RunsDifferently);
        const ConsumerFinding* f = findingOf(aiu, "aiu-group-ignored");
        QVERIFY2(f, describe(reports).c_str());
        QCOMPARE(f->modules, std::vector<std::string>{module});
        QCOMPARE(f->severity, Severity::Warning);
        QVERIFY(f->message.find("group_1") != std::string::npos);
        QCOMPARE(reportOf(reports, Consumer::Vllm).verdict, ConsumerVerdict::AsIntended);
        QCOMPARE(reportOf(reports, Consumer::CompressedTensors).verdict, ConsumerVerdict::AsIntended);
    }

    void perTensorWeightsFailFusedQkvOnly()
    {
        Fp8Scheme scheme;
        scheme.weights = "tensor";
        const auto reports = assess(fp8("tensor-weights", scheme));
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        const ConsumerFinding* f = findingOf(aiu, "aiu-qkv-per-tensor-scales");
        QVERIFY2(f, describe(reports).c_str());
        QCOMPARE(f->loading, std::string("fused"));
        QCOMPARE(f->modules.size(), std::size_t(6)); // q, k, v of both layers
        QCOMPARE(f->modules[0], kLayer0 + "attention.self.query");
        QCOMPARE(loadingVerdict(aiu, AiuLoading::Fused), ConsumerVerdict::Fails);
        QCOMPARE(loadingVerdict(aiu, AiuLoading::Unfused), ConsumerVerdict::AsIntended);
        QCOMPARE(aiu.verdict, ConsumerVerdict::Fails);
        QVERIFY(findingOf(aiu, "aiu-tensor-weights-token-activations")); // info: untested upstream
        QCOMPARE(reportOf(reports, Consumer::Vllm).verdict, ConsumerVerdict::AsIntended);
    }

    void channelWeightsWithStaticActivationsFailAtTheFirstForward()
    {
        Fp8Scheme scheme;
        scheme.activations = "tensor";
        const auto reports = assess(fp8("static", scheme));
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        const ConsumerFinding* f = findingOf(aiu, "aiu-channel-weights-tensor-activations");
        QVERIFY2(f, describe(reports).c_str());
        QCOMPARE(f->loading, std::string("both"));
        QCOMPARE(f->modules, encoderLinears());
        QCOMPARE(loadingVerdict(aiu, AiuLoading::Unfused), ConsumerVerdict::Fails);
        // Static input scales are per tensor: fused q/k/v cannot take them either.
        QVERIFY(findingOf(aiu, "aiu-qkv-per-tensor-scales"));
        QCOMPARE(reportOf(reports, Consumer::CompressedTensors).verdict, ConsumerVerdict::AsIntended);
    }

    void maskedLmWithAPoolerCollidesOnTheAiu()
    {
        TinyModelSpec spec;
        spec.architecture = "RobertaForMaskedLM";
        const std::string floatDir = root_ + "/mlm-float";
        writeTinyFloatCheckpoint(floatDir, spec);
        const std::string dir = fp8("mlm-pooler", {}, {}, floatDir);
        {
            std::vector<TensorToWrite> tensors;
            const auto store = TensorStore::openDirectory(dir);
            for (const TensorView* view : store->tensors()) {
                TensorToWrite copy{view->name, view->dtype, view->shape, {}};
                copy.bytes.assign(view->data, view->data + view->byteSize);
                tensors.push_back(std::move(copy));
            }
            const std::vector<float> weight(32 * 32, 0.01f), bias(32, 0.0f);
            tensors.push_back(makeFloatTensor("roberta.pooler.dense.weight", Dtype::F32, {32, 32}, weight.data()));
            tensors.push_back(makeFloatTensor("roberta.pooler.dense.bias", Dtype::F32, {32}, bias.data()));
            const std::string bytesDir = dir + "/model.safetensors";
            writeSafetensors(bytesDir + ".new", tensors, {{"format", "pt"}});
            QVERIFY(QFile::remove(QString::fromStdString(bytesDir)));
            QVERIFY(QFile::rename(QString::fromStdString(bytesDir + ".new"), QString::fromStdString(bytesDir)));
        }
        const auto reports = assess(dir);
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        const ConsumerFinding* f = findingOf(aiu, "aiu-pooler-collision");
        QVERIFY2(f, describe(reports).c_str());
        QCOMPARE(f->modules, (std::vector<std::string>{"roberta.pooler.dense.bias", "roberta.pooler.dense.weight"}));
        QVERIFY(f->message.find("classification_head.dense") != std::string::npos);
        QCOMPARE(aiu.verdict, ConsumerVerdict::Fails);
        // The same MLM without the pooler is fine.
        QVERIFY2(allAsIntended(assess(fp8("mlm", {}, {}, floatDir))), describe(assess(fp8("mlm2", {}, {}, floatDir))).c_str());
    }

    void hfNamedKeepFloatIsBuiltFp8OnTheAiu()
    {
        const std::string module = kLayer1 + "intermediate.dense";
        Fp8Edits edits;
        edits.keepFloat = {module}; // listed by HF name only
        const auto reports = assess(fp8("hf-named", {}, edits));
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        const ConsumerFinding* f = findingOf(aiu, "aiu-float-built-fp8");
        QVERIFY2(f, describe(reports).c_str());
        QCOMPARE(f->loading, std::string("both"));
        QCOMPARE(f->modules, std::vector<std::string>{module});
        QVERIFY(f->message.find("base_model.layers.1.ff_sub_layer.w1") != std::string::npos);
        QCOMPARE(aiu.verdict, ConsumerVerdict::Fails);
        QCOMPARE(reportOf(reports, Consumer::Vllm).verdict, ConsumerVerdict::AsIntended);
        QCOMPARE(reportOf(reports, Consumer::CompressedTensors).verdict, ConsumerVerdict::AsIntended);
    }

    void oneOfQkvKeptAloneFailsFusedAndOnVllm()
    {
        const std::string value = kLayer0 + "attention.self.value";
        Fp8Edits edits;
        edits.keepFloat = {value, "base_model.layers.0.attn.in_proj.value"};
        const auto reports = assess(fp8("value-alone", {}, edits));
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        const ConsumerFinding* f = findingOf(aiu, "aiu-qkv-kept-alone");
        QVERIFY2(f, describe(reports).c_str());
        QCOMPARE(f->loading, std::string("fused"));
        QCOMPARE(f->modules, std::vector<std::string>{value});
        QCOMPARE(loadingVerdict(aiu, AiuLoading::Fused), ConsumerVerdict::Fails);
        QCOMPARE(loadingVerdict(aiu, AiuLoading::Unfused), ConsumerVerdict::AsIntended);
        const ConsumerReport& vllm = reportOf(reports, Consumer::Vllm);
        const ConsumerFinding* refused = findingOf(vllm, "vllm-qkv-schemes-differ");
        QVERIFY(refused);
        QVERIFY(refused->message.find("vLLM requires all to use the same scheme") != std::string::npos);
        QCOMPARE(refused->modules.size(), std::size_t(3));
        QCOMPARE(vllm.verdict, ConsumerVerdict::Fails);
    }

    void aKvCacheSchemeIsDroppedByTheAiu()
    {
        const std::string dir = fp8("kv-cache");
        editConfig(dir, [](json& c) {
            c["quantization_config"]["kv_cache_scheme"] = {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"},
                                                           {"dynamic", false}, {"symmetric", true}};
        });
        const auto reports = assess(dir);
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        const ConsumerFinding* f = findingOf(aiu, "aiu-kv-cache-dropped");
        QVERIFY2(f, describe(reports).c_str());
        QCOMPARE(f->modules, (std::vector<std::string>{kLayer0 + "attention.self", kLayer1 + "attention.self"}));
        QCOMPARE(aiu.verdict, ConsumerVerdict::RunsDifferently);
    }

    void aFloat32KeptWeightInABf16ModelFailsOnTheAiu()
    {
        // Both names in ignore, but the kept weight in float32 (what keep-float wrote before issue 26).
        const std::string module = kLayer1 + "output.dense";
        Fp8Edits edits;
        edits.keepFloat = {module, "base_model.layers.1.ff_sub_layer.w2"};
        const std::string dir = fp8("float32-kept", {}, edits);
        storeFloatTensorsAs(dir, "BF16");
        {
            std::vector<TensorToWrite> tensors;
            const auto store = TensorStore::openDirectory(dir);
            for (const TensorView* view : store->tensors()) {
                if (view->name == module + ".weight") {
                    tensors.push_back(makeFloatTensor(view->name, Dtype::F32, view->shape, view->toFloat().values.data()));
                    continue;
                }
                TensorToWrite copy{view->name, view->dtype, view->shape, {}};
                copy.bytes.assign(view->data, view->data + view->byteSize);
                tensors.push_back(std::move(copy));
            }
            writeSafetensors(dir + "/model.safetensors.new", tensors, {{"format", "pt"}});
        }
        QVERIFY(QFile::remove(QString::fromStdString(dir + "/model.safetensors")));
        QVERIFY(QFile::rename(QString::fromStdString(dir + "/model.safetensors.new"),
                              QString::fromStdString(dir + "/model.safetensors")));
        const auto reports = assess(dir);
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        const ConsumerFinding* f = findingOf(aiu, "aiu-kept-float32");
        QVERIFY2(f, describe(reports).c_str());
        QCOMPARE(f->modules, std::vector<std::string>{module});
        QCOMPARE(f->loading, std::string("both"));
        QVERIFY(!findingOf(aiu, "aiu-float-built-fp8")); // the FMS name is there
        QCOMPARE(aiu.verdict, ConsumerVerdict::Fails);
        QCOMPARE(reportOf(reports, Consumer::Vllm).verdict, ConsumerVerdict::AsIntended);
    }

    void keepFloatWritesBf16WeightsUnderBothNames()
    {
        Fp8Scheme scheme;
        scheme.scaleDtype = "BF16";
        const std::string source = fp8("bf16", scheme);
        storeFloatTensorsAs(source, "BF16");
        QCOMPARE(checkpointFloatDtype(*Checkpoint::open(source)), Dtype::BF16);

        // The reference in float32: its weights are rounded to bf16 on the way in.
        const std::string module = kLayer1 + "attention.output.dense";
        KeepFloatOptions options;
        options.modules = {module};
        options.referenceDir = float_;
        const std::string dst = root_ + "/bf16-kept";
        const KeepFloatResult result = keepFloat(source, dst, options);
        QCOMPARE(result.weightDtype, Dtype::BF16);
        const auto written = TensorStore::openDirectory(dst);
        const TensorView& kept = written->require(module + ".weight");
        QCOMPARE(kept.dtype, Dtype::BF16);
        const std::vector<float> reference = TensorStore::openDirectory(float_)->require(module + ".weight").toFloat().values;
        QCOMPARE(kept.byteSize, reference.size() * 2);
        for (std::size_t i = 0; i < reference.size(); ++i) {
            uint16_t bits = 0;
            std::memcpy(&bits, kept.data + 2 * i, 2);
            QCOMPARE(bits, bf16Bits(reference[i]));
        }
        QVERIFY(!written->find(module + ".weight_scale"));
        const auto ignore = Checkpoint::open(dst)->config().quantization->ignore;
        for (const std::string& name : {module, std::string("base_model.layers.1.attn.dense")})
            QVERIFY2(std::find(ignore.begin(), ignore.end(), name) != ignore.end(), name.c_str());
        const auto reports = assess(dst);
        QVERIFY2(allAsIntended(reports), describe(reports).c_str());
        QVERIFY(findingOf(reportOf(reports, Consumer::Aiu), "aiu-bf16-cast")); // info

        // Without a reference: the dequantized weight, in bf16 as well.
        options.referenceDir.clear();
        keepFloat(source, root_ + "/bf16-kept-deq", options);
        QCOMPARE(TensorStore::openDirectory(root_ + "/bf16-kept-deq")->require(module + ".weight").dtype, Dtype::BF16);
    }

    // An earlier fix that named its float Linear by HF name only (the AIU builds it FP8) is repaired
    // by the next keep-float: every float encoder Linear gets its FMS name too.
    void keepFloatRepairsAnHfOnlyEarlierFix()
    {
        const std::string old = kLayer1 + "intermediate.dense";
        Fp8Edits edits;
        edits.keepFloat = {old};
        const std::string source = fp8("hf-named-earlier-fix", {}, edits);
        QCOMPARE(reportOf(assess(source), Consumer::Aiu).verdict, ConsumerVerdict::Fails);
        KeepFloatOptions options;
        options.modules = {kLayer0 + "output.dense"};
        const std::string dst = root_ + "/hf-named-repaired";
        const KeepFloatResult result = keepFloat(source, dst, options);
        for (const std::string& name : {old, std::string("base_model.layers.1.ff_sub_layer.w1"), kLayer0 + "output.dense",
                                        std::string("base_model.layers.0.ff_sub_layer.w2")})
            QVERIFY2(std::find(result.ignore.begin(), result.ignore.end(), name) != result.ignore.end(), name.c_str());
        const auto reports = assess(dst);
        QVERIFY2(allAsIntended(reports), describe(reports).c_str());
    }

    void keepFloatOfAllOfQkvAddsTheFusedName()
    {
        const std::string source = fp8("qkv-source");
        KeepFloatOptions options;
        options.modules = {kLayer0 + "attention.self.query", kLayer0 + "attention.self.key", kLayer0 + "attention.self.value"};
        const std::string dst = root_ + "/qkv-kept";
        const KeepFloatResult result = keepFloat(source, dst, options);
        for (const std::string& name : {kLayer0 + "attention.self.key", std::string("base_model.layers.0.attn.in_proj.key"),
                                        std::string("base_model.layers.0.attn.in_proj.qkv_fused")})
            QVERIFY2(std::find(result.ignore.begin(), result.ignore.end(), name) != result.ignore.end(), name.c_str());
        QCOMPARE(TensorStore::openDirectory(dst)->require(kLayer0 + "attention.self.key.weight").dtype, Dtype::F32);
        const auto reports = assess(dst);
        QVERIFY2(allAsIntended(reports), describe(reports).c_str());
    }

    void keepFloatRefusesOneOfQkvAloneUnlessTheAiuLoadsUnfused()
    {
        const std::string source = fp8("alone-source");
        KeepFloatOptions options;
        options.modules = {kLayer0 + "attention.self.value"};
        const std::string refusedDir = root_ + "/alone-refused";
        try {
            keepFloat(source, refusedDir, options);
            QFAIL("keep-float accepted value alone for every consumer");
        } catch (const Error& e) {
            const std::string text = e.what();
            QVERIFY2(text.find("keep all three") != std::string::npos, e.what());
            QVERIFY2(text.back() == '.' && text.find(". ") == std::string::npos && text.find('\n') == std::string::npos,
                     e.what()); // one sentence
        }
        QVERIFY(!QFileInfo::exists(QString::fromStdString(refusedDir)));

        options.consumers = {true, false, false}; // the AIU, fused: still refused
        QVERIFY(refuses(source, refusedDir, options));
        options.consumers = {true, true, true}; // vLLM still cannot
        QVERIFY(refuses(source, refusedDir, options));

        options.consumers = {true, false, true}; // --consumer aiu --unfused
        const std::string dst = root_ + "/alone-unfused";
        keepFloat(source, dst, options);
        const auto reports = assess(dst);
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        QCOMPARE(loadingVerdict(aiu, AiuLoading::Unfused), ConsumerVerdict::AsIntended);
        QCOMPARE(loadingVerdict(aiu, AiuLoading::Fused), ConsumerVerdict::Fails);
        const auto ignore = Checkpoint::open(dst)->config().quantization->ignore;
        QVERIFY(std::find(ignore.begin(), ignore.end(), "base_model.layers.0.attn.in_proj.value") != ignore.end());
        QVERIFY(std::find(ignore.begin(), ignore.end(), "base_model.layers.0.attn.in_proj.qkv_fused") == ignore.end());
    }

    // Per-tensor weight scales fail the AIU's fused loading whatever is kept float: keep-float
    // writes the copy for the unfused loading, records that, and the copy is judged as meant to
    // load; the same tensors without that record (or with "aiu fused" in it) still fail.
    void keepFloatOfAPerTensorCheckpointIsWrittenForTheUnfusedAiu()
    {
        Fp8Scheme scheme;
        scheme.weights = "tensor";
        const std::string source = fp8("tensor-fix-source", scheme);
        KeepFloatOptions options;
        options.modules = {kLayer1 + "attention.output.dense"};
        const std::string dst = root_ + "/tensor-fix";
        const KeepFloatResult result = keepFloat(source, dst, options);
        QVERIFY(result.writtenFor.aiu && result.writtenFor.aiuUnfused && result.writtenFor.vllm);
        QVERIFY2(result.loadingNote.find("--unfuse_weights") != std::string::npos, result.loadingNote.c_str());
        QVERIFY2(result.loadingNote.find("[3]") != std::string::npos, result.loadingNote.c_str());
        const json provenance = json::parse(readFileToString(dst + "/" + kProvenanceFileName));
        QCOMPARE(provenance["written_for"], json({"aiu unfused", "vllm", "compressed-tensors"}));

        const auto reports = assess(dst);
        const ConsumerReport& aiu = reportOf(reports, Consumer::Aiu);
        QVERIFY2(allAsIntended(reports), describe(reports).c_str());
        QVERIFY(aiu.writtenFor == AiuLoading::Unfused);
        QCOMPARE(loadingVerdict(aiu, AiuLoading::Fused), ConsumerVerdict::Fails); // still said, per loading
        QCOMPARE(aiuLoadingsText(aiu), std::string("written for the unfused loading; fused: fails, unfused: as intended"));

        json both = provenance;
        both["written_for"] = {"aiu fused", "aiu unfused", "vllm", "compressed-tensors"};
        std::ofstream(dst + "/" + kProvenanceFileName, std::ios::trunc) << both.dump(2);
        QCOMPARE(reportOf(assess(dst), Consumer::Aiu).verdict, ConsumerVerdict::Fails);
        QVERIFY(QFile::remove(QString::fromStdString(dst + "/" + kProvenanceFileName)));
        QCOMPARE(reportOf(assess(dst), Consumer::Aiu).verdict, ConsumerVerdict::Fails);
        QVERIFY(!reportOf(assess(dst), Consumer::Aiu).writtenFor);
    }

    // Where the unfused loading fails too (channel weights with static per-tensor activations),
    // keep-float does not pretend a loading works: written as asked, no note.
    void keepFloatChoosesNoLoadingWhenBothFail()
    {
        Fp8Scheme scheme;
        scheme.activations = "tensor";
        const std::string source = fp8("static-fix-source", scheme);
        KeepFloatOptions options;
        options.modules = {kLayer1 + "attention.output.dense"};
        const KeepFloatResult result = keepFloat(source, root_ + "/static-fix", options);
        QVERIFY(!result.writtenFor.aiuUnfused);
        QVERIFY(result.loadingNote.empty());
        QCOMPARE(reportOf(result.consumers, Consumer::Aiu).verdict, ConsumerVerdict::Fails);
        QVERIFY(!reportOf(result.consumers, Consumer::Aiu).writtenFor);
        const KeepFloatResult plain = keepFloat(fp8("plain-fix-source"), root_ + "/plain-fix", options);
        QVERIFY(!plain.writtenFor.aiuUnfused && plain.loadingNote.empty()); // fused loads: written for it
    }

    // The remedy fms_mo takes for fused q/k/v: per-tensor weight scales stored per output channel.
    // Checked byte for byte: the codes unchanged, each row's scale the tensor's one value, the
    // config saying channel; then the fused loading takes the copy. Refused, one sentence, beside
    // per-tensor activations (fms_mo pairs per-channel weights with per-token ones only).
    void perChannelWeightsLetTheFusedAiuLoadAPerTensorCheckpoint()
    {
        Fp8Scheme scheme;
        scheme.weights = "tensor";
        const std::string source = fp8("tensor-expand-source", scheme);
        const std::string module = kLayer1 + "attention.output.dense";
        KeepFloatOptions options;
        options.modules = {module};
        options.perChannelWeights = true;
        const std::string dst = root_ + "/tensor-expanded";
        const KeepFloatResult result = keepFloat(source, dst, options);
        QVERIFY(!result.writtenFor.aiuUnfused && result.loadingNote.empty());

        const auto before = TensorStore::openDirectory(source);
        const auto after = TensorStore::openDirectory(dst);
        int expanded = 0;
        for (const std::string& linear : encoderLinears()) {
            if (linear == module)
                continue;
            const TensorView& codesBefore = before->require(linear + ".weight");
            const TensorView& codesAfter = after->require(linear + ".weight");
            QCOMPARE(codesAfter.byteSize, codesBefore.byteSize);
            QVERIFY(std::memcmp(codesAfter.data, codesBefore.data, codesBefore.byteSize) == 0);
            const TensorView& scalar = before->require(linear + ".weight_scale");
            const TensorView& rows = after->require(linear + ".weight_scale");
            QCOMPARE(scalar.byteSize, std::size_t(4));
            QCOMPARE(rows.shape, (std::vector<int64_t>{codesBefore.shape[0], 1}));
            for (int64_t r = 0; r < codesBefore.shape[0]; ++r)
                QVERIFY(std::memcmp(rows.data + r * 4, scalar.data, 4) == 0);
            ++expanded;
        }
        QCOMPARE(expanded, 11);
        const json config = json::parse(readFileToString(dst + "/config.json"));
        QCOMPARE(config["quantization_config"]["config_groups"]["group_0"]["weights"]["strategy"], json("channel"));

        const auto reports = assess(dst);
        QVERIFY2(allAsIntended(reports), describe(reports).c_str());
        QCOMPARE(loadingVerdict(reportOf(reports, Consumer::Aiu), AiuLoading::Fused), ConsumerVerdict::AsIntended);
        // The finding on the source names this remedy.
        const ConsumerFinding* f = findingOf(reportOf(assess(source), Consumer::Aiu), "aiu-qkv-per-tensor-scales");
        QVERIFY(f && f->fix.find("--per-channel-weights") != std::string::npos);

        Fp8Scheme staticScheme;
        staticScheme.weights = "tensor";
        staticScheme.activations = "tensor";
        const std::string staticSource = fp8("tensor-static-source", staticScheme);
        const std::string refusedDir = root_ + "/tensor-static-expanded";
        try {
            keepFloat(staticSource, refusedDir, options);
            QFAIL("per-channel weights beside static per-tensor activations were written");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("per-tensor input activations") != std::string::npos, e.what());
        }
        QVERIFY(!QFileInfo::exists(QString::fromStdString(refusedDir)));
        QVERIFY(refuses(fp8("channel-expand-source"), root_ + "/nothing-to-expand", options));
    }
};

QTEST_GUILESS_MAIN(TestConsumers)
#include "test_consumers.moc"
