#pragma once
// Whole-file reads with errors that name the file.
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope {

// Caps on the files read whole, checked before anything is parsed. A parsed JSON value costs about
// 40 times its text (a 60 MB file took 2.4 GB), so the JSON cap is far below what memory could
// hold and far above real files (roberta-base's tokenizer.json is 1.4 MB, XLM-R's 17 MB).
constexpr std::uint64_t kMaxJsonFileBytes = 32ull << 20;
constexpr std::uint64_t kMaxTextFileBytes = 256ull << 20;

// Every input file is read through this: a regular file, a pipe (--squad <(cat f.json)) or a
// device, read to its end; a folder or a socket is refused. More than maxBytes is refused with the
// cap in the sentence, and a FIFO that no program writes to reads as nothing (never waits in
// open()). Throws scalescope::Error "Cannot read <path>: <reason>."
std::string readFileToString(const std::string& path, std::uint64_t maxBytes = kMaxTextFileBytes);
// Runs read(), which reads the user's file (or folder) at path: a std::bad_alloc on the way, a file
// far larger in memory than on disk, becomes one sentence naming it (never an uncaught exception).
template <typename Read>
decltype(auto) readingUserFile(const std::string& path, Read&& read);
// "Cannot read PATH: it needs more memory than the process can have."
[[noreturn]] void throwOutOfMemoryReading(const std::string& path);
// Parses a JSON file read by readFileToString; the error names the file and the parser's byte
// position, or the memory the parse needed.
nlohmann::json readJsonFile(const std::string& path, std::uint64_t maxBytes = kMaxJsonFileBytes);
// Deepest array/object nesting that any JSON this program reads may have. Real configs, vocabularies,
// tokenizer.json files and safetensors headers nest fewer than 10 levels; a limit keeps hostile
// files (100,000 levels) from exhausting the stack in code that walks, copies or prints the value.
constexpr int kMaxJsonDepth = 128;
// The 0-based byte offset where [begin, end) first nests deeper than maxDepth, or -1 when it does
// not. Brackets inside strings do not count.
long long jsonNestingExceeded(const char* begin, const char* end, int maxDepth = kMaxJsonDepth);
// text with every byte that is not part of a valid UTF-8 sequence written as the four characters
// "\xNN", so JSON output never fails and token bytes stay visible.
std::string escapeInvalidUtf8(const std::string& text);
// A copy of value whose strings and keys are valid UTF-8 (escapeInvalidUtf8 applied).
nlohmann::json withValidUtf8(const nlohmann::json& value);
// text safe to print on a terminal: control characters (C0, DEL, C1; escape sequences start with
// them) and invalid UTF-8 bytes are written as "\xNN". Newlines are kept when keepNewlines.
std::string terminalSafe(const std::string& text, bool keepNewlines = false);
// A bounded quote of text for a message: text itself when it has at most `limit` bytes, else its
// first bytes (cut at a UTF-8 character boundary) and "...", `limit` bytes in all. Every message
// that quotes input (a value, a line, a command) quotes it through this, so a 60 MB value makes a
// short sentence.
std::string abbreviatedText(const std::string& text, std::size_t limit);
// Items in a sentence: "a", "a and b", "a, b and c" (lastJoin " or " for choices).
std::string joinedWords(const std::vector<std::string>& items, const std::string& lastJoin = " and ");
bool fileExists(const std::string& path);
// What stands at path when it is not a regular file: "a folder", "a FIFO", "a device", "a socket"
// (and "a symbolic link" when links are not followed); nullptr when it is a regular file or nothing
// is there. For messages that would otherwise say such a path "does not exist"; an output path is
// looked at without following links (a link there is refused, not written through).
enum class SymbolicLinks { Follow, Report };
const char* nonFileKind(const std::string& path, SymbolicLinks links = SymbolicLinks::Follow);
bool directoryExists(const std::string& path);
std::string joinPath(const std::string& dir, const std::string& name);

template <typename Read>
decltype(auto) readingUserFile(const std::string& path, Read&& read)
{
    try {
        return read();
    } catch (const std::bad_alloc&) {
        throwOutOfMemoryReading(path);
    }
}

} // namespace scalescope
