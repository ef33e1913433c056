#include "analysis/squad_metric.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

namespace scalescope {
namespace {

std::vector<std::string> splitWhitespace(const std::string& text)
{
    std::vector<std::string> tokens;
    std::istringstream stream(text);
    std::string token;
    while (stream >> token)
        tokens.push_back(token);
    return tokens;
}

} // namespace

std::string normalizeAnswer(const std::string& text)
{
    // Python's string.punctuation is ASCII punctuation; non-ASCII bytes are kept, as the official
    // script keeps non-ASCII characters.
    std::string lowered;
    lowered.reserve(text.size());
    for (unsigned char c : text) {
        if (c < 128 && std::ispunct(c))
            continue;
        lowered.push_back(c < 128 ? static_cast<char>(std::tolower(c)) : static_cast<char>(c));
    }
    std::string out;
    for (const std::string& token : splitWhitespace(lowered)) {
        if (token == "a" || token == "an" || token == "the")
            continue;
        if (!out.empty())
            out.push_back(' ');
        out += token;
    }
    return out;
}

double exactMatchScore(const std::string& prediction, const std::string& gold)
{
    return normalizeAnswer(prediction) == normalizeAnswer(gold) ? 1.0 : 0.0;
}

double f1Score(const std::string& prediction, const std::string& gold)
{
    const std::vector<std::string> predicted = splitWhitespace(normalizeAnswer(prediction));
    const std::vector<std::string> truth = splitWhitespace(normalizeAnswer(gold));
    if (predicted.empty() || truth.empty())
        return predicted.empty() && truth.empty() ? 1.0 : 0.0;
    std::map<std::string, int> counts;
    for (const std::string& t : truth)
        ++counts[t];
    int common = 0;
    for (const std::string& p : predicted) {
        auto it = counts.find(p);
        if (it != counts.end() && it->second > 0) {
            --it->second;
            ++common;
        }
    }
    if (common == 0)
        return 0.0;
    const double precision = double(common) / double(predicted.size());
    const double recall = double(common) / double(truth.size());
    return 2 * precision * recall / (precision + recall);
}

double maxOverGold(double (*metric)(const std::string&, const std::string&), const std::string& prediction,
                   const std::vector<std::string>& golds)
{
    if (golds.empty())
        return metric(prediction, "");
    double best = 0;
    for (const std::string& gold : golds)
        best = std::max(best, metric(prediction, gold));
    return best;
}

} // namespace scalescope
