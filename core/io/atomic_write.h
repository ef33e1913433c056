#pragma once
// Files the program writes appear whole or not at all: content goes to a temporary file in the
// destination's folder and is renamed over the destination when complete.
#include <functional>
#include <string>

namespace scalescope {

// Only a regular file is ever replaced: a symbolic link (even one like /dev/stdout), device,
// FIFO, socket or folder at path is refused with one sentence, with or without overwrite.
// Before writing, temporaries that writers left in the folder are removed (removeStaleTemporaries).
// Calls write(tempPath), flushes tempPath to disk (a failed flush, e.g. a full disk, is an error)
// and renames it to path; on an exception the temporary file is removed and the exception
// propagates. With overwrite=false an existing path is an error. While it exists the temporary is
// registered with interrupt_cleanup, so SIGINT or SIGTERM does not leave it behind.
void writeFileAtomically(const std::string& path, const std::function<void(const std::string& tempPath)>& write,
                         bool overwrite = true);
// Convenience: writes bytes (through writeNewFile).
void writeBytesAtomically(const std::string& path, const std::string& bytes, bool overwrite = true);
// A writer for writeFileAtomically: creates path (which must not exist), writes every byte and
// closes it, checking each write and the close: a short write or a full disk throws Error naming
// shownPath (the flush to disk that follows is writeFileAtomically's, checked too). For outputs
// made in memory first (images, CSV, JSON), so that what is written is exactly what was checked.
void writeNewFile(const std::string& path, const std::string& bytes, const std::string& shownPath);

// "" when path is free or a regular file; otherwise the sentence that refuses to replace it.
std::string outputTargetProblem(const std::string& path);
// Removes ".NAME.tmp-OWNER-N" files and ".NAME.partial-OWNER" folders that their writer left
// behind (io/temporary_owner.h says when one counts as left behind; nothing else is touched).
// Best effort: errors are ignored.
void removeStaleTemporaries(const std::string& folder);

} // namespace scalescope
