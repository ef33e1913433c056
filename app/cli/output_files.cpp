#include "output_files.h"

#include <filesystem>
#include <unistd.h>

#include "common/error.h"
#include "common/text_files.h"
#include "io/atomic_write.h"

namespace scalescope::cli {

void checkOutputFileTarget(const std::string& path, bool force)
{
    // What --force cannot fix (a folder, a device, a link, an empty path) is said first, never
    // with advice to pass --force.
    if (const std::string problem = outputTargetProblem(path); !problem.empty())
        throw Error(problem);
    // symlink_status: a dangling link is "there" and is not replaced without --force.
    std::error_code statusError;
    if (std::filesystem::exists(std::filesystem::symlink_status(path, statusError)) && !force)
        throw Error(path + " already exists; pass --force to overwrite it.");
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty() && !directoryExists(parent.string()))
        throw Error("Cannot write " + path + ": the folder " + parent.string() + " does not exist.");
    if (::access(parent.empty() ? "." : parent.c_str(), W_OK) != 0)
        throw Error("Cannot write " + path + ": the folder " + (parent.empty() ? std::string(".") : parent.string()) +
                    " is not writable.");
}

} // namespace scalescope::cli
