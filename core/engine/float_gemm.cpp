// oneDNN (no LibTorch): the engine's float32 GEMMs.
#include "engine/float_gemm.h"

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

#include "common/error.h"
#include "engine/onednn_runtime.h"

namespace scalescope {
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

} // namespace

void floatLinear(const float* x, int64_t rows, int64_t in, const float* weight, int64_t out, const float* bias, float* y)
{
    if (rows <= 0 || out <= 0)
        return;
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

void floatBatchedMatmul(const float* a, const float* b, int64_t batch, int64_t m, int64_t k, int64_t n, bool transposedB,
                        float* c)
{
    if (batch <= 0 || m <= 0 || n <= 0)
        return;
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

} // namespace scalescope
