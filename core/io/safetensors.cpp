#include "io/safetensors.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <mutex>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "io/atomic_write.h"
#include "numerics/fp8.h"
#include "numerics/half.h"

// Tensor data is little-endian on disk and read with memcpy straight into host integers/floats.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.cpp assumes a little-endian host"
#endif

namespace scalescope {
namespace {

// A header this large is not a real checkpoint; refusing it early avoids parsing garbage for minutes.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;
// Real files hold hundreds to a few thousand tensors (a sharded model, per shard); a header that lists
// more is hostile, and every entry costs a view, an index entry and an overlap check.
constexpr std::size_t kMaxTensorsPerFile = 100'000;

struct DtypeInfo {
    Dtype dtype;
    const char* name;
    std::size_t size;
};

constexpr DtypeInfo kDtypes[] = {
    {Dtype::Bool, "BOOL", 1}, {Dtype::U8, "U8", 1},     {Dtype::I8, "I8", 1},
    {Dtype::I16, "I16", 2},   {Dtype::I32, "I32", 4},   {Dtype::I64, "I64", 8},
    {Dtype::F16, "F16", 2},   {Dtype::BF16, "BF16", 2}, {Dtype::F32, "F32", 4},
    {Dtype::F64, "F64", 8},   {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::F8_E5M2, "F8_E5M2", 1},
};

const DtypeInfo& dtypeInfo(Dtype dtype)
{
    for (const DtypeInfo& info : kDtypes)
        if (info.dtype == dtype)
            return info;
    return kDtypes[0]; // unreachable: every enumerator is listed
}

bool checkedMultiply(uint64_t a, uint64_t b, uint64_t* product)
{
    return !__builtin_mul_overflow(a, b, product);
}

// numel x dtype size, or false when it does not fit in 63 bits.
bool tensorByteSize(const std::vector<int64_t>& shape, Dtype dtype, uint64_t* bytes)
{
    uint64_t count = 1;
    for (int64_t dim : shape) {
        if (dim < 0 || !checkedMultiply(count, static_cast<uint64_t>(dim), &count))
            return false;
    }
    if (!checkedMultiply(count, dtypeSize(dtype), &count) || count > static_cast<uint64_t>(INT64_MAX))
        return false;
    *bytes = count;
    return true;
}

std::string tensorIn(const std::string& name, const std::string& path)
{
    return "Tensor '" + name + "' in " + path;
}

// Reads a non-negative JSON integer; false for anything else (floats, strings, negatives).
bool readUnsigned(const nlohmann::json& value, uint64_t* out)
{
    if (value.is_number_unsigned()) {
        *out = value.get<uint64_t>();
        return true;
    }
    if (value.is_number_integer() && value.get<int64_t>() >= 0) {
        *out = static_cast<uint64_t>(value.get<int64_t>());
        return true;
    }
    return false;
}

template <typename T>
void convertElements(const uint8_t* data, std::size_t count, float* out)
{
    for (std::size_t i = 0; i < count; ++i) {
        T element;
        std::memcpy(&element, data + i * sizeof(T), sizeof(T));
        out[i] = static_cast<float>(element);
    }
}

template <typename Bits, typename Convert>
void convertBits(const uint8_t* data, std::size_t count, float* out, Convert convert)
{
    for (std::size_t i = 0; i < count; ++i) {
        Bits bits;
        std::memcpy(&bits, data + i * sizeof(Bits), sizeof(Bits));
        out[i] = convert(bits);
    }
}

// Records the top-level keys of a JSON object in file order, and the first one that appears twice.
// A SAX pass rather than nlohmann's parse callback: after every closed value the callback parser
// rescans the enclosing object for discarded entries, so a header of n tensors took O(n^2) time
// (minutes for 100,000 tensors).
class TopLevelKeys : public nlohmann::json_sax<nlohmann::json> {
public:
    std::vector<std::string> order;
    std::string duplicate;

    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return ++depth_, true; }
    bool end_object() override { return --depth_, true; }
    bool start_array(std::size_t) override { return ++depth_, true; }
    bool end_array() override { return --depth_, true; }
    bool key(string_t& key) override
    {
        if (depth_ == 1) {
            if (seen_.insert(key).second)
                order.push_back(key);
            else if (duplicate.empty())
                duplicate = key;
        }
        return true;
    }
    // Only reached for text that the DOM parse has already accepted.
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

private:
    int depth_ = 0;
    std::set<std::string> seen_;
};

// ---- SIGBUS guard ---------------------------------------------------------------------------
// Slots are plain atomics because the handler may only read lock-free state. A mapping beyond
// the slot count runs unguarded (a checkpoint with more than a thousand shards).
struct GuardedMapping {
    std::atomic<std::uintptr_t> begin{0};
    std::atomic<std::uintptr_t> end{0};
    std::atomic<bool> faulted{false};
};
constexpr int kGuardSlots = 1024;
GuardedMapping guardedMappings[kGuardSlots];
std::mutex guardMutex;
struct sigaction previousBusAction {};
std::atomic<bool> guardInstalled{false};
std::uintptr_t pageSize = 4096;

void onBusError(int signalNumber, siginfo_t* info, void* context)
{
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (GuardedMapping& mapping : guardedMappings) {
        const std::uintptr_t begin = mapping.begin.load(std::memory_order_acquire);
        const std::uintptr_t end = mapping.end.load(std::memory_order_acquire);
        if (begin == 0 || address < begin || address >= end)
            continue;
        // The file shrank under the mapping: zero pages from here to the end let the faulting read
        // (and the rest of the computation) finish; checkUnchanged() reports it afterwards.
        const std::uintptr_t from = address & ~(pageSize - 1);
        void* replaced = ::mmap(reinterpret_cast<void*>(from), end - from, PROT_READ,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (replaced != MAP_FAILED) {
            mapping.faulted.store(true, std::memory_order_release);
            return;
        }
        break;
    }
    // Not one of our mappings: whatever handled SIGBUS before us, else the default action (the
    // faulting instruction runs again and the signal now terminates the process as it would have).
    if ((previousBusAction.sa_flags & SA_SIGINFO) && previousBusAction.sa_sigaction) {
        previousBusAction.sa_sigaction(signalNumber, info, context);
    } else if (previousBusAction.sa_handler != SIG_DFL && previousBusAction.sa_handler != SIG_IGN &&
               previousBusAction.sa_handler != nullptr) {
        previousBusAction.sa_handler(signalNumber);
    } else {
        ::signal(SIGBUS, SIG_DFL);
    }
}

int guardMapping(const void* mapping, std::size_t size)
{
    std::lock_guard<std::mutex> lock(guardMutex);
    if (!guardInstalled.load()) {
        pageSize = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
        struct sigaction action {};
        action.sa_sigaction = onBusError;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&action.sa_mask);
        if (::sigaction(SIGBUS, &action, &previousBusAction) != 0)
            return -1;
        guardInstalled.store(true);
    }
    for (int slot = 0; slot < kGuardSlots; ++slot) {
        if (guardedMappings[slot].begin.load() != 0)
            continue;
        const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(mapping);
        const std::uintptr_t end = begin + ((size + pageSize - 1) & ~(pageSize - 1));
        guardedMappings[slot].faulted.store(false);
        guardedMappings[slot].end.store(end, std::memory_order_release);
        guardedMappings[slot].begin.store(begin, std::memory_order_release);
        return slot;
    }
    return -1;
}

void unguardMapping(int slot)
{
    if (slot < 0)
        return;
    std::lock_guard<std::mutex> lock(guardMutex);
    guardedMappings[slot].begin.store(0, std::memory_order_release);
    guardedMappings[slot].end.store(0, std::memory_order_release);
}

bool isPlainFileName(const std::string& name)
{
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\0') == std::string::npos;
}


// ---- SafetensorsFile::open, step by step -----------------------------------------------------

// Opens a regular file of at least 8 bytes (the header length) for reading; returns the descriptor.
int openRegularFile(const std::string& path, struct stat* info)
{
    // O_NONBLOCK: opening a FIFO with no writer would wait forever; fstat below refuses it anyway.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        throw Error("Cannot open " + path + ": " + std::strerror(errno) + ".");
    std::string problem;
    if (::fstat(fd, info) != 0)
        problem = "Cannot open " + path + ": " + std::strerror(errno) + ".";
    else if (!S_ISREG(info->st_mode))
        problem = "Cannot open " + path + ": it is " + std::string(nonFileKind(path) ? nonFileKind(path) : "not a regular file") +
                  ", not a file; safetensors files are memory-mapped, so they must be regular files.";
    else if (info->st_size < 8)
        problem = path + " is not a safetensors file: it is " + std::to_string(info->st_size) +
                  " bytes long, too short for the 8-byte header length.";
    if (!problem.empty()) {
        ::close(fd);
        throw Error(problem);
    }
    return fd;
}

struct ParsedHeader {
    nlohmann::json json;
    std::vector<std::string> keyOrder; // the tensors' order (and "__metadata__" where it stands)
    uint64_t length = 0;
};

ParsedHeader parseHeader(const std::string& path, const uint8_t* bytes, uint64_t fileSize)
{
    ParsedHeader header;
    for (int i = 7; i >= 0; --i)
        header.length = (header.length << 8) | bytes[i];
    const uint64_t length = header.length;
    if (length > kMaxHeaderBytes)
        throw Error(path + " is not a safetensors file: its header length " + std::to_string(length) +
                    " is larger than the limit of " + std::to_string(kMaxHeaderBytes) + " bytes.");
    if (length > fileSize - 8)
        throw Error(path + " is truncated or not a safetensors file: its header length " + std::to_string(length) +
                    " runs past the end of the file (" + std::to_string(fileSize) + " bytes).");

    // The header's top-level key order is the tensors' order; parsing into std::map loses it, so a
    // second, SAX pass records it (and catches duplicate names, which the map would silently merge).
    TopLevelKeys keys;
    const char* begin = reinterpret_cast<const char*>(bytes + 8);
    if (const long long at = jsonNestingExceeded(begin, begin + length); at >= 0)
        throw Error(path + " has a header that nests arrays and objects more than " + std::to_string(kMaxJsonDepth) +
                    " levels deep (at byte " + std::to_string(at) + " of " + std::to_string(length) +
                    "); a safetensors header nests 3.");
    try {
        header.json = nlohmann::json::parse(begin, begin + length);
        nlohmann::json::sax_parse(begin, begin + length, &keys);
    } catch (const nlohmann::json::parse_error& e) {
        // nlohmann reports one past the end when the text stops early.
        const uint64_t position = std::min<uint64_t>(e.byte, length);
        throw Error(path + " has a header that is not valid JSON (at byte " + std::to_string(position) + " of " +
                    std::to_string(length) + ").");
    } catch (const nlohmann::json::exception&) {
        // A number beyond double's range ("1e400") comes as out_of_range, not parse_error.
        throw Error(path + " has a header that is not valid JSON: it holds a number too large to represent.");
    }
    if (!header.json.is_object())
        throw Error(path + " has a header that is not a JSON object.");
    if (!keys.duplicate.empty())
        throw Error(path + " lists tensor '" + keys.duplicate + "' twice in its header.");
    header.keyOrder = std::move(keys.order);
    const std::size_t tensorCount = header.keyOrder.size() - (header.json.contains("__metadata__") ? 1 : 0);
    if (tensorCount > kMaxTensorsPerFile)
        throw Error(path + " lists " + std::to_string(tensorCount) + " tensors in its header, more than the limit of " +
                    std::to_string(kMaxTensorsPerFile) + ".");
    return header;
}

std::map<std::string, std::string> readMetadata(const std::string& path, const nlohmann::json& entry)
{
    if (!entry.is_object())
        throw Error(path + " has a __metadata__ entry that is not a JSON object.");
    std::map<std::string, std::string> metadata;
    for (auto item = entry.begin(); item != entry.end(); ++item) {
        if (!item.value().is_string())
            throw Error(path + " has __metadata__ value '" + item.key() + "' that is not a string.");
        metadata[item.key()] = item.value().get<std::string>();
    }
    return metadata;
}

std::vector<int64_t> readShape(const std::string& where, const nlohmann::json& shape)
{
    if (!shape.is_array())
        throw Error(where + " has a shape that is not a list of integers.");
    std::vector<int64_t> dims;
    for (const nlohmann::json& dim : shape) {
        if (dim.is_number_integer() && !dim.is_number_unsigned() && dim.get<int64_t>() < 0)
            throw Error(where + " has negative dimension " + std::to_string(dim.get<int64_t>()) + " in its shape.");
        uint64_t value = 0;
        if (!readUnsigned(dim, &value))
            throw Error(where + " has a shape that is not a list of integers.");
        if (value > static_cast<uint64_t>(INT64_MAX))
            throw Error(where + " has a dimension too large to address.");
        dims.push_back(static_cast<int64_t>(value));
    }
    return dims;
}

struct DataSection {
    const uint8_t* data;
    uint64_t size;
};

// Where a tensor's bytes lie in the data section, for the overlap check.
struct Extent {
    uint64_t begin;
    uint64_t end;
    std::size_t tensor;
};

// One tensor of the header, checked against the data section; fills extent->begin/end.
TensorView readTensorEntry(const std::string& path, const std::string& name, const nlohmann::json& entry,
                           const DataSection& section, Extent* extent)
{
    const std::string where = tensorIn(name, path);
    if (!entry.is_object())
        throw Error(where + " is not described by a JSON object.");
    for (const char* field : {"dtype", "shape", "data_offsets"})
        if (!entry.contains(field))
            throw Error(where + " has no '" + field + "' field.");

    TensorView view;
    view.name = name;
    view.file = path;
    const nlohmann::json& dtype = entry["dtype"];
    if (!dtype.is_string())
        throw Error(where + " has a dtype that is not a string.");
    if (!parseDtype(dtype.get<std::string>(), &view.dtype))
        throw Error(where + " has unknown dtype '" + dtype.get<std::string>() + "'.");
    view.shape = readShape(where, entry["shape"]);
    uint64_t expectedBytes = 0;
    if (!tensorByteSize(view.shape, view.dtype, &expectedBytes))
        throw Error(where + " has shape " + shapeText(view.shape) + ", whose size overflows.");

    const nlohmann::json& offsets = entry["data_offsets"];
    uint64_t begin = 0;
    uint64_t end = 0;
    if (!offsets.is_array() || offsets.size() != 2 || !readUnsigned(offsets[0], &begin) ||
        !readUnsigned(offsets[1], &end))
        throw Error(where + " has data_offsets that are not a pair [begin, end] of non-negative integers.");
    const std::string range = "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
    if (begin > end)
        throw Error(where + " has data_offsets " + range + " that end before they begin.");
    if (end > section.size)
        throw Error(where + " has data_offsets " + range + " past the end of the data section (" +
                    std::to_string(section.size) + " bytes); the file may be truncated.");
    if (end - begin != expectedBytes)
        throw Error(where + " has " + std::to_string(end - begin) + " bytes of data, but its shape " +
                    shapeText(view.shape) + " of " + dtypeName(view.dtype) + " needs " + std::to_string(expectedBytes) +
                    ".");
    view.data = section.data + begin;
    view.byteSize = static_cast<std::size_t>(end - begin);
    extent->begin = begin;
    extent->end = end;
    return view;
}

void checkNoOverlap(const std::string& path, std::vector<Extent> extents, const std::vector<TensorView>& tensors)
{
    // Zero-size tensors occupy no bytes and may sit anywhere.
    std::sort(extents.begin(), extents.end(),
              [](const Extent& a, const Extent& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    const Extent* previous = nullptr;
    for (const Extent& extent : extents) {
        if (extent.begin == extent.end)
            continue;
        if (previous && extent.begin < previous->end)
            throw Error(path + " has overlapping tensors '" + tensors[previous->tensor].name + "' and '" +
                        tensors[extent.tensor].name + "'.");
        previous = &extent;
    }
}

} // namespace

std::string shapeText(const std::vector<int64_t>& shape)
{
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i)
            text += ", ";
        text += std::to_string(shape[i]);
    }
    return text + "]";
}

