#pragma once
// The engine's compute threads: how many threads the GEMMs (oneDNN's for the Linears, OpenBLAS's
// for LibTorch's own products such as attention's) and LibTorch's intra-op pool get.
// Process-wide; call once at start-up, before the first forward.

namespace scalescope {

// Sets the compute threads; 0 means one per core.
void setComputeThreads(int threads);
int computeThreads();

// The most compute threads a setting may ask for: far more than the cores of any machine this
// runs on, few enough that the pools' stacks and buffers fit (20,000 threads took 2.5 GB and 25 s
// to start; 100,000 crashed).
constexpr int kMaxComputeThreads = 1024;

// The thread count SCALESCOPE_THREADS asks for: 0 (one per core) when unset or empty, else an
// integer from 1 to kMaxComputeThreads; anything else throws scalescope::Error naming the variable.
int computeThreadsFromEnvironment(const char* value);

} // namespace scalescope
