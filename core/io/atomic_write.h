#pragma once
// Files the program writes appear whole or not at all: content goes to a temporary file in the
// destination's folder and is renamed over the destination when complete.
#include <functional>
#include <string>

namespace scalescope {

// Only a regular file is ever replaced: a symbolic link (even one like /dev/stdout), device,
// FIFO, socket or folder at path is refused with one sentence, with or without overwrite.
// Before writing, temporaries left in the folder by processes that no longer run are removed.
// Calls write(tempPath) and renames tempPath to path when it returns; on an exception the temporary
// file is removed and the exception propagates. With overwrite=false an existing path is an error.
void writeFileAtomically(const std::string& path, const std::function<void(const std::string& tempPath)>& write,
                         bool overwrite = true);
// Convenience: writes bytes.
void writeBytesAtomically(const std::string& path, const std::string& bytes, bool overwrite = true);

// "" when path is free or a regular file; otherwise the sentence that refuses to replace it.
std::string outputTargetProblem(const std::string& path);
// Removes ".NAME.tmp-PID-N" files and ".NAME.partial-PID" folders whose PID no longer runs (left by
// a killed writer). Best effort: errors are ignored.
void removeStaleTemporaries(const std::string& folder);
// True when no process with this pid exists.
bool processIsGone(long pid);

} // namespace scalescope
