#pragma once
// Where a command writes a new checkpoint folder (quantize, keep-float), with one set of rules:
// the destination may not be, contain or sit inside any input (links resolved); an existing
// destination is replaced only with overwrite and only when it is a checkpoint folder (made of
// checkpoint files, with a config.json); the new folder is built in a temporary sibling
// (".NAME.partial-OWNER", io/temporary_owner.h) and renamed into place when complete, swapped
// atomically with the old one where the file system can, so a kill at any moment leaves the old or
// the new checkpoint, and SIGINT or SIGTERM leaves no temporary (io/interrupt_cleanup.h).
// Errors: scalescope::Error, one sentence naming the destination; nothing is written on error.
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace scalescope {

// The tokenizer files a Hugging Face folder may hold, for every family (byte-level BPE, WordPiece,
// Unigram SentencePiece): what a written checkpoint copies from its source, what a runner is sent,
// and what an overwritable checkpoint folder may contain.
const std::vector<std::string>& tokenizerFileNames();

struct CheckpointDestination {
    std::string destinationDir; // as the user gave it, for messages
    std::string command;        // "quantize", for messages
    bool overwrite = false;
    std::string destination;    // absolute, normalised
    std::string temporary;      // the sibling folder the checkpoint is built in
};

// Checks everything that can be checked before the work. inputs: (path, "the source checkpoint").
// Also puts back or removes what an earlier killed replacement left, and stale temporaries.
CheckpointDestination prepareCheckpointDestination(const std::string& destinationDir,
                                                   const std::vector<std::pair<std::string, std::string>>& inputs,
                                                   bool overwrite, const std::string& command);

// Creates the temporary folder, calls fill(temporaryFolder), then renames it into place (checked
// again: something may have appeared at the destination meanwhile). Any failure removes the
// temporary folder and leaves the destination as it was.
void writeCheckpointFolder(const CheckpointDestination& destination,
                           const std::function<void(const std::string& temporaryFolder)>& fill);

} // namespace scalescope
