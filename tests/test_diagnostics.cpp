// Scale statistics against hand-computed values, and diagnostics: clean FP8 checkpoints have no
// errors, and each damaged copy (one defect written with the core's safetensors writer or by
// editing config.json) adds exactly the expected finding for the damaged tensor or module.
#include <QDir>
#include <QElapsedTimer>
#include <QtTest>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "analysis/diagnostics.h"
#include "common/error.h"
#include "analysis/scale_statistics.h"
#include "common/text_files.h"
#include "engine/compute_threads.h"
#include "io/atomic_write.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "engine/encoder_model.h"
#include "numerics/fp8.h"
#include "numerics/half.h"
#include "support/fixtures.h"
#include "support/reference_forward.h"

using namespace scalescope;
using namespace scalescope::testing;

namespace {

const std::string kLayer0 = "roberta.encoder.layer.0.";
const std::string kLayer1 = "roberta.encoder.layer.1.";
const std::string kEmbeddings = "roberta.embeddings.word_embeddings";

void makeDirectory(const std::string& dir)
{
    if (!QDir().mkpath(QString::fromStdString(dir)))
        throw std::runtime_error("cannot create " + dir);
}

// A checkpoint held in memory for editing: config.json and every tensor's raw bytes.
struct EditableCheckpoint {
    nlohmann::json config;
    std::vector<TensorToWrite> tensors;

    static EditableCheckpoint read(const std::string& dir)
    {
        EditableCheckpoint checkpoint;
        checkpoint.config = readJsonFile(joinPath(dir, "config.json"));
        const std::unique_ptr<TensorStore> store = TensorStore::openDirectory(dir);
        for (const TensorView* view : store->tensors())
            checkpoint.tensors.push_back(
                {view->name, view->dtype, view->shape, std::vector<uint8_t>(view->data, view->data + view->byteSize)});
        return checkpoint;
    }

    void write(const std::string& dir) const
    {
        makeDirectory(dir);
        writeSafetensors(joinPath(dir, "model.safetensors"), tensors, {{"format", "pt"}});
        writeBytesAtomically(joinPath(dir, "config.json"), config.dump(2));
    }

    TensorToWrite& tensor(const std::string& name)
    {
        for (TensorToWrite& t : tensors)
            if (t.name == name)
                return t;
        throw std::runtime_error("no tensor " + name);
    }

    void remove(const std::string& name)
    {
        const auto before = tensors.size();
        tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                                     [&](const TensorToWrite& t) { return t.name == name; }),
                      tensors.end());
        if (tensors.size() == before)
            throw std::runtime_error("no tensor " + name);
    }

    // Decoded values; FP8 codes through the tests' own bit-field decoder.
    std::vector<float> values(const std::string& name)
    {
        const TensorToWrite& t = tensor(name);
        const std::size_t count = t.bytes.size() / dtypeSize(t.dtype);
        std::vector<float> out(count);
        for (std::size_t i = 0; i < count; ++i) {
            const uint8_t* element = t.bytes.data() + i * dtypeSize(t.dtype);
            uint16_t bits16 = 0;
            switch (t.dtype) {
            case Dtype::F32: std::memcpy(&out[i], element, 4); break;
            case Dtype::BF16: std::memcpy(&bits16, element, 2); out[i] = half::bf16ToFloat(bits16); break;
            case Dtype::F16: std::memcpy(&bits16, element, 2); out[i] = half::f16ToFloat(bits16); break;
            case Dtype::F8_E4M3: out[i] = referenceDecodeE4M3(element[0]); break;
            default: throw std::runtime_error("unexpected dtype in " + name);
            }
        }
        return out;
    }

    // Replaces (or adds) a float tensor, keeping its place in the file.
    void setValues(const std::string& name, Dtype dtype, const std::vector<int64_t>& shape,
                   const std::vector<float>& values)
    {
        TensorToWrite replacement = makeFloatTensor(name, dtype, shape, values.data());
        for (TensorToWrite& t : tensors)
            if (t.name == name) {
                t = std::move(replacement);
                return;
            }
        tensors.push_back(std::move(replacement));
    }

    void setValue(const std::string& name, std::size_t index, float value)
    {
        TensorToWrite& t = tensor(name);
        std::vector<float> all = values(name);
        all.at(index) = value;
        setValues(name, t.dtype, t.shape, all);
    }

    nlohmann::json& group0() { return config["quantization_config"]["config_groups"]["group_0"]; }
};

using Edit = std::function<void(EditableCheckpoint&)>;

struct DefectCase {
    const char* name;
    const char* base;     // clean checkpoint it starts from
    Edit prepare;         // applied to both the baseline and the damaged copy (may be empty)
    Edit damage;
    const char* code;     // "" when the edit must change nothing
    Severity severity;
    std::string subject;
};

// Per-tensor q/k/v weight scales made equal (to the query's), so that a layer can be fused.
void equalizeQkvWeightScales(EditableCheckpoint& c)
{
    for (const std::string& layer : {kLayer0, kLayer1}) {
        const float query = c.values(layer + "attention.self.query.weight_scale").at(0);
        for (const char* part : {"key", "value"})
            c.setValue(layer + "attention.self." + part + ".weight_scale", 0, query);
    }
}

void setCodes(EditableCheckpoint& c, const std::string& name, int64_t columns, int64_t firstColumn, int64_t count,
              uint8_t code)
{
    TensorToWrite& t = c.tensor(name);
    const int64_t rows = static_cast<int64_t>(t.bytes.size()) / columns;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = firstColumn; k < firstColumn + count; ++k)
            t.bytes[static_cast<std::size_t>(r * columns + k)] = code;
}

