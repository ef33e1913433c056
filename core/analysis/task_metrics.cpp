#include "analysis/task_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace scalescope {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();
// log of the smallest normal double: where a run log-probability of -inf is floored, so that KL
// against a probability the run rounded to 0 stays a (large) number.
const double kLogFloor = std::log(std::numeric_limits<double>::min());

void requireSameLength(std::size_t a, std::size_t b, const char* what)
{
    if (a != b)
        throw std::invalid_argument(std::string(what) + ": the two lists differ in length (" + std::to_string(a) +
                                    " and " + std::to_string(b) + ")");
}

bool anyNan(const std::vector<double>& values)
{
    return std::any_of(values.begin(), values.end(), [](double v) { return std::isnan(v); });
}

// Sum of t (t - 1) / 2 over the runs of equal values in sorted (the pairs tied within the list).
double tiedPairs(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    double pairs = 0;
    for (std::size_t i = 0; i < values.size();) {
        std::size_t j = i + 1;
        while (j < values.size() && values[j] == values[i])
            ++j;
        const double run = double(j - i);
        pairs += run * (run - 1) / 2;
        i = j;
    }
    return pairs;
}

int sign(double v)
{
    return (v > 0) - (v < 0);
}

// The grades > 0 of a query, absent documents included, highest first: the ideal ranking's gains.
std::vector<int> idealGains(const QueryQrels& qrels)
{
    std::vector<int> gains;
    for (const auto& [document, grade] : qrels.grades)
        if (grade > 0)
            gains.push_back(grade);
    for (const int grade : qrels.absentDocumentGrades)
        if (grade > 0)
            gains.push_back(grade);
    std::sort(gains.begin(), gains.end(), std::greater<int>());
    return gains;
}

int gradeOf(const QueryQrels& qrels, std::size_t document)
{
    const auto found = qrels.grades.find(document);
    return found == qrels.grades.end() ? 0 : found->second;
}

// The first k of rankingOrder(scores) (all of it when shorter).
std::vector<std::size_t> topK(const std::vector<double>& scores, std::size_t k)
{
    std::vector<std::size_t> order = rankingOrder(scores);
    if (order.size() > k)
        order.resize(k);
    return order;
}

// log(1 + exp(x)) without overflow for large x or loss for very negative x.
double softplus(double x)
{
    if (std::isinf(x))
        return x > 0 ? kInfinity : 0.0;
    return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
}

// log-softmax by log-sum-exp. +inf logits are the limit of a logit growing without bound: they
// share the probability, every finite logit gets none. All -inf is the limit of equal logits.
std::vector<double> logSoftmax(const std::vector<double>& logits)
{
    std::vector<double> out(logits.size(), kNan);
    if (logits.empty() || anyNan(logits))
        return out;
    const double top = *std::max_element(logits.begin(), logits.end());
    if (std::isinf(top)) {
        const auto tops = std::count(logits.begin(), logits.end(), top);
        for (std::size_t i = 0; i < logits.size(); ++i)
            out[i] = logits[i] == top ? -std::log(double(tops)) : -kInfinity;
        return out;
    }
    double sum = 0;
    for (const double logit : logits)
        sum += std::exp(logit - top); // each term <= 1, the top one exactly 1
    const double logSum = top + std::log(sum);
    for (std::size_t i = 0; i < logits.size(); ++i)
        out[i] = logits[i] - logSum;
    return out;
}

// p log(p / q) with log p and log q given; 0 when p is 0 (the limit), q floored at kLogFloor.
double klTerm(double logP, double logQ)
{
    if (logP == -kInfinity)
        return 0.0;
    return std::exp(logP) * (logP - std::max(logQ, kLogFloor));
}

double softmaxKl(const std::vector<double>& reference, const std::vector<double>& run)
{
    const std::vector<double> logP = logSoftmax(reference), logQ = logSoftmax(run);
    double kl = 0;
    for (std::size_t i = 0; i < logP.size(); ++i) {
        if (std::isnan(logP[i]) || std::isnan(logQ[i]))
            return kNan;
        kl += klTerm(logP[i], logQ[i]);
    }
    // Rounding can leave a sum of identical distributions a hair below 0; KL is never negative.
    return std::max(kl, 0.0);
}

