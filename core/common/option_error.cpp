#include "common/option_error.h"

#include <cctype>

namespace scalescope {
namespace {

constexpr TaskOption kOptions[] = {
    TaskOption::MaxSeqLen,   TaskOption::DocStride,  TaskOption::MaxAnswerLen, TaskOption::NBest,
    TaskOption::TopK,        TaskOption::NullThreshold, TaskOption::BatchSize, TaskOption::Weights,
    TaskOption::Activations, TaskOption::ScaleDtype, TaskOption::Calibration,  TaskOption::BlockSize,
    TaskOption::GroupSize,   TaskOption::Overwrite,  TaskOption::Modules,      TaskOption::Reference,
    TaskOption::Granularity, TaskOption::TargetSqnr, TaskOption::TargetF1Drop, TaskOption::Question,
    TaskOption::Squad,       TaskOption::Runs,       TaskOption::Against,
};

bool optionOfKey(const std::string& key, TaskOption& option)
{
    for (TaskOption candidate : kOptions)
        if (optionKey(candidate) == key) {
            option = candidate;
            return true;
        }
    return false;
}

// `messageTemplate` with "{option}" named `primary`, "{Key}" named by `nameOf` and "{(Key)}" as
// " (name)", or left out when `hints` is false. Braces around anything else stay as they are. A
// sentence that starts with a name starts with a capital.
std::string fill(const std::string& messageTemplate, const std::string& primary, const OptionNamer& nameOf,
                 bool hints)
{
    std::string out;
    bool startsWithName = false;
    std::size_t from = 0;
    for (std::size_t open; (open = messageTemplate.find('{', from)) != std::string::npos;) {
        const std::size_t close = messageTemplate.find('}', open);
        if (close == std::string::npos)
            break;
        std::string key = messageTemplate.substr(open + 1, close - open - 1);
        const bool hint = key.size() > 2 && key.front() == '(' && key.back() == ')';
        if (hint)
            key = key.substr(1, key.size() - 2);
        TaskOption named{};
        const bool isPrimary = key == "option" && !hint;
        if (!isPrimary && !optionOfKey(key, named)) {
            out += messageTemplate.substr(from, open + 1 - from);
            from = open + 1;
            continue;
        }
        out += messageTemplate.substr(from, open - from);
        startsWithName = startsWithName || (out.empty() && !hint);
        if (isPrimary)
            out += primary;
        else if (!hint)
            out += nameOf(named);
        else if (hints)
            out += " (" + nameOf(named) + ")";
        from = close + 1;
    }
    out += messageTemplate.substr(from);
    // Only a name gets a capital: a sentence may also start with a path or a command.
    if (startsWithName && !out.empty() && std::islower(static_cast<unsigned char>(out[0])))
        out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
    return out;
}

} // namespace

std::string plainOptionName(TaskOption option)
{
    switch (option) {
    case TaskOption::MaxSeqLen: return "the maximum sequence length";
    case TaskOption::DocStride: return "the document stride";
    case TaskOption::MaxAnswerLen: return "the maximum answer length";
    case TaskOption::NBest: return "the n-best size";
    case TaskOption::TopK: return "the number of answers (top-k)";
    case TaskOption::NullThreshold: return "the null-answer threshold";
    case TaskOption::BatchSize: return "the batch size";
    case TaskOption::Weights: return "the weight strategy";
    case TaskOption::Activations: return "the activation scheme";
    case TaskOption::ScaleDtype: return "the scale dtype";
    case TaskOption::Calibration: return "the calibration texts";
    case TaskOption::BlockSize: return "the weight block size";
    case TaskOption::GroupSize: return "the activation group size";
    case TaskOption::Overwrite: return "overwrite";
    case TaskOption::Modules: return "the list of Linears to keep float";
    case TaskOption::Reference: return "a float reference checkpoint";
    case TaskOption::Granularity: return "the granularity";
    case TaskOption::TargetSqnr: return "the target SQNR";
    case TaskOption::TargetF1Drop: return "the target F1 drop";
    case TaskOption::Question: return "a question and context";
    case TaskOption::Squad: return "a SQuAD file";
    case TaskOption::Runs: return "the two runs of the noise floor";
    case TaskOption::Against: return "the twins to check against";
    }
    return "an option";
}

std::string optionKey(TaskOption option)
{
    switch (option) {
    case TaskOption::MaxSeqLen: return "MaxSeqLen";
    case TaskOption::DocStride: return "DocStride";
    case TaskOption::MaxAnswerLen: return "MaxAnswerLen";
    case TaskOption::NBest: return "NBest";
    case TaskOption::TopK: return "TopK";
    case TaskOption::NullThreshold: return "NullThreshold";
    case TaskOption::BatchSize: return "BatchSize";
    case TaskOption::Weights: return "Weights";
    case TaskOption::Activations: return "Activations";
    case TaskOption::ScaleDtype: return "ScaleDtype";
    case TaskOption::Calibration: return "Calibration";
    case TaskOption::BlockSize: return "BlockSize";
    case TaskOption::GroupSize: return "GroupSize";
    case TaskOption::Overwrite: return "Overwrite";
    case TaskOption::Modules: return "Modules";
    case TaskOption::Reference: return "Reference";
    case TaskOption::Granularity: return "Granularity";
    case TaskOption::TargetSqnr: return "TargetSqnr";
    case TaskOption::TargetF1Drop: return "TargetF1Drop";
    case TaskOption::Question: return "Question";
    case TaskOption::Squad: return "Squad";
    case TaskOption::Runs: return "Runs";
    case TaskOption::Against: return "Against";
    }
    return "Option";
}

OptionError::OptionError(TaskOption option, const std::string& messageTemplate)
    : Error(fill(messageTemplate, plainOptionName(option), plainOptionName, false)), option_(option),
      template_(messageTemplate)
{
}

std::string OptionError::messageNaming(const std::string& name) const
{
    return fill(template_, name, plainOptionName, false);
}

std::string OptionError::messageNaming(const OptionNamer& nameOf) const
{
    return fill(template_, nameOf(option_), nameOf, true);
}

} // namespace scalescope
