#pragma once
// Plain tensors that cross the core boundary: row-major float32 values with a shape.
#include <cstdint>
#include <string>
#include <vector>

namespace scalescope {

struct FloatTensor {
    std::vector<int64_t> shape;
    std::vector<float> values;

    int64_t numel() const
    {
        int64_t n = 1;
        for (int64_t d : shape)
            n *= d;
        return n;
    }
};

struct NamedTensor {
    std::string name;
    FloatTensor tensor;
};

} // namespace scalescope
