// The temporary file sits in the destination's folder because rename() is only atomic within one
// file system. Its name starts with a dot and carries the pid and a counter so that concurrent
// writers (threads or processes) never share a temporary file.
#include "io/atomic_write.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"

namespace scalescope {
namespace {

std::atomic<unsigned long> temporaryCounter{0};

std::string temporaryPathFor(const std::string& path)
{
    const std::size_t slash = path.find_last_of('/');
    const std::string folder = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    return folder + "." + name + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(++temporaryCounter);
}

bool pathExists(const std::string& path)
{
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0;
}

std::string alreadyExistsMessage(const std::string& path)
{
    return path + " already exists; refusing to overwrite it.";
}

// Flushes the finished temporary file to disk before it replaces anything, so a crash right after
// the rename cannot leave an empty file under the final name. Best effort: a file system that
// cannot sync still gets the file.
void syncFile(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    (void)::fsync(fd);
    ::close(fd);
}

} // namespace

void writeFileAtomically(const std::string& path, const std::function<void(const std::string& tempPath)>& write,
                         bool overwrite)
{
    if (!overwrite && pathExists(path))
        throw Error(alreadyExistsMessage(path));

    const std::string temporaryPath = temporaryPathFor(path);
    try {
        write(temporaryPath);
    } catch (...) {
        std::remove(temporaryPath.c_str());
        throw;
    }
    if (!pathExists(temporaryPath))
        throw Error("Cannot write " + path + ": the writer produced no file.");
    syncFile(temporaryPath);

    if (!overwrite) {
        // link() fails when the destination exists, which closes the window between the check
        // above and the rename. Some file systems have no hard links; they fall back to rename.
        if (::link(temporaryPath.c_str(), path.c_str()) == 0) {
            std::remove(temporaryPath.c_str());
            return;
        }
        const int linkError = errno;
        if (linkError == EEXIST) {
            std::remove(temporaryPath.c_str());
            throw Error(alreadyExistsMessage(path));
        }
        if (pathExists(path)) {
            std::remove(temporaryPath.c_str());
            throw Error(alreadyExistsMessage(path));
        }
    }
    if (std::rename(temporaryPath.c_str(), path.c_str()) != 0) {
        const int renameError = errno;
        std::remove(temporaryPath.c_str());
        throw Error("Cannot write " + path + ": " + std::strerror(renameError) + ".");
    }
}

void writeBytesAtomically(const std::string& path, const std::string& bytes, bool overwrite)
{
    writeFileAtomically(
        path,
        [&](const std::string& temporaryPath) {
            const int fd = ::open(temporaryPath.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd < 0)
                throw Error("Cannot write " + path + ": " + std::strerror(errno) + ".");
            std::size_t written = 0;
            while (written < bytes.size()) {
                const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
                if (n < 0 && errno == EINTR)
                    continue;
                if (n <= 0) {
                    const int writeError = n < 0 ? errno : EIO;
                    ::close(fd);
                    throw Error("Cannot write " + path + ": " + std::strerror(writeError) + ".");
                }
                written += static_cast<std::size_t>(n);
            }
            if (::close(fd) != 0)
                throw Error("Cannot write " + path + ": " + std::strerror(errno) + ".");
        },
        overwrite);
}

} // namespace scalescope
