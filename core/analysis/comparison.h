#pragma once
// Per capture point error metrics between a run and its reference: what a point is (from the
// layout) and docs/ARCHITECTURE.md's metrics over real tokens. The comparison task (tasks/compare_runs.h)
// runs the two models and uses these.
#include <string>
#include <vector>

#include "common/tensor_data.h"
#include "model/architecture.h"
#include "numerics/metrics.h"

namespace scalescope {

enum class CaptureKind { Embeddings, LinearInput, LinearOutput, LayerOutput };

struct CapturePointMetrics {
    std::string name;        // capture point name
    std::string module;      // module name
    CaptureKind kind = CaptureKind::LinearOutput;
    int layer = -1;          // encoder layer, -1 for embeddings and heads
    std::string label;       // short module label for charts ("L3.ffn.in")
    ErrorMetrics metrics;
};

const char* captureKindName(CaptureKind kind);

// What a capture point is (embeddings, a Linear's input or output, a layer's output) and where it
// sits, from the layout.
CapturePointMetrics describeCapturePoint(const EncoderLayout& layout, const std::string& name);

// docs/ARCHITECTURE.md's metrics of x against reference over real tokens only: [batch, seq, ...] tensors with
// batch == lengths.size() take the first lengths[b] rows of each item, anything else is compared
// whole. Throws when the sizes differ.
ErrorMetrics metricsOverRealTokens(const std::vector<int64_t>& shape, const float* x, const FloatTensor& reference,
                                   const std::vector<std::size_t>& lengths);
ErrorMetrics metricsOverRealTokens(const FloatTensor& x, const FloatTensor& reference,
                                   const std::vector<std::size_t>& lengths);

} // namespace scalescope
