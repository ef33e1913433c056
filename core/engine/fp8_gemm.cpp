// oneDNN (no LibTorch): FP8 Linears as bf16 x bf16 -> float32 GEMMs, and the start-up decision.
#include "engine/fp8_gemm.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

#include "common/cpu_clones.h"
#include "common/environment.h"
#include "common/error.h"
#include "engine/compute_threads.h"
#include "engine/onednn_runtime.h"
#include "numerics/fp8.h"

namespace scalescope {
namespace {

constexpr int kNotForced = -1;
std::atomic<int> forcedPath{kNotForced};

// E4M3 values are exact in bfloat16, whose bits are the float32's upper half.
uint16_t exactBf16(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return static_cast<uint16_t>(bits >> 16);
}

// 64-byte lanes: one AVX-512 register in that clone, two AVX2 or four SSE2 ones in the others.
typedef float EpilogueLanes __attribute__((vector_size(64)));
constexpr int64_t kEpilogueLanes = sizeof(EpilogueLanes) / sizeof(float);

// y[o] = y[o] * rowScale * scales[o] (+ bias[o]), left to right, in every clone and the tail alike.
SCALESCOPE_CPU_CLONES void scaleRowAndAddBias(float* line, int64_t width, float rowScale, const float* scales,
                                              const float* bias)
{
    int64_t o = 0;
    for (; o + kEpilogueLanes <= width; o += kEpilogueLanes) {
        EpilogueLanes values, channelScales;
        std::memcpy(&values, line + o, sizeof values);
        std::memcpy(&channelScales, scales + o, sizeof channelScales);
        values = values * rowScale * channelScales;
        if (bias) {
            EpilogueLanes biases;
            std::memcpy(&biases, bias + o, sizeof biases);
            values = values + biases;
        }
        std::memcpy(line + o, &values, sizeof values);
    }
    for (; o < width; ++o)
        line[o] = bias ? line[o] * rowScale * scales[o] + bias[o] : line[o] * rowScale * scales[o];
}

} // namespace

struct Fp8FactoredGemm::Impl {
    std::string module;
    dnnl::memory::data_type sourceType = dnnl::memory::data_type::bf16;
    int64_t out = 0, in = 0;
    std::vector<float> weightScales, bias;
    // The weight in the layout each primitive wants (one layout in practice), made from the first.
    std::vector<dnnl::memory> weightLayouts;
    struct Primitive {
        dnnl::matmul matmul;
        dnnl::memory weights;
    };
    mutable std::map<int64_t, Primitive> byRows;
    static constexpr std::size_t kMaxCachedRowCounts = 64;

    dnnl::memory::desc srcDesc(int64_t rows) const
    {
        return {{rows, in}, sourceType, dnnl::memory::format_tag::ab};
    }
    dnnl::memory::desc dstDesc(int64_t rows) const
    {
        return {{rows, out}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab};
    }

    dnnl::matmul::primitive_desc describe(int64_t rows) const
    {
        const dnnl::memory::desc anyWeights({in, out}, sourceType, dnnl::memory::format_tag::any);
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(srcDesc(rows), anyWeights, dstDesc(rows)), oneDnnCpuEngine());
    }

    // The weight in `wanted`'s layout: reordered from the first layout when it differs.
    dnnl::memory weightsIn(const dnnl::memory::desc& wanted)
    {
        for (const dnnl::memory& layout : weightLayouts)
            if (layout.get_desc() == wanted)
                return layout;
        dnnl::memory converted(wanted, oneDnnCpuEngine());
        dnnl::stream stream(oneDnnCpuEngine());
        dnnl::memory source = weightLayouts.front();
        dnnl::reorder(source, converted).execute(stream, source, converted);
        stream.wait();
        weightLayouts.push_back(converted);
        return converted;
    }

    // The epilogue: y = s_a[t] * s_w[o] * sum + bias[o], rows spread over the compute threads;
    // rowsDone (when set) sees each group of rows right after it, while the group (about 64 KB) is
    // in the core's cache: a thread's share of the rows is megabytes, more than its cache holds.
    void applyScalesAndBias(const float* rowScales, int64_t rows, float* y, const RowsDone& rowsDone) const
    {
        const float* scales = weightScales.data();
        const float* b = bias.empty() ? nullptr : bias.data();
        const int64_t width = out;
        const int64_t group = std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1));
        parallelFor(rows, group, [&](int64_t begin, int64_t end) {
            for (int64_t first = begin; first < end; first += group) {
                const int64_t last = std::min(end, first + group);
                for (int64_t row = first; row < last; ++row)
                    scaleRowAndAddBias(y + row * width, width, rowScales[row], scales, b);
                if (rowsDone)
                    rowsDone(first, last);
            }
        });
    }

    const Primitive& primitive(int64_t rows)
    {
        if (auto it = byRows.find(rows); it != byRows.end())
            return it->second;
        if (byRows.size() >= kMaxCachedRowCounts)
            byRows.clear();
        const dnnl::matmul::primitive_desc description = describe(rows);
        Primitive made{dnnl::matmul(description), weightsIn(description.weights_desc())};
        return byRows.emplace(rows, std::move(made)).first->second;
    }
};

