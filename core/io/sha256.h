#pragma once
// SHA-256 (FIPS 180-4), for the runner protocol's checkpoint identity: the client and a remote
// runner agree on a checkpoint by the hash of its files, so a second session sends nothing.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace scalescope {

class Sha256 {
public:
    Sha256();
    void update(const void* data, std::size_t size);
    // The digest as 64 lower-case hex digits; the object is spent afterwards.
    std::string hexDigest();

private:
    void compress(const uint8_t* block);
    std::array<uint32_t, 8> state_;
    std::array<uint8_t, 64> buffer_{};
    std::size_t buffered_ = 0;
    uint64_t totalBytes_ = 0;
};

std::string sha256Hex(const std::string& data);
// Reads the file in chunks; throws scalescope::Error naming it when it cannot be read.
std::string sha256OfFile(const std::string& path);

} // namespace scalescope
