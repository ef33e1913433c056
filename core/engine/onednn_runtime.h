#pragma once
// What every oneDNN GEMM of the engine shares (fp8_gemm.cpp, float_gemm.cpp): the CPU engine, and
// the thread rule for a call. Torch-free; include only from oneDNN translation units.
#include <oneapi/dnnl/dnnl.hpp>

namespace scalescope {

dnnl::engine& oneDnnCpuEngine();

// oneDNN runs on LibTorch's OpenMP runtime, whose thread count compute_threads.cpp sets to 1 when
// the float32 GEMMs run on OpenBLAS's threads (placeComputeThreads). A oneDNN GEMM takes the
// compute threads for the duration of a call, so every kind of GEMM gets the same threads and none
// overlap.
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
