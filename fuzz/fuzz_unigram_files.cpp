// libFuzzer target: Unigram tokenizer loading (XLM-RoBERTa) from sentencepiece.bpe.model or
// tokenizer.json, then encoding with whatever loaded. Input layout: see runUnigramFilesInput.
#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const scalescope::fuzz::ScratchDirectory scratch;
    return scalescope::fuzz::runFuzzIteration([&] {
        scalescope::fuzz::runUnigramFilesInput(std::string(reinterpret_cast<const char*>(data), size), scratch.path());
    });
}
