#pragma once
// The engine's compute threads: how many threads the GEMMs (oneDNN's for the Linears, OpenBLAS's
// for LibTorch's own products such as attention's) and LibTorch's intra-op pool get.
// Process-wide; call once at start-up, before the first forward.

namespace scalescope {

// Sets the compute threads; 0 means one per core.
void setComputeThreads(int threads);
int computeThreads();

} // namespace scalescope
