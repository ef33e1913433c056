#include "tasks/sensitivity_cause.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/parallel_chunks.h"
#include "numerics/fp8.h"
#include "numerics/metrics.h"

namespace scalescope {
namespace {

double share(int64_t part, int64_t whole)
{
    return whole > 0 ? double(part) / double(whole) : 0.0;
}

std::string percent(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3g%%", 100.0 * value);
    return text;
}

// y[r, o] = sum_i x[r, i] * w[o, i], accumulated in float64. Four partial sums let the compiler
// keep them in vector registers (a single running sum is one long dependency chain): this ran for
// a sixth of a roberta-base-sized sweep's time before. Rows run on the compute threads (each writes
// its own row of y, so the result does not depend on how they are spread): single-threaded it
// still took 5 % of a roberta-base sweep's samples.
std::vector<float> product(const std::vector<float>& x, int64_t rows, const std::vector<float>& w, int64_t out,
                           int64_t in)
{
    std::vector<float> y(static_cast<std::size_t>(rows * out));
    runChunks(rows, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            for (int64_t o = 0; o < out; ++o) {
                const float* a = x.data() + r * in;
                const float* b = w.data() + o * in;
                double sums[4] = {0, 0, 0, 0};
                int64_t i = 0;
                for (; i + 4 <= in; i += 4)
                    for (int lane = 0; lane < 4; ++lane)
                        sums[lane] += double(a[i + lane]) * double(b[i + lane]);
                for (; i < in; ++i)
                    sums[0] += double(a[i]) * double(b[i]);
                y[static_cast<std::size_t>(r * out + o)] = static_cast<float>((sums[0] + sums[1]) + (sums[2] + sums[3]));
            }
    });
    return y;
}

float amaxScale(const float* values, int64_t n)
{
    float amax = 0;
    for (int64_t i = 0; i < n; ++i)
        amax = std::max(amax, std::fabs(values[i]));
    return std::max(amax / fp8::kE4M3Max, FLT_MIN);
}

// Each row of `values` (rows x width) quant-dequantized with its own amax scale.
std::vector<float> roundRows(std::vector<float> values, int64_t rows, int64_t width)
{
    for (int64_t r = 0; r < rows; ++r) {
        float* row = values.data() + r * width;
        fp8::quantDequantE4M3(row, static_cast<std::size_t>(width), amaxScale(row, width));
    }
    return values;
}

// The input as this Linear's own scheme and scales quantize it.
std::vector<float> actualInput(const LinearInfo& info, const LinearInputSample& sample)
{
    std::vector<float> x = sample.values;
    const std::size_t n = x.size();
    switch (info.activations) {
    case ActivationQuantization::DynamicPerToken:
        return roundRows(std::move(x), sample.rows, sample.features);
    case ActivationQuantization::StaticPerTensor:
        fp8::quantDequantE4M3(x.data(), n, info.inputScale);
        return x;
    case ActivationQuantization::DynamicPerTensor:
        fp8::quantDequantE4M3(x.data(), n, amaxScale(x.data(), static_cast<int64_t>(n)));
        return x;
    default:
        return x;
    }
}

// Floor, isolated, weight-only and input-only SQNR of the Linear's output on the sampled rows.
void measureFloor(const LinearCauseInputs& inputs, const TensorView& codes, SensitivityCause& cause)
{
    const LinearInfo& info = *inputs.info;
    const LinearInputSample& sample = *inputs.sample;
    const int64_t out = info.outFeatures, in = info.inFeatures;
    const std::vector<float> deq = dequantizedWeight(*inputs.scales, codes);
    if (deq.empty() || sample.features != in || sample.rows == 0)
        return;
    std::vector<float> truth = deq;
    if (inputs.referenceWeight && inputs.referenceWeight->numel() == out * in && isFloatDtype(inputs.referenceWeight->dtype))
        truth = inputs.referenceWeight->toFloat().values;
    const std::vector<float> exact = product(sample.values, sample.rows, truth, out, in);
    const std::vector<float> perTokenInput = roundRows(sample.values, sample.rows, in);
    const std::vector<float> floor = product(perTokenInput, sample.rows, roundRows(truth, out, in), out, in);
    const std::vector<float> input = actualInput(info, sample);
    auto sqnr = [&exact](const std::vector<float>& y) { return computeErrorMetrics(y, exact).sqnrDb; };
    cause.floorSqnrDb = sqnr(floor);
    cause.isolatedSqnrDb = sqnr(product(input, sample.rows, deq, out, in));
    cause.weightOnlySqnrDb = sqnr(product(sample.values, sample.rows, deq, out, in));
    cause.inputOnlySqnrDb = info.activations == ActivationQuantization::None
                                ? std::numeric_limits<double>::infinity()
                                : sqnr(product(input, sample.rows, truth, out, in));
    cause.inputPerTokenSqnrDb = info.activations == ActivationQuantization::StaticPerTensor
                                    ? sqnr(product(perTokenInput, sample.rows, truth, out, in))
                                    : cause.inputOnlySqnrDb;
    // Both infinite (exact) or both equal: not beyond.
    cause.beyondFloor = std::isfinite(cause.isolatedSqnrDb) && cause.isolatedSqnrDb < cause.floorSqnrDb - kBeyondFloorDb;
}

// The diagnostic that names this Linear or one of its tensors with this code prefix, if any.
const Finding* findingFor(const LinearCauseInputs& inputs, const std::string& codePart)
{
    if (!inputs.findings)
        return nullptr;
    const std::string& module = inputs.info->module;
    for (const Finding& f : *inputs.findings) {
        const bool names = f.subject == module || f.subject.rfind(module + ".", 0) == 0;
        if (names && f.code.find(codePart) != std::string::npos)
            return &f;
    }
    return nullptr;
}

std::string decibels(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f dB", value);
    return text;
}

// A scale problem measured on the Linear's own tensors (clipping, flushing, underflow, a static
// scale far wider than the rows need), strongest first, with a sentence for it (a diagnostic's own
// when one names it). Each names what is wrong with which scale, so two Linears with different
// problems never share a label. Returns false when there is none.
bool chooseReason(const LinearCauseInputs& inputs, SensitivityCause& cause, std::string& reason)
{
    const std::string& m = inputs.info->module;
    auto pick = [&](const char* kind, const char* name, const char* code, const std::string& sentence) {
        cause.kind = kind;
        reason = name;
        const Finding* f = findingFor(inputs, code);
        cause.explanation = f ? f->message : sentence;
        return true;
    };
    if (cause.inputClippedShare > 1e-3)
        return pick("input-clipping", "input clipping (input scale too small)", "clip",
                    percent(cause.inputClippedShare) + " of " + m + "'s input exceeds 448 times its input scale and is clipped.");
    if (cause.weightClippedShare > 0.01)
        return pick("weight-clipping", "weight clipping (weight scale too small)", "clip",
                    percent(cause.weightClippedShare) + " of " + m + "'s weight codes sit at +-448 beyond what an amax scale puts there.");
    if (cause.inputFlushedShare > 0.01)
        return pick("input-flush", "input flushed to zero (input scale too large)", "flush",
                    percent(cause.inputFlushedShare) + " of " + m + "'s non-zero input flushes to zero.");
    if (cause.weightUnderflowShare > 0.25)
        return pick("weight-underflow", "weight underflow (weight scale too large)", "underflow",
                    percent(cause.weightUnderflowShare) + " of " + m + "'s weight codes are zero or subnormal.");
    if (std::isfinite(cause.inputPerTokenSqnrDb) && cause.inputPerTokenSqnrDb - cause.inputOnlySqnrDb > kAlikeDb)
        return pick("coarse-static-scale", "coarse static input scale (too large for these rows)", "coarse-static-scale",
                    "With its static input scale " + m + "'s input is " +
                        decibels(cause.inputPerTokenSqnrDb - cause.inputOnlySqnrDb) +
                        " noisier than with a per-token scale: the scale is much wider than these rows need.");
    return false;
}

// Plain E4M3 rounding: which side of the product it comes from, weights or activations.
void roundingKind(SensitivityCause& cause)
{
    const double w = cause.weightOnlySqnrDb, x = cause.inputOnlySqnrDb;
    if (std::isnan(w) || std::isnan(x)) {
        cause.kind = "unmeasured";
        return;
    }
    if (!cause.inputQuantized || x - w > kAlikeDb)
        cause.kind = "weight-rounding"; // a higher SQNR is the smaller error
    else if (w - x > kAlikeDb)
        cause.kind = "activation-rounding";
    else
        cause.kind = "rounding";
}

std::string roundingLabel(const SensitivityCause& cause)
{
    if (cause.kind == "weight-rounding")
        return cause.inputQuantized ? "FP8 rounding, mostly the weights" : "FP8 rounding of the weights (input float)";
    if (cause.kind == "activation-rounding")
        return "FP8 rounding, mostly the activations";
    if (cause.kind == "rounding")
        return "FP8 rounding, weights and activations alike";
    return "FP8 rounding (not measured on its input)";
}

} // namespace

