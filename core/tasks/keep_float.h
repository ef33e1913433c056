#pragma once
// keep-float: a copy of an FP8 checkpoint where the named Linears are float (the reference's float
// weights when a reference is given, else the checkpoint's dequantized weights), stored in the
// checkpoint's float dtype (a bf16 or fp16 model stays 16-bit, rounded to nearest even) and
// listed in the quantization config's `ignore` for every consumer: by Hugging Face name and by FMS
// name (and a layer's qkv_fused name when its q, k and v all end up float), as
// analysis/consumers.h keepFloatIgnoreNames() says. A set a chosen consumer cannot load (one of
// q/k/v alone for vLLM or the AIU's fused loading) is refused with keepFloatRefusal()'s sentence;
// a copy for the AIU is written for the loading its scheme allows (consumersTheSchemeAllows).
// Their weight_scale and input_scale go; every other file and tensor is copied byte for byte (a
// shard that holds none of their tensors is copied as a file). The destination rules are
// core/io/checkpoint_destination's. Torch-free. Errors: scalescope::Error, one sentence, before
// anything is written. The copy holds scalescope_provenance.json (tasks/fix_provenance.h): what it
// was made from and verified against; and the consumer rules are run on the copy as written.
#include <string>
#include <vector>

#include "analysis/consumers.h"
#include "common/progress.h"
#include "tasks/fix_provenance.h"

namespace scalescope {

struct KeepFloatOptions {
    std::vector<std::string> modules; // exact Linear names
    std::string referenceDir;         // "" = dequantized weights
    bool overwrite = false;
    KeepFloatConsumers consumers;     // whom the copy must load as intended (default: AIU fused and vLLM)
    // Store every per-tensor weight scale per output channel (the same value on each row, so the
    // same numbers): what fms_mo's fused q/k/v Linear takes. Only beside per-token activations
    // (or none), the only ones fms_mo pairs with per-channel weights; refused otherwise.
    bool perChannelWeights = false;
    std::string toolVersion;          // recorded in the provenance file
    FixMeasurement measurement;       // how the caller verified the fix (the GUI's sweep), when known
};

struct KeepFloatResult {
    std::vector<std::string> ignore;          // the new ignore list as written
    std::vector<std::string> rewrittenFiles;  // files of the copy that differ from the source's
    std::string weightSource;                 // "reference (DIR)" or "dequantized"
    Dtype weightDtype = Dtype::F32;           // the dtype the kept weights were written in
    // Whom the copy was written for: the options' consumers, or the AIU's unfused loading where
    // the scheme allows no other (consumersTheSchemeAllows), with that sentence in loadingNote.
    KeepFloatConsumers writtenFor;
    std::string loadingNote;
    // What each runtime will do with the copy as written (analysis/consumers.h on the new folder).
    std::vector<ConsumerReport> consumers;
};

KeepFloatResult keepFloat(const std::string& checkpointDir, const std::string& destinationDir,
                          const KeepFloatOptions& options, const Progress& progress = {});

// The ignore list as a llm-compressor recipe snippet, to re-quantize the float model with them kept.
std::string llmCompressorRecipe(const std::vector<std::string>& ignore);

} // namespace scalescope
