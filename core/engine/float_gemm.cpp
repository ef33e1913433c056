// oneDNN (no LibTorch): the engine's float32 Linears.
#include "engine/float_gemm.h"

#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "common/error.h"
#include "engine/onednn_runtime.h"

namespace scalescope {
namespace {

using dnnl::memory;

memory::desc rowMajor(int64_t rows, int64_t columns)
{
    return {{rows, columns}, memory::data_type::f32, memory::format_tag::ab};
}

// The weight as [in, out] with strides (1, in): the Linear's own [out, in] rows, no transpose.
memory::desc weightDesc(int64_t in, int64_t out)
{
    return {{in, out}, memory::data_type::f32, memory::format_tag::ba};
}

// Primitives by shape. Creating one costs far more than running a small one, and a forward asks
// for the same few shapes again and again; the map is bounded for inputs of many lengths.
class PrimitiveCache {
public:
    // A copy: primitives are shared handles, and another thread may clear the map.
    dnnl::matmul get(int64_t rows, int64_t in, int64_t out, bool bias)
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        const Key key{rows, in, out, bias};
        if (auto it = byShape_.find(key); it != byShape_.end())
            return it->second;
        if (byShape_.size() >= kMaxShapes)
            byShape_.clear();
        const memory::desc biasDesc = bias ? rowMajor(1, out) : memory::desc();
        const dnnl::matmul::desc description(rowMajor(rows, in), weightDesc(in, out), biasDesc, rowMajor(rows, out));
        return byShape_.emplace(key, dnnl::matmul(dnnl::matmul::primitive_desc(description, oneDnnCpuEngine())))
            .first->second;
    }

private:
    using Key = std::tuple<int64_t, int64_t, int64_t, bool>;
    static constexpr std::size_t kMaxShapes = 256;
    std::mutex mutex_;
    std::map<Key, dnnl::matmul> byShape_;
};

PrimitiveCache& primitives()
{
    static PrimitiveCache cache;
    return cache;
}

} // namespace

void floatLinear(const float* x, int64_t rows, int64_t in, const float* weight, int64_t out, const float* bias, float* y)
{
    if (rows <= 0 || out <= 0)
        return;
    try {
        OneDnnThreads threads;
        const dnnl::matmul matmul = primitives().get(rows, in, out, bias != nullptr);
        dnnl::engine& engine = oneDnnCpuEngine();
        // oneDNN's memory objects take non-const pointers; it only reads the sources.
        memory src(rowMajor(rows, in), engine, const_cast<float*>(x));
        memory weights(weightDesc(in, out), engine, const_cast<float*>(weight));
        memory dst(rowMajor(rows, out), engine, y);
        std::unordered_map<int, memory> arguments{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
        if (bias)
            arguments.emplace(DNNL_ARG_BIAS, memory(rowMajor(1, out), engine, const_cast<float*>(bias)));
        dnnl::stream stream(engine);
        matmul.execute(stream, arguments);
        stream.wait();
    } catch (const dnnl::error& e) {
        throw Error("oneDNN's float32 matmul failed for a " + std::to_string(rows) + "x" + std::to_string(in) + " by " +
                    std::to_string(in) + "x" + std::to_string(out) + " Linear (" + e.what() + ").");
    }
}

} // namespace scalescope
