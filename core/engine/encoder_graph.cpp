// LibTorch: the forward pass over the decoded weights.
#include "engine/encoder_graph.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>

#include "common/error.h"
#include "engine/activation_kernels.h"
#include "engine/compute_threads.h"
#include "engine/encoder_weights.h"
#include "engine/float_gemm.h"
#include "engine/fused_lanes.h"
#include "numerics/attention_fp8.h"
#include "numerics/dl16.h"
#include "numerics/half.h"

namespace scalescope {
namespace {

FloatTensor toFloatTensor(const at::Tensor& tensor)
{
    at::Tensor contiguous = tensor.contiguous();
    FloatTensor out;
    out.shape.assign(contiguous.sizes().begin(), contiguous.sizes().end());
    out.values.resize(static_cast<std::size_t>(contiguous.numel()));
    if (!out.values.empty())
        std::memcpy(out.values.data(), contiguous.data_ptr<float>(), out.values.size() * sizeof(float));
    return out;
}

// State of one forward call: options, the weights of its mode, the real-token row mask for
// statistics, and the outputs.
struct ForwardContext {
    const ForwardOptions& options;
    const EncoderWeights& weights;
    const EncoderLayout& layout;
    std::vector<uint8_t> realRows; // per flattened token row: 1 real, 0 padding
    ForwardResult result{};

    StoredPrecision storedPrecision() const
    {
        return options.mode == RunMode::Fp16 ? StoredPrecision::Half : StoredPrecision::AsStored;
    }

    // A module's result as this mode stores it: fp16 mode rounds it to IEEE half (in place: only
    // fresh results are passed), the other modes keep float32.
    at::Tensor stored(const at::Tensor& tensor) const
    {
        if (options.mode != RunMode::Fp16)
            return tensor;
        at::Tensor out = tensor.contiguous();
        half::roundToHalfInPlace(out.data_ptr<float>(), static_cast<std::size_t>(out.numel()));
        return out;
    }

    // The real-row mask for a [rows, features] view; gathered head inputs (logitPositions) are all real.
    const std::vector<uint8_t>& realRowsFor(int64_t rows) const
    {
        static const std::vector<uint8_t> allReal;
        return !gatheredRows && rows == static_cast<int64_t>(realRows.size()) ? realRows : allReal;
    }
    void capture(const std::string& point, const std::string& module, const at::Tensor& tensor)
    {
        if (!captureSelects(options.capture, point, module))
            return;
        if (options.onCapture) {
            const at::Tensor contiguous = tensor.contiguous();
            const std::vector<int64_t> shape(contiguous.sizes().begin(), contiguous.sizes().end());
            options.onCapture(point, shape, contiguous.data_ptr<float>(), sameTensorAs(point, tensor, contiguous));
            return;
        }
        result.captures.push_back({point, toFloatTensor(tensor)});
    }
    // A module's output: its range and inf/NaN count on real tokens (always: a non-finite value is
    // never passed on silently), then captured when selected.
    void output(const std::string& point, const std::string& module, const at::Tensor& tensor)
    {
        check(module, tensor);
        capture(point, module, tensor);
    }
    // The same with the scan already taken by the pass that wrote the tensor (the FP8 GEMM's epilogue).
    void outputScanned(const std::string& point, const std::string& module, const at::Tensor& tensor,
                       const OutputScan& scan)
    {
        record(module, tensor, scan);
        capture(point, module, tensor);
    }

    // A module output's range and inf/NaN count, for modules that are not capture points too
    // (EncoderLayout::outputModules()).
    void check(const std::string& module, const at::Tensor& tensor)
    {
        const at::Tensor rows = rowsOf(tensor);
        record(module, tensor,
               scanOutput(rows.data_ptr<float>(), rows.size(0), rows.size(1), rows.stride(0), realRowsFor(rows.size(0))));
    }
    static at::Tensor rowsOf(const at::Tensor& tensor)
    {
        at::Tensor rows = tensor.reshape({-1, tensor.size(-1)});
        return rows.stride(1) != 1 ? rows.contiguous() : rows;
    }
    // A module output's scan into the result; its rows that hold inf or NaN marked.
    void record(const std::string& module, const at::Tensor& tensor, const OutputScan& scan)
    {
        result.outputRanges.push_back({module, scan.maxAbs, scan.belowHalfNormal, scan.elements});
        if (scan.nonFinite > 0) {
            const at::Tensor rows = rowsOf(tensor);
            result.nonFinite.push_back({module, scan.nonFinite});
            markRowsNonFinite(module, rows, realRowsFor(rows.size(0)));
        }
    }

    // firstNonFiniteByRow for the sequences this output's non-finite rows belong to: token rows of
    // the batch, or the gathered MaskedLM positions.
    void markRowsNonFinite(const std::string& module, const at::Tensor& rows, const std::vector<uint8_t>& real)
    {
        const bool gathered = gatheredRows || rows.size(0) != static_cast<int64_t>(realRows.size());
        for (int64_t row = 0; row < rows.size(0); ++row) {
            if ((!real.empty() && !real[static_cast<std::size_t>(row)]) ||
                !rowHasNonFinite(rows.data_ptr<float>(), row, rows.size(1), rows.stride(0)))
                continue;
            const std::size_t sequence = gathered ? static_cast<std::size_t>(logitPositions[static_cast<std::size_t>(row)].first)
                                                  : static_cast<std::size_t>(row / sequenceLength);
            if (sequence < result.firstNonFiniteByRow.size() && result.firstNonFiniteByRow[sequence].empty())
                result.firstNonFiniteByRow[sequence] = module;
        }
    }
    int64_t sequenceLength = 1;
    std::vector<std::pair<int, int>> logitPositions{}; // the MaskedLM head's gathered (row, position)s
    bool gatheredRows = false; // set once the head's rows are no longer token rows (gathered positions, pooled sequences)

