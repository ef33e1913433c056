#pragma once
// The CPU runner's checkpoint cache (protocol 2; packaging/runners/PROTOCOL.md, "What the runner
// trusts"): checkpoints received by content hash, one folder per hash, published only when the
// bytes that arrived are the checkpoint the hash names.
//
// Owns this session's staging folders (<cache>/<hash>.partial-OWNER-XXXXXX, mode 0700, removed when
// the cache object goes, or by SIGINT or SIGTERM: io/interrupt_cleanup.h) and what arrived in them:
// each file's size and the SHA-256 of its bytes, computed while they were received. A session
// killed outright (SIGKILL, a crash) leaves its staging folder; the first use of the cache folder by
// a later session removes those whose OWNER is a process of this host that no longer runs
// (io/temporary_owner.h), and nothing else. commit() publishes a staging folder by renaming it to
// <cache>/<hash> only when every file its manifest lists arrived with that size and digest and the
// manifest hashes to <hash> (checkpoint_manifest's rule); files the manifest does not list are
// deleted before. What is published is loaded later without being hashed again, so the cache
// folder must belong to this user and be writable by nobody else: it is created 0700, and one
// that others can write is refused.
// Threading: one session, one thread. Errors: scalescope::Error, one sentence naming the folder or
// file and the problem.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "io/interrupt_cleanup.h"
#include "io/sha256.h"

namespace scalescope {

class RunnerCache {
public:
    explicit RunnerCache(std::string folder);
    ~RunnerCache();
    RunnerCache(const RunnerCache&) = delete;
    RunnerCache& operator=(const RunnerCache&) = delete;

    const std::string& folder() const { return folder_; }
    // Whether a checkpoint with this hash is published (false while there is no cache folder).
    bool has(const std::string& hash);
    // The published checkpoint's folder; throws when there is none.
    std::string published(const std::string& hash);

    // One file on its way into a staging folder. write() takes the payload as it arrives and never
    // throws (a failure to store it is reported by finish()), so the caller always reads the
    // payload to its end. Destroyed unfinished, it removes its file.
    class Incoming {
    public:
        ~Incoming();
        void write(const char* data, std::size_t size);

    private:
        friend class RunnerCache;
        Incoming() = default;
        int fd_ = -1;
        int error_ = 0;
        uint64_t size_ = 0;
        Sha256 digest_;
        std::string path_, hash_, name_, announced_;
    };
    // Opens `name` in the hash's staging folder (the cache folder and the staging folder are made
    // on first need). `announcedSha256` is what the client says the bytes hash to.
    std::unique_ptr<Incoming> receive(const std::string& hash, const std::string& name,
                                      const std::string& announcedSha256);
    // Checks what arrived against the announced SHA-256 and records its size and digest.
    void finish(Incoming& incoming);
    // Publishes the hash's staging folder as above; `files` is the request's list of
    // {"name", "size", "sha256"}. A checkpoint another session published first is kept as it is.
    void commit(const std::string& hash, const nlohmann::json& files);

private:
    struct Received {
        uint64_t size = 0;
        std::string sha256;
    };
    struct Staging {
        std::string folder;
        std::map<std::string, Received> files;
        std::shared_ptr<const InterruptCleanup> removedOnInterrupt; // by SIGINT or SIGTERM
    };
    // False when the folder does not exist and create is false; throws when it cannot be used.
    bool ensureFolder(bool create);
    void discard(const std::string& hash);

    std::string folder_;
    bool swept_ = false;
    std::map<std::string, Staging> staging_;
};

} // namespace scalescope
