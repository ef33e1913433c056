// libFuzzer target: SQuAD v1.1/v2.0 JSON through parseSquadJson (readSquadFile's parser).
#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    return scalescope::fuzz::runFuzzIteration([&] {
        scalescope::fuzz::runSquadInput(std::string(reinterpret_cast<const char*>(data), size));
    });
}