    // The earliest recent capture point that was this very tensor, or "". Recent contiguous captures
    // are held (their memory cannot be reused meanwhile), so an equal data pointer and shape mean
    // the same values: q, k and v read one input, which is the previous layer's output too.
    std::string sameTensorAs(const std::string& point, const at::Tensor& tensor, const at::Tensor& contiguous)
    {
        std::string same;
        for (const auto& [name, held] : recentCaptures)
            if (same.empty() && held.data_ptr() == contiguous.data_ptr() && held.sizes() == contiguous.sizes())
                same = name;
        if (tensor.is_contiguous()) { // a copy made by contiguous() is never seen again
            recentCaptures.emplace_back(point, contiguous);
            if (recentCaptures.size() > kRecentCaptures)
                recentCaptures.pop_front();
        }
        return same;
    }
    static constexpr std::size_t kRecentCaptures = 8; // a layer's q/k/v inputs are 4 captures apart
    std::deque<std::pair<std::string, at::Tensor>> recentCaptures{};
};

// Quantize-dequantize a Linear's input as `fp8` mode does: per token row, per run of channels, or per tensor.
at::Tensor quantizeActivations(const at::Tensor& x, const LinearInfo& info, ForwardContext& context)
{
    const int64_t features = x.size(-1);
    const at::Tensor input = x.contiguous().view({-1, features});
    const int64_t rows = input.size(0);
    at::Tensor output = at::empty_like(input);
    const float* src = input.data_ptr<float>();
    float* dst = output.data_ptr<float>();
    const std::vector<float> scales =
        quantDequantActivations(src, dst, rows, features, info.activations, info.inputScale, info.activationGroupSize,
                                info.mxfp8Activations);
    if (context.options.activationStatistics)
        context.result.activationStatistics.push_back(countActivationStatistics(
            info.module, src, dst, rows, features, scales, context.realRowsFor(rows), info.activationGroupSize));
    return output.view(x.sizes());
}

// A float32 Linear, y = x W^T + b, on the engine's float GEMM (float_gemm.h); shapes as at::linear.
at::Tensor linearFloat(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias)
{
    const bool allFloat = x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat &&
                          (!bias.defined() || bias.scalar_type() == at::kFloat);
    if (!allFloat) // none today; kept correct should a tensor of another dtype reach here
        return bias.defined() ? at::linear(x, weight, bias) : at::linear(x, weight);
    const int64_t in = x.size(-1);
    const at::Tensor input = x.contiguous().view({-1, in});
    const at::Tensor w = weight.contiguous();
    const at::Tensor b = bias.defined() ? bias.contiguous() : bias;
    const int64_t rows = input.size(0), out = w.size(0);
    at::Tensor y = at::empty({rows, out}, at::kFloat);
    floatLinear(input.data_ptr<float>(), rows, in, w.data_ptr<float>(), out, b.defined() ? b.data_ptr<float>() : nullptr,
                y.data_ptr<float>());
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = out;
    return y.view(shape);
}

// a b (or a b^T when transposeB) for every batch row and head, [batch, heads, m, n], on the
// engine's float GEMM (float_gemm.h).
at::Tensor headsMatmul(const at::Tensor& a, const at::Tensor& b, bool transposeB)
{
    const at::Tensor left = a.contiguous(), right = b.contiguous();
    const int64_t m = left.size(2), k = left.size(3), n = transposeB ? right.size(2) : right.size(3);
    at::Tensor c = at::empty({left.size(0), left.size(1), m, n}, at::kFloat);
    floatBatchedMatmul(left.data_ptr<float>(), right.data_ptr<float>(), left.size(0) * left.size(1), m, k, n, transposeB,
                       c.data_ptr<float>());
    return c;
}

// The scores attention makes at a time (attendInGroups): a sequence's at 384 tokens and 12 heads
// (7 MB), which stay in the last-level cache between their three steps. Smaller groups cost more
// than they save (each group is three parallel regions): 4 or 2 heads at a time made a roberta-base
// forward 3-6 % slower; whole batches of 8 x 384 tokens (57 MB of scores) made it 40 % slower.
constexpr int64_t kScoresPerGroupBytes = 8 << 20;

// softmax(mask + scale * q k^T) v for every sequence and head ([batch, heads, seq, headDim] q, k and
// v; the additive key mask [batch, 1, 1, keys]), a group of (sequence, head) pairs at a time: each
// group's scores are made, turned into probabilities in place (fused_lanes::maskedSoftmax) and
// multiplied by v while they are still in cache, instead of the whole batch's scores going out to
// memory between the three steps (batches of 8 x 384 tokens took 11.6x one sequence's time, 7.9x
// in groups). Each pair's products are the GEMMs a whole batch runs, so the values are the same.
at::Tensor attendInGroups(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& keyMask,
                          float scale)
{
    const at::Tensor left = q.contiguous(), right = k.contiguous(), values = v.contiguous(), masks = keyMask.contiguous();
    const int64_t heads = left.size(1), seq = left.size(2), keys = right.size(2), headDim = left.size(3);
    const int64_t pairs = left.size(0) * heads;
    const int64_t pairBytes = std::max<int64_t>(1, seq * keys * int64_t(sizeof(float)));
    const int64_t group = std::clamp<int64_t>(kScoresPerGroupBytes / pairBytes, 1, std::max<int64_t>(1, pairs));
    at::Tensor context = at::empty({left.size(0), heads, seq, headDim}, at::kFloat);
    at::Tensor scores = at::empty({group, seq, keys}, at::kFloat);
    const float *a = left.data_ptr<float>(), *b = right.data_ptr<float>(), *c = values.data_ptr<float>();
    const float* mask = masks.data_ptr<float>();
    float* probabilities = scores.data_ptr<float>();
    float* out = context.data_ptr<float>();
    for (int64_t first = 0; first < pairs; first += group) {
        const int64_t count = std::min(group, pairs - first);
        floatBatchedMatmul(a + first * seq * headDim, b + first * keys * headDim, count, seq, headDim, keys,
                           /*transposedB=*/true, probabilities);
        parallelFor(count * seq, 16, [&](int64_t begin, int64_t end) {
            for (int64_t row = begin; row < end;) { // runs of rows of one pair: its sequence's key mask
                const int64_t pair = first + row / seq;
                const int64_t stop = std::min(end, (row / seq + 1) * seq);
                fused_lanes::maskedSoftmax(probabilities + row * keys, stop - row, keys, scale,
                                           mask + (pair / heads) * keys);
                row = stop;
            }
        });
        floatBatchedMatmul(probabilities, c + first * keys * headDim, count, seq, keys, headDim, /*transposedB=*/false,
                           out + first * seq * headDim);
    }
    return context;
}

// GELU of a tensor as a new one: fused_lanes::gelu, the very function the factored FP8 GEMM's
// epilogue applies (EpilogueScan), so a forward's values do not depend on where GELU ran (a
// capture of the Linear's output keeps it out of the epilogue) nor on the path.
at::Tensor geluOf(const at::Tensor& x)
{
    at::Tensor out = x.contiguous().clone();
    float* values = out.data_ptr<float>();
    constexpr int64_t kBlock = 4096; // floats per task: lanes of 16, a block in cache
    const int64_t count = out.numel();
    parallelFor((count + kBlock - 1) / kBlock, 4, [&](int64_t begin, int64_t end) {
        fused_lanes::gelu(values + begin * kBlock, std::min(count, end * kBlock) - begin * kBlock);
    });
    return out;
}

// LayerNorm(x + residual) over the last axis, as torch's layer_norm of the sum: one pass per row
// (fused_lanes::addLayerNorm), rows spread over the compute threads; LibTorch's two where the sum is
// a stored value of its own (fp16 mode rounds it to half before the LayerNorm).
at::Tensor residualLayerNorm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                             const at::Tensor& bias, double epsilon, const ForwardContext& context)
{
    const int64_t width = x.size(-1);
    if (context.options.mode == RunMode::Fp16 || !weight.defined() || !bias.defined())
        return context.stored(at::layer_norm(context.stored(x + residual), {width}, weight, bias, epsilon));
    const at::Tensor a = x.contiguous(), b = residual.contiguous(), gamma = weight.contiguous(), beta = bias.contiguous();
    at::Tensor out = at::empty_like(a);
    const float *aData = a.data_ptr<float>(), *bData = b.data_ptr<float>();
    float* outData = out.data_ptr<float>();
    parallelFor(a.numel() / width, 16, [&](int64_t begin, int64_t end) {
        fused_lanes::addLayerNorm(aData + begin * width, bData + begin * width, gamma.data_ptr<float>(),
                                  beta.data_ptr<float>(), static_cast<float>(epsilon), end - begin, width,
                                  outData + begin * width);
    });
    return out;
}

// Records what calibration needs of a Linear's input (its capture is the caller's).
void recordLinearInputAmax(const LinearInfo& info, const at::Tensor& x, ForwardContext& context)
{
    if (!context.options.linearInputAmax)
        return;
    const at::Tensor flat = x.contiguous().view({-1, x.size(-1)});
    const float amax = realRowsAmax(flat.data_ptr<float>(), flat.size(0), flat.size(1), context.realRowsFor(flat.size(0)));
    context.result.linearInputAmax.emplace_back(info.module, amax);
}

bool quantizesInput(const LinearInfo& info, const ForwardContext& context)
{
    return quantizesActivations(info, context.options.mode, context.options.overrides);
}

// A quantized Linear the overrides run in float, with a reference loaded: it runs the reference's
// float weights (docs/ARCHITECTURE.md "Precision overrides").
bool runsReferenceWeights(const LinearInfo& info, const ForwardContext& context)
{
    const ForwardOptions& options = context.options;
    if (!options.floatWeightsFrom || !info.quantized)
        return false;
    const auto it = options.overrides.modules.find(info.module);
    return it != options.overrides.modules.end() ? it->second == Precision::Float : options.overrides.othersFloat;
}

// The E4M3 values of a Linear's input, x / s rounded without the scale back (into `values`,
// [rows, in]), and each row's scale; statistics recorded when asked for.
std::vector<float> quantizedInputValues(const LinearInfo& info, const at::Tensor& input, at::Tensor& values,
                                        ForwardContext& context)
{
    const int64_t rows = input.size(0), features = input.size(1);
    values = at::empty_like(input);
    const float* src = input.data_ptr<float>();
    std::vector<float> rowScales =
        quantizeActivationValues(src, values.data_ptr<float>(), rows, features, info.activations, info.inputScale);
    if (context.options.activationStatistics)
        context.result.activationStatistics.push_back(countActivationStatistics(
            info.module, src, values.data_ptr<float>(), rows, features, rowScales, context.realRowsFor(rows),
            /*groupSize=*/0, /*quantizedAreValues=*/true));
    return rowScales;
}

// The E4M3 values of a Linear's input as the bf16 GEMM reads them (bfloat16 bits, [rows, in]) and
// each row's scale, in one pass; statistics recorded when asked for (from the values read back:
// bf16 to float32 is exact).
std::vector<float> quantizedInputBf16(const LinearInfo& info, const at::Tensor& input, at::Tensor& values,
                                      ForwardContext& context)
{
    const int64_t rows = input.size(0), features = input.size(1);
    values = at::empty({rows, features}, at::kShort);
    uint16_t* bits = reinterpret_cast<uint16_t*>(values.data_ptr<int16_t>());
    const float* src = input.data_ptr<float>();
    std::vector<float> rowScales =
        quantizeActivationsToBf16(src, bits, rows, features, info.activations, info.inputScale);
    if (context.options.activationStatistics)
        context.result.activationStatistics.push_back(countActivationStatisticsBf16(
            info.module, src, bits, rows, features, rowScales, context.realRowsFor(rows)));
    return rowScales;
}

// The non-finite scan of a factored GEMM's output taken in its epilogue, chunk by chunk of rows
// while they are still in cache, instead of another pass over the output: one scan per column
// segment (q, k and v of a layer's fused GEMM are three). Only where the epilogue writes the
// module's final values: fp16 mode rounds them to half afterwards and scans what it stored.
// With `geluAfter`, each chunk is then replaced by its GELU in the same pass (the intermediate
// Linear: its scan is of its own output, GELU's input), and y holds GELU's output.
class EpilogueScan {
public:
    EpilogueScan(int64_t segments, int64_t segmentWidth, bool geluAfter = false)
        : segments_(segments), width_(segmentWidth), geluAfter_(geluAfter)
    {
    }
    static bool applies(const ForwardContext& context) { return context.options.mode != RunMode::Fp16; }
    bool appliesGelu() const { return geluAfter_; }

