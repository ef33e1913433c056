#include "common/text_files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

#include "common/error.h"

namespace scalescope {

std::string readFileToString(const std::string& path, std::uint64_t maxBytes)
{
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0)
        throw Error("Cannot read " + path + ": " + std::strerror(errno) + ".");
    if (S_ISDIR(info.st_mode))
        throw Error("Cannot read " + path + ": it is a folder, not a file.");
    if (static_cast<std::uint64_t>(info.st_size) > maxBytes)
        throw Error("Cannot read " + path + ": the file is " + std::to_string(info.st_size) +
                    " bytes, more than the limit of " + std::to_string(maxBytes) + ".");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("Cannot read " + path + ": " + std::strerror(errno) + ".");
    std::string content(static_cast<std::size_t>(info.st_size), '\0');
    in.read(content.data(), static_cast<std::streamsize>(content.size()));
    if (in.gcount() != static_cast<std::streamsize>(content.size()))
        throw Error("Cannot read " + path + ": the file ended early.");
    return content;
}

nlohmann::json readJsonFile(const std::string& path, std::uint64_t maxBytes)
{
    const std::string text = readFileToString(path, maxBytes);
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw Error(path + " is not valid JSON (at byte " + std::to_string(e.byte) + ").");
    } catch (const nlohmann::json::exception&) {
        // The parser reports a number beyond double's range ("1e400") as out_of_range, not parse_error.
        throw Error(path + " is not valid JSON: it holds a number too large to represent.");
    }
}

bool fileExists(const std::string& path)
{
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

bool directoryExists(const std::string& path)
{
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::string joinPath(const std::string& dir, const std::string& name)
{
    if (dir.empty())
        return name;
    if (dir.back() == '/')
        return dir + name;
    return dir + "/" + name;
}

} // namespace scalescope