bool isFloatDtype(Dtype dtype)
{
    return dtype == Dtype::F32 || dtype == Dtype::F16 || dtype == Dtype::BF16 || dtype == Dtype::F64;
}

const char* dtypeName(Dtype dtype)
{
    return dtypeInfo(dtype).name;
}

bool parseDtype(const std::string& name, Dtype* out)
{
    for (const DtypeInfo& info : kDtypes) {
        if (name == info.name) {
            *out = info.dtype;
            return true;
        }
    }
    return false;
}

std::size_t dtypeSize(Dtype dtype)
{
    return dtypeInfo(dtype).size;
}

// ---------------------------------------------------------------------------------------------
// TensorView

int64_t TensorView::numel() const
{
    int64_t count = 1;
    for (int64_t dim : shape)
        count *= dim; // validated against overflow when the file was opened
    return count;
}

FloatTensor TensorView::toFloat() const
{
    FloatTensor tensor;
    tensor.shape = shape;
    tensor.values.resize(static_cast<std::size_t>(numel()));
    toFloat(tensor.values.data());
    return tensor;
}

void TensorView::toFloat(float* out) const
{
    const std::size_t count = static_cast<std::size_t>(numel());
    switch (dtype) {
    case Dtype::Bool:
        for (std::size_t i = 0; i < count; ++i)
            out[i] = data[i] != 0 ? 1.0f : 0.0f;
        break;
    case Dtype::U8: convertElements<uint8_t>(data, count, out); break;
    case Dtype::I8: convertElements<int8_t>(data, count, out); break;
    case Dtype::I16: convertElements<int16_t>(data, count, out); break;
    case Dtype::I32: convertElements<int32_t>(data, count, out); break;
    case Dtype::I64: convertElements<int64_t>(data, count, out); break;
    case Dtype::F32:
        if (count)
            std::memcpy(out, data, count * sizeof(float));
        break;
    case Dtype::F64: convertElements<double>(data, count, out); break;
    case Dtype::F16: convertBits<uint16_t>(data, count, out, half::f16ToFloat); break;
    case Dtype::BF16: convertBits<uint16_t>(data, count, out, half::bf16ToFloat); break;
    case Dtype::F8_E4M3: fp8::dequantizeE4M3(data, count, 1.0f, out); break;
    case Dtype::F8_E5M2: convertBits<uint8_t>(data, count, out, fp8::decodeE5M2); break;
    }
}

