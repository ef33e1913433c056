// LibTorch: sets its intra-op pool next to OpenBLAS's threads.
#include "engine/compute_threads.h"

#include <ATen/Parallel.h>

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/text_files.h"

namespace scalescope {
namespace {
int configuredThreads = 0;
}

void setComputeThreads(int threads)
{
    if (threads <= 0)
        threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    configuredThreads = threads;
    // LibTorch's intra-op pool is OpenMP here, and idle OpenMP threads spin; next to OpenBLAS's own
    // GEMM threads that oversubscribes a 2-core machine (a roberta-base forward took 2.4 s with two
    // of each, 0.9 s with one intra-op thread). The GEMMs are nearly all of the work, so they get
    // the threads and LibTorch's elementwise ops run on one. Without OpenBLAS (reference BLAS),
    // LibTorch keeps them.
    using SetBlasThreads = void (*)(int);
    const auto setBlasThreads = reinterpret_cast<SetBlasThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    if (setBlasThreads) {
        setBlasThreads(threads);
        at::set_num_threads(1);
    } else {
        at::set_num_threads(threads);
    }
}

int computeThreadsFromEnvironment(const char* value)
{
    if (!value || !*value)
        return 0;
    const std::string text = value;
    char* end = nullptr;
    errno = 0;
    const long long threads = std::strtoll(text.c_str(), &end, 10);
    const bool integer = end != text.c_str() && *end == '\0' && errno == 0 && text.find_first_of(" \t+") == std::string::npos;
    if (!integer || threads < 1 || threads > kMaxComputeThreads)
        throw Error("SCALESCOPE_THREADS=\"" + terminalSafe(abbreviatedText(text, 40)) +
                    "\" is not a thread count: it must be an integer from 1 to " + std::to_string(kMaxComputeThreads) +
                    " (unset, one thread per core).");
    return static_cast<int>(threads);
}

int computeThreads()
{
    return configuredThreads > 0 ? configuredThreads : at::get_num_threads();
}

} // namespace scalescope
