#pragma once
// The engine's compute threads: how many threads the GEMMs (OpenBLAS) and LibTorch's intra-op
// pool get. Process-wide; call once at start-up, before the first forward.

namespace scalescope {

// Sets the compute threads; 0 means one per core.
void setComputeThreads(int threads);
int computeThreads();

} // namespace scalescope