// ---------------------------------------------------------------------------------------------
// SafetensorsFile

SafetensorsFile::~SafetensorsFile()
{
    unguardMapping(guardSlot_);
    if (mapping_)
        ::munmap(mapping_, mappedSize_);
    if (fd_ >= 0)
        ::close(fd_);
}

void releaseResidentPages(const TensorView& view)
{
    const std::uintptr_t pageSize = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(view.data);
    const std::uintptr_t first = (begin + pageSize - 1) & ~(pageSize - 1), last = (begin + view.byteSize) & ~(pageSize - 1);
    if (view.data && last > first)
        ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED); // advice: a failure only keeps them
}

void SafetensorsFile::checkUnchanged() const
{
    bool changed = guardSlot_ >= 0 && guardedMappings[guardSlot_].faulted.load(std::memory_order_acquire);
    struct stat info {};
    if (!changed && fd_ >= 0 && ::fstat(fd_, &info) == 0)
        changed = static_cast<long long>(info.st_size) != sizeAtOpen_ ||
                  static_cast<long long>(info.st_mtim.tv_sec) != mtimeSecondsAtOpen_ ||
                  info.st_mtim.tv_nsec != mtimeNanosecondsAtOpen_;
    if (changed)
        throw Error(path_ + " changed on disk after it was opened (it was rewritten in place); "
                            "reopen the checkpoint to use the new file.");
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path)
{
    std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
    file->path_ = path;
    struct stat info {};
    file->fd_ = openRegularFile(path, &info);
    const uint64_t fileSize = static_cast<uint64_t>(info.st_size);
    void* mapping = ::mmap(nullptr, static_cast<std::size_t>(fileSize), PROT_READ, MAP_PRIVATE, file->fd_, 0);
    if (mapping == MAP_FAILED)
        throw Error("Cannot map " + path + " into memory: " + std::strerror(errno) + ".");
    file->sizeAtOpen_ = static_cast<long long>(info.st_size);
    file->mtimeSecondsAtOpen_ = static_cast<long long>(info.st_mtim.tv_sec);
    file->mtimeNanosecondsAtOpen_ = info.st_mtim.tv_nsec;
    file->mapping_ = mapping;
    file->mappedSize_ = static_cast<std::size_t>(fileSize);
    file->guardSlot_ = guardMapping(mapping, file->mappedSize_);

    const uint8_t* bytes = static_cast<const uint8_t*>(mapping);
    const ParsedHeader header = parseHeader(path, bytes, fileSize);
    const uint64_t dataStart = 8 + header.length;
    const DataSection section{bytes + dataStart, fileSize - dataStart};
    std::vector<Extent> extents;
    for (const std::string& name : header.keyOrder) {
        const nlohmann::json& entry = header.json.at(name);
        if (name == "__metadata__") {
            file->metadata_ = readMetadata(path, entry);
            continue;
        }
        Extent extent{0, 0, file->tensors_.size()};
        file->tensors_.push_back(readTensorEntry(path, name, entry, section, &extent));
        extents.push_back(extent);
    }
    checkNoOverlap(path, std::move(extents), file->tensors_);
    for (std::size_t i = 0; i < file->tensors_.size(); ++i)
        file->index_[file->tensors_[i].name] = i;
    return file;
}

