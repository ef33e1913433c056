// The encoder family table: the AIU runner's exported copy matches it, its HF -> FMS names follow
// fms's RoBERTa adapter, and a made-up third family (a RoBERTa clone under another class name and
// prefix, registered here and nowhere else) loads, is diagnosed and answers exactly as the RoBERTa
// checkpoint it was renamed from: adding a family is one table entry.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "common/error.h"
#include "common/text_files.h"
#include "engine/encoder_model.h"
#include "io/safetensors.h"
#include "model/architecture.h"
#include "model/checkpoint.h"
#include "report/family_table_json.h"
#include "support/fixtures.h"
#include "tasks/answer_question.h"

using namespace scalescope;
using nlohmann::json;

namespace {

// The made-up family: RoBERTa's layout under the prefix "clone", its own class names.
const EncoderFamily& cloneFamily()
{
    static const EncoderFamily& family = [] {
        EncoderFamily clone = *encoderFamilies().front();
        clone.name = "clone";
        clone.prefix = "clone";
        clone.classes = {{"CloneForQuestionAnswering", HeadKind::QuestionAnswering, ""},
                         {"CloneForMaskedLM", HeadKind::MaskedLM, ""}};
        clone.poolerModule = "clone.pooler.dense";
        return std::cref(registerEncoderFamily(std::move(clone)));
    }();
    return family;
}

// A copy of a RoBERTa checkpoint folder with every "roberta." tensor renamed to "clone." and the
// class name changed: the same weights under the clone family.
void renameToClone(const std::string& from, const std::string& to)
{
    const auto store = TensorStore::openDirectory(from);
    std::vector<TensorToWrite> tensors;
    for (const TensorView* view : store->tensors()) {
        TensorToWrite tensor;
        tensor.name = view->name.rfind("roberta.", 0) == 0 ? "clone." + view->name.substr(8) : view->name;
        tensor.dtype = view->dtype;
        tensor.shape = view->shape;
        tensor.bytes.assign(view->data, view->data + view->byteSize);
        tensors.push_back(std::move(tensor));
    }
    writeSafetensors(joinPath(to, "model.safetensors"), tensors);
    json config = readJsonFile(joinPath(from, "config.json"));
    config["architectures"] = {"CloneForQuestionAnswering"};
    std::ofstream(joinPath(to, "config.json")) << config.dump(2);
    for (const char* file : {"vocab.json", "merges.txt"}) {
        std::ifstream in(joinPath(from, file), std::ios::binary);
        std::ofstream(joinPath(to, file), std::ios::binary) << in.rdbuf();
    }
}

} // namespace

class TestFamilies : public QObject {
    Q_OBJECT
private slots:
    // packaging/runners/encoder_families.json is what `scalescope-cli families --json` prints, so
    // the AIU runner reads the engine's table and keeps no copy of its own.
    void runnerTableMatchesTheFamilyTable()
    {
        const json committed = readJsonFile(SCALESCOPE_RUNNER_FAMILIES);
        json expected = familyTableJson();
        // Registered test families are not part of the shipped table.
        json& families = expected["families"];
        for (auto it = families.begin(); it != families.end();)
            it = (*it)["family"] == "clone" ? families.erase(it) : it + 1;
        QCOMPARE(QString::fromStdString(committed.dump(1)), QString::fromStdString(expected.dump(1)));
    }

    // fms's RoBERTa adapter names (foundation-model-stack models/roberta.py), unfused and fused.
    void fmsNamesOfEveryRole_data()
    {
        QTest::addColumn<QString>("architecture");
        QTest::addColumn<QString>("hf");
        QTest::addColumn<QString>("fms");
        QTest::addColumn<QString>("fmsFused");
        const QString q = "RobertaForQuestionAnswering", m = "RobertaForMaskedLM", bm = "BertForMaskedLM";
        QTest::newRow("query") << q << "roberta.encoder.layer.1.attention.self.query"
                               << "base_model.layers.1.attn.in_proj.query" << "base_model.layers.1.attn.in_proj.qkv_fused";
        QTest::newRow("key") << q << "roberta.encoder.layer.0.attention.self.key"
                             << "base_model.layers.0.attn.in_proj.key" << "base_model.layers.0.attn.in_proj.qkv_fused";
        QTest::newRow("value") << q << "roberta.encoder.layer.1.attention.self.value"
                               << "base_model.layers.1.attn.in_proj.value" << "base_model.layers.1.attn.in_proj.qkv_fused";
        QTest::newRow("attention output") << q << "roberta.encoder.layer.1.attention.output.dense"
                                          << "base_model.layers.1.attn.dense" << "base_model.layers.1.attn.dense";
        QTest::newRow("intermediate") << q << "roberta.encoder.layer.1.intermediate.dense"
                                      << "base_model.layers.1.ff_sub_layer.w1" << "base_model.layers.1.ff_sub_layer.w1";
        QTest::newRow("output") << q << "roberta.encoder.layer.0.output.dense" << "base_model.layers.0.ff_sub_layer.w2"
                                << "base_model.layers.0.ff_sub_layer.w2";
        QTest::newRow("qa head") << q << "qa_outputs" << "qa_head" << "qa_head";
        QTest::newRow("mlm dense") << m << "lm_head.dense" << "classification_head.dense" << "classification_head.dense";
        QTest::newRow("mlm decoder") << m << "lm_head.decoder" << "classification_head.head" << "classification_head.head";
        QTest::newRow("bert intermediate") << bm << "bert.encoder.layer.1.intermediate.dense"
                                           << "base_model.layers.1.ff_sub_layer.w1" << "base_model.layers.1.ff_sub_layer.w1";
        QTest::newRow("bert mlm decoder") << bm << "cls.predictions.decoder" << "classification_head.head"
                                          << "classification_head.head";
        QTest::newRow("not a linear") << q << "roberta.encoder.layer.1.attention.self" << "" << "";
    }

