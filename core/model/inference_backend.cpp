#include "model/inference_backend.h"

#include "common/error.h"

namespace scalescope {

const FloatTensor& ForwardResult::output(const std::string& name) const
{
    for (const NamedTensor& output : outputs)
        if (output.name == name)
            return output.tensor;
    throw Error("The forward pass produced no \"" + name + "\".");
}

} // namespace scalescope
