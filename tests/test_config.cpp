// Hugging Face config.json and compressed-tensors quantization_config parsing, including the shapes
// real llm-compressor output takes (regex targets, several groups, extra keys, unsupported schemes).
#include <QtTest>

#include "common/error.h"
#include "model/architecture.h"
#include "model/model_config.h"

using namespace scalescope;
using json = nlohmann::json;

namespace {

json minimalConfig()
{
    return json::parse(R"({
      "architectures": ["RobertaForQuestionAnswering"], "model_type": "roberta",
      "vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
      "intermediate_size": 3072, "max_position_embeddings": 514, "type_vocab_size": 1,
      "layer_norm_eps": 1e-05, "pad_token_id": 1, "hidden_act": "gelu", "torch_dtype": "float32"})");
}

json designExample()
{
    // The example of DESIGN.md, verbatim in content.
    return json::parse(R"({
      "quant_method": "compressed-tensors", "format": "float-quantized",
      "quantization_status": "compressed",
      "config_groups": {"group_0": {
         "targets": ["Linear"],
         "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": true, "dynamic": false},
         "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "symmetric": true, "dynamic": true},
         "output_activations": null}},
      "ignore": ["lm_head"], "kv_cache_scheme": null })");
}

} // namespace

class TestConfig : public QObject {
    Q_OBJECT
private slots:
    void parsesModelConfig()
    {
        const ModelConfig config = parseModelConfig(minimalConfig(), "config.json");
        QCOMPARE(config.architecture, Architecture::RobertaForQuestionAnswering);
        QCOMPARE(config.hiddenSize, int64_t(768));
        QCOMPARE(config.numLayers, int64_t(12));
        QCOMPARE(config.maxPositionEmbeddings, int64_t(514));
        QCOMPARE(config.padTokenId, int64_t(1));
        QCOMPARE(config.layerNormEps, 1e-5);
        QVERIFY(!config.quantization);
    }

    // BERT configs may leave out what transformers' BertConfig defaults: two token types, pad 0,
    // layer_norm_eps 1e-12; what they state wins.
    void bertDefaults()
    {
        json bert = minimalConfig();
        bert["architectures"] = {"BertForMaskedLM"};
        for (const char* key : {"pad_token_id", "layer_norm_eps", "type_vocab_size"})
            bert.erase(key);
        const ModelConfig config = parseModelConfig(bert, "config.json");
        QCOMPARE(config.architecture, Architecture::BertForMaskedLM);
        QCOMPARE(std::string(architectureName(config.architecture)), std::string("BertForMaskedLM"));
        QCOMPARE(config.padTokenId, int64_t(0));
        QCOMPARE(config.layerNormEps, 1e-12);
        QCOMPARE(config.typeVocabSize, int64_t(2));
        bert["architectures"] = {"BertForQuestionAnswering"};
        bert["type_vocab_size"] = 3;
        bert["pad_token_id"] = 5;
        const ModelConfig stated = parseModelConfig(bert, "config.json");
        QCOMPARE(stated.architecture, Architecture::BertForQuestionAnswering);
        QCOMPARE(stated.typeVocabSize, int64_t(3));
        QCOMPARE(stated.padTokenId, int64_t(5));
        const EncoderLayout layout(stated);
        QCOMPARE(layout.positionOffset(), int64_t(0));
        QCOMPARE(layout.maxSequenceLength(), stated.maxPositionEmbeddings);
        QCOMPARE(layout.quantizeIgnoreList(), (std::vector<std::string>{"re:cls\\..*", "qa_outputs"}));
    }

    void rejectsBadModelConfig_data()
    {
        QTest::addColumn<QString>("patch");
        QTest::addColumn<QString>("expected");
        QTest::newRow("unknown architecture") << R"({"architectures": ["GPT2LMHeadModel"]})" << "GPT2LMHeadModel";
        QTest::newRow("no architectures") << R"({"architectures": null})" << "architectures";
        QTest::newRow("missing hidden size") << R"({"hidden_size": null})" << "hidden_size";
        QTest::newRow("negative layers") << R"({"num_hidden_layers": -3})" << "num_hidden_layers";
        QTest::newRow("heads do not divide") << R"({"num_attention_heads": 7})" << "num_attention_heads";
        QTest::newRow("huge vocabulary") << R"({"vocab_size": 1000000000000})" << "vocab_size";
        QTest::newRow("pad outside vocabulary") << R"({"pad_token_id": 99999999})" << "pad_token_id";
        QTest::newRow("other activation") << R"({"hidden_act": "relu"})" << "relu";
        QTest::newRow("quantization config not object") << R"({"quantization_config": 3})" << "quantization_config";
    }
    void rejectsBadModelConfig()
    {
        QFETCH(QString, patch);
        QFETCH(QString, expected);
        json config = minimalConfig();
        const json changes = json::parse(patch.toStdString());
        for (const auto& [key, value] : changes.items()) {
            if (value.is_null())
                config.erase(key);
            else
                config[key] = value;
        }
        try {
            parseModelConfig(config, "/models/x/config.json");
            QFAIL("no error");
        } catch (const Error& e) {
            const QString message = QString::fromUtf8(e.what());
            QVERIFY2(message.contains("/models/x/config.json"), qPrintable(message));
            QVERIFY2(message.contains(expected), qPrintable(message));
        }
    }

