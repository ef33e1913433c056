#include "tasks/fill_mask.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"
#include "common/option_error.h"

namespace scalescope {

std::vector<float> softmax(const float* logits, std::size_t n)
{
    std::vector<float> out(n);
    if (n == 0)
        return out;
    const double maxLogit = *std::max_element(logits, logits + n);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i)
        sum += std::exp(double(logits[i]) - maxLogit);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<float>(std::exp(double(logits[i]) - maxLogit) / sum);
    return out;
}

void requireMaskedLm(const InferenceBackend& model)
{
    if (!model.checkpoint().layout().isMaskedLm())
        throw Error(wrongHeadSentence("Fill-mask needs", HeadKind::MaskedLM, model.checkpoint().directory(),
                                      model.config().architecture));
}

std::vector<MaskPrediction> withTokenTexts(const Tokenizer& tokenizer, const std::vector<std::pair<int64_t, float>>& ranked)
{
    std::vector<MaskPrediction> predictions;
    predictions.reserve(ranked.size());
    for (const auto& [id, probability] : ranked)
        predictions.push_back({id, tokenizer.tokenText(id), probability});
    return predictions;
}

FillMaskResult runFillMask(InferenceBackend& model, const std::string& text, const RunSettings& run, int topK,
                           const Progress& progress)
{
    requireMaskedLm(model);
    if (topK < 1)
        throw OptionError(TaskOption::TopK, "{option} must be at least 1 (got " + std::to_string(topK) + ").");
    const Tokenizer& tokenizer = model.checkpoint().tokenizer();

    FillMaskResult result;
    result.encoding = tokenizer.encode(text);
    EncoderInputs inputs;
    inputs.addSequence(result.encoding);
    for (std::size_t i = 0; i < result.encoding.ids.size(); ++i) {
        if (result.encoding.ids[i] == tokenizer.maskId()) {
            result.maskPositions.push_back(static_cast<int>(i));
            inputs.logitPositions.emplace_back(0, static_cast<int>(i));
        }
    }
    if (result.maskPositions.empty())
        throw Error("The text has no " + tokenizer.maskToken() + " token to fill.");

    ForwardResult forward = model.forward(inputs, forwardOptions(run), progress);
    const FloatTensor& logits = forward.outputs.at(0).tensor; // [masks, vocab]
    const std::size_t vocab = static_cast<std::size_t>(logits.shape.back());
    const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(topK), vocab);
    for (std::size_t m = 0; m < result.maskPositions.size(); ++m) {
        const float* maskLogits = logits.values.data() + m * vocab;
        result.nonFiniteLogits.push_back(
            std::count_if(maskLogits, maskLogits + vocab, [](float v) { return !std::isfinite(v); }));
        std::vector<float> probabilities = softmax(maskLogits, vocab);
        std::vector<int64_t> order(vocab);
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                          [&](int64_t a, int64_t b) {
                              // NaN ranks last: compared as it is, it breaks the order sorting needs.
                              const float pa = std::isnan(probabilities[static_cast<std::size_t>(a)]) ? -INFINITY : probabilities[static_cast<std::size_t>(a)];
                              const float pb = std::isnan(probabilities[static_cast<std::size_t>(b)]) ? -INFINITY : probabilities[static_cast<std::size_t>(b)];
                              return pa != pb ? pa > pb : a < b;
                          });
        std::vector<MaskPrediction> predictions;
        for (std::size_t i = 0; i < k; ++i)
            predictions.push_back({order[i], tokenizer.tokenText(order[i]), probabilities[static_cast<std::size_t>(order[i])]});
        result.predictions.push_back(std::move(predictions));
        result.distributions.push_back(std::move(probabilities));
    }
    result.elapsedMs = forward.elapsedMs;
    result.nonFinite = std::move(forward.nonFinite);
    // A checkpoint rewritten in place during the forward gives numbers from a half-replaced file.
    model.checkpoint().tensors().checkUnchanged();
    return result;
}

} // namespace scalescope
