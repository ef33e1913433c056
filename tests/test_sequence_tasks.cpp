// Sequence classifiers, cross-encoder rerankers and sentence embedders (DESIGN.md "Encoder tasks
// beyond QA and fill-mask"): their checkpoints load through the family table's heads, the engine's
// final outputs match an independent forward (support/reference_forward, which reads the folder's
// sentence-transformers files itself), and embed, classify and rerank print DESIGN's JSON with
// numbers recomputed here from the embeddings and logits they report. Bad folders get one sentence
// naming the file.
#include <QCryptographicHash>
#include <QFile>
#include <QtTest>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <cmath>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "engine/encoder_model.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "tasks/compare_runs.h"
#include "tasks/rerank.h"
#include "support/cli_process.h"
#include "support/fixtures.h"
#include "support/reference_forward.h"

using namespace scalescope;
using namespace scalescope::testing;
using nlohmann::json;

namespace {

double sqnrDb(const std::vector<float>& reference, const std::vector<float>& x)
{
    double signal = 0, noise = 0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
        signal += double(reference[i]) * reference[i];
        noise += (double(reference[i]) - x[i]) * (double(reference[i]) - x[i]);
    }
    return noise == 0 ? INFINITY : 10 * std::log10(signal / noise);
}

double cosine(const json& a, const json& b)
{
    double dot = 0, na = 0, nb = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        dot += a[i].get<double>() * b[i].get<double>();
        na += a[i].get<double>() * a[i].get<double>();
        nb += b[i].get<double>() * b[i].get<double>();
    }
    return dot / std::sqrt(na * nb);
}

json cliJson(const QStringList& args)
{
    const CliResult result = runCli(args);
    if (result.exitCode != 0)
        throw Error("scalescope-cli " + args.join(' ').toStdString() + " failed: " + result.err.toStdString());
    return json::parse(result.out.toStdString());
}

QString cliError(const QStringList& args)
{
    const CliResult result = runCli(args);
    return result.exitCode == 1 && !result.crashed ? result.err.trimmed() : "exit " + QString::number(result.exitCode);
}

void writeText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TinyModelSpec spec(const std::string& architecture)
{
    TinyModelSpec s;
    s.architecture = architecture;
    s.seed = 77;
    return s;
}


// Kendall's tau-b counted pair by pair (no ties expected in real-valued scores; ties counted anyway).
double kendallTau(const std::vector<double>& x, const std::vector<double>& y)
{
    double concordant = 0, discordant = 0, tiedX = 0, tiedY = 0, pairs = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t j = i + 1; j < x.size(); ++j) {
            ++pairs;
            const double dx = x[i] - x[j], dy = y[i] - y[j];
            tiedX += dx == 0 ? 1 : 0;
            tiedY += dy == 0 ? 1 : 0;
            if (dx * dy > 0)
                ++concordant;
            else if (dx * dy < 0)
                ++discordant;
        }
    return (concordant - discordant) / std::sqrt((pairs - tiedX) * (pairs - tiedY));
}

std::size_t argmaxOf(const std::vector<float>& v)
{
    return std::size_t(std::max_element(v.begin(), v.end()) - v.begin());
}

// One row of a texts file: a text and, for a pair, its second text.
struct TextRow {
    std::string text, pair;
};

// The rows as a JSONL texts file (readTextsFile's format), and each row's ids as `tokenize` gives them.
std::string writeTextsFile(const std::string& path, const std::vector<TextRow>& rows)
{
    std::string jsonl;
    for (const TextRow& row : rows)
        jsonl += (row.pair.empty() ? json{{"text", row.text}} : json{{"text", row.text}, {"pair", row.pair}}).dump() + "\n";
    writeText(path, jsonl);
    return path;
}

} // namespace

class TestSequenceTasks : public QObject {
    Q_OBJECT
    std::string robertaClassifier_, robertaClassifierFp8_, bertClassifier_, bertClassifierFp8_;
    std::string reranker_, rerankerFp8_, embedder_, embedderFp8_, bareBert_, multiLabel_;
    std::string xlmrQa_, xlmrQaFp8_, xlmrClassifierFp8_, xlmrEmbedderFp8_, xlmrMaskedLm_, xlmrMaskedLmFp8_;
    std::string xlmrLabelsFp8_; // XLMRobertaForSequenceClassification with three labels
    const std::vector<std::vector<int64_t>> robertaIds_{{0, 5, 6, 7, 8, 9, 10, 2}, {0, 11, 12, 2}};

    // The engine's final output row by row against the independent forward of each row alone.
    void checkAgainstReference(const std::string& dir, const std::string& output, const std::string& mode,
                               const std::vector<std::vector<int64_t>>& ids, double minimumDb)
    {
        auto model = EncoderModel::load(dir);
        EncoderInputs inputs;
        inputs.inputIds = ids;
        ForwardOptions options;
        QVERIFY(parseRunMode(mode, options.mode));
        const ForwardResult result = model->forward(inputs, options);
        const FloatTensor& engine = result.output(output);
        QCOMPARE(engine.shape.size(), std::size_t(2));
        const std::size_t width = std::size_t(engine.shape[1]);
        for (std::size_t row = 0; row < ids.size(); ++row) {
            const ReferenceTensor expected = referenceForward(dir, ids[row], mode).at(output);
            QCOMPARE(expected.values.size(), width);
            const std::vector<float> got(engine.values.begin() + row * width, engine.values.begin() + (row + 1) * width);
            const double db = sqnrDb(expected.values, got);
            QVERIFY2(db >= minimumDb, qPrintable(QString("%1 %2 row %3: %4 dB").arg(QString::fromStdString(dir))
                                                     .arg(QString::fromStdString(mode)).arg(row).arg(db)));
        }
    }

    // The final output of each row of a texts file, run alone through the independent forward on
    // the FP8 checkpoint (fp8) and on its float source: what the batched tasks must agree with.
    struct IndependentRows {
        std::vector<std::vector<float>> run, reference;
    };
    IndependentRows independentRows(const std::string& fp8, const std::string& floatDir, const std::string& output,
                                    const std::vector<TextRow>& rows)
    {
        IndependentRows out;
        for (const TextRow& row : rows) {
            QStringList args{"tokenize", QString::fromStdString(fp8), "--text", QString::fromStdString(row.text), "--json"};
            if (!row.pair.empty())
                args << "--pair" << QString::fromStdString(row.pair);
            const std::vector<int64_t> ids = cliJson(args)["input_ids"];
            out.run.push_back(referenceForward(fp8, ids, "fp8").at(output).values);
            out.reference.push_back(referenceForward(floatDir, ids, "fp8").at(output).values);
        }
        return out;
    }

