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

long long jsonNestingExceeded(const char* begin, const char* end, int maxDepth)
{
    int depth = 0;
    bool inString = false;
    for (const char* p = begin; p < end; ++p) {
        const char c = *p;
        if (inString) {
            if (c == '\\')
                ++p; // the escaped character cannot end the string
            else if (c == '"')
                inString = false;
        } else if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > maxDepth)
                return p - begin;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth; // unbalanced brackets are the parser's to report
        }
    }
    return -1;
}

std::string escapeInvalidUtf8(const std::string& text)
{
    static const char digits[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto b0 = static_cast<unsigned char>(text[i]);
        std::size_t length = b0 < 0x80 ? 1 : b0 >= 0xC2 && b0 <= 0xDF ? 2 : b0 >= 0xE0 && b0 <= 0xEF ? 3
                           : b0 >= 0xF0 && b0 <= 0xF4 ? 4 : 0;
        if (length > 1) {
            const auto b1 = static_cast<unsigned char>(i + 1 < text.size() ? text[i + 1] : 0);
            const unsigned char low = b0 == 0xE0 ? 0xA0 : b0 == 0xF0 ? 0x90 : 0x80;
            const unsigned char high = b0 == 0xED ? 0x9F : b0 == 0xF4 ? 0x8F : 0xBF;
            bool valid = i + length <= text.size() && b1 >= low && b1 <= high;
            for (std::size_t k = 2; valid && k < length; ++k)
                valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
            if (!valid)
                length = 0;
        }
        if (length == 0) {
            out += "\\x";
            out += digits[b0 >> 4];
            out += digits[b0 & 0xF];
            ++i;
        } else {
            out.append(text, i, length);
            i += length;
        }
    }
    return out;
}

} // namespace scalescope
