#pragma once
// The message of a core error as the CLI shows it: an OptionError names its options by the CLI's
// flags (the tests assert which option was named, written the way a user reads it).
#include <string>

#include "common/option_error.h"

namespace scalescope::testing {

inline std::string cliFlagOf(TaskOption option)
{
    switch (option) {
    case TaskOption::MaxSeqLen: return "--max-seq-len";
    case TaskOption::DocStride: return "--doc-stride";
    case TaskOption::MaxAnswerLen: return "--max-answer-len";
    case TaskOption::TopK: return "--top-k";
    case TaskOption::BatchSize: return "--batch-size";
    case TaskOption::TargetSqnr: return "--target-sqnr";
    case TaskOption::TargetF1Drop: return "--target-f1-drop";
    case TaskOption::Question: return "--question/--context";
    case TaskOption::Squad: return "--squad";
    default: return plainOptionName(option);
    }
}

inline std::string asCliMessage(const Error& error)
{
    const auto* option = dynamic_cast<const OptionError*>(&error);
    return option ? option->messageNaming(cliFlagOf) : error.what();
}

} // namespace scalescope::testing