const TensorView* SafetensorsFile::find(const std::string& name) const
{
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

// ---------------------------------------------------------------------------------------------
// TensorStore

std::unique_ptr<TensorStore> TensorStore::openFile(const std::string& path)
{
    std::unique_ptr<TensorStore> store(new TensorStore());
    store->location_ = path;
    store->files_.push_back(SafetensorsFile::open(path));
    for (const TensorView& view : store->files_.back()->tensors())
        store->byName_[view.name] = &view;
    return store;
}

std::unique_ptr<TensorStore> TensorStore::openDirectory(const std::string& dir)
{
    if (!directoryExists(dir))
        throw Error("Cannot open checkpoint " + dir + ": it is not a folder.");

    const std::string indexPath = joinPath(dir, "model.safetensors.index.json");
    if (!fileExists(indexPath) && !nonFileKind(indexPath)) {
        const std::string singlePath = joinPath(dir, "model.safetensors");
        if (!fileExists(singlePath) && !nonFileKind(singlePath))
            throw Error("No model.safetensors or model.safetensors.index.json in " + dir + ".");
        std::unique_ptr<TensorStore> store = openFile(singlePath);
        store->location_ = dir;
        return store;
    }

    const nlohmann::json index = readJsonFile(indexPath);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
        throw Error(indexPath + " has no 'weight_map' object.");
    const nlohmann::json& weightMap = index["weight_map"];
    if (weightMap.empty())
        throw Error(indexPath + " maps no tensors.");
    if (weightMap.size() > kMaxTensorsPerFile)
        throw Error(indexPath + " maps " + std::to_string(weightMap.size()) + " tensors, more than the limit of " +
                    std::to_string(kMaxTensorsPerFile) + ".");

    std::unique_ptr<TensorStore> store(new TensorStore());
    store->location_ = dir;
    std::map<std::string, SafetensorsFile*> shards;
    for (auto item = weightMap.begin(); item != weightMap.end(); ++item) {
        const std::string& tensorName = item.key();
        if (!item.value().is_string())
            throw Error(indexPath + " maps tensor '" + tensorName + "' to something that is not a file name.");
        const std::string shardName = item.value().get<std::string>();
        if (!isPlainFileName(shardName))
            throw Error(indexPath + " maps tensor '" + tensorName + "' to '" + shardName +
                        "', which is not a plain file name inside the checkpoint folder.");
        auto shard = shards.find(shardName);
        if (shard == shards.end()) {
            const std::string shardPath = joinPath(dir, shardName);
            if (!fileExists(shardPath) && !nonFileKind(shardPath))
                throw Error(indexPath + " names shard " + shardName + " (for tensor '" + tensorName +
                            "'), which does not exist in " + dir + ".");
            store->files_.push_back(SafetensorsFile::open(shardPath));
            shard = shards.emplace(shardName, store->files_.back().get()).first;
        }
        const TensorView* view = shard->second->find(tensorName);
        if (!view)
            throw Error(indexPath + " places tensor '" + tensorName + "' in shard " + shardName +
                        ", but that shard does not contain it.");
        store->byName_[tensorName] = view;
    }
    return store;
}

const TensorView* TensorStore::find(const std::string& name) const
{
    const auto it = byName_.find(name);
    return it == byName_.end() ? nullptr : it->second;
}

const TensorView& TensorStore::require(const std::string& name) const
{
    const TensorView* view = find(name);
    if (!view)
        throw Error("Tensor '" + name + "' is missing from " + location_ + ".");
    return *view;
}

std::vector<const TensorView*> TensorStore::tensors() const
{
    std::vector<const TensorView*> views;
    views.reserve(byName_.size());
    for (const auto& entry : byName_)
        views.push_back(entry.second);
    return views;
}

void TensorStore::checkUnchanged() const
{
    for (const auto& file : files_)
        file->checkUnchanged();
}

// Counts tensor data (the part of each mapping that is ever touched), headers excluded.
std::size_t TensorStore::mappedBytes() const
{
    std::size_t total = 0;
    for (const auto& file : files_)
        for (const TensorView& view : file->tensors())
            total += view.byteSize;
    return total;
}

// ---------------------------------------------------------------------------------------------
// Writer

TensorToWrite makeF32Tensor(const std::string& name, const FloatTensor& tensor)
{
    uint64_t expectedBytes = 0;
    if (!tensorByteSize(tensor.shape, Dtype::F32, &expectedBytes) ||
        expectedBytes != tensor.values.size() * sizeof(float))
        throw Error("Tensor '" + name + "' has " + std::to_string(tensor.values.size()) +
                    " values, which do not fit its shape " + shapeText(tensor.shape) + ".");
    return makeFloatTensor(name, Dtype::F32, tensor.shape, tensor.values.data());
}

TensorToWrite makeFloatTensor(const std::string& name, Dtype dtype, const std::vector<int64_t>& shape,
                              const float* values)
{
    if (dtype != Dtype::F32 && dtype != Dtype::F16 && dtype != Dtype::BF16)
        throw Error(std::string("Tensor '") + name + "' cannot be stored as " + dtypeName(dtype) +
                    " from float values; use F32, F16 or BF16.");
    uint64_t byteCount = 0;
    if (!tensorByteSize(shape, dtype, &byteCount))
        throw Error("Tensor '" + name + "' has an invalid shape " + shapeText(shape) + ".");
    TensorToWrite tensor;
    tensor.name = name;
    tensor.dtype = dtype;
    tensor.shape = shape;
    tensor.bytes.resize(static_cast<std::size_t>(byteCount));
    const std::size_t count = static_cast<std::size_t>(byteCount / dtypeSize(dtype));
    uint8_t* out = tensor.bytes.data();
    if (dtype == Dtype::F32) {
        if (count)
            std::memcpy(out, values, count * sizeof(float));
    } else {
        for (std::size_t i = 0; i < count; ++i) {
            const uint16_t bits = dtype == Dtype::F16 ? half::floatToF16(values[i]) : half::floatToBf16(values[i]);
            std::memcpy(out + 2 * i, &bits, sizeof bits);
        }
    }
    return tensor;
}

namespace {

// The 8 length bytes and the header of a safetensors file of these tensors; `what` names the file
// in errors.
std::string safetensorsPreamble(const std::string& what, const std::vector<TensorToWrite>& tensors,
                                const std::map<std::string, std::string>& metadata)
{
    // ordered_json keeps the tensors in the caller's order, which readers report as header order.
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) {
        nlohmann::ordered_json meta = nlohmann::ordered_json::object();
        for (const auto& entry : metadata)
            meta[entry.first] = entry.second;
        header["__metadata__"] = std::move(meta);
    }
    std::set<std::string> names;
    uint64_t offset = 0;
    for (const TensorToWrite& tensor : tensors) {
        if (tensor.name == "__metadata__" || tensor.name.empty())
            throw Error("Cannot write " + what + ": '" + tensor.name + "' is not a valid tensor name.");
        if (!names.insert(tensor.name).second)
            throw Error("Cannot write " + what + ": tensor '" + tensor.name + "' appears twice.");
        uint64_t expectedBytes = 0;
        if (!tensorByteSize(tensor.shape, tensor.dtype, &expectedBytes))
            throw Error("Cannot write " + what + ": tensor '" + tensor.name + "' has an invalid shape " +
                        shapeText(tensor.shape) + ".");
        if (expectedBytes != tensor.bytes.size())
            throw Error("Cannot write " + what + ": tensor '" + tensor.name + "' has " +
                        std::to_string(tensor.bytes.size()) + " bytes, but shape " + shapeText(tensor.shape) +
                        " of " + dtypeName(tensor.dtype) + " needs " + std::to_string(expectedBytes) + ".");
        nlohmann::ordered_json entry = nlohmann::ordered_json::object();
        entry["dtype"] = dtypeName(tensor.dtype);
        entry["shape"] = tensor.shape;
        entry["data_offsets"] = {offset, offset + expectedBytes};
        header[tensor.name] = std::move(entry);
        offset += expectedBytes;
    }

    std::string headerText = header.dump();
    // Padding to 8 bytes puts the data section (file offset 8 + header length) at an 8-byte
    // boundary of the page-aligned mapping. Trailing spaces are valid JSON whitespace.
    headerText.append((8 - headerText.size() % 8) % 8, ' ');
    std::string preamble(8, '\0');
    uint64_t headerLength = headerText.size();
    for (char& byte : preamble) {
        byte = static_cast<char>(headerLength & 0xFF);
        headerLength >>= 8;
    }
    return preamble + headerText;
}

} // namespace

