// The head seam: a head is one entry of the family table (model/architecture.h HeadDefinition), and
// the engine, compare and sensitivity ask it what the final outputs are and how two of them compare.
// The proof: a mean-pooled embedding head over a RoBERTa body, registered here and nowhere else,
// runs, is compared and is swept with no change outside its entry. Its pooled output is checked
// against the mean, computed here, of the last layer's output of an independent forward
// (support/reference_forward), and its final SQNR against one computed here from two forwards.
#include <QtTest>

#include <cmath>
#include <fstream>

#include "common/text_files.h"
#include "engine/encoder_model.h"
#include "io/safetensors.h"
#include "model/architecture.h"
#include "support/fixtures.h"
#include "support/reference_forward.h"
#include "tasks/compare_runs.h"
#include "tasks/sensitivity.h"

using namespace scalescope;
using namespace scalescope::testing;
using nlohmann::json;

namespace {

const char* const kClass = "RobertaMeanPooledForTest";

// The test-only head: the mean over real tokens of the last hidden state, as one vector per sequence.
void registerMeanPooledHead()
{
    static const bool registered = [] {
        EncoderFamily family = *findArchitecture("RobertaForQuestionAnswering").family;
        family.name = "roberta-mean-pooled-test";
        family.classes = {{kClass, HeadKind::Embedding, ""}};
        HeadDefinition head;
        head.kind = HeadKind::Embedding;
        head.steps = {{HeadStepKind::PoolMean, ""}};
        head.outputs = {{"pooled", FinalOutputKind::Vector, -1}};
        head.finalPoint = "pooled";
        family.heads = {head};
        registerEncoderFamily(std::move(family));
        return true;
    }();
    Q_UNUSED(registered);
}

// A copy of a RoBERTa QA checkpoint folder as the test head's class, without the QA head's tensors.
void copyAsMeanPooled(const std::string& from, const std::string& to)
{
    const auto store = TensorStore::openDirectory(from);
    std::vector<TensorToWrite> tensors;
    for (const TensorView* view : store->tensors()) {
        if (view->name.rfind("qa_outputs.", 0) == 0)
            continue;
        TensorToWrite tensor;
        tensor.name = view->name;
        tensor.dtype = view->dtype;
        tensor.shape = view->shape;
        tensor.bytes.assign(view->data, view->data + view->byteSize);
        tensors.push_back(std::move(tensor));
    }
    writeSafetensors(joinPath(to, "model.safetensors"), tensors);
    json config = readJsonFile(joinPath(from, "config.json"));
    config["architectures"] = {kClass};
    std::ofstream(joinPath(to, "config.json")) << config.dump(2);
    for (const char* file : {"vocab.json", "merges.txt"}) {
        std::ifstream in(joinPath(from, file), std::ios::binary);
        std::ofstream(joinPath(to, file), std::ios::binary) << in.rdbuf();
    }
}

double sqnrDb(const std::vector<double>& reference, const std::vector<double>& x)
{
    double signal = 0, noise = 0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
        signal += reference[i] * reference[i];
        noise += (reference[i] - x[i]) * (reference[i] - x[i]);
    }
    return noise == 0 ? INFINITY : 10 * std::log10(signal / noise);
}

std::vector<double> asDoubles(const FloatTensor& tensor)
{
    return {tensor.values.begin(), tensor.values.end()};
}

} // namespace

class TestHeadSeam : public QObject {
    Q_OBJECT
    std::string qaFloat_, qaFp8_, pooledFloat_, pooledFp8_;
    // Two rows of different lengths: the shorter is padded, and padding must not enter its mean.
    const std::vector<std::vector<int64_t>> ids_{{0, 5, 6, 7, 8, 9, 10, 2}, {0, 11, 12, 2}};

private slots:
    void initTestCase()
    {
        registerMeanPooledHead();
        qaFloat_ = makeTempDir("head-seam-qa-float");
        qaFp8_ = makeTempDir("head-seam-qa-fp8");
        pooledFloat_ = makeTempDir("head-seam-pooled-float");
        pooledFp8_ = makeTempDir("head-seam-pooled-fp8");
        writeTinyFloatCheckpoint(qaFloat_, {});
        writeTinyFp8Checkpoint(qaFloat_, qaFp8_, {});
        copyAsMeanPooled(qaFloat_, pooledFloat_);
        copyAsMeanPooled(qaFp8_, pooledFp8_);
    }

    // Its shapes are what the runner client expects: one vector per sequence.
    void finalOutputShapesFollowTheEntry()
    {
        auto model = EncoderModel::load(pooledFp8_);
        const auto shapes = model->checkpoint().layout().finalOutputShapes(3, 17, 0);
        QCOMPARE(shapes.size(), std::size_t(1));
        QCOMPARE(shapes[0].first, std::string("pooled"));
        QCOMPARE(shapes[0].second, (std::vector<int64_t>{3, model->config().hiddenSize}));
    }