// Bernoulli KLs per label; log sigmoid(x) = -softplus(-x), log(1 - sigmoid(x)) = -softplus(x).
double sigmoidKl(const std::vector<double>& reference, const std::vector<double>& run)
{
    double kl = 0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
        const double a = reference[i], b = run[i];
        if (std::isnan(a) || std::isnan(b))
            return kNan;
        kl += klTerm(-softplus(-a), -softplus(-b)) + klTerm(-softplus(a), -softplus(b));
    }
    return std::max(kl, 0.0);
}

} // namespace

std::vector<double> averageRanks(const std::vector<double>& values)
{
    const std::vector<std::size_t> ascending = [&] {
        std::vector<std::size_t> order = rankingOrder(values); // descending, NaN last
        // Ascending with NaN last: reverse the numbers only.
        const auto firstNan = std::find_if(order.begin(), order.end(), [&](std::size_t i) { return std::isnan(values[i]); });
        std::reverse(order.begin(), firstNan);
        return order;
    }();
    std::vector<double> ranks(values.size());
    for (std::size_t i = 0; i < ascending.size();) {
        std::size_t j = i + 1;
        const double v = values[ascending[i]];
        while (j < ascending.size() && (values[ascending[j]] == v || (std::isnan(v) && std::isnan(values[ascending[j]]))))
            ++j;
        // Positions i..j-1 (0-based) hold equal values: ranks i+1..j, whose mean is (i + 1 + j) / 2.
        const double rank = (double(i) + 1 + double(j)) / 2;
        for (std::size_t k = i; k < j; ++k)
            ranks[ascending[k]] = rank;
        i = j;
    }
    return ranks;
}

double pearsonCorrelation(const std::vector<double>& x, const std::vector<double>& y)
{
    requireSameLength(x.size(), y.size(), "pearsonCorrelation");
    const std::size_t n = x.size();
    if (n < 2)
        return kNan;
    // Centred sums (two passes): the one-pass formula cancels catastrophically for large means.
    const double meanX = std::accumulate(x.begin(), x.end(), 0.0) / double(n);
    const double meanY = std::accumulate(y.begin(), y.end(), 0.0) / double(n);
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double dx = x[i] - meanX, dy = y[i] - meanY;
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if (sxx == 0 || syy == 0)
        return kNan;
    // Rounding may carry |r| a hair past 1.
    return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

double spearmanTimes100(const std::vector<double>& x, const std::vector<double>& y)
{
    requireSameLength(x.size(), y.size(), "spearmanTimes100");
    // scipy's default nan_policy "propagate".
    if (anyNan(x) || anyNan(y))
        return kNan;
    return 100.0 * pearsonCorrelation(averageRanks(x), averageRanks(y));
}

double kendallTauB(const std::vector<double>& x, const std::vector<double>& y)
{
    requireSameLength(x.size(), y.size(), "kendallTauB");
    const std::size_t n = x.size();
    if (n < 2 || anyNan(x) || anyNan(y))
        return kNan;
    double balance = 0; // concordant - discordant
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j)
            balance += sign(x[i] - x[j]) * sign(y[i] - y[j]); // 0 for a pair tied in either list
    const double pairs = double(n) * double(n - 1) / 2;
    const double denominator = std::sqrt((pairs - tiedPairs(x)) * (pairs - tiedPairs(y)));
    if (denominator == 0)
        return kNan;
    return std::clamp(balance / denominator, -1.0, 1.0);
}

std::vector<std::size_t> rankingOrder(const std::vector<double>& scores)
{
    std::vector<std::size_t> order(scores.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    // A strict weak order even with NaN: every number before every NaN, then larger first;
    // stable_sort keeps equal scores (and NaNs) in input order.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const bool nanA = std::isnan(scores[a]), nanB = std::isnan(scores[b]);
        if (nanA || nanB)
            return !nanA && nanB;
        return scores[a] > scores[b];
    });
    return order;
}

double ndcgAtK(const std::vector<double>& scores, const QueryQrels& qrels, std::size_t k)
{
    const std::vector<int> ideal = idealGains(qrels);
    double idealDcg = 0;
    for (std::size_t i = 0; i < ideal.size() && i < k; ++i)
        idealDcg += ideal[i] / std::log2(double(i) + 2); // rank i + 1
    if (idealDcg == 0)
        return 0.0;
    const std::vector<std::size_t> top = topK(scores, k);
    double dcg = 0;
    for (std::size_t i = 0; i < top.size(); ++i) {
        const int grade = gradeOf(qrels, top[i]);
        if (grade > 0)
            dcg += grade / std::log2(double(i) + 2);
    }
    return dcg / idealDcg;
}

