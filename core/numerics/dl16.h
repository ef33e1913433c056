#pragma once
// The DL16 accumulation twin (docs/ARCHITECTURE.md "Run modes", accumulation option `dl16`): FP8 x
// FP8 products accumulated as fms-model-optimizer's AIU simulator does. The one place of the rule:
// the engine's dl16 Linears call dl16Linear, and the tests hold it against their own computation.
//   - DL8 has no subnormals: an FP8 input value (x / s as E4M3, or a weight code's value, before
//     any scale) with |v| < 2^-7 * 1.125 is flushed to 0;
//   - the reduction over the input dimension is cut into chunks of 32 (the last may be shorter);
//     each chunk's float32 dot product is rounded to DL16 (roundToDl16);
//   - the chunk results are summed in float32, in chunk order;
//   - the scales are applied after the sum, (sum * s_a[t]) * s_w[o], then the bias.
// A model of the AIU's arithmetic its authors call approximate: a twin to hold a device against.
// Torch-free, plain loops; the inner loop over output channels vectorises.
#include <cstdint>
#include <string>

namespace scalescope::dl16 {

constexpr int64_t kChunk = 32;
// DL8's smallest magnitude, 2^-7 * 1.125; FP8 values below it in magnitude are flushed to 0.
constexpr float kDl8Smallest = 0.0087890625f;
// A rounded chunk at or beyond this magnitude, 2^32 * (2 - 2^-9), becomes +-inf.
constexpr float kInfBound = 8581545984.0f;
// A rounded chunk below this magnitude, 2^-31 * (1 + 2^-9), becomes 0 (exact in float32).
constexpr float kZeroBound = 4.665707820095122e-10f;

// Whether DL8 flushes this FP8 value to 0 (|v| < kDl8Smallest; NaN is not flushed).
inline bool flushedInDl8(float value) { return value < kDl8Smallest && value > -kDl8Smallest; }
// The value as DL8 holds it: 0 when flushedInDl8, else unchanged.
inline float flushDl8(float value) { return flushedInDl8(value) ? 0.0f : value; }
// In place over n values.
void flushDl8InPlace(float* values, int64_t n);

// A float32 rounded to DL16 (1 sign, 6 exponent, 9 fraction bits, bias 31, no subnormals): 0x2000
// added to the bit pattern and the low 14 bits cleared (round half away from zero; a carry out of
// the fraction raises the exponent), then |r| >= kInfBound gives +-inf and |r| < kZeroBound gives
// +0. NaN stays NaN (the bit addition alone could carry a NaN's payload into inf).
float roundToDl16(float value);

// The dl16 dot product of n FP8 values a and b (before scales): both flushed, chunks of 32 each
// summed in float32 in index order and rounded to DL16, the chunk results summed in float32.
float chunkedDot(const float* a, const float* b, int64_t n);

// A Linear on DL16 accumulation over a range of rows:
//   y[t, o] = (chunkedDot(values[t, :], weight[o, :]) * rowScales[t]) * weightScales[o] + bias[o]
// values: [rows, in] E4M3 activation values (x / s, not yet flushed); weightT: [in, out] the
// weight codes' values transposed and already flushed (prepareWeight); weightScales: out values;
// bias: out values or null; y: [rows, out]. Rows [begin, end) are computed, so callers may split
// rows across threads.
void dl16Linear(const float* values, const float* rowScales, const float* weightT, const float* weightScales,
                const float* bias, int64_t in, int64_t out, int64_t begin, int64_t end, float* y);

// The weight operand of dl16Linear: codes' values [out, in] (row-major) flushed and transposed to [in, out].
void prepareWeight(const float* weightValues, int64_t out, int64_t in, float* weightT);

} // namespace scalescope::dl16
