// Comparison metrics against hand-computed values, the SQuAD answer metric, chart builders, and
// compareRuns on generated checkpoints (per-tensor vs per-channel weights on outlier channels).
#include <QtTest>

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "tasks/compare_runs.h"
#include "analysis/capture_rows.h"
#include "common/error.h"
#include "analysis/squad_metric.h"
#include "common/parallel_chunks.h"
#include "engine/compute_threads.h"
#include "engine/encoder_model.h"
#include "numerics/metrics.h"
#include "report/charts.h"
#include "support/fixtures.h"
#include "support/forwarding_backend.h"

using namespace scalescope;
using namespace scalescope::testing;

namespace {

const CapturePointMetrics& point(const ComparisonResult& result, const std::string& name)
{
    for (const CapturePointMetrics& p : result.points)
        if (p.name == name)
            return p;
    throw std::runtime_error("no point " + name);
}


void verifySameMetrics(const ErrorMetrics& a, const ErrorMetrics& b, const std::string& where)
{
    const auto same = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
    QVERIFY2(same(a.sqnrDb, b.sqnrDb) && same(a.mse, b.mse) && same(a.cosine, b.cosine) && same(a.maxAbsError, b.maxAbsError),
             where.c_str());
}

// Whole pages of the checkpoint's tensors under `prefix` that this process has in memory: the
// present bit of each page in /proc/self/pagemap (this process's page table; the page cache keeps
// released pages, so mincore would still count them).
int64_t residentPages(const Checkpoint& checkpoint, const std::string& prefix)
{
    const std::uintptr_t pageSize = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const int pagemap = ::open("/proc/self/pagemap", O_RDONLY);
    if (pagemap < 0)
        throw std::runtime_error("cannot open /proc/self/pagemap");
    int64_t present = 0;
    for (const TensorView* view : checkpoint.tensors().tensors()) {
        if (view->name.compare(0, prefix.size(), prefix) != 0)
            continue;
        const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(view->data);
        for (std::uintptr_t page = (begin + pageSize - 1) / pageSize; (page + 1) * pageSize <= begin + view->byteSize; ++page) {
            uint64_t entry = 0;
            if (::pread(pagemap, &entry, sizeof entry, static_cast<off_t>(page * sizeof entry)) != sizeof entry) {
                ::close(pagemap);
                throw std::runtime_error("cannot read /proc/self/pagemap");
            }
            present += static_cast<int64_t>(entry >> 63);
        }
    }
    ::close(pagemap);
    return present;
}

} // namespace

