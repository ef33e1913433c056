// The temporary file sits in the destination's folder because rename() is only atomic within one
// file system. Its name starts with a dot and carries its owner (host, PID namespace and pid:
// io/temporary_owner.h) and a counter, so that concurrent writers (threads, processes, containers
// sharing the folder) never share a temporary file and a sweep removes only abandoned ones.
#include "io/atomic_write.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/text_files.h"
#include "io/interrupt_cleanup.h"
#include "io/temporary_owner.h"

namespace scalescope {
namespace {

std::atomic<unsigned long> temporaryCounter{0};

// A file name has at most 255 bytes; the temporary's own parts (".", ".tmp-", OWNER, "-N") take
// at most 54 of them, so a long NAME is shortened in the temporary's name only.
constexpr std::size_t kMaxNameInTemporary = 255 - 54;

std::string temporaryPathFor(const std::string& path)
{
    const std::size_t slash = path.find_last_of('/');
    const std::string folder = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    return folder + "." + name.substr(0, kMaxNameInTemporary) + ".tmp-" + temporaryOwnerTag() + "-" +
           std::to_string(++temporaryCounter);
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
// the rename cannot leave an empty file under the final name, and a disk that filled up while the
// writer's buffers were flushed is an error here rather than a truncated file under the final
// name. A file system that cannot sync at all (EINVAL) still gets the file.
void syncFile(const std::string& path, const std::string& shownPath)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw Error("Cannot write " + shownPath + ": " + std::strerror(errno) + ".");
    const int synced = ::fsync(fd);
    const int syncError = errno;
    ::close(fd);
    if (synced != 0 && syncError != EINVAL && syncError != EROFS)
        throw Error("Cannot write " + shownPath + ": " + std::strerror(syncError) + ".");
}

bool allDigits(const std::string& text)
{
    return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

// The owner in a temporary's name: ".NAME.tmp-OWNER-N" or ".NAME.partial-OWNER" (".NAME.old-OWNER"
// is handled by the quantize command, which knows whether it still holds the only copy).
std::optional<TemporaryOwner> ownerInName(const std::string& name)
{
    if (name.size() < 2 || name[0] != '.')
        return std::nullopt;
    const std::size_t tmp = name.rfind(".tmp-");
    if (tmp != std::string::npos && tmp > 0) {
        const std::string rest = name.substr(tmp + 5);
        const std::size_t dash = rest.rfind('-');
        if (dash != std::string::npos && allDigits(rest.substr(dash + 1)))
            if (auto owner = parseTemporaryOwner(std::string_view(rest).substr(0, dash)))
                return owner;
    }
    const std::size_t partial = name.rfind(".partial-");
    if (partial != std::string::npos && partial > 0)
        return parseTemporaryOwner(std::string_view(name).substr(partial + 9));
    return std::nullopt;
}

} // namespace

std::string outputTargetProblem(const std::string& path)
{
    if (path.empty())
        return "The output path is empty; name the file to write.";
    if (const char* kind = nonFileKind(path, SymbolicLinks::Report))
        return "Cannot write " + path + ": it already exists as " + std::string(kind) +
               ", not a regular file, and only a regular file is ever replaced, even when forced; choose another "
               "output path.";
    return {};
}

void removeStaleTemporaries(const std::string& folder)
{
    DIR* dir = ::opendir(folder.empty() ? "." : folder.c_str());
    if (!dir)
        return;
    std::vector<std::string> stale;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string name = entry->d_name;
        if (name == "." || name == "..")
            continue;
        const std::optional<TemporaryOwner> owner = ownerInName(name);
        if (owner && temporaryIsAbandoned(*owner, folder.empty() ? name : joinPath(folder, name)))
            stale.push_back(name);
    }
    ::closedir(dir);
    std::error_code ignored;
    for (const std::string& name : stale) {
        const std::string path = folder.empty() ? name : joinPath(folder, name);
        struct stat info {};
        if (::lstat(path.c_str(), &info) != 0)
            continue;
        // A stale folder is a quantize output that never got renamed into place; it holds only files
        // this program wrote, so it is removed as a whole. Symbolic links are left alone.
        if (S_ISREG(info.st_mode))
            ::unlink(path.c_str());
        else if (S_ISDIR(info.st_mode))
            std::filesystem::remove_all(path, ignored);
    }
}

void writeFileAtomically(const std::string& path, const std::function<void(const std::string& tempPath)>& write,
                         bool overwrite)
{
    if (!overwrite && pathExists(path))
        throw Error(alreadyExistsMessage(path));
    if (const std::string problem = outputTargetProblem(path); !problem.empty())
        throw Error(problem);
    {
        const std::size_t slash = path.find_last_of('/');
        removeStaleTemporaries(slash == std::string::npos ? std::string() : path.substr(0, slash + 1));
    }

    const std::string temporaryPath = temporaryPathFor(path);
    const InterruptCleanup removedOnInterrupt(temporaryPath, TemporaryKind::File);
    try {
        write(temporaryPath);
        if (!pathExists(temporaryPath))
            throw Error("Cannot write " + path + ": the writer produced no file.");
        syncFile(temporaryPath, path);
    } catch (...) {
        std::remove(temporaryPath.c_str());
        throw;
    }

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
    // Checked again at the last moment: whatever appeared at the path meanwhile is not replaced
    // unless it is a regular file.
    if (const std::string problem = outputTargetProblem(path); !problem.empty()) {
        std::remove(temporaryPath.c_str());
        throw Error(problem);
    }
    if (std::rename(temporaryPath.c_str(), path.c_str()) != 0) {
        const int renameError = errno;
        std::remove(temporaryPath.c_str());
        throw Error("Cannot write " + path + ": " + std::strerror(renameError) + ".");
    }
}

void writeNewFile(const std::string& path, const std::string& bytes, const std::string& shownPath)
{
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        throw Error("Cannot write " + shownPath + ": " + std::strerror(errno) + ".");
    auto fail = [&](int error) {
        ::close(fd);
        throw Error("Cannot write " + shownPath + ": " + std::strerror(error) + ".");
    };
    std::size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            fail(n < 0 ? errno : EIO);
        written += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0)
        throw Error("Cannot write " + shownPath + ": " + std::strerror(errno) + ".");
}

void writeBytesAtomically(const std::string& path, const std::string& bytes, bool overwrite)
{
    writeFileAtomically(
        path, [&](const std::string& temporaryPath) { writeNewFile(temporaryPath, bytes, path); }, overwrite);
}

} // namespace scalescope
