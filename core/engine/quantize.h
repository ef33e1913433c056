#pragma once
// Float checkpoint -> compressed-tensors FP8 checkpoint, as llm-compressor's FP8 schemes write it:
// encoder Linears get F8_E4M3 weights with per-channel ([out, 1]), per-tensor ([1]) or per-block
// ([ceil(out / bo), ceil(in / bi)], a partial last block scaled by its own max) scales in the
// chosen scale dtype; activations are dynamic per token or per group of channels, static per tensor (input_scale calibrated
// as amax / 448 over calibration texts run through the float model), or left in float. The heads
// (qa_outputs; the MLM head, lm_head.* or cls.*) stay float and are listed in "ignore". The word
// embeddings stay float unless asked for (EmbeddingQuantization::Fp8PerRow).
// The destination is built in a temporary sibling folder and renamed into place when complete; the
// source is only read.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/progress.h"
#include "io/safetensors.h"
#include "text/tokenizer.h"

namespace scalescope {

// How weights are scaled: one scale per output row, per tensor, or per [rows x columns] block.
enum class WeightStrategy { Channel, Tensor, Block };
// How a Linear's input is quantized: dynamic per token, static per tensor (calibrated), dynamic
// per run of input channels, or not at all (weight-only FP8).
enum class ActivationScheme { Token, Tensor, Group, None };
// compressed-tensors' names for them ("channel", "token", ...), as config.json spells them.
const char* strategyName(WeightStrategy strategy);
const char* strategyName(ActivationScheme scheme);

// The word embeddings: kept float (the default), or F8_E4M3 with one scale per row ([vocab, 1],
// amax / 448 of the row), as compressed-tensors writes an Embedding under a "channel" strategy, in
// a group of their own whose only target is "Embedding" (weights only: a lookup has no input to
// quantize). Per row rather than per tensor because rows are tokens whose norms differ widely
// (special and rare tokens against frequent ones): one table-wide scale would be set by the
// largest row and push the small rows into E4M3's subnormals, while each lookup reads exactly one
// row, so a row's own scale costs nothing. A MaskedLM decoder tied to the table then runs on the
// decoded rows.
enum class EmbeddingQuantization { Float, Fp8PerRow };

struct QuantizeOptions {
    WeightStrategy weights = WeightStrategy::Channel;
    ActivationScheme activations = ActivationScheme::Token;
    int64_t blockRows = 128, blockColumns = 128; // block: block_structure [rows, columns]
    int64_t groupSize = 128;             // group: input channels per dynamic run (must divide every width)
    std::vector<std::string> calibrationTexts; // needed for ActivationScheme::Tensor
    // ActivationScheme::Tensor with the amax per module measured already (the calibration lab):
    // used instead of running calibrationTexts. A module missing from it gets amax 0.
    std::map<std::string, float> calibratedInputAmax;
    Dtype scaleDtype = Dtype::F32;       // F32 | BF16 | F16
    EmbeddingQuantization embeddings = EmbeddingQuantization::Float;
    bool overwrite = false;              // replace an existing destination
    // Other files read (the calibration file): the destination may not be, contain or sit inside them.
    std::vector<std::string> inputFiles;
};

void quantizeCheckpoint(const std::string& sourceDir, const std::string& destinationDir, const QuantizeOptions& options,
                        const Progress& progress = {});

// Reads a calibration file: one text per non-empty line. Throws naming the file, as `role` says
// what it is for ("calibration file", "evaluation file"), when it holds no text.
std::vector<std::string> readCalibrationTexts(const std::string& path, const char* role = "calibration file");

class Checkpoint;

// The scale quantize stores for an amax: amax / 448 narrowed to the scale dtype (1 for amax 0).
// Weight rows, blocks and static input scales (static_minmax) all take it.
float scaleForAmax(float amax, Dtype dtype);

// One calibration text as the calibration forward feeds it: encoded alone, and cut to the model's
// longest sequence (ending in the separator) when longer.
Encoding calibrationEncoding(const Checkpoint& checkpoint, const std::string& text);

// One float forward per text: per text, max |x| over real tokens of every Linear's input (head
// included). static_minmax's amax after n texts is the max of the first n of these.
std::vector<std::map<std::string, float>> calibrationAmaxPerText(const std::shared_ptr<const Checkpoint>& checkpoint,
                                                                 const std::vector<std::string>& texts,
                                                                 const Progress& progress = {});

} // namespace scalescope
