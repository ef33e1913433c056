// libFuzzer target: the task dataset readers (texts, STS, classification JSONL, a BEIR folder)
// through runTaskDatasetsInput, which picks the reader from the first byte.
#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const scalescope::fuzz::ScratchDirectory scratch;
    return scalescope::fuzz::runFuzzIteration([&] {
        scalescope::fuzz::runTaskDatasetsInput(std::string(reinterpret_cast<const char*>(data), size), scratch.path());
    });
}