const std::vector<DefectCase>& defectCases()
{
    static const std::vector<DefectCase> cases = {
        {"rewrite-unchanged", "channel-token", {}, [](EditableCheckpoint&) {}, "", Severity::Info, ""},
        {"block-structure-not-positive", "channel-token", {},
         [](EditableCheckpoint& c) {
             c.group0()["weights"]["strategy"] = "block";
             c.group0()["weights"]["block_structure"] = {0, 8};
         },
         "unsupported-scheme", Severity::Error, kLayer0 + "attention.self.query"},
        {"block-structure-negative", "block-token", {},
         [](EditableCheckpoint& c) { c.group0()["weights"]["block_structure"] = {16, -16}; },
         "unsupported-scheme", Severity::Error, kLayer0 + "attention.self.query"},
        {"block-scale-wrong-grid", "block-token", {},
         [](EditableCheckpoint& c) { c.tensor(kLayer0 + "attention.self.key.weight_scale").shape = {4, 1}; },
         "scale-shape", Severity::Error, kLayer0 + "attention.self.key.weight_scale"},
        {"block-scale-nan", "block-token", {},
         [](EditableCheckpoint& c) {
             c.setValue(kLayer1 + "intermediate.dense.weight_scale", 5, std::numeric_limits<float>::quiet_NaN());
         },
         "scale-invalid", Severity::Error, kLayer1 + "intermediate.dense.weight_scale"},
        {"block-scale-negative", "block-token", {},
         [](EditableCheckpoint& c) { c.setValue(kLayer0 + "output.dense.weight_scale", 1, -0.01f); },
         "scale-invalid", Severity::Error, kLayer0 + "output.dense.weight_scale"},
        {"block-scale-zero", "block-token", {},
         [](EditableCheckpoint& c) { c.setValue(kLayer0 + "attention.output.dense.weight_scale", 0, 0.0f); },
         "scale-invalid", Severity::Error, kLayer0 + "attention.output.dense.weight_scale"},
        {"block-codes-all-zero", "block-token", {},
         [](EditableCheckpoint& c) {
             TensorToWrite& t = c.tensor(kLayer0 + "intermediate.dense.weight"); // [64, 32], blocks of 16x16
             for (int64_t r = 16; r < 32; ++r)
                 for (int64_t k = 16; k < 32; ++k)
                     t.bytes[static_cast<std::size_t>(r * 32 + k)] = 0x80; // -0
         },
         "block-all-zero", Severity::Warning, kLayer0 + "intermediate.dense.weight"},
        {"group-size-not-dividing", "channel-group", {},
         [](EditableCheckpoint& c) { c.group0()["input_activations"]["group_size"] = 24; },
         "group-size-partial", Severity::Warning, kLayer0 + "attention.self.query"},
        {"static-group-activations", "channel-group", {},
         [](EditableCheckpoint& c) { c.group0()["input_activations"]["dynamic"] = false; },
         "unsupported-scheme", Severity::Error, kLayer0 + "attention.self.query"},
        {"int-quantized-format", "channel-token", {},
         [](EditableCheckpoint& c) { c.config["quantization_config"]["format"] = "int-quantized"; },
         "unsupported-scheme", Severity::Error, kLayer0 + "attention.self.query"},
        {"group-activations", "channel-token", {},
         [](EditableCheckpoint& c) {
             c.group0()["input_activations"]["strategy"] = "group";
             c.group0()["input_activations"]["group_size"] = 16;
         },
         "aiu-unsupported", Severity::Warning, "group_0"},
        {"float-weight-targeted", "channel-token", {},
         [](EditableCheckpoint& c) {
             const std::string module = kLayer0 + "attention.self.query";
             std::vector<float> weight = c.values(module + ".weight");
             const std::vector<float> scales = c.values(module + ".weight_scale");
             for (std::size_t i = 0; i < weight.size(); ++i)
                 weight[i] *= scales[i / 32];
             c.setValues(module + ".weight", Dtype::F32, {32, 32}, weight);
             c.remove(module + ".weight_scale");
         },
         "weight-not-fp8", Severity::Error, kLayer0 + "attention.self.query"},
        {"fp8-weight-ignored", "channel-token", {},
         [](EditableCheckpoint& c) { c.config["quantization_config"]["ignore"].push_back(kLayer1 + "output.dense"); },
         "fp8-not-targeted", Severity::Error, kLayer1 + "output.dense"},
        {"fp8-qa-outputs", "channel-token", {},
         [](EditableCheckpoint& c) {
             const std::vector<float> weight = c.values("qa_outputs.weight");
             std::vector<float> scales(2, 0.0f);
             for (std::size_t i = 0; i < weight.size(); ++i)
                 scales[i / 32] = std::max(scales[i / 32], std::fabs(weight[i]) / 448.0f);
             TensorToWrite& t = c.tensor("qa_outputs.weight");
             t.dtype = Dtype::F8_E4M3;
             t.bytes.resize(weight.size());
             for (std::size_t i = 0; i < weight.size(); ++i)
                 t.bytes[i] = fp8::encodeE4M3(weight[i] / scales[i / 32]);
             c.setValues("qa_outputs.weight_scale", Dtype::F32, {2, 1}, scales);
         },
         "fp8-not-targeted", Severity::Error, "qa_outputs"},
        {"weight-scale-removed", "channel-token", {},
         [](EditableCheckpoint& c) { c.remove(kLayer0 + "intermediate.dense.weight_scale"); },
         "scale-missing", Severity::Error, kLayer0 + "intermediate.dense.weight_scale"},
        {"channel-scale-reshaped", "channel-token", {},
         [](EditableCheckpoint& c) { c.tensor(kLayer0 + "attention.self.value.weight_scale").shape = {16, 2}; },
         "scale-shape", Severity::Error, kLayer0 + "attention.self.value.weight_scale"},
        {"channel-declared-tensor-scale", "channel-token", {},
         [](EditableCheckpoint& c) {
             const std::string name = kLayer0 + "attention.self.value.weight_scale";
             const std::vector<float> scales = c.values(name);
             c.setValues(name, Dtype::F32, {1}, {*std::max_element(scales.begin(), scales.end())});
         },
         "scale-shape", Severity::Error, kLayer0 + "attention.self.value.weight_scale"},
        {"tensor-scale-two-values", "tensor-tensor", {},
         [](EditableCheckpoint& c) {
             const std::string name = kLayer1 + "attention.self.key.weight_scale";
             const float scale = c.values(name).at(0);
             c.setValues(name, Dtype::F32, {2}, {scale, scale});
         },
         "scale-shape", Severity::Error, kLayer1 + "attention.self.key.weight_scale"},
        {"channel-scale-flat", "channel-token", {},
         [](EditableCheckpoint& c) { c.tensor(kLayer1 + "attention.output.dense.weight_scale").shape = {32}; },
         "scale-shape-nonstandard", Severity::Warning, kLayer1 + "attention.output.dense.weight_scale"},
        {"tensor-scale-1x1", "tensor-tensor", {},
         [](EditableCheckpoint& c) { c.tensor(kLayer1 + "intermediate.dense.weight_scale").shape = {1, 1}; },
         "scale-shape-nonstandard", Severity::Warning, kLayer1 + "intermediate.dense.weight_scale"},
        // Per-tensor scales written with shape [] (a 0-d tensor) instead of [1]: both are accepted.
        {"tensor-scales-zero-dimensional", "tensor-tensor", {},
         [](EditableCheckpoint& c) {
             c.tensor(kLayer0 + "attention.output.dense.weight_scale").shape = {};
             c.tensor(kLayer0 + "attention.output.dense.input_scale").shape = {};
         },
         "", Severity::Info, ""},
        {"tensor-weights-token-activations", "tensor-tensor", {},
         [](EditableCheckpoint& c) {
             c.group0()["input_activations"]["dynamic"] = true;
             c.group0()["input_activations"]["strategy"] = "token";
             std::vector<std::string> inputScales;
             for (const TensorToWrite& t : c.tensors)
                 if (t.name.size() > 12 && t.name.compare(t.name.size() - 12, 12, ".input_scale") == 0)
                     inputScales.push_back(t.name);
             for (const std::string& name : inputScales)
                 c.remove(name);
         },
         "strategy-mismatch", Severity::Info, "group_0"},
        {"input-scale-removed", "tensor-tensor", {},
         [](EditableCheckpoint& c) { c.remove(kLayer1 + "attention.output.dense.input_scale"); },
         "input-scale-missing", Severity::Error, kLayer1 + "attention.output.dense.input_scale"},
        {"input-scale-with-dynamic", "channel-token", {},
         [](EditableCheckpoint& c) { c.setValues(kLayer0 + "attention.self.query.input_scale", Dtype::F32, {1}, {0.01f}); },
         "input-scale-unexpected", Severity::Warning, kLayer0 + "attention.self.query.input_scale"},
        {"input-scale-two-values", "tensor-tensor", {},
         [](EditableCheckpoint& c) {
             const std::string name = kLayer0 + "intermediate.dense.input_scale";
             const float scale = c.values(name).at(0);
             c.setValues(name, Dtype::F32, {2}, {scale, scale});
         },
         "input-scale-shape", Severity::Error, kLayer0 + "intermediate.dense.input_scale"},
        {"weight-scale-zero", "channel-token", {},
         [](EditableCheckpoint& c) { c.setValue(kLayer0 + "attention.self.key.weight_scale", 5, 0.0f); },
         "scale-invalid", Severity::Error, kLayer0 + "attention.self.key.weight_scale"},
        {"weight-scale-negative", "channel-token", {},
         [](EditableCheckpoint& c) { c.setValue(kLayer0 + "attention.self.key.weight_scale", 7, -0.001f); },
         "scale-invalid", Severity::Error, kLayer0 + "attention.self.key.weight_scale"},
        {"weight-scale-nan", "channel-token", {},
         [](EditableCheckpoint& c) {
             c.setValue(kLayer1 + "output.dense.weight_scale", 0, std::numeric_limits<float>::quiet_NaN());
         },
         "scale-invalid", Severity::Error, kLayer1 + "output.dense.weight_scale"},
        {"weight-scale-infinite", "tensor-tensor", {},
         [](EditableCheckpoint& c) {
             c.setValue(kLayer1 + "output.dense.weight_scale", 0, std::numeric_limits<float>::infinity());
         },
         "scale-invalid", Severity::Error, kLayer1 + "output.dense.weight_scale"},
        {"input-scale-zero", "tensor-tensor", {},
         [](EditableCheckpoint& c) { c.setValue(kLayer0 + "attention.self.query.input_scale", 0, 0.0f); },
         "scale-invalid", Severity::Error, kLayer0 + "attention.self.query.input_scale"},
        {"weight-scale-f16", "channel-token", {},
         [](EditableCheckpoint& c) {
             const std::string name = kLayer1 + "attention.self.query.weight_scale";
             c.setValues(name, Dtype::F16, {32, 1}, c.values(name));
         },
         "scale-dtype", Severity::Warning, kLayer1 + "attention.self.query.weight_scale"},
        {"input-scale-bf16", "tensor-tensor", {},
         [](EditableCheckpoint& c) {
             const std::string name = kLayer0 + "output.dense.input_scale";
             c.setValues(name, Dtype::BF16, {1}, c.values(name));
         },
         "scale-dtype", Severity::Warning, kLayer0 + "output.dense.input_scale"},
        {"weight-scale-int32", "channel-token", {},
         [](EditableCheckpoint& c) {
             TensorToWrite& t = c.tensor(kLayer0 + "attention.self.key.weight_scale");
             t.dtype = Dtype::I32;
             const int32_t one = 1;
             for (std::size_t i = 0; i + 4 <= t.bytes.size(); i += 4)
                 std::memcpy(t.bytes.data() + i, &one, 4);
         },
         "scale-not-float", Severity::Error, kLayer0 + "attention.self.key.weight_scale"},
        {"scale-overflows-fp16", "channel-token", {},
         [](EditableCheckpoint& c) { c.setValue(kLayer0 + "output.dense.weight_scale", 3, 1.0e5f); },
         "fp16-overflow", Severity::Warning, kLayer0 + "output.dense.weight_scale"},
        {"scale-flushes-in-fp16", "channel-token", {},
         [](EditableCheckpoint& c) { c.setValue(kLayer0 + "output.dense.weight_scale", 3, 1.0e-9f); },
         "fp16-overflow", Severity::Warning, kLayer0 + "output.dense.weight_scale"},
        {"bf16-layernorm-overflows-fp16", "channel-token", {},
         [](EditableCheckpoint& c) {
             const std::string name = "roberta.embeddings.LayerNorm.weight";
             std::vector<float> values = c.values(name);
             values[4] = 1.0e5f;
             c.setValues(name, Dtype::BF16, {32}, values);
         },
         "fp16-overflow", Severity::Warning, "roberta.embeddings.LayerNorm.weight"},
        {"bias-f16", "channel-token", {},
         [](EditableCheckpoint& c) {
             const std::string name = kLayer0 + "attention.self.key.bias";
             c.setValues(name, Dtype::F16, {32}, c.values(name));
         },
         "bias-dtype", Severity::Warning, kLayer0 + "attention.self.key.bias"},
        {"qkv-weight-scales", "tensor-tensor", equalizeQkvWeightScales,
         [](EditableCheckpoint& c) {
             const std::string name = kLayer1 + "attention.self.value.weight_scale";
             c.setValue(name, 0, c.values(name).at(0) * 1.5f);
         },
         "qkv-scales-differ", Severity::Warning, kLayer1 + "attention.self"},
        {"qkv-input-scales", "tensor-tensor", {},
         [](EditableCheckpoint& c) {
             const std::string name = kLayer0 + "attention.self.key.input_scale";
             c.setValue(name, 0, c.values(name).at(0) * 2.0f);
         },
         "qkv-input-scales-differ", Severity::Warning, kLayer0 + "attention.self"},
        {"codes-piled-at-448", "channel-token", {},
         [](EditableCheckpoint& c) { setCodes(c, kLayer0 + "intermediate.dense.weight", 32, 0, 8, 0x7E); },
         "weight-clipping", Severity::Warning, kLayer0 + "intermediate.dense.weight"},
        {"codes-zeroed", "channel-token", {},
         [](EditableCheckpoint& c) { setCodes(c, kLayer1 + "output.dense.weight", 64, 0, 32, 0x00); },
         "weight-underflow", Severity::Warning, kLayer1 + "output.dense.weight"},
        {"nan-code", "channel-token", {},
         [](EditableCheckpoint& c) { c.tensor(kLayer0 + "attention.self.value.weight").bytes[17] = 0xFF; },
         "weight-nan", Severity::Error, kLayer0 + "attention.self.value.weight"},
        {"weight-removed", "channel-token", {},
         [](EditableCheckpoint& c) { c.remove(kLayer1 + "intermediate.dense.weight"); },
         "weight-missing", Severity::Error, kLayer1 + "intermediate.dense.weight"},
        {"weight-transposed", "channel-token", {},
         [](EditableCheckpoint& c) { c.tensor(kLayer0 + "intermediate.dense.weight").shape = {32, 64}; },
         "weight-shape", Severity::Error, kLayer0 + "intermediate.dense.weight"},
        {"invalid-ignore-pattern", "channel-token", {},
         [](EditableCheckpoint& c) { c.config["quantization_config"]["ignore"].push_back("re:(["); },
         "pattern-invalid", Severity::Warning, "re:(["},
        {"everything-ignored", "float", {},
         [](EditableCheckpoint& c) {
             c.config["quantization_config"] = {
                 {"quant_method", "compressed-tensors"},
                 {"format", "float-quantized"},
                 {"quantization_status", "compressed"},
                 {"config_groups",
                  {{"group_0",
                    {{"targets", {"Linear"}},
                     {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}, {"dynamic", false}}},
                     {"input_activations", nullptr}}}}},
                 {"ignore", {"re:.*"}}};
         },
         "nothing-targeted", Severity::Warning, ""},
        {"same-level-groups-differ", "channel-token", {},
         [](EditableCheckpoint& c) {
             nlohmann::json other = c.group0();
             other["input_activations"] = nullptr;
             c.config["quantization_config"]["config_groups"]["group_1"] = other;
         },
         "group-conflict", Severity::Error, kLayer0 + "attention.self.query"},
        {"same-level-groups-alike", "channel-token", {},
         [](EditableCheckpoint& c) { c.config["quantization_config"]["config_groups"]["group_1"] = c.group0(); },
         "group-conflict", Severity::Warning, kLayer0 + "attention.self.query"},
        {"model-free-picks-first-group", "channel-none", {},
         [](EditableCheckpoint& c) {
             nlohmann::json specific = c.group0();
             specific["targets"] = {"re:.*\\.self\\.query"};
             c.config["quantization_config"]["config_groups"]["group_1"] = specific;
         },
         "first-group-differs", Severity::Warning, kLayer0 + "attention.self.query"},
        {"exact-ignore-names-container", "mlm-channel-token", {},
         [](EditableCheckpoint& c) { c.config["quantization_config"]["ignore"].push_back("lm_head"); },
         "ignore-dead", Severity::Info, "lm_head"},
        {"unknown-key-in-args", "channel-token", {},
         [](EditableCheckpoint& c) { c.group0()["weights"]["scale_bits"] = 8; },
         "config-unknown-key", Severity::Warning, "group_0.weights.scale_bits"},
        // FP8 word embeddings (a group whose only target is "Embedding"): the scale checks of a Linear.
        {"embedding-scale-missing", "emb-row", {},
         [](EditableCheckpoint& c) { c.remove(kEmbeddings + ".weight_scale"); },
         "scale-missing", Severity::Error, kEmbeddings + ".weight_scale"},
        {"embedding-scale-wrong-rows", "emb-row", {},
         [](EditableCheckpoint& c) { c.setValues(kEmbeddings + ".weight_scale", Dtype::F32, {2, 1}, {0.01f, 0.01f}); },
         "scale-shape", Severity::Error, kEmbeddings + ".weight_scale"},
        {"embedding-scale-zero", "emb-row", {},
         [](EditableCheckpoint& c) { c.setValue(kEmbeddings + ".weight_scale", 3, 0.0f); },
         "scale-invalid", Severity::Error, kEmbeddings + ".weight_scale"},
        {"embedding-scale-nan", "emb-tensor", {},
         [](EditableCheckpoint& c) { c.setValue(kEmbeddings + ".weight_scale", 0, std::numeric_limits<float>::quiet_NaN()); },
         "scale-invalid", Severity::Error, kEmbeddings + ".weight_scale"},
        {"embedding-scale-bf16", "emb-row", {},
         [](EditableCheckpoint& c) {
             const TensorToWrite& t = c.tensor(kEmbeddings + ".weight_scale");
             c.setValues(t.name, Dtype::BF16, t.shape, c.values(t.name));
         },
         "scale-dtype", Severity::Warning, kEmbeddings + ".weight_scale"},
        {"embedding-scale-int", "emb-tensor", {},
         [](EditableCheckpoint& c) { c.tensor(kEmbeddings + ".weight_scale").dtype = Dtype::I32; },
         "scale-not-float", Severity::Error, kEmbeddings + ".weight_scale"},
        {"embedding-scale-scalar", "emb-tensor", {},
         [](EditableCheckpoint& c) { c.tensor(kEmbeddings + ".weight_scale").shape = {}; }, "", Severity::Info, ""},
        {"embedding-not-targeted", "emb-row", {},
         [](EditableCheckpoint& c) { c.config["quantization_config"]["config_groups"].erase("group_1"); },
         "fp8-not-targeted", Severity::Error, kEmbeddings},
        {"embedding-ignored", "emb-row", {},
         [](EditableCheckpoint& c) { c.config["quantization_config"]["ignore"].push_back(kEmbeddings); },
         "fp8-not-targeted", Severity::Error, kEmbeddings},
        {"embedding-block-strategy", "emb-row", {},
         [](EditableCheckpoint& c) {
             nlohmann::json& weights = c.config["quantization_config"]["config_groups"]["group_1"]["weights"];
             weights["strategy"] = "block";
             weights["block_structure"] = {16, 16};
         },
         "unsupported-scheme", Severity::Error, kEmbeddings},
        {"embedding-activations-declared", "emb-row", {},
         [](EditableCheckpoint& c) {
             c.config["quantization_config"]["config_groups"]["group_1"]["input_activations"] = c.group0()["input_activations"];
         },
         "embedding-activations-ignored", Severity::Info, kEmbeddings},
        {"embedding-nan-codes", "emb-row", {},
         [](EditableCheckpoint& c) { c.tensor(kEmbeddings + ".weight").bytes[7] = 0x7F; },
         "weight-nan", Severity::Error, kEmbeddings + ".weight"},
        {"float-embedding-targeted", "channel-token", {},
         [](EditableCheckpoint& c) {
             nlohmann::json embedding = c.group0();
             embedding["targets"] = {"Embedding"};
             embedding["input_activations"] = nullptr;
             c.config["quantization_config"]["config_groups"]["group_1"] = embedding;
         },
         "embedding-not-fp8", Severity::Warning, kEmbeddings},
        {"tied-decoder-targeted", "mlm-channel-token", {},
         [](EditableCheckpoint& c) { c.config["quantization_config"]["ignore"] = {"lm_head.dense"}; },
         "tied-decoder-unquantized", Severity::Info, "lm_head.decoder"},
    };
    return cases;
}

