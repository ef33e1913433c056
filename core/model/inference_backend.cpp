#include "model/inference_backend.h"

#include <algorithm>

#include "common/error.h"

namespace scalescope {

void EncoderInputs::addSequence(const Encoding& encoding)
{
    const bool typed = std::any_of(encoding.typeIds.begin(), encoding.typeIds.end(), [](int64_t t) { return t != 0; });
    if (typed && tokenTypeIds.empty())
        for (const auto& row : inputIds)
            tokenTypeIds.emplace_back(row.size(), 0);
    inputIds.push_back(encoding.ids);
    if (typed || !tokenTypeIds.empty()) {
        std::vector<int64_t> types = encoding.typeIds;
        types.resize(encoding.ids.size(), 0);
        tokenTypeIds.push_back(std::move(types));
    }
}

const FloatTensor& ForwardResult::output(const std::string& name) const
{
    for (const NamedTensor& output : outputs)
        if (output.name == name)
            return output.tensor;
    throw Error("The forward pass produced no \"" + name + "\".");
}

std::shared_ptr<const FloatTensor> keptCapture(
    std::shared_ptr<const FloatTensor> same, const std::vector<int64_t>& shape, const float* data)
{
    if (same && same->shape == shape)
        return same;
    auto copy = std::make_shared<FloatTensor>();
    copy->shape = shape;
    copy->values.assign(data, data + elementCount(shape));
    return copy;
}

} // namespace scalescope