    // compare's metrics at every head capture point and at the final outputs, against metrics
    // computed here over ALL the values of the two sides' own captures of the same one sequence
    // (one sequence: no padding to leave out, so every value of every point is real). A point
    // after the head's pooling holds one row per sequence, not token rows.
    void checkHeadPointsOverAllValues(const std::string& runDir, const std::string& referenceDir,
                                      const ComparisonInput& input, std::size_t expectedHeadPoints)
    {
        auto run = EncoderModel::load(runDir);
        auto reference = EncoderModel::load(referenceDir);
        const ComparisonResult result = compareRuns(*run, reference.get(), input);
        const PreparedComparisonInput prepared = prepareComparisonInput(*run, input);
        QCOMPARE(prepared.inputs.inputIds.size(), std::size_t(1));
        ForwardOptions runOptions;
        runOptions.capture.all = true;
        ForwardOptions referenceOptions = runOptions;
        referenceOptions.mode = RunMode::Dequant;
        const ForwardResult x = run->forward(prepared.inputs, runOptions);
        const ForwardResult r = reference->forward(prepared.inputs, referenceOptions);
        auto find = [](const std::vector<NamedTensor>& tensors, const std::string& name) -> const FloatTensor& {
            for (const NamedTensor& tensor : tensors)
                if (tensor.name == name)
                    return tensor.tensor;
            throw Error("no tensor " + name);
        };
        auto checkWhole = [](const std::string& name, const ErrorMetrics& got, const FloatTensor& xs,
                             const FloatTensor& rs) {
            const ErrorMetrics expected = computeErrorMetrics(xs.values, rs.values);
            const QString where = QString::fromStdString(name) + QString(": compare %1 dB cos %2 max %3 over %4, all values %5 dB cos %6 max %7 over %8")
                .arg(got.sqnrDb).arg(got.cosine).arg(got.maxAbsError).arg(got.count)
                .arg(expected.sqnrDb).arg(expected.cosine).arg(expected.maxAbsError).arg(expected.count);
            QVERIFY2(got.count == int64_t(xs.values.size()), qPrintable(where));
            QVERIFY2(std::isfinite(got.sqnrDb) && std::fabs(got.sqnrDb - expected.sqnrDb) < 0.05, qPrintable(where));
            QVERIFY2(std::fabs(got.cosine - expected.cosine) < 1e-6, qPrintable(where));
            QVERIFY2(std::fabs(got.maxAbsError - expected.maxAbsError) <= 1e-5 * (1 + expected.maxAbsError), qPrintable(where));
        };
        const EncoderLayout& layout = run->checkpoint().layout();
        std::size_t headPoints = 0;
        for (const CapturePointMetrics& point : result.points) {
            if (point.layer >= 0 || point.name == layout.embeddingsOutput())
                continue;
            ++headPoints;
            checkWhole(point.name, point.metrics, find(x.captures, point.name), find(r.captures, point.name));
            if (QTest::currentTestFailed())
                return;
        }
        QCOMPARE(headPoints, expectedHeadPoints);
        const std::vector<HeadOutput>& outputs = layout.headDefinition().outputs;
        QCOMPARE(outputs.size(), std::size_t(1));
        checkWhole(outputs[0].name, result.finalLogits, x.output(outputs[0].name), r.output(outputs[0].name));
    }

private slots:
    void initTestCase()
    {
        robertaClassifier_ = makeTempDir("seq-roberta-cls");
        TinyModelSpec classifier = spec("RobertaForSequenceClassification");
        classifier.labelNames = {"negative", "neutral", "positive"};
        writeTinyFloatCheckpoint(robertaClassifier_, classifier);
        robertaClassifierFp8_ = makeTempDir("seq-roberta-cls-fp8");
        Fp8Edits quantizedHead;
        quantizedHead.quantizeClassifierHead = true;
        writeTinyFp8Checkpoint(robertaClassifier_, robertaClassifierFp8_, {}, {0, 5, 6, 7, 8, 9, 2}, quantizedHead);

        bertClassifier_ = makeTempDir("seq-bert-cls");
        TinyModelSpec bert = spec("BertForSequenceClassification");
        bert.numLabels = 2;
        writeTinyFloatCheckpoint(bertClassifier_, bert);
        bertClassifierFp8_ = makeTempDir("seq-bert-cls-fp8");
        writeTinyFp8Checkpoint(bertClassifier_, bertClassifierFp8_, {"tensor", "tensor"});

        reranker_ = makeTempDir("seq-reranker");
        TinyModelSpec reranker = spec("RobertaForSequenceClassification");
        reranker.numLabels = 1;
        writeTinyFloatCheckpoint(reranker_, reranker);
        rerankerFp8_ = makeTempDir("seq-reranker-fp8");
        writeTinyFp8Checkpoint(reranker_, rerankerFp8_, {});

        embedder_ = makeTempDir("seq-embedder");
        TinyModelSpec embedder = spec("RobertaModel");
        embedder.bareTensorNames = true;
        embedder.pooling = "mean";
        embedder.normalize = true;
        embedder.maxSeqLength = 12;
        embedder.prompts = {{"query", "what "}, {"passage", "the "}};
        writeTinyFloatCheckpoint(embedder_, embedder);
        embedderFp8_ = makeTempDir("seq-embedder-fp8");
        writeTinyFp8Checkpoint(embedder_, embedderFp8_, {});

        bareBert_ = makeTempDir("seq-bert-model");
        writeTinyFloatCheckpoint(bareBert_, spec("BertModel"));

        // XLM-RoBERTa: RoBERTa's graph with the Unigram test tokenizer.
        xlmrQa_ = makeTempDir("seq-xlmr-qa");
        writeTinyFloatCheckpoint(xlmrQa_, spec("XLMRobertaForQuestionAnswering"));
        xlmrQaFp8_ = makeTempDir("seq-xlmr-qa-fp8");
        writeTinyFp8Checkpoint(xlmrQa_, xlmrQaFp8_, {"tensor", "tensor"});
        const std::string xlmrClassifier = makeTempDir("seq-xlmr-cls");
        TinyModelSpec xlmrReranker = spec("XLMRobertaForSequenceClassification");
        xlmrReranker.numLabels = 1;
        writeTinyFloatCheckpoint(xlmrClassifier, xlmrReranker);
        xlmrClassifierFp8_ = makeTempDir("seq-xlmr-cls-fp8");
        writeTinyFp8Checkpoint(xlmrClassifier, xlmrClassifierFp8_, {});
        const std::string xlmrEmbedder = makeTempDir("seq-xlmr-embed");
        TinyModelSpec xlmrModel = spec("XLMRobertaModel");
        xlmrModel.pooling = "mean";
        xlmrModel.normalize = true;
        writeTinyFloatCheckpoint(xlmrEmbedder, xlmrModel);
        xlmrEmbedderFp8_ = makeTempDir("seq-xlmr-embed-fp8");
        writeTinyFp8Checkpoint(xlmrEmbedder, xlmrEmbedderFp8_, {"channel", "token"});
        xlmrMaskedLm_ = makeTempDir("seq-xlmr-mlm");
        writeTinyFloatCheckpoint(xlmrMaskedLm_, spec("XLMRobertaForMaskedLM"));
        xlmrMaskedLmFp8_ = makeTempDir("seq-xlmr-mlm-fp8");
        writeTinyFp8Checkpoint(xlmrMaskedLm_, xlmrMaskedLmFp8_, {"channel", "token"});
        const std::string xlmrLabels = makeTempDir("seq-xlmr-labels");
        TinyModelSpec xlmrLabelled = spec("XLMRobertaForSequenceClassification");
        xlmrLabelled.labelNames = {"negativ", "neutral", "positiv"};
        writeTinyFloatCheckpoint(xlmrLabels, xlmrLabelled);
        xlmrLabelsFp8_ = makeTempDir("seq-xlmr-labels-fp8");
        writeTinyFp8Checkpoint(xlmrLabels, xlmrLabelsFp8_, {"tensor", "tensor"});

        multiLabel_ = makeTempDir("seq-multi-label");
        TinyModelSpec multi = spec("RobertaForSequenceClassification");
        multi.problemType = "multi_label_classification";
        writeTinyFloatCheckpoint(multiLabel_, multi);
    }

