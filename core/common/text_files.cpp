#include "common/text_files.h"

#include <cerrno>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"

namespace scalescope {

namespace {

// Closes a descriptor on every way out of a read.
struct FileDescriptor {
    int fd = -1;
    ~FileDescriptor()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

std::string sizeText(std::uint64_t bytes)
{
    std::string text = std::to_string(bytes) + " bytes";
    if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
        text += " (" + std::to_string(bytes >> 20) + " MiB)";
    return text;
}

} // namespace

void throwOutOfMemoryReading(const std::string& path)
{
    throw Error("Cannot read " + path + ": it needs more memory than the process can have.");
}

namespace {

std::string readFileWithin(const std::string& path, std::uint64_t maxBytes)
{
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0)
        throw Error("Cannot read " + path + ": " + std::strerror(errno) + ".");
    if (S_ISDIR(info.st_mode))
        throw Error("Cannot read " + path + ": it is a folder, not a file.");
    if (S_ISSOCK(info.st_mode))
        throw Error("Cannot read " + path + ": it is a socket, not a file.");
    const bool regular = S_ISREG(info.st_mode);
    if (regular && static_cast<std::uint64_t>(info.st_size) > maxBytes)
        throw Error("Cannot read " + path + ": the file is " + std::to_string(info.st_size) +
                    " bytes, more than the limit of " + sizeText(maxBytes) + " for this kind of file.");
    // O_NONBLOCK because opening a FIFO that no program writes to would wait forever; it is cleared
    // right after, and a read then returns end of input when no writer holds the pipe.
    FileDescriptor file;
    file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (file.fd < 0)
        throw Error("Cannot read " + path + ": " + std::strerror(errno) + ".");
    const int flags = ::fcntl(file.fd, F_GETFL);
    if (flags < 0 || ::fcntl(file.fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
        throw Error("Cannot read " + path + ": " + std::strerror(errno) + ".");
    // Read to the end rather than trust st_size: a pipe (--squad <(cat file.json)) reports 0, and
    // a file may change size between the stat and the read.
    std::string content;
    if (regular)
        content.reserve(static_cast<std::size_t>(info.st_size));
    char chunk[1 << 16];
    while (true) {
        const ssize_t got = ::read(file.fd, chunk, sizeof chunk);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            throw Error("Cannot read " + path + ": " + std::strerror(errno) + ".");
        }
        if (got == 0)
            break;
        if (content.size() + static_cast<std::size_t>(got) > maxBytes)
            throw Error("Cannot read " + path + ": it holds more than the limit of " + sizeText(maxBytes) +
                        " for this kind of file.");
        content.append(chunk, static_cast<std::size_t>(got));
    }
    if (content.empty() && S_ISFIFO(info.st_mode))
        throw Error("Cannot read " + path + ": it is a pipe, and no program wrote anything to it.");
    return content;
}

} // namespace

std::string readFileToString(const std::string& path, std::uint64_t maxBytes)
{
    return readingUserFile(path, [&] { return readFileWithin(path, maxBytes); });
}

nlohmann::json readJsonFile(const std::string& path, std::uint64_t maxBytes)
{
    const std::string text = readFileToString(path, maxBytes);
    if (const long long at = jsonNestingExceeded(text.data(), text.data() + text.size()); at >= 0)
        throw Error(path + " nests arrays and objects more than " + std::to_string(kMaxJsonDepth) +
                    " levels deep (at byte " + std::to_string(at) + "); no valid file of this kind nests that deep.");
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw Error(path + " is not valid JSON (at byte " + std::to_string(e.byte) + ").");
    } catch (const nlohmann::json::exception&) {
        // The parser reports a number beyond double's range ("1e400") as out_of_range, not parse_error.
        throw Error(path + " is not valid JSON: it holds a number too large to represent.");
    } catch (const std::bad_alloc&) {
        throw Error("Cannot read " + path + ": its " + std::to_string(text.size()) +
                    " bytes of JSON need more memory than the process can have.");
    }
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

namespace {

// Length of the valid UTF-8 sequence at text[i], or 0 when the byte there does not start one
// (overlong forms, surrogates and code points past U+10FFFF are invalid, as in RFC 3629).
std::size_t validUtf8Length(const std::string& text, std::size_t i)
{
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char b0 = byte(i);
    if (b0 < 0x80)
        return 1;
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF; // allowed range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        length = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        length = 3;
        if (b0 == 0xE0)
            low = 0xA0;
        else if (b0 == 0xED)
            high = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        length = 4;
        if (b0 == 0xF0)
            low = 0x90;
        else if (b0 == 0xF4)
            high = 0x8F;
    } else {
        return 0;
    }
    if (i + length > text.size())
        return 0;
    if (byte(i + 1) < low || byte(i + 1) > high)
        return 0;
    for (std::size_t k = 2; k < length; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xBF)
            return 0;
    return length;
}

void appendHexByte(std::string& out, unsigned char b)
{
    static const char digits[] = "0123456789ABCDEF";
    out += "\\x";
    out += digits[b >> 4];
    out += digits[b & 0xF];
}

} // namespace

std::string escapeInvalidUtf8(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t length = validUtf8Length(text, i);
        if (length == 0) {
            appendHexByte(out, static_cast<unsigned char>(text[i]));
            ++i;
        } else {
            out.append(text, i, length);
            i += length;
        }
    }
    return out;
}