    // What the epilogue calls with each chunk of y ([rows, segments * width]) it has finished.
    Fp8FactoredGemm::RowsDone rowsDone(float* y, int64_t rows, const std::vector<uint8_t>& real)
    {
        byRow_.assign(static_cast<std::size_t>(rows * segments_), OutputScan{});
        return [this, y, &real](int64_t begin, int64_t end) {
            const int64_t rowWidth = segments_ * width_;
            for (int64_t s = 0; s < segments_; ++s) // chunks never overlap: each writes its own rows' slots
                byRow_[static_cast<std::size_t>(begin * segments_ + s)] =
                    scanOutputRows(y + s * width_, begin, end, width_, rowWidth, real);
            if (geluAfter_)
                fused_lanes::gelu(y + begin * rowWidth, (end - begin) * rowWidth);
        };
    }
    OutputScan segment(int64_t s) const
    {
        OutputScan scan;
        for (std::size_t i = static_cast<std::size_t>(s); i < byRow_.size(); i += static_cast<std::size_t>(segments_))
            combineScans(scan, byRow_[i]);
        return scan;
    }

private:
    int64_t segments_, width_;
    bool geluAfter_;
    std::vector<OutputScan> byRow_;
};

// fp8 mode's Linear on the factored path (fp8_gemm.h): the GEMM multiplies the activations' E4M3
// values by the weight's, and the scales and the bias come after; `scan`, when given, is taken there.
at::Tensor runFactoredLinear(const Fp8FactoredGemm& gemm, const LinearInfo& info, const at::Tensor& x,
                             ForwardContext& context, EpilogueScan* scan = nullptr)
{
    const int64_t features = x.size(-1);
    const at::Tensor input = x.contiguous().view({-1, features});
    const int64_t rows = input.size(0);
    at::Tensor values;
    at::Tensor y = at::empty({rows, gemm.outFeatures()}, at::kFloat);
    const Fp8FactoredGemm::RowsDone rowsDone =
        scan ? scan->rowsDone(y.data_ptr<float>(), rows, context.realRowsFor(rows)) : Fp8FactoredGemm::RowsDone{};
    if (gemm.readsBf16()) {
        const std::vector<float> rowScales = quantizedInputBf16(info, input, values, context);
        gemm.runBf16(reinterpret_cast<const uint16_t*>(values.data_ptr<int16_t>()), rowScales.data(), rows,
                     y.data_ptr<float>(), rowsDone);
    } else {
        const std::vector<float> rowScales = quantizedInputValues(info, input, values, context);
        gemm.run(values.data_ptr<float>(), rowScales.data(), rows, y.data_ptr<float>(), rowsDone);
    }
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = gemm.outFeatures();
    return y.view(shape);
}

// Whether this Linear's FP8 x FP8 products are accumulated as the DL16 twin in this forward.
bool runsDl16(const LinearInfo& info, const ForwardContext& context)
{
    return context.options.accumulation == Accumulation::Dl16 && quantizesInput(info, context) &&
           accumulatesInDl16(info);
}

// A Linear on DL16 accumulation (numerics/dl16.h): the activations' E4M3 values times the weight
// codes' values, flushed, summed in chunks of 32 rounded to DL16; the scales and the bias after.
at::Tensor runDl16Linear(const LinearWeights& linear, const at::Tensor& x, ForwardContext& context)
{
    const LinearInfo& info = linear.info;
    const Dl16Weight& weight = dl16Weight(linear);
    const int64_t features = x.size(-1);
    const at::Tensor input = x.contiguous().view({-1, features});
    const int64_t rows = input.size(0);
    at::Tensor values;
    const std::vector<float> rowScales = quantizedInputValues(info, input, values, context);
    const at::Tensor bias = linear.bias.defined() ? linear.bias.contiguous() : linear.bias;
    at::Tensor y = at::empty({rows, weight.out}, at::kFloat);
    const float* valueData = values.data_ptr<float>();
    const float* biasData = bias.defined() ? bias.data_ptr<float>() : nullptr;
    float* yData = y.data_ptr<float>();
    at::parallel_for(0, rows, 8, [&](int64_t begin, int64_t end) {
        dl16::dl16Linear(valueData, rowScales.data(), weight.valuesT.data(), weight.scales.data(), biasData,
                         weight.in, weight.out, begin, end, yData);
    });
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = weight.out;
    return y.view(shape);
}

// The factored GEMM this forward uses for a Linear, or null for the float32 path.
const Fp8FactoredGemm* factoredGemmFor(const std::shared_ptr<const Fp8FactoredGemm>& gemm, const LinearInfo& info,
                               const ForwardContext& context)
{
    return gemm && fp8GemmPath() != Fp8GemmPath::Float32 && quantizesInput(info, context) ? gemm.get() : nullptr;
}

// The input the GEMM sees: quantized-dequantized when this Linear quantizes its activations.
at::Tensor linearInput(const LinearInfo& info, const at::Tensor& x, ForwardContext& context)
{
    return quantizesInput(info, context) ? quantizeActivations(x, info, context) : x;
}

// A Linear, and with `thenGelu` GELU on its output (torch's exact GELU), which is returned. On the
// factored FP8 path GELU runs in the epilogue's pass (EpilogueScan), unless the Linear's output is
// captured (a capture holds the values before GELU); elsewhere in a pass of its own (geluOf).
at::Tensor runLinear(const LinearWeights& linear, const at::Tensor& x, ForwardContext& context, bool thenGelu = false)
{
    const LinearInfo& info = linear.info;
    context.capture(info.module + ".input", info.module, x);
    recordLinearInputAmax(info, x, context);
    at::Tensor y;
    std::optional<EpilogueScan> scan;
    if (runsDl16(info, context)) {
        y = runDl16Linear(linear, x, context);
    } else if (const Fp8FactoredGemm* gemm = factoredGemmFor(linear.factoredGemm, info, context)) {
        if (EpilogueScan::applies(context))
            scan.emplace(1, gemm->outFeatures(),
                         thenGelu && !captureSelects(context.options.capture, info.module + ".output", info.module));
        y = runFactoredLinear(*gemm, info, x, context, scan ? &*scan : nullptr);
    } else if (runsReferenceWeights(info, context)) {
        const ReferenceLinear reference = loadReferenceLinear(*context.options.floatWeightsFrom,
                                                              *context.layout.findLinear(info.module),
                                                              context.storedPrecision());
        y = linearFloat(x, reference.weight, reference.bias);
    } else {
        const at::Tensor input = linearInput(info, x, context);
        const at::Tensor& weight = floatWeight(linear);
        y = linearFloat(input, weight, linear.bias);
    }
    y = context.stored(y);
    if (scan)
        context.outputScanned(info.module + ".output", info.module, y, scan->segment(0));
    else
        context.output(info.module + ".output", info.module, y);
    if (thenGelu && !(scan && scan->appliesGelu()))
        y = context.stored(geluOf(y));
    return y;
}

// q, k, v of one layer in one GEMM (see LayerWeights::fusedQkv) when this forward treats their
// shared input alike (overrides may split them); outputs are views of its result.
std::array<at::Tensor, 3> runQkv(const LayerWeights& layer, const at::Tensor& x, ForwardContext& context)
{
    const LinearWeights* members[3] = {&layer.query, &layer.key, &layer.value};
    const bool quantizeQ = quantizesInput(layer.query.info, context);
    const bool alike = quantizeQ == quantizesInput(layer.key.info, context) &&
                       quantizeQ == quantizesInput(layer.value.info, context) &&
                       !runsReferenceWeights(layer.query.info, context) && !runsReferenceWeights(layer.key.info, context) &&
                       !runsReferenceWeights(layer.value.info, context);
    // DL16 accumulation runs each Linear on its own operands (dl16Weight), with the same results.
    const bool dl16 = runsDl16(layer.query.info, context);
    if (!layer.fusedQkv || !alike || dl16)
        return {runLinear(layer.query, x, context), runLinear(layer.key, x, context), runLinear(layer.value, x, context)};
    for (const LinearWeights* member : members)
        recordLinearInputAmax(member->info, x, context);
    const std::size_t statisticsBefore = context.result.activationStatistics.size();
    const Fp8FactoredGemm* gemm = factoredGemmFor(layer.qkvFactoredGemm, layer.query.info, context);
    const int64_t width = layer.query.info.outFeatures;
    std::optional<EpilogueScan> scan;
    if (gemm && EpilogueScan::applies(context))
        scan.emplace(3, width);
    const at::Tensor y = context.stored(
        gemm ? runFactoredLinear(*gemm, layer.query.info, x, context, scan ? &*scan : nullptr)
             : linearFloat(linearInput(layer.query.info, x, context), fusedQkvWeight(layer), layer.qkvBias));
    // The three share one quantized input, so they share its statistics too.
    if (context.result.activationStatistics.size() == statisticsBefore + 1) {
        for (const LinearWeights* member : {&layer.key, &layer.value}) {
            ActivationStatistics copy = context.result.activationStatistics.back();
            copy.module = member->info.module;
            context.result.activationStatistics.push_back(copy);
        }
    }
    std::array<at::Tensor, 3> outputs;
    for (std::size_t i = 0; i < 3; ++i) {
        // Captured in the order of separate Linears: q input, q output, k input, ...
        const std::string& module = members[i]->info.module;
        outputs[i] = y.narrow(-1, static_cast<int64_t>(i) * width, width);
        context.capture(module + ".input", module, x);
        if (scan)
            context.outputScanned(module + ".output", module, outputs[i], scan->segment(static_cast<int64_t>(i)));
        else
            context.output(module + ".output", module, outputs[i]);
    }
    return outputs;
}

// Refuses a forward whose accumulation the mode or one of the Linears it runs in FP8 cannot take
// (linear_plan.h accumulationProblem, dl16Problem), before anything runs.
void checkAccumulation(const Checkpoint& checkpoint, const ForwardOptions& options)
{
    if (options.accumulation == Accumulation::Float32)
        return;
    if (const std::string problem = accumulationProblem(options.mode, options.accumulation); !problem.empty())
        throw Error(problem);
    for (const LinearInfo& info : checkpoint.plan().linears())
        if (quantizesActivations(info, options.mode, options.overrides))
            if (const std::string problem = dl16Problem(info); !problem.empty())
                throw Error(problem);
}

// The longest input the load-time warm-up runs (warmUpFirstForward): roberta-base's and BERT's
// longest sequence; a model that takes longer ones is warmed up to this length.
constexpr int64_t kWarmUpTokens = 512;

// What a process's first forward pays once, paid at load instead: above all the heap its
// activations take (about 27,000 page faults of fresh memory at roberta-base size and seq 384:
// most of what a first forward cost over a warm one, not oneDNN's primitive creation, 2 ms), and
// oneDNN's primitives and LibTorch's kernels on their first use. One layer of one sequence of the
// longest length the model takes (capped at kWarmUpTokens): every layer allocates alike, and the
// heap it leaves stays with the process (keepForwardBuffers) for every later forward of that
// length or shorter. Errors are dropped: a checkpoint whose forward fails (some plans fail only
// there) still fails at its real forward, with the same message; a cancel is passed on.
void warmUpFirstForward(const EncoderGraph& graph, const Checkpoint& checkpoint, const Progress& progress)
{
    const ModelConfig& config = checkpoint.config();
    const int64_t tokens = std::min(checkpoint.layout().maxSequenceLength(), kWarmUpTokens);
    const int64_t token = config.padTokenId == 0 ? 1 : 0; // any real (non-padding) token
    if (tokens <= 0 || token >= config.vocabSize)
        return;
    EncoderInputs inputs;
    inputs.inputIds.assign(1, std::vector<int64_t>(static_cast<std::size_t>(tokens), token));
    ForwardOptions firstLayer;
    firstLayer.stopLayer = 1;
    try {
        validateForwardInputs(inputs, config, checkpoint.layout());
        graph.run(inputs, firstLayer, Progress{{}, progress.cancel});
    } catch (const Cancelled&) {
        throw;
    } catch (const std::exception&) {
    }
}

} // namespace

