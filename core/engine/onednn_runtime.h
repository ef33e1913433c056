#pragma once
// What every oneDNN GEMM of the engine shares (fp8_gemm.cpp, float_gemm.cpp): the CPU engine, and
// the thread rule for a call. Torch-free; include only from oneDNN translation units.
#include <oneapi/dnnl/dnnl.hpp>

#include <memory>

namespace scalescope {

dnnl::engine& oneDnnCpuEngine();

// A oneDNN memory for `desc` in a buffer of its own, aligned to 2 MB and advised as transparent
// huge pages (THP "madvise" mode, Debian's default): a model's packed weights (170 MB at
// roberta-base) then fault in as a few dozen huge pages instead of ~40,000 small ones, which on
// the virtual machines this runs on was most of an FP8 checkpoint's load time. Falls back to
// oneDNN's own allocation when the buffer cannot be made. oneDNN does not own a buffer it is
// given, so `buffer` must outlive every use of `memory`.
struct LargeMemory {
    dnnl::memory memory;
    std::shared_ptr<void> buffer; // null when oneDNN allocated
};
LargeMemory largeMemory(const dnnl::memory::desc& desc);

// oneDNN runs on LibTorch's OpenMP runtime, whose thread count compute_threads.cpp sets to 1 (the
// LibTorch GEMMs run on OpenBLAS's threads instead). A oneDNN GEMM takes the compute threads for
// the duration of a call, so every kind of GEMM gets the same threads and none overlap.
class OneDnnThreads {
public:
    OneDnnThreads();
    ~OneDnnThreads();
    OneDnnThreads(const OneDnnThreads&) = delete;
    OneDnnThreads& operator=(const OneDnnThreads&) = delete;

private:
    using Set = void (*)(int);
    Set set_ = nullptr;
    int previous_ = 0;
};

} // namespace scalescope
