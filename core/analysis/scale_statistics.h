#pragma once
// Per-Linear scale statistics of a quantized checkpoint, read straight from the tensors (no model
// is built, so a checkpoint that cannot run can still be inspected).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/checkpoint.h"

namespace scalescope {

struct LinearScaleStatistics {
    std::string module;              // roberta.encoder.layer.0.attention.self.query
    // The word embeddings (roberta.embeddings.word_embeddings), not a Linear: rows are token ids
    // (outFeatures = vocab, inFeatures = hidden), weightStrategy "channel" is one scale per row, and
    // activationScheme is "lookup" (nothing to quantize).
    bool embedding = false;
    int layer = -1;                  // encoder layer index, -1 for heads
    std::string label;               // short label for charts ("L0.q"; heads keep their names)
    std::string group;               // config group, "" when not targeted
    std::string rule;                // the config entry that picked the group (or ignored the module)
    std::string weightDtype;         // F8_E4M3, F32, ...
    std::string scaleDtype;          // dtype of weight_scale, "" when absent
    std::string weightStrategy;      // channel | tensor | block (from the config), "" when not targeted
    std::string activationScheme;    // "dynamic token", "static tensor", "none"
    int64_t outFeatures = 0;
    int64_t inFeatures = 0;
    bool quantized = false;          // weight is F8_E4M3 with a weight_scale
    std::vector<float> channelScales;  // weight_scale values (one for per-tensor; the block grid row by row)
    // Block-wise weights: block_structure [rows, columns] and the scale grid [gridRows, gridColumns]
    // (0 otherwise, or when weight_scale does not have the grid's shape).
    int64_t blockRows = 0, blockColumns = 0;
    int64_t gridRows = 0, gridColumns = 0;
    int64_t zeroBlocks = 0;          // blocks whose codes are all +-0 (block-wise weights only)
    float scaleMin = 0, scaleMedian = 0, scaleMax = 0;
    float scaleRatio = 0;            // max / min over channels (1 for per-tensor)
    double clippedShare = 0;         // share of weight codes at +-448 beyond the two per scale group that an amax scale puts there (see .cpp)
    double underflowShare = 0;       // share of weight codes that are zero or subnormal
    std::array<int64_t, 16> exponentHistogram{}; // weight codes per E4M3 exponent field 0..15
    std::optional<float> inputScale; // static input_scale when present
};

// One entry per Linear of the architecture (quantized or not), in model order, preceded by one for
// the word embeddings when they are stored F8_E4M3 or a config group targets them. Tensors that
// are missing or malformed leave their fields empty; diagnostics report them.
std::vector<LinearScaleStatistics> computeScaleStatistics(const Checkpoint& checkpoint);

} // namespace scalescope