struct EncoderGraph::Impl {
    std::shared_ptr<const Checkpoint> checkpoint;
    EncoderWeights weights;
    // fp16 mode's weights (StoredPrecision::Half), made on the first fp16 forward: a model never
    // run in fp16 pays neither the time nor the memory.
    mutable std::unique_ptr<EncoderWeights> halfWeights;
    mutable std::once_flag halfWeightsMade;

    const EncoderWeights& weightsFor(RunMode mode, const Progress& progress) const
    {
        if (mode != RunMode::Fp16)
            return weights;
        std::call_once(halfWeightsMade, [&] { // a throw (cancel) leaves it to the next fp16 forward
            const Progress preparing{[&](double fraction, const std::string& stage) {
                                         progress.report(fraction, "Preparing the fp16 twin: " + stage);
                                     },
                                     progress.cancel};
            halfWeights = std::make_unique<EncoderWeights>(
                loadEncoderWeights(*checkpoint, preparing, StoredPrecision::Half, &weights));
        });
        return *halfWeights;
    }

    const ModelConfig& config() const { return checkpoint->config(); }
    const EncoderLayout& layout() const { return checkpoint->layout(); }

    // A resumed run's input to layer `first`: a copy of the cached tensor, checked against the batch.
    at::Tensor resumedHidden(const FloatTensor& hidden, const PaddedBatch& padded, int first) const
    {
        const std::vector<int64_t> expected = {padded.batch, padded.seq, config().hiddenSize};
        const int layers = static_cast<int>(weights.layers.size());
        if (hidden.shape != expected || first < 0 || first > layers)
            throw Error("A resumed forward needs the input of layer " + std::to_string(first) + " as " +
                        shapeText(expected) + ", not " + shapeText(hidden.shape) + ".");
        return at::from_blob(const_cast<float*>(hidden.values.data()), expected, at::kFloat).clone();
    }