std::vector<float> dequantizedWeight(const LinearScaleStatistics& scales, const TensorView& codes)
{
    const int64_t out = scales.outFeatures, in = scales.inFeatures;
    if (codes.dtype != Dtype::F8_E4M3 || codes.numel() != out * in || scales.channelScales.empty())
        return {};
    const bool perChannel = scales.channelScales.size() == static_cast<std::size_t>(out);
    if (!perChannel && scales.channelScales.size() != 1)
        return {}; // block or group layouts: no floor here
    std::vector<float> w(static_cast<std::size_t>(out * in));
    for (int64_t o = 0; o < out; ++o)
        fp8::dequantizeE4M3(codes.data + o * in, static_cast<std::size_t>(in),
                            scales.channelScales[perChannel ? static_cast<std::size_t>(o) : 0], w.data() + o * in);
    return w;
}

LinearInputSample sampleRealRows(const std::vector<int64_t>& shape, const float* data,
                                 const std::vector<std::size_t>& lengths, int64_t maxRows)
{
    LinearInputSample sample;
    if (shape.size() != 3 || maxRows <= 0)
        return sample;
    const int64_t seq = shape[1];
    sample.features = shape[2];
    std::vector<int64_t> real; // flat row indices of real tokens
    for (std::size_t b = 0; b < lengths.size() && int64_t(b) < shape[0]; ++b)
        for (int64_t t = 0; t < std::min<int64_t>(int64_t(lengths[b]), seq); ++t)
            real.push_back(int64_t(b) * seq + t);
    const int64_t count = std::min<int64_t>(maxRows, int64_t(real.size()));
    for (int64_t i = 0; i < count; ++i) {
        const int64_t row = real[static_cast<std::size_t>(i * int64_t(real.size()) / count)];
        sample.values.insert(sample.values.end(), data + row * sample.features, data + (row + 1) * sample.features);
    }
    sample.rows = count;
    return sample;
}

