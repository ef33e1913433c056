// oneDNN (no LibTorch): the CPU engine and the thread rule the engine's oneDNN GEMMs share.
#include "engine/onednn_runtime.h"

#include <dlfcn.h>
#include <sys/mman.h>

#include <cstdlib>

#include "engine/compute_threads.h"

namespace scalescope {

dnnl::engine& oneDnnCpuEngine()
{
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

LargeMemory largeMemory(const dnnl::memory::desc& desc)
{
    constexpr std::size_t kHugePage = 2u << 20;
    const std::size_t bytes = desc.get_size();
    if (bytes < kHugePage)
        return {dnnl::memory(desc, oneDnnCpuEngine()), nullptr};
    const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    std::shared_ptr<void> buffer(std::aligned_alloc(kHugePage, rounded), std::free);
    if (!buffer)
        return {dnnl::memory(desc, oneDnnCpuEngine()), nullptr};
    ::madvise(buffer.get(), rounded, MADV_HUGEPAGE); // advice: without it the pages are small, nothing else
    return {dnnl::memory(desc, oneDnnCpuEngine(), buffer.get()), buffer};
}

OneDnnThreads::OneDnnThreads()
{
    using Get = int (*)();
    const auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    set_ = reinterpret_cast<Set>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    if (!get || !set_)
        return;
    previous_ = get();
    if (previous_ != computeThreads())
        set_(computeThreads());
}

OneDnnThreads::~OneDnnThreads()
{
    if (set_ && previous_ > 0 && previous_ != computeThreads())
        set_(previous_);
}

} // namespace scalescope
