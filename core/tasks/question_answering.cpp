#include "tasks/question_answering.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>

#include "analysis/squad_metric.h"
#include "common/error.h"
#include "common/option_error.h"
#include "text/bpe_tokenizer.h" // byteOffsetOfCodePoint

namespace scalescope {
namespace {

constexpr int kMinMaxSeqLen = 8;

void validatePostprocessOptions(const QaOptions& options) {
    if (options.maxAnswerLen < 1)
        throw OptionError(TaskOption::MaxAnswerLen,
                          "{option} must be at least 1 token (got " + std::to_string(options.maxAnswerLen) + ").");
    if (options.nBest < 1)
        throw OptionError(TaskOption::NBest, "{option} must be at least 1 (got " + std::to_string(options.nBest) + ").");
    if (options.topK < 1)
        throw OptionError(TaskOption::TopK, "{option} must be at least 1 (got " + std::to_string(options.topK) + ").");
    if (options.nullThreshold && !std::isfinite(*options.nullThreshold))
        throw OptionError(TaskOption::NullThreshold, "{option} must be a finite number.");
}

// Tokens [begin, end) of a token-level encoding.
Encoding sliceOf(const Encoding& encoding, int begin, int end) {
    Encoding slice;
    slice.ids.assign(encoding.ids.begin() + begin, encoding.ids.begin() + end);
    slice.offsets.assign(encoding.offsets.begin() + begin, encoding.offsets.begin() + end);
    slice.sequenceIds.assign(encoding.sequenceIds.begin() + begin, encoding.sequenceIds.begin() + end);
    return slice;
}

// Indices of the `count` largest logits, largest first; equal logits keep the lower index first
// so that results do not depend on the sort implementation.
std::vector<int> topIndices(const std::vector<float>& logits, int count) {
    std::vector<int> indices(logits.size());
    std::iota(indices.begin(), indices.end(), 0);
    const auto kept = std::min<std::size_t>(static_cast<std::size_t>(count), indices.size());
    std::partial_sort(indices.begin(), indices.begin() + static_cast<std::ptrdiff_t>(kept), indices.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    indices.resize(kept);
    return indices;
}

void validateLogits(const std::vector<QaWindow>& windows, const std::vector<std::vector<float>>& logits,
                    const char* name) {
    if (logits.size() != windows.size())
        throw Error(std::string("Question answering got ") + name + " for " + std::to_string(logits.size()) +
                    " windows but the input has " + std::to_string(windows.size()) + " windows.");
    for (std::size_t w = 0; w < windows.size(); ++w) {
        const auto expected = windows[w].encoding.ids.size();
        if (logits[w].size() != expected)
            throw Error(std::string("The ") + name + " of window " + std::to_string(w) + " have " +
                        std::to_string(logits[w].size()) + " values but the window has " + std::to_string(expected) +
                        " tokens.");
        for (std::size_t t = 0; t < logits[w].size(); ++t)
            if (!std::isfinite(logits[w][t]))
                throw Error(std::string("The ") + name + " of window " + std::to_string(w) +
                            " are not finite at token " + std::to_string(t) + ".");
    }
}

void validateWindow(const QaWindow& window, std::size_t index) {
    const auto& encoding = window.encoding;
    if (encoding.offsets.size() != encoding.ids.size() || encoding.sequenceIds.size() != encoding.ids.size())
        throw Error("Question-answering window " + std::to_string(index) +
                    " has ids, offsets and sequence ids of different lengths.");
}

struct SpanCandidate {
    int start = 0; // code points into the context
    int end = 0;
    float score = 0;
    float startLogit = 0;
    float endLogit = 0;
    int window = 0;
};

std::string contextSubstring(const std::string& context, int startCodePoint, int endCodePoint) {
    const auto begin = byteOffsetOfCodePoint(context, startCodePoint);
    const auto end = byteOffsetOfCodePoint(context, endCodePoint);
    return end > begin ? context.substr(begin, end - begin) : std::string();
}

// The null answer's logits: those of the window least sure there is no answer.
struct NullLogits {
    bool have = false;
    float start = 0;
    float end = 0;
    float score() const { return start + end; }
};

using SpansByCharSpan = std::map<std::pair<int, int>, SpanCandidate>;

// Every window's candidate spans (the n best starts by the n best ends that lie in the context and
// cover characters), keyed by their character span, and the null answer's logits.
SpansByCharSpan collectSpans(const std::vector<QaWindow>& windows, const std::vector<std::vector<float>>& startLogits,
                             const std::vector<std::vector<float>>& endLogits, const QaOptions& options,
                             NullLogits& null) {
    // Overlapping windows see the same context span; the answer keeps its best-scoring sighting.
    SpansByCharSpan bestByCharSpan;
    for (std::size_t w = 0; w < windows.size(); ++w) {
        const Encoding& encoding = windows[w].encoding;
        const auto& starts = startLogits[w];
        const auto& ends = endLogits[w];
        if (encoding.ids.empty())
            continue;

        // The lowest null score over windows: the window most confident that an answer exists
        // decides how strongly the null answer competes.
        const float windowNullScore = starts[0] + ends[0];
        if (!null.have || windowNullScore < null.start + null.end) {
            null.have = true;
            null.start = starts[0];
            null.end = ends[0];
        }

        const std::vector<int> startCandidates = topIndices(starts, options.nBest);
        const std::vector<int> endCandidates = topIndices(ends, options.nBest);
        for (int s : startCandidates) {
            if (encoding.sequenceIds[s] != 1)
                continue;
            for (int e : endCandidates) {
                if (encoding.sequenceIds[e] != 1 || e < s || e - s + 1 > options.maxAnswerLen)
                    continue;
                const int charStart = encoding.offsets[s].first;
                const int charEnd = encoding.offsets[e].second;
                // A span that covers no characters (whitespace-only tokens) would read as the
                // null answer; it is not a span answer.
                if (charEnd <= charStart)
                    continue;
                SpanCandidate candidate{charStart, charEnd, starts[s] + ends[e], starts[s], ends[e], static_cast<int>(w)};
                auto [it, inserted] = bestByCharSpan.emplace(std::make_pair(charStart, charEnd), candidate);
                if (!inserted && candidate.score > it->second.score)
                    it->second = candidate;
            }
        }
    }
    return bestByCharSpan;
}

// The `nBest` best spans, best first.
std::vector<SpanCandidate> rankSpans(const SpansByCharSpan& bestByCharSpan, int nBest) {
    std::vector<SpanCandidate> spans;
    spans.reserve(bestByCharSpan.size());
    for (const auto& entry : bestByCharSpan)
        spans.push_back(entry.second);
    // Ties by position keep the order independent of the map and sort implementations.
    std::sort(spans.begin(), spans.end(), [](const SpanCandidate& a, const SpanCandidate& b) {
        if (a.score != b.score)
            return a.score > b.score;
        if (a.start != b.start)
            return a.start < b.start;
        return a.end < b.end;
    });
    if (spans.size() > static_cast<std::size_t>(nBest))
        spans.resize(static_cast<std::size_t>(nBest));
    return spans;
}

// The answers: the null answer first when it competes and wins, then the spans, each scored by a
// softmax over the spans (and the null answer when it competes), at most `topK`.
std::vector<QaAnswer> scoreAnswers(const std::vector<SpanCandidate>& spans, const NullLogits& null,
                                   const std::string& context, const QaOptions& options) {
    const bool nullCompetes = options.nullThreshold.has_value() && null.have;
    if (spans.empty() && !nullCompetes)
        return {};

    const float nullScore = null.score();
    float maxScore = spans.empty() ? nullScore : spans.front().score;
    if (nullCompetes)
        maxScore = std::max(maxScore, nullScore);
    double denominator = 0;
    for (const auto& span : spans)
        denominator += std::exp(static_cast<double>(span.score) - maxScore);
    if (nullCompetes)
        denominator += std::exp(static_cast<double>(nullScore) - maxScore);

    std::vector<QaAnswer> answers;
    answers.reserve(spans.size() + 1);
    const float nullMargin = !nullCompetes ? std::numeric_limits<float>::quiet_NaN()
        : spans.empty()                    ? std::numeric_limits<float>::infinity()
                                           : nullScore - spans.front().score;
    const bool nullWins = nullCompetes && nullMargin > *options.nullThreshold;
    if (nullWins) {
        QaAnswer answer;
        answer.score = static_cast<float>(std::exp(static_cast<double>(nullScore) - maxScore) / denominator);
        answer.startLogit = null.start;
        answer.endLogit = null.end;
        answer.window = -1;
        answer.isNull = true;
        answer.nullMargin = nullMargin;
        answers.push_back(std::move(answer));
    }
    for (const auto& span : spans) {
        QaAnswer answer;
        answer.text = contextSubstring(context, span.start, span.end);
        answer.score = static_cast<float>(std::exp(static_cast<double>(span.score) - maxScore) / denominator);
        answer.start = span.start;
        answer.end = span.end;
        answer.startLogit = span.startLogit;
        answer.endLogit = span.endLogit;
        answer.window = span.window;
        answer.nullMargin = nullMargin;
        answers.push_back(std::move(answer));
    }
    if (answers.size() > static_cast<std::size_t>(options.topK))
        answers.resize(static_cast<std::size_t>(options.topK));
    return answers;
}

} // namespace

void validateQaOptions(const QaOptions& options, int specialTokensInPair, int64_t modelMaxTokens) {
    if (modelMaxTokens > 0 && options.maxSeqLen > modelMaxTokens)
        throw OptionError(TaskOption::MaxSeqLen, "{option} " + std::to_string(options.maxSeqLen) + " is longer than the " +
                                                     std::to_string(modelMaxTokens) +
                                                     " tokens the model takes; use " +
                                                     std::to_string(modelMaxTokens) + " or less.");
    const int shortest = std::max(kMinMaxSeqLen, specialTokensInPair + 2);
    if (options.maxSeqLen < shortest)
        throw OptionError(TaskOption::MaxSeqLen, "{option} must be at least " + std::to_string(shortest) +
                                                     " tokens (got " + std::to_string(options.maxSeqLen) + ").");
    // Every window needs a question token, the specials and more context than the stride.
    const int widestStride = options.maxSeqLen - specialTokensInPair - 2;
    if (options.docStride < 0 || options.docStride > widestStride)
        throw OptionError(TaskOption::DocStride, "{option} must be from 0 to " + std::to_string(widestStride) +
                                                     " tokens with a maximum sequence length of " +
                                                     std::to_string(options.maxSeqLen) + " (got " +
                                                     std::to_string(options.docStride) + ").");
    validatePostprocessOptions(options);
}

void requireWindowsFit(const std::vector<QaWindow>& windows, const QaOptions& options, int specialTokensInPair,
                       int64_t modelMaxTokens)
{
    std::size_t longest = 0;
    for (const QaWindow& window : windows)
        longest = std::max(longest, window.encoding.ids.size());
    if (static_cast<int64_t>(longest) > modelMaxTokens)
        validateQaOptions(options, specialTokensInPair, modelMaxTokens);
}

std::vector<QaWindow> buildQaWindows(const Tokenizer& tokenizer, const std::string& question,
                                     const std::string& context, const QaOptions& options) {
    validateQaOptions(options, tokenizer.specialTokensInPair());

    const Encoding questionTokens = tokenizer.encodeText(question);
    const Encoding contextTokens = tokenizer.encodeText(context);
    const int questionLength = static_cast<int>(questionTokens.ids.size());
    const int contextLength = static_cast<int>(contextTokens.ids.size());

    // The specials the tokenizer puts around a question/context pair (RoBERTa 4, BERT 3).
    const int contextRoom = options.maxSeqLen - questionLength - tokenizer.specialTokensInPair();
    if (contextRoom < 1)
        throw OptionError(TaskOption::MaxSeqLen, "The question is too long for {option} " +
                                                     std::to_string(options.maxSeqLen) + ": it has " +
                                                     std::to_string(questionLength) +
                                                     " tokens and leaves no room for the context.");
    if (options.docStride >= contextRoom)
        throw OptionError(TaskOption::DocStride, "{option} " + std::to_string(options.docStride) +
                                                     " must be smaller than the " + std::to_string(contextRoom) +
                                                     " context tokens that fit in one window of " +
                                                     std::to_string(options.maxSeqLen) + " tokens with this question.");

    std::vector<QaWindow> windows;
    int sliceBegin = 0;
    while (true) {
        const int sliceEnd = std::min(sliceBegin + contextRoom, contextLength);

        QaWindow window;
        window.encoding = tokenizer.assemblePair(questionTokens, sliceOf(contextTokens, sliceBegin, sliceEnd));
        // Every family closes the pair with one separator after the context.
        window.contextTokenEnd = static_cast<int>(window.encoding.ids.size()) - 1;
        window.contextTokenBegin = window.contextTokenEnd - (sliceEnd - sliceBegin);

        windows.push_back(std::move(window));
        if (sliceEnd >= contextLength)
            break;
        // docStride < contextRoom was checked above, so every step advances.
        sliceBegin += contextRoom - options.docStride;
    }
    return windows;
}

std::vector<QaAnswer> postprocessQa(const std::vector<QaWindow>& windows,
                                    const std::vector<std::vector<float>>& startLogits,
                                    const std::vector<std::vector<float>>& endLogits,
                                    const std::string& context, const QaOptions& options) {
    validatePostprocessOptions(options);
    for (std::size_t w = 0; w < windows.size(); ++w)
        validateWindow(windows[w], w);
    validateLogits(windows, startLogits, "start logits");
    validateLogits(windows, endLogits, "end logits");

    NullLogits null;
    const auto bestByCharSpan = collectSpans(windows, startLogits, endLogits, options, null);
    const std::vector<SpanCandidate> spans = rankSpans(bestByCharSpan, options.nBest);
    return scoreAnswers(spans, null, context, options);
}

std::string predictionText(const QaAnswer& answer)
{
    return answer.isNull ? std::string() : answer.text;
}

bool answersAgree(const QaAnswer& a, const QaAnswer& b)
{
    return normalizeAnswer(predictionText(a)) == normalizeAnswer(predictionText(b));
}

} // namespace scalescope