    // Row by row: the engine's pooled vector against the mean of the independent forward's last
    // layer output (each row alone, so no padding), in fp8 and dequant.
    void pooledOutputIsTheMeanOverRealTokens_data()
    {
        QTest::addColumn<QString>("mode");
        QTest::newRow("fp8") << "fp8";
        QTest::newRow("dequant") << "dequant";
    }
    void pooledOutputIsTheMeanOverRealTokens()
    {
        QFETCH(QString, mode);
        auto model = EncoderModel::load(pooledFp8_);
        EncoderInputs inputs;
        inputs.inputIds = ids_;
        ForwardOptions options;
        QVERIFY(parseRunMode(mode.toStdString(), options.mode));
        const ForwardResult result = model->forward(inputs, options);
        const FloatTensor& pooled = result.output("pooled");
        const std::size_t hidden = std::size_t(model->config().hiddenSize);
        QCOMPARE(pooled.shape, (std::vector<int64_t>{2, int64_t(hidden)}));
        const std::string last = "roberta.encoder.layer." + std::to_string(model->config().numLayers - 1) + ".output";
        for (std::size_t row = 0; row < ids_.size(); ++row) {
            const auto reference = scalescope::testing::referenceForward(qaFp8_, ids_[row], mode.toStdString());
            const scalescope::testing::ReferenceTensor& states = reference.at(last);
            std::vector<double> mean(hidden, 0.0);
            for (std::size_t t = 0; t < ids_[row].size(); ++t)
                for (std::size_t i = 0; i < hidden; ++i)
                    mean[i] += states.values[t * hidden + i] / double(ids_[row].size());
            const std::vector<double> engine(pooled.values.begin() + row * hidden,
                                             pooled.values.begin() + (row + 1) * hidden);
            const double db = sqnrDb(mean, engine);
            QVERIFY2(db >= 60, qPrintable(QString("row %1: %2 dB").arg(row).arg(db)));
        }
    }

    // compare measures the final outputs as the entry says: its SQNR is the pooled vectors' SQNR
    // computed here from the two sides' own forwards, and no QA or fill-mask view appears.
    void compareMeasuresThePooledOutput()
    {
        auto run = EncoderModel::load(pooledFp8_);
        auto reference = EncoderModel::load(pooledFloat_);
        ComparisonInput input;
        input.inputIds = ids_;
        const ComparisonResult compared = compareRuns(*run, reference.get(), input);
        QVERIFY(!compared.qa && !compared.fillMask);

        EncoderInputs inputs;
        inputs.inputIds = ids_;
        ForwardOptions fp8, dequant;
        dequant.mode = RunMode::Dequant;
        const std::vector<double> runPooled = asDoubles(run->forward(inputs, fp8).output("pooled"));
        const std::vector<double> referencePooled = asDoubles(reference->forward(inputs, dequant).output("pooled"));
        const double expected = sqnrDb(referencePooled, runPooled);
        QVERIFY2(std::abs(compared.finalLogits.sqnrDb - expected) < 1e-6,
                 qPrintable(QString("%1 against %2").arg(compared.finalLogits.sqnrDb).arg(expected)));
        QVERIFY(std::isfinite(expected) && expected > 10);
    }

    // sensitivity sweeps it: one entry per quantized Linear, the baseline is compare's number, and
    // every Linear kept float (the float reference's weights) agrees with the reference.
    void sensitivitySweepsThePooledOutput()
    {
        auto run = EncoderModel::load(pooledFp8_);
        auto reference = EncoderModel::load(pooledFloat_);
        SensitivityInput input;
        input.single.inputIds = ids_;
        const SensitivityResult result = runSensitivity(*run, reference.get(), input, SensitivityOptions{});
        QCOMPARE(result.inputKind, std::string("forward"));
        std::size_t quantized = 0;
        for (const LinearInfo& linear : run->linears())
            quantized += linear.quantized ? 1 : 0;
        QCOMPARE(result.entries.size(), quantized);
        QVERIFY(quantized > 0);
        ComparisonInput compared;
        compared.inputIds = ids_;
        QVERIFY(std::abs(result.baseline.sqnrDb - compareRuns(*run, reference.get(), compared).finalLogits.sqnrDb) < 1e-9);
        QVERIFY(result.allFloat.agrees);
        // Every Linear float runs the reference's weights: the reference up to float32 rounding
        // (the GEMM path may group the sums differently), as test_sensitivity holds it.
        QVERIFY2(result.allFloat.sqnrDb > 100, qPrintable(QString::number(result.allFloat.sqnrDb)));
        for (const SensitivityEntry& entry : result.entries)
            QVERIFY2(std::isfinite(entry.floatOne.sqnrDb) && entry.floatOne.sqnrDb > 0, entry.module.c_str());
    }
};

QTEST_GUILESS_MAIN(TestHeadSeam)
#include "test_head_seam.moc"
