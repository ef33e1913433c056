#pragma once
// The engine's compute threads: how many threads the GEMMs (oneDNN's, or OpenBLAS's where
// float_gemm.h chose it) and LibTorch's intra-op pool get. Process-wide; call setComputeThreads
// once at start-up, before the first forward.

#include <cstdint>
#include <functional>

namespace scalescope {

// Sets the compute threads; 0 means one per core.
void setComputeThreads(int threads);
// The compute threads: as set, or one per core until set.
int computeThreads();

// Where LibTorch's element-wise work runs, given whether the float32 GEMMs run on OpenBLAS
// (float_gemm.h chooses): beside OpenBLAS's threads it gets one thread (OpenBLAS's idle threads
// spin, and two of each oversubscribed a 2-core machine: 2.4 s for a forward against 0.9 s);
// otherwise every GEMM runs on the OpenMP pool LibTorch shares, and the element-wise work gets
// the compute threads too.
void placeComputeThreads(bool gemmsOnOpenBlas);

// Lets the allocator keep and reuse the buffers a forward frees (once per process; the first model
// load calls it). glibc hands out blocks above its mmap threshold as fresh mappings and returns
// them on free, so every forward page-faulted its activations in again: on the virtual machines
// this runs on a roberta-base fp8 forward took 225 ms with the buffers kept and 250-2500 ms
// without. Blocks up to 32 MB (a forward's largest activation at seq 384 is 4.7 MB) now come from
// the heap, and freed memory stays for the next forward. Large weights (embeddings) still map.
void keepForwardBuffers();

// body(begin, end) over [0, count) in chunks of at least `grain`, on LibTorch's intra-op threads
// (the compute threads where placeComputeThreads gave them, else one): the engine's own
// element-wise kernels (activation quantization, GEMM epilogues) run beside the GEMMs this way.
void parallelFor(int64_t count, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body);

// The most compute threads a setting may ask for: far more than the cores of any machine this
// runs on, few enough that the pools' stacks and buffers fit (20,000 threads took 2.5 GB and 25 s
// to start; 100,000 crashed).
constexpr int kMaxComputeThreads = 1024;

// The thread count SCALESCOPE_THREADS asks for: 0 (one per core) when unset or empty, else an
// integer from 1 to kMaxComputeThreads; anything else throws scalescope::Error naming the variable.
int computeThreadsFromEnvironment(const char* value);

} // namespace scalescope
