// libFuzzer target: a check --thresholds file through readThresholdsFile, and its round trip.
#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const scalescope::fuzz::ScratchDirectory scratch;
    return scalescope::fuzz::runFuzzIteration([&] {
        scalescope::fuzz::runThresholdsInput(std::string(reinterpret_cast<const char*>(data), size), scratch.path());
    });
}
