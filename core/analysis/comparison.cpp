#include "analysis/comparison.h"

#include "common/error.h"

namespace scalescope {

const char* captureKindName(CaptureKind kind)
{
    switch (kind) {
    case CaptureKind::Embeddings:
        return "embeddings";
    case CaptureKind::LinearInput:
        return "linear-input";
    case CaptureKind::LinearOutput:
        return "linear-output";
    case CaptureKind::LayerOutput:
        return "layer-output";
    }
    return "?";
}

CapturePointMetrics describeCapturePoint(const EncoderLayout& layout, const std::string& name)
{
    CapturePointMetrics point;
    point.name = name;
    const std::size_t dot = name.rfind('.');
    point.module = name.substr(0, dot);
    const std::string suffix = name.substr(dot + 1);
    point.layer = layout.layerOf(name);
    point.label = layout.shortLabel(point.module);
    if (name == layout.embeddingsOutput())
        point.kind = CaptureKind::Embeddings;
    else if (suffix == "input")
        point.kind = CaptureKind::LinearInput;
    else if (point.layer >= 0 && name == layout.layerOutput(point.layer))
        point.kind = CaptureKind::LayerOutput;
    else
        point.kind = CaptureKind::LinearOutput;
    return point;
}

// Padded rows of a batch would compare padding with padding, so they are left out.
ErrorMetrics metricsOverRealTokens(const std::vector<int64_t>& shape, const float* x, const FloatTensor& reference,
                                   const std::vector<std::size_t>& lengths)
{
    ErrorAccumulator accumulator;
    // [batch, seq, ...] with batch == lengths.size(): take the first lengths[b] rows of each item.
    const std::size_t total = reference.values.size();
    if (shape.size() >= 2 && static_cast<std::size_t>(shape[0]) == lengths.size()) {
        const std::size_t seq = static_cast<std::size_t>(shape[1]);
        const std::size_t rowSize = seq == 0 ? 0 : total / lengths.size() / seq;
        for (std::size_t b = 0; b < lengths.size(); ++b) {
            const std::size_t offset = b * seq * rowSize;
            accumulator.add(x + offset, reference.values.data() + offset, lengths[b] * rowSize);
        }
    } else {
        accumulator.add(x, reference.values.data(), total);
    }
    return accumulator.result();
}

ErrorMetrics metricsOverRealTokens(const FloatTensor& x, const FloatTensor& reference,
                                   const std::vector<std::size_t>& lengths)
{
    if (x.values.size() != reference.values.size())
        throw Error("A capture point differs in size between the run and the reference.");
    return metricsOverRealTokens(x.shape, x.values.data(), reference, lengths);
}

} // namespace scalescope
