#include "io/temporary_owner.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/sha256.h"

namespace scalescope {
namespace {

constexpr std::size_t kHostTagDigits = 16;
// Longer pids do not exist (the kernel's limit is 2^22); also keeps std::stol in range.
constexpr std::size_t kMaxPidDigits = 9;

std::string firstLineOf(const std::string& path)
{
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

std::string pidNamespace()
{
    char buffer[256];
    const ssize_t n = ::readlink("/proc/self/ns/pid", buffer, sizeof buffer);
    return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

std::string computeHostTag()
{
    const std::string bootId = firstLineOf("/proc/sys/kernel/random/boot_id");
    const std::string space = pidNamespace();
    std::string identity;
    if (!bootId.empty() && !space.empty()) {
        identity = bootId + "\n" + space;
    } else {
        std::random_device random;
        for (int i = 0; i < 8; ++i)
            identity += std::to_string(random()) + "-";
    }
    return sha256Hex(identity).substr(0, kHostTagDigits);
}

bool allDigits(std::string_view text)
{
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

bool isHostTag(std::string_view text)
{
    return text.size() == kHostTagDigits && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// Seconds since the epoch of the last modification of path, or of the newest entry when it is a
// folder; -1 when it cannot be read.
long long newestModification(const std::string& path)
{
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0)
        return -1;
    long long newest = info.st_mtim.tv_sec;
    if (!S_ISDIR(info.st_mode))
        return newest;
    DIR* dir = ::opendir(path.c_str());
    if (!dir)
        return newest;
    while (const dirent* entry = ::readdir(dir)) {
        if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0)
            continue; // the folder itself was counted; its parent is not part of it
        struct stat inner {};
        if (::fstatat(::dirfd(dir), entry->d_name, &inner, AT_SYMLINK_NOFOLLOW) == 0)
            newest = std::max<long long>(newest, inner.st_mtim.tv_sec);
    }
    ::closedir(dir);
    return newest;
}

} // namespace

const std::string& thisHostTag()
{
    static const std::string tag = computeHostTag();
    return tag;
}

std::string temporaryOwnerTag() { return thisHostTag() + "-" + std::to_string(::getpid()); }

std::optional<TemporaryOwner> parseTemporaryOwner(std::string_view text)
{
    const std::size_t dash = text.find('-');
    if (dash == std::string_view::npos || !isHostTag(text.substr(0, dash)))
        return std::nullopt;
    const std::string_view pid = text.substr(dash + 1);
    if (!allDigits(pid) || pid.size() > kMaxPidDigits || pid[0] == '0')
        return std::nullopt;
    return TemporaryOwner{std::string(text.substr(0, dash)), std::stol(std::string(pid))};
}

std::optional<TemporaryOwner> ownerOfMkdtempName(std::string_view name, std::string_view prefix)
{
    constexpr std::size_t mkdtempSuffix = 7; // "-XXXXXX"
    if (name.substr(0, prefix.size()) != prefix || name.size() <= prefix.size() + mkdtempSuffix ||
        name[name.size() - mkdtempSuffix] != '-')
        return std::nullopt;
    return parseTemporaryOwner(name.substr(prefix.size(), name.size() - prefix.size() - mkdtempSuffix));
}

void removeFoldersOfGoneOwners(const std::string& parent,
                               const std::function<std::optional<TemporaryOwner>(std::string_view name)>& ownerOf)
{
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(parent, error)) {
        const std::optional<TemporaryOwner> owner = ownerOf(entry.path().filename().string());
        if (owner && ownerIsGoneHere(*owner) &&
            entry.symlink_status(error).type() == std::filesystem::file_type::directory)
            std::filesystem::remove_all(entry.path(), error);
    }
}

bool processIsGone(long pid)
{
    if (pid <= 0)
        return false;
    return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

bool ownerIsGoneHere(const TemporaryOwner& owner)
{
    return owner.host == thisHostTag() && owner.pid != static_cast<long>(::getpid()) && processIsGone(owner.pid);
}

bool temporaryIsAbandoned(const TemporaryOwner& owner, const std::string& path)
{
    if (owner.host == thisHostTag())
        return ownerIsGoneHere(owner);
    const long long modified = newestModification(path);
    if (modified < 0)
        return false;
    const long long now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    return now - modified > std::chrono::duration_cast<std::chrono::seconds>(kAbandonedTemporaryAge).count();
}

} // namespace scalescope
