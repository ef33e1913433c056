#pragma once
// What every backend does with a forward request before running it, written once: input
// validation (with the sentences users see), padding into one batch, and the choice of capture
// points. Torch-free: the in-process engine and the runner client share it.
#include <cstdint>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/inference_backend.h"

namespace scalescope {

// Throws scalescope::Error for an empty batch, a sequence longer than the layout allows, a mask
// that does not fit the ids, a token id outside the vocabulary, or (MaskedLM) a logit position
// outside the input.
void validateForwardInputs(const EncoderInputs& inputs, const ModelConfig& config, const EncoderLayout& layout);

// The inputs padded into one [batch, seq] batch with pad_token_id.
struct PaddedBatch {
    int64_t batch = 0;
    int64_t seq = 0;
    std::vector<int64_t> ids;      // batch * seq
    std::vector<float> mask;       // 1 real token, 0 padding
    std::vector<int64_t> typeIds;  // token type ids (0 where not given)
    std::vector<uint8_t> realRows; // per flattened token row: 1 real, 0 padding
};
PaddedBatch padForwardInputs(const EncoderInputs& inputs, int64_t padTokenId);

// True when the request selects this capture point of `module`: a name is a point or a module.
bool captureSelects(const CaptureRequest& request, const std::string& point, const std::string& module);
// The points a request selects from `points`, in their order.
std::vector<std::string> selectCapturePoints(const std::vector<std::string>& points, const CaptureRequest& request);

} // namespace scalescope