Fp8FactoredGemm::Fp8FactoredGemm(const std::string& module, const uint8_t* codes, int64_t out, int64_t in,
                                 std::vector<float> weightScales, std::vector<float> bias, Fp8GemmPath sources)
    : Fp8FactoredGemm(module, std::vector<CodeRows>{{codes, out}}, in, std::move(weightScales), std::move(bias), sources)
{
}

Fp8FactoredGemm::Fp8FactoredGemm(const std::string& module, const std::vector<CodeRows>& stacked, int64_t in,
                                 std::vector<float> weightScales, std::vector<float> bias, Fp8GemmPath sources)
    : impl_(std::make_unique<Impl>())
{
    Impl& m = *impl_;
    // Each output row's codes, wherever its block lies: no stacked copy of the codes is made.
    std::vector<const uint8_t*> rowCodes;
    for (const CodeRows& block : stacked)
        for (int64_t row = 0; row < block.rows; ++row)
            rowCodes.push_back(block.codes + row * in);
    const int64_t out = static_cast<int64_t>(rowCodes.size());
    m.module = module;
    m.out = out;
    m.in = in;
    m.weightScales = std::move(weightScales);
    m.bias = std::move(bias);
    const bool bf16 = sources == Fp8GemmPath::Bf16;
    m.sourceType = bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
    if (static_cast<int64_t>(m.weightScales.size()) != out || (!m.bias.empty() && static_cast<int64_t>(m.bias.size()) != out))
        throw Error("Linear '" + module + "': the factored FP8 GEMM needs one weight scale and bias value per output channel.");
    try {
        OneDnnThreads threads;
        // The weight as [in, out] with strides (1, in): the codes' own [out, in] rows, no transpose.
        const std::size_t count = static_cast<std::size_t>(out * in);
        // Not value-initialised: every element is written below, and zeroing 170 MB (roberta-base)
        // first cost a fifth of the load.
        const std::unique_ptr<uint16_t[]> plainBf16(bf16 ? new uint16_t[count] : nullptr);
        const std::unique_ptr<float[]> plainFloat(bf16 ? nullptr : new float[count]);
        // Decoded through a table of the 256 values, rows spread over the compute threads: this is
        // most of an FP8 checkpoint's load time.
        uint16_t bf16Table[256];
        float floatTable[256];
        for (int code = 0; code < 256; ++code) {
            floatTable[code] = fp8::decodeE4M3(static_cast<uint8_t>(code));
            bf16Table[code] = exactBf16(floatTable[code]);
        }
        parallelFor(out, std::max<int64_t>(1, 65536 / std::max<int64_t>(in, 1)), [&](int64_t begin, int64_t end) {
            for (int64_t row = begin; row < end; ++row) {
                const uint8_t* codes = rowCodes[static_cast<std::size_t>(row)];
                const std::size_t first = static_cast<std::size_t>(row * in);
                if (bf16)
                    for (int64_t i = 0; i < in; ++i)
                        plainBf16[first + static_cast<std::size_t>(i)] = bf16Table[codes[i]];
                else
                    for (int64_t i = 0; i < in; ++i)
                        plainFloat[first + static_cast<std::size_t>(i)] = floatTable[codes[i]];
            }
        });
        void* plain = bf16 ? static_cast<void*>(plainBf16.get()) : static_cast<void*>(plainFloat.get());
        const dnnl::memory::desc plainDesc({in, out}, m.sourceType, dnnl::memory::format_tag::ba);
        dnnl::memory plainWeights(plainDesc, oneDnnCpuEngine(), plain);
        const dnnl::matmul::primitive_desc description = m.describe(384);
        dnnl::memory preferred(description.weights_desc(), oneDnnCpuEngine());
        dnnl::stream stream(oneDnnCpuEngine());
        dnnl::reorder(plainWeights, preferred).execute(stream, plainWeights, preferred);
        stream.wait();
        m.weightLayouts.push_back(preferred);
    } catch (const dnnl::error& e) {
        throw Error("Linear '" + module + "': oneDNN could not set up its factored FP8 GEMM (" + e.what() + ").");
    }
}

