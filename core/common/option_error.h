#pragma once
// An option of a task out of range. The core speaks options, not flags: the message holds the
// placeholder "{option}" where the option is named, and each front end fills in its own name for
// it (the CLI its flag, --max-seq-len; the GUI its field's label). what() uses the plain name.
#include <string>

#include "common/error.h"

namespace scalescope {

enum class TaskOption {
    MaxSeqLen,
    DocStride,
    MaxAnswerLen,
    NBest,
    TopK,
    NullThreshold,
    BatchSize,
    Weights,
    Activations,
    ScaleDtype,
    Calibration,
    BlockSize,
    GroupSize,
};

// "the maximum sequence length": how the option is named in a sentence without a front end.
std::string plainOptionName(TaskOption option);

class OptionError : public Error {
public:
    // `messageTemplate` names the option as "{option}" (at least once).
    OptionError(TaskOption option, const std::string& messageTemplate);

    TaskOption option() const { return option_; }
    // The message with "{option}" replaced by `name`; a sentence that starts with it gets a
    // capital first letter.
    std::string messageNaming(const std::string& name) const;

private:
    TaskOption option_;
    std::string template_;
};

} // namespace scalescope