double reciprocalRankAtK(const std::vector<double>& scores, const QueryQrels& qrels, std::size_t k)
{
    const std::vector<std::size_t> top = topK(scores, k);
    for (std::size_t i = 0; i < top.size(); ++i)
        if (gradeOf(qrels, top[i]) > 0)
            return 1.0 / double(i + 1);
    return 0.0;
}

double recallAtK(const std::vector<double>& scores, const QueryQrels& qrels, std::size_t k)
{
    std::size_t relevant = 0;
    for (const auto& [document, grade] : qrels.grades)
        relevant += grade >= 1;
    for (const int grade : qrels.absentDocumentGrades)
        relevant += grade >= 1;
    if (relevant == 0)
        return 0.0;
    std::size_t found = 0;
    for (const std::size_t document : topK(scores, k))
        found += gradeOf(qrels, document) >= 1;
    return double(found) / double(relevant);
}

bool topKOrderDiffers(const std::vector<double>& run, const std::vector<double>& reference, std::size_t k)
{
    return topK(run, k) != topK(reference, k);
}

RetrievalMetrics retrievalMetrics(const std::vector<std::vector<double>>& scores, const std::vector<QueryQrels>& qrels)
{
    requireSameLength(scores.size(), qrels.size(), "retrievalMetrics");
    RetrievalMetrics metrics;
    metrics.perQuery.resize(scores.size());
    for (std::size_t q = 0; q < scores.size(); ++q) {
        if (!qrels[q].judged())
            continue;
        QueryRetrievalScores query;
        query.ndcgAt10 = ndcgAtK(scores[q], qrels[q], kNdcgCutoff);
        query.mrrAt10 = reciprocalRankAtK(scores[q], qrels[q], kMrrCutoff);
        query.recallAt100 = recallAtK(scores[q], qrels[q], kRecallCutoff);
        metrics.ndcgAt10 += query.ndcgAt10;
        metrics.mrrAt10 += query.mrrAt10;
        metrics.recallAt100 += query.recallAt100;
        metrics.perQuery[q] = query;
        ++metrics.queriesEvaluated;
    }
    const double n = metrics.queriesEvaluated ? double(metrics.queriesEvaluated) : kNan;
    metrics.ndcgAt10 /= n;
    metrics.mrrAt10 /= n;
    metrics.recallAt100 /= n;
    return metrics;
}

std::vector<std::size_t> queriesWithChangedTop10(const std::vector<std::vector<double>>& run,
                                                 const std::vector<std::vector<double>>& reference,
                                                 const std::vector<QueryQrels>& qrels)
{
    requireSameLength(run.size(), reference.size(), "queriesWithChangedTop10");
    requireSameLength(run.size(), qrels.size(), "queriesWithChangedTop10");
    std::vector<std::size_t> changed;
    for (std::size_t q = 0; q < run.size(); ++q)
        if (qrels[q].judged() && topKOrderDiffers(run[q], reference[q], kChangedOrderCutoff))
            changed.push_back(q);
    return changed;
}

std::vector<double> probabilitiesFromLogits(const std::vector<double>& logits, ClassificationProblem type)
{
    std::vector<double> out;
    out.reserve(logits.size());
    switch (type) {
    case ClassificationProblem::Score:
        return logits;
    case ClassificationProblem::MultiLabel:
        for (const double logit : logits)
            out.push_back(std::isnan(logit) ? kNan : std::exp(-softplus(-logit)));
        return out;
    case ClassificationProblem::SingleLabel:
        for (const double logP : logSoftmax(logits))
            out.push_back(std::exp(logP));
        return out;
    }
    return out;
}

std::size_t argmaxLabel(const std::vector<double>& values)
{
    std::size_t best = 0;
    for (std::size_t i = 1; i < values.size(); ++i)
        if (values[i] > values[best] || (std::isnan(values[best]) && !std::isnan(values[i])))
            best = i;
    return best;
}

