// The task metrics (core/analysis/task_metrics.h) against values worked out by hand in the
// comments: rank correlations with ties, BEIR's retrieval metrics with graded relevance and the
// document-order tie rule, and the classification metrics (softmax, sigmoid, regression, KL).
#include <QtTest>

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "analysis/task_metrics.h"

using namespace scalescope;

using Doubles = std::vector<double>;
using Grades = std::map<std::size_t, int>;
Q_DECLARE_METATYPE(Doubles)
Q_DECLARE_METATYPE(Grades)

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

QueryQrels qrelsOf(const Grades& grades, std::vector<int> absent = {})
{
    QueryQrels qrels;
    qrels.grades = grades;
    qrels.absentDocumentGrades = std::move(absent);
    return qrels;
}

// Scores 150, 149, ..., 1: document i ranks i + 1.
Doubles descendingScores(std::size_t count)
{
    Doubles scores;
    for (std::size_t i = 0; i < count; ++i)
        scores.push_back(double(count - i));
    return scores;
}

} // namespace

class TestTaskMetrics : public QObject {
    Q_OBJECT

private slots:
    void averageRanksWithTies()
    {
        // {10, 20, 20, 30}: the 20s share ranks 2 and 3, so each gets 2.5.
        QCOMPARE(averageRanks({10, 20, 20, 30}), (Doubles{1, 2.5, 2.5, 4}));
        // {3, 1, 3, 3}: 1 is rank 1; the three 3s share ranks 2, 3, 4 -> 3.
        QCOMPARE(averageRanks({3, 1, 3, 3}), (Doubles{3, 1, 3, 3}));
        QCOMPARE(averageRanks({}), Doubles{});
    }

    void spearmanWithTies()
    {
        // x = {1, 2, 2, 3} -> ranks {1, 2.5, 2.5, 4}; y = {1, 3, 2, 4} -> ranks {1, 3, 2, 4}.
        // Both rank means are 2.5: dx = {-1.5, 0, 0, 1.5}, dy = {-1.5, 0.5, -0.5, 1.5}.
        // sxy = 2.25 + 2.25 = 4.5, sxx = 4.5, syy = 2.25 + 0.25 + 0.25 + 2.25 = 5.
        // rho = 4.5 / sqrt(4.5 * 5) = sqrt(0.9) = 0.9486832980505138 -> x 100 = 94.86832980505138.
        QVERIFY(std::fabs(spearmanTimes100({1, 2, 2, 3}, {1, 3, 2, 4}) - 94.86832980505138) < 1e-12);
        // Ranks only: any increasing map of y leaves rho unchanged (here cosines against 0-5 gold).
        QVERIFY(std::fabs(spearmanTimes100({1, 2, 2, 3}, {0.1, 0.7, 0.2, 0.99}) - 94.86832980505138) < 1e-12);
        // A perfect inverse order: -100.
        QVERIFY(std::fabs(spearmanTimes100({1, 2, 3, 4, 5}, {9, 7, 5, 3, 1}) + 100.0) < 1e-12);
    }

