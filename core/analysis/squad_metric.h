#pragma once
// The official SQuAD answer metric: normalisation (lower case, punctuation and the articles a/an/the
// removed, whitespace collapsed), exact match, and token-level F1. For SQuAD 2.0 an empty answer
// means "no answer"; two empty answers match with F1 1, one empty answer scores 0.
#include <string>
#include <vector>

namespace scalescope {

std::string normalizeAnswer(const std::string& text);
double exactMatchScore(const std::string& prediction, const std::string& gold);
double f1Score(const std::string& prediction, const std::string& gold);
// Max over gold answers; an empty gold list counts as the single empty (no-answer) gold.
double maxOverGold(double (*metric)(const std::string&, const std::string&), const std::string& prediction,
                   const std::vector<std::string>& golds);

} // namespace scalescope
