// BERT (BertForQuestionAnswering, BertForMaskedLM) through every path RoBERTa takes: the layout,
// quantize, question answering with [CLS] Q [SEP] C [SEP] windows and their token types, the CLI
// (tokenize with the real bert-base-uncased vocabulary, qa, fill-mask with [MASK], forward with
// --token-type-ids, inspect, compare, evaluate), the runner device and the diagnostics. Numbers are
// checked against tests/support's independent reference forward.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "common/error.h"
#include "engine/open_backend.h"
#include "engine/compute_threads.h"
#include "io/safetensors.h"
#include "engine/encoder_model.h"
#include "support/cli_process.h"
#include "support/fixtures.h"
#include "support/reference_forward.h"
#include "tasks/answer_question.h"
#include "tasks/evaluate.h"
#include "tasks/squad_dataset.h"

using namespace scalescope;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

const QString kSharedData = QStringLiteral(SCALESCOPE_SHARED_DATA);

json runJson(const QStringList& args)
{
    const CliResult r = runCli(args);
    if (r.exitCode != 0)
        throw std::runtime_error("scalescope-cli " + args.join(' ').toStdString() + " failed: " + r.err.toStdString());
    return json::parse(r.out.toStdString());
}

QString q(const std::string& s) { return QString::fromStdString(s); }

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

double maxAbsDifference(const std::vector<float>& a, const std::vector<float>& b)
{
    double worst = a.size() == b.size() ? 0.0 : INFINITY;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
    return worst;
}

double maxAbs(const std::vector<float>& values)
{
    double largest = 0;
    for (float v : values)
        largest = std::max(largest, std::fabs(double(v)));
    return largest;
}

const std::vector<std::string> kWords = {"the", "cat", "sat", "on", "mat", "a", "dog", "paris", "is", "capital",
                                         "of", "france", "what", "where", "who", "river", "city", "north"};
const std::string kQuestion = "Where is the cat?";
const std::string kContext = "The dog sat on a mat. The cat sat on the mat north of the river in Paris, "
                             "the capital of France. A dog is on the mat.";

} // namespace