    at::Tensor embed(const PaddedBatch& padded, ForwardContext& context) const
    {
        const ModelConfig& c = config();
        const at::Tensor ids = at::from_blob(const_cast<int64_t*>(padded.ids.data()), {padded.batch, padded.seq}, at::kLong);
        const at::Tensor types =
            at::from_blob(const_cast<int64_t*>(padded.typeIds.data()), {padded.batch, padded.seq}, at::kLong);
        at::Tensor positions;
        if (layout().positionsSkipPadding()) {
            // Hugging Face's RoBERTa numbers positions from the non-pad tokens: pad + cumulative count.
            const at::Tensor nonPad = ids.ne(c.padTokenId).to(at::kLong);
            positions = at::cumsum(nonPad, 1) * nonPad + (layout().positionOffset() - 1);
        } else {
            positions = at::arange(padded.seq, at::kLong).unsqueeze(0).expand({padded.batch, padded.seq}) +
                        layout().positionOffset();
        }
        const EncoderWeights& weights = context.weights;
        at::Tensor words = at::embedding(weights.wordEmbeddings, ids).contiguous(); // a fresh tensor
        if (weights.roundWordEmbeddingsOnLookup)
            half::roundToHalfInPlace(words.data_ptr<float>(), static_cast<std::size_t>(words.numel()));
        const at::Tensor sum = context.stored(words +
                                              at::embedding(weights.positionEmbeddings, positions) +
                                              at::embedding(weights.tokenTypeEmbeddings, types));
        at::Tensor h = context.stored(at::layer_norm(sum, {c.hiddenSize}, weights.embeddingNormWeight,
                                                     weights.embeddingNormBias, c.layerNormEps));
        context.output(layout().embeddingsOutput(), layout().embeddingsModule(), h);
        return h;
    }

