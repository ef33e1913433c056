// oneDNN (no LibTorch): the CPU engine and the thread rule the engine's oneDNN GEMMs share.
#include "engine/onednn_runtime.h"

#include <dlfcn.h>

#include "engine/compute_threads.h"

namespace scalescope {

dnnl::engine& oneDnnCpuEngine()
{
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
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
