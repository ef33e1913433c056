// libFuzzer target: arbitrary text (any bytes, "<mask>", pairs) through the real roberta-base
// tokenizer when its files are there (SCALESCOPE_FUZZ_TOKENIZER_DIR in the environment, else the
// shared data folder compiled in), else through a tiny byte-level vocabulary. Checks offsets and
// that decoding gives the text back.
#include <iostream>

#include "fuzz_entry_points.h"

namespace {

const scalescope::BpeTokenizer* tokenizer = nullptr;

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    static const scalescope::fuzz::ScratchDirectory scratch;
    std::string dir;
    if (const char* fromEnvironment = std::getenv("SCALESCOPE_FUZZ_TOKENIZER_DIR"))
        dir = fromEnvironment;
#ifdef SCALESCOPE_FUZZ_TOKENIZER_DIR
    else
        dir = SCALESCOPE_FUZZ_TOKENIZER_DIR;
#endif
    if (dir.empty() || !scalescope::fileExists(scalescope::joinPath(dir, "vocab.json"))) {
        scalescope::fuzz::writeTinyByteLevelTokenizer(scratch.path());
        dir = scratch.path();
    }
    std::cerr << "fuzz_tokenizer_encode: tokenizer from " << dir << "\n";
    static const std::unique_ptr<scalescope::BpeTokenizer> loaded = scalescope::BpeTokenizer::loadFromDirectory(dir);
    tokenizer = loaded.get();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    return scalescope::fuzz::runFuzzIteration([&] {
        scalescope::fuzz::runTokenizerEncodeInput(*tokenizer, std::string(reinterpret_cast<const char*>(data), size), true);
    });
}
