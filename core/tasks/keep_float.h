#pragma once
// keep-float: a copy of an FP8 checkpoint where the named Linears are float (the reference's float
// weights when a reference is given, else the checkpoint's dequantized weights in float32) and
// listed by exact name in the quantization config's `ignore`. Their weight_scale and input_scale
// go; every other file and tensor is copied byte for byte (a shard that holds none of their
// tensors is copied as a file). The destination rules are core/io/checkpoint_destination's.
// Torch-free. Errors: scalescope::Error, one sentence, before anything is written.
#include <string>
#include <vector>

#include "common/progress.h"

namespace scalescope {

struct KeepFloatOptions {
    std::vector<std::string> modules; // exact Linear names
    std::string referenceDir;         // "" = dequantized weights
    bool overwrite = false;
};

struct KeepFloatResult {
    std::vector<std::string> ignore;          // the new ignore list as written
    std::vector<std::string> rewrittenFiles;  // files of the copy that differ from the source's
    std::string weightSource;                 // "reference (DIR)" or "dequantized"
};

KeepFloatResult keepFloat(const std::string& checkpointDir, const std::string& destinationDir,
                          const KeepFloatOptions& options, const Progress& progress = {});

// The ignore list as a llm-compressor recipe snippet, to re-quantize the float model with them kept.
std::string llmCompressorRecipe(const std::vector<std::string>& ignore);

} // namespace scalescope
