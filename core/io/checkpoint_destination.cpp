#include "io/checkpoint_destination.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "common/error.h"
#include "common/option_error.h"
#include "io/atomic_write.h"
#include "io/interrupt_cleanup.h"
#include "io/temporary_owner.h"

namespace scalescope {

const std::vector<std::string>& tokenizerFileNames()
{
    static const std::vector<std::string> names = {"tokenizer.json",      "tokenizer_config.json",
                                                   "special_tokens_map.json", "vocab.json",
                                                   "merges.txt",          "vocab.txt",
                                                   "sentencepiece.bpe.model"};
    return names;
}

namespace {

namespace fs = std::filesystem;

// True when inner is outer or lies inside it (both canonical, so symbolic links and ".." are resolved).
bool isSameOrInside(const fs::path& inner, const fs::path& outer)
{
    auto o = outer.begin();
    auto i = inner.begin();
    for (; o != outer.end(); ++o, ++i) {
        if (o->empty() && std::next(o) == outer.end())
            break; // a trailing separator
        if (i == inner.end() || *i != *o)
            return false;
    }
    return true;
}

// Files a Hugging Face checkpoint folder holds. --force replaces only a folder made of these (a
// checkpoint this program or llm-compressor wrote), so a mistyped DST never wipes unrelated files.
bool isCheckpointFileName(const std::string& name)
{
    static const std::set<std::string> names = {"config.json", "model.safetensors.index.json", "generation_config.json",
                                                "recipe.yaml", "README.md", "added_tokens.json",
                                                // a sentence-transformers embedder's own files
                                                "modules.json", "sentence_bert_config.json",
                                                "config_sentence_transformers.json"};
    const std::vector<std::string>& tokenizerFiles = tokenizerFileNames();
    const std::string suffix = ".safetensors";
    return names.count(name) || std::find(tokenizerFiles.begin(), tokenizerFiles.end(), name) != tokenizerFiles.end() ||
           (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
}

// A sentence-transformers module folder ("1_Pooling", "2_Normalize": a number, "_", a name) holding
// at most regular files named config.json: part of an embedder's checkpoint.
bool isSentenceTransformersModuleFolder(const fs::path& folder)
{
    const std::string name = folder.filename().string();
    const std::size_t underscore = name.find('_');
    if (underscore == 0 || underscore == std::string::npos || underscore + 1 == name.size() ||
        name.find_first_not_of("0123456789") != underscore)
        return false;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
        if (!fs::is_regular_file(it->symlink_status(ec)) || it->path().filename() != "config.json")
            return false;
    return !ec;
}

// Refuses to replace destination unless it is a checkpoint folder.
void checkIsCheckpointFolder(const fs::path& destination, const std::string& destinationDir, const std::string& command)
{
    const std::string onlyCheckpoints = command + " {option} replaces only a checkpoint folder, so ";
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(destination, ec);
    if (fs::is_symlink(status))
        throw OptionError(TaskOption::Overwrite, destinationDir + " is a symbolic link; " + onlyCheckpoints +
                                                     "remove the link or choose another DST.");
    if (!fs::is_directory(status))
        throw OptionError(TaskOption::Overwrite,
                          destinationDir + " is not a folder; " + onlyCheckpoints + "choose another DST.");
    bool hasConfig = false;
    for (fs::directory_iterator it(destination, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        const fs::file_status entry = it->symlink_status(ec);
        if (fs::is_directory(entry) && isSentenceTransformersModuleFolder(it->path()))
            continue;
        if (!fs::is_regular_file(entry) || !isCheckpointFileName(name))
            throw OptionError(TaskOption::Overwrite, destinationDir + " holds " + name +
                                                         ", which is not part of a checkpoint; " + onlyCheckpoints +
                                                         "choose another DST.");
        hasConfig = hasConfig || name == "config.json";
    }
    if (ec)
        throw Error("Cannot read " + destinationDir + ": " + ec.message() + ".");
    if (!hasConfig)
        throw OptionError(TaskOption::Overwrite, destinationDir + " has no config.json, so it is not a checkpoint folder; " +
                                                     onlyCheckpoints + "choose another DST.");
}

// ".DST.old-OWNER" is the previous destination parked by a replacement that was killed before it
// finished (only on file systems without an atomic exchange): when its owner is gone
// (io/temporary_owner.h) it is put back when DST is missing, and removed otherwise.
void recoverParkedDestinations(const fs::path& destination)
{
    std::error_code ec;
    const std::string prefix = "." + destination.filename().string() + ".old-";
    for (fs::directory_iterator it(destination.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(prefix, 0) != 0)
            continue;
        const std::optional<TemporaryOwner> owner = parseTemporaryOwner(std::string_view(name).substr(prefix.size()));
        if (!owner || !ownerIsGoneHere(*owner)) // never by age: it holds the user's checkpoint
            continue;
        std::error_code step;
        if (!fs::exists(fs::symlink_status(destination, step)))
            fs::rename(it->path(), destination, step);
        else
            fs::remove_all(it->path(), step);
    }
}

// Swaps the finished temporary folder with the existing destination in one step, so a kill at any
// moment leaves the old or the new checkpoint under DST. Where the file system cannot exchange,
// the old one is parked and put back by the next run if the process dies in between.
void replaceDestination(const fs::path& temporary, const fs::path& destination)
{
    if (::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, destination.c_str(), RENAME_EXCHANGE) == 0) {
        std::error_code ec;
        fs::remove_all(temporary, ec); // now holds the old checkpoint
        return;
    }
    const fs::path old = destination.parent_path() /
                         ("." + destination.filename().string() + ".old-" + temporaryOwnerTag());
    fs::rename(destination, old);
    fs::rename(temporary, destination);
    std::error_code ec;
    fs::remove_all(old, ec);
}

void checkInputs(const fs::path& destination, const std::string& destinationDir,
                 const std::vector<std::pair<std::string, std::string>>& inputs, const std::string& command)
{
    // Compared with every link resolved: a DST that is, holds or sits inside an input would destroy
    // or modify that input when it is replaced or written.
    std::error_code ec;
    const fs::path canonicalDestination = fs::weakly_canonical(destination, ec);
    for (const auto& [input, what] : inputs) {
        const fs::path canonicalInput = fs::weakly_canonical(fs::absolute(input), ec);
        if (canonicalDestination.empty() || canonicalInput.empty())
            continue;
        if (isSameOrInside(canonicalInput, canonicalDestination))
            throw Error("The destination " + destinationDir + (canonicalInput == canonicalDestination ? " is " : " contains ") +
                        what + "; " + command + " never modifies or removes its inputs, so choose another DST.");
        if (isSameOrInside(canonicalDestination, canonicalInput))
            throw Error("The destination " + destinationDir + " lies inside " + what + "; " + command +
                        " never modifies its inputs, so choose another DST.");
    }
}

void checkReplaceable(const CheckpointDestination& d)
{
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(d.destination, ec)))
        return;
    if (!d.overwrite)
        throw OptionError(TaskOption::Overwrite, d.destinationDir + " already exists; pass {option} to replace it.");
    checkIsCheckpointFolder(d.destination, d.destinationDir, d.command);
}

} // namespace