std::string codeList(const std::vector<Finding>& findings)
{
    std::string out;
    for (const Finding& f : findings)
        out += std::string(severityName(f.severity)) + " " + f.code + " " + f.subject + ": " + f.message + "\n";
    return out;
}

std::set<std::string> codesOf(const std::vector<Finding>& findings)
{
    std::set<std::string> codes;
    for (const Finding& f : findings)
        codes.insert(f.code);
    return codes;
}

std::vector<Finding> diagnose(const std::string& dir)
{
    const std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(dir);
    return diagnoseCheckpoint(*checkpoint, computeScaleStatistics(*checkpoint));
}

// A config.json for a 1-layer model of the given sizes, with the quantization_config given.
nlohmann::json handWrittenConfig(int hidden, int intermediate, const nlohmann::json& quantization)
{
    nlohmann::json config = {{"architectures", {"RobertaForQuestionAnswering"}},
                             {"vocab_size", 10},
                             {"hidden_size", hidden},
                             {"num_hidden_layers", 1},
                             {"num_attention_heads", 1},
                             {"intermediate_size", intermediate},
                             {"max_position_embeddings", 10},
                             {"pad_token_id", 1},
                             {"torch_dtype", "float32"}};
    if (!quantization.is_null())
        config["quantization_config"] = quantization;
    return config;
}