    void fmsNamesOfEveryRole()
    {
        QFETCH(QString, architecture);
        QFETCH(QString, hf);
        QFETCH(QString, fms);
        QFETCH(QString, fmsFused);
        json config = {{"architectures", {architecture.toStdString()}}, {"vocab_size", 50},  {"hidden_size", 8},
                       {"num_hidden_layers", 2},                        {"num_attention_heads", 2},
                       {"intermediate_size", 16},                       {"max_position_embeddings", 20}};
        const EncoderLayout layout(parseModelConfig(config, "config.json"));
        QCOMPARE(QString::fromStdString(layout.fmsName(hf.toStdString())), fms);
        QCOMPARE(QString::fromStdString(layout.fmsName(hf.toStdString(), true)), fmsFused);
    }

    void sentencesListEveryClass()
    {
        QCOMPARE(QString::fromStdString(architecturesWithHeadText(HeadKind::MaskedLM)).left(60),
                 QString("a RobertaForMaskedLM, BertForMaskedLM or XLMRobertaForMaskedLM checkpoint").left(60));
        cloneFamily();
        const std::string all = supportedArchitecturesText();
        QVERIFY2(all.find("CloneForQuestionAnswering") != std::string::npos, all.c_str());
        QVERIFY(all.find("RobertaForQuestionAnswering, ") == 0);
        QCOMPARE(QString::fromStdString(architecturesWithHeadText(HeadKind::MaskedLM)),
                 QString("a RobertaForMaskedLM, BertForMaskedLM, XLMRobertaForMaskedLM or CloneForMaskedLM checkpoint"));
        QVERIFY_THROWS_EXCEPTION(Error, registerEncoderFamily(cloneFamily()));
    }

    // A checkpoint's tokenizer is the kind its family entry names, whatever other tokenizer files
    // lie beside it: a folder holding both a WordPiece vocab.txt and a BPE vocab.json + merges.txt
    // (which a look at the files alone reads as WordPiece) gives a RoBERTa checkpoint BPE and a
    // BERT one WordPiece.
    void theFamilyEntryNamesTheTokenizer()
    {
        QTemporaryDir dir;
        const std::string roberta = dir.filePath("roberta").toStdString();
        const std::string bert = dir.filePath("bert").toStdString();
        testing::TinyModelSpec spec;
        testing::writeTinyFloatCheckpoint(roberta, spec);
        spec.architecture = "BertForQuestionAnswering";
        testing::writeTinyFloatCheckpoint(bert, spec);
        testing::writeTinyWordPieceTokenizer(roberta, spec.words);
        testing::writeTinyTokenizer(bert, spec.words);
        QCOMPARE(loadTokenizer(roberta)->maskToken(), std::string("[MASK]"));
        QCOMPARE(Checkpoint::open(roberta)->tokenizer().maskToken(), std::string("<mask>"));
        QCOMPARE(Checkpoint::open(bert)->tokenizer().maskToken(), std::string("[MASK]"));
    }

    // The clone family, registered above and nowhere else in the project, loads, is diagnosed and
    // answers exactly as the RoBERTa checkpoint it was renamed from.
    void aMadeUpFamilyRunsLikeTheOneItCopies()
    {
        cloneFamily();
        QTemporaryDir dir;
        const std::string floatDir = dir.filePath("float").toStdString();
        const std::string robertaDir = dir.filePath("roberta-fp8").toStdString();
        const std::string cloneDir = dir.filePath("clone-fp8").toStdString();
        QVERIFY(QDir().mkpath(QString::fromStdString(cloneDir)));
        testing::writeTinyFloatCheckpoint(floatDir, {});
        testing::writeTinyFp8Checkpoint(floatDir, robertaDir, {});
        renameToClone(robertaDir, cloneDir);

        const auto clone = Checkpoint::open(cloneDir);
        const EncoderLayout& layout = clone->layout();
        QCOMPARE(QString(architectureName(layout.architecture())), QString("CloneForQuestionAnswering"));
        QCOMPARE(QString::fromStdString(layout.linears().front().module), QString("clone.encoder.layer.0.attention.self.query"));
        QCOMPARE(QString::fromStdString(layout.embeddingsOutput()), QString("clone.embeddings.output"));
        QCOMPARE(layout.layerOf("clone.encoder.layer.1.output.dense.output"), 1);
        QCOMPARE(QString::fromStdString(layout.fmsName("clone.encoder.layer.1.intermediate.dense")),
                 QString("base_model.layers.1.ff_sub_layer.w1"));
        for (const Finding& finding : diagnoseCheckpoint(*clone, computeScaleStatistics(*clone)))
            QVERIFY2(finding.severity != Severity::Error, finding.message.c_str());

        const auto roberta = EncoderModel::load(robertaDir);
        const auto cloned = EncoderModel::load(cloneDir);
        const RunSettings fp8{RunMode::Fp8};
        const QaResult expected = answerQuestion(*roberta, "where is the cat", "the cat sat on the mat", fp8, {});
        const QaResult got = answerQuestion(*cloned, "where is the cat", "the cat sat on the mat", fp8, {});
        QCOMPARE(got.startLogits, expected.startLogits);
        QCOMPARE(got.endLogits, expected.endLogits);
        QVERIFY(!got.startLogits.empty() && !got.startLogits[0].empty());
    }
};

QTEST_GUILESS_MAIN(TestFamilies)
#include "test_families.moc"
