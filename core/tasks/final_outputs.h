#pragma once
// The final outputs of a forward as the model's head defines them (model/architecture.h
// HeadDefinition::outputs): the one place that knows how they are cut into rows, measured against
// another run's, and agreed on. Compare, sensitivity, device checks and evaluation ask it instead of
// branching on the head; what a task shows of them (QA answers, fill-mask distributions) builds on
// it in compare_runs. No LibTorch.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/inference_backend.h"
#include "numerics/metrics.h"

namespace scalescope {

// A pooled vector agrees with its reference when their cosine is at least this: a vector has no
// argmax, and 0.99 is where sentence embeddings' nearest neighbours start to move.
constexpr double kVectorAgreementCosine = 0.99;

// One row of one final output, compared as a unit: a sequence's scores over its real positions
// (TokenScores), a sequence's logits at its real positions or one gathered position's
// (TokenLogits), a sequence's vector (Vector), labels (SequenceLogits) or scores (Scores).
struct FinalOutputRow {
    const HeadOutput* output = nullptr;
    std::size_t row = 0;
    const float* run = nullptr;
    const float* reference = nullptr;
    std::size_t values = 0; // the row's real values
    // The width of one distribution or vector in the row: the row's positions (TokenScores), the
    // logits' width (TokenLogits), the vector's (Vector).
    std::size_t width = 0;
};

// Every row of every final output: row by row, the head's outputs in order within a row. lengths:
// each sequence's real tokens. Throws naming the output when the two sides' shapes differ.
void forEachFinalOutputRow(const EncoderLayout& layout, const ForwardResult& run, const ForwardResult& reference,
                           const std::vector<std::size_t>& lengths,
                           const std::function<void(const FinalOutputRow&)>& visit);

// The head's whole output against the reference's: SQNR, cosine, ... over every real value.
ErrorMetrics finalOutputMetrics(const EncoderLayout& layout, const ForwardResult& run, const ForwardResult& reference,
                                const std::vector<std::size_t>& lengths);

// finalOutputsAgree in words, for a sentence about one run: what agrees ("the answer agrees", "the
// labels agree", "the order agrees" for one score per text, "the embeddings agree (cosine >= 0.99)")
// and what one departure is ("a label differs", ...). numLabels: the config's num_labels.
struct AgreementWords {
    std::string agrees;
    std::string differs;
};
AgreementWords agreementWords(const EncoderLayout& layout, int64_t numLabels);

// The two sides agree on every row: the same argmax of every distribution (a QA row's positions, a
// masked LM's vocabulary at each real position, a classifier's labels), the same order of the rows
// for one score per row (a reranker's passages), and a cosine of at least kVectorAgreementCosine
// for every vector.
bool finalOutputsAgree(const EncoderLayout& layout, const ForwardResult& run, const ForwardResult& reference,
                       const std::vector<std::size_t>& lengths);

// What a user of a sequence head looks at over the rows of one batch (every input of a --texts
// file): a classifier's label flips (rows whose largest logit or score differs between the sides),
// an embedder's cosine per row between the run's vector and the reference's (mean and min), and,
// with one score per row (a reranker's (query, passage) pairs), Kendall's tau-b between the two
// sides' scores and whether the rows' ranking is the same. Unset what the head does not have.
struct SequenceOutputAgreement {
    std::size_t rows = 0;
    std::optional<std::size_t> labelFlips;
    std::optional<double> meanCosine, minCosine;
    std::optional<double> kendallTau; // two rows or more
    bool sameOrder = true;
};
// Null for a head without sequence outputs (QA, masked LM).
std::optional<SequenceOutputAgreement> sequenceOutputAgreement(const EncoderLayout& layout, const ForwardResult& run,
                                                               const ForwardResult& reference,
                                                               const std::vector<std::size_t>& lengths);

// No value is NaN or infinite; no output holds one.
bool allFinite(const float* values, std::size_t count);
bool outputsFinite(const ForwardResult& result);

} // namespace scalescope
