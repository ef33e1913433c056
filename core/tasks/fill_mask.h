#pragma once
// Fill-mask on a masked LM (RoBERTa, BERT): the top-k tokens and their probabilities at every mask
// token (the tokenizer's, e.g. [MASK]).
#include <cstdint>
#include <string>
#include <vector>

#include "model/inference_backend.h"
#include "model/run_settings.h"

namespace scalescope {

struct MaskPrediction {
    int64_t tokenId = 0;
    std::string token;      // decoded text of the token (" Paris")
    float probability = 0;
};

struct FillMaskResult {
    Encoding encoding;
    std::vector<int> maskPositions;                     // token positions of the masks
    std::vector<std::vector<MaskPrediction>> predictions; // per mask, best first
    std::vector<std::vector<float>> distributions;     // per mask, full softmax over the vocabulary
    // Per mask: logits that are NaN or infinite. When any is, the probabilities are meaningless
    // (NaN) and callers must say so rather than present a ranking.
    std::vector<int64_t> nonFiniteLogits;
    std::vector<ModuleNonFinite> nonFinite; // per module, in execution order
    double elapsedMs = 0;
};

// Throws scalescope::Error naming the checkpoint when the model is not a masked LM.
void requireMaskedLm(const InferenceBackend& model);
// The token ids and probabilities of a ranking with each token's decoded text.
std::vector<MaskPrediction> withTokenTexts(const Tokenizer& tokenizer, const std::vector<std::pair<int64_t, float>>& ranked);

// The model runs as `run` says (its device is the model's own). Throws scalescope::Error when the
// model is not a MaskedLM, the text has no mask token, or topK < 1.
FillMaskResult runFillMask(InferenceBackend& model, const std::string& text, const RunSettings& run, int topK,
                           const Progress& progress = {});

// Softmax over logits in double precision, returned as float.
std::vector<float> softmax(const float* logits, std::size_t n);

} // namespace scalescope