nlohmann::json fp8Group(const std::string& target, const std::string& weights, const nlohmann::json& activations)
{
    return {{"targets", {target}},
            {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", weights}, {"symmetric", true},
                         {"dynamic", false}}},
            {"input_activations", activations}};
}

const LinearScaleStatistics& statsFor(const std::vector<LinearScaleStatistics>& all, const std::string& module)
{
    for (const LinearScaleStatistics& s : all)
        if (s.module == module)
            return s;
    throw std::runtime_error("no statistics for " + module);
}

TensorToWrite codesTensor(const std::string& name, const std::vector<int64_t>& shape, const std::vector<uint8_t>& codes)
{
    return {name, Dtype::F8_E4M3, shape, codes};
}

} // namespace

class TestDiagnostics : public QObject {
    Q_OBJECT

    std::map<std::string, std::string> cleanDirs_;
    std::string root_;

    const std::string& clean(const std::string& base) const { return cleanDirs_.at(base); }

private slots:
    void initTestCase()
    {
        root_ = makeTempDir("diagnostics");
        TinyModelSpec qa;
        const std::string floatQa = joinPath(root_, "float");
        writeTinyFloatCheckpoint(floatQa, qa);
        TinyModelSpec mlm;
        mlm.architecture = "RobertaForMaskedLM";
        const std::string floatMlm = joinPath(root_, "float-mlm");
        writeTinyFloatCheckpoint(floatMlm, mlm);
        cleanDirs_["float"] = floatQa;

        auto fp8 = [&](const std::string& key, const std::string& floatDir, const Fp8Scheme& scheme) {
            const std::string dir = joinPath(root_, key);
            writeTinyFp8Checkpoint(floatDir, dir, scheme);
            cleanDirs_[key] = dir;
        };
        fp8("channel-token", floatQa, {"channel", "token", "F32"});
        fp8("tensor-tensor", floatQa, {"tensor", "tensor", "F32"});
        fp8("channel-none", floatQa, {"channel", "none", "F32"});
        fp8("channel-tensor", floatQa, {"channel", "tensor", "F32"});
        fp8("channel-token-bf16", floatQa, {"channel", "token", "BF16"});
        fp8("mlm-channel-token", floatMlm, {"channel", "token", "F32"});
        fp8("block-token", floatQa, {"block", "token", "F32"});   // 16x16 blocks
        fp8("channel-group", floatQa, {"channel", "group", "F32"}); // runs of 16
        auto fp8Embeddings = [&](const std::string& key, const std::string& strategy) {
            Fp8Edits edits;
            edits.embeddingWeights = strategy;
            const std::string dir = joinPath(root_, key);
            writeTinyFp8Checkpoint(floatQa, dir, {"channel", "token", "F32"}, {0, 5, 6, 7, 8, 9, 2}, edits);
            cleanDirs_[key] = dir;
        };
        fp8Embeddings("emb-row", "channel");
        fp8Embeddings("emb-tensor", "tensor");
    }

    void cleanupTestCase() { QDir(QString::fromStdString(root_)).removeRecursively(); }

    void cleanCheckpointHasNoErrors_data()
    {
        QTest::addColumn<QString>("base");
        QTest::addColumn<QStringList>("expectedCodes");
        QTest::newRow("float") << "float" << QStringList{"not-quantized"};
        // channel + token is llm-compressor's FP8_DYNAMIC: runs, with the strategy note.
        QTest::newRow("channel-token") << "channel-token" << QStringList{"strategy-mismatch"};
        QTest::newRow("channel-none") << "channel-none" << QStringList{};
        QTest::newRow("channel-tensor") << "channel-tensor" << QStringList{"strategy-mismatch"};
        // Independent amax scales for q, k and v: fusing them needs the unfused weights.
        QTest::newRow("tensor-tensor") << "tensor-tensor" << QStringList{"qkv-scales-differ"};
        // BF16 scales in a float32 model.
        QTest::newRow("channel-token-bf16") << "channel-token-bf16" << QStringList{"scale-dtype", "strategy-mismatch"};
        QTest::newRow("mlm-channel-token") << "mlm-channel-token" << QStringList{"strategy-mismatch"};
        // Block weights and group activations run here but not on the AIU.
        QTest::newRow("block-token") << "block-token" << QStringList{"aiu-unsupported", "strategy-mismatch"};
        QTest::newRow("channel-group") << "channel-group" << QStringList{"aiu-unsupported", "strategy-mismatch"};
        // FP8 word embeddings per row or per tensor (their own weights-only group) are clean.
        QTest::newRow("emb-row") << "emb-row" << QStringList{"strategy-mismatch"};
        QTest::newRow("emb-tensor") << "emb-tensor" << QStringList{"strategy-mismatch"};
    }
    void cleanCheckpointHasNoErrors()
    {
        QFETCH(QString, base);
        QFETCH(QStringList, expectedCodes);
        const std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(clean(base.toStdString()));
        const std::vector<LinearScaleStatistics> statistics = computeScaleStatistics(*checkpoint);
        const std::vector<Finding> findings = diagnoseCheckpoint(*checkpoint, statistics);
        qInfo().noquote() << "findings of the clean" << base << "checkpoint:\n" << QString::fromStdString(codeList(findings));
        for (const Finding& f : findings) {
            QVERIFY2(f.severity != Severity::Error, f.message.c_str());
            QVERIFY(!f.message.empty());
        }
        std::set<std::string> expected;
        for (const QString& code : expectedCodes)
            expected.insert(code.toStdString());
        QCOMPARE(codesOf(findings), expected);
        // The strategy note on a standard checkpoint reads as information, not as a defect.
        for (const Finding& f : findings)
            if (f.code == "strategy-mismatch") {
                QVERIFY2(f.message.rfind("For information: ", 0) == 0, f.message.c_str());
                QVERIFY2(f.message.find("runs here as declared") != std::string::npos, f.message.c_str());
                QCOMPARE(f.message.find("standard FP8_DYNAMIC") != std::string::npos,
                    base == "channel-token" || base == "channel-token-bf16" || base == "mlm-channel-token" || base.startsWith("emb-"));
            }

        // The clipping rule must not mistake the amax code of each scale group (and a near-amax
        // neighbour) for clipping: at the tiny widths (32, 64) a naive share of codes at +-448
        // would sit near 1/32 and 1/64.
        for (const LinearScaleStatistics& s : statistics) {
            QVERIFY2(s.clippedShare < 0.01, s.module.c_str());
            QVERIFY2(s.underflowShare < 0.25, s.module.c_str());
        }
    }

