// Fill-mask: probabilities at each mask token (RoBERTa's <mask>, BERT's [MASK]) equal the softmax of
// the independent reference's logits, predictions are ordered, and bad requests give clear errors.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"
#include "engine/compute_threads.h"
#include "engine/encoder_model.h"
#include "support/fixtures.h"
#include "support/reference_forward.h"
#include "tasks/fill_mask.h"

using namespace scalescope;
using namespace scalescope::testing;

class TestFillMask : public QObject {
    Q_OBJECT
    std::string floatDir_;
    std::string fp8Dir_;
    std::string bertFp8Dir_;

private slots:
    void initTestCase()
    {
        setComputeThreads(2);
        TinyModelSpec spec;
        spec.architecture = "RobertaForMaskedLM";
        floatDir_ = makeTempDir("mlm");
        writeTinyFloatCheckpoint(floatDir_, spec);
        fp8Dir_ = makeTempDir("mlm-fp8") + "/model";
        writeTinyFp8Checkpoint(floatDir_, fp8Dir_, {"channel", "token", "F32"});
        TinyModelSpec bert;
        bert.architecture = "BertForMaskedLM";
        const std::string bertFloat = makeTempDir("bert-mlm");
        writeTinyFloatCheckpoint(bertFloat, bert);
        bertFp8Dir_ = makeTempDir("bert-mlm-fp8") + "/model";
        writeTinyFp8Checkpoint(bertFloat, bertFp8Dir_, {"channel", "token", "F32"});
    }

    void probabilitiesMatchReference_data()
    {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<bool>("bert");
        QTest::addColumn<QString>("text");
        QTest::newRow("fp8") << "fp8" << false << "the cat <mask> on the <mask>";
        QTest::newRow("dequant") << "dequant" << false << "the cat <mask> on the <mask>";
        QTest::newRow("bert fp8") << "fp8" << true << "The cat [MASK] on the [MASK]";
        QTest::newRow("bert dequant") << "dequant" << true << "The cat [MASK] on the [MASK]";
    }
    void probabilitiesMatchReference()
    {
        QFETCH(QString, mode);
        QFETCH(bool, bert);
        QFETCH(QString, text);
        const std::string dir = bert ? bertFp8Dir_ : fp8Dir_;
        auto model = EncoderModel::load(dir);
        const RunMode runMode = mode == "fp8" ? RunMode::Fp8 : RunMode::Dequant;
        const FillMaskResult result = runFillMask(*model, text.toStdString(), RunSettings{runMode}, 5);
        const Tokenizer& tokenizer = model->checkpoint().tokenizer();
        QCOMPARE(result.encoding.ids.front(), tokenizer.clsId());
        QCOMPARE(result.encoding.ids.back(), tokenizer.sepId());
        QCOMPARE(result.encoding.ids[static_cast<std::size_t>(result.maskPositions.at(0))], tokenizer.maskId());
        QCOMPARE(result.maskPositions.size(), std::size_t(2));
        QCOMPARE(result.predictions.size(), std::size_t(2));

        const auto reference = referenceForward(dir, result.encoding.ids, mode.toStdString());
        const auto& logits = reference.at("logits"); // [1, seq, vocab]
        const std::size_t vocab = static_cast<std::size_t>(logits.shape.back());
        for (std::size_t m = 0; m < result.maskPositions.size(); ++m) {
            const float* row = logits.values.data() + std::size_t(result.maskPositions[m]) * vocab;
            // Softmax computed here, independently, in double.
            const double maxLogit = *std::max_element(row, row + vocab);
            double sum = 0;
            for (std::size_t v = 0; v < vocab; ++v)
                sum += std::exp(double(row[v]) - maxLogit);
            const auto& predictions = result.predictions[m];
            QCOMPARE(predictions.size(), std::size_t(5));
            for (std::size_t i = 0; i < predictions.size(); ++i) {
                const double expected = std::exp(double(row[predictions[i].tokenId]) - maxLogit) / sum;
                QVERIFY2(std::fabs(predictions[i].probability - expected) < 1e-4,
                         qPrintable(QString("p=%1 expected %2").arg(predictions[i].probability).arg(expected)));
                if (i > 0)
                    QVERIFY(predictions[i - 1].probability >= predictions[i].probability);
                QCOMPARE(predictions[i].token, model->checkpoint().tokenizer().tokenText(predictions[i].tokenId));
            }
            // The top prediction is the reference's argmax.
            QCOMPARE(predictions[0].tokenId, int64_t(std::max_element(row, row + vocab) - row));
            const double total = std::accumulate(result.distributions[m].begin(), result.distributions[m].end(), 0.0);
            QVERIFY(std::fabs(total - 1.0) < 1e-4);
        }
    }

    void refusesBadRequests()
    {
        auto model = EncoderModel::load(fp8Dir_);
        QVERIFY_THROWS_EXCEPTION(Error, runFillMask(*model, "no mask here", RunSettings{RunMode::Fp8}, 5));
        // A BERT checkpoint takes [MASK]; RoBERTa's spelling is plain text to it, and the error says
        // which token it wants.
        auto bert = EncoderModel::load(bertFp8Dir_);
        try {
            runFillMask(*bert, "the <mask>", RunSettings{RunMode::Fp8}, 5);
            QFAIL("no error");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("[MASK]"), e.what());
        }
        QVERIFY_THROWS_EXCEPTION(Error, runFillMask(*model, "the <mask>", RunSettings{RunMode::Fp8}, 0));
        TinyModelSpec qaSpec;
        const std::string qaDir = makeTempDir("qa");
        writeTinyFloatCheckpoint(qaDir, qaSpec);
        auto qa = EncoderModel::load(qaDir);
        try {
            runFillMask(*qa, "the <mask>", RunSettings{RunMode::Fp8}, 5);
            QFAIL("no error");
        } catch (const Error& e) {
            QVERIFY(QString(e.what()).contains("RobertaForMaskedLM"));
        }
    }
};

QTEST_GUILESS_MAIN(TestFillMask)
#include "test_fill_mask.moc"
