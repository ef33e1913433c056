#include "io/output_folder.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/option_error.h"
#include "common/text_files.h"
#include "io/atomic_write.h"
#include "io/interrupt_cleanup.h"

namespace scalescope {
namespace {

constexpr const char* kLockName = ".scalescope-writing.lock";

} // namespace

FolderReservation::FolderReservation(const std::string& folder) : lockPath_(joinPath(folder, kLockName))
{
    // The lock file is removed by the holder when it is done, so a writer that opened it just
    // before may hold a lock on a file no longer in the folder: it checks that the file it locked
    // is still the one under the name, and starts again otherwise.
    for (int attempt = 0; attempt < 100; ++attempt) {
        fd_ = ::open(lockPath_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd_ < 0)
            throw Error("Cannot write into " + folder + ": cannot create " + lockPath_ + " to reserve it (" +
                        std::strerror(errno) + ").");
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            const int lockError = errno;
            ::close(fd_);
            fd_ = -1;
            if (lockError == EWOULDBLOCK)
                throw Error("Cannot write into " + folder +
                            ": another ScaleScope run is writing there now; wait for it to finish or choose another folder.");
            throw Error("Cannot write into " + folder + ": cannot lock " + lockPath_ + " to reserve it (" +
                        std::strerror(lockError) + ").");
        }
        struct stat locked {}, named {};
        if (::fstat(fd_, &locked) == 0 && ::lstat(lockPath_.c_str(), &named) == 0 && locked.st_dev == named.st_dev &&
            locked.st_ino == named.st_ino)
            return;
        ::close(fd_);
        fd_ = -1;
    }
    throw Error("Cannot write into " + folder + ": other writers keep replacing " + lockPath_ + ".");
}

FolderReservation::~FolderReservation()
{
    if (fd_ < 0)
        return;
    // Removed while still locked, so nobody locks the name between the unlink and the close.
    ::unlink(lockPath_.c_str());
    ::close(fd_);
}

std::vector<std::string> writeOutputFolder(const std::string& folder, const std::vector<OutputFile>& files,
                                           bool overwrite)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (!fs::is_directory(folder, ec))
        throw Error("Cannot create the folder " + folder + ".");

    const FolderReservation reservation(folder);
    const InterruptCleanup lockRemovedOnInterrupt(joinPath(folder, kLockName), TemporaryKind::File);
    std::vector<std::string> paths;
    for (const OutputFile& file : files) {
        const std::string path = joinPath(folder, file.name);
        if (!overwrite && fs::exists(fs::symlink_status(path, ec)))
            throw OptionError(TaskOption::Overwrite, path + " already exists; pass {option} to overwrite it.");
        if (const std::string problem = outputTargetProblem(path); !problem.empty())
            throw Error(problem);
        paths.push_back(path);
    }
    for (std::size_t i = 0; i < files.size(); ++i)
        writeBytesAtomically(paths[i], files[i].bytes(), overwrite);
    return paths;
}

} // namespace scalescope
