#pragma once
// A disk cache of the CPU side of device checks: a twin's outputs and captures for one batch of
// inputs, kept by (the twin's checkpoint content, how it runs, the batch's token ids), so that a
// second check of the same checkpoint and inputs against another device costs only the device's
// runs (the AIU team keeps "validation info" files for the same reason).
//
// Where: $SCALESCOPE_CHECK_CACHE, else $XDG_CACHE_HOME/scalescope/check, else
// ~/.cache/scalescope/check. How big: $SCALESCOPE_CHECK_CACHE_MB megabytes (default 4096, at most
// kMaxForwardCacheMegabytes; any other value is refused, common/environment.h); after
// each store the least recently used entries are removed until the folder fits (an entry read is
// used). Entries are safetensors files written atomically; one that cannot be read (truncated,
// from another version) is a miss and is removed. A cache that cannot be written (read-only, full
// disk) never fails a check: the problem is recorded once and caching stops.
//
// The cache deletes only what it can prove it wrote: it works in a folder that holds its marker
// file (kForwardCacheMarker, written into a folder it creates or finds holding nothing but
// entries; a folder with anything else is not used, and the problem says so), and there only on
// regular files of this user named like an entry (64 hex digits and ".safetensors"): never a link,
// never through one.
//
// Threading: one object per check, used from the check's thread.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor_data.h"
#include "model/inference_backend.h"

namespace scalescope {

// The file that makes a folder the cache's.
constexpr const char* kForwardCacheMarker = ".scalescope-check-cache";

struct ForwardCacheSettings {
    std::string folder;
    std::uint64_t maxBytes = 4096ull << 20;
};
constexpr std::uint64_t kMaxForwardCacheMegabytes = 1ull << 30; // a pebibyte: no cap at all
// From the environment, as above; throws scalescope::Error naming a variable that holds no size.
ForwardCacheSettings defaultForwardCacheSettings();

// A forward's outputs and its captures in execution order; captures that were the same tensor
// (q, k and v read one input) share one copy.
struct CachedForward {
    std::vector<NamedTensor> outputs;
    std::vector<std::pair<std::string, std::shared_ptr<const FloatTensor>>> captures;
};

class ForwardCache {
public:
    explicit ForwardCache(ForwardCacheSettings settings = defaultForwardCacheSettings());

    // The entry name for a run of `checkpointHash` (CheckpointManifest::hash) described by
    // `runSignature` (mode, overrides, accumulation, float weight source) on `inputs`.
    static std::string key(const std::string& checkpointHash, const std::string& runSignature,
                           const EncoderInputs& inputs);

    // False on a miss (or an unreadable entry, which is removed).
    bool load(const std::string& key, CachedForward& forward);
    void store(const std::string& key, const CachedForward& forward);

    const std::string& folder() const { return settings_.folder; }
    std::uint64_t maxBytes() const { return settings_.maxBytes; }
    std::size_t hits() const { return hits_; }
    std::size_t misses() const { return misses_; }
    // Why the cache stopped storing, "" while it works.
    const std::string& problem() const { return problem_; }

private:
    // Whether the folder is the cache's (above), writing the marker into a folder that may become
    // it; `create` makes a missing folder. A folder that is not sets problem().
    bool claimFolder(bool create);
    void evict();

    ForwardCacheSettings settings_;
    std::size_t hits_ = 0, misses_ = 0;
    bool trimmed_ = false;
    bool folderClaimed_ = false;
    std::string problem_;
};

} // namespace scalescope
