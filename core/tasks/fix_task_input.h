#pragma once
// The task input a fix was verified on, read back from its provenance (tasks/fix_provenance.h) as
// a task panel runs it: an embedder's texts, a reranker's query and passages, a classifier's text
// and pair. The window records the panel's whole input under measurement.inputs.task; the CLI's
// keep-float records --text / --pair or a texts file (path, SHA-256, rows), read again here.
// Torch-free.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope {

enum class FixTaskKind { None, Embed, Rerank, Classify };

// "embed", "rerank", "classify"; "" for None.
const char* fixTaskKindName(FixTaskKind kind);

struct FixTaskInput {
    FixTaskKind kind = FixTaskKind::None;
    std::vector<std::string> texts;    // Embed
    std::string prompt;                // Embed: the prompt the texts ran with ("" none)
    std::string query;                 // Rerank
    std::vector<std::string> passages; // Rerank
    int comparedPassage = -1;          // Rerank: the passage the measurement compared (-1: not recorded)
    std::string text, pair;            // Classify
    std::string problem;               // why the recorded input cannot be run again ("" when it can)
};

// The window's record of a task panel's input, for measurement.inputs.task.
nlohmann::json embedTaskJson(const std::vector<std::string>& texts, const std::string& prompt);
nlohmann::json rerankTaskJson(const std::string& query, const std::vector<std::string>& passages, int comparedPassage);
nlohmann::json classifyTaskJson(const std::string& text, const std::string& pair);

// The provenance's inputs as the task panel of `servedBy` runs them (the kind the open checkpoint's
// head serves: a cross-encoder reranks, an embedder embeds). A recorded task keeps its own kind; a
// --text / --pair or a texts file becomes the panel's input: an embedder's texts, a reranker's
// query with its passages (the pair, or the pairs of rows that share one text), a classifier's
// first row. kind None when nothing task-shaped is recorded (a question, a SQuAD file); `problem`
// says why a texts file cannot be read again (gone, changed since, or not one query's passages).
FixTaskInput provenanceTaskInput(const nlohmann::json& provenance, FixTaskKind servedBy);

} // namespace scalescope
