#include "tasks/final_outputs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "analysis/task_metrics.h"
#include "common/error.h"
#include "numerics/metrics.h"

namespace scalescope {
namespace {

// Index of the largest value among n, NaN never wins.
std::size_t argmax(const float* values, std::size_t n)
{
    std::size_t best = 0;
    for (std::size_t i = 1; i < n; ++i)
        if (values[i] > values[best] || std::isnan(values[best]))
            best = i;
    return best;
}

bool rowAgrees(const FinalOutputRow& row)
{
    if (row.output->kind == FinalOutputKind::Vector)
        return computeErrorMetrics(row.run, row.reference, row.values).cosine >= kVectorAgreementCosine;
    if (row.output->kind == FinalOutputKind::Scores && row.values == 1)
        return true; // one score per row (a reranker): agreement is the rows' order, below
    for (std::size_t at = 0; at + row.width <= row.values && row.width > 0; at += row.width)
        if (argmax(row.run + at, row.width) != argmax(row.reference + at, row.width))
            return false;
    return true;
}

} // namespace

void forEachFinalOutputRow(const EncoderLayout& layout, const ForwardResult& run, const ForwardResult& reference,
                           const std::vector<std::size_t>& lengths,
                           const std::function<void(const FinalOutputRow&)>& visit)
{
    struct Side {
        const HeadOutput* output;
        const FloatTensor* run;
        const FloatTensor* reference;
    };
    std::vector<Side> sides;
    std::size_t rows = 0;
    for (const HeadOutput& output : layout.headDefinition().outputs) {
        const FloatTensor& r = run.output(output.name);
        const FloatTensor& t = reference.output(output.name);
        if (r.shape != t.shape || r.shape.size() < 2 || r.values.size() != t.values.size())
            throw Error("The two runs' " + output.name + " outputs differ in shape.");
        rows = std::max(rows, static_cast<std::size_t>(r.shape[0]));
        sides.push_back({&output, &r, &t});
    }
    for (std::size_t row = 0; row < rows; ++row)
        for (const Side& side : sides) {
            const std::vector<int64_t>& shape = side.run->shape;
            if (row >= static_cast<std::size_t>(shape[0]))
                continue;
            // A sequence with no real token (another input's row in a batch that a device check
            // shares between inputs) has no vector, labels or score of its own to measure.
            const bool perSequence = side.output->kind == FinalOutputKind::Vector ||
                                     side.output->kind == FinalOutputKind::SequenceLogits ||
                                     side.output->kind == FinalOutputKind::Scores;
            if (perSequence && row < lengths.size() && lengths[row] == 0)
                continue;
            const std::size_t rowSize = side.run->values.size() / static_cast<std::size_t>(shape[0]);
            FinalOutputRow view{side.output, row, side.run->values.data() + row * rowSize,
                                side.reference->values.data() + row * rowSize, rowSize, rowSize};
            const bool perToken = side.output->kind == FinalOutputKind::TokenScores ||
                                  (side.output->kind == FinalOutputKind::TokenLogits && shape.size() == 3);
            if (perToken) { // [batch, seq] or [batch, seq, width]: the row's real tokens only
                const std::size_t seq = static_cast<std::size_t>(shape[1]);
                const std::size_t real = std::min(row < lengths.size() ? lengths[row] : seq, seq);
                view.width = shape.size() == 3 ? static_cast<std::size_t>(shape[2]) : real;
                view.values = shape.size() == 3 ? real * view.width : real;
            }
            visit(view);
        }
}

ErrorMetrics finalOutputMetrics(const EncoderLayout& layout, const ForwardResult& run, const ForwardResult& reference,
                                const std::vector<std::size_t>& lengths)
{
    ErrorAccumulator all;
    forEachFinalOutputRow(layout, run, reference, lengths,
                          [&](const FinalOutputRow& row) { all.add(row.run, row.reference, row.values); });
    return all.result();
}

AgreementWords agreementWords(const EncoderLayout& layout, int64_t numLabels)
{
    switch (layout.head()) {
    case HeadKind::QuestionAnswering: return {"the answer agrees", "the answer differs"};
    case HeadKind::MaskedLM: return {"the top tokens agree", "a top token differs"};
    case HeadKind::Embedding: {
        std::ostringstream threshold;
        threshold << kVectorAgreementCosine; // "0.99"
        const std::string cosine = "cosine >= " + threshold.str();
        return {"the embeddings agree (" + cosine + ")", "an embedding differs (not " + cosine + ")"};
    }
    case HeadKind::SequenceClassification:
        if (numLabels == 1)
            return {"the order agrees", "the order differs"};
        return {"the labels agree", "a label differs"};
    }
    return {"the outputs agree", "an output differs"};
}

bool finalOutputsAgree(const EncoderLayout& layout, const ForwardResult& run, const ForwardResult& reference,
                       const std::vector<std::size_t>& lengths)
{
    bool agrees = true;
    // One score per row (a cross-encoder's relevance of each pair of a batch): the rows' ranking,
    // best first with ties by position, must be the same on both sides.
    std::map<const HeadOutput*, std::pair<std::vector<double>, std::vector<double>>> singleScores;
    forEachFinalOutputRow(layout, run, reference, lengths, [&](const FinalOutputRow& row) {
        agrees = agrees && rowAgrees(row);
        if (row.output->kind == FinalOutputKind::Scores && row.values == 1) {
            singleScores[row.output].first.push_back(row.run[0]);
            singleScores[row.output].second.push_back(row.reference[0]);
        }
    });
    for (const auto& [output, scores] : singleScores)
        agrees = agrees && rankingOrder(scores.first) == rankingOrder(scores.second);
    return agrees;
}

std::optional<SequenceOutputAgreement> sequenceOutputAgreement(const EncoderLayout& layout, const ForwardResult& run,
                                                               const ForwardResult& reference,
                                                               const std::vector<std::size_t>& lengths)
{
    const HeadKind head = layout.head();
    if (head != HeadKind::Embedding && head != HeadKind::SequenceClassification)
        return std::nullopt;
    SequenceOutputAgreement agreement;
    std::vector<double> cosines, runScores, referenceScores;
    std::size_t flips = 0;
    bool labelled = false;
    forEachFinalOutputRow(layout, run, reference, lengths, [&](const FinalOutputRow& row) {
        ++agreement.rows;
        if (row.output->kind == FinalOutputKind::Vector) {
            cosines.push_back(computeErrorMetrics(row.run, row.reference, row.values).cosine);
        } else if (row.values == 1) {
            runScores.push_back(row.run[0]);
            referenceScores.push_back(row.reference[0]);
        } else {
            labelled = true;
            flips += argmax(row.run, row.values) != argmax(row.reference, row.values) ? 1 : 0;
        }
    });
    if (labelled)
        agreement.labelFlips = flips;
    if (!cosines.empty()) {
        double sum = 0;
        for (double c : cosines)
            sum += c;
        agreement.meanCosine = sum / double(cosines.size());
        agreement.minCosine = *std::min_element(cosines.begin(), cosines.end());
    }
    if (!runScores.empty()) {
        agreement.sameOrder = rankingOrder(runScores) == rankingOrder(referenceScores);
        if (runScores.size() >= 2)
            agreement.kendallTau = kendallTauB(runScores, referenceScores);
    }
    return agreement;
}

bool allFinite(const float* values, std::size_t count)
{
    for (std::size_t i = 0; i < count; ++i)
        if (!std::isfinite(values[i]))
            return false;
    return true;
}

bool outputsFinite(const ForwardResult& result)
{
    for (const NamedTensor& output : result.outputs)
        if (!allFinite(output.tensor.values.data(), output.tensor.values.size()))
            return false;
    return true;
}

} // namespace scalescope