CheckpointDestination prepareCheckpointDestination(const std::string& destinationDir,
                                                   const std::vector<std::pair<std::string, std::string>>& inputs,
                                                   bool overwrite, const std::string& command)
{
    std::error_code ec;
    const fs::path destination = fs::absolute(destinationDir).lexically_normal();
    if (destination.filename().empty() || destination.filename() == "." || destination.filename() == "..")
        throw Error("Cannot write " + destinationDir + ": name the destination folder itself, not a path ending in /, . or ...");
    checkInputs(destination, destinationDir, inputs, command);
    if (!fs::is_directory(destination.parent_path(), ec))
        throw Error("Cannot write " + destinationDir + ": the folder " + destination.parent_path().string() + " does not exist.");
    recoverParkedDestinations(destination);
    CheckpointDestination d;
    d.destinationDir = destinationDir;
    d.command = command;
    d.overwrite = overwrite;
    d.destination = destination.string();
    d.temporary = (destination.parent_path() /
                   ("." + destination.filename().string() + ".partial-" + temporaryOwnerTag())).string();
    checkReplaceable(d);
    removeStaleTemporaries(destination.parent_path().string());
    return d;
}

void writeCheckpointFolder(const CheckpointDestination& d,
                           const std::function<void(const std::string& temporaryFolder)>& fill)
{
    std::error_code ec;
    const fs::path temporary = d.temporary;
    const fs::path destination = d.destination;
    fs::remove_all(temporary, ec);
    // The checkpoint being built is removed by SIGINT or SIGTERM; the destination is untouched
    // until the last step.
    const InterruptCleanup removedOnInterrupt(d.temporary, TemporaryKind::Folder);
    try {
        fs::create_directory(temporary);
        fill(temporary.string());
        checkReplaceable(d); // again: something may have appeared at DST while the checkpoint was built
        if (fs::exists(fs::symlink_status(destination)))
            replaceDestination(temporary, destination);
        else
            fs::rename(temporary, destination);
    } catch (const fs::filesystem_error& e) {
        fs::remove_all(temporary, ec);
        throw Error("Cannot write " + d.destinationDir + ": " + e.code().message() + ".");
    } catch (...) {
        fs::remove_all(temporary, ec);
        throw;
    }
}

} // namespace scalescope
