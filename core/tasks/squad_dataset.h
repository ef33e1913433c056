#pragma once
// Reader for SQuAD v1.1 and v2.0 files:
//   {"version", "data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
//     "answers": [{"text", "answer_start"}], "is_impossible"?, "plausible_answers"?}]}]}]}
// flattened into one example per question, in file order.
//
// Errors: scalescope::Error naming the file and where in it the problem is: the byte, line and
// column of a JSON syntax error, or the path of a malformed entry
// ("data[0].paragraphs[3].qas[2]: \"question\" is missing"); memory that runs out while reading is
// one sentence too. Memory: the file's text and the examples, never a DOM of the file (which costs
// about 40 times the text); tests/test_squad_memory.cpp holds the peak to 4 times the file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace scalescope {

struct SquadExample {
    std::string id;
    std::string title;
    std::string question;
    std::string context;
    // The answer texts as the file gives them (duplicates kept; plausible_answers of SQuAD 2.0 are
    // not answers). Empty for a question without an answer.
    std::vector<std::string> golds;
    bool isImpossible = false; // no gold answer: `is_impossible` true, or an empty `answers` in v2
};

struct SquadDataset {
    std::string path;
    std::string version;   // the file's "version" ("v2.0", "1.1"), "" when absent
    bool isV2 = false;     // any question has "is_impossible", or the version says 2.0
    std::size_t articles = 0;
    std::size_t paragraphs = 0;
    std::vector<SquadExample> examples;
};

// Bounds that keep a malformed or hostile file from exhausting memory or time; real SQuAD files
// are far below every one of them.
struct SquadLimits {
    // Read whole, then streamed (no DOM): SQuAD 2.0's training set is 40 MB.
    std::uint64_t maxFileBytes = 64ull << 20;
    int maxNestingDepth = 32;            // SQuAD itself nests 9 levels deep
    std::size_t maxQuestions = 5'000'000;
    std::size_t maxContextBytes = 1'000'000;
    std::size_t maxQuestionBytes = 20'000;
    std::size_t maxAnswersPerQuestion = 1'000;
};

// Reads and validates a SQuAD file. Throws scalescope::Error.
SquadDataset readSquadFile(const std::string& path, const SquadLimits& limits = {});
// The same for JSON text already in memory; `sourceName` stands for the file in messages.
SquadDataset parseSquadJson(const std::string& text, const std::string& sourceName, const SquadLimits& limits = {});

} // namespace scalescope