    void bf16ScalesAreReportedPerScaleTensor()
    {
        const std::vector<Finding> findings = diagnose(clean("channel-token-bf16"));
        std::set<std::string> subjects;
        for (const Finding& f : findings)
            if (f.code == "scale-dtype") {
                QCOMPARE(f.severity, Severity::Warning);
                subjects.insert(f.subject);
            }
        std::set<std::string> expected;
        for (const std::string& layer : {kLayer0, kLayer1})
            for (const char* linear : {"attention.self.query", "attention.self.key", "attention.self.value",
                                       "attention.output.dense", "intermediate.dense", "output.dense"})
                expected.insert(layer + linear + ".weight_scale");
        QCOMPARE(subjects, expected);
    }

    void defectIsReported_data()
    {
        QTest::addColumn<int>("index");
        const std::vector<DefectCase>& cases = defectCases();
        for (std::size_t i = 0; i < cases.size(); ++i)
            QTest::newRow(cases[i].name) << static_cast<int>(i);
    }
    void defectIsReported()
    {
        QFETCH(int, index);
        const DefectCase& defect = defectCases()[static_cast<std::size_t>(index)];
        const std::string caseDir = joinPath(root_, std::string("case-") + defect.name);

        std::string baselineDir = clean(defect.base);
        if (defect.prepare) {
            EditableCheckpoint prepared = EditableCheckpoint::read(baselineDir);
            defect.prepare(prepared);
            baselineDir = caseDir + "-baseline";
            prepared.write(baselineDir);
        }
        EditableCheckpoint damaged = EditableCheckpoint::read(baselineDir);
        defect.damage(damaged);
        damaged.write(caseDir);

        const std::vector<Finding> before = diagnose(baselineDir);
        const std::vector<Finding> after = diagnose(caseDir);
        std::set<std::pair<std::string, std::string>> known;
        for (const Finding& f : before)
            known.insert({f.code, f.subject});
        std::vector<Finding> added;
        for (const Finding& f : after)
            if (!known.count({f.code, f.subject}))
                added.push_back(f);
        qInfo().noquote() << "added findings:\n" << QString::fromStdString(codeList(added));

        const std::string expectedCode = defect.code;
        if (expectedCode.empty()) {
            QVERIFY2(added.empty(), codeList(added).c_str());
            QCOMPARE(codesOf(after), codesOf(before));
            return;
        }
        QCOMPARE(codesOf(added), std::set<std::string>{expectedCode});
        const std::string subject =
            defect.subject.empty() ? Checkpoint::open(caseDir)->directory() : defect.subject;
        for (const Finding& f : added) {
            QCOMPARE(f.subject, subject);
            QCOMPARE(f.severity, defect.severity);
            // One sentence that names what it is about.
            QVERIFY2(f.message.find(f.subject) != std::string::npos, f.message.c_str());
            QVERIFY2(f.message.back() == '.', f.message.c_str());
        }
        QCOMPARE(added.size(), std::size_t(1));
    }

    // Never throws for a broken checkpoint: statistics leave fields empty and diagnostics explain.
    void statisticsOfDamagedCheckpointLeaveFieldsEmpty()
    {
        EditableCheckpoint c = EditableCheckpoint::read(clean("channel-token"));
        c.remove(kLayer0 + "attention.self.query.weight");
        {
            TensorToWrite& t = c.tensor(kLayer0 + "attention.self.key.weight_scale");
            t.dtype = Dtype::I32;
        }
        c.remove(kLayer1 + "output.dense.weight_scale");
        const std::string dir = joinPath(root_, "damaged-statistics");
        c.write(dir);
        const std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(dir);
        const std::vector<LinearScaleStatistics> all = computeScaleStatistics(*checkpoint);

        const LinearScaleStatistics& query = statsFor(all, kLayer0 + "attention.self.query");
        QCOMPARE(query.weightDtype, std::string());
        QCOMPARE(query.outFeatures, int64_t(0));
        QVERIFY(!query.quantized);
        QVERIFY(query.channelScales.size() == 32); // the scale is still there and readable
        int64_t total = 0;
        for (int64_t n : query.exponentHistogram)
            total += n;
        QCOMPARE(total, int64_t(0));

        const LinearScaleStatistics& key = statsFor(all, kLayer0 + "attention.self.key");
        QCOMPARE(key.scaleDtype, std::string("I32"));
        QVERIFY(key.channelScales.empty());
        QVERIFY(key.quantized); // F8 weight with a weight_scale tensor, however broken

        const LinearScaleStatistics& output = statsFor(all, kLayer1 + "output.dense");
        QVERIFY(!output.quantized);
        QCOMPARE(output.scaleDtype, std::string());
        QCOMPARE(output.weightDtype, std::string("F8_E4M3"));

        const std::set<std::string> codes = codesOf(diagnoseCheckpoint(*checkpoint, all));
        for (const char* code : {"weight-missing", "scale-not-float", "scale-missing"})
            QVERIFY2(codes.count(code), code);
    }

    void moduleNamesFollowTheArchitecture_data()
    {
        QTest::addColumn<QString>("base");
        QTest::addColumn<QStringList>("heads");
        QTest::newRow("qa") << "channel-token" << QStringList{"qa_outputs"};
        QTest::newRow("mlm") << "mlm-channel-token" << QStringList{"lm_head.dense", "lm_head.decoder"};
    }
    void moduleNamesFollowTheArchitecture()
    {
        QFETCH(QString, base);
        QFETCH(QStringList, heads);
        const std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(clean(base.toStdString()));
        std::vector<std::string> expected;
        for (const std::string& layer : {kLayer0, kLayer1})
            for (const char* linear : {"attention.self.query", "attention.self.key", "attention.self.value",
                                       "attention.output.dense", "intermediate.dense", "output.dense"})
                expected.push_back(layer + linear);
        for (const QString& head : heads)
            expected.push_back(head.toStdString());
        QCOMPARE(checkpoint->layout().linearModules(), expected);

        const std::vector<LinearScaleStatistics> all = computeScaleStatistics(*checkpoint);
        QCOMPARE(all.size(), expected.size());
        for (std::size_t i = 0; i < all.size(); ++i)
            QCOMPARE(all[i].module, expected[i]);
    }

    // Statistics of the fixture against values recomputed here from the tensors.
    void statisticsOfFixtureMatchTheTensors_data()
    {
        QTest::addColumn<QString>("base");
        QTest::addColumn<QString>("strategy");
        QTest::addColumn<QString>("activationScheme");
        QTest::newRow("channel-token") << "channel-token" << "channel" << "dynamic token";
        QTest::newRow("tensor-tensor") << "tensor-tensor" << "tensor" << "static tensor";
        QTest::newRow("channel-none") << "channel-none" << "channel" << "none";
    }
    void statisticsOfFixtureMatchTheTensors()
    {
        QFETCH(QString, base);
        QFETCH(QString, strategy);
        QFETCH(QString, activationScheme);
        const std::string dir = clean(base.toStdString());
        const std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(dir);
        const std::vector<LinearScaleStatistics> all = computeScaleStatistics(*checkpoint);
        EditableCheckpoint raw = EditableCheckpoint::read(dir);

        for (const LinearScaleStatistics& s : all) {
            if (s.module == "qa_outputs") {
                QCOMPARE(s.weightDtype, std::string("F32"));
                QVERIFY(!s.quantized);
                QCOMPARE(s.group, std::string());
                QCOMPARE(s.weightStrategy, std::string());
                QCOMPARE(s.activationScheme, std::string("none"));
                QCOMPARE(s.layer, -1);
                QCOMPARE(s.outFeatures, int64_t(2));
                continue;
            }
            QCOMPARE(s.layer, s.module.rfind(kLayer0, 0) == 0 ? 0 : 1);
            QCOMPARE(s.weightDtype, std::string("F8_E4M3"));
            QCOMPARE(s.scaleDtype, std::string("F32"));
            QCOMPARE(s.group, std::string("group_0"));
            QCOMPARE(QString::fromStdString(s.weightStrategy), strategy);
            QCOMPARE(QString::fromStdString(s.activationScheme), activationScheme);
            QVERIFY(s.quantized);
            const TensorToWrite& weight = raw.tensor(s.module + ".weight");
            QCOMPARE(s.outFeatures, weight.shape[0]);
            QCOMPARE(s.inFeatures, weight.shape[1]);

            const std::vector<float> scales = raw.values(s.module + ".weight_scale");
            QCOMPARE(s.channelScales, scales);
            QCOMPARE(s.scaleMin, *std::min_element(scales.begin(), scales.end()));
            QCOMPARE(s.scaleMax, *std::max_element(scales.begin(), scales.end()));
            QCOMPARE(s.scaleRatio, s.scaleMax / s.scaleMin);

            std::array<int64_t, 16> histogram{};
            int64_t underflow = 0;
            for (uint8_t code : weight.bytes) {
                ++histogram[static_cast<std::size_t>((code >> 3) & 0xF)];
                underflow += (code & 0x78) == 0;
            }
            QCOMPARE(s.exponentHistogram, histogram);
            QCOMPARE(s.underflowShare, double(underflow) / double(weight.bytes.size()));

            if (s.activationScheme == "static tensor") {
                QVERIFY(s.inputScale.has_value());
                QCOMPARE(*s.inputScale, raw.values(s.module + ".input_scale").at(0));
            } else {
                QVERIFY(!s.inputScale.has_value());
            }
        }
    }