Fp8FactoredGemm::Fp8FactoredGemm(const Fp8FactoredGemm& sameCodes, std::vector<float> weightScales,
                                 std::vector<float> bias)
    : impl_(std::make_unique<Impl>())
{
    const Impl& from = *sameCodes.impl_;
    Impl& m = *impl_;
    m.module = from.module;
    m.sourceType = from.sourceType;
    m.out = from.out;
    m.in = from.in;
    m.weightScales = std::move(weightScales);
    m.bias = std::move(bias);
    if (static_cast<int64_t>(m.weightScales.size()) != m.out || (!m.bias.empty() && static_cast<int64_t>(m.bias.size()) != m.out))
        throw Error("Linear '" + m.module + "': the factored FP8 GEMM needs one weight scale and bias value per output channel.");
    m.weightLayouts = from.weightLayouts; // oneDNN memory objects are handles: the buffers are shared
}

Fp8FactoredGemm::~Fp8FactoredGemm() = default;

const std::string& Fp8FactoredGemm::module() const
{
    return impl_->module;
}

int64_t Fp8FactoredGemm::inFeatures() const
{
    return impl_->in;
}

int64_t Fp8FactoredGemm::outFeatures() const
{
    return impl_->out;
}

bool Fp8FactoredGemm::readsBf16() const
{
    return impl_->sourceType == dnnl::memory::data_type::bf16;
}

void Fp8FactoredGemm::multiply(const void* values, int64_t rows, float* y) const
{
    Impl& m = *impl_;
    if (rows <= 0)
        return;
    OneDnnThreads threads;
    const Impl::Primitive& primitive = m.primitive(rows);
    dnnl::memory src(m.srcDesc(rows), oneDnnCpuEngine(), const_cast<void*>(values));
    dnnl::memory dst(m.dstDesc(rows), oneDnnCpuEngine(), y);
    dnnl::stream stream(oneDnnCpuEngine());
    primitive.matmul.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, primitive.weights}, {DNNL_ARG_DST, dst}});
    stream.wait();
}

void Fp8FactoredGemm::runBf16(const uint16_t* values, const float* rowScales, int64_t rows, float* y,
                              const RowsDone& rowsDone) const
{
    const Impl& m = *impl_;
    if (rows <= 0)
        return;
    if (!readsBf16())
        throw Error("Linear '" + m.module + "': its factored GEMM reads float32 values, not bf16.");
    multiply(values, rows, y);
    m.applyScalesAndBias(rowScales, rows, y, rowsDone);
}

void Fp8FactoredGemm::run(const float* values, const float* rowScales, int64_t rows, float* y,
                          const RowsDone& rowsDone) const
{
    const Impl& m = *impl_;
    if (rows <= 0)
        return;
    if (readsBf16()) {
        std::vector<uint16_t> bf16Values(static_cast<std::size_t>(rows * m.in));
        for (std::size_t i = 0; i < bf16Values.size(); ++i)
            bf16Values[i] = exactBf16(values[i]);
        runBf16(bf16Values.data(), rowScales, rows, y, rowsDone);
        return;
    }
    multiply(values, rows, y);
    m.applyScalesAndBias(rowScales, rows, y, rowsDone);
}

namespace {

// Random E4M3 codes without NaN.
std::vector<uint8_t> randomCodes(std::mt19937& random, std::size_t n)
{
    std::vector<uint8_t> codes(n);
    for (uint8_t& code : codes) {
        do
            code = static_cast<uint8_t>(random() & 0xFF);
        while ((code & 0x7F) == fp8::kE4M3NaN);
    }
    return codes;
}

} // namespace

std::string fp8GemmSelfCheck(Fp8GemmPath sources)
{
    const int64_t rows = 37, in = 200, out = 72;
    std::mt19937 random(19);
    const std::vector<uint8_t> a = randomCodes(random, static_cast<std::size_t>(rows * in));
    const std::vector<uint8_t> w = randomCodes(random, static_cast<std::size_t>(out * in));
    std::vector<float> values(a.size()), rowScales(static_cast<std::size_t>(rows)), weightScales(static_cast<std::size_t>(out)),
        bias(static_cast<std::size_t>(out)), y(static_cast<std::size_t>(rows * out));
    for (std::size_t i = 0; i < a.size(); ++i)
        values[i] = fp8::decodeE4M3(a[i]);
    std::uniform_real_distribution<float> scale(0.001f, 0.1f), offset(-1.0f, 1.0f);
    for (float& s : rowScales) s = scale(random);
    for (float& s : weightScales) s = scale(random);
    for (float& b : bias) b = offset(random);
    Fp8FactoredGemm gemm("self-check", w.data(), out, in, weightScales, bias, sources);
    gemm.run(values.data(), rowScales.data(), rows, y.data());
    for (int64_t t = 0; t < rows; ++t) {
        for (int64_t o = 0; o < out; ++o) {
            double sum = 0, magnitude = 0;
            for (int64_t k = 0; k < in; ++k) {
                const double p = double(values[std::size_t(t * in + k)]) * fp8::decodeE4M3(w[std::size_t(o * in + k)]);
                sum += p;
                magnitude += std::fabs(p);
            }
            const double s = double(rowScales[std::size_t(t)]) * weightScales[std::size_t(o)];
            const double exact = s * sum + bias[std::size_t(o)];
            const double bound = double(in + 4) * std::ldexp(1.0, -23) * (s * magnitude + std::fabs(bias[std::size_t(o)]));
            if (!(std::fabs(y[std::size_t(t * out + o)] - exact) <= bound))
                return "its self-check disagreed with a float64 recomputation";
        }
    }
    return {};
}