    // Each head loads through the family table: the layout's module names follow the folder
    // (no prefix for a bare model saved without it), and the head is what its folder says.
    void layoutsFollowTheFolder()
    {
        const auto embedder = Checkpoint::open(embedder_);
        QCOMPARE(embedder->layout().head(), HeadKind::Embedding);
        QCOMPARE(embedder->layout().modulePrefix(), std::string());
        QCOMPARE(embedder->layout().embeddingsModule(), std::string("embeddings"));
        QVERIFY(embedder->layout().findLinear("encoder.layer.0.attention.self.query"));
        QCOMPARE(embedder->config().embedding.pooling, PoolingMode::Mean);
        QVERIFY(embedder->config().embedding.normalize);
        QCOMPARE(embedder->config().embedding.maxSeqLength, int64_t(12));

        const auto fp8 = Checkpoint::open(embedderFp8_);
        QVERIFY(fp8->plan().linears().size() > 0);
        for (const auto& linear : fp8->layout().linears())
            QVERIFY2(fp8->plan().find(linear.module) && fp8->plan().find(linear.module)->quantized,
                     linear.module.c_str());

        const auto bert = Checkpoint::open(bareBert_);
        QCOMPARE(bert->layout().modulePrefix(), std::string("bert"));
        QVERIFY(!bert->config().embedding.fromModules);

        const auto classifier = Checkpoint::open(robertaClassifier_);
        QCOMPARE(classifier->layout().head(), HeadKind::SequenceClassification);
        QCOMPARE(classifier->config().labels, (std::vector<std::string>{"negative", "neutral", "positive"}));
        QCOMPARE(classifier->config().problem, ClassificationProblem::SingleLabel);
        QCOMPARE(Checkpoint::open(reranker_)->config().problem, ClassificationProblem::Score);
        QCOMPARE(Checkpoint::open(multiLabel_)->config().problem, ClassificationProblem::MultiLabel);
    }

    // Logits and embeddings against the independent forward, in every mode, float and FP8 (heads
    // quantized in the RoBERTa classifier, float in the others).
    void finalOutputsMatchTheIndependentForward_data()
    {
        QTest::addColumn<QString>("which");
        QTest::addColumn<QString>("output");
        QTest::addColumn<QString>("mode");
        for (const char* mode : {"fp8", "dequant", "fp16"}) {
            QTest::addRow("roberta-classifier-%s", mode) << "roberta-cls" << "logits" << mode;
            QTest::addRow("bert-classifier-%s", mode) << "bert-cls" << "logits" << mode;
            QTest::addRow("reranker-%s", mode) << "reranker" << "logits" << mode;
            QTest::addRow("embedder-%s", mode) << "embedder" << "pooled" << mode;
            QTest::addRow("xlmr-reranker-%s", mode) << "xlmr-cls" << "logits" << mode;
            QTest::addRow("xlmr-classifier-%s", mode) << "xlmr-labels" << "logits" << mode;
            QTest::addRow("xlmr-embedder-%s", mode) << "xlmr-embed" << "pooled" << mode;
        }
        QTest::addRow("bert-model-cls-pooling") << "bert-model" << "pooled" << "dequant";
    }
    void finalOutputsMatchTheIndependentForward()
    {
        QFETCH(QString, which);
        QFETCH(QString, output);
        QFETCH(QString, mode);
        const std::map<QString, std::string> dirs = {{"roberta-cls", robertaClassifierFp8_}, {"bert-cls", bertClassifierFp8_},
                                                     {"reranker", rerankerFp8_},             {"embedder", embedderFp8_},
                                                     {"bert-model", bareBert_},
                                                     {"xlmr-cls", xlmrClassifierFp8_}, {"xlmr-embed", xlmrEmbedderFp8_},
                                                     {"xlmr-labels", xlmrLabelsFp8_}};
        const std::vector<std::vector<int64_t>> bertIds{{2, 40, 41, 42, 3}, {2, 50, 3, 51, 52, 3}};
        const bool isBert = which.startsWith("bert");
        checkAgainstReference(dirs.at(which), output.toStdString(), mode.toStdString(), isBert ? bertIds : robertaIds_, 60);
    }

    // XLM-RoBERTa QA: the CLI's windows are the Unigram tokenizer's <s> question </s></s> context </s>
    // (fairseq ids: <s> 0, </s> 2), and its start logits match the independent forward of that window
    // in fp8 (static per-tensor scales) at >= 60 dB; fill-mask fills <mask> (the last id).
    void xlmRobertaAnswersAndFillsMasks()
    {
        const json answered = cliJson({"qa", QString::fromStdString(xlmrQaFp8_), "--question", "Wer ist Ärztin?",
                                       "--context", "Die Ärztin heißt Zoë, и она живёт в Москве.", "--json"});
        const std::vector<int64_t> ids = answered["input_ids"][0];
        QCOMPARE(ids.front(), int64_t(0));
        QCOMPARE(ids.back(), int64_t(2));
        QCOMPARE(std::count(ids.begin(), ids.end(), int64_t(2)), std::ptrdiff_t(3));
        const std::vector<float> start = answered["start_logits"][0];
        const ReferenceTensor expected = referenceForward(xlmrQaFp8_, ids, "fp8").at("start_logits");
        QVERIFY2(sqnrDb(expected.values, start) >= 60, qPrintable(QString::number(sqnrDb(expected.values, start))));
        const json filled = cliJson({"fill-mask", QString::fromStdString(xlmrMaskedLm_), "--text", "Die <mask> heißt Zoë.",
                                     "--json"});
        QVERIFY2(filled.dump().find("probability") != std::string::npos, filled.dump().c_str());
        const auto model = Checkpoint::open(xlmrMaskedLm_);
        QCOMPARE(std::string(tokenizerKindName(model->layout().family().tokenizer)), std::string("unigram"));
        QCOMPARE(model->tokenizer().maskId(), int64_t(1092));
    }

    // XLM-RoBERTa fill-mask: the FP8 MLM's vocabulary logits at every position of a masked sentence
    // (the Unigram tokenizer's ids) against the independent forward, per-channel weights and dynamic
    // per-token activations, in every mode.
    void xlmRobertaFillMaskLogitsMatchTheIndependentForward_data()
    {
        QTest::addColumn<QString>("mode");
        for (const char* mode : {"fp8", "dequant", "fp16"})
            QTest::addRow("%s", mode) << mode;
    }
    void xlmRobertaFillMaskLogitsMatchTheIndependentForward()
    {
        QFETCH(QString, mode);
        auto model = EncoderModel::load(xlmrMaskedLmFp8_);
        const std::vector<int64_t> ids = model->checkpoint().tokenizer().encode("Die <mask> heißt Zoë, и она живёт в Москве.").ids;
        QVERIFY(std::count(ids.begin(), ids.end(), model->checkpoint().tokenizer().maskId()) == 1);
        EncoderInputs inputs;
        inputs.inputIds = {ids};
        ForwardOptions options;
        QVERIFY(parseRunMode(mode.toStdString(), options.mode));
        const ForwardResult result = model->forward(inputs, options);
        const FloatTensor& engine = result.output("logits");
        const ReferenceTensor expected = referenceForward(xlmrMaskedLmFp8_, ids, mode.toStdString()).at("logits");
        QCOMPARE(engine.values.size(), expected.values.size());
        QCOMPARE(engine.values.size(), ids.size() * std::size_t(model->config().vocabSize));
        const double db = sqnrDb(expected.values, engine.values);
        QVERIFY2(db >= 60, qPrintable(QString("%1: %2 dB").arg(mode).arg(db)));
    }

    // The CPU runner pools as the client asks (the load request's "embedding", said back): embed
    // through it, with the checkpoint's pooling and with --pooling max, equals embed in-process.
    void runnerPoolsAsAsked()
    {
        const QString runner = "runner:" + QString::fromStdString(SCALESCOPE_CLI) + " runner";
        for (const QStringList& pooling : {QStringList{}, QStringList{"--pooling", "max"}}) {
            QStringList args{"embed", QString::fromStdString(embedderFp8_), "--text", "a cat sat", "--text", "the dog",
                             "--json"};
            args << pooling;
            const json local = cliJson(args);
            const json remote = cliJson(QStringList(args) << "--device" << runner);
            QCOMPARE(remote["pooling"], local["pooling"]);
            for (std::size_t i = 0; i < 2; ++i)
                for (std::size_t j = 0; j < 32; ++j)
                    QCOMPARE(remote["inputs"][i]["embedding"][j].get<double>(), local["inputs"][i]["embedding"][j].get<double>());
        }
    }