    // The word embeddings' entry comes first, read from their codes and scales: one scale per row
    // (or one for the table), the code shares counted here.
    void embeddingStatisticsMatchTheTensors_data()
    {
        QTest::addColumn<QString>("base");
        QTest::newRow("per row") << "emb-row";
        QTest::newRow("per tensor") << "emb-tensor";
    }
    void embeddingStatisticsMatchTheTensors()
    {
        QFETCH(QString, base);
        const auto checkpoint = Checkpoint::open(clean(base.toStdString()));
        const std::vector<LinearScaleStatistics> all = computeScaleStatistics(*checkpoint);
        QCOMPARE(all.size(), checkpoint->layout().linears().size() + 1);
        const LinearScaleStatistics& s = all.front();
        QVERIFY(s.embedding);
        QCOMPARE(s.module, kEmbeddings);
        QVERIFY(s.quantized);
        QCOMPARE(s.group, std::string("group_1"));
        QCOMPARE(s.activationScheme, std::string("lookup"));
        const TensorView& codes = checkpoint->tensors().require(kEmbeddings + ".weight");
        const std::vector<float> scales = checkpoint->tensors().require(kEmbeddings + ".weight_scale").toFloat().values;
        QCOMPARE(s.weightStrategy, std::string(scales.size() == 1 ? "tensor" : "channel"));
        QCOMPARE(scales.size(), base == "emb-row" ? std::size_t(codes.shape[0]) : std::size_t(1));
        QCOMPARE(s.channelScales, scales);
        QCOMPARE(s.outFeatures, codes.shape[0]);
        QCOMPARE(s.scaleMin, *std::min_element(scales.begin(), scales.end()));
        QCOMPARE(s.scaleMax, *std::max_element(scales.begin(), scales.end()));
        int64_t underflow = 0;
        for (int64_t i = 0; i < codes.numel(); ++i)
            underflow += ((codes.data[i] >> 3) & 0xF) == 0;
        QCOMPARE(s.underflowShare, double(underflow) / double(codes.numel()));
        // A float checkpoint without a group for the table has no such entry.
        QVERIFY(!computeScaleStatistics(*Checkpoint::open(clean("channel-token"))).front().embedding);
    }

    // The word embeddings are matched by the one group matcher with class name "Embedding": an
    // exact name beats a re: pattern, which beats the class name; an ignore entry drops them, and
    // then a run refuses the FP8 table with one sentence naming it.
    void embeddingGroupFollowsTheMatcher_data()
    {
        QTest::addColumn<QStringList>("group0Targets");
        QTest::addColumn<QStringList>("group1Targets");
        QTest::addColumn<QString>("ignore");
        QTest::addColumn<QString>("group");
        QTest::addColumn<QString>("ruleKind");
        QTest::newRow("class name") << QStringList{"Linear"} << QStringList{"Embedding"} << "" << "group_1" << "class name";
        QTest::newRow("exact name") << QStringList{"Linear"} << QStringList{QString::fromStdString(kEmbeddings)} << ""
                                    << "group_1" << "module name";
        QTest::newRow("pattern") << QStringList{"Linear"} << QStringList{"re:.*word_emb"} << "" << "group_1" << "pattern";
        QTest::newRow("pattern beats class") << QStringList{"Linear", "re:roberta\\.embeddings\\."} << QStringList{"Embedding"}
                                             << "" << "group_0" << "pattern";
        QTest::newRow("ignored") << QStringList{"Linear"} << QStringList{"Embedding"} << QString::fromStdString(kEmbeddings)
                                 << "" << "";
        QTest::newRow("Linear does not match") << QStringList{"Linear"} << QStringList{"re:.*\\.query"} << "" << "" << "";
    }
    void embeddingGroupFollowsTheMatcher()
    {
        QFETCH(QStringList, group0Targets);
        QFETCH(QStringList, group1Targets);
        QFETCH(QString, ignore);
        QFETCH(QString, group);
        QFETCH(QString, ruleKind);
        EditableCheckpoint c = EditableCheckpoint::read(clean("emb-row"));
        auto list = [](const QStringList& targets) {
            nlohmann::json out = nlohmann::json::array();
            for (const QString& t : targets)
                out.push_back(t.toStdString());
            return out;
        };
        c.group0()["targets"] = list(group0Targets);
        c.config["quantization_config"]["config_groups"]["group_1"]["targets"] = list(group1Targets);
        if (!ignore.isEmpty())
            c.config["quantization_config"]["ignore"].push_back(ignore.toStdString());
        static int written = 0;
        const std::string dir = joinPath(root_, "emb-matcher-" + std::to_string(++written));
        c.write(dir);
        const auto checkpoint = Checkpoint::open(dir);
        const EmbeddingInfo& embedding = checkpoint->plan().wordEmbeddings();
        QCOMPARE(embedding.module, kEmbeddings);
        QCOMPARE(QString::fromStdString(embedding.group), group);
        QCOMPARE(embedding.quantized, !group.isEmpty());
        if (!group.isEmpty()) {
            QVERIFY2(embedding.rule.find(ruleKind.toStdString()) != std::string::npos, embedding.rule.c_str());
            QVERIFY(checkpoint->plan().wordEmbeddingsProblem().empty());
            QCOMPARE(embedding.weightStrategy, std::string("channel"));
            return;
        }
        const std::string problem = checkpoint->plan().wordEmbeddingsProblem();
        QVERIFY(problem.find(kEmbeddings + ".weight") != std::string::npos);
        try {
            EncoderModel::load(dir);
            QFAIL("an FP8 table no group picks loaded");
        } catch (const Error& e) {
            QCOMPARE(std::string(e.what()), problem);
        }
    }

    void tiedDecoderTakesTheEmbeddings()
    {
        const std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(clean("mlm-channel-token"));
        const std::vector<LinearScaleStatistics> all = computeScaleStatistics(*checkpoint);
        const LinearScaleStatistics& decoder = statsFor(all, "lm_head.decoder");
        const TensorView& embeddings = checkpoint->tensors().require("roberta.embeddings.word_embeddings.weight");
        QCOMPARE(decoder.weightDtype, std::string("F32"));
        QCOMPARE(decoder.outFeatures, embeddings.shape[0]);
        QCOMPARE(decoder.inFeatures, embeddings.shape[1]);
        QVERIFY(!decoder.quantized);
        QCOMPARE(decoder.group, std::string()); // ignored by "re:lm_head.*"
    }

