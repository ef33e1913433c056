#pragma once
// A checkpoint's identity for runners that share no file system with the client (protocol 2,
// packaging/runners/PROTOCOL.md): the files a runner needs, each with its size and SHA-256, and the
// hash of that list. The client computes it to upload once; the runner verifies what it received.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope {

struct ManifestFile {
    std::string name;   // plain file name inside the checkpoint folder
    std::string path;   // where it is read (client side)
    uint64_t size = 0;
    std::string sha256; // lower-case hex
};

struct CheckpointManifest {
    std::vector<ManifestFile> files; // sorted by name
    std::string hash;

    // Reads and hashes the files of the checkpoint in dir that a runner needs. Throws naming the
    // folder when it has none of them.
    static CheckpointManifest of(const std::string& dir);
    nlohmann::json filesJson() const;
};

// The manifest text ("NAME SIZE SHA256\n" per file, sorted by name) and its hash.
std::string manifestHash(std::vector<ManifestFile> files);
// A name a runner may create in its cache (PROTOCOL.md): no folder separators, no leading dot (so no
// ".."), no whitespace or control characters (a manifest line is NAME SIZE SHA256), at most 255 bytes.
bool isSafeManifestName(const std::string& name);

} // namespace scalescope