    // Every module's result passes context.stored(): in fp16 mode the attention scores (before the
    // padding mask, which is not a stored value), probabilities and context, each Linear, the GELU,
    // each residual sum and each LayerNorm are rounded to half as docs/ARCHITECTURE.md "Run modes" says.
    at::Tensor encoderLayer(int index, const at::Tensor& h, const at::Tensor& keyMask, ForwardContext& context) const
    {
        const ModelConfig& c = config();
        const LayerWeights& layer = context.weights.layers[static_cast<std::size_t>(index)];
        const int64_t batch = h.size(0), seq = h.size(1), hidden = c.hiddenSize;
        const int64_t heads = c.numHeads, headDim = hidden / heads;
        auto splitHeads = [&](const at::Tensor& t) { return t.view({batch, seq, heads, headDim}).transpose(1, 2); };
        const auto qkv = runQkv(layer, h, context);
        const bool fp8Attention = attentionRunsFp8(layout(), index, context.options.attention, context.options.overrides);
        at::Tensor key = qkv[1], value = qkv[2];
        if (fp8Attention || context.options.attentionCastPoints) {
            key = castForAttention(index, /*isKey=*/true, key, fp8Attention, context);
            value = castForAttention(index, /*isKey=*/false, value, fp8Attention, context);
        }
        const at::Tensor q = splitHeads(qkv[0]), k = splitHeads(key), v = splitHeads(value);
        at::Tensor scores, probabilities, attendedHeads;
        if (fp8Attention) {
            // math_fp8 (fms_mo aiu_addons/fp8/fp8_attn.py at 308643fb) multiplies Q and the
            // dequantized K each by sqrt(1 / sqrt(head_dim)) in the activation dtype before their product.
            const float rootScale = static_cast<float>(std::sqrt(1.0 / std::sqrt(double(headDim))));
            scores = context.stored(headsMatmul(context.stored(q * rootScale), context.stored(k * rootScale),
                                                /*transposeB=*/true)) + keyMask;
        } else if (context.options.mode == RunMode::Fp16) {
            scores = context.stored(headsMatmul(q, k, /*transposeB=*/true) * (1.0 / std::sqrt(double(headDim)))) + keyMask;
        } else {
            // The scores, their mask, scale and softmax in one pass per row, in place, and the product
            // with v, a group of heads at a time while its scores are in cache (attendInGroups).
            attendedHeads = attendInGroups(q, k, v, keyMask, static_cast<float>(1.0 / std::sqrt(double(headDim))));
        }
        if (!attendedHeads.defined()) {
            probabilities = context.stored(at::softmax(scores, -1));
            attendedHeads = context.stored(headsMatmul(probabilities, v, /*transposeB=*/false));
        }
        const at::Tensor attended = attendedHeads.transpose(1, 2).reshape({batch, seq, hidden});
        context.check(layout().attentionModule(index), attended);
        const at::Tensor attentionOut = runLinear(layer.attentionOutput, attended, context);
        const at::Tensor afterAttention =
            residualLayerNorm(attentionOut, h, layer.attentionNormWeight, layer.attentionNormBias, c.layerNormEps, context);
        context.check(layout().attentionBlockModule(index), afterAttention);
        const at::Tensor intermediate = runLinear(layer.intermediate, afterAttention, context, /*thenGelu=*/true);
        const at::Tensor outputDense = runLinear(layer.output, intermediate, context);
        at::Tensor out = residualLayerNorm(outputDense, afterAttention, layer.outputNormWeight, layer.outputNormBias,
                                           c.layerNormEps, context);
        context.output(layout().layerOutput(index), layout().layerModule(index), out);
        return out;
    }

