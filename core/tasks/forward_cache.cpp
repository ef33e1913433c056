#include "tasks/forward_cache.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <system_error>

#include <sys/stat.h>
#include <unistd.h>

#include "common/environment.h"
#include "common/error.h"
#include "io/atomic_write.h"
#include "io/safetensors.h"
#include "io/sha256.h"

namespace scalescope {
namespace {

namespace fs = std::filesystem;

// Bumped whenever what an entry holds, or how a key is formed, changes.
constexpr const char* kCacheFormat = "scalescope-check-cache-1";
constexpr const char* kOutputPrefix = "output:";
constexpr const char* kTensorPrefix = "tensor:";

void hashIds(Sha256& hash, const std::vector<std::vector<int64_t>>& rows, const char* label)
{
    hash.update(label, std::char_traits<char>::length(label));
    const uint64_t count = rows.size();
    hash.update(&count, sizeof count);
    for (const std::vector<int64_t>& row : rows) {
        const uint64_t length = row.size();
        hash.update(&length, sizeof length);
        hash.update(row.data(), row.size() * sizeof(int64_t));
    }
}

constexpr const char* kEntryExtension = ".safetensors";
constexpr std::size_t kKeyLength = 64; // a SHA-256 in hex

std::string entryPath(const std::string& folder, const std::string& key)
{
    return (fs::path(folder) / (key + kEntryExtension)).string();
}

// An entry's name as key() and entryPath() form it: 64 lower-case hex digits and ".safetensors".
bool isEntryName(const std::string& name)
{
    return name.size() == kKeyLength + std::char_traits<char>::length(kEntryExtension) &&
           name.find_first_not_of("0123456789abcdef") == kKeyLength &&
           name.compare(kKeyLength, std::string::npos, kEntryExtension) == 0;
}

// A regular file (not a link, whatever it points to) of this user: the only kind the cache writes.
bool isOwnRegularFile(const fs::path& path, struct stat& info)
{
    return ::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && info.st_uid == ::geteuid();
}

bool isOwnRegularFile(const fs::path& path)
{
    struct stat info {};
    return isOwnRegularFile(path, info);
}

} // namespace

ForwardCacheSettings defaultForwardCacheSettings()
{
    ForwardCacheSettings settings;
    if (std::string folder = environmentText("SCALESCOPE_CHECK_CACHE"); !folder.empty())
        settings.folder = folder;
    else if (std::string xdg = environmentText("XDG_CACHE_HOME"); !xdg.empty())
        settings.folder = (fs::path(xdg) / "scalescope" / "check").string();
    else if (std::string home = environmentText("HOME"); !home.empty())
        settings.folder = (fs::path(home) / ".cache" / "scalescope" / "check").string();
    else
        settings.folder = (fs::temp_directory_path() / "scalescope-check-cache").string();
    if (std::string megabytes = environmentText("SCALESCOPE_CHECK_CACHE_MB"); !megabytes.empty())
        settings.maxBytes = environmentInteger("SCALESCOPE_CHECK_CACHE_MB", megabytes, 0, kMaxForwardCacheMegabytes,
                                               "a size in megabytes", "4096")
                            << 20;
    return settings;
}

ForwardCache::ForwardCache(ForwardCacheSettings settings) : settings_(std::move(settings)) {}

std::string ForwardCache::key(const std::string& checkpointHash, const std::string& runSignature,
                              const EncoderInputs& inputs)
{
    Sha256 hash;
    for (const std::string& part : {std::string(kCacheFormat), checkpointHash, runSignature}) {
        const uint64_t length = part.size();
        hash.update(&length, sizeof length);
        hash.update(part.data(), part.size());
    }
    hashIds(hash, inputs.inputIds, "ids");
    hashIds(hash, inputs.attentionMask, "mask");
    hashIds(hash, inputs.tokenTypeIds, "types");
    const uint64_t positions = inputs.logitPositions.size();
    hash.update(&positions, sizeof positions);
    for (const auto& [row, position] : inputs.logitPositions) {
        const int64_t pair[2] = {row, position};
        hash.update(pair, sizeof pair);
    }
    return hash.hexDigest();
}

bool ForwardCache::load(const std::string& key, CachedForward& forward)
{
    // A cap lowered since the last run applies before anything is read.
    if (!trimmed_ && claimFolder(false)) {
        trimmed_ = true;
        evict();
    }
    const std::string path = entryPath(settings_.folder, key);
    std::error_code error;
    if (!claimFolder(false) || !isOwnRegularFile(path)) {
        ++misses_;
        return false;
    }
    try {
        const std::unique_ptr<SafetensorsFile> file = SafetensorsFile::open(path);
        const auto& metadata = file->metadata();
        if (metadata.count("format") == 0 || metadata.at("format") != kCacheFormat)
            throw Error(path + " is not a cache entry of this version.");
        CachedForward loaded;
        std::map<std::string, std::shared_ptr<const FloatTensor>> tensors;
        for (const TensorView& view : file->tensors()) {
            if (view.dtype != Dtype::F32)
                throw Error(path + " holds a tensor that is not float32.");
            if (view.name.rfind(kOutputPrefix, 0) == 0)
                loaded.outputs.push_back({view.name.substr(std::char_traits<char>::length(kOutputPrefix)), view.toFloat()});
            else if (view.name.rfind(kTensorPrefix, 0) == 0)
                tensors[view.name] = std::make_shared<const FloatTensor>(view.toFloat());
        }
        // "capture:N" -> "NAME\ttensor:K", in execution order.
        for (std::size_t i = 0;; ++i) {
            const auto entry = metadata.find("capture:" + std::to_string(i));
            if (entry == metadata.end())
                break;
            const std::size_t tab = entry->second.find('\t');
            const auto tensor = tab == std::string::npos ? tensors.end() : tensors.find(entry->second.substr(tab + 1));
            if (tensor == tensors.end())
                throw Error(path + " names a capture whose tensor it does not hold.");
            loaded.captures.emplace_back(entry->second.substr(0, tab), tensor->second);
        }
        file->checkUnchanged();
        forward = std::move(loaded);
    } catch (const Error&) {
        fs::remove(path, error);
        ++misses_;
        return false;
    }
    // Used now: the last to be evicted.
    fs::last_write_time(path, fs::file_time_type::clock::now(), error);
    ++hits_;
    return true;
}

void ForwardCache::store(const std::string& key, const CachedForward& forward)
{
    if (!problem_.empty())
        return;
    try {
        if (!claimFolder(true))
            return;
        std::vector<TensorToWrite> tensors;
        std::map<std::string, std::string> metadata = {{"format", kCacheFormat}};
        for (const NamedTensor& output : forward.outputs)
            tensors.push_back(makeF32Tensor(kOutputPrefix + output.name, output.tensor));
        std::map<const FloatTensor*, std::string> stored;
        for (std::size_t i = 0; i < forward.captures.size(); ++i) {
            const auto& [name, tensor] = forward.captures[i];
            auto [it, added] = stored.emplace(tensor.get(), kTensorPrefix + std::to_string(stored.size()));
            if (added)
                tensors.push_back(makeF32Tensor(it->second, *tensor));
            metadata["capture:" + std::to_string(i)] = name + "\t" + it->second;
        }
        writeSafetensors(entryPath(settings_.folder, key), tensors, metadata);
        evict();
    } catch (const Error& e) {
        problem_ = e.what();
    } catch (const std::exception& e) {
        problem_ = std::string("The check cache in ") + settings_.folder + " failed: " + e.what();
    }
}

bool ForwardCache::claimFolder(bool create)
{
    if (folderClaimed_ || !problem_.empty())
        return folderClaimed_;
    const fs::path folder(settings_.folder);
    std::error_code error;
    if (!fs::is_directory(folder, error)) {
        if (!create)
            return false;
        fs::create_directories(folder, error);
        if (error)
            throw Error("Cannot create the check cache folder " + settings_.folder + ": " + error.message() + ".");
    }
    const fs::path marker = folder / kForwardCacheMarker;
    if (isOwnRegularFile(marker))
        return folderClaimed_ = true;
    // A folder without the marker becomes the cache's only while it holds nothing but entries (an
    // empty folder, or a cache of a version before the marker); anything else there is the user's.
    for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
        const std::string name = it->path().filename().string();
        if (!isEntryName(name) || !isOwnRegularFile(it->path())) {
            problem_ = "The check cache folder " + settings_.folder + " holds " + name +
                       ", which the cache did not write; the cache keeps to a folder of its own, so nothing is cached "
                       "(set SCALESCOPE_CHECK_CACHE to a new or empty folder).";
            return false;
        }
    }
    if (error)
        throw Error("Cannot read the check cache folder " + settings_.folder + ": " + error.message() + ".");
    writeBytesAtomically(marker.string(),
                            "This folder is ScaleScope's device-check cache: it removes its own entries (64 hex digits "
                            "and .safetensors) here, and nothing else.\n");
    return folderClaimed_ = true;
}

void ForwardCache::evict()
{
    struct Entry {
        fs::path path;
        std::uintmax_t size;
        fs::file_time_type used;
    };
    std::vector<Entry> entries;
    std::uintmax_t total = 0;
    std::error_code error;
    for (const fs::directory_entry& item : fs::directory_iterator(settings_.folder, error)) {
        struct stat info {};
        if (!isEntryName(item.path().filename().string()) || !isOwnRegularFile(item.path(), info))
            continue;
        const std::uintmax_t size = std::uintmax_t(info.st_size);
        entries.push_back({item.path(), size, fs::last_write_time(item.path(), error)});
        if (error)
            return;
        total += size;
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
    for (const Entry& entry : entries) {
        if (total <= settings_.maxBytes)
            break;
        // Checked again right before: what stands there now may have been replaced by a link.
        if (isOwnRegularFile(entry.path) && fs::remove(entry.path, error))
            total -= entry.size;
    }
}

} // namespace scalescope
