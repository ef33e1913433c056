// Hugging Face config.json and compressed-tensors quantization_config parsing, including the shapes
// real llm-compressor output takes (regex targets, several groups, extra keys, unsupported schemes).
#include <QtTest>

#include "common/error.h"
#include "model/architecture.h"
#include "model/model_config.h"
#include "model/quantization_config.h"

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
    // A minimal compressed-tensors FP8 config.
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
        QCOMPARE(std::string(architectureName(config.architecture)), std::string("RobertaForQuestionAnswering"));
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
        QCOMPARE(std::string(architectureName(config.architecture)), std::string("BertForMaskedLM"));
        QCOMPARE(std::string(architectureName(config.architecture)), std::string("BertForMaskedLM"));
        QCOMPARE(config.padTokenId, int64_t(0));
        QCOMPARE(config.layerNormEps, 1e-12);
        QCOMPARE(config.typeVocabSize, int64_t(2));
        bert["architectures"] = {"BertForQuestionAnswering"};
        bert["type_vocab_size"] = 3;
        bert["pad_token_id"] = 5;
        const ModelConfig stated = parseModelConfig(bert, "config.json");
        QCOMPARE(std::string(architectureName(stated.architecture)), std::string("BertForQuestionAnswering"));
        QCOMPARE(stated.typeVocabSize, int64_t(3));
        QCOMPARE(stated.padTokenId, int64_t(5));
        const EncoderLayout layout(stated);
        QCOMPARE(layout.positionOffset(), int64_t(0));
        QCOMPARE(layout.maxSequenceLength(), stated.maxPositionEmbeddings);
        // Every BERT head stays float: the MLM head, qa_outputs, a classifier and the pooler it runs.
        QCOMPARE(layout.quantizeIgnoreList(),
                 (std::vector<std::string>{"re:cls\\..*", "qa_outputs", "classifier", "bert.pooler.dense"}));
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
        // Issue 30: integers are checked as the 64-bit values the file holds and quoted as written.
        QTest::newRow("layers past 2^32") << R"({"num_hidden_layers": 4294967298})" << "is 4294967298";
        QTest::newRow("vocabulary of 2^64 - 1") << R"({"vocab_size": 18446744073709551615})" << "is 18446744073709551615";
        QTest::newRow("pad past 2^63") << R"({"pad_token_id": 9223372036854775809})" << "is 9223372036854775809";
        QTest::newRow("pad leaving no positions")
            << R"({"pad_token_id": 2295, "max_position_embeddings": 514})" << "max_position_embeddings is 514";
        QTest::newRow("pad at the last position") << R"({"pad_token_id": 513})" << "pad_token_id 513 leaves no token positions";
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

    // Issue 30: quantization_config integers were read as 32-bit ints, so 2^32 + 64 ran as 64 and
    // 10^12 was reported as a negative number. Each is refused with the value as the file writes it.
    void quantizationIntegersAreCheckedAs64Bit_data()
    {
        QTest::addColumn<QString>("args");
        QTest::addColumn<QString>("expected");
        QTest::newRow("group_size 2^32 + 64")
            << R"("input_activations": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 4294967360, "dynamic": true})"
            << "\"group_0.input_activations.group_size\" is 4294967360";
        QTest::newRow("group_size 10^12")
            << R"("input_activations": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 1000000000000, "dynamic": true})"
            << "is 1000000000000";
        QTest::newRow("block_structure 2^32 + 64")
            << R"("weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [4294967360, 4294967360]})"
            << "\"group_0.weights.block_structure\" entry is 4294967360";
        // Issue 52 item 7: the "RxC" form quoted as written, whatever its numbers (read as 0 past 18
        // digits or with a sign, they were shown as 0), and a list entry that is not an integer.
        QTest::newRow("block_structure text past 2^64")
            << R"("weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": "99999999999999999999x16"})"
            << "\"group_0.weights.block_structure\" is \"99999999999999999999x16\"; written as text it must be \"RxC\", "
               "two whole numbers from 1 to 1073741824 joined by x.";
        QTest::newRow("block_structure text 2^32 + 64")
            << R"("weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": "4294967360X16"})"
            << "is \"4294967360X16\"; written as text";
        QTest::newRow("block_structure text negative past the bound")
            << R"("weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": "16x-99999999999"})"
            << "is \"16x-99999999999\"; written as text";
        QTest::newRow("block_structure entry 1.5")
            << R"("weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [1.5, 16]})"
            << "\"group_0.weights.block_structure\" entry is 1.5; it must be an integer";
        QTest::newRow("num_bits 2^32 + 8")
            << R"("weights": {"num_bits": 4294967304, "type": "float", "strategy": "channel"})" << "is 4294967304";
        QTest::newRow("num_bits 2^64 - 1")
            << R"("weights": {"num_bits": 18446744073709551615, "type": "float", "strategy": "channel"})"
            << "is 18446744073709551615";
    }
    // Issue 52 item 6: "dynamic": "yes" ran as dynamic per-token. A key of another type than its
    // own is refused naming the key and quoting the value.
    void quantizationKeysOfAnotherTypeAreRefused_data()
    {
        QTest::addColumn<QString>("args");
        QTest::addColumn<QString>("expected");
        const QString activations = R"("input_activations": {"num_bits": 8, "type": "float", "strategy": "token", )";
        QTest::newRow("dynamic yes") << activations + R"("dynamic": "yes"})"
                                     << "\"group_0.input_activations.dynamic\" is \"yes\"; it must be true, false or \"local\"";
        QTest::newRow("dynamic 1") << activations + R"("dynamic": 1})" << "\"group_0.input_activations.dynamic\" is 1;";
        QTest::newRow("symmetric as text") << activations + R"("dynamic": true, "symmetric": "true"})"
                                           << "\"group_0.input_activations.symmetric\" is \"true\"; it must be true or false";
        QTest::newRow("scale_dtype a number") << activations + R"("dynamic": true, "scale_dtype": 5})"
                                              << "\"group_0.input_activations.scale_dtype\" is 5; it must be a string";
        QTest::newRow("strategy a list") << R"("weights": {"num_bits": 8, "type": "float", "strategy": ["channel"]})"
                                         << "\"group_0.weights.strategy\" is [\"channel\"]; it must be a string";
        QTest::newRow("block_structure a number")
            << R"("weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": 128})"
            << "\"group_0.weights.block_structure\" is 128; it must be a list of two sizes or \"RxC\"";
        QTest::newRow("observer_kwargs a list") << R"("weights": {"num_bits": 8, "type": "float", "observer_kwargs": []})"
                                                << "\"group_0.weights.observer_kwargs\" is []; it must be an object";
    }
    void quantizationKeysOfAnotherTypeAreRefused() { expectQuantizationArgsRefused(); }
    void quantizationDynamicSpellings()
    {
        const auto dynamicOf = [](const std::string& value) {
            const std::string text = R"({"quant_method": "compressed-tensors", "format": "float-quantized",
                "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": {"num_bits": 8,
                "type": "float", "strategy": "token", "dynamic": )" + value + "}}}}";
            const QuantizationArgs args = *parseQuantizationConfig(json::parse(text), "c.json").groups[0].inputActivations;
            return std::make_pair(args.dynamic, args.dynamicLocal);
        };
        QCOMPARE(dynamicOf("true"), std::make_pair(true, false));
        QCOMPARE(dynamicOf("false"), std::make_pair(false, false));
        QCOMPARE(dynamicOf("\"False\""), std::make_pair(false, false));
        QCOMPARE(dynamicOf("\"local\""), std::make_pair(true, true));
        QCOMPARE(dynamicOf("null"), std::make_pair(false, false));
    }

    void quantizationIntegersAreCheckedAs64Bit() { expectQuantizationArgsRefused(); }

