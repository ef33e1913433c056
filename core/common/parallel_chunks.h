#pragma once
// Chunked loops for code below the engine (analysis, tasks), on the engine's compute threads.
// Core does not link LibTorch or OpenMP, so the engine installs its parallelFor here when the
// compute threads are set (engine/compute_threads.h setComputeThreads); until then, and in a
// program without the engine, the chunks run one after another on the calling thread.
//
// Results must not depend on how the chunks are spread over threads: a body writes only the slots
// of its own chunks, and the caller combines them in chunk order afterwards.
#include <cstdint>
#include <functional>

namespace scalescope {

using ChunkBody = std::function<void(int64_t begin, int64_t end)>;
// Runs body over [0, count) in ranges of whole chunks, possibly on several threads at once.
using ChunkRunner = void (*)(int64_t count, const ChunkBody& body);

// Installs the runner (null: back to the calling thread alone). Thread-safe.
void installChunkRunner(ChunkRunner runner);

// body over [0, count) with the installed runner; returns when every chunk has run.
void runChunks(int64_t count, const ChunkBody& body);

} // namespace scalescope
