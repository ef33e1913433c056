#pragma once
// The message of a core error as the CLI shows it: an OptionError names its option by the CLI's
// flag (the tests assert which option was named, written the way a user reads it).
#include <string>

#include "common/option_error.h"

namespace scalescope::testing {

inline std::string asCliMessage(const Error& error)
{
    const auto* option = dynamic_cast<const OptionError*>(&error);
    if (!option)
        return error.what();
    switch (option->option()) {
    case TaskOption::MaxSeqLen: return option->messageNaming("--max-seq-len");
    case TaskOption::DocStride: return option->messageNaming("--doc-stride");
    case TaskOption::MaxAnswerLen: return option->messageNaming("--max-answer-len");
    case TaskOption::TopK: return option->messageNaming("--top-k");
    case TaskOption::BatchSize: return option->messageNaming("--batch-size");
    default: return error.what();
    }
}

} // namespace scalescope::testing
