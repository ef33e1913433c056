#pragma once
// A folder that one run writes several files into as one output (the CLI's --plots, the
// workbench's report). The folder is reserved for one writer before any of its files is checked or
// written, so two runs started together never both pass the check and leave a folder mixing their
// files: the second is refused while the first writes, and after it finds the first one's files.
// Each file is still written whole or not at all (writeBytesAtomically).
//
// The reservation is an exclusive flock() on ".scalescope-writing.lock" in the folder, created for
// the purpose and removed when the writer is done. The kernel drops the lock when its holder dies,
// however it dies, so a leftover lock file never blocks anyone: the next writer locks and removes
// it. The file (not the folder itself) is locked because NFS emulates flock() with locks that need
// a file opened for writing.
// Errors: scalescope::Error with one sentence naming the folder or file; OptionError on
// TaskOption::Overwrite for a file that exists without overwrite.
#include <functional>
#include <string>
#include <vector>

namespace scalescope {

class FolderReservation {
public:
    // Throws when another writer holds folder (which must exist) or it cannot be locked.
    explicit FolderReservation(const std::string& folder);
    ~FolderReservation();
    FolderReservation(const FolderReservation&) = delete;
    FolderReservation& operator=(const FolderReservation&) = delete;

private:
    std::string lockPath_;
    int fd_ = -1;
};

struct OutputFile {
    std::string name;                   // a file name inside the folder
    std::function<std::string()> bytes; // its content, made only once every check has passed
};

// Creates folder when missing, reserves it, refuses before writing anything when one of the files
// exists and overwrite is false, or is not a regular file, then writes them in order. Returns
// their paths. A failure part way leaves the files written before it (each one whole).
std::vector<std::string> writeOutputFolder(const std::string& folder, const std::vector<OutputFile>& files,
                                           bool overwrite);

} // namespace scalescope
