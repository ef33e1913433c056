#include "analysis/scale_statistics.h"

#include <algorithm>
#include <cmath>

#include "model/quantization_config.h"
#include "numerics/mx.h"

namespace scalescope {
namespace {

constexpr uint8_t kMagnitudeMask = 0x7F;
constexpr uint8_t kMagnitudeOfLargestFinite = 0x7E; // S.1111.110 = +-448

std::string activationSchemeOf(const ConfigGroup* group)
{
    if (!group || !group->inputActivations)
        return "none";
    const QuantizationArgs& args = *group->inputActivations;
    return std::string(args.dynamic ? "dynamic " : "static ") + args.strategy;
}

// Median of the non-NaN values (mean of the two middle ones for an even count). NaN has no place
// in an order, and a scale that is NaN is reported by the diagnostics on its own.
void fillScaleSummary(LinearScaleStatistics& stats)
{
    std::vector<float> ordered;
    ordered.reserve(stats.channelScales.size());
    for (float v : stats.channelScales)
        if (!std::isnan(v))
            ordered.push_back(v);
    if (ordered.empty())
        return;
    std::sort(ordered.begin(), ordered.end());
    const std::size_t n = ordered.size();
    stats.scaleMin = ordered.front();
    stats.scaleMax = ordered.back();
    stats.scaleMedian = n % 2 == 1 ? ordered[n / 2] : 0.5f * (ordered[n / 2 - 1] + ordered[n / 2]);
    // A ratio over a non-positive minimum means nothing; 0 marks it as undefined.
    stats.scaleRatio = stats.scaleMin > 0 ? stats.scaleMax / stats.scaleMin : 0.0f;
}

// One pass over the FP8 codes. Four count tables break the store-to-load dependency that runs of
// equal codes (common in weights) would otherwise create on a single table entry.
//
// Clipping cannot be read off the codes exactly, so it is estimated per scale group (a row for
// per-channel scales, the tensor for per-tensor): an amax/448 scale puts the group's largest
// weight at +-448 by construction, and weights within 3.6% below it round up to 448 as well, which
// in a row of a few dozen weights happens for a second weight about every third row. So the first
// two codes at +-448 of a group are taken as legitimate and every further one as clipped. A scale
// below amax/448 piles many weights onto the limit, so the estimate then follows the true clipped
// share to within 2 / group size, while a correct scale stays well under the 1% default threshold
// even for 32-wide rows (counting from the first code, 32-wide rows would sit at 0.6% on average
// and cross 1% in some modules).
constexpr int64_t kLegitimateCodesAtLimitPerGroup = 2;

void countCodes(const TensorView& weight, bool perRow, int64_t rows, int64_t columns, LinearScaleStatistics& stats)
{
    const int64_t total = weight.numel();
    if (total <= 0 || weight.data == nullptr)
        return;
    uint64_t tables[4][256] = {};
    int64_t excessAtLimit = 0;
    const uint8_t* codes = weight.data;

    auto countRange = [&](const uint8_t* begin, int64_t n) {
        int64_t i = 0;
        for (; i + 4 <= n; i += 4) {
            ++tables[0][begin[i]];
            ++tables[1][begin[i + 1]];
            ++tables[2][begin[i + 2]];
            ++tables[3][begin[i + 3]];
        }
        for (; i < n; ++i)
            ++tables[0][begin[i]];
    };

    const bool byRow = perRow && rows > 0 && columns > 0 && rows * columns == total;
    if (byRow) {
        for (int64_t r = 0; r < rows; ++r) {
            const uint8_t* row = codes + r * columns;
            countRange(row, columns);
            int64_t atLimit = 0;
            for (int64_t c = 0; c < columns; ++c)
                atLimit += (row[c] & kMagnitudeMask) == kMagnitudeOfLargestFinite;
            excessAtLimit += std::max<int64_t>(0, atLimit - kLegitimateCodesAtLimitPerGroup);
        }
    } else {
        countRange(codes, total);
    }

    uint64_t counts[256];
    for (int code = 0; code < 256; ++code)
        counts[code] = tables[0][code] + tables[1][code] + tables[2][code] + tables[3][code];
    if (!byRow) {
        const auto atLimit =
            static_cast<int64_t>(counts[kMagnitudeOfLargestFinite] + counts[0x80 | kMagnitudeOfLargestFinite]);
        excessAtLimit = std::max<int64_t>(0, atLimit - kLegitimateCodesAtLimitPerGroup);
    }

    int64_t underflow = 0;
    for (int code = 0; code < 256; ++code) {
        const int exponentField = (code >> 3) & 0xF;
        stats.exponentHistogram[static_cast<std::size_t>(exponentField)] += static_cast<int64_t>(counts[code]);
        if (exponentField == 0)
            underflow += static_cast<int64_t>(counts[code]);
    }
    stats.underflowShare = double(underflow) / double(total);
    stats.clippedShare = double(excessAtLimit) / double(total);
}

// The clipping estimate and the all-zero count per block of a block-wise weight: a block is one
// scale group, so its first two codes at +-448 are its amax code and a near-amax neighbour.
void countBlocks(const uint8_t* codes, LinearScaleStatistics& stats)
{
    const int64_t out = stats.outFeatures, in = stats.inFeatures;
    int64_t excessAtLimit = 0;
    for (int64_t blockRow = 0; blockRow < stats.gridRows; ++blockRow)
        for (int64_t blockColumn = 0; blockColumn < stats.gridColumns; ++blockColumn) {
            int64_t atLimit = 0;
            bool allZero = true;
            const int64_t rowEnd = std::min(out, (blockRow + 1) * stats.blockRows);
            const int64_t columnEnd = std::min(in, (blockColumn + 1) * stats.blockColumns);
            for (int64_t r = blockRow * stats.blockRows; r < rowEnd; ++r)
                for (int64_t c = blockColumn * stats.blockColumns; c < columnEnd; ++c) {
                    const uint8_t magnitude = codes[r * in + c] & kMagnitudeMask;
                    atLimit += magnitude == kMagnitudeOfLargestFinite;
                    allZero = allZero && magnitude == 0;
                }
            excessAtLimit += std::max<int64_t>(0, atLimit - kLegitimateCodesAtLimitPerGroup);
            stats.zeroBlocks += allZero;
        }
    stats.clippedShare = double(excessAtLimit) / double(out * in);
}

// The block sizes the config declares ([1, 32] for MXFP8), and the grid when weight_scale has its shape.
void describeBlocks(const std::vector<int>& block, const TensorView* scale, LinearScaleStatistics& stats)
{
    if (block.size() != 2 || block[0] <= 0 || block[1] <= 0 || stats.outFeatures <= 0)
        return;
    stats.blockRows = block[0];
    stats.blockColumns = block[1];
    const int64_t rows = (stats.outFeatures + stats.blockRows - 1) / stats.blockRows;
    const int64_t columns = (stats.inFeatures + stats.blockColumns - 1) / stats.blockColumns;
    if (scale && scale->shape == std::vector<int64_t>{rows, columns}) {
        stats.gridRows = rows;
        stats.gridColumns = columns;
    }
}

// The numbers read from a weight (or table) and its weight_scale, for a module whose group (may be
// null) is already described in stats.
void describeTensors(const TensorView* weight, const TensorView* scale, const ConfigGroup* group,
                     LinearScaleStatistics& stats)
{
    const bool mxfp8 = group && group->weights && group->format == "mxfp8-quantized" && isMxfp8Args(*group->weights);
    if (scale) {
        stats.scaleDtype = dtypeName(scale->dtype);
        if (isFloatDtype(scale->dtype)) {
            stats.channelScales = scale->toFloat().values;
            fillScaleSummary(stats);
        } else if (mxfp8 && scale->dtype == Dtype::U8) {
            // E8M0 exponents: 2^(e - 127); 255 is NaN (diagnostics report it).
            for (int64_t k = 0; k < scale->numel(); ++k)
                stats.channelScales.push_back(scale->data[k] == mx::kE8M0NaN ? NAN : mx::scaleFromExponent(scale->data[k]));
            fillScaleSummary(stats);
        }
    }
    if (!weight)
        return;
    stats.weightDtype = dtypeName(weight->dtype);
    if (weight->shape.size() == 2) {
        stats.outFeatures = weight->shape[0];
        stats.inFeatures = weight->shape[1];
    }

    stats.quantized = weight->dtype == Dtype::F8_E4M3 && scale != nullptr;

    if (weight->dtype == Dtype::F8_E4M3 && mxfp8)
        describeBlocks({1, mx::kBlock}, scale, stats);
    else if (weight->dtype == Dtype::F8_E4M3 && group && group->weights && stats.weightStrategy == "block")
        describeBlocks(group->weights->blockStructure, scale, stats);
    if (weight->dtype == Dtype::F8_E4M3 && stats.gridRows > 0 && weight->numel() == stats.outFeatures * stats.inFeatures) {
        countCodes(*weight, false, stats.outFeatures, stats.inFeatures, stats);
        countBlocks(weight->data, stats); // replaces the per-tensor clipping estimate
    } else if (weight->dtype == Dtype::F8_E4M3) {
        // The scale tensor decides how codes were grouped when it is readable; otherwise the
        // config's declared strategy does.
        bool perRow = stats.weightStrategy == "channel";
        if (scale && stats.outFeatures > 0 && scale->numel() == stats.outFeatures)
            perRow = true;
        else if (scale && scale->numel() == 1)
            perRow = false;
        countCodes(*weight, perRow, stats.outFeatures, stats.inFeatures, stats);
    }
}

void describeGroup(const ConfigGroup* group, const std::string& rule, LinearScaleStatistics& stats)
{
    stats.rule = rule;
    if (group) {
        stats.group = group->name;
        if (group->weights)
            stats.weightStrategy = group->weights->strategy;
    }
    stats.activationScheme = activationSchemeOf(group);
}

LinearScaleStatistics statisticsFor(const Checkpoint& checkpoint, const std::string& module)
{
    const TensorStore& store = checkpoint.tensors();
    const LayoutLinear& linear = *checkpoint.layout().findLinear(module);
    LinearScaleStatistics stats;
    stats.module = module;
    stats.layer = linear.layer;
    stats.label = linear.shortLabel;
    const ConfigGroup* group = checkpoint.plan().targetGroup(module);
    describeGroup(group, checkpoint.plan().find(module)->rule, stats);
    if (const TensorView* input = store.find(module + ".input_scale"))
        if (isFloatDtype(input->dtype) && input->numel() == 1)
            stats.inputScale = input->toFloat().values[0];

    const TensorView* weight = store.find(module + ".weight");
    // Hugging Face leaves the MaskedLM decoder out when it is tied to the word embeddings; its
    // numbers are then the embeddings' (their codes and, when FP8, their own scales).
    const TensorView* scale = store.find(module + ".weight_scale");
    if (!weight && !linear.tiedWeight.empty()) {
        weight = store.find(linear.tiedWeight);
        if (weight && weight->dtype == Dtype::F8_E4M3 && !scale)
            scale = store.find(checkpoint.layout().wordEmbeddingsScaleTensor());
    }
    describeTensors(weight, scale, group, stats);
    return stats;
}

// The word embeddings' entry: a lookup table that a group may quantize like a weight.
LinearScaleStatistics embeddingStatistics(const Checkpoint& checkpoint)
{
    const EncoderLayout& layout = checkpoint.layout();
    const TensorStore& store = checkpoint.tensors();
    LinearScaleStatistics stats;
    stats.embedding = true;
    stats.module = layout.wordEmbeddingsModule();
    stats.label = "emb.word";
    describeGroup(checkpoint.plan().wordEmbeddingsTargetGroup(), checkpoint.plan().wordEmbeddings().rule, stats);
    stats.activationScheme = "lookup";
    describeTensors(store.find(layout.wordEmbeddingsTensor()), store.find(layout.wordEmbeddingsScaleTensor()),
                    checkpoint.plan().wordEmbeddingsTargetGroup(), stats);
    return stats;
}

} // namespace

std::vector<LinearScaleStatistics> computeScaleStatistics(const Checkpoint& checkpoint)
{
    std::vector<LinearScaleStatistics> out;
    const TensorView* table = checkpoint.tensors().find(checkpoint.layout().wordEmbeddingsTensor());
    if ((table && table->dtype == Dtype::F8_E4M3) || checkpoint.plan().wordEmbeddingsTargetGroup())
        out.push_back(embeddingStatistics(checkpoint));
    for (const LayoutLinear& linear : checkpoint.layout().linears())
        out.push_back(statisticsFor(checkpoint, linear.module));
    return out;
}

} // namespace scalescope