SensitivityCause explainLinear(const LinearCauseInputs& inputs)
{
    SensitivityCause cause;
    cause.module = inputs.info->module;
    const double unmeasured = std::numeric_limits<double>::quiet_NaN();
    cause.floorSqnrDb = cause.isolatedSqnrDb = unmeasured;
    cause.weightOnlySqnrDb = cause.inputOnlySqnrDb = cause.inputPerTokenSqnrDb = unmeasured;
    if (const ActivationStatistics* a = inputs.activations) {
        cause.inputQuantized = true;
        cause.inputClippedShare = share(a->clipped, a->elements);
        cause.inputFlushedShare = share(a->flushedToZero, a->elements);
        cause.inputSubnormalShare = share(a->subnormal, a->elements);
    }
    if (inputs.scales) {
        cause.weightClippedShare = inputs.scales->clippedShare;
        cause.weightUnderflowShare = inputs.scales->underflowShare;
    }
    if (inputs.sample && inputs.scales && inputs.codes)
        measureFloor(inputs, *inputs.codes, cause);
    std::string reason;
    const bool hasReason = chooseReason(inputs, cause, reason);
    if (!hasReason)
        roundingKind(cause);
    if (cause.beyondFloor)
        cause.label = "beyond FP8 rounding: " + (hasReason                              ? reason
                                                 : cause.kind == "weight-rounding"     ? std::string("look at its weight scale")
                                                 : cause.kind == "activation-rounding" ? std::string("look at its input scale")
                                                                                       : std::string("look at its scales"));
    else
        cause.label = hasReason ? "FP8 rounding, with " + reason : roundingLabel(cause);
    return cause;
}

} // namespace scalescope
