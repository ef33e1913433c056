// libFuzzer target: tokenizer loading from vocab.json + merges.txt or tokenizer.json, then encoding
// and decoding with whatever vocabulary loaded. Input layout: see runTokenizerFilesInput.
#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const scalescope::fuzz::ScratchDirectory scratch;
    return scalescope::fuzz::runFuzzIteration([&] {
        scalescope::fuzz::runTokenizerFilesInput(std::string(reinterpret_cast<const char*>(data), size), scratch.path());
    });
}
