#pragma once
// What the sequence tasks (embed, classify, rerank and their evaluations) share: a text or a pair
// encoded with the family's specials and truncated as Hugging Face truncates, and batches of them
// run on both sides of a RunPair, read back as one row of the head's final output per input (a
// pooled vector, a classifier's logits). No LibTorch.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/progress.h"
#include "model/inference_backend.h"
#include "model/run_settings.h"

namespace scalescope {

// One input of a sequence task: a text, or a pair (a cross-encoder's query and passage).
struct SequenceInput {
    std::string text;
    std::optional<std::string> pair;
};

struct SequenceEncoding {
    Encoding encoding;
    bool truncated = false;
};

// The input with its family's specials (<s> A </s>, <s> A </s></s> B </s>, [CLS] A [SEP] B [SEP]),
// at most maxTokens tokens, specials included. Longer inputs lose tokens at the end; a pair loses
// them one at a time from the longer text (the second on a tie), as Hugging Face's longest_first.
// Throws when maxTokens cannot hold the specials and one token of each text.
SequenceEncoding encodeSequence(const Tokenizer& tokenizer, const SequenceInput& input, int64_t maxTokens);

// The tokens a sequence task keeps: an embedder's max_seq_length when it sets one (never past the
// model's positions), else the model's positions.
int64_t sequenceTokenLimit(const Checkpoint& checkpoint);

// Several inputs (a --texts file) as embed, classify and rerank encode them (no prompt), for the
// tasks that run them as one batch (sensitivity, check): an embedder's or a classifier's only;
// another head is refused with one sentence naming the checkpoint, as is an empty list.
std::vector<SequenceEncoding> encodeSequenceInputs(const Checkpoint& checkpoint, const std::vector<SequenceInput>& inputs);

// The rows of one final output for every encoding, on both sides: run (run settings) and
// reference (a float checkpoint, or the run's own model in the reference settings when null).
struct SequenceRows {
    std::vector<std::vector<float>> run;
    std::vector<std::vector<float>> reference;
    std::vector<ModuleNonFinite> runNonFinite; // every batch's, summed per module in execution order
    double runMs = 0, referenceMs = 0;
};

// Runs the encodings in batches of batchSize rows on both sides and reads `output` (the head's
// final output, [batch, width]) row by row. Throws when the two models do not match, when the
// model's head has no such output, and when a side's output is not finite.
SequenceRows runSequenceRows(InferenceBackend& run, InferenceBackend* reference, const RunPair& runs,
                             const std::vector<Encoding>& encodings, const std::string& output,
                             const Progress& progress = {}, std::size_t batchSize = 16);

// The one sentence for a task asked of a checkpoint with the wrong head: "<task> needs <classes>;
// <dir> is <class>."
void requireHead(const InferenceBackend& model, HeadKind head, const std::string& task);

} // namespace scalescope
