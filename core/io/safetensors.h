#pragma once
// Reading and writing safetensors files (https://github.com/huggingface/safetensors format:
// 8-byte little-endian header length, JSON header, raw little-endian data).
//
// SafetensorsFile memory-maps one file read-only and validates the whole header on open: every
// tensor's dtype, shape, and [begin, end) offsets inside the data section, byte size matching
// shape x dtype, no overlaps. Tensor data is then served as views into the mapping (no copies).
// TensorStore opens either a single `model.safetensors` or every shard listed by
// `model.safetensors.index.json` and finds tensors by name across shards.
// Errors: scalescope::Error naming the file (and tensor) and the problem.
// Threading: immutable after open; concurrent reads are safe.
// A mapped file rewritten in place while open (truncated, or overwritten by cp) would raise SIGBUS
// on the next read of a page past its new end. A process-wide SIGBUS handler maps zero pages over
// such a range instead, so nothing crashes; checkUnchanged() then reports the change (as it does
// for a same-size rewrite, seen in the file's size and modification time), and every result
// computed from the mapping since the last check must be discarded.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/tensor_data.h"

namespace scalescope {

enum class Dtype { Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64, F8_E4M3, F8_E5M2 };

const char* dtypeName(Dtype dtype);               // "F8_E4M3", "BF16", ...
// F32, F16, BF16 or F64: the dtypes that convert to float (scales, float weights, outputs).
bool isFloatDtype(Dtype dtype);
bool parseDtype(const std::string& name, Dtype* out); // false when unknown
std::size_t dtypeSize(Dtype dtype);
// "[768, 768]": how messages write a shape.
std::string shapeText(const std::vector<int64_t>& shape);

struct TensorView {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<int64_t> shape;
    const uint8_t* data = nullptr; // points into the mapping
    std::size_t byteSize = 0;
    std::string file;              // the file it lives in, for messages

    int64_t numel() const;
    // Converts any numeric dtype to float32 (FP8 codes are decoded, without a scale).
    FloatTensor toFloat() const;
    void toFloat(float* out) const; // out has numel() elements
};

// Drops the whole pages inside a tensor's bytes from this process's resident memory; they stay in
// the page cache and are read back on the next access. For tensors the engine has converted and
// reads again only on rarer paths (the FP8 codes once the bf16 weights are built). The mapping is
// read-only and private, so nothing is lost.
void releaseResidentPages(const TensorView& view);

class SafetensorsFile {
public:
    static std::unique_ptr<SafetensorsFile> open(const std::string& path);
    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const { return path_; }
    const std::vector<TensorView>& tensors() const { return tensors_; } // in header order
    const TensorView* find(const std::string& name) const;             // null when absent
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    // Throws scalescope::Error "<path> changed on disk after it was opened ..." when the file was
    // rewritten in place since open (its data may no longer be what was validated).
    void checkUnchanged() const;

private:
    SafetensorsFile() = default;
    std::string path_;
    int fd_ = -1;          // kept open to see in-place changes of the mapped file, not of its path
    int guardSlot_ = -1;   // the SIGBUS guard's record of this mapping, -1 when unguarded
    long long sizeAtOpen_ = 0;
    long long mtimeSecondsAtOpen_ = 0;
    long mtimeNanosecondsAtOpen_ = 0;
    void* mapping_ = nullptr;
    std::size_t mappedSize_ = 0;
    std::vector<TensorView> tensors_;
    std::map<std::string, std::size_t> index_;
    std::map<std::string, std::string> metadata_;
};

class TensorStore {
public:
    // dir holds model.safetensors or model.safetensors.index.json (+ shards).
    static std::unique_ptr<TensorStore> openDirectory(const std::string& dir);
    // One .safetensors file.
    static std::unique_ptr<TensorStore> openFile(const std::string& path);

    const TensorView* find(const std::string& name) const; // null when absent
    // Throws scalescope::Error "Tensor 'x' is missing from <dir>." when absent.
    const TensorView& require(const std::string& name) const;
    std::vector<const TensorView*> tensors() const; // sorted by name
    const std::string& location() const { return location_; }
    std::size_t mappedBytes() const;
    // SafetensorsFile::checkUnchanged for every file of the store. Call it before using tensor data
    // and after computing from it: a result computed while a file changed is not to be trusted.
    void checkUnchanged() const;

private:
    std::string location_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, const TensorView*> byName_;
};

struct TensorToWrite {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes; // little-endian raw data, size = numel x dtypeSize
};

// Build helpers for the writer.
TensorToWrite makeF32Tensor(const std::string& name, const FloatTensor& tensor);
// Narrows float32 values to F32, F16 or BF16 (round to nearest even).
TensorToWrite makeFloatTensor(const std::string& name, Dtype dtype, const std::vector<int64_t>& shape,
                              const float* values);

// Writes the tensors (in the given order) to `path` through a temporary file in the same folder
// that is renamed into place when complete, so a failure never leaves a partial file.
void writeSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// The same file's bytes, in memory (a runner's in-band answer).
std::string safetensorsBytes(const std::vector<TensorToWrite>& tensors,
                             const std::map<std::string, std::string>& metadata = {});

} // namespace scalescope
