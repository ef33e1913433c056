// LibTorch: sets its intra-op pool next to OpenBLAS's threads.
#include "engine/compute_threads.h"

#include <ATen/Parallel.h>

#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "common/environment.h"
#include "common/error.h"
#include "common/parallel_chunks.h"
#include "common/text_files.h"
#include "engine/float_gemm.h"

namespace scalescope {
namespace {

int configuredThreads = 0;

using SetBlasThreads = void (*)(int);

SetBlasThreads openBlasSetThreads()
{
    return reinterpret_cast<SetBlasThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
}

int onePerCore()
{
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

} // namespace

void setComputeThreads(int threads)
{
    if (threads <= 0)
        threads = onePerCore();
    configuredThreads = threads;
    if (const SetBlasThreads setBlasThreads = openBlasSetThreads())
        setBlasThreads(threads);
    placeComputeThreads(floatGemmPath() == FloatGemmPath::Blas);
    // Core's chunked loops (comparison metrics) run on the same threads as the engine's kernels.
    installChunkRunner([](int64_t count, const ChunkBody& body) { parallelFor(count, 1, body); });
}

void placeComputeThreads(bool gemmsOnOpenBlas)
{
    const int threads = computeThreads();
    // Without OpenBLAS (the reference BLAS) nothing else holds threads: LibTorch keeps them.
    at::set_num_threads(gemmsOnOpenBlas && openBlasSetThreads() ? 1 : threads);
}

void keepForwardBuffers()
{
    static std::once_flag once;
    std::call_once(once, [] {
        mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest allowed threshold
        mallopt(M_TRIM_THRESHOLD, 512 << 20); // freed heap above this goes back to the system
    });
}

void parallelFor(int64_t count, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body)
{
    if (count <= 0)
        return;
    at::parallel_for(0, count, std::max<int64_t>(grain, 1), body);
}

int computeThreadsFromEnvironment(const char* value)
{
    if (!value || !*value)
        return 0;
    return static_cast<int>(
        environmentInteger("SCALESCOPE_THREADS", value, 1, kMaxComputeThreads, "a thread count", "one thread per core"));
}

int computeThreads()
{
    // Not LibTorch's count when unset: placeComputeThreads lowers that to one beside OpenBLAS, and
    // the float GEMM choice (keyed by this count) then changed its key within one process.
    return configuredThreads > 0 ? configuredThreads : onePerCore();
}

} // namespace scalescope