    // embed: DESIGN's keys, each cosine and both similarity matrices recomputed here from the
    // embeddings it prints; the prompt and the truncation to max_seq_length are said.
    void embedPrintsDesignJson()
    {
        const json out = cliJson({"embed", QString::fromStdString(embedderFp8_), "--reference",
                                  QString::fromStdString(embedder_), "--text", "the cat sat on the mat", "--text",
                                  "a dog", "--text", "the cat sat on the mat the cat sat on the mat a dog", "--prompt",
                                  "query", "--json"});
        QCOMPARE(out["pooling"].get<std::string>(), std::string("mean"));
        QVERIFY(out["normalized"].get<bool>());
        QCOMPARE(out["dim"].get<int>(), 32);
        QCOMPARE(out["max_seq_length"].get<int>(), 12);
        QCOMPARE(out["prompt"].get<std::string>(), std::string("what "));
        const json& inputs = out["inputs"];
        QCOMPARE(inputs.size(), std::size_t(3));
        QVERIFY(!inputs[0]["truncated"].get<bool>());
        QVERIFY(inputs[2]["truncated"].get<bool>());
        QCOMPARE(inputs[2]["input_ids"].size(), std::size_t(12));
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            QCOMPARE(inputs[i]["embedding"].size(), std::size_t(32));
            QVERIFY(std::abs(cosine(inputs[i]["embedding"], inputs[i]["reference_embedding"]) -
                             inputs[i]["cosine"].get<double>()) < 1e-6);
            QVERIFY(inputs[i]["cosine"].get<double>() > 0.9);
            double norm = 0;
            for (const json& v : inputs[i]["embedding"])
                norm += v.get<double>() * v.get<double>();
            QVERIFY(std::abs(norm - 1.0) < 1e-5); // normalized
            for (std::size_t j = 0; j < inputs.size(); ++j) {
                QVERIFY(std::abs(out["similarity"][i][j].get<double>() -
                                 cosine(inputs[i]["embedding"], inputs[j]["embedding"])) < 1e-6);
                QVERIFY(std::abs(out["reference_similarity"][i][j].get<double>() -
                                 cosine(inputs[i]["reference_embedding"], inputs[j]["reference_embedding"])) < 1e-6);
            }
        }
        QVERIFY(out["notes"].dump().find("max_seq_length 12") != std::string::npos);
    }

    // --pooling and --no-normalize override the checkpoint; --output writes both sides' embeddings.
    void embedOverridesPoolingAndWritesSafetensors()
    {
        const std::string file = makeTempDir("seq-embed-out") + "/embeddings.safetensors";
        const json out = cliJson({"embed", QString::fromStdString(embedder_), "--text", "a cat", "--text", "a dog",
                                  "--pooling", "max", "--no-normalize", "--output", QString::fromStdString(file), "--json"});
        QCOMPARE(out["pooling"].get<std::string>(), std::string("max"));
        QVERIFY(!out["normalized"].get<bool>());
        const auto store = TensorStore::openFile(file);
        const FloatTensor embeddings = store->require("embeddings").toFloat();
        QCOMPARE(embeddings.shape, (std::vector<int64_t>{2, 32}));
        QCOMPARE(store->require("reference_embeddings").shape, (std::vector<int64_t>{2, 32}));
        for (std::size_t i = 0; i < 32; ++i)
            QCOMPARE(double(embeddings.values[i]), out["inputs"][0]["embedding"][i].get<double>());
        // A folder without modules.json pools its first token and says so.
        const json bert = cliJson({"embed", QString::fromStdString(bareBert_), "--text", "a cat", "--json"});
        QCOMPARE(bert["pooling"].get<std::string>(), std::string("cls"));
        QVERIFY(bert["notes"].dump().find("no sentence-transformers modules.json") != std::string::npos);
    }

    // classify: labels by id2label, probabilities a softmax of the printed logits, the flip and KL
    // recomputed here; a pair runs in the family's pair layout.
    void classifyPrintsDesignJson()
    {
        const json out = cliJson({"classify", QString::fromStdString(robertaClassifierFp8_), "--reference",
                                  QString::fromStdString(robertaClassifier_), "--text", "the cat", "--pair", "a dog",
                                  "--json"});
        const json& item = out["inputs"].at(0);
        const std::vector<int64_t> ids = item["input_ids"];
        QCOMPARE(ids.front(), int64_t(0));
        QCOMPARE(ids.back(), int64_t(2));
        QCOMPARE(std::count(ids.begin(), ids.end(), int64_t(2)), std::ptrdiff_t(3)); // <s> A </s></s> B </s>
        for (const json* side : {&item, &item["reference"]}) {
            const std::vector<double> logits = (*side)["logits"];
            const std::vector<double> probabilities = (*side)["probabilities"];
            QCOMPARE(logits.size(), std::size_t(3));
            const double top = *std::max_element(logits.begin(), logits.end());
            double sum = 0;
            for (double l : logits)
                sum += std::exp(l - top);
            for (std::size_t i = 0; i < 3; ++i)
                QVERIFY(std::abs(probabilities[i] - std::exp(logits[i] - top) / sum) < 1e-6);
            const std::size_t best = std::size_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
            QCOMPARE((*side)["label_id"].get<std::size_t>(), best);
            const std::vector<std::string> names{"negative", "neutral", "positive"};
            QCOMPARE((*side)["label"].get<std::string>(), names[best]);
        }
        QCOMPARE(item["flip"].get<bool>(), item["label_id"] != item["reference"]["label_id"]);
        double kl = 0;
        for (std::size_t i = 0; i < 3; ++i) {
            const double p = item["reference"]["probabilities"][i], q = item["probabilities"][i];
            kl += p * std::log(p / q);
        }
        QVERIFY(std::abs(item["kl"].get<double>() - kl) < 1e-6);
        QCOMPARE(out["problem_type"].get<std::string>(), std::string("single_label_classification"));
    }

    // Multi-label: a sigmoid per label; the flip is any label crossing 0.5.
    void multiLabelUsesSigmoids()
    {
        const json out = cliJson({"classify", QString::fromStdString(multiLabel_), "--text", "the cat", "--json"});
        const json& item = out["inputs"].at(0);
        for (std::size_t i = 0; i < 3; ++i)
            QVERIFY(std::abs(item["probabilities"][i].get<double>() -
                             1 / (1 + std::exp(-item["logits"][i].get<double>()))) < 1e-6);
        QVERIFY(!item["flip"].get<bool>()); // a float model against its own dequant
    }

    // rerank with a cross-encoder: the ranking is the printed scores sorted (ties by position), the
    // reference ranking likewise, same_order and Kendall's tau recomputed here.
    void rerankCrossEncoder()
    {
        const json out = cliJson({"rerank", QString::fromStdString(rerankerFp8_), "--reference",
                                  QString::fromStdString(reranker_), "--query", "what is the capital",
                                  "--passage", "Paris is the capital of France", "--passage", "the cat sat",
                                  "--passage", "a dog", "--passage", "the mat", "--json"});
        QCOMPARE(out["scorer"].get<std::string>(), std::string("cross-encoder"));
        const json& ranking = out["ranking"];
        QCOMPARE(ranking.size(), std::size_t(4));
        std::vector<double> score(4), reference(4);
        for (const json& entry : ranking) {
            score[entry["index"].get<std::size_t>()] = entry["score"];
            reference[entry["index"].get<std::size_t>()] = entry["reference_score"];
        }
        auto order = [](const std::vector<double>& s) {
            std::vector<std::size_t> o(s.size());
            std::iota(o.begin(), o.end(), 0);
            std::stable_sort(o.begin(), o.end(), [&](std::size_t a, std::size_t b) { return s[a] > s[b]; });
            return o;
        };
        const auto runOrder = order(score), referenceOrder = order(reference);
        for (std::size_t i = 0; i < 4; ++i) {
            QCOMPARE(ranking[i]["index"].get<std::size_t>(), runOrder[i]);
            QCOMPARE(out["reference_ranking"][i]["index"].get<std::size_t>(), referenceOrder[i]);
        }
        QCOMPARE(out["same_order"].get<bool>(), runOrder == referenceOrder);
        int concordant = 0, discordant = 0;
        for (std::size_t i = 0; i < 4; ++i)
            for (std::size_t j = i + 1; j < 4; ++j)
                ((score[i] - score[j]) * (reference[i] - reference[j]) > 0 ? concordant : discordant) += 1;
        QVERIFY(std::abs(out["kendall_tau"].get<double>() - double(concordant - discordant) / 6.0) < 1e-9);
        // --top-k keeps the best of the run's ranking.
        const json top = cliJson({"rerank", QString::fromStdString(rerankerFp8_), "--query", "q", "--passage", "a",
                                  "--passage", "b", "--passage", "c", "--top-k", "2", "--json"});
        QCOMPARE(top["ranking"].size(), std::size_t(2));
        QCOMPARE(top["reference_ranking"].size(), std::size_t(3));
    }

    // rerank with an embedder: the cosine of the query's and each passage's embeddings, each with its
    // checkpoint prompt, as embed computes them.
    void rerankBiEncoderUsesPrompts()
    {
        const QString dir = QString::fromStdString(embedder_);
        const json out = cliJson({"rerank", dir, "--query", "cat", "--passage", "a dog", "--passage", "the mat", "--json"});
        QCOMPARE(out["scorer"].get<std::string>(), std::string("bi-encoder"));
        const json query = cliJson({"embed", dir, "--text", "cat", "--prompt", "query", "--json"});
        const json passages = cliJson({"embed", dir, "--text", "a dog", "--text", "the mat", "--prompt", "passage", "--json"});
        for (const json& entry : out["ranking"]) {
            const std::size_t index = entry["index"];
            const double expected = cosine(query["inputs"][0]["embedding"], passages["inputs"][index]["embedding"]);
            QVERIFY(std::abs(entry["score"].get<double>() - expected) < 1e-6);
        }
    }

    // quantize and keep-float write an embedder that still pools as its source: the module folders
    // and files travel with it, and the copy embeds like the source (cosine ~1 to its own float run).
    void writersKeepTheSentenceTransformersModules()
    {
        const std::string root = makeTempDir("seq-writers");
        const QString fp8 = QString::fromStdString(root + "/fp8"), kept = QString::fromStdString(root + "/kept");
        QCOMPARE(runCli({"quantize", QString::fromStdString(embedder_), fp8, "--weights", "channel", "--activations", "token"})
                     .exitCode, 0);
        const auto quantized = Checkpoint::open(fp8.toStdString());
        QCOMPARE(quantized->config().embedding.pooling, PoolingMode::Mean);
        QVERIFY(quantized->config().embedding.normalize);
        QCOMPARE(quantized->config().embedding.maxSeqLength, int64_t(12));
        QCOMPARE(quantized->config().embedding.prompts.size(), std::size_t(2));
        QVERIFY(quantized->plan().anyQuantized());
        const CliResult keep = runCli({"keep-float", fp8, kept, "--modules", "encoder.layer.0.output.dense", "--reference",
                                       QString::fromStdString(embedder_), "--text", "a cat", "--json"});
        QVERIFY2(keep.exitCode == 0, qPrintable(keep.err));
        const auto copy = Checkpoint::open(kept.toStdString());
        QCOMPARE(copy->config().embedding.pooling, PoolingMode::Mean);
        QVERIFY(QFile::exists(kept + "/1_Pooling/config.json") && QDir(kept + "/2_Normalize").exists());
        QVERIFY(!copy->plan().find("encoder.layer.0.output.dense")->quantized);
        // --force replaces an embedder folder (its module folders are part of a checkpoint).
        QCOMPARE(runCli({"quantize", QString::fromStdString(embedder_), fp8, "--weights", "tensor", "--activations",
                         "token", "--force"}).exitCode, 0);
    }

    // The points after a classifier's pooling ([1, hidden], [1, labels]) are measured over all their
    // values: a reranker's one score, a classifier's three logits, an embedder's pooled vector.
    void compareMeasuresPooledHeadPointsWhole_data()
    {
        QTest::addColumn<QString>("which");
        QTest::newRow("reranker") << "reranker";
        QTest::newRow("classifier") << "classifier";
        QTest::newRow("embedder") << "embedder";
    }
    void compareMeasuresPooledHeadPointsWhole()
    {
        QFETCH(QString, which);
        ComparisonInput input;
        input.text = "the cat";
        input.pair = "a dog sat on the mat";
        if (which == "reranker")
            checkHeadPointsOverAllValues(rerankerFp8_, reranker_, input, 4);
        else if (which == "classifier")
            checkHeadPointsOverAllValues(robertaClassifierFp8_, robertaClassifier_, input, 4);
        else
            checkHeadPointsOverAllValues(embedderFp8_, embedder_, input, 0);
    }

    // A fill-mask compare of one sentence with one mask: the head's points and its logits over
    // every value of the vocabulary.
    void compareMeasuresFillMaskLogitsWhole()
    {
        ComparisonInput input;
        input.text = "the <mask> sat";
        input.fillMask = true;
        checkHeadPointsOverAllValues(xlmrMaskedLmFp8_, xlmrMaskedLm_, input, 4);
    }

    // compare and sensitivity take a pair and measure the final output the head defines.
    void compareAndSensitivityOnAPair()
    {
        const json compared = cliJson({"compare", QString::fromStdString(robertaClassifierFp8_), "--reference",
                                       QString::fromStdString(robertaClassifier_), "--text", "the cat", "--pair",
                                       "a dog", "--json"});
        QVERIFY(compared.dump().find("logits") != std::string::npos);
        const json swept = cliJson({"sensitivity", QString::fromStdString(robertaClassifierFp8_), "--reference",
                                    QString::fromStdString(robertaClassifier_), "--text", "the cat", "--pair", "a dog",
                                    "--json"});
        QVERIFY(swept["entries"].size() >= 12);
        QVERIFY(swept["baseline"].contains("sqnr_db"));
    }

    // evaluate --sts: Spearman x 100 (average ranks) of each side's cosines, recomputed here from
    // embed's own embeddings of the same sentences.
    void evaluateStsFromEmbeddings()
    {
        const std::string dir = makeTempDir("seq-sts");
        const std::vector<std::array<std::string, 3>> rows = {
            {"the cat", "a cat", "4.5"}, {"the dog", "a mat", "1"}, {"Paris is", "the capital", "2"},
            {"a dog sat", "the dog sat", "4.5"}, {"what", "where", "0.5"}};
        std::string tsv = "sentence1\tsentence2\tscore\n";
        for (const auto& row : rows)
            tsv += row[0] + "\t" + row[1] + "\t" + row[2] + "\n";
        writeText(dir + "/sts.tsv", tsv);
        const QString fp8 = QString::fromStdString(embedderFp8_), reference = QString::fromStdString(embedder_);
        const json out = cliJson({"evaluate", fp8, "--reference", reference, "--sts", QString::fromStdString(dir + "/sts.tsv"),
                                  "--json"});
        QStringList args{"embed", fp8, "--reference", reference, "--json"};
        for (const auto& row : rows)
            args << "--text" << QString::fromStdString(row[0]) << "--text" << QString::fromStdString(row[1]);
        const json embedded = cliJson(args);
        std::vector<double> run, ref, gold;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const json& a = embedded["inputs"][2 * i];
            const json& b = embedded["inputs"][2 * i + 1];
            run.push_back(cosine(a["embedding"], b["embedding"]));
            ref.push_back(cosine(a["reference_embedding"], b["reference_embedding"]));
            gold.push_back(std::stod(rows[i][2]));
        }
        auto ranks = [](const std::vector<double>& v) { // average ranks of ties
            std::vector<double> r(v.size());
            for (std::size_t i = 0; i < v.size(); ++i) {
                const double below = double(std::count_if(v.begin(), v.end(), [&](double w) { return w < v[i]; }));
                const double equal = double(std::count(v.begin(), v.end(), v[i]));
                r[i] = below + (equal + 1) / 2;
            }
            return r;
        };
        auto spearman = [&](const std::vector<double>& x, const std::vector<double>& y) {
            const std::vector<double> a = ranks(x), b = ranks(y);
            const double ma = std::accumulate(a.begin(), a.end(), 0.0) / a.size(), mb = std::accumulate(b.begin(), b.end(), 0.0) / b.size();
            double sab = 0, saa = 0, sbb = 0;
            for (std::size_t i = 0; i < a.size(); ++i) {
                sab += (a[i] - ma) * (b[i] - mb);
                saa += (a[i] - ma) * (a[i] - ma);
                sbb += (b[i] - mb) * (b[i] - mb);
            }
            return 100 * sab / std::sqrt(saa * sbb);
        };
        QVERIFY(std::abs(out["spearman"]["run"].get<double>() - spearman(run, gold)) < 1e-6);
        QVERIFY(std::abs(out["spearman"]["reference"].get<double>() - spearman(ref, gold)) < 1e-6);
        QCOMPARE(out["pairs"].get<int>(), 5);
    }

    // evaluate --retrieval: a BEIR folder scored by the embedder with its prompts; nDCG@10, MRR@10
    // and recall@100 recomputed here from rerank's scores of the same query and documents, graded,
    // with the query that has no qrels dropped.
    void evaluateRetrievalFromRerankScores()
    {
        const std::string dir = makeTempDir("seq-beir");
        std::filesystem::create_directories(dir + "/qrels");
        writeText(dir + "/corpus.jsonl", "{\"_id\": \"d1\", \"title\": \"Paris\", \"text\": \"is the capital of France\"}\n"
                                         "{\"_id\": \"d2\", \"title\": \"\", \"text\": \"the cat sat on the mat\"}\n"
                                         "{\"_id\": \"d3\", \"text\": \"a dog\"}\n");
        writeText(dir + "/queries.jsonl", "{\"_id\": \"q1\", \"text\": \"what is the capital of France\"}\n"
                                          "{\"_id\": \"q2\", \"text\": \"where is the cat\"}\n"
                                          "{\"_id\": \"q3\", \"text\": \"unjudged\"}\n");
        writeText(dir + "/qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t1\nq2\td2\t1\n");
        const QString embedder = QString::fromStdString(embedder_);
        const json out = cliJson({"evaluate", embedder, "--retrieval", QString::fromStdString(dir), "--json"});
        QCOMPARE(out["queries"].get<int>(), 2);
        const std::vector<std::string> documents = {"Paris is the capital of France", "the cat sat on the mat", "a dog"};
        const std::vector<std::pair<std::string, std::map<std::size_t, int>>> queries = {
            {"what is the capital of France", {{0, 2}, {2, 1}}}, {"where is the cat", {{1, 1}}}};
        double ndcg = 0, mrr = 0, recall = 0;
        for (const auto& [query, grades] : queries) {
            QStringList args{"rerank", embedder, "--query", QString::fromStdString(query), "--json"};
            for (const std::string& d : documents)
                args << "--passage" << QString::fromStdString(d);
            const json ranked = cliJson(args)["ranking"];
            double dcg = 0, ideal = 0, first = 0, found = 0;
            std::vector<int> sorted;
            for (const auto& [doc, grade] : grades)
                sorted.push_back(grade);
            std::sort(sorted.rbegin(), sorted.rend());
            for (std::size_t rank = 0; rank < ranked.size(); ++rank) {
                const auto it = grades.find(ranked[rank]["index"].get<std::size_t>());
                const int grade = it == grades.end() ? 0 : it->second;
                dcg += grade / std::log2(rank + 2.0);
                if (grade > 0 && first == 0)
                    first = 1.0 / (rank + 1);
                found += grade >= 1 ? 1 : 0;
            }
            for (std::size_t rank = 0; rank < sorted.size(); ++rank)
                ideal += sorted[rank] / std::log2(rank + 2.0);
            ndcg += dcg / ideal / 2;
            mrr += first / 2;
            recall += found / double(grades.size()) / 2;
        }
        QVERIFY(std::abs(out["ndcg_at_10"]["run"].get<double>() - ndcg) < 1e-9);
        QVERIFY(std::abs(out["mrr_at_10"]["run"].get<double>() - mrr) < 1e-9);
        QVERIFY(std::abs(out["recall_at_100"]["run"].get<double>() - recall) < 1e-9);
        QCOMPARE(out["queries_changed"].get<int>(), 0); // a float model against its own dequant
    }

    // evaluate --classification: labels by id2label name; accuracy recomputed from classify's labels.
    void evaluateClassificationFromLabels()
    {
        const std::string dir = makeTempDir("seq-cls-eval");
        const std::vector<std::pair<std::string, std::string>> rows = {
            {"the cat", "negative"}, {"a dog", "positive"}, {"Paris is the capital", "neutral"}, {"what", "positive"}};
        std::string jsonl;
        for (const auto& [text, label] : rows)
            jsonl += json{{"text", text}, {"label", label}}.dump() + "\n";
        writeText(dir + "/cls.jsonl", jsonl);
        const QString fp8 = QString::fromStdString(robertaClassifierFp8_), reference = QString::fromStdString(robertaClassifier_);
        const json out = cliJson({"evaluate", fp8, "--reference", reference, "--classification",
                                  QString::fromStdString(dir + "/cls.jsonl"), "--json"});
        double correct = 0, referenceCorrect = 0, kl = 0;
        int flips = 0;
        for (const auto& [text, label] : rows) {
            const json item = cliJson({"classify", fp8, "--reference", reference, "--text", QString::fromStdString(text),
                                       "--json"})["inputs"][0];
            correct += item["label"] == label ? 1 : 0;
            referenceCorrect += item["reference"]["label"] == label ? 1 : 0;
            flips += item["flip"].get<bool>() ? 1 : 0;
            kl += item["kl"].get<double>();
        }
        QVERIFY(std::abs(out["accuracy"]["run"].get<double>() - correct / 4) < 1e-12);
        QVERIFY(std::abs(out["accuracy"]["reference"].get<double>() - referenceCorrect / 4) < 1e-12);
        QCOMPARE(out["flips"].get<int>(), flips);
        // Each text ran alone here and in one batch there: the GEMMs may sum in another order.
        QVERIFY2(std::abs(out["mean_kl"].get<double>() - kl / 4) <= 1e-3 * kl / 4 + 1e-12,
                 qPrintable(QString("%1 against %2").arg(out["mean_kl"].get<double>(), 0, 'g', 17).arg(kl / 4, 0, 'g', 17)));
    }

    // sensitivity --texts on each sequence head: the rows run as one batch, the sweep's SQNR is that
    // of every row's final output concatenated, and each metrics block reports what the head's user
    // looks at (a reranker's Kendall tau over one query's passages, a classifier's label flips, an
    // embedder's cosines), all recomputed here from the independent forward of each row alone.
    // keep-float reruns and diff measure on a texts file as compare does: the same batch, the same
    // yardstick; the provenance names the file by path, SHA-256 (computed here with Qt) and rows.
    void keepFloatAndDiffTakeATextsFile()
    {
        const std::vector<TextRow> rows = {{"where is the cat", "the cat sat on the mat"}, {"where is the cat", "a dog"},
                                           {"where is the cat", "Paris is the capital"}, {"where is the cat", "the cat"}};
        const std::string path = writeTextsFile(makeTempDir("seq-keep-texts") + "/texts.jsonl", rows);
        const QString fp8 = QString::fromStdString(rerankerFp8_), reference = QString::fromStdString(reranker_);
        const QString fixed = QString::fromStdString(makeTempDir("seq-keep-texts-out") + "/fixed");
        const json kept = cliJson({"keep-float", fp8, fixed, "--modules", "roberta.encoder.layer.0.output.dense",
                                   "--reference", reference, "--texts", QString::fromStdString(path), "--json"});
        auto finalSqnr = [&](const QString& dir) {
            return cliJson({"compare", dir, "--reference", reference, "--texts", QString::fromStdString(path), "--json"})
                ["final"]["logits"]["sqnr_db"].get<double>();
        };
        QVERIFY(std::abs(kept["before"]["sqnr_db"].get<double>() - finalSqnr(fp8)) < 1e-6);
        QVERIFY(std::abs(kept["after"]["sqnr_db"].get<double>() - finalSqnr(fixed)) < 1e-6);
        const json& inputs = kept["provenance"]["measurement"]["inputs"];
        QCOMPARE(inputs["texts"].get<std::string>(), path);
        QCOMPARE(inputs["rows"].get<std::size_t>(), rows.size());
        QFile file(QString::fromStdString(path));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromStdString(inputs["sha256"].get<std::string>()),
                 QString(QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha256).toHex()));
        const CliResult inspected = runCli({"inspect", fixed});
        QVERIFY2(inspected.out.contains(QString::fromStdString("the texts file " + path + " (4 rows)")), qPrintable(inspected.out));

        const json diff = cliJson({"diff", fp8, fixed, "--reference", reference, "--texts", QString::fromStdString(path), "--json"});
        QCOMPARE(diff["metrics"]["input"].get<std::string>(), std::string("texts"));
        QVERIFY(std::abs(diff["metrics"]["final_logits_a"]["sqnr_db"].get<double>() - finalSqnr(fp8)) < 1e-6);
        QVERIFY(std::abs(diff["metrics"]["final_logits_b"]["sqnr_db"].get<double>() - finalSqnr(fixed)) < 1e-6);
    }

    void sensitivitySweepsATextsFile_data()
    {
        QTest::addColumn<QString>("which");
        QTest::newRow("reranker") << "reranker";
        QTest::newRow("classifier") << "classifier";
        QTest::newRow("embedder") << "embedder";
    }
    void sensitivitySweepsATextsFile()
    {
        QFETCH(QString, which);
        const std::string fp8 = which == "reranker" ? rerankerFp8_ : which == "classifier" ? robertaClassifierFp8_ : embedderFp8_;
        const std::string floatDir = which == "reranker" ? reranker_ : which == "classifier" ? robertaClassifier_ : embedder_;
        const std::string output = which == "embedder" ? "pooled" : "logits";
        std::vector<TextRow> rows;
        if (which == "reranker")
            rows = {{"where is the cat", "the cat sat on the mat"}, {"where is the cat", "a dog"},
                    {"where is the cat", "Paris is the capital"}, {"where is the cat", "the cat"},
                    {"where is the cat", "what a mat"}};
        else
            rows = {{"the cat sat", ""}, {"a dog", ""}, {"Paris is the capital", ""}, {"what", ""}};
        if (which == "classifier")
            rows[1].pair = "the mat"; // a pair among single texts
        const std::string path = writeTextsFile(makeTempDir("seq-sens-texts") + "/texts.jsonl", rows);
        const json swept = cliJson({"sensitivity", QString::fromStdString(fp8), "--reference", QString::fromStdString(floatDir),
                                    "--texts", QString::fromStdString(path), "--json"});
        QCOMPARE(swept["input"].get<std::string>(), std::string("texts"));
        QCOMPARE(swept["samples"].get<std::size_t>(), rows.size());
        // The target says what agreement means for this head (final_outputs.h finalOutputsAgree).
        const std::string agreement = which == "reranker"     ? "the order agrees"
                                      : which == "classifier" ? "the labels agree"
                                                              : "the embeddings agree (cosine >= 0.99)";
        QCOMPARE(swept["target"].get<std::string>(), agreement + " with the reference");
        const IndependentRows independent = independentRows(fp8, floatDir, output, rows);
        std::vector<float> run, reference;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            run.insert(run.end(), independent.run[i].begin(), independent.run[i].end());
            reference.insert(reference.end(), independent.reference[i].begin(), independent.reference[i].end());
        }
        const json& baseline = swept["baseline"];
        QVERIFY2(std::abs(baseline["sqnr_db"].get<double>() - sqnrDb(reference, run)) < 0.05,
                 qPrintable(QString("%1 against %2").arg(baseline["sqnr_db"].get<double>()).arg(sqnrDb(reference, run))));
        if (which == "reranker") {
            std::vector<double> runScores, referenceScores;
            for (std::size_t i = 0; i < rows.size(); ++i) {
                runScores.push_back(independent.run[i].at(0));
                referenceScores.push_back(independent.reference[i].at(0));
            }
            QVERIFY(std::abs(baseline["kendall_tau"].get<double>() - kendallTau(runScores, referenceScores)) < 1e-9);
            QVERIFY(baseline.contains("same_order") && !baseline.contains("label_flips"));
        } else if (which == "classifier") {
            std::size_t flips = 0;
            for (std::size_t i = 0; i < rows.size(); ++i)
                flips += argmaxOf(independent.run[i]) != argmaxOf(independent.reference[i]) ? 1 : 0;
            QCOMPARE(baseline["label_flips"].get<std::size_t>(), flips);
            QVERIFY(!baseline.contains("kendall_tau"));
        } else {
            double sum = 0, lowest = 1;
            for (std::size_t i = 0; i < rows.size(); ++i) {
                json a = independent.run[i], b = independent.reference[i];
                sum += cosine(a, b);
                lowest = std::min(lowest, cosine(a, b));
            }
            QVERIFY(std::abs(baseline["mean_cosine"].get<double>() - sum / double(rows.size())) < 1e-5);
            QVERIFY(std::abs(baseline["min_cosine"].get<double>() - lowest) < 1e-5);
        }
        // compare --texts measures the same batch: the final outputs' SQNR and the rows' own measures.
        const json compared = cliJson({"compare", QString::fromStdString(fp8), "--reference", QString::fromStdString(floatDir),
                                       "--texts", QString::fromStdString(path), "--json"})["final"];
        QVERIFY(std::abs(compared["logits"]["sqnr_db"].get<double>() - sqnrDb(reference, run)) < 0.05);
        QCOMPARE(compared["sequence"]["rows"].get<std::size_t>(), rows.size());
        for (const char* key : {"kendall_tau", "label_flips", "mean_cosine"})
            QCOMPARE(compared["sequence"].contains(key), baseline.contains(key));
        for (const json& entry : swept["entries"]) // every entry measures the same things
            QVERIFY(entry["float_one"].contains(which == "reranker" ? "kendall_tau" : which == "classifier" ? "label_flips"
                                                                                                              : "mean_cosine"));
        // A texts file on a head whose task reads no texts file is refused with one sentence naming it.
        const QString error = cliError({"sensitivity", QString::fromStdString(xlmrQaFp8_), "--texts",
                                        QString::fromStdString(path), "--json"});
        QVERIFY2(error.contains("A texts file runs on a sentence embedder, a classifier or a reranker") &&
                     error.contains(QString::fromStdString(xlmrQaFp8_)), qPrintable(error));
    }

    // check --texts on a classifier (with pairs) and an embedder measures the task's final output:
    // its last point's worst SQNR is the lowest per-row SQNR of the logits or the pooled embedding,
    // recomputed here from the independent forward of each row.
    void checkMeasuresTheTaskOutput_data()
    {
        QTest::addColumn<QString>("which");
        QTest::newRow("classifier") << "classifier";
        QTest::newRow("embedder") << "embedder";
    }
    void checkMeasuresTheTaskOutput()
    {
        QFETCH(QString, which);
        const bool classifier = which == "classifier";
        const std::string fp8 = classifier ? robertaClassifierFp8_ : embedderFp8_;
        const std::string floatDir = classifier ? robertaClassifier_ : embedder_;
        std::vector<TextRow> rows = {{"the cat sat", classifier ? "a dog" : ""}, {"Paris is the capital", ""},
                                     {"what a mat", classifier ? "the cat" : ""}};
        const std::string path = writeTextsFile(makeTempDir("seq-check-texts") + "/texts.jsonl", rows);
        const CliResult checked = runCli({"check", QString::fromStdString(fp8), "--reference", QString::fromStdString(floatDir),
                                          "--against", "reference", "--texts", QString::fromStdString(path), "--json"});
        QVERIFY2(!checked.crashed && (checked.exitCode == 0 || checked.exitCode == 1), qPrintable(checked.err));
        const json document = json::parse(checked.out.toStdString());
        QCOMPARE(document["inputs_measured"].get<std::size_t>(), rows.size());
        const IndependentRows independent = independentRows(fp8, floatDir, classifier ? "logits" : "pooled", rows);
        double lowest = INFINITY;
        for (std::size_t i = 0; i < rows.size(); ++i)
            lowest = std::min(lowest, sqnrDb(independent.reference[i], independent.run[i]));
        const json& last = document["twins"][0]["points"].back();
        QCOMPARE(last["point"].get<std::string>(),
                 Checkpoint::open(fp8)->layout().headDefinition().finalPoint);
        QVERIFY2(std::abs(last["worst"]["sqnr_db"].get<double>() - lowest) < 0.05,
                 qPrintable(QString("%1 against %2").arg(last["worst"]["sqnr_db"].get<double>()).arg(lowest)));
    }

    // The cross-encoder scores a corpus in chunks of pairs: with chunks smaller than the corpus (and
    // than one query's documents) the scores are those of one chunk holding every pair.
    void rerankScoresInChunks()
    {
        auto run = EncoderModel::load(rerankerFp8_);
        auto reference = EncoderModel::load(reranker_);
        const std::vector<std::string> queries = {"where is the cat", "what is Paris"};
        const std::vector<std::string> documents = {"the cat sat on the mat", "a dog", "Paris is the capital",
                                                    "the cat", "what a mat"};
        RunPair runs;
        const DocumentScores whole = scoreDocuments(*run, reference.get(), queries, documents, runs, {}, 1000);
        const DocumentScores chunked = scoreDocuments(*run, reference.get(), queries, documents, runs, {}, 3);
        QCOMPARE(chunked.run.size(), queries.size());
        for (std::size_t q = 0; q < queries.size(); ++q) {
            QCOMPARE(chunked.run[q].size(), documents.size());
            for (std::size_t d = 0; d < documents.size(); ++d) {
                QVERIFY(std::abs(chunked.run[q][d] - whole.run[q][d]) <= 1e-5 * (1 + std::abs(whole.run[q][d])));
                QVERIFY(std::abs(chunked.reference[q][d] - whole.reference[q][d]) <=
                        1e-5 * (1 + std::abs(whole.reference[q][d])));
            }
        }
    }

    // The AIU consumer on these checkpoints, by the same family-table fact the AIU runner refuses
    // by: an FP8 embedder (a bare encoder) has no fms model, so the AIU fails it; a classifier whose
    // head is stored FP8 fails (fms builds heads as plain Linears); one whose head is float loads.
    void aiuConsumerOnSequenceHeads()
    {
        auto aiuOf = [](const std::string& dir) {
            const json inspected = cliJson({"inspect", QString::fromStdString(dir), "--json"});
            for (const json& consumer : inspected["consumers"])
                if (consumer["name"] == "aiu")
                    return consumer;
            return json();
        };
        auto codes = [](const json& consumer) {
            std::vector<std::string> out;
            for (const json& finding : consumer["findings"])
                out.push_back(finding["code"]);
            return out;
        };
        const json embedder = aiuOf(embedderFp8_);
        QCOMPARE(embedder["verdict"].get<std::string>(), std::string("fails"));
        QCOMPARE(codes(embedder), std::vector<std::string>{"aiu-no-fms-model"});
        const json quantizedHead = aiuOf(robertaClassifierFp8_);
        QCOMPARE(quantizedHead["verdict"].get<std::string>(), std::string("fails"));
        const std::vector<std::string> headCodes = codes(quantizedHead);
        QVERIFY(std::find(headCodes.begin(), headCodes.end(), "aiu-head-fp8") != headCodes.end());
        const std::vector<std::string> floatHeadCodes = codes(aiuOf(rerankerFp8_));
        QVERIFY(std::find(floatHeadCodes.begin(), floatHeadCodes.end(), "aiu-head-fp8") == floatHeadCodes.end());
        QVERIFY(std::find(floatHeadCodes.begin(), floatHeadCodes.end(), "aiu-no-fms-model") == floatHeadCodes.end());
    }

    // One sentence naming the file or the architecture for each bad input DESIGN lists.
    void badInputIsOneSentence_data()
    {
        QTest::addColumn<QString>("case_");
        QTest::addColumn<QString>("expected");
        QTest::newRow("pooling-no-mode") << "pooling-no-mode" << "1_Pooling/config.json sets no pooling mode";
        QTest::newRow("module-missing") << "module-missing" << "names the Pooling module \"1_Pooling\", but";
        QTest::newRow("labels-disagree") << "labels-disagree" << "\"num_labels\" is 5 but \"id2label\" names 3 labels";
        QTest::newRow("qa-of-classifier") << "qa-of-classifier" << "is RobertaForSequenceClassification.";
        QTest::newRow("fill-mask-of-classifier") << "fill-mask-of-classifier" << "is RobertaForSequenceClassification.";
        QTest::newRow("embed-of-classifier") << "embed-of-classifier" << "is RobertaForSequenceClassification.";
        QTest::newRow("pooling-on-classifier") << "pooling-on-classifier" << "--pooling applies to a sentence embedder";
        QTest::newRow("classify-of-embedder") << "classify-of-embedder" << "Classification needs";
    }
    void badInputIsOneSentence()
    {
        QFETCH(QString, case_);
        QFETCH(QString, expected);
        const QString classifier = QString::fromStdString(robertaClassifier_);
        QString error;
        if (case_ == "pooling-no-mode" || case_ == "module-missing") {
            const std::string dir = makeTempDir("seq-bad") + "/model";
            copyCheckpoint(embedder_, dir);
            if (case_ == "pooling-no-mode")
                writeText(dir + "/1_Pooling/config.json", "{\"word_embedding_dimension\": 32, \"pooling_mode_mean_tokens\": false}");
            else
                std::filesystem::remove_all(dir + "/1_Pooling");
            error = cliError({"embed", QString::fromStdString(dir), "--text", "a", "--json"});
            QVERIFY2(error.contains(QString::fromStdString(dir)), qPrintable(error));
        } else if (case_ == "labels-disagree") {
            const std::string dir = makeTempDir("seq-bad") + "/model";
            copyCheckpoint(robertaClassifier_, dir);
            json config = readJsonFile(dir + "/config.json");
            config["num_labels"] = 5;
            writeText(dir + "/config.json", config.dump());
            error = cliError({"classify", QString::fromStdString(dir), "--text", "a", "--json"});
            QVERIFY2(error.contains(QString::fromStdString(dir + "/config.json")), qPrintable(error));
        } else if (case_ == "qa-of-classifier") {
            error = cliError({"qa", classifier, "--question", "a", "--context", "b", "--json"});
        } else if (case_ == "fill-mask-of-classifier") {
            error = cliError({"fill-mask", classifier, "--text", "a <mask>", "--json"});
        } else if (case_ == "embed-of-classifier") {
            error = cliError({"embed", classifier, "--text", "a", "--json"});
        } else if (case_ == "pooling-on-classifier") {
            error = cliError({"embed", classifier, "--text", "a", "--pooling", "mean", "--json"});
        } else {
            error = cliError({"classify", QString::fromStdString(embedder_), "--text", "a", "--json"});
        }
        QVERIFY2(error.contains(expected), qPrintable(error));
        QCOMPARE(error.count('\n'), 0);
    }
};

QTEST_GUILESS_MAIN(TestSequenceTasks)
#include "test_sequence_tasks.moc"
