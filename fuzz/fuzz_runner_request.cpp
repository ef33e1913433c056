// libFuzzer target: what a client writes to the CPU runner's stdin (request lines and the payloads
// they announce) through the runner's request parser (device/runner_request), as
// core/engine/runner_server reads it before anything runs.
#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    return scalescope::fuzz::runFuzzIteration([&] {
        scalescope::fuzz::runRunnerRequestInput(std::string(reinterpret_cast<const char*>(data), size));
    });
}
