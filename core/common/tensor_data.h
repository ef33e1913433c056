#pragma once
// Plain tensors that cross the core boundary: row-major float32 values with a shape.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace scalescope {

// How many values a tensor of this shape holds.
inline std::size_t elementCount(const std::vector<int64_t>& shape)
{
    std::size_t count = 1;
    for (int64_t extent : shape)
        count *= static_cast<std::size_t>(extent);
    return count;
}

struct FloatTensor {
    std::vector<int64_t> shape;
    std::vector<float> values;

    int64_t numel() const { return static_cast<int64_t>(elementCount(shape)); }
};

struct NamedTensor {
    std::string name;
    FloatTensor tensor;
};

} // namespace scalescope