    // A layer's K or V ([batch, seq, hidden]) as AIU FP8 attention stores it (numerics/attention_fp8.h):
    // cast to E4M3 with one scale per sequence and dequantized, rounded to half in fp16 mode, with
    // the cast's record; unchanged where the layer's attention stays float (`cast` false). Its
    // input and output are capture points either way.
    at::Tensor castForAttention(int index, bool isKey, const at::Tensor& x, bool cast, ForwardContext& context) const
    {
        const std::string module = isKey ? layout().keyCastModule(index) : layout().valueCastModule(index);
        context.capture(module + ".input", module, x);
        if (!cast) {
            context.capture(module + ".output", module, x);
            return x;
        }
        const at::Tensor input = x.contiguous();
        const int64_t batch = input.size(0), seq = input.size(1), hidden = input.size(2);
        const int64_t heads = config().numHeads;
        at::Tensor output = at::empty_like(input);
        AttentionCastRecord record;
        record.module = module;
        record.layer = index;
        record.key = isKey;
        record.range = isKey ? attention_fp8::kKeyRange : attention_fp8::kValueRange;
        record.heads = heads;
        const bool realRowsKnown = context.realRows.size() == static_cast<std::size_t>(batch * seq);
        for (int64_t b = 0; b < batch; ++b) {
            const int64_t offset = b * seq * hidden;
            const attention_fp8::SequenceCast sequence = attention_fp8::castSequence(
                input.data_ptr<float>() + offset, output.data_ptr<float>() + offset, seq, hidden, heads,
                realRowsKnown ? context.realRows.data() + b * seq : nullptr, record.range,
                context.options.mode == RunMode::Fp16);
            record.scales.push_back(sequence.scale);
            record.headAmax.insert(record.headAmax.end(), sequence.headAmax.begin(), sequence.headAmax.end());
            record.values.insert(record.values.end(), sequence.values.begin(), sequence.values.end());
            record.zeros.insert(record.zeros.end(), sequence.zeros.begin(), sequence.zeros.end());
            record.subnormals.insert(record.subnormals.end(), sequence.subnormals.begin(), sequence.subnormals.end());
        }
        context.result.attentionCasts.push_back(std::move(record));
        output = context.stored(output); // (decode * scale).to(activation dtype)
        context.capture(module + ".output", module, output);
        return output;
    }

    // The head as its definition says (model/architecture.h HeadDefinition): its steps in order on
    // the last hidden state, then each final output, whole or one column of the last step's result.
    void runHead(const at::Tensor& h, const EncoderInputs& inputs, ForwardContext& context) const
    {
        const HeadDefinition& head = layout().headDefinition();
        at::Tensor x = h;
        for (const HeadStep& step : head.steps)
            x = runHeadStep(step, x, inputs, context);
        for (const HeadOutput& output : head.outputs)
            context.result.outputs.push_back(
                {output.name, toFloatTensor(output.column >= 0 ? x.select(-1, output.column) : x)});
    }