private:
    // The row's "args" in group_0 of a compressed-tensors config are refused with "expected".
    void expectQuantizationArgsRefused()
    {
        QFETCH(QString, args);
        QFETCH(QString, expected);
        const std::string text = R"({"quant_method": "compressed-tensors", "format": "float-quantized",
            "config_groups": {"group_0": {"targets": ["Linear"], )" + args.toStdString() + "}}}";
        try {
            parseQuantizationConfig(json::parse(text), "/models/x/config.json");
            QFAIL("no error");
        } catch (const Error& e) {
            const QString message = QString::fromUtf8(e.what());
            QVERIFY2(message.contains("/models/x/config.json") && message.contains(expected), qPrintable(message));
            QVERIFY2(!message.contains(".."), qPrintable(message));
        }
    }

private slots:

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

    // Written from docs/ARCHITECTURE.md "Configs as they appear in the wild": a "re:" entry matches as Python's
    // re.match does (anchored at the start, open at the end, `$` anchors the end); other entries
    // are an exact module name or a class name.
    void matchesTargets_data()
    {
        QTest::addColumn<QString>("entry");
        QTest::addColumn<QString>("module");
        QTest::addColumn<bool>("matches");
        const QString dense = "roberta.encoder.layer.3.attention.output.dense";
        const QString key = "roberta.encoder.layer.3.attention.self.key";
        QTest::newRow("class name") << "Linear" << "roberta.encoder.layer.0.output.dense" << true;
        QTest::newRow("other class name") << "LayerNorm" << "roberta.encoder.layer.0.output.dense" << false;
        QTest::newRow("exact name") << "qa_outputs" << "qa_outputs" << true;
        QTest::newRow("exact name is not a prefix") << "lm_head" << "lm_head.dense" << false;
        QTest::newRow("exact name is not a suffix") << "dense" << dense << false;
        QTest::newRow("exact name is not a regex") << "roberta.encoder.layer.3.attention.output.dens." << dense << false;
        QTest::newRow("regex whole name") << R"(re:.*attention\.self\..*)" << key << true;
        QTest::newRow("regex prefix matches longer name") << R"(re:.*attention\.output)" << dense << true;
        QTest::newRow("regex literal prefix") << R"(re:roberta\.encoder\.layer\.3)" << dense << true;
        QTest::newRow("regex prefix of the number") << R"(re:roberta\.encoder\.layer\.1)" << "roberta.encoder.layer.10.output.dense" << true;
        QTest::newRow("regex anchored at start") << R"(re:attention)" << key << false;
        QTest::newRow("regex suffix needs leading .*") << R"(re:self\.key)" << key << false;
        QTest::newRow("regex suffix with .*") << R"(re:.*self\.key)" << key << true;
        QTest::newRow("regex no match") << R"(re:.*intermediate.*)" << "roberta.encoder.layer.3.output.dense" << false;
        QTest::newRow("regex dollar at end") << R"(re:.*dense$)" << "roberta.encoder.layer.3.output.dense" << true;
        QTest::newRow("regex dollar refuses longer") << R"(re:.*attention\.output$)" << dense << false;
        QTest::newRow("regex dollar on layer 1 only") << R"(re:.*layer\.1\.output\.dense$)" << "roberta.encoder.layer.11.output.dense" << false;
        QTest::newRow("alternation first") << R"(re:.*self\.(query|key)$)" << key << true;
        QTest::newRow("alternation none") << R"(re:.*self\.(query|value)$)" << key << false;
        QTest::newRow("top-level alternation second branch anchored") << R"(re:qa_outputs|.*self\.key)" << key << true;
        QTest::newRow("top-level alternation not searched") << R"(re:qa_outputs|self\.key)" << key << false;
        QTest::newRow("escaped dot is literal") << R"(re:lm_head\.dense)" << "lm_headXdense" << false;
        QTest::newRow("bare dot is any character") << R"(re:lm_head.dense)" << "lm_headXdense" << true;
        QTest::newRow("escaped dot matches dot") << R"(re:lm_head\.)" << "lm_head.decoder" << true;
        QTest::newRow("digit class") << R"(re:.*layer\.\d+\.intermediate)" << "roberta.encoder.layer.7.intermediate.dense" << true;
        QTest::newRow("character class") << R"(re:.*layer\.[0-2]\.)" << "roberta.encoder.layer.3.output.dense" << false;
        QTest::newRow("regex never matches class name") << R"(re:Linear)" << "qa_outputs" << false;
        QTest::newRow("empty regex matches everything") << "re:" << "qa_outputs" << true;
        QTest::newRow("broken regex matches nothing") << "re:([" << "x" << false;
    }
    void matchesTargets()
    {
        QFETCH(QString, entry);
        QFETCH(QString, module);
        QFETCH(bool, matches);
        QCOMPARE(matchesTarget(entry.toStdString(), module.toStdString(), "Linear"), matches);
    }

    void targetKinds()
    {
        const std::string query = "roberta.encoder.layer.0.attention.self.query";
        QCOMPARE(matchTarget(query, query, "Linear"), std::optional<TargetKind>(TargetKind::ModuleName));
        QCOMPARE(matchTarget("re:.*query", query, "Linear"), std::optional<TargetKind>(TargetKind::Pattern));
        QCOMPARE(matchTarget("Linear", query, "Linear"), std::optional<TargetKind>(TargetKind::ClassName));
        QVERIFY(!matchTarget("re:query", query, "Linear"));
    }

    // The loaders take the most specific target whatever the group order: exact name, then pattern,
    // then class name; llm-compressor's model-free path takes the first group in config order.
    void mostSpecificTargetWins()
    {
        const json config = json::parse(R"({
          "quant_method": "compressed-tensors", "format": "float-quantized",
          "config_groups": {
            "group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}},
            "group_1": {"targets": ["re:.*attention\\.output"], "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}},
            "group_2": {"targets": ["roberta.encoder.layer.0.attention.output.dense", "re:.*intermediate"],
                        "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}},
            "group_3": {"targets": ["re:.*intermediate\\.dense$"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}},
          "ignore": ["re:.*qa_outputs"]})");
        const QuantizationConfig q = parseQuantizationConfig(config, "config.json");
        const GroupMatch exact = matchGroup(q, "roberta.encoder.layer.0.attention.output.dense", "Linear");
        QCOMPARE(exact.group->name, std::string("group_2"));
        QCOMPARE(exact.rule, std::string("group_2 target \"roberta.encoder.layer.0.attention.output.dense\" (module name)"));
        QCOMPARE(exact.firstInOrder.group->name, std::string("group_0"));
        QVERIFY(exact.conflicts.empty());
        const GroupMatch pattern = matchGroup(q, "roberta.encoder.layer.1.attention.output.dense", "Linear");
        QCOMPARE(pattern.group->name, std::string("group_1"));
        QCOMPARE(pattern.rule, std::string("group_1 target \"re:.*attention\\.output\" (pattern)"));
        const GroupMatch cls = matchGroup(q, "roberta.encoder.layer.1.output.dense", "Linear");
        QCOMPARE(cls.group->name, std::string("group_0"));
        QCOMPARE(cls.firstInOrder.group, cls.group);
        // Two patterns of different groups: a same-level conflict; the first in config order is kept.
        const GroupMatch conflict = matchGroup(q, "roberta.encoder.layer.1.intermediate.dense", "Linear");
        QCOMPARE(conflict.group->name, std::string("group_2"));
        QCOMPARE(conflict.conflicts.size(), std::size_t(1));
        QCOMPARE(conflict.conflicts[0].group->name, std::string("group_3"));
        QVERIFY(!sameScheme(*conflict.group, *conflict.conflicts[0].group));
        const GroupMatch ignored = matchGroup(q, "qa_outputs", "Linear");
        QVERIFY(!ignored.group);
        QCOMPARE(ignored.rule, std::string("ignored by \"re:.*qa_outputs\" (pattern)"));
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
        QTest::newRow("block of zero rows") << R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"float","strategy":"block","block_structure":[0,128],"dynamic":false,"symmetric":true}}}})" << "block_structure [0, 128]";
        QTest::newRow("block of negative columns") << R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"float","strategy":"block","block_structure":[128,-1],"dynamic":false,"symmetric":true}}}})" << "block_structure [128, -1]";
        QTest::newRow("block without structure") << R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"float","strategy":"block","dynamic":false,"symmetric":true}}}})" << "block_structure []";
        QTest::newRow("static group activations") << R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"float","strategy":"channel","dynamic":false,"symmetric":true},
            "input_activations":{"num_bits":8,"type":"float","strategy":"group","group_size":128,"dynamic":false,"symmetric":true}}}})" << "group";
        QTest::newRow("group of zero channels") << R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"float","strategy":"channel","dynamic":false,"symmetric":true},
            "input_activations":{"num_bits":8,"type":"float","strategy":"group","group_size":0,"dynamic":true,"symmetric":true}}}})" << "group_size 0";
        QTest::newRow("mxfp8 power-of-two scales") << R"({"quant_method":"compressed-tensors","format":"mxfp8-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"float","strategy":"group","group_size":32,"scale_dtype":"torch.float8_e8m0fnu","dynamic":false,"symmetric":true}}}})" << "mxfp8";
        QTest::newRow("e8m0 activation scales") << R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"float","strategy":"channel","dynamic":false,"symmetric":true},
            "input_activations":{"num_bits":8,"type":"float","strategy":"group","group_size":32,"scale_dtype":"torch.float8_e8m0fnu","dynamic":true,"symmetric":true}}}})" << "float8_e8m0fnu";
        QTest::newRow("mxfp8 weights stored as float-quantized") << R"({"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"float","strategy":"group","group_size":32,"scale_dtype":"torch.uint8","dynamic":false,"symmetric":true}}}})" << "mxfp8-quantized";
        QTest::newRow("uint8 scales on groups of 16") << R"({"quant_method":"compressed-tensors","format":"mxfp8-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":8,"type":"float","strategy":"group","group_size":16,"scale_dtype":"torch.uint8","dynamic":false,"symmetric":true}}}})" << "group_size 32";
        QTest::newRow("int4 weight groups") << R"({"quant_method":"compressed-tensors","format":"pack-quantized","config_groups":{"group_0":{"targets":["Linear"],
            "weights":{"num_bits":4,"type":"int","strategy":"group","group_size":128,"dynamic":false,"symmetric":true}}}})" << "pack-quantized";
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

    // compressed-tensors' MXFP8 preset as 0.18 serialises it (quant_scheme.py MXFP8, MXFP8A16).
    void runsMxfp8Preset()
    {
        const std::string args = R"("num_bits": 8, "type": "float", "symmetric": true, "group_size": 32, "strategy": "group",
            "block_structure": null, "actorder": null, "scale_dtype": "torch.uint8", "zp_dtype": "torch.uint8", "observer_kwargs": {})";
        for (bool activations : {true, false}) {
            const QuantizationConfig q = parseQuantizationConfig(json::parse(R"({
              "quant_method": "compressed-tensors", "format": "mxfp8-quantized", "quantization_status": "compressed",
              "config_groups": {"group_0": {"targets": ["Linear"], "format": "mxfp8-quantized",
                "weights": {)" + args + R"(, "dynamic": false, "observer": "memoryless_minmax"},
                "input_activations": )" + (activations ? "{" + args + R"(, "dynamic": true, "observer": null})" : std::string("null")) + R"(,
                "output_activations": null}}, "ignore": ["qa_outputs"], "transform_config": {}})"),
                                                                 "config.json");
            const ConfigGroup& g = q.groups.at(0);
            const auto reason = unsupportedSchemeReason(q, g);
            QVERIFY2(!reason, reason ? reason->c_str() : "");
            QVERIFY(isMxfp8Args(*g.weights));
            QVERIFY(!runsOnAiu(g));
            QCOMPARE(QString::fromStdString(describeScheme(g)),
                     activations ? QString("MXFP8 weights per 32-channel block with E8M0 scales, dynamic MXFP8 activations "
                                           "(per 32 channels, E8M0 scales)")
                                 : QString("MXFP8 weights per 32-channel block with E8M0 scales, float activations"));
        }
    }

    void runsBlockWeightsAndGroupActivations()
    {
        const QuantizationConfig q = parseQuantizationConfig(json::parse(R"({
          "quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
          "config_groups": {"group_0": {"targets": ["Linear"],
            "weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128], "symmetric": true, "dynamic": false},
            "input_activations": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 128, "symmetric": true, "dynamic": true}}}})"),
                                                             "config.json");
        QVERIFY(!unsupportedSchemeReason(q, q.groups[0]));
        QVERIFY(!runsOnAiu(q.groups[0]));
        QCOMPARE(q.groups[0].weights->blockStructure, (std::vector<int>{128, 128}));
        QCOMPARE(describeScheme(q.groups[0]),
                 std::string("FP8 weights per [128, 128] block, dynamic per-group (128 channels) activations"));
        const QuantizationConfig plain = parseQuantizationConfig(designExample(), "config.json");
        QVERIFY(runsOnAiu(plain.groups[0]));
    }

    // compressed-tensors infers a missing or null strategy from group_size.
    void infersMissingStrategy_data()
    {
        QTest::addColumn<QString>("args");
        QTest::addColumn<QString>("strategy");
        QTest::newRow("absent, no group_size") << R"({"num_bits": 8, "type": "float"})" << "tensor";
        QTest::newRow("null, group_size null") << R"({"num_bits": 8, "type": "float", "strategy": null, "group_size": null})" << "tensor";
        QTest::newRow("null, group_size -1") << R"({"num_bits": 8, "type": "float", "strategy": null, "group_size": -1})" << "channel";
        QTest::newRow("absent, group_size 128") << R"({"num_bits": 8, "type": "float", "group_size": 128})" << "group";
        QTest::newRow("given wins") << R"({"num_bits": 8, "type": "float", "strategy": "channel", "group_size": null})" << "channel";
    }
    void infersMissingStrategy()
    {
        QFETCH(QString, args);
        QFETCH(QString, strategy);
        json config = designExample();
        config["config_groups"]["group_0"]["weights"] = json::parse(args.toStdString());
        const QuantizationConfig q = parseQuantizationConfig(config, "config.json");
        QCOMPARE(q.groups[0].weights->strategy, strategy.toStdString());
        QVERIFY(q.unknownKeys.empty());
    }

    void acceptsUnknownKeysAndNamesThem()
    {
        json config = designExample();
        config["config_groups"]["group_0"]["weights"]["scale_bits"] = 8;
        config["config_groups"]["group_0"]["comment"] = "hand-edited";
        config["config_groups"]["group_0"]["input_activations"]["observer"] = "minmax"; // defined, not unknown
        const QuantizationConfig q = parseQuantizationConfig(config, "config.json");
        QCOMPARE(q.unknownKeys, (std::vector<std::string>{"group_0.weights.scale_bits", "group_0.comment"}));
        QCOMPARE(q.groups[0].unknownKeys, q.unknownKeys);
        QVERIFY(!unsupportedSchemeReason(q, q.groups[0]));
    }

    // 2024 checkpoints (compression_config) and transformers >= 4.56 (dtype); frozen status.
    void readsOlderAndNewerConfigKeys()
    {
        json config = minimalConfig();
        config.erase("torch_dtype");
        config["dtype"] = "bfloat16";
        json compression = designExample();
        compression["quantization_status"] = "frozen";
        config["compression_config"] = compression;
        const ModelConfig parsed = parseModelConfig(config, "config.json");
        QCOMPARE(parsed.torchDtype, std::string("bfloat16"));
        QVERIFY(parsed.quantization);
        QCOMPARE(parsed.quantization->status, std::string("frozen"));
        QCOMPARE(parsed.quantization->groups.size(), std::size_t(1));

        // quantization_config wins when both are present.
        config["quantization_config"] = designExample();
        config["quantization_config"]["config_groups"]["group_0"]["weights"]["strategy"] = "tensor";
        QCOMPARE(parseModelConfig(config, "config.json").quantization->groups[0].weights->strategy, std::string("tensor"));

        config.erase("quantization_config");
        config["compression_config"] = 3;
        try {
            parseModelConfig(config, "/m/config.json");
            QFAIL("no error");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("compression_config"), e.what());
        }
    }

    void describesSchemes()
    {
        const QuantizationConfig q = parseQuantizationConfig(designExample(), "config.json");
        QCOMPARE(describeScheme(q.groups[0]), std::string("FP8 weights per channel, dynamic per-token activations"));
    }
};

QTEST_GUILESS_MAIN(TestConfig)
#include "test_config.moc"