namespace {

Fp8GemmStatus decide()
{
    Fp8GemmStatus status;
    const unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const unsigned bf16Isa = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    if ((isa & bf16Isa) != bf16Isa) {
        status.reason = "the CPU has no AVX512_BF16";
        return status;
    }
    try {
        const dnnl::memory::desc src({384, 768}, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::ab);
        const dnnl::memory::desc weights({768, 768}, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::any);
        const dnnl::memory::desc dst({384, 768}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
        const dnnl::matmul::primitive_desc description(dnnl::matmul::desc(src, weights, dst), oneDnnCpuEngine());
        const std::string kernel = description.impl_info_str();
        if (kernel.rfind("ref", 0) == 0 || (kernel.find("bf16") == std::string::npos && kernel.find("amx") == std::string::npos)) {
            status.reason = "oneDNN offers no fast bf16 kernel (" + kernel + ")";
            return status;
        }
        if (std::string problem = fp8GemmSelfCheck(Fp8GemmPath::Bf16); !problem.empty()) {
            status.reason = "oneDNN's bf16 kernel " + kernel + " failed " + problem;
            return status;
        }
        status.bf16Kernel = kernel;
        status.bf16Available = true;
    } catch (const std::exception& e) {
        status.reason = std::string("oneDNN's bf16 matmul failed (") + e.what() + ")";
    }
    return status;
}

} // namespace

const Fp8GemmStatus& fp8GemmStatus()
{
    static const Fp8GemmStatus status = decide();
    return status;
}

std::optional<Fp8GemmPath> fp8GemmPathFromEnvironment()
{
    const std::string chosen = environmentChoice("SCALESCOPE_FP8_GEMM", {"float32", "factored-float32"},
                                                 "bf16 where the CPU has it, else float32");
    if (chosen.empty())
        return std::nullopt;
    return chosen == "float32" ? Fp8GemmPath::Float32 : Fp8GemmPath::FactoredFloat32;
}

Fp8GemmPath fp8GemmPath()
{
    static const int fromEnvironment = [] {
        const std::optional<Fp8GemmPath> chosen = fp8GemmPathFromEnvironment();
        return chosen ? static_cast<int>(*chosen) : kNotForced;
    }();
    const int forced = forcedPath.load() != kNotForced ? forcedPath.load() : fromEnvironment;
    const bool bf16 = fp8GemmStatus().bf16Available;
    if (forced != kNotForced && (forced != static_cast<int>(Fp8GemmPath::Bf16) || bf16))
        return static_cast<Fp8GemmPath>(forced);
    return bf16 ? Fp8GemmPath::Bf16 : Fp8GemmPath::Float32;
}

void forceFp8GemmPath(const Fp8GemmPath* path)
{
    forcedPath.store(path ? static_cast<int>(*path) : kNotForced);
}

std::string fp8GemmDescription()
{
    const Fp8GemmStatus& status = fp8GemmStatus();
    const dnnl_version_t* version = dnnl::version();
    const std::string onednn = "oneDNN " + std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
                               std::to_string(version->patch);
    switch (fp8GemmPath()) {
    case Fp8GemmPath::Bf16:
        return "FP8 GEMM: bf16 x bf16 -> float32 (" + onednn + ", " + status.bf16Kernel + ")";
    case Fp8GemmPath::FactoredFloat32:
        return "FP8 GEMM: factored, float32 sources (" + onednn + "; chosen by SCALESCOPE_FP8_GEMM or the caller)";
    case Fp8GemmPath::Float32:
        break;
    }
    const std::string why = status.bf16Available ? "chosen by SCALESCOPE_FP8_GEMM or the caller" : status.reason;
    return "FP8 GEMM: float32 on dequantized values (bf16 path off: " + why + ")";
}

} // namespace scalescope