std::optional<double> klDivergenceFromLogits(const std::vector<double>& referenceLogits,
                                             const std::vector<double>& runLogits, ClassificationProblem type)
{
    requireSameLength(referenceLogits.size(), runLogits.size(), "klDivergenceFromLogits");
    switch (type) {
    case ClassificationProblem::Score: return std::nullopt;
    case ClassificationProblem::MultiLabel: return sigmoidKl(referenceLogits, runLogits);
    case ClassificationProblem::SingleLabel: return softmaxKl(referenceLogits, runLogits);
    }
    return std::nullopt;
}

double accuracy(const std::vector<std::size_t>& predicted, const std::vector<std::size_t>& gold)
{
    requireSameLength(predicted.size(), gold.size(), "accuracy");
    if (predicted.empty())
        return kNan;
    std::size_t correct = 0;
    for (std::size_t i = 0; i < predicted.size(); ++i)
        correct += predicted[i] == gold[i];
    return double(correct) / double(predicted.size());
}

double macroF1(const std::vector<std::size_t>& predicted, const std::vector<std::size_t>& gold)
{
    requireSameLength(predicted.size(), gold.size(), "macroF1");
    if (predicted.empty())
        return kNan;
    struct Counts {
        std::size_t truePositive = 0, falsePositive = 0, falseNegative = 0;
    };
    std::map<std::size_t, Counts> perLabel; // the labels seen in gold or predicted
    for (std::size_t i = 0; i < predicted.size(); ++i) {
        if (predicted[i] == gold[i]) {
            ++perLabel[gold[i]].truePositive;
        } else {
            ++perLabel[predicted[i]].falsePositive;
            ++perLabel[gold[i]].falseNegative;
        }
    }
    double sum = 0;
    for (const auto& [label, c] : perLabel) {
        // A label that occurs has 2 TP + FP + FN > 0, so no 0/0 arises here.
        sum += 2.0 * double(c.truePositive) / double(2 * c.truePositive + c.falsePositive + c.falseNegative);
    }
    return sum / double(perLabel.size());
}

std::size_t countFlips(const std::vector<std::size_t>& runLabels, const std::vector<std::size_t>& referenceLabels)
{
    requireSameLength(runLabels.size(), referenceLabels.size(), "countFlips");
    std::size_t flips = 0;
    for (std::size_t i = 0; i < runLabels.size(); ++i)
        flips += runLabels[i] != referenceLabels[i];
    return flips;
}

ClassificationMetrics classificationMetrics(const std::vector<std::vector<double>>& logits,
                                            const std::vector<std::vector<double>>& referenceLogits,
                                            ClassificationProblem type, const std::vector<std::size_t>& gold)
{
    requireSameLength(logits.size(), referenceLogits.size(), "classificationMetrics");
    if (!gold.empty())
        requireSameLength(logits.size(), gold.size(), "classificationMetrics (gold labels)");
    ClassificationMetrics metrics;
    std::vector<std::size_t> labels, referenceLabels;
    double klSum = 0;
    for (std::size_t i = 0; i < logits.size(); ++i) {
        ClassifiedSides input;
        input.probabilities = probabilitiesFromLogits(logits[i], type);
        input.referenceProbabilities = probabilitiesFromLogits(referenceLogits[i], type);
        input.label = argmaxLabel(logits[i]);
        input.referenceLabel = argmaxLabel(referenceLogits[i]);
        input.flip = input.label != input.referenceLabel;
        input.kl = klDivergenceFromLogits(referenceLogits[i], logits[i], type);
        klSum += input.kl.value_or(0.0);
        labels.push_back(input.label);
        referenceLabels.push_back(input.referenceLabel);
        metrics.inputs.push_back(std::move(input));
    }
    metrics.flips = countFlips(labels, referenceLabels);
    if (type != ClassificationProblem::Score)
        metrics.meanKl = logits.empty() ? kNan : klSum / double(logits.size());
    if (!gold.empty()) {
        metrics.accuracy = accuracy(labels, gold);
        metrics.referenceAccuracy = accuracy(referenceLabels, gold);
        metrics.macroF1 = macroF1(labels, gold);
        metrics.referenceMacroF1 = macroF1(referenceLabels, gold);
    }
    return metrics;
}

} // namespace scalescope