std::string safetensorsBytes(const std::vector<TensorToWrite>& tensors, const std::map<std::string, std::string>& metadata)
{
    std::string bytes = safetensorsPreamble("a safetensors blob", tensors, metadata);
    for (const TensorToWrite& tensor : tensors)
        bytes.append(reinterpret_cast<const char*>(tensor.bytes.data()), tensor.bytes.size());
    return bytes;
}

void writeSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                      const std::map<std::string, std::string>& metadata)
{
    const std::string preamble = safetensorsPreamble(path, tensors, metadata);

    writeFileAtomically(path, [&](const std::string& temporaryPath) {
        std::FILE* out = std::fopen(temporaryPath.c_str(), "wb");
        if (!out)
            throw Error("Cannot write " + path + ": " + std::strerror(errno) + ".");
        bool ok = std::fwrite(preamble.data(), 1, preamble.size(), out) == preamble.size();
        for (const TensorToWrite& tensor : tensors) {
            if (!ok)
                break;
            if (!tensor.bytes.empty())
                ok = std::fwrite(tensor.bytes.data(), 1, tensor.bytes.size(), out) == tensor.bytes.size();
        }
        int writeError = ok ? 0 : errno;
        if (std::fclose(out) != 0 && ok) {
            ok = false;
            writeError = errno;
        }
        if (!ok)
            throw Error("Cannot write " + path + ": " + std::strerror(writeError ? writeError : EIO) + ".");
    });
}

} // namespace scalescope
