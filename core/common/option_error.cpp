#include "common/option_error.h"

#include <cctype>

namespace scalescope {
namespace {

std::string fill(const std::string& messageTemplate, const std::string& name)
{
    static const std::string placeholder = "{option}";
    std::string out;
    std::size_t from = 0;
    for (std::size_t at; (at = messageTemplate.find(placeholder, from)) != std::string::npos;
         from = at + placeholder.size())
        out += messageTemplate.substr(from, at - from) + name;
    out += messageTemplate.substr(from);
    if (!out.empty() && std::islower(static_cast<unsigned char>(out[0])))
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
    }
    return "an option";
}

OptionError::OptionError(TaskOption option, const std::string& messageTemplate)
    : Error(fill(messageTemplate, plainOptionName(option))), option_(option), template_(messageTemplate)
{
}

std::string OptionError::messageNaming(const std::string& name) const { return fill(template_, name); }

} // namespace scalescope