class TestBert : public QObject {
    Q_OBJECT
    std::string qaFloat_, qaFp8_, mlmFloat_, mlmFp8_;

private slots:
    void initTestCase()
    {
        setComputeThreads(2);
        TinyModelSpec qa;
        qa.architecture = "BertForQuestionAnswering";
        qa.words = kWords;
        qaFloat_ = makeTempDir("bert-qa");
        writeTinyFloatCheckpoint(qaFloat_, qa);
        // The FP8 QA checkpoint comes from the product's own quantize, so that it is tested on BERT.
        qaFp8_ = makeTempDir("bert-qa-fp8") + "/model";
        const CliResult r = runCli({"quantize", q(qaFloat_), q(qaFp8_), "--weights", "channel", "--activations", "token"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        TinyModelSpec mlm = qa;
        mlm.architecture = "BertForMaskedLM";
        mlmFloat_ = makeTempDir("bert-mlm");
        writeTinyFloatCheckpoint(mlmFloat_, mlm);
        mlmFp8_ = makeTempDir("bert-mlm-fp8") + "/model";
        writeTinyFp8Checkpoint(mlmFloat_, mlmFp8_, {"tensor", "tensor", "BF16"});
    }

    void layoutFollowsTheBertTable()
    {
        const auto checkpoint = Checkpoint::open(mlmFloat_);
        const EncoderLayout& layout = checkpoint->layout();
        QCOMPARE(layout.positionOffset(), int64_t(0));
        QVERIFY(!layout.positionsSkipPadding());
        QCOMPARE(layout.maxSequenceLength(), checkpoint->config().maxPositionEmbeddings);
        QCOMPARE(checkpoint->config().typeVocabSize, int64_t(2));
        QCOMPARE(checkpoint->config().padTokenId, int64_t(0));
        QCOMPARE(layout.capturePoints().front(), std::string("bert.embeddings.output"));
        QCOMPARE(layout.tokenTypeEmbeddingsTensor(), std::string("bert.embeddings.token_type_embeddings.weight"));
        QCOMPARE(layout.headDefinition().steps.at(3).module, std::string("cls.predictions.transform.LayerNorm"));
        const auto& linears = layout.linears();
        QCOMPARE(linears.size(), std::size_t(2 * 6 + 2));
        QCOMPARE(linears[4].module, std::string("bert.encoder.layer.0.intermediate.dense"));
        QCOMPARE(linears[4].shortLabel, std::string("L0.ffn.in"));
        QCOMPARE(linears[12].module, std::string("cls.predictions.transform.dense"));
        QCOMPARE(linears[13].module, std::string("cls.predictions.decoder"));
        QCOMPARE(linears[13].tiedWeight, std::string("bert.embeddings.word_embeddings.weight"));
        QCOMPARE(linears[13].biasTensors.back(), std::string("cls.predictions.bias"));
        QCOMPARE(linears[12].biasTensors, std::vector<std::string>{"cls.predictions.transform.dense.bias"});
        QCOMPARE(layout.specialTokens().mask, std::string("[MASK]"));
        QCOMPARE(layout.specialTokensInPair(), 3);
        // The checkpoint's tokenizer agrees with its layout.
        const Tokenizer& tokenizer = checkpoint->tokenizer();
        QCOMPARE(tokenizer.maskToken(), layout.specialTokens().mask);
        QCOMPARE(tokenizer.specialTokensInPair(), layout.specialTokensInPair());
        QCOMPARE(tokenizer.tokenString(tokenizer.clsId()), layout.specialTokens().begin);
        QCOMPARE(tokenizer.tokenString(tokenizer.sepId()), layout.specialTokens().end);
        // A sentence written for RoBERTa reads with BERT's mask token, and back.
        QCOMPARE(withMaskToken("The <mask> of <mask>.", "[MASK]"), std::string("The [MASK] of [MASK]."));
        QCOMPARE(withMaskToken("The [MASK].", "<mask>"), std::string("The <mask>."));
    }

    void quantizeKeepsTheHeadsFloat()
    {
        const json config = json::parse(readAll(qaFp8_ + "/config.json"));
        const json ignore = config["quantization_config"]["ignore"];
        QVERIFY(std::find(ignore.begin(), ignore.end(), "qa_outputs") != ignore.end());
        QVERIFY(std::find(ignore.begin(), ignore.end(), "re:cls\\..*") != ignore.end());
        const auto store = TensorStore::openDirectory(qaFp8_);
        QCOMPARE(store->require("bert.encoder.layer.1.output.dense.weight").dtype, Dtype::F8_E4M3);
        QCOMPARE(store->require("qa_outputs.weight").dtype, Dtype::F32);
        QVERIFY(QFile::exists(q(qaFp8_ + "/vocab.txt")));

        // The MLM head of a quantized BertForMaskedLM stays float too, with static calibration
        // running the WordPiece tokenizer.
        const std::string calibration = makeTempDir("bert-calibration") + "/texts.txt";
        std::ofstream(calibration) << "The cat sat on the mat.\nParis is the capital of France.\n";
        const std::string mlmQuantized = makeTempDir("bert-mlm-q") + "/model";
        const CliResult r = runCli({"quantize", q(mlmFloat_), q(mlmQuantized), "--weights", "tensor", "--activations",
                                    "tensor", "--calibration", q(calibration)});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const auto mlmStore = TensorStore::openDirectory(mlmQuantized);
        QCOMPARE(mlmStore->require("cls.predictions.transform.dense.weight").dtype, Dtype::F32);
        QCOMPARE(mlmStore->require("bert.encoder.layer.0.attention.self.query.weight").dtype, Dtype::F8_E4M3);
        QVERIFY(mlmStore->find("bert.encoder.layer.0.attention.self.query.input_scale"));
        QVERIFY(!mlmStore->find("cls.predictions.decoder.weight"));
    }

    // Every window's logits equal the independent reference run on that window's ids and types.
    void answersMatchTheReferenceWindowByWindow()
    {
        auto model = EncoderModel::load(qaFp8_);
        QaOptions options;
        options.maxSeqLen = 24;
        options.docStride = 4;
        options.topK = 3;
        const QaResult result = answerQuestion(*model, kQuestion, kContext, RunSettings{RunMode::Fp8}, options);
        QVERIFY(result.windows.size() >= 3);
        QVERIFY(!result.answers.empty());
        const Tokenizer& tokenizer = model->checkpoint().tokenizer();
        for (std::size_t w = 0; w < result.windows.size(); ++w) {
            const Encoding& encoding = result.windows[w].encoding;
            QCOMPARE(encoding.ids.front(), tokenizer.clsId());
            QCOMPARE(encoding.ids.back(), tokenizer.sepId());
            QCOMPARE(encoding.typeIds.back(), int64_t(1));
            QCOMPARE(encoding.typeIds.front(), int64_t(0));
            const auto reference = referenceForward(qaFp8_, encoding.ids, "fp8", encoding.typeIds);
            const auto& start = reference.at("start_logits").values;
            const auto& end = reference.at("end_logits").values;
            QVERIFY(maxAbsDifference(result.startLogits[w], start) <= 2e-3 * std::max(1.0, maxAbs(start)));
            QVERIFY(maxAbsDifference(result.endLogits[w], end) <= 2e-3 * std::max(1.0, maxAbs(end)));
        }
        // Answers are character spans of the context.
        for (const QaAnswer& answer : result.answers)
            QCOMPARE(q(kContext).mid(answer.start, answer.end - answer.start), q(answer.text));
    }

    void realVocabularyTokenizesAsHuggingFace()
    {
        if (!QFile::exists(kSharedData + "/bert-base-uncased-tokenizer/vocab.txt"))
            QSKIP("shared data bert-base-uncased-tokenizer is absent");
        TinyModelSpec spec;
        spec.architecture = "BertForQuestionAnswering";
        spec.vocabularySize = 30522;
        spec.numLayers = 1;
        const std::string dir = makeTempDir("bert-real-vocab");
        writeTinyFloatCheckpoint(dir, spec);
        for (const char* file : {"vocab.txt", "tokenizer_config.json"}) {
            QFile::remove(q(dir) + "/" + file);
            QVERIFY(QFile::copy(kSharedData + "/bert-base-uncased-tokenizer/" + file, q(dir) + "/" + file));
        }
        const json single = runJson({"tokenize", q(dir), "--text", "Hello world!", "--json"});
        QCOMPARE(single["input_ids"].get<std::vector<int64_t>>(), (std::vector<int64_t>{101, 7592, 2088, 999, 102}));
        QCOMPARE(single["token_type_ids"].get<std::vector<int64_t>>(), std::vector<int64_t>(5, 0));
        // "How are you?" is how=2129 are=2024 you=2017 ?=1029; the pair and its closing [SEP] are type 1.
        const json pair = runJson({"tokenize", q(dir), "--text", "Hello world!", "--pair", "How are you?", "--json"});
        QCOMPARE(pair["input_ids"].get<std::vector<int64_t>>(),
                 (std::vector<int64_t>{101, 7592, 2088, 999, 102, 2129, 2024, 2017, 1029, 102}));
        QCOMPARE(pair["token_type_ids"].get<std::vector<int64_t>>(),
                 (std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
        QCOMPARE(pair["offsets"][6], json::array({4, 7}));
        // qa windows carry the same types and run on the real vocabulary.
        const json answer = runJson({"qa", q(dir), "--question", "Hello world!", "--context", "How are you?", "--json"});
        QCOMPARE(answer["input_ids"][0], pair["input_ids"]);
        QCOMPARE(answer["token_type_ids"][0], pair["token_type_ids"]);
    }

    void cliRunsEveryCommand()
    {
        const json answer = runJson({"qa", q(qaFp8_), "--question", q(kQuestion), "--context", q(kContext), "--json"});
        QVERIFY(!answer["answers"].empty());
        QCOMPARE(answer["input_ids"][0][0].get<int64_t>(), int64_t(2)); // the tiny vocabulary's [CLS]

        // forward with token types equals the reference given the same types.
        const auto ids = answer["input_ids"][0].get<std::vector<int64_t>>();
        const auto types = answer["token_type_ids"][0].get<std::vector<int64_t>>();
        QVERIFY(std::count(types.begin(), types.end(), 1) > 0);
        QStringList idText, typeText;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            idText << QString::number(ids[i]);
            typeText << QString::number(types[i]);
        }
        const std::string output = makeTempDir("bert-forward") + "/out.safetensors";
        runJson({"forward", q(qaFloat_), "--input-ids", idText.join(','), "--token-type-ids", typeText.join(','),
                 "--mode", "dequant", "--output", q(output), "--json"});
        const auto written = TensorStore::openFile(output);
        const auto reference = referenceForward(qaFloat_, ids, "dequant", types);
        const auto& start = reference.at("start_logits").values;
        QVERIFY(maxAbsDifference(written->require("start_logits").toFloat().values, start) <= 1e-4 * std::max(1.0, maxAbs(start)));
        const CliResult badTypes = runCli({"forward", q(qaFloat_), "--input-ids", "2,5,3", "--token-type-ids", "0,2,0",
                                           "--output", q(output + ".bad")});
        QCOMPARE(badTypes.exitCode, 1);
        QVERIFY2(badTypes.err.contains("type_vocab_size"), qPrintable(badTypes.err));

        const json filled = runJson({"fill-mask", q(mlmFp8_), "--text", "The cat [MASK] on the mat.", "--json"});
        QCOMPARE(filled["masks"].size(), std::size_t(1));
        QCOMPARE(filled["masks"][0].size(), std::size_t(5));
        const CliResult robertaMask = runCli({"fill-mask", q(mlmFp8_), "--text", "The cat <mask> on the mat."});
        QCOMPARE(robertaMask.exitCode, 1);
        QVERIFY2(robertaMask.err.contains("[MASK]"), qPrintable(robertaMask.err));

        const json inspect = runJson({"inspect", q(qaFp8_), "--json"});
        QCOMPARE(inspect["architecture"].get<std::string>(), std::string("BertForQuestionAnswering"));
        const json compare = runJson({"compare", q(qaFp8_), "--reference", q(qaFloat_), "--question", q(kQuestion),
                                      "--context", q(kContext), "--json"});
        QVERIFY2(compare.dump().find("bert.encoder.layer.1.output") != std::string::npos, compare.dump().c_str());
        const json compareMask =
            runJson({"compare", q(mlmFp8_), "--reference", q(mlmFloat_), "--text", "The [MASK] sat.", "--json"});
        QVERIFY2(compareMask.dump().find("cls.predictions.decoder") != std::string::npos, compareMask.dump().c_str());
    }

    void evaluateRunsOnBert()
    {
        const json squad = {
            {"version", "1.1"},
            {"data",
             {{{"title", "t"},
               {"paragraphs",
                {{{"context", kContext},
                  {"qas",
                   {{{"id", "q1"}, {"question", kQuestion}, {"answers", {{{"text", "on the mat"}, {"answer_start", 34}}}}},
                    {{"id", "q2"}, {"question", "What is the capital of France?"},
                     {"answers", {{{"text", "Paris"}, {"answer_start", 67}}}}}}}}}}}}}};
        QCOMPARE(q(kContext).mid(34, 10), QStringLiteral("on the mat"));
        QCOMPARE(q(kContext).mid(67, 5), QStringLiteral("Paris"));
        const std::string file = makeTempDir("bert-squad") + "/squad.json";
        std::ofstream(file) << squad.dump();
        auto run = EncoderModel::load(qaFp8_);
        auto reference = EncoderModel::load(qaFloat_);
        EvaluationOptions options;
        options.qa.maxSeqLen = 32;
        options.qa.docStride = 8;
        const EvaluationResult result = evaluateSquad(*run, reference.get(), readSquadFile(file), options);
        QCOMPARE(result.examples.size(), std::size_t(2));
        QVERIFY(result.skipped.empty());
        QVERIFY(result.complete);
    }

    // The runner device gets the token types: its logits equal the in-process engine's exactly,
    // and differ from a run without them.
    void runnerCarriesTokenTypes()
    {
        const auto checkpoint = Checkpoint::open(qaFp8_);
        const Encoding pair = checkpoint->tokenizer().encodePair(kQuestion, kContext);
        EncoderInputs inputs;
        inputs.addSequence(checkpoint->tokenizer().encode(kQuestion));
        QVERIFY(inputs.tokenTypeIds.empty()); // all type 0: nothing to send
        inputs.addSequence(pair);
        QCOMPARE(inputs.tokenTypeIds.size(), std::size_t(2));
        QCOMPARE(inputs.tokenTypeIds[0], std::vector<int64_t>(inputs.inputIds[0].size(), 0));
        QCOMPARE(inputs.tokenTypeIds[1], pair.typeIds);
        EncoderInputs firstTyped;
        firstTyped.addSequence(pair);
        QCOMPARE(firstTyped.tokenTypeIds, std::vector<std::vector<int64_t>>{pair.typeIds});
        EncoderInputs untyped;
        untyped.inputIds = inputs.inputIds;
        const std::string command = "'" + std::string(SCALESCOPE_CLI) + "' runner";
        auto runner = openBackend("runner:" + command, qaFp8_);
        auto local = EncoderModel::load(checkpoint);
        ForwardOptions options;
        const ForwardResult remote = runner->forward(inputs, options);
        const ForwardResult here = local->forward(inputs, options);
        const ForwardResult withoutTypes = local->forward(untyped, options);
        QCOMPARE(remote.output("start_logits").values, here.output("start_logits").values);
        QVERIFY(maxAbsDifference(withoutTypes.output("start_logits").values, here.output("start_logits").values) > 1e-4);
    }

    void diagnosticsAndStatisticsNameBertModules()
    {
        const auto checkpoint = Checkpoint::open(qaFp8_);
        const auto statistics = computeScaleStatistics(*checkpoint);
        QCOMPARE(statistics.size(), checkpoint->layout().linears().size()); // 12 encoder Linears and qa_outputs
        QCOMPARE(statistics.front().module, std::string("bert.encoder.layer.0.attention.self.query"));
        QCOMPARE(statistics.front().label, std::string("L0.q"));
        for (const Finding& finding : diagnoseCheckpoint(*checkpoint, statistics))
            QVERIFY2(finding.severity != Severity::Error, finding.message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestBert)
#include "test_bert.moc"