    at::Tensor runHeadStep(const HeadStep& step, const at::Tensor& x, const EncoderInputs& inputs,
                           ForwardContext& context) const
    {
        const ModelConfig& c = config();
        switch (step.kind) {
        case HeadStepKind::Linear:
            return runLinear(context.weights.headLinears.at(step.module), x, context);
        case HeadStepKind::Gelu:
            return context.stored(geluOf(x));
        case HeadStepKind::Tanh:
            return context.stored(at::tanh(x));
        case HeadStepKind::LayerNorm: {
            const auto& [weight, bias] = context.weights.headNorms.at(step.module);
            return context.stored(at::layer_norm(x, {c.hiddenSize}, weight, bias, c.layerNormEps));
        }
        case HeadStepKind::GatherLogitPositions:
            return gatherLogitPositions(x, inputs, context);
        case HeadStepKind::Normalize: // as torch's F.normalize: the norm clamped at 1e-12
            return context.stored(x / x.norm(2, {-1}, true).clamp_min(1e-12));
        default:
            return pool(step.kind, x, context);
        }
    }

    // A masked LM's logits only where they are asked for: [count, width].
    static at::Tensor gatherLogitPositions(const at::Tensor& x, const EncoderInputs& inputs, ForwardContext& context)
    {
        if (inputs.logitPositions.empty())
            return x;
        const int64_t seq = x.size(1);
        std::vector<int64_t> flat;
        for (const auto& [row, position] : inputs.logitPositions)
            flat.push_back(int64_t(row) * seq + position);
        context.gatheredRows = true;
        return x.reshape({-1, x.size(-1)}).index_select(0, at::tensor(flat, at::kLong));
    }

    // One vector per sequence from its real tokens (the attention mask), as sentence-transformers'
    // Pooling computes it: [batch, width].
    static at::Tensor pool(HeadStepKind kind, const at::Tensor& x, ForwardContext& context)
    {
        const int64_t batch = x.size(0), seq = x.size(1);
        context.gatheredRows = true;
        if (kind == HeadStepKind::PoolFirstToken)
            return x.select(1, 0).contiguous();
        std::vector<float> maskValues(context.realRows.begin(), context.realRows.end());
        if (maskValues.size() != static_cast<std::size_t>(batch * seq))
            maskValues.assign(static_cast<std::size_t>(batch * seq), 1.0f);
        const at::Tensor mask = at::tensor(maskValues).reshape({batch, seq, 1});
        if (kind == HeadStepKind::PoolMax) // padding never wins (sentence-transformers sets it to -1e9)
            return context.stored(std::get<0>(x.masked_fill(mask.eq(0), -1e9).max(1)));
        const at::Tensor counts = mask.sum(1).clamp_min(1e-9);
        const at::Tensor sums = (x * mask).sum(1);
        return context.stored(kind == HeadStepKind::PoolMean ? sums / counts : sums / counts.sqrt());
    }
};

EncoderGraph::EncoderGraph() : impl_(std::make_unique<Impl>()) {}
EncoderGraph::~EncoderGraph() = default;

std::unique_ptr<EncoderGraph> EncoderGraph::load(std::shared_ptr<const Checkpoint> checkpoint, const Progress& progress)
{
    at::NoGradGuard noGrad;
    std::unique_ptr<EncoderGraph> graph(new EncoderGraph());
    keepForwardBuffers();
    // The float32 GEMM measured at this model's widths (cached after the first time on a machine).
    chooseFloatGemm(checkpoint->config().hiddenSize, checkpoint->config().intermediateSize);
    graph->impl_->weights = loadEncoderWeights(*checkpoint, progress);
    graph->impl_->checkpoint = std::move(checkpoint);
    warmUpFirstForward(*graph, *graph->impl_->checkpoint, progress);
    return graph;
}

ForwardResult EncoderGraph::run(const EncoderInputs& inputs, const ForwardOptions& options, const Progress& progress) const
{
    at::NoGradGuard noGrad;
    const Impl& m = *impl_;
    checkAccumulation(*m.checkpoint, options);
    const PaddedBatch padded = padForwardInputs(inputs, m.config().padTokenId);
    ForwardContext context{options, m.weightsFor(options.mode, progress), m.layout(), padded.realRows};
    context.sequenceLength = padded.seq;
    context.logitPositions = inputs.logitPositions;
    context.result.firstNonFiniteByRow.assign(static_cast<std::size_t>(padded.batch), std::string());
    const int layers = static_cast<int>(m.weights.layers.size());
    const int first = options.startHidden ? options.startLayer : 0;
    at::Tensor h = options.startHidden ? m.resumedHidden(*options.startHidden, padded, first) : m.embed(padded, context);
    // Additive mask over keys: 0 for real tokens, the lowest float for padding.
    const at::Tensor mask = at::from_blob(const_cast<float*>(padded.mask.data()), {padded.batch, padded.seq}, at::kFloat);
    const at::Tensor keyMask =
        ((1.0f - mask) * std::numeric_limits<float>::lowest()).view({padded.batch, 1, 1, padded.seq});
    if (options.recordLayerInputs)
        context.result.layerInputs.resize(static_cast<std::size_t>(layers) + 1);
    const int stop = options.stopLayer >= 0 ? std::min(options.stopLayer, layers) : layers;
    for (int i = first; i < stop; ++i) {
        progress.throwIfCancelled();
        progress.report(double(i) / double(layers + 1), "Layer " + std::to_string(i));
        if (options.recordLayerInputs)
            context.result.layerInputs[static_cast<std::size_t>(i)] = toFloatTensor(h);
        h = m.encoderLayer(i, h, keyMask, context);
    }
    if (options.stopLayer >= 0) {
        context.result.stoppedHidden = toFloatTensor(h);
        return std::move(context.result);
    }
    if (options.recordLayerInputs)
        context.result.layerInputs[static_cast<std::size_t>(layers)] = toFloatTensor(h);
    progress.throwIfCancelled();
    m.runHead(h, inputs, context);
    progress.report(1.0, "Done");
    return std::move(context.result);
}

} // namespace scalescope
