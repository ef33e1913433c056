#include "common/parallel_chunks.h"

#include <atomic>

namespace scalescope {
namespace {

std::atomic<ChunkRunner> installedRunner{nullptr};

} // namespace

void installChunkRunner(ChunkRunner runner)
{
    installedRunner.store(runner);
}

void runChunks(int64_t count, const ChunkBody& body)
{
    if (count <= 0)
        return;
    if (const ChunkRunner runner = installedRunner.load())
        runner(count, body);
    else
        body(0, count);
}

} // namespace scalescope
