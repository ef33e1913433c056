#pragma once
// Whole-file reads with errors that name the file.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace scalescope {

// Throws scalescope::Error "Cannot read <path>: <reason>." Refuses files over maxBytes.
std::string readFileToString(const std::string& path, std::uint64_t maxBytes = 1ull << 30);
// Parses a JSON file; the error names the file and the parser's byte position.
nlohmann::json readJsonFile(const std::string& path, std::uint64_t maxBytes = 256ull << 20);
bool fileExists(const std::string& path);
bool directoryExists(const std::string& path);
std::string joinPath(const std::string& dir, const std::string& name);

} // namespace scalescope
