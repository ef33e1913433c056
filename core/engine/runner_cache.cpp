#include "engine/runner_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include "common/error.h"
#include "device/checkpoint_manifest.h"
#include "io/interrupt_cleanup.h"
#include "io/temporary_owner.h"

namespace scalescope {
namespace {

using json = nlohmann::json;

bool isHexDigest(const std::string& text)
{
    return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string octalMode(mode_t mode)
{
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

bool isDirectory(const std::string& path)
{
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// "<hash>.partial-": what precedes the OWNER-XXXXXX of an upload folder's name.
std::string stagingPrefix(const std::string& hash)
{
    return hash + ".partial-";
}

// The session that made an upload folder, from its name; nullopt for any other name (a checkpoint,
// a folder of an older version without an owner, anything a user put there).
std::optional<TemporaryOwner> stagingOwner(std::string_view name)
{
    const std::string hash(name.substr(0, name.find('.')));
    if (!isHexDigest(hash))
        return std::nullopt;
    return ownerOfMkdtempName(name, stagingPrefix(hash));
}

} // namespace

RunnerCache::RunnerCache(std::string folder) : folder_(std::move(folder)) {}

RunnerCache::~RunnerCache()
{
    // This session's unfinished uploads go: they never look like a complete checkpoint.
    for (const auto& [hash, staging] : staging_) {
        std::error_code ignored;
        std::filesystem::remove_all(staging.folder, ignored);
    }
}

bool RunnerCache::ensureFolder(bool create)
{
    struct stat info {};
    if (::stat(folder_.c_str(), &info) != 0) {
        if (errno != ENOENT)
            throw Error("Cannot use the runner's cache folder " + folder_ + ": " + std::strerror(errno) + ".");
        if (!create)
            return false;
        // The parents as the user's umask makes them; the cache itself private.
        const std::filesystem::path parent = std::filesystem::path(folder_).parent_path();
        std::error_code error;
        if (!parent.empty())
            std::filesystem::create_directories(parent, error);
        if (error)
            throw Error("Cannot create the runner's cache folder " + folder_ + ": " + error.message() + ".");
        if (::mkdir(folder_.c_str(), 0700) != 0 && errno != EEXIST)
            throw Error("Cannot create the runner's cache folder " + folder_ + ": " + std::strerror(errno) + ".");
        if (::stat(folder_.c_str(), &info) != 0)
            throw Error("Cannot use the runner's cache folder " + folder_ + ": " + std::strerror(errno) + ".");
    }
    if (!S_ISDIR(info.st_mode))
        throw Error("The runner's cache folder " + folder_ + " is not a folder.");
    if (info.st_uid != ::geteuid())
        throw Error("The runner's cache folder " + folder_ + " belongs to another user (uid " +
                    std::to_string(info.st_uid) + "); the runner loads what is in it without hashing it again, so "
                    "it uses a folder of its own user only (set SCALESCOPE_RUNNER_CACHE).");
    if (info.st_mode & (S_IWGRP | S_IWOTH))
        throw Error("The runner's cache folder " + folder_ + " can be written by other users (mode " +
                    octalMode(info.st_mode) + "); the runner loads what is in it without hashing it again, so "
                    "make it private (chmod 700) or set SCALESCOPE_RUNNER_CACHE to a folder of your own.");
    if (!swept_) {
        swept_ = true;
        removeFoldersOfGoneOwners(folder_, stagingOwner); // uploads of killed sessions
    }
    return true;
}

bool RunnerCache::has(const std::string& hash)
{
    return ensureFolder(false) && isDirectory(folder_ + "/" + hash);
}

std::string RunnerCache::published(const std::string& hash)
{
    if (!has(hash))
        throw Error("This runner has no checkpoint " + hash + "; upload it first.");
    return folder_ + "/" + hash;
}

RunnerCache::Incoming::~Incoming()
{
    if (fd_ >= 0) {
        ::close(fd_);
        ::unlink(path_.c_str());
    }
}

void RunnerCache::Incoming::write(const char* data, std::size_t size)
{
    digest_.update(data, size);
    size_ += size;
    while (size > 0 && error_ == 0) {
        const ssize_t n = ::write(fd_, data, size);
        if (n < 0) {
            if (errno != EINTR)
                error_ = errno;
            continue;
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

std::unique_ptr<RunnerCache::Incoming> RunnerCache::receive(const std::string& hash, const std::string& name,
                                                            const std::string& announcedSha256)
{
    ensureFolder(true);
    Staging& staging = staging_[hash];
    if (staging.folder.empty()) {
        // Runners on one host share the cache, so each session receives into a folder of its own.
        // Named with the session's owner, so that a later session removes it once this one is gone.
        std::string pattern = folder_ + "/" + stagingPrefix(hash) + temporaryOwnerTag() + "-XXXXXX";
        if (!::mkdtemp(pattern.data())) {
            const int error = errno;
            staging_.erase(hash);
            throw Error("Cannot create an upload folder in the runner's cache folder " + folder_ + ": " +
                        std::strerror(error) + ".");
        }
        staging.folder = pattern;
        staging.removedOnInterrupt = std::make_shared<InterruptCleanup>(pattern, TemporaryKind::Folder);
    }
    staging.files.erase(name); // a file sent again replaces what came before
    std::unique_ptr<Incoming> incoming(new Incoming());
    incoming->path_ = staging.folder + "/" + name;
    incoming->hash_ = hash;
    incoming->name_ = name;
    incoming->announced_ = announcedSha256;
    incoming->fd_ = ::open(incoming->path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (incoming->fd_ < 0)
        throw Error("Cannot write " + incoming->path_ + ": " + std::strerror(errno) + ".");
    return incoming;
}

void RunnerCache::finish(Incoming& incoming)
{
    const int fd = incoming.fd_;
    incoming.fd_ = -1;
    int error = incoming.error_;
    if (::close(fd) != 0 && error == 0)
        error = errno;
    if (error != 0) {
        ::unlink(incoming.path_.c_str());
        throw Error("Cannot write " + incoming.path_ + ": " + std::strerror(error) + ".");
    }
    const std::string received = incoming.digest_.hexDigest();
    if (received != incoming.announced_) {
        ::unlink(incoming.path_.c_str());
        throw Error("The upload of " + incoming.name_ + " arrived damaged: its SHA-256 is " + received + ", not " +
                    incoming.announced_ + ".");
    }
    staging_[incoming.hash_].files[incoming.name_] = {incoming.size_, received};
}

void RunnerCache::discard(const std::string& hash)
{
    const auto it = staging_.find(hash);
    if (it == staging_.end())
        return;
    std::error_code ignored;
    std::filesystem::remove_all(it->second.folder, ignored);
    staging_.erase(it);
}

void RunnerCache::commit(const std::string& hash, const json& files)
{
    if (!files.is_array() || files.empty())
        throw Error("The commit_checkpoint request's \"files\" must list the uploaded files.");
    std::vector<ManifestFile> listed;
    std::set<std::string> names;
    for (const json& entry : files) {
        if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("size") ||
            !entry["size"].is_number_unsigned() || !entry.contains("sha256") || !entry["sha256"].is_string() ||
            !isHexDigest(entry["sha256"].get<std::string>()))
            throw Error("Each entry of \"files\" must have a name, a size and a sha256 (64 lower-case hex digits).");
        ManifestFile file{entry["name"].get<std::string>(), "", entry["size"].get<uint64_t>(),
                          entry["sha256"].get<std::string>()};
        if (!isSafeManifestName(file.name))
            throw Error("The file name \"" + file.name + "\" is not a plain file name.");
        if (!names.insert(file.name).second)
            throw Error("The commit_checkpoint request lists " + file.name + " twice.");
        listed.push_back(std::move(file));
    }
    // What is published is what arrived: each listed file's size and digest as received here.
    const auto staging = staging_.find(hash);
    std::vector<ManifestFile> arrived;
    for (const ManifestFile& file : listed) {
        const Received* received = nullptr;
        if (staging != staging_.end())
            if (const auto it = staging->second.files.find(file.name); it != staging->second.files.end())
                received = &it->second;
        if (!received)
            throw Error("The file " + file.name + " of checkpoint " + hash + " was not uploaded in this session.");
        if (received->size != file.size)
            throw Error("The file " + file.name + " of checkpoint " + hash + " arrived with " +
                        std::to_string(received->size) + " bytes, not the " + std::to_string(file.size) +
                        " its manifest lists.");
        if (received->sha256 != file.sha256)
            throw Error("The file " + file.name + " of checkpoint " + hash + " arrived with SHA-256 " +
                        received->sha256 + ", not the " + file.sha256 + " its manifest lists; the checkpoint is not stored.");
        arrived.push_back({file.name, "", received->size, received->sha256});
    }
    const std::string arrivedHash = manifestHash(arrived);
    if (arrivedHash != hash)
        throw Error("The files listed do not make up checkpoint " + hash + " (their manifest hashes to " + arrivedHash + ").");

    const std::string target = folder_ + "/" + hash;
    if (isDirectory(target)) { // another session published it first: keep theirs
        discard(hash);
        return;
    }
    // Only the manifest's files are published.
    const std::string folder = staging->second.folder;
    std::error_code error;
    std::vector<std::filesystem::path> extra;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error))
        if (!names.count(entry.path().filename().string()))
            extra.push_back(entry.path());
    if (error)
        throw Error("Cannot read the upload folder " + folder + ": " + error.message() + ".");
    for (const std::filesystem::path& path : extra) {
        std::filesystem::remove_all(path, error);
        if (error)
            throw Error("Cannot remove " + path.string() + ", which checkpoint " + hash + " does not list: " +
                        error.message() + ".");
    }
    if (::rename(folder.c_str(), target.c_str()) != 0) {
        const int renameError = errno;
        if (!isDirectory(target))
            throw Error("Cannot store checkpoint " + hash + " in " + folder_ + ": " + std::strerror(renameError) + ".");
        // Another session published it in the meantime: keep theirs.
    }
    discard(hash);
}

} // namespace scalescope
