// libFuzzer target: safetensors headers and sharded checkpoints (model.safetensors.index.json)
// through SafetensorsFile::open / TensorStore, then every tensor read back as float.
// Input layout: see runSafetensorsInput in fuzz_entry_points.h.
#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const scalescope::fuzz::ScratchDirectory scratch;
    return scalescope::fuzz::runFuzzIteration([&] {
        scalescope::fuzz::runSafetensorsInput(std::string(reinterpret_cast<const char*>(data), size), scratch.path());
    });
}
