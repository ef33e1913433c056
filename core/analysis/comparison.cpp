#include "analysis/comparison.h"

#include "analysis/capture_rows.h"

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

CaptureRows captureRows(const EncoderLayout& layout, const std::string& name, bool positionsGathered)
{
    if (layout.layerOf(name) >= 0 || name == layout.embeddingsOutput())
        return CaptureRows::Tokens;
    const std::string module = name.substr(0, name.rfind('.'));
    // The steps run in order on token rows; a Linear keeps the rows it is given.
    CaptureRows rows = CaptureRows::Tokens;
    for (const HeadStep& step : layout.headDefinition().steps) {
        switch (step.kind) {
        case HeadStepKind::Linear:
            if (step.module == module)
                return rows;
            break;
        case HeadStepKind::GatherLogitPositions:
            if (positionsGathered)
                rows = CaptureRows::Gathered;
            break;
        case HeadStepKind::PoolFirstToken:
        case HeadStepKind::PoolMean:
        case HeadStepKind::PoolMax:
        case HeadStepKind::PoolMeanSqrtLen:
            rows = CaptureRows::Sequences;
            break;
        default:
            break;
        }
    }
    return CaptureRows::Tokens;
}

namespace {

std::size_t elementsOf(const std::vector<int64_t>& shape)
{
    std::size_t count = 1;
    for (const int64_t dimension : shape)
        count *= static_cast<std::size_t>(dimension);
    return count;
}

// Padded rows of a batch would compare padding with padding, so they are left out. A tensor that is
// not [batch, seq, ...] of this batch has no padding rows to leave out and is compared whole.
ErrorMetrics overTokenRows(const std::vector<int64_t>& shape, const float* x, const FloatTensor& reference,
                           const std::vector<std::size_t>& lengths)
{
    ErrorAccumulator accumulator;
    if (shape.size() < 2 || static_cast<std::size_t>(shape[0]) != lengths.size()) {
        accumulator.add(x, reference.values.data(), reference.values.size());
        return accumulator.result();
    }
    const std::size_t seq = static_cast<std::size_t>(shape[1]);
    const std::size_t rowSize = seq == 0 ? 0 : reference.values.size() / lengths.size() / seq;
    for (std::size_t b = 0; b < lengths.size(); ++b) {
        if (lengths[b] > seq)
            throw Error("Internal error: sequence " + std::to_string(b) + " has " + std::to_string(lengths[b]) +
                        " real tokens but the tensor only " + std::to_string(seq) + " rows.");
        const std::size_t offset = b * seq * rowSize;
        accumulator.add(x + offset, reference.values.data() + offset, lengths[b] * rowSize);
    }
    return accumulator.result();
}

// One row per sequence: the rows of sequences with real tokens.
ErrorMetrics overSequenceRows(const std::vector<int64_t>& shape, const float* x, const FloatTensor& reference,
                              const std::vector<std::size_t>& lengths)
{
    if (shape.empty() || static_cast<std::size_t>(shape[0]) != lengths.size())
        throw Error("Internal error: per-sequence metrics need one row for each of " +
                    std::to_string(lengths.size()) + " sequences.");
    const std::size_t rowSize = reference.values.size() / lengths.size();
    ErrorAccumulator accumulator;
    for (std::size_t b = 0; b < lengths.size(); ++b)
        if (lengths[b] > 0)
            accumulator.add(x + b * rowSize, reference.values.data() + b * rowSize, rowSize);
    return accumulator.result();
}

} // namespace

ErrorMetrics metricsOverRealRows(CaptureRows rows, const std::vector<int64_t>& shape, const float* x,
                                 const FloatTensor& reference, const std::vector<std::size_t>& lengths)
{
    if (elementsOf(shape) != reference.values.size())
        throw Error("Internal error: a capture point differs in size between the run and the reference.");
    if (reference.values.empty())
        return ErrorAccumulator().result();
    switch (rows) {
    case CaptureRows::Tokens:
        return overTokenRows(shape, x, reference, lengths);
    case CaptureRows::Sequences:
        return overSequenceRows(shape, x, reference, lengths);
    case CaptureRows::Gathered:
        break;
    }
    ErrorAccumulator accumulator;
    accumulator.add(x, reference.values.data(), reference.values.size());
    return accumulator.result();
}

ErrorMetrics metricsOverRealTokens(const std::vector<int64_t>& shape, const float* x, const FloatTensor& reference,
                                   const std::vector<std::size_t>& lengths)
{
    return metricsOverRealRows(CaptureRows::Tokens, shape, x, reference, lengths);
}

ErrorMetrics metricsOverRealTokens(const FloatTensor& x, const FloatTensor& reference,
                                   const std::vector<std::size_t>& lengths)
{
    if (x.values.size() != reference.values.size())
        throw Error("A capture point differs in size between the run and the reference.");
    return metricsOverRealTokens(x.shape, x.values.data(), reference, lengths);
}

} // namespace scalescope