    void parsesDesignExample()
    {
        const QuantizationConfig q = parseQuantizationConfig(designExample(), "config.json");
        QCOMPARE(q.quantMethod, std::string("compressed-tensors"));
        QCOMPARE(q.groups.size(), std::size_t(1));
        const ConfigGroup& g = q.groups[0];
        QCOMPARE(g.format, std::string("float-quantized"));
        QVERIFY(g.weights && g.inputActivations && !g.outputActivations);
        QCOMPARE(g.weights->strategy, std::string("channel"));
        QCOMPARE(g.inputActivations->strategy, std::string("token"));
        QVERIFY(g.inputActivations->dynamic);
        QVERIFY(!unsupportedSchemeReason(q, g));
        // lm_head is ignored by exact name; encoder Linears match by class name.
        QVERIFY(findGroupFor(q, "roberta.encoder.layer.0.attention.self.query", "Linear") == &q.groups[0]);
        QVERIFY(findGroupFor(q, "lm_head", "Linear") == nullptr);
        QVERIFY(findGroupFor(q, "roberta.embeddings.LayerNorm", "LayerNorm") == nullptr);
    }

    void matchesTargets_data()
    {
        QTest::addColumn<QString>("entry");
        QTest::addColumn<QString>("module");
        QTest::addColumn<bool>("matches");
        QTest::newRow("class name") << "Linear" << "roberta.encoder.layer.0.output.dense" << true;
        QTest::newRow("exact name") << "qa_outputs" << "qa_outputs" << true;
        QTest::newRow("name is not a prefix") << "lm_head" << "lm_head.dense" << false;
        QTest::newRow("regex whole name") << R"(re:.*attention\.self\..*)" << "roberta.encoder.layer.3.attention.self.key" << true;
        QTest::newRow("regex must match whole name") << R"(re:attention)" << "roberta.encoder.layer.3.attention.self.key" << false;
        QTest::newRow("regex no match") << R"(re:.*intermediate.*)" << "roberta.encoder.layer.3.output.dense" << false;
        QTest::newRow("regex dollar") << R"(re:.*dense$)" << "roberta.encoder.layer.3.output.dense" << true;
        QTest::newRow("broken regex matches nothing") << "re:([" << "x" << false;
    }
    void matchesTargets()
    {
        QFETCH(QString, entry);
        QFETCH(QString, module);
        QFETCH(bool, matches);
        QCOMPARE(matchesTarget(entry.toStdString(), module.toStdString(), "Linear"), matches);
    }

    void firstMatchingGroupWins()
    {
        // Real llm-compressor output: two groups, regex targets, a per-group format, extra keys.
        const json config = json::parse(R"({
          "quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
          "version": "0.9.1", "global_compression_ratio": 1.4, "provider": "llmcompressor",
          "sparsity_config": {}, "kv_cache_scheme": null,
          "config_groups": {
            "group_1": {"targets": ["Linear"], "format": "float-quantized",
               "weights": {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": true, "dynamic": false,
                           "observer": "minmax", "observer_kwargs": {}, "group_size": null, "block_structure": null, "actorder": null},
               "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": true, "dynamic": false}},
            "group_0": {"targets": ["re:.*attention\\.self\\..*"],
               "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": true, "dynamic": false},
               "input_activations": null}},
          "ignore": ["re:.*qa_outputs", "lm_head"]})");
        const QuantizationConfig q = parseQuantizationConfig(config, "config.json");
        QCOMPARE(q.groups.size(), std::size_t(2));
        QCOMPARE(q.groups[0].name, std::string("group_0")); // config order is group_0, group_1
        const ConfigGroup* attention = findGroupFor(q, "roberta.encoder.layer.1.attention.self.value", "Linear");
        QVERIFY(attention && attention->name == "group_0");
        QVERIFY(!attention->inputActivations);
        const ConfigGroup* dense = findGroupFor(q, "roberta.encoder.layer.1.intermediate.dense", "Linear");
        QVERIFY(dense && dense->name == "group_1");
        QCOMPARE(dense->weights->strategy, std::string("tensor"));
        QVERIFY(!dense->inputActivations->dynamic);
        QVERIFY(findGroupFor(q, "qa_outputs", "Linear") == nullptr);
        QVERIFY(!unsupportedSchemeReason(q, *dense));
        QVERIFY(!unsupportedSchemeReason(q, *attention));
    }

    void refusesUnsupportedSchemes_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("named");
        QTest::newRow("block weights") << R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"float","strategy":"block","block_structure":[128,128],"dynamic":false,"symmetric":true}}}})" << "block";
        QTest::newRow("group activations") << R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"float","strategy":"channel","dynamic":false,"symmetric":true},
            "input_activations":{"num_bits":8,"type":"float","strategy":"group","group_size":128,"dynamic":true,"symmetric":true}}}})" << "group";
        QTest::newRow("int quantized") << R"({"quant_method":"compressed-tensors","format":"int-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"int","strategy":"channel","dynamic":false,"symmetric":true}}}})" << "int-quantized";
        QTest::newRow("fp8 weight_scale_inv") << R"({"quant_method":"fp8","activation_scheme":"dynamic","weight_block_size":[128,128]})" << "weight_scale_inv";
    }
    void refusesUnsupportedSchemes()
    {
        QFETCH(QString, config);
        QFETCH(QString, named);
        const QuantizationConfig q = parseQuantizationConfig(json::parse(config.toStdString()), "config.json");
        QVERIFY(!q.groups.empty());
        const auto reason = unsupportedSchemeReason(q, q.groups[0]);
        QVERIFY(reason.has_value());
        QVERIFY2(QString::fromStdString(*reason).contains(named), reason->c_str());
    }

    void describesSchemes()
    {
        const QuantizationConfig q = parseQuantizationConfig(designExample(), "config.json");
        QCOMPARE(describeScheme(q.groups[0]), std::string("FP8 weights per channel, dynamic per-token activations"));
    }
};

QTEST_GUILESS_MAIN(TestConfig)
#include "test_config.moc"