class TestComparison : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { setComputeThreads(2); }

    void metricsByHand()
    {
        // x = [1, 2, 3], ref = [1, 2, 4]: error [0, 0, 1].
        const std::vector<float> x = {1, 2, 3}, ref = {1, 2, 4};
        const ErrorMetrics m = computeErrorMetrics(x, ref);
        QCOMPARE(m.count, int64_t(3));
        QVERIFY(std::fabs(m.mse - 1.0 / 3.0) < 1e-12);
        QVERIFY(std::fabs(m.sqnrDb - 10 * std::log10(21.0)) < 1e-9);          // sum ref^2 = 21
        QVERIFY(std::fabs(m.cosine - 17.0 / std::sqrt(14.0 * 21.0)) < 1e-12); // dot 17, |x|^2 14
        QCOMPARE(m.maxAbsError, 1.0);
        QVERIFY(std::fabs(m.relativeL2 - 1.0 / std::sqrt(21.0)) < 1e-12);

        const ErrorMetrics same = computeErrorMetrics(ref, ref);
        QVERIFY(std::isinf(same.sqnrDb) && same.sqnrDb > 0);
        QCOMPARE(same.relativeL2, 0.0);
        QCOMPARE(same.cosine, 1.0);

        const ErrorMetrics opposite = computeErrorMetrics(std::vector<float>{-1, -2}, std::vector<float>{1, 2});
        QVERIFY(std::fabs(opposite.cosine + 1.0) < 1e-12);
        QVERIFY(std::fabs(opposite.relativeL2 - 2.0) < 1e-12);               // |2 ref| / |ref|
        QVERIFY(std::fabs(opposite.sqnrDb - 10 * std::log10(5.0 / 20.0)) < 1e-9);

        // Accumulating in pieces equals one pass.
        ErrorAccumulator pieces;
        pieces.add(x.data(), ref.data(), 1);
        pieces.add(x.data() + 1, ref.data() + 1, 2);
        QCOMPARE(pieces.result().sqnrDb, m.sqnrDb);
    }

    // A long input's block sums are made on the compute threads (common/parallel_chunks.h) and
    // folded in block order: the metrics are the same bit for bit with the engine's threads, with
    // the chunks run backwards one at a time, and on the calling thread alone; and they agree with
    // sums taken here in double over the values.
    void longInputsGiveTheSameMetricsHoweverTheBlocksRun()
    {
        std::mt19937 random(11);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        const std::size_t n = 200003; // 196 blocks of 1024 and a tail that is not a whole lane group
        std::vector<float> ref(n), x(n);
        for (std::size_t i = 0; i < n; ++i) {
            ref[i] = normal(random);
            x[i] = ref[i] + 0.01f * normal(random);
        }
        auto metricsWith = [&](ChunkRunner runner) {
            installChunkRunner(runner);
            ErrorAccumulator accumulator;
            accumulator.add(x.data(), ref.data(), n);
            return accumulator.result();
        };
        setComputeThreads(2); // installs the engine's runner
        const ErrorMetrics threaded = computeErrorMetrics(x, ref);
        const ErrorMetrics backwards = metricsWith([](int64_t count, const ChunkBody& body) {
            for (int64_t chunk = count - 1; chunk >= 0; --chunk)
                body(chunk, chunk + 1);
        });
        const ErrorMetrics alone = metricsWith(nullptr);
        setComputeThreads(2);
        for (const ErrorMetrics& other : {backwards, alone}) {
            QCOMPARE(other.count, threaded.count); // and bit for bit (QCOMPARE on doubles is fuzzy):
            QVERIFY(other.mse == threaded.mse);
            QVERIFY(other.sqnrDb == threaded.sqnrDb);
            QVERIFY(other.cosine == threaded.cosine);
            QVERIFY(other.maxAbsError == threaded.maxAbsError);
            QVERIFY(other.relativeL2 == threaded.relativeL2);
        }
        double ref2 = 0, err2 = 0, maxAbs = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const double e = double(ref[i]) - double(x[i]);
            ref2 += double(ref[i]) * ref[i];
            err2 += e * e;
            maxAbs = std::max(maxAbs, std::fabs(double(float(ref[i] - x[i]))));
        }
        QVERIFY2(std::fabs(threaded.mse / (err2 / double(n)) - 1) < 1e-5, qPrintable(QString::number(threaded.mse)));
        QVERIFY(std::fabs(threaded.sqnrDb - 10 * std::log10(ref2 / err2)) < 1e-4);
        QVERIFY(threaded.maxAbsError == maxAbs);

        // A NaN in the last block, past the threaded blocks' start, still reaches the result.
        x[n - 100] = std::nanf("");
        const ErrorMetrics withNan = computeErrorMetrics(x, ref);
        QVERIFY(std::isnan(withNan.mse));
        QVERIFY(std::isnan(withNan.maxAbsError));
    }

    void klByHand()
    {
        // KL([0.5, 0.5] || [0.25, 0.75]) = 0.5 ln 2 + 0.5 ln(2/3)
        const double expected = 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0);
        QVERIFY(std::fabs(klDivergence({0.5f, 0.5f}, {0.25f, 0.75f}) - expected) < 1e-7);
        QCOMPARE(klDivergence({0.3f, 0.7f}, {0.3f, 0.7f}), 0.0);
    }

    void squadMetric_data()
    {
        QTest::addColumn<QString>("prediction");
        QTest::addColumn<QString>("gold");
        QTest::addColumn<double>("em");
        QTest::addColumn<double>("f1");
        QTest::newRow("articles and case") << "The Eiffel Tower" << "eiffel tower" << 1.0 << 1.0;
        QTest::newRow("punctuation") << "Paris." << "paris" << 1.0 << 1.0;
        // pred {in, 1889}, gold {1889}: precision 1/2, recall 1 -> F1 2/3.
        QTest::newRow("partial overlap") << "in 1889" << "1889" << 0.0 << 2.0 / 3.0;
        QTest::newRow("disjoint") << "London" << "Paris" << 0.0 << 0.0;
        QTest::newRow("both empty (no answer)") << "" << "" << 1.0 << 1.0;
        QTest::newRow("empty prediction") << "" << "Paris" << 0.0 << 0.0;
        QTest::newRow("answer for no-answer") << "Paris" << "" << 0.0 << 0.0;
        // pred {a b c c} -> {b c c}? 'a' is an article: pred {b, c, c}, gold {c, d}: common 1,
        // precision 1/3, recall 1/2 -> F1 0.4.
        QTest::newRow("repeated tokens") << "a b c c" << "c d" << 0.0 << 0.4;
    }
    void squadMetric()
    {
        QFETCH(QString, prediction);
        QFETCH(QString, gold);
        QFETCH(double, em);
        QFETCH(double, f1);
        QCOMPARE(exactMatchScore(prediction.toStdString(), gold.toStdString()), em);
        QVERIFY(std::fabs(f1Score(prediction.toStdString(), gold.toStdString()) - f1) < 1e-12);
    }

    void maxOverGoldAnswers()
    {
        QCOMPARE(maxOverGold(f1Score, "in 1889", {"1889", "in 1889"}), 1.0);
        QCOMPARE(maxOverGold(exactMatchScore, "", {}), 1.0);
    }

    void referenceAgainstItselfIsExact()
    {
        TinyModelSpec spec;
        const std::string dir = makeTempDir("cmp-float");
        writeTinyFloatCheckpoint(dir, spec);
        auto a = EncoderModel::load(dir);
        auto b = EncoderModel::load(dir);
        ComparisonInput input;
        input.question = "where is the cat ?";
        input.context = "the cat sat on the mat";
        const ComparisonResult result = compareRuns(*a, b.get(), input);
        QCOMPARE(result.points.size(), a->capturePoints().size());
        for (const CapturePointMetrics& p : result.points) {
            QVERIFY2(std::isinf(p.metrics.sqnrDb), p.name.c_str());
            QCOMPARE(p.metrics.cosine, 1.0);
        }
        QVERIFY(result.qa && result.qa->sameBestAnswer);
        QCOMPARE(result.qa->answerF1, 1.0);
        QVERIFY(!result.referenceIsStandIn);
    }

    // Which rows of a capture point are real comes from the layout's head steps: token rows up to a
    // pooling step, one row per sequence after it, gathered rows after GatherLogitPositions when
    // positions were given. A token-row request that does not fit the tensor throws, never reads
    // past it.
    void captureRowsFollowTheHeadSteps()
    {
        TinyModelSpec classifierSpec;
        classifierSpec.architecture = "RobertaForSequenceClassification";
        const std::string classifierDir = makeTempDir("cmp-rows-cls");
        writeTinyFloatCheckpoint(classifierDir, classifierSpec);
        const auto classifierModel = EncoderModel::load(classifierDir);
        const EncoderLayout& classifier = classifierModel->checkpoint().layout();
        QCOMPARE(captureRows(classifier, classifier.layerOutput(1), false), CaptureRows::Tokens);
        QCOMPARE(captureRows(classifier, classifier.embeddingsOutput(), false), CaptureRows::Tokens);
        QCOMPARE(captureRows(classifier, "classifier.dense.input", false), CaptureRows::Sequences);
        QCOMPARE(captureRows(classifier, "classifier.out_proj.output", false), CaptureRows::Sequences);

        TinyModelSpec maskedLmSpec;
        maskedLmSpec.architecture = "RobertaForMaskedLM";
        const std::string maskedLmDir = makeTempDir("cmp-rows-mlm");
        writeTinyFloatCheckpoint(maskedLmDir, maskedLmSpec);
        const auto maskedLmModel = EncoderModel::load(maskedLmDir);
        const EncoderLayout& maskedLm = maskedLmModel->checkpoint().layout();
        QCOMPARE(captureRows(maskedLm, "lm_head.decoder.output", false), CaptureRows::Tokens);
        QCOMPARE(captureRows(maskedLm, "lm_head.decoder.output", true), CaptureRows::Gathered);
        QCOMPARE(captureRows(maskedLm, "lm_head.dense.input", true), CaptureRows::Gathered);

        // [2, 3] per-sequence values: the second sequence's row only when the first has no tokens.
        FloatTensor reference;
        reference.shape = {2, 3};
        reference.values = {1, 2, 3, 4, 5, 6};
        const std::vector<float> x = {1, 2, 3, 4, 5, 7};
        const ErrorMetrics both = metricsOverRealRows(CaptureRows::Sequences, reference.shape, x.data(), reference, {8, 4});
        QCOMPARE(both.count, int64_t(6));
        QCOMPARE(both.maxAbsError, 1.0);
        const ErrorMetrics first = metricsOverRealRows(CaptureRows::Sequences, reference.shape, x.data(), reference, {8, 0});
        QCOMPARE(first.count, int64_t(3));
        QCOMPARE(first.maxAbsError, 0.0);
        // Read as token rows, sequence 0's 8 tokens do not fit 3 rows: an internal error, not garbage.
        QVERIFY_THROWS_EXCEPTION(Error, metricsOverRealRows(CaptureRows::Tokens, reference.shape, x.data(), reference, {8, 4}));
        QVERIFY_THROWS_EXCEPTION(Error, metricsOverRealTokens(reference.shape, x.data(), reference, {2, 4}));
    }

    void fp8AgainstReference()
    {
        TinyModelSpec spec;
        const std::string floatDir = makeTempDir("cmp-float");
        writeTinyFloatCheckpoint(floatDir, spec);
        const std::string fp8Dir = makeTempDir("cmp-fp8") + "/m";
        writeTinyFp8Checkpoint(floatDir, fp8Dir, {"channel", "token", "F32"});
        auto run = EncoderModel::load(fp8Dir);
        auto reference = EncoderModel::load(floatDir);
        ComparisonInput input;
        input.inputIds = {{0, 280, 281, 100, 290, 2}, {0, 77, 2}}; // two rows, one padded
        const ComparisonResult result = compareRuns(*run, reference.get(), input);

        // The metric at one point equals an independent computation from two plain forwards.
        ForwardOptions fp8;
        fp8.capture.names = {"roberta.encoder.layer.1.output"};
        ForwardOptions ref = fp8;
        ref.mode = RunMode::Dequant;
        const auto x = run->forward({{input.inputIds[0]}, {}, {}, {}}, fp8).captures.at(0).tensor.values;
        const auto r = reference->forward({{input.inputIds[0]}, {}, {}, {}}, ref).captures.at(0).tensor.values;
        const auto x2 = run->forward({{input.inputIds[1]}, {}, {}, {}}, fp8).captures.at(0).tensor.values;
        const auto r2 = reference->forward({{input.inputIds[1]}, {}, {}, {}}, ref).captures.at(0).tensor.values;
        double signal = 0, noise = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            signal += double(r[i]) * r[i];
            noise += (double(r[i]) - x[i]) * (double(r[i]) - x[i]);
        }
        for (std::size_t i = 0; i < x2.size(); ++i) {
            signal += double(r2[i]) * r2[i];
            noise += (double(r2[i]) - x2[i]) * (double(r2[i]) - x2[i]);
        }
        const double expected = 10 * std::log10(signal / noise);
        const double got = point(result, "roberta.encoder.layer.1.output").metrics.sqnrDb;
        QVERIFY2(std::fabs(got - expected) < 0.05, qPrintable(QString("%1 vs %2").arg(got).arg(expected)));
        QCOMPARE(point(result, "roberta.encoder.layer.1.output").kind, CaptureKind::LayerOutput);
        QCOMPARE(point(result, "roberta.encoder.layer.0.attention.self.query.input").kind, CaptureKind::LinearInput);

        // Every quantized Linear reports activation shares, all real-token elements counted.
        QCOMPARE(result.activations.size(), std::size_t(12));
        QCOMPARE(result.activations[0].elements, int64_t((6 + 3) * spec.hiddenSize));
        QVERIFY(std::isfinite(result.finalLogits.sqnrDb));

        // Without a reference, dequant stands in and the result says so.
        const ComparisonResult standIn = compareRuns(*run, nullptr, input);
        QVERIFY(standIn.referenceIsStandIn);
        QCOMPARE(standIn.referenceLabel, std::string("dequant"));

        // Chart builders: one bar per layer output (embeddings + 2 layers), finite values.
        const ChartData sqnr = layerSqnrChart(result);
        QCOMPARE(sqnr.categories, (std::vector<std::string>{"emb", "L0", "L1"}));
        QCOMPARE(sqnr.series.at(0).y.at(2), got);
        QCOMPARE(linearSqnrChart(result).categories.size(), std::size_t(13)); // 12 encoder + qa_outputs
        QCOMPARE(activationSharesChart(result).series.size(), std::size_t(3));
        // Dynamic per-token scales clip nothing: the row maximum a float step past 448 after the
        // division is rounding, not clipping (|x / s| > 448).
        for (const ActivationStatistics& a : result.activations)
            QCOMPARE(a.clipped, int64_t(0));
        // The amax chart of dynamic scales says that its "range" is the per-token amax itself:
        // 448 x the largest per-token scale is the largest amax, up to rounding.
        const ChartData range = activationScaleChart(result, true);
        QVERIFY(QString::fromStdString(range.title).contains("dynamic per-token amax"));
        QVERIFY(QString::fromStdString(range.series.at(1).name).startsWith("dynamic"));
        for (std::size_t i = 0; i < range.series.at(0).y.size(); ++i)
            QVERIFY(std::fabs(range.series.at(1).y[i] - range.series.at(0).y[i]) <= 1e-5 * range.series.at(0).y[i]);
        QVERIFY(!QString::fromStdString(activationScaleChart(result, false).title).contains("dynamic"));
    }

    // In-process, compare goes a layer at a time (one layer's reference captures held); its result
    // is the one a compare of two whole forwards gives, number for number, in fp8 and fp16 modes,
    // with padding, FP8 attention and a float override in the run.
    void layeredCompareEqualsWholeForwards()
    {
        TinyModelSpec spec;
        const std::string floatDir = makeTempDir("cmp-layered-float");
        writeTinyFloatCheckpoint(floatDir, spec);
        const std::string fp8Dir = makeTempDir("cmp-layered-fp8") + "/m";
        writeTinyFp8Checkpoint(floatDir, fp8Dir, {"channel", "token", "F32"});
        auto run = EncoderModel::load(fp8Dir);
        auto reference = EncoderModel::load(floatDir);
        for (const RunMode mode : {RunMode::Fp8, RunMode::Fp16}) {
            ComparisonInput input;
            input.inputIds = {{0, 280, 281, 100, 290, 2}, {0, 77, 2}};
            input.runs.run.mode = mode;
            input.runs.run.attention = AttentionPrecision::Fp8Aiu;
            input.runs.run.overrides.modules["roberta.encoder.layer.1.intermediate.dense"] = Precision::Float;
            // Forwarding whole (as a runner does), compareRuns keeps every reference capture of one
            // forward instead of going a layer at a time.
            ForwardingBackend wholeRun(*run, false), wholeReference(*reference, false);
            ForwardingBackend layeredRun(*run, true), layeredReference(*reference, true);
            const ComparisonResult layered = compareRuns(layeredRun, &layeredReference, input);
            const ComparisonResult whole = compareRuns(wholeRun, &wholeReference, input);
            QCOMPARE(wholeRun.forwards, 1);
            QCOMPARE(layeredRun.forwards, spec.numLayers + 1); // a layer at a time, the head last
            QCOMPARE(layeredReference.forwards, spec.numLayers + 1);
            QCOMPARE(layered.points.size(), whole.points.size());
            for (std::size_t i = 0; i < whole.points.size(); ++i) {
                QCOMPARE(layered.points[i].name, whole.points[i].name);
                verifySameMetrics(layered.points[i].metrics, whole.points[i].metrics, whole.points[i].name);
            }
            verifySameMetrics(layered.finalLogits, whole.finalLogits, "final logits");
            QCOMPARE(layered.activations.size(), whole.activations.size());
            for (std::size_t i = 0; i < whole.activations.size(); ++i) {
                QCOMPARE(layered.activations[i].module, whole.activations[i].module);
                QCOMPARE(layered.activations[i].clipped, whole.activations[i].clipped);
                QCOMPARE(layered.activations[i].elements, whole.activations[i].elements);
            }
            QCOMPARE(layered.outputRanges.size(), whole.outputRanges.size());
            QCOMPARE(layered.attentionHeadroom.size(), whole.attentionHeadroom.size());
            QCOMPARE(layered.findings.size(), whole.findings.size());
            QCOMPARE(layered.qa.has_value(), whole.qa.has_value());
        }
    }

    void oneShotCompareReleasesMappedWeightsWithSameNumbers()
    {
        for (const char* architecture : {"RobertaForQuestionAnswering", "RobertaForMaskedLM"}) {
            TinyModelSpec spec;
            spec.architecture = architecture;
            spec.hiddenSize = 128; // FFN weights of 64 pages each
            spec.intermediateSize = 512;
            const std::string floatDir = makeTempDir("cmp-oneshot-float");
            writeTinyFloatCheckpoint(floatDir, spec);
            const std::string fp8Dir = makeTempDir("cmp-oneshot-fp8") + "/m";
            writeTinyFp8Checkpoint(floatDir, fp8Dir, {"channel", "token", "F32"});
            auto run = EncoderModel::load(fp8Dir);
            auto reference = EncoderModel::load(floatDir);
            ComparisonInput input;
            input.inputIds = {{0, 280, 281, 100, 290, 2}, {0, 77, 2}};
            // Layer 0's reference weights in memory while the last layer runs (the compare reports
            // step k over [k, k + 1) / (layers + 1)).
            int64_t layer0WhileLastLayerRuns = -1;
            Progress watch;
            watch.callback = [&](double fraction, const std::string&) {
                if (fraction >= double(spec.numLayers - 1) / double(spec.numLayers + 1) &&
                    fraction < double(spec.numLayers) / double(spec.numLayers + 1))
                    layer0WhileLastLayerRuns = residentPages(reference->checkpoint(), "roberta.encoder.layer.0.");
            };
            const ComparisonResult kept = compareRuns(*run, reference.get(), input, watch);
            // The reference's float weights are read in place from the mapping, and stay.
            const std::string layers = "roberta.encoder.layer.";
            QVERIFY(residentPages(reference->checkpoint(), layers) > 0);
            QVERIFY(layer0WhileLastLayerRuns > 0);
            input.oneShot = true;
            const ComparisonResult released = compareRuns(*run, reference.get(), input, watch);
            QCOMPARE(layer0WhileLastLayerRuns, int64_t(0)); // let go of a layer at a time, not at the end
            QCOMPARE(residentPages(reference->checkpoint(), ""), int64_t(0));
            QCOMPARE(residentPages(run->checkpoint(), ""), int64_t(0));
            QCOMPARE(released.points.size(), kept.points.size());
            for (std::size_t i = 0; i < kept.points.size(); ++i) {
                QCOMPARE(released.points[i].name, kept.points[i].name);
                verifySameMetrics(released.points[i].metrics, kept.points[i].metrics, kept.points[i].name);
            }
            verifySameMetrics(released.finalLogits, kept.finalLogits, "final logits");
            QCOMPARE(released.findings.size(), kept.findings.size());
            QCOMPARE(released.activations.size(), kept.activations.size());
            for (std::size_t i = 0; i < kept.activations.size(); ++i)
                QCOMPARE(released.activations[i].clipped, kept.activations[i].clipped);
            // A compare after a one-shot one reads the pages back: the same numbers again.
            input.oneShot = false;
            const ComparisonResult again = compareRuns(*run, reference.get(), input);
            verifySameMetrics(again.finalLogits, kept.finalLogits, "final logits after a one-shot compare");
            QVERIFY(residentPages(reference->checkpoint(), layers) > 0);
        }
    }

    void perTensorLosesAtOutlierLayers()
    {
        TinyModelSpec spec;
        spec.outlierChannels = {3, 17};
        spec.outlierFactor = 30.0f;
        const std::string floatDir = makeTempDir("cmp-outlier");
        writeTinyFloatCheckpoint(floatDir, spec);
        auto reference = EncoderModel::load(floatDir);
        ComparisonInput input;
        input.inputIds = {{0, 280, 281, 100, 290, 77, 45, 2}};
        std::map<std::string, ComparisonResult> results;
        for (const char* weights : {"channel", "tensor"}) {
            const std::string dir = makeTempDir("cmp-outlier-q") + "/m";
            writeTinyFp8Checkpoint(floatDir, dir, {weights, "none", "F32"});
            auto run = EncoderModel::load(dir);
            results[weights] = compareRuns(*run, reference.get(), input);
        }
        // Every encoder Linear reads the outlier channels; per-tensor scales lose at each of them.
        int worse = 0, total = 0;
        for (const CapturePointMetrics& p : results["channel"].points) {
            if (p.kind != CaptureKind::LinearOutput || p.layer < 0)
                continue;
            const double channel = p.metrics.sqnrDb;
            const double tensor = point(results["tensor"], p.name).metrics.sqnrDb;
            qInfo("%-50s channel %6.2f dB  tensor %6.2f dB", p.name.c_str(), channel, tensor);
            worse += tensor < channel;
            ++total;
        }
        QCOMPARE(total, 12);
        QVERIFY2(worse >= 10, qPrintable(QString("per-tensor lower at %1 of %2 Linears").arg(worse).arg(total)));
        const double channelQuery = point(results["channel"], "roberta.encoder.layer.0.attention.self.query.output").metrics.sqnrDb;
        const double tensorQuery = point(results["tensor"], "roberta.encoder.layer.0.attention.self.query.output").metrics.sqnrDb;
        QVERIFY(tensorQuery < channelQuery - 3);
    }
};

QTEST_GUILESS_MAIN(TestComparison)
#include "test_comparison.moc"