    // Hand-written codes: exponent fields, shares and the clipping rule, per row and per tensor.
    void statisticsMatchHandComputedCodes()
    {
        // The clipping estimate takes the first two codes at +-448 of each scale group as the amax
        // code and a near-amax neighbour, and counts the rest.
        // query (per channel), rows of 4 codes:
        //   0x7E 0x7E 0xFE 0x38   exponents 15 15 15 7  three at +-448 -> one counted
        //   0xFE 0x01 0x80 0x40   exponents 15 0 0 8    -448 alone; subnormal, -0
        //   0x7F 0x08 0x7E 0x10   exponents 15 1 15 2   NaN is not 448: one at 448
        //   0x38 0x38 0x38 0x38   exponents 7 7 7 7
        const std::vector<uint8_t> queryCodes = {0x7E, 0x7E, 0xFE, 0x38, 0xFE, 0x01, 0x80, 0x40,
                                                 0x7F, 0x08, 0x7E, 0x10, 0x38, 0x38, 0x38, 0x38};
        // key (per tensor): four codes at +-448 over the whole tensor -> two counted.
        std::vector<uint8_t> keyCodes(16, 0x30);
        keyCodes[1] = 0x7E;
        keyCodes[6] = 0x7E;
        keyCodes[11] = 0xFE;
        keyCodes[15] = 0x7E;
        keyCodes[3] = 0x03; // subnormal

        const nlohmann::json quantization = {
            {"quant_method", "compressed-tensors"},
            {"format", "float-quantized"},
            {"quantization_status", "compressed"},
            {"config_groups",
             {{"group_0", fp8Group("re:.*self\\.query", "channel",
                                   {{"num_bits", 8}, {"type", "float"}, {"strategy", "token"}, {"dynamic", true}})},
              {"group_1", fp8Group("re:.*self\\.key", "tensor",
                                   {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"}, {"dynamic", false}})}}},
            {"ignore", {"qa_outputs"}}};
        const std::string dir = joinPath(root_, "hand-codes");
        makeDirectory(dir);
        writeBytesAtomically(joinPath(dir, "config.json"), handWrittenConfig(4, 8, quantization).dump(2));
        const std::vector<float> queryScales = {0.5f, 0.125f, 2.0f, 0.25f};
        const float keyScale = 0.375f; // exact in bfloat16
        const float inputScale = 0.015625f;
        const std::vector<float> valueWeight(16, 0.25f);
        writeSafetensors(joinPath(dir, "model.safetensors"),
                         {codesTensor(kLayer0 + "attention.self.query.weight", {4, 4}, queryCodes),
                          makeFloatTensor(kLayer0 + "attention.self.query.weight_scale", Dtype::F32, {4, 1},
                                          queryScales.data()),
                          codesTensor(kLayer0 + "attention.self.key.weight", {4, 4}, keyCodes),
                          makeFloatTensor(kLayer0 + "attention.self.key.weight_scale", Dtype::BF16, {1}, &keyScale),
                          makeFloatTensor(kLayer0 + "attention.self.key.input_scale", Dtype::F32, {1}, &inputScale),
                          makeFloatTensor(kLayer0 + "attention.self.value.weight", Dtype::F32, {4, 4},
                                          valueWeight.data())});

        const std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(dir);
        const std::vector<LinearScaleStatistics> all = computeScaleStatistics(*checkpoint);
        QCOMPARE(all.size(), std::size_t(7));

        const LinearScaleStatistics& query = statsFor(all, kLayer0 + "attention.self.query");
        QCOMPARE(query.group, std::string("group_0"));
        QCOMPARE(query.weightStrategy, std::string("channel"));
        QCOMPARE(query.activationScheme, std::string("dynamic token"));
        QCOMPARE(query.outFeatures, int64_t(4));
        QCOMPARE(query.inFeatures, int64_t(4));
        QVERIFY(query.quantized);
        QCOMPARE(query.channelScales, queryScales);
        QCOMPARE(query.scaleMin, 0.125f);
        QCOMPARE(query.scaleMedian, 0.375f); // (0.25 + 0.5) / 2
        QCOMPARE(query.scaleMax, 2.0f);
        QCOMPARE(query.scaleRatio, 16.0f);
        const std::array<int64_t, 16> queryHistogram = {2, 1, 1, 0, 0, 0, 0, 5, 1, 0, 0, 0, 0, 0, 0, 6};
        QCOMPARE(query.exponentHistogram, queryHistogram);
        QCOMPARE(query.underflowShare, 2.0 / 16.0);
        QCOMPARE(query.clippedShare, 1.0 / 16.0);
        QVERIFY(!query.inputScale.has_value());

        const LinearScaleStatistics& key = statsFor(all, kLayer0 + "attention.self.key");
        QCOMPARE(key.group, std::string("group_1"));
        QCOMPARE(key.weightStrategy, std::string("tensor"));
        QCOMPARE(key.activationScheme, std::string("static tensor"));
        QCOMPARE(key.scaleDtype, std::string("BF16"));
        QCOMPARE(key.channelScales, std::vector<float>{0.375f});
        QCOMPARE(key.scaleMin, 0.375f);
        QCOMPARE(key.scaleMedian, 0.375f);
        QCOMPARE(key.scaleMax, 0.375f);
        QCOMPARE(key.scaleRatio, 1.0f);
        std::array<int64_t, 16> keyHistogram{};
        keyHistogram[6] = 11; // 0x30 = exponent 6
        keyHistogram[15] = 4;
        keyHistogram[0] = 1;
        QCOMPARE(key.exponentHistogram, keyHistogram);
        QCOMPARE(key.clippedShare, 2.0 / 16.0);
        QCOMPARE(key.underflowShare, 1.0 / 16.0);
        QVERIFY(key.inputScale.has_value());
        QCOMPARE(*key.inputScale, inputScale);

        const LinearScaleStatistics& value = statsFor(all, kLayer0 + "attention.self.value");
        QCOMPARE(value.weightDtype, std::string("F32"));
        QVERIFY(!value.quantized);
        QCOMPARE(value.group, std::string());
        QCOMPARE(value.activationScheme, std::string("none"));
        QCOMPARE(value.exponentHistogram, (std::array<int64_t, 16>{}));

        const LinearScaleStatistics& missing = statsFor(all, kLayer0 + "output.dense");
        QCOMPARE(missing.weightDtype, std::string());
        QCOMPARE(missing.layer, 0);
        QCOMPARE(statsFor(all, "qa_outputs").layer, -1);

        // With thresholds below the hand-computed shares, both modules are flagged; above, neither.
        DiagnosticsOptions strict;
        strict.heavyWeightClippingShare = 0.05;  // query 6.25%, key 12.5%
        strict.heavyWeightUnderflowShare = 0.05; // query 12.5%, key 6.25%
        std::set<std::string> flagged;
        for (const Finding& f : diagnoseCheckpoint(*checkpoint, all, strict))
            if (f.code == "weight-clipping" || f.code == "weight-underflow")
                flagged.insert(f.code + " " + f.subject);
        QCOMPARE(flagged, (std::set<std::string>{"weight-clipping " + kLayer0 + "attention.self.query.weight",
                                                 "weight-clipping " + kLayer0 + "attention.self.key.weight",
                                                 "weight-underflow " + kLayer0 + "attention.self.query.weight",
                                                 "weight-underflow " + kLayer0 + "attention.self.key.weight"}));
        DiagnosticsOptions lenient;
        lenient.heavyWeightClippingShare = 0.2;
        lenient.heavyWeightUnderflowShare = 0.2;
        for (const Finding& f : diagnoseCheckpoint(*checkpoint, all, lenient))
            QVERIFY2(f.code != "weight-clipping" && f.code != "weight-underflow", f.message.c_str());
    }

    void scaleSummary_data()
    {
        QTest::addColumn<QVector<float>>("scales");
        QTest::addColumn<float>("minimum");
        QTest::addColumn<float>("median");
        QTest::addColumn<float>("maximum");
        QTest::addColumn<float>("ratio");
        const float nan = std::numeric_limits<float>::quiet_NaN();
        QTest::newRow("odd") << QVector<float>{3.0f, 1.0f, 2.0f} << 1.0f << 2.0f << 3.0f << 3.0f;
        QTest::newRow("even") << QVector<float>{0.5f, 0.125f, 2.0f, 0.25f} << 0.125f << 0.375f << 2.0f << 16.0f;
        QTest::newRow("single") << QVector<float>{0.75f} << 0.75f << 0.75f << 0.75f << 1.0f;
        // A non-positive minimum leaves the ratio undefined (0).
        QTest::newRow("zero") << QVector<float>{0.0f, 1.0f, 2.0f} << 0.0f << 1.0f << 2.0f << 0.0f;
        // NaN has no place in an order; it is left out (and reported as scale-invalid).
        QTest::newRow("nan") << QVector<float>{nan, 1.0f, 4.0f} << 1.0f << 2.5f << 4.0f << 4.0f;
    }
    void scaleSummary()
    {
        QFETCH(QVector<float>, scales);
        QFETCH(float, minimum);
        QFETCH(float, median);
        QFETCH(float, maximum);
        QFETCH(float, ratio);
        const int n = scales.size();
        const nlohmann::json quantization = {
            {"quant_method", "compressed-tensors"},
            {"format", "float-quantized"},
            {"quantization_status", "compressed"},
            {"config_groups", {{"group_0", fp8Group("Linear", "channel", nullptr)}}},
            {"ignore", {"qa_outputs"}}};
        const std::string dir = joinPath(root_, "summary-" + std::string(QTest::currentDataTag()));
        makeDirectory(dir);
        writeBytesAtomically(joinPath(dir, "config.json"), handWrittenConfig(n, 4, quantization).dump(2));
        const std::vector<float> values(scales.begin(), scales.end());
        writeSafetensors(joinPath(dir, "model.safetensors"),
                         {codesTensor(kLayer0 + "attention.self.query.weight", {n, n},
                                      std::vector<uint8_t>(static_cast<std::size_t>(n * n), 0x38)),
                          makeFloatTensor(kLayer0 + "attention.self.query.weight_scale", Dtype::F32, {n, 1},
                                          values.data())});
        const std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(dir);
        const std::vector<LinearScaleStatistics> all = computeScaleStatistics(*checkpoint);
        const LinearScaleStatistics& s = all.front();
        QCOMPARE(s.scaleMin, minimum);
        QCOMPARE(s.scaleMedian, median);
        QCOMPARE(s.scaleMax, maximum);
        QCOMPARE(s.scaleRatio, ratio);
        QCOMPARE(s.channelScales.size(), values.size());
    }

    // A roberta-base-sized intermediate Linear: the single pass agrees with a plain count.
    void largeWeightHistogram()
    {
        const int64_t rows = 3072, columns = 768;
        std::vector<uint8_t> codes(static_cast<std::size_t>(rows * columns));
        uint32_t state = 12345;
        for (uint8_t& code : codes) {
            state = state * 1664525u + 1013904223u;
            code = static_cast<uint8_t>(state >> 24);
        }
        std::array<int64_t, 16> histogram{};
        int64_t underflow = 0, excess = 0;
        for (int64_t r = 0; r < rows; ++r) {
            int64_t atLimit = 0;
            for (int64_t c = 0; c < columns; ++c) {
                const uint8_t code = codes[static_cast<std::size_t>(r * columns + c)];
                ++histogram[(code >> 3) & 0xF];
                underflow += ((code >> 3) & 0xF) == 0;
                atLimit += code == 0x7E || code == 0xFE;
            }
            excess += atLimit > 2 ? atLimit - 2 : 0;
        }
        const std::vector<float> scales(static_cast<std::size_t>(rows), 0.001f);
        const nlohmann::json quantization = {
            {"quant_method", "compressed-tensors"},
            {"format", "float-quantized"},
            {"quantization_status", "compressed"},
            {"config_groups", {{"group_0", fp8Group("Linear", "channel", nullptr)}}},
            {"ignore", {"qa_outputs"}}};
        const std::string dir = joinPath(root_, "large");
        makeDirectory(dir);
        writeBytesAtomically(joinPath(dir, "config.json"), handWrittenConfig(768, 3072, quantization).dump(2));
        writeSafetensors(joinPath(dir, "model.safetensors"),
                         {codesTensor(kLayer0 + "intermediate.dense.weight", {rows, columns}, codes),
                          makeFloatTensor(kLayer0 + "intermediate.dense.weight_scale", Dtype::F32, {rows, 1},
                                          scales.data())});
        const std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(dir);
        QElapsedTimer timer;
        timer.start();
        const std::vector<LinearScaleStatistics> all = computeScaleStatistics(*checkpoint);
        qInfo() << "statistics over" << rows * columns << "codes in" << timer.nsecsElapsed() / 1e6 << "ms";
        const LinearScaleStatistics& s = statsFor(all, kLayer0 + "intermediate.dense");
        QCOMPARE(s.exponentHistogram, histogram);
        QCOMPARE(s.underflowShare, double(underflow) / double(rows * columns));
        QCOMPARE(s.clippedShare, double(excess) / double(rows * columns));
    }

    void activationFindings_data()
    {
        QTest::addColumn<int>("activations"); // ActivationQuantization
        QTest::addColumn<float>("amax");
        QTest::addColumn<qint64>("elements");
        QTest::addColumn<qint64>("clipped");
        QTest::addColumn<bool>("expectFinding");
        const int staticTensor = int(ActivationQuantization::StaticPerTensor);
        const int dynamicToken = int(ActivationQuantization::DynamicPerToken);
        // The scale is 0.01 throughout: it covers |x| up to 4.48.
        QTest::newRow("static, 1% clipped") << staticTensor << 9.0f << qint64(10000) << qint64(100) << true;
        QTest::newRow("static, 0.2% clipped") << staticTensor << 9.0f << qint64(10000) << qint64(20) << true;
        QTest::newRow("static, exactly 0.1%") << staticTensor << 9.0f << qint64(10000) << qint64(10) << false;
        QTest::newRow("static, none clipped") << staticTensor << 9.0f << qint64(10000) << qint64(0) << false;
        QTest::newRow("static, no elements") << staticTensor << 9.0f << qint64(0) << qint64(0) << false;
        // x / s a rounding step above 448 for x at the calibrated amax: counted, but harmless.
        QTest::newRow("static, amax at the range") << staticTensor << 448.0f * 0.01f << qint64(100) << qint64(1)
                                                   << false;
        QTest::newRow("dynamic, clipped") << dynamicToken << 9.0f << qint64(10000) << qint64(100) << false;
    }
    void activationFindings()
    {
        QFETCH(int, activations);
        QFETCH(float, amax);
        QFETCH(qint64, elements);
        QFETCH(qint64, clipped);
        QFETCH(bool, expectFinding);
        LinearInfo info;
        info.module = kLayer0 + "output.dense";
        info.quantized = true;
        info.weightStrategy = "tensor";
        info.activations = static_cast<ActivationQuantization>(activations);
        info.inputScale = 0.01f;
        LinearInfo other = info;
        other.module = kLayer0 + "attention.self.query";
        ActivationStatistics stats;
        stats.module = info.module;
        stats.amax = amax;
        stats.inputScale = 0.01f;
        stats.elements = elements;
        stats.clipped = clipped;
        // Statistics of a module no LinearInfo describes are ignored.
        ActivationStatistics stranger = stats;
        stranger.module = "not.a.module";

        const std::vector<Finding> findings = diagnoseActivations({stats, stranger}, {other, info});
        if (!expectFinding) {
            QVERIFY2(findings.empty(), codeList(findings).c_str());
            return;
        }
        QCOMPARE(findings.size(), std::size_t(1));
        const Finding& f = findings.front();
        QCOMPARE(f.code, std::string("static-scale-clipping"));
        QCOMPARE(f.severity, Severity::Warning);
        QCOMPARE(f.subject, info.module);
        // The observed amax and the range 448 * 0.01 = 4.48 the scale covers.
        QVERIFY2(f.message.find("4.48") != std::string::npos, f.message.c_str());
        QVERIFY2(f.message.find("amax is 9,") != std::string::npos, f.message.c_str());
        QVERIFY2(f.message.find(info.module) != std::string::npos, f.message.c_str());
    }

    void activationThresholdIsAnOption()
    {
        LinearInfo info;
        info.module = "m";
        info.activations = ActivationQuantization::StaticPerTensor;
        info.inputScale = 1.0f;
        ActivationStatistics stats;
        stats.module = "m";
        stats.amax = 500.0f;
        stats.inputScale = 1.0f;
        stats.elements = 1000;
        stats.clipped = 5; // 0.5%
        DiagnosticsOptions options;
        options.staticScaleClippingShare = 0.01;
        QVERIFY(diagnoseActivations({stats}, {info}, options).empty());
        options.staticScaleClippingShare = 0.004;
        QCOMPARE(diagnoseActivations({stats}, {info}, options).size(), std::size_t(1));
    }

    // End to end: a static input scale shrunk tenfold clips the activations of a real forward.
    void shrunkStaticScaleClipsInForward()
    {
        const std::string module = kLayer0 + "intermediate.dense";
        EditableCheckpoint c = EditableCheckpoint::read(clean("tensor-tensor"));
        c.setValue(module + ".input_scale", 0, c.values(module + ".input_scale").at(0) / 10.0f);
        const std::string dir = joinPath(root_, "shrunk-input-scale");
        c.write(dir);

        auto subjectsFor = [](const std::string& checkpointDir) {
            setComputeThreads(1);
            std::unique_ptr<EncoderModel> model = EncoderModel::load(checkpointDir);
            EncoderInputs inputs;
            inputs.inputIds = {{0, 5, 6, 7, 8, 9, 2}};
            ForwardOptions options;
            options.activationStatistics = true;
            const ForwardResult result = model->forward(inputs, options);
            const std::vector<Finding> findings = diagnoseActivations(result.activationStatistics, model->linears());
            qInfo().noquote() << "activation findings of" << QString::fromStdString(checkpointDir) << ":\n"
                              << QString::fromStdString(codeList(findings));
            std::map<std::string, std::string> codeBySubject;
            for (const Finding& f : findings)
                codeBySubject[f.subject] = f.code;
            return codeBySubject;
        };
        // The clean scales were calibrated on these very ids, so this module's input does not clip
        // (later modules may clip a little: the fp8 run's activations drift from the calibration's).
        QVERIFY(!subjectsFor(clean("tensor-tensor")).count(module));
        const std::map<std::string, std::string> damaged = subjectsFor(dir);
        QVERIFY(damaged.count(module));
        QCOMPARE(damaged.at(module), std::string("static-scale-clipping"));
    }

    void severityNames()
    {
        QCOMPARE(std::string(severityName(Severity::Error)), std::string("error"));
        QCOMPARE(std::string(severityName(Severity::Warning)), std::string("warning"));
        QCOMPARE(std::string(severityName(Severity::Info)), std::string("info"));
    }
};

QTEST_GUILESS_MAIN(TestDiagnostics)
#include "test_diagnostics.moc"
