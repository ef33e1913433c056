#pragma once
// Float32 Linears, y = x W^T + b, and attention's per-head products, on the float32 GEMM this
// machine runs fastest. Every float32 product of the engine runs here (the reference model, dequant
// and fp16 modes, float overrides, unquantized Linears, attention's matmuls), and float-heavy runs
// are most of a sensitivity sweep.
//
// Which GEMM: no fixed choice is right on every machine this runs on (OpenBLAS picked an SSE3
// kernel on an AMX Xeon it did not recognise, while on an AVX512_BF16 EPYC it beat oneDNN's float32
// matmul by ~1.5x). So the candidates are timed at a model's own shapes the first time a model of
// those shapes loads, checked against a float64 recomputation, and the fastest is used
// (chooseFloatGemm). Each is timed inside whole float32 layers (matmul_benchmark.h
// measureFloatLayerGflops), element-wise work included, because the path also decides where that
// work runs: beside OpenBLAS's threads LibTorch keeps one (compute_threads.h). On an AVX2 EPYC
// OpenBLAS's bare GEMMs ran 150 GFLOP/s against oneDNN's 134, yet a reference forward took
// 711-776 ms on OpenBLAS and 580-612 ms on oneDNN. The measurement is kept per CPU, library
// versions, threads and shapes in the user's cache folder, so a later start costs nothing, and the
// processes of one machine agree: one measures at a time, and the first one's choice stands (a
// CPU runner's float32 results match the workbench's bit for bit only on the same path).
// SCALESCOPE_FLOAT_GEMM=blas|onednn overrides the measurement (tests, and a user who knows better);
// =measure measures again and rewrites the cache (a first run on a busy machine may have measured
// badly).
//
// The weight is read in place in a Linear's own [out, in] layout by both candidates: no packed
// copy, so a model's memory does not double.
//
// Numerics: each output is a float32 accumulation of float32 products, as any float32 GEMM; only
// the summation order depends on the path. Torch-free; errors throw scalescope::Error.
#include <cstdint>
#include <string>
#include <vector>

namespace scalescope {

// Blas: LibTorch's own BLAS (OpenBLAS on a machine set up by packaging/install-deps.sh), called as
// LibTorch's at::linear calls it. OneDnn: oneDNN's float32 matmul.
enum class FloatGemmPath { OneDnn, Blas };

const char* floatGemmPathName(FloatGemmPath path); // "onednn", "blas"

struct FloatGemmCandidate {
    FloatGemmPath path = FloatGemmPath::OneDnn;
    double gflops = 0;   // a float32 layer's products per second at the model's shapes, its element-wise
                         // work counted as time; 0 when not timed
    std::string problem; // why it was not a candidate (unavailable, failed its self-check), or ""
};

struct FloatGemmChoice {
    FloatGemmPath path = FloatGemmPath::OneDnn;
    std::string source;   // "measured", "cached", "SCALESCOPE_FLOAT_GEMM" or "default"
    int64_t hidden = 0, intermediate = 0, rows = 0; // the shapes it was made for
    std::vector<FloatGemmCandidate> candidates;
};

// Chooses the float32 GEMM for a model with these widths (rows: a typical token count) and makes it
// the one floatLinear and floatBatchedMatmul use from now on; the thread placement follows it
// (compute_threads.h). Measures on the first call for these shapes on this machine (about 2.5 s at
// roberta-base size), then reads the cache. Thread-safe.
const FloatGemmChoice& chooseFloatGemm(int64_t hidden, int64_t intermediate, int64_t rows = 384);
// The path in use (OneDnn until a choice is made).
FloatGemmPath floatGemmPath();
// What chooseFloatGemm decided (float_gemm_choice.cpp); a forced path still wins.
void setChosenFloatGemmPath(FloatGemmPath path);
// What SCALESCOPE_FLOAT_GEMM asks for: "blas", "onednn", "measure" or "" (unset or empty); any other
// value throws scalescope::Error naming the variable (common/environment.h).
std::string floatGemmRequestFromEnvironment();
// Forces a path from now on (null: back to the last choice); tests compare paths with it.
void forceFloatGemmPath(const FloatGemmPath* path);
// Whether a path is forced now.
bool floatGemmPathForced();
// One line for About, --version and the bench: the path in use and how it was chosen. Makes the
// choice for roberta-base's shapes when no model has been loaded yet.
std::string floatGemmDescription();
// A small product with bias on `path` against a float64 recomputation: "" when every output is
// within float32 accumulation's error bound, otherwise what failed.
std::string floatGemmSelfCheck(FloatGemmPath path);
// The cache file of the measurements (in $XDG_CACHE_HOME or ~/.cache, scalescope/float-gemm.json).
std::string floatGemmCacheFile();

// x: [rows, in] row-major; weight: [out, in] row-major; bias: `out` values or null;
// y: [rows, out] row-major, written.
void floatLinear(const float* x, int64_t rows, int64_t in, const float* weight, int64_t out, const float* bias, float* y);

// c[i] = a[i] b[i] (or a[i] b[i]^T when transposedB) for i < batch, float32: attention's per-head
// products. a: [batch, m, k]; b: [batch, k, n], or [batch, n, k] when transposedB; c: [batch, m, n];
// all row-major and contiguous.
void floatBatchedMatmul(const float* a, const float* b, int64_t batch, int64_t m, int64_t k, int64_t n, bool transposedB,
                        float* c);

// The same products on one given path (the choice's measurement and tests).
void floatLinearOn(FloatGemmPath path, const float* x, int64_t rows, int64_t in, const float* weight, int64_t out,
                   const float* bias, float* y);
void floatBatchedMatmulOn(FloatGemmPath path, const float* a, const float* b, int64_t batch, int64_t m, int64_t k,
                          int64_t n, bool transposedB, float* c);

} // namespace scalescope
