#pragma once
// Files the program writes appear whole or not at all: content goes to a temporary file in the
// destination's folder and is renamed over the destination when complete.
#include <functional>
#include <string>

namespace scalescope {

// Calls write(tempPath) and renames tempPath to path when it returns; on an exception the temporary
// file is removed and the exception propagates. With overwrite=false an existing path is an error.
void writeFileAtomically(const std::string& path, const std::function<void(const std::string& tempPath)>& write,
                         bool overwrite = true);
// Convenience: writes bytes.
void writeBytesAtomically(const std::string& path, const std::string& bytes, bool overwrite = true);

} // namespace scalescope