    void spearmanUndefined()
    {
        // A constant list has no rank variance (scipy returns nan); so does a NaN (nan_policy propagate).
        QVERIFY(std::isnan(spearmanTimes100({1, 1, 1}, {1, 2, 3})));
        QVERIFY(std::isnan(spearmanTimes100({1, kNan, 3}, {1, 2, 3})));
        QVERIFY(std::isnan(spearmanTimes100({1}, {1})));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, spearmanTimes100({1, 2}, {1, 2, 3}));
    }

    void pearsonOnLargeMeans()
    {
        // Centred sums: values around 1e9 with unit spread still give exactly r = 1 (a one-pass
        // sum of squares would lose every digit here).
        QVERIFY(std::fabs(pearsonCorrelation({1e9 + 1, 1e9 + 2, 1e9 + 3}, {2, 4, 6}) - 1.0) < 1e-12);
    }

    void kendallTauB_data()
    {
        QTest::addColumn<Doubles>("x");
        QTest::addColumn<Doubles>("y");
        QTest::addColumn<double>("expected");
        // Pairs of {1,2,2,3} / {1,3,2,4}: (0,1) (0,2) (0,3) (1,3) (2,3) concordant, (1,2) tied in x.
        // tau_b = (5 - 0) / sqrt((6 - 1) (6 - 0)) = 5 / sqrt(30).
        QTest::newRow("tie in x") << Doubles{1, 2, 2, 3} << Doubles{1, 3, 2, 4} << 5 / std::sqrt(30.0);
        // {1,1,2,3} / {1,2,2,1}: (0,1) tied in x, (0,2) concordant, (0,3) tied in y, (1,2) tied in y,
        // (1,3) and (2,3) discordant. Ties: x one pair, y two pairs ({1,1}, {2,2}).
        // tau_b = (1 - 2) / sqrt((6 - 1) (6 - 2)) = -1 / sqrt(20) = -0.22360679774997896.
        QTest::newRow("ties in both") << Doubles{1, 1, 2, 3} << Doubles{1, 2, 2, 1} << -1 / std::sqrt(20.0);
        // A pair tied in both lists: {1,1,2} / {5,5,6}: (0,1) in neither sum, in both tie counts;
        // (0,2), (1,2) concordant. tau_b = 2 / sqrt((3 - 1) (3 - 1)) = 1.
        QTest::newRow("tied in both") << Doubles{1, 1, 2} << Doubles{5, 5, 6} << 1.0;
        // One swap among 4 (no ties): 5 concordant, 1 discordant: (5 - 1) / 6.
        QTest::newRow("one swap") << Doubles{4, 3, 2, 1} << Doubles{4, 2, 3, 1} << 4.0 / 6.0;
    }

    void kendallTauB()
    {
        QFETCH(Doubles, x);
        QFETCH(Doubles, y);
        QFETCH(double, expected);
        QVERIFY2(std::fabs(scalescope::kendallTauB(x, y) - expected) < 1e-15,
                 qPrintable(QString::number(scalescope::kendallTauB(x, y), 'g', 17)));
        // Symmetric in its arguments.
        QVERIFY(std::fabs(scalescope::kendallTauB(y, x) - expected) < 1e-15);
    }

    void kendallTauBUndefined()
    {
        QVERIFY(std::isnan(scalescope::kendallTauB({1, 1, 1}, {1, 2, 3}))); // every pair tied in x
        QVERIFY(std::isnan(scalescope::kendallTauB({1}, {2})));
        QVERIFY(std::isnan(scalescope::kendallTauB({1, kNan}, {1, 2})));
    }

    void rankingOrderTiesAndNan()
    {
        // 0.9 first; the two 0.5s in input order (0 before 3); NaNs last in input order.
        QCOMPARE(rankingOrder({0.5, kNan, 0.9, 0.5, kNan}), (std::vector<std::size_t>{2, 0, 3, 1, 4}));
        QCOMPARE(rankingOrder({1, 1, 1}), (std::vector<std::size_t>{0, 1, 2}));
        QCOMPARE(rankingOrder({-kInf, kInf, 0}), (std::vector<std::size_t>{1, 2, 0}));
        QCOMPARE(rankingOrder({}), std::vector<std::size_t>{});
    }

    void retrievalPerQuery_data()
    {
        QTest::addColumn<Doubles>("scores");
        QTest::addColumn<Grades>("grades");
        QTest::addColumn<double>("ndcg");
        QTest::addColumn<double>("mrr");
        QTest::addColumn<double>("recall");
        // 4 documents, grades doc0 = 2, doc1 = 0, doc2 = 1 (doc3 unjudged). Scores rank them
        // doc1, doc2, doc3, doc0, so the gains by rank are 0, 1, 0, 2.
        // DCG  = 1 / log2(3) + 2 / log2(5) = 0.6309297535714575 + 0.8613531161467861 = 1.4922828697182436
        // IDCG = 2 / log2(2) + 1 / log2(3) = 2 + 0.6309297535714575 = 2.6309297535714575
        // nDCG@10 = 0.5672074169568709. MRR@10: doc2 at rank 2 -> 0.5. Recall@100: 2 of 2.
        QTest::newRow("graded 2,0,1") << Doubles{0.1, 0.9, 0.5, 0.3} << Grades{{0, 2}, {1, 0}, {2, 1}}
                                      << 0.5672074169568709 << 0.5 << 1.0;
        // The first document with grade > 0 at rank 3 (doc0 has grade 0, doc1 is unjudged).
        // MRR = 1/3. nDCG: gains by rank 0, 0, 1, 2 -> DCG = 1/log2(4) + 2/log2(5) = 0.5 +
        // 0.8613531161467861; IDCG = 2 + 1/log2(3) -> 1.3613531161467861 / 2.6309297535714575.
        QTest::newRow("first relevant at rank 3") << Doubles{0.9, 0.8, 0.7, 0.6} << Grades{{0, 0}, {2, 1}, {3, 2}}
                                                  << 1.3613531161467861 / 2.6309297535714575 << 1.0 / 3 << 1.0;
        // Equal scores: the tie goes to document order, so the relevant doc2 is rank 3, not 1.
        // nDCG = (1 / log2(4)) / 1 = 0.5, MRR = 1/3.
        QTest::newRow("ties by document order") << Doubles{0.5, 0.5, 0.5} << Grades{{2, 1}} << 0.5 << 1.0 / 3 << 1.0;
        // The same scores with the relevant document first in the corpus: every metric is 1.
        QTest::newRow("tie won by position") << Doubles{0.5, 0.5, 0.5} << Grades{{0, 1}} << 1.0 << 1.0 << 1.0;
        // A query judged but with no grade > 0: ideal DCG 0 -> nDCG 0 (pytrec_eval), RR 0, recall 0.
        QTest::newRow("all grades 0") << Doubles{0.9, 0.1} << Grades{{0, 0}, {1, 0}} << 0.0 << 0.0 << 0.0;
        // Negative grades (trec_eval's "judged, not relevant" convention) never gain.
        QTest::newRow("negative grade") << Doubles{0.9, 0.1} << Grades{{0, -1}, {1, 1}} << 1 / std::log2(3.0) << 0.5
                                        << 1.0;
        // NaN scores rank last: the relevant doc0 drops behind doc1.
        QTest::newRow("NaN score") << Doubles{kNan, 0.2} << Grades{{0, 1}} << 1 / std::log2(3.0) << 0.5 << 1.0;
    }

    void retrievalPerQuery()
    {
        QFETCH(Doubles, scores);
        QFETCH(Grades, grades);
        QFETCH(double, ndcg);
        QFETCH(double, mrr);
        QFETCH(double, recall);
        const QueryQrels qrels = qrelsOf(grades);
        QVERIFY2(std::fabs(ndcgAtK(scores, qrels, 10) - ndcg) < 1e-15,
                 qPrintable(QString::number(ndcgAtK(scores, qrels, 10), 'g', 17)));
        QVERIFY(std::fabs(reciprocalRankAtK(scores, qrels, 10) - mrr) < 1e-15);
        QVERIFY(std::fabs(recallAtK(scores, qrels, 100) - recall) < 1e-15);
    }

    void cutoffsAt10And100()
    {
        // 150 documents ranked by index. Relevant (grade 1): doc10 (rank 11), doc99 (rank 100),
        // doc100 (rank 101), doc149 (rank 150); doc0 at rank 1 has grade 0.
        const Doubles scores = descendingScores(150);
        QueryQrels qrels = qrelsOf({{0, 0}, {10, 1}, {99, 1}, {100, 1}, {149, 1}});
        // Recall@100: doc10 and doc99 are within the top 100 -> 2 / 4.
        QCOMPARE(recallAtK(scores, qrels, kRecallCutoff), 0.5);
        // MRR@10: the first relevant is at rank 11, past the cutoff -> 0 (it would be 1/11 at 20).
        QCOMPARE(reciprocalRankAtK(scores, qrels, kMrrCutoff), 0.0);
        QCOMPARE(reciprocalRankAtK(scores, qrels, 20), 1.0 / 11);
        // nDCG@10: nothing relevant in the top 10 -> 0, though the ideal is 4 ones.
        QCOMPARE(ndcgAtK(scores, qrels, kNdcgCutoff), 0.0);
        // A relevant qrel whose document is not in the corpus counts in the denominator: 2 / 5.
        qrels.absentDocumentGrades = {1};
        QCOMPARE(recallAtK(scores, qrels, kRecallCutoff), 0.4);
    }

    void idealIncludesAbsentDocuments()
    {
        // doc0 (grade 1) ranked first; an absent document of grade 2 raises the ideal:
        // IDCG = 2 + 1 / log2(3) = 2.6309297535714575, DCG = 1 -> nDCG = 1 / 2.6309297535714575.
        const QueryQrels qrels = qrelsOf({{0, 1}}, {2});
        QVERIFY(std::fabs(ndcgAtK({0.9, 0.1}, qrels, 10) - 1 / 2.6309297535714575) < 1e-15);
        // The ideal is cut at 10 too: 12 documents of grade 1, all retrieved in the top 10 of 12:
        // DCG@10 = IDCG@10 -> 1.
        Grades twelve;
        for (std::size_t i = 0; i < 12; ++i)
            twelve[i] = 1;
        QCOMPARE(ndcgAtK(descendingScores(12), qrelsOf(twelve), 10), 1.0);
    }

    void averagesDropUnjudgedQueries()
    {
        // Query 0: relevant doc first (all metrics 1). Query 1: no qrels at all -> dropped.
        // Query 2: judged, every grade 0 -> counts with 0s. Means over queries 0 and 2: 0.5.
        const std::vector<Doubles> scores = {{0.9, 0.1}, {0.9, 0.1}, {0.9, 0.1}};
        const std::vector<QueryQrels> qrels = {qrelsOf({{0, 1}}), QueryQrels{}, qrelsOf({{0, 0}})};
        const RetrievalMetrics metrics = retrievalMetrics(scores, qrels);
        QCOMPARE(metrics.queriesEvaluated, std::size_t{2});
        QCOMPARE(metrics.ndcgAt10, 0.5);
        QCOMPARE(metrics.mrrAt10, 0.5);
        QCOMPARE(metrics.recallAt100, 0.5);
        QVERIFY(metrics.perQuery[0].has_value() && !metrics.perQuery[1].has_value() && metrics.perQuery[2].has_value());
        QCOMPARE(metrics.perQuery[2]->ndcgAt10, 0.0);
        // Nothing judged: the means are undefined.
        const RetrievalMetrics none = retrievalMetrics({{1.0}}, {QueryQrels{}});
        QCOMPARE(none.queriesEvaluated, std::size_t{0});
        QVERIFY(std::isnan(none.ndcgAt10));
    }

    void changedTop10()
    {
        const Doubles reference = descendingScores(12);
        Doubles swappedInside = reference;
        std::swap(swappedInside[3], swappedInside[4]); // ranks 4 and 5 trade places
        Doubles swappedOutside = reference;
        std::swap(swappedOutside[10], swappedOutside[11]); // ranks 11 and 12: the top 10 is the same
        Doubles tiedAway = reference;
        tiedAway[4] = tiedAway[3]; // doc4 ties doc3 and loses the tie by position: order unchanged
        QVERIFY(topKOrderDiffers(swappedInside, reference, 10));
        QVERIFY(!topKOrderDiffers(swappedOutside, reference, 10));
        QVERIFY(!topKOrderDiffers(tiedAway, reference, 10));
        // Query 3 changes but has no qrels: not counted.
        const std::vector<Doubles> run = {swappedInside, swappedOutside, tiedAway, swappedInside};
        const std::vector<Doubles> references(4, reference);
        const std::vector<QueryQrels> qrels = {qrelsOf({{0, 1}}), qrelsOf({{0, 1}}), qrelsOf({{0, 1}}), QueryQrels{}};
        QCOMPARE(queriesWithChangedTop10(run, references, qrels), std::vector<std::size_t>{0});
    }

    void softmaxProbabilities()
    {
        // logits {log 2, log 1, log 1} -> exp: {2, 1, 1} / 4 = {0.5, 0.25, 0.25}.
        const Doubles p = probabilitiesFromLogits({std::log(2.0), 0.0, 0.0}, ClassificationProblem::SingleLabel);
        QVERIFY(std::fabs(p[0] - 0.5) < 1e-15 && std::fabs(p[1] - 0.25) < 1e-15 && std::fabs(p[2] - 0.25) < 1e-15);
        // Logits of 1000 overflow exp(); log-sum-exp does not: {1000, 1000 - log 3} -> {3, 1} / 4.
        const Doubles big = probabilitiesFromLogits({1000.0, 1000.0 - std::log(3.0)}, ClassificationProblem::SingleLabel);
        QVERIFY(std::fabs(big[0] - 0.75) < 1e-12 && std::fabs(big[1] - 0.25) < 1e-12);
        // +inf logits share the mass; a NaN makes every value NaN.
        QCOMPARE(probabilitiesFromLogits({kInf, 1.0, kInf}, ClassificationProblem::SingleLabel), (Doubles{0.5, 0.0, 0.5}));
        QVERIFY(std::isnan(probabilitiesFromLogits({kNan, 1.0}, ClassificationProblem::SingleLabel)[1]));
    }

    void sigmoidAndRegression()
    {
        // sigmoid(0) = 0.5, sigmoid(log 3) = 3 / (3 + 1) = 0.75, sigmoid(-log 3) = 0.25; each label on
        // its own (they need not sum to 1).
        const Doubles p = probabilitiesFromLogits({0.0, std::log(3.0), -std::log(3.0)}, ClassificationProblem::MultiLabel);
        QVERIFY(std::fabs(p[0] - 0.5) < 1e-15 && std::fabs(p[1] - 0.75) < 1e-15 && std::fabs(p[2] - 0.25) < 1e-15);
        // Far past exp()'s range: 1 and 0, not NaN.
        QCOMPARE(probabilitiesFromLogits({800.0, -800.0}, ClassificationProblem::MultiLabel), (Doubles{1.0, 0.0}));
        // Regression (num_labels 1, a reranker): the raw logit is the score.
        QCOMPARE(probabilitiesFromLogits({-3.25}, ClassificationProblem::Score), Doubles{-3.25});
    }

    void argmax()
    {
        QCOMPARE(argmaxLabel({0.1, 0.7, 0.7}), std::size_t{1}); // the first of equals
        QCOMPARE(argmaxLabel({kNan, 0.2, 0.1}), std::size_t{1});
        QCOMPARE(argmaxLabel({kNan, kNan}), std::size_t{0});
        QCOMPARE(argmaxLabel({}), std::size_t{0});
    }

    void klSoftmax()
    {
        // Reference softmax {0.5, 0.25, 0.25}, run {0.25, 0.5, 0.25}:
        // KL = 0.5 ln(0.5 / 0.25) + 0.25 ln(0.25 / 0.5) + 0.25 ln 1 = 0.5 ln 2 - 0.25 ln 2
        //    = 0.25 ln 2 = 0.17328679513998632.
        const Doubles reference = {std::log(2.0), 0.0, 0.0};
        const Doubles run = {0.0, std::log(2.0), 0.0};
        QVERIFY(std::fabs(*klDivergenceFromLogits(reference, run, ClassificationProblem::SingleLabel) - 0.17328679513998632) < 1e-15);
        // Softmax ignores a shift of all logits: the same KL from run + 7.
        const Doubles shifted = {7.0, 7.0 + std::log(2.0), 7.0};
        QVERIFY(std::fabs(*klDivergenceFromLogits(reference, shifted, ClassificationProblem::SingleLabel) - 0.17328679513998632) < 1e-14);
        // Identical sides: exactly 0, never a rounding hair below.
        QCOMPARE(*klDivergenceFromLogits(reference, reference, ClassificationProblem::SingleLabel), 0.0);
        // A run probability that underflows to 0 (logit gap 2000): large but finite. Reference
        // p = {1/2, 1/2}; run log q = {0, -2000}, the second floored at log(DBL_MIN) =
        // -1022 ln 2 = -708.3964185322641, so
        // KL = 0.5 (ln 0.5 - 0) + 0.5 (ln 0.5 + 708.3964185322641) = ln 0.5 + 354.19820926613205
        //    = 353.50506208557211.
        const std::optional<double> floored = klDivergenceFromLogits({0.0, 0.0}, {0.0, -2000.0}, ClassificationProblem::SingleLabel);
        QVERIFY(floored && std::fabs(*floored - 353.50506208557211) < 1e-9);
    }

    void klMultiLabel()
    {
        // Reference sigmoids p = {0.5, 0.75} (logits 0, log 3), run q = {0.75, 0.5} (log 3, 0).
        // Label 0: 0.5 ln(0.5/0.75) + 0.5 ln(0.5/0.25) = 0.5 ln(4/3).
        // Label 1: 0.75 ln(0.75/0.5) + 0.25 ln(0.25/0.5) = 0.75 ln 3 - ln 2.
        // Sum: ln 2 - 0.5 ln 3 + 0.75 ln 3 - ln 2 = 0.25 ln 3 = 0.27465307216702745.
        const std::optional<double> kl =
            klDivergenceFromLogits({0.0, std::log(3.0)}, {std::log(3.0), 0.0}, ClassificationProblem::MultiLabel);
        QVERIFY(kl && std::fabs(*kl - 0.27465307216702745) < 1e-15);
        QVERIFY(std::isnan(*klDivergenceFromLogits({kNan}, {0.0}, ClassificationProblem::MultiLabel)));
    }

    void klRegressionIsAbsent()
    {
        // A raw score is no distribution: no KL (0 would claim the sides agree).
        QVERIFY(!klDivergenceFromLogits({1.0}, {2.0}, ClassificationProblem::Score).has_value());
    }

    void accuracyAndMacroF1()
    {
        // gold {0,0,1,1,2}, predicted {0,1,1,1,0}: 3 of 5 right -> accuracy 0.6.
        // Label 0: TP 1 (row 0), FP 1 (row 4), FN 1 (row 1) -> F1 = 2 / (2 + 1 + 1) = 0.5.
        // Label 1: TP 2 (rows 2, 3), FP 1 (row 1), FN 0 -> 4 / 5 = 0.8.
        // Label 2: TP 0, FN 1 (row 4) -> 0. Macro: (0.5 + 0.8 + 0) / 3 = 0.43333333333333335.
        const std::vector<std::size_t> gold = {0, 0, 1, 1, 2}, predicted = {0, 1, 1, 1, 0};
        QCOMPARE(accuracy(predicted, gold), 0.6);
        QVERIFY(std::fabs(macroF1(predicted, gold) - 1.3 / 3) < 1e-15);
        // A label absent from both lists does not count (scikit-learn's labels = seen ones).
        QCOMPARE(macroF1({5, 5}, {5, 5}), 1.0);
        QVERIFY(std::isnan(accuracy({}, {})));
        QCOMPARE(countFlips({0, 1, 2}, {0, 2, 2}), std::size_t{1});
    }

    void classificationOverInputs()
    {
        // Input 0: run {log 2, 0, 0} -> label 0; reference {0, log 2, 0} -> label 1: a flip,
        // KL(reference || run) = 0.25 ln 2 (the klSoftmax case with the sides exchanged, which is
        // symmetric here). Input 1: both sides label 2, identical -> KL 0.
        // Gold {1, 2}: run accuracy 1/2, reference 2/2. meanKl = 0.25 ln 2 / 2.
        const std::vector<Doubles> run = {{std::log(2.0), 0.0, 0.0}, {0.0, 0.0, 1.0}};
        const std::vector<Doubles> reference = {{0.0, std::log(2.0), 0.0}, {0.0, 0.0, 1.0}};
        const ClassificationMetrics metrics = classificationMetrics(run, reference, ClassificationProblem::SingleLabel, {1, 2});
        QCOMPARE(metrics.flips, std::size_t{1});
        QVERIFY(metrics.inputs[0].flip && !metrics.inputs[1].flip);
        QCOMPARE(metrics.inputs[0].label, std::size_t{0});
        QCOMPARE(metrics.inputs[0].referenceLabel, std::size_t{1});
        QVERIFY(std::fabs(*metrics.inputs[0].kl - 0.17328679513998632) < 1e-15);
        QVERIFY(std::fabs(*metrics.meanKl - 0.17328679513998632 / 2) < 1e-15);
        QCOMPARE(*metrics.accuracy, 0.5);
        QCOMPARE(*metrics.referenceAccuracy, 1.0);
        // Without gold labels: only the comparison of the sides.
        const ClassificationMetrics unlabelled = classificationMetrics(run, reference, ClassificationProblem::SingleLabel);
        QVERIFY(!unlabelled.accuracy && !unlabelled.macroF1);
        // Regression: label 0 on both sides, no KL at all.
        const ClassificationMetrics scores = classificationMetrics({{1.5}}, {{-2.0}}, ClassificationProblem::Score);
        QCOMPARE(scores.flips, std::size_t{0});
        QVERIFY(!scores.meanKl && !scores.inputs[0].kl);
        QCOMPARE(scores.inputs[0].probabilities, Doubles{1.5});
    }
};

QTEST_GUILESS_MAIN(TestTaskMetrics)
#include "test_task_metrics.moc"
