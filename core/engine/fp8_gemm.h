#pragma once
// FP8 Linears on the CPU's bfloat16 units. Every E4M3 value is exactly a bfloat16, and the product
// of two E4M3 values (at most 8 significant bits) is exact, so a bf16 x bf16 GEMM that accumulates
// in float32 and writes float32 computes sum_k qa[t,k] * qw[o,k] as exactly as a float32 GEMM on the
// same values does (only the summation order differs); the scales factor out of the sum:
//   y[t, o] = s_a[t] * s_w[o] * sum_k qa[t, k] * qw[o, k] + bias[o]
// for per-token or per-tensor activation scales and per-channel or per-tensor weight scales.
// The GEMM is oneDNN's matmul (bf16 sources, f32 destination), the same oneDNN LibTorch uses.
//
// Which path fp8 mode takes is decided once per process (fp8GemmPath): bf16 when oneDNN reports
// AVX512_BF16 (or newer), picks a bf16 kernel and a self-check agrees with a float64
// recomputation; otherwise the float32 path (dequantize, then the float32 GEMM of float_gemm.h).
// The environment variable SCALESCOPE_FP8_GEMM=float32 forces the float32 path; =factored-float32
// runs the factored GEMM with float32 sources (the same numbers as bf16, no faster than float32:
// it lets machines without bf16 run and test this code). Linears whose scheme does not factor this
// way (weight-only FP8, block or group scales) always take the float32 path.
//
// Torch-free: the engine's LibTorch code hands plain float pointers in. Threading: a
// Fp8FactoredGemm caches its oneDNN primitives per row count, so it must not run from two threads at
// once (the engine is not used from two threads at once). Errors: oneDNN failures at construction
// throw scalescope::Error naming the Linear.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace scalescope {

// Bf16: the factored GEMM on bf16 sources. FactoredFloat32: the same GEMM on float32 sources.
// Float32: dequantized values through the float32 GEMM (no factoring).
enum class Fp8GemmPath { Bf16, FactoredFloat32, Float32 };

struct Fp8GemmStatus {
    bool bf16Available = false; // the start-up decision (CPU, oneDNN kernel, self-check)
    std::string bf16Kernel;     // oneDNN's implementation name, when available
    std::string reason;         // why not, when not available
};

// Decided on first call (thread-safe), then fixed.
const Fp8GemmStatus& fp8GemmStatus();
// The path fp8-mode Linears take now: the start-up decision (Bf16 when available, else Float32)
// unless SCALESCOPE_FP8_GEMM or forceFp8GemmPath chose another.
Fp8GemmPath fp8GemmPath();
// The path SCALESCOPE_FP8_GEMM forces, nullopt when it is unset or empty; any other value than
// float32 and factored-float32 throws scalescope::Error naming the variable (common/environment.h).
std::optional<Fp8GemmPath> fp8GemmPathFromEnvironment();
// Forces a path for models loaded and forwards run from now on (null: back to the start-up
// decision); forcing Bf16 where it is unavailable is ignored. Tests use it to compare paths.
void forceFp8GemmPath(const Fp8GemmPath* path);
// A small factored GEMM on `sources` (Bf16 or FactoredFloat32) against a float64 recomputation of
// the same FP8 products: "" when every output is within float32 accumulation's error bound,
// otherwise what failed. The start-up decision runs it for Bf16.
std::string fp8GemmSelfCheck(Fp8GemmPath sources);
// One line for About, --version and the bench: which path runs, and why when it is the fallback.
std::string fp8GemmDescription();

class Fp8FactoredGemm {
public:
    // codes: E4M3 weight codes [out, in], row-major; weightScales: one per output channel (a
    // per-tensor scale repeated); bias: `out` values or empty; sources: Bf16 or FactoredFloat32.
    // The codes are converted once and kept in oneDNN's preferred layout; nothing points back into
    // `codes` afterwards.
    Fp8FactoredGemm(const std::string& module, const uint8_t* codes, int64_t out, int64_t in,
                    std::vector<float> weightScales, std::vector<float> bias, Fp8GemmPath sources);
    // The same over weights stacked along `out` (q, k and v as one GEMM) read where they lie (the
    // checkpoint's mapping): `rows` code rows of width `in` from each block in turn, out = their sum.
    struct CodeRows {
        const uint8_t* codes;
        int64_t rows;
    };
    Fp8FactoredGemm(const std::string& module, const std::vector<CodeRows>& stacked, int64_t in,
                    std::vector<float> weightScales, std::vector<float> bias, Fp8GemmPath sources);
    // The same converted codes under other scales and bias (the fp16 twin's half-rounded ones):
    // the weight buffers are shared with `sameCodes`, not copied.
    Fp8FactoredGemm(const Fp8FactoredGemm& sameCodes, std::vector<float> weightScales, std::vector<float> bias);
    ~Fp8FactoredGemm();
    Fp8FactoredGemm(const Fp8FactoredGemm&) = delete;
    Fp8FactoredGemm& operator=(const Fp8FactoredGemm&) = delete;

    const std::string& module() const; // the name it was made under (a Linear, or a layer's "<layer>.qkv")
    int64_t inFeatures() const;
    int64_t outFeatures() const;

    // Called with each chunk of rows [begin, end) of y once the epilogue has written them, on the
    // compute thread that wrote them (chunks may run concurrently): a caller that reads every
    // output (the forward's non-finite scan) does so while the rows are still in cache, instead
    // of another pass over y.
    using RowsDone = std::function<void(int64_t begin, int64_t end)>;
    // values: [rows, in] E4M3 values of the activations (x / s rounded, not scaled back; exact
    // in bf16); rowScales: the activation scale of each row; y: [rows, out] float32.
    void run(const float* values, const float* rowScales, int64_t rows, float* y, const RowsDone& rowsDone = {}) const;
    // The same with the values already as bfloat16 bits (activation_kernels.h
    // quantizeActivationsToBf16), when readsBf16(): no conversion pass.
    bool readsBf16() const;
    void runBf16(const uint16_t* values, const float* rowScales, int64_t rows, float* y,
                 const RowsDone& rowsDone = {}) const;
    // The GEMM alone, y = values x codes^T without scales or bias (values as the sources' type):
    // the bare rate benchmarks compare a forward with.
    void multiply(const void* values, int64_t rows, float* y) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace scalescope
