#pragma once
// Extractive question answering around an encoder: windowing of long contexts and the n-best
// post-processing of start/end logits into answers with character offsets into the context.
// Follows the usual SQuAD recipe: windows of maxSeqLen tokens, consecutive windows overlapping by
// docStride context tokens; per window the nBest highest start and end logits form candidate
// spans that lie inside the context, end >= start, at most maxAnswerLen tokens; a span's score is
// start_logit + end_logit; the null answer's score is the lowest start[0] + end[0] over windows.
// Pure functions, no model: the model call is the caller's (see answerQuestion in engine code).
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace scalescope {

struct QaOptions {
    int maxSeqLen = 384;
    int docStride = 128;     // context tokens shared by consecutive windows
    int maxAnswerLen = 30;   // tokens
    int nBest = 20;          // start/end candidates per window
    int topK = 1;            // answers returned
    // SQuAD 2.0: when set, the null answer competes: it wins when
    // null_score - best_span_score > nullThreshold. When unset, only spans are returned.
    std::optional<float> nullThreshold;
};

struct QaWindow {
    Encoding encoding;          // the tokenizer's pair: question, then the context slice
    int contextTokenBegin = 0;  // index in encoding.ids of the first context token
    int contextTokenEnd = 0;    // one past the last context token
};

struct QaAnswer {
    std::string text;           // the context substring [start, end)
    float score = 0;            // softmax probability over the candidate spans (and null)
    int start = 0;              // code-point offsets into the context
    int end = 0;
    float startLogit = 0;
    float endLogit = 0;
    int window = -1;            // window the span came from; -1 for the null answer
    bool isNull = false;
    // SQuAD 2.0, when the null answer competed (QaOptions::nullThreshold set): the question's null
    // score minus its best span's score, the number compared with the threshold (+inf without a
    // span); the same on every answer of the question. NaN when the null answer did not compete.
    float nullMargin = std::numeric_limits<float>::quiet_NaN();
};

// The prediction an answer stands for: its text, or "" for the null answer (SQuAD 2.0).
std::string predictionText(const QaAnswer& answer);
// Whether two best answers agree: the same prediction after SQuAD's answer normalisation, which is
// what exact match counts as equal (two null answers agree). The one definition used by compare,
// evaluate, the Ask panel and reports.
bool answersAgree(const QaAnswer& a, const QaAnswer& b);

// Checks the options: the one check behind qa, compare, evaluate and the workbench. Throws
// OptionError naming the option. `specialTokensInPair` comes from the model's layout;
// `modelMaxTokens` is the longest input the model takes (0: not checked).
void validateQaOptions(const QaOptions& options, int specialTokensInPair, int64_t modelMaxTokens = 0);
// After buildQaWindows: a window longer than the model takes is the option's doing, so this throws
// validateQaOptions' OptionError naming --max-seq-len rather than let the forward say "the input has
// N tokens". Windows only as long as the text needs pass, so a short text runs with the default
// maximum on a model shorter than it (qa, compare, sensitivity and diff on 128-token models).
void requireWindowsFit(const std::vector<QaWindow>& windows, const QaOptions& options, int specialTokensInPair,
                       int64_t modelMaxTokens);

// Splits the context into windows. Throws scalescope::Error when the question alone does not fit
// (leaves no room for context) or the options are invalid.
std::vector<QaWindow> buildQaWindows(const Tokenizer& tokenizer, const std::string& question,
                                     const std::string& context, const QaOptions& options);

// startLogits[w] / endLogits[w] hold one logit per token of windows[w].
// Returns up to topK answers, best first; when the null answer wins it comes first.
std::vector<QaAnswer> postprocessQa(const std::vector<QaWindow>& windows,
                                    const std::vector<std::vector<float>>& startLogits,
                                    const std::vector<std::vector<float>>& endLogits,
                                    const std::string& context, const QaOptions& options);

} // namespace scalescope
