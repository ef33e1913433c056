// oneDNN and the BLAS LibTorch links (no LibTorch headers): the engine's float32 GEMMs on either path.
#include "engine/float_gemm.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

#include "common/error.h"
#include "engine/compute_threads.h"
#include "engine/onednn_runtime.h"

namespace scalescope {

// The path in force lives beside the GEMMs that read it; float_gemm_choice decides it.
namespace {
constexpr int kNotForced = -1;
std::atomic<int> forcedPath{kNotForced};
std::atomic<int> chosenPath{static_cast<int>(FloatGemmPath::OneDnn)};
} // namespace

void setChosenFloatGemmPath(FloatGemmPath path)
{
    chosenPath.store(static_cast<int>(path));
}

FloatGemmPath floatGemmPath()
{
    const int forced = forcedPath.load();
    return static_cast<FloatGemmPath>(forced != kNotForced ? forced : chosenPath.load());
}

bool floatGemmPathForced()
{
    return forcedPath.load() != kNotForced;
}

void forceFloatGemmPath(const FloatGemmPath* path)
{
    forcedPath.store(path ? static_cast<int>(*path) : kNotForced);
    placeComputeThreads(floatGemmPath() == FloatGemmPath::Blas);
}

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

memory::desc floats(const memory::dims& dims, Tag tag)
{
    return {dims, memory::data_type::f32, tag};
}

// The weight as [in, out] with strides (1, in): the Linear's own [out, in] rows, no transpose.
memory::desc linearWeight(int64_t in, int64_t out)
{
    return floats({in, out}, Tag::ba);
}

// b of a batched product: [batch, k, n] row-major, or [batch, n, k] row-major read as its transpose.
memory::desc batchedRight(int64_t batch, int64_t k, int64_t n, bool transposed)
{
    return floats({batch, k, n}, transposed ? Tag::acb : Tag::abc);
}

enum class Kind { Linear, LinearWithBias, Batched, BatchedTransposed };

// Primitives by shape. Creating one costs far more than running a small one, and a forward asks
// for the same few shapes again and again; the map is bounded for inputs of many lengths.
class PrimitiveCache {
public:
    using Key = std::tuple<Kind, int64_t, int64_t, int64_t, int64_t>; // kind, batch, m, k, n

    // A copy: primitives are shared handles, and another thread may clear the map.
    dnnl::matmul get(const Key& key, const std::function<dnnl::matmul::desc()>& describe)
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (auto it = byShape_.find(key); it != byShape_.end())
            return it->second;
        if (byShape_.size() >= kMaxShapes)
            byShape_.clear();
        return byShape_.emplace(key, dnnl::matmul(dnnl::matmul::primitive_desc(describe(), oneDnnCpuEngine())))
            .first->second;
    }

private:
    static constexpr std::size_t kMaxShapes = 256;
    std::mutex mutex_;
    std::map<Key, dnnl::matmul> byShape_;
};

PrimitiveCache& primitives()
{
    static PrimitiveCache cache;
    return cache;
}

std::string shapeText(int64_t batch, int64_t m, int64_t k, int64_t n)
{
    return (batch > 1 ? std::to_string(batch) + " x " : std::string()) + std::to_string(m) + "x" + std::to_string(k) +
           " by " + std::to_string(k) + "x" + std::to_string(n);
}

// Runs a primitive on the compute threads; oneDNN's memory objects take non-const pointers, and
// it only reads the sources.
void execute(const dnnl::matmul& matmul, std::unordered_map<int, memory> arguments)
{
    OneDnnThreads threads;
    dnnl::stream stream(oneDnnCpuEngine());
    matmul.execute(stream, arguments);
    stream.wait();
}

void oneDnnLinear(const float* x, int64_t rows, int64_t in, const float* weight, int64_t out, const float* bias, float* y)
{
    try {
        const memory::desc src = floats({rows, in}, Tag::ab), dst = floats({rows, out}, Tag::ab);
        const memory::desc biasDesc = bias ? floats({1, out}, Tag::ab) : memory::desc();
        const dnnl::matmul matmul =
            primitives().get({bias ? Kind::LinearWithBias : Kind::Linear, 1, rows, in, out}, [&] {
                return dnnl::matmul::desc(src, linearWeight(in, out), biasDesc, dst);
            });
        dnnl::engine& engine = oneDnnCpuEngine();
        std::unordered_map<int, memory> arguments{{DNNL_ARG_SRC, memory(src, engine, const_cast<float*>(x))},
                                                  {DNNL_ARG_WEIGHTS, memory(linearWeight(in, out), engine, const_cast<float*>(weight))},
                                                  {DNNL_ARG_DST, memory(dst, engine, y)}};
        if (bias)
            arguments.emplace(DNNL_ARG_BIAS, memory(biasDesc, engine, const_cast<float*>(bias)));
        execute(matmul, std::move(arguments));
    } catch (const dnnl::error& e) {
        throw Error("oneDNN's float32 matmul failed for a " + shapeText(1, rows, in, out) + " Linear (" + e.what() + ").");
    }
}

