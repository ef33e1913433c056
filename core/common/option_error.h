#pragma once
// An option of a task out of range, or missing, or at odds with the input. The core speaks options,
// not flags: the message holds the placeholder "{option}" where the option is named, and each front
// end fills in its own name for it (the CLI its flag, --max-seq-len; the GUI its field's label).
// A message may name other options too, by their key ("{TargetSqnr}", see optionKey), and hint at
// one in parentheses ("a SQuAD file{(Squad)}"): a front end's names fill both, " (--squad)" for the
// hint; what() uses the plain names and leaves the hints out, where they would repeat the sentence.
#include <functional>
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
    Overwrite,    // replace an existing destination
    Modules,      // the Linears keep-float keeps float
    Reference,    // the float reference checkpoint
    Granularity,  // sensitivity: per Linear or per layer
    TargetSqnr,
    TargetF1Drop,
    Question,     // a question with its context (question-answering input)
    Squad,        // a SQuAD file (question-answering input)
    Runs,         // noise floor: the two runs that should agree up to rounding
    Against,      // device check: the twins the run is held against
};

// "the maximum sequence length": how the option is named in a sentence without a front end.
std::string plainOptionName(TaskOption option);
// "TargetSqnr": how a message template names the option when it is not the one thrown for.
std::string optionKey(TaskOption option);

using OptionNamer = std::function<std::string(TaskOption)>;

class OptionError : public Error {
public:
    // `messageTemplate` names the option as "{option}" (at least once).
    OptionError(TaskOption option, const std::string& messageTemplate);

    TaskOption option() const { return option_; }
    // The message with "{option}" replaced by `name` (other options by their plain names, no
    // hints); a sentence that starts with it gets a capital first letter.
    std::string messageNaming(const std::string& name) const;
    // The message with every option, hints included, named as `nameOf` names them.
    std::string messageNaming(const OptionNamer& nameOf) const;

private:
    TaskOption option_;
    std::string template_;
};

} // namespace scalescope
