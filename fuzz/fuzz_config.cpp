// libFuzzer target: config.json text through parseModelConfig and quantization_config through
// parseQuantizationConfig, then module-to-group matching (targets, ignore, "re:" patterns).
#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const scalescope::fuzz::ScratchDirectory scratch;
    return scalescope::fuzz::runFuzzIteration([&] {
        scalescope::fuzz::runConfigInput(std::string(reinterpret_cast<const char*>(data), size), scratch.path());
    });
}