nlohmann::json withValidUtf8(const nlohmann::json& value)
{
    if (value.is_string())
        return escapeInvalidUtf8(value.get_ref<const std::string&>());
    if (value.is_array()) {
        nlohmann::json out = nlohmann::json::array();
        for (const nlohmann::json& element : value)
            out.push_back(withValidUtf8(element));
        return out;
    }
    if (value.is_object()) {
        nlohmann::json out = nlohmann::json::object();
        for (auto it = value.begin(); it != value.end(); ++it)
            out[escapeInvalidUtf8(it.key())] = withValidUtf8(it.value());
        return out;
    }
    return value;
}

std::string terminalSafe(const std::string& text, bool keepNewlines)
{
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const unsigned char b = static_cast<unsigned char>(text[i]);
        const std::size_t length = validUtf8Length(text, i);
        const bool c0 = b < 0x20 && !(keepNewlines && b == '\n');
        // C1 controls U+0080..U+009F are encoded C2 80..C2 9F; U+009B is a one-character CSI.
        const bool c1 = length == 2 && b == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F;
        if (length == 0 || c0 || b == 0x7F) {
            appendHexByte(out, b);
            ++i;
        } else if (c1) {
            appendHexByte(out, b);
            appendHexByte(out, static_cast<unsigned char>(text[i + 1]));
            i += 2;
        } else {
            out.append(text, i, length);
            i += length;
        }
    }
    return out;
}

std::string abbreviatedText(const std::string& text, std::size_t limit)
{
    if (text.size() <= limit)
        return text;
    std::size_t cut = limit > 3 ? limit - 3 : 0;
    // Back up over UTF-8 continuation bytes so the quote never ends inside a character.
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;
    return text.substr(0, cut) + "...";
}

std::string joinedWords(const std::vector<std::string>& items, const std::string& lastJoin)
{
    std::string text;
    for (std::size_t i = 0; i < items.size(); ++i)
        text += (i == 0 ? "" : i + 1 == items.size() ? lastJoin : ", ") + items[i];
    return text;
}

bool fileExists(const std::string& path)
{
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

const char* nonFileKind(const std::string& path, SymbolicLinks links)
{
    struct stat info {};
    const int status = links == SymbolicLinks::Follow ? ::stat(path.c_str(), &info) : ::lstat(path.c_str(), &info);
    if (status != 0 || S_ISREG(info.st_mode))
        return nullptr;
    if (S_ISLNK(info.st_mode))
        return "a symbolic link";
    if (S_ISDIR(info.st_mode))
        return "a folder";
    if (S_ISFIFO(info.st_mode))
        return "a FIFO";
    if (S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode))
        return "a device";
    if (S_ISSOCK(info.st_mode))
        return "a socket";
    return "not a regular file";
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
