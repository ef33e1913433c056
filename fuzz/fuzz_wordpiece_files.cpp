// libFuzzer target: WordPiece loading from vocab.txt (+ tokenizer_config.json) or tokenizer.json,
// then encoding and decoding with whatever loaded. Input layout: see runWordPieceFilesInput.
#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const scalescope::fuzz::ScratchDirectory scratch;
    return scalescope::fuzz::runFuzzIteration([&] {
        scalescope::fuzz::runWordPieceFilesInput(std::string(reinterpret_cast<const char*>(data), size), scratch.path());
    });
}
