#pragma once
// Which rows of a capture point are real tokens, one row per sequence, or gathered rows: from the
// layout's head steps, for every task that measures capture points (compare, device checks, and
// through compare the sensitivity sweep, diff and evaluate).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/tensor_data.h"
#include "numerics/metrics.h"

namespace scalescope {

class EncoderLayout;

// How a capture point's rows stand for the batch's sequences.
enum class CaptureRows {
    Tokens,    // [batch, seq, ...]: the first lengths[b] rows of item b are real, the rest padding
    Sequences, // [batch, ...]: one row per sequence, after the head pooled (a classifier's dense, out_proj)
    Gathered,  // [count, ...]: token rows the head kept (a masked LM's logit positions), all real
};

// The rows of capture point `name`, from the layout's head steps: a head Linear after a pooling
// step has one row per sequence; after GatherLogitPositions, the gathered rows when the forward was
// given logit positions (`positionsGathered`), token rows otherwise; everything else (embeddings,
// encoder layers, K/V casts) holds token rows.
CaptureRows captureRows(const EncoderLayout& layout, const std::string& name, bool positionsGathered);

// docs/ARCHITECTURE.md's metrics of x (shaped `shape`) against reference over real rows only.
// Tokens: as metricsOverRealTokens (analysis/comparison.h). Sequences: [batch, ...], the rows b with
// lengths[b] > 0 (a device check zeroes the other inputs' lengths). Gathered: every row. Throws an
// internal Error when the sizes differ or the shape does not fit the rows: never reads past a buffer.
ErrorMetrics metricsOverRealRows(CaptureRows rows, const std::vector<int64_t>& shape, const float* x,
                                 const FloatTensor& reference, const std::vector<std::size_t>& lengths);

} // namespace scalescope