void oneDnnBatchedMatmul(const float* a, const float* b, int64_t batch, int64_t m, int64_t k, int64_t n, bool transposedB,
                         float* c)
{
    try {
        const memory::desc src = floats({batch, m, k}, Tag::abc), dst = floats({batch, m, n}, Tag::abc);
        const memory::desc right = batchedRight(batch, k, n, transposedB);
        const dnnl::matmul matmul =
            primitives().get({transposedB ? Kind::BatchedTransposed : Kind::Batched, batch, m, k, n},
                             [&] { return dnnl::matmul::desc(src, right, dst); });
        dnnl::engine& engine = oneDnnCpuEngine();
        execute(matmul, {{DNNL_ARG_SRC, memory(src, engine, const_cast<float*>(a))},
                         {DNNL_ARG_WEIGHTS, memory(right, engine, const_cast<float*>(b))},
                         {DNNL_ARG_DST, memory(dst, engine, c)}});
    } catch (const dnnl::error& e) {
        throw Error("oneDNN's float32 matmul failed for " + shapeText(batch, m, k, n) + " (" + e.what() + ").");
    }
}

// The Fortran BLAS sgemm of the library LibTorch links (libblas.so.3: OpenBLAS where
// packaging/install-deps.sh set it up), found in the process as LibTorch's at::linear finds it.
using Sgemm = void (*)(const char* transA, const char* transB, const int* m, const int* n, const int* k, const float* alpha,
                       const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
                       const int* ldc);

Sgemm blasSgemm()
{
    static const Sgemm sgemm = reinterpret_cast<Sgemm>(dlsym(RTLD_DEFAULT, "sgemm_"));
    return sgemm;
}

int blasDimension(int64_t value, const char* what)
{
    if (value > std::numeric_limits<int>::max())
        throw Error(std::string("A float32 product's ") + what + " (" + std::to_string(value) +
                    ") is too large for the BLAS's 32-bit sizes.");
    return static_cast<int>(value);
}

// Row-major C = A op(B) is column-major C^T = op(B)^T A^T: the BLAS sees every operand transposed,
// so no copy is made. y = x W^T: C^T [out, rows] = W [out, in] (stored as its transpose) x^T.
void blasLinear(const float* x, int64_t rows, int64_t in, const float* weight, int64_t out, const float* bias, float* y)
{
    const Sgemm sgemm = blasSgemm();
    if (!sgemm)
        throw Error("The BLAS LibTorch links has no sgemm; the float32 GEMM cannot run on it.");
    const int m = blasDimension(out, "output width"), n = blasDimension(rows, "row count"),
              k = blasDimension(in, "input width");
    float beta = 0;
    if (bias) { // as at::addmm does: the bias in the output, accumulated into
        for (int64_t row = 0; row < rows; ++row)
            std::copy(bias, bias + out, y + row * out);
        beta = 1;
    }
    const float alpha = 1;
    sgemm("T", "N", &m, &n, &k, &alpha, weight, &k, x, &k, &beta, y, &m);
}

void blasBatchedMatmul(const float* a, const float* b, int64_t batch, int64_t m, int64_t k, int64_t n, bool transposedB,
                       float* c)
{
    const Sgemm sgemm = blasSgemm();
    if (!sgemm)
        throw Error("The BLAS LibTorch links has no sgemm; the float32 GEMM cannot run on it.");
    const int rowsOfC = blasDimension(m, "row count"), columnsOfC = blasDimension(n, "column count"),
              depth = blasDimension(k, "inner size");
    const float alpha = 1, beta = 0;
    const int ldb = transposedB ? depth : columnsOfC;
    for (int64_t i = 0; i < batch; ++i) // as LibTorch's bmm on a BLAS: one call per matrix
        sgemm(transposedB ? "T" : "N", "N", &columnsOfC, &rowsOfC, &depth, &alpha, b + i * k * n, &ldb, a + i * m * k,
              &depth, &beta, c + i * m * n, &columnsOfC);
}

} // namespace

void floatLinearOn(FloatGemmPath path, const float* x, int64_t rows, int64_t in, const float* weight, int64_t out,
                   const float* bias, float* y)
{
    if (rows <= 0 || out <= 0)
        return;
    if (in <= 0) { // an empty sum: the bias alone
        for (int64_t row = 0; row < rows; ++row)
            for (int64_t o = 0; o < out; ++o)
                y[row * out + o] = bias ? bias[o] : 0.0f;
        return;
    }
    if (path == FloatGemmPath::Blas)
        blasLinear(x, rows, in, weight, out, bias, y);
    else
        oneDnnLinear(x, rows, in, weight, out, bias, y);
}

void floatBatchedMatmulOn(FloatGemmPath path, const float* a, const float* b, int64_t batch, int64_t m, int64_t k,
                          int64_t n, bool transposedB, float* c)
{
    if (batch <= 0 || m <= 0 || n <= 0)
        return;
    if (k <= 0) {
        std::fill(c, c + batch * m * n, 0.0f);
        return;
    }
    if (path == FloatGemmPath::Blas)
        blasBatchedMatmul(a, b, batch, m, k, n, transposedB, c);
    else
        oneDnnBatchedMatmul(a, b, batch, m, k, n, transposedB, c);
}

void floatLinear(const float* x, int64_t rows, int64_t in, const float* weight, int64_t out, const float* bias, float* y)
{
    floatLinearOn(floatGemmPath(), x, rows, in, weight, out, bias, y);
}

void floatBatchedMatmul(const float* a, const float* b, int64_t batch, int64_t m, int64_t k, int64_t n, bool transposedB,
                        float* c)
{
    floatBatchedMatmulOn(floatGemmPath(), a, b, batch, m, k, n, transposedB, c);
}

} // namespace scalescope
