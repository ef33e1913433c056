#pragma once
// Readers for the input files of the encoder tasks beyond QA and fill-mask (DESIGN.md, CLI table
// "Tasks beyond QA and fill-mask"): texts (--texts, --passages), STS pairs (evaluate --sts), a BEIR
// folder (evaluate --retrieval) and classification rows (evaluate --classification).
//
// Every file is read whole through readFileToString (its size caps, pipes, folders refused), then
// line by line: lines are counted from 1, a trailing "\r" is dropped, a UTF-8 byte order mark at
// the start is skipped, and lines holding only spaces and tabs are blank and skipped. A JSONL line
// is parsed on its own; its other keys are ignored.
//
// Errors: scalescope::Error, one sentence naming the file and, for a problem inside it, the line
// ("data/sts.tsv line 4: the score \"high\" is not a number."); never another exception, never a
// crash (fuzz/fuzz_task_datasets.cpp). The whole file is checked even when maxSamples keeps only
// its first rows, so a file that reads once reads with any maxSamples.
//
// maxSamples: the first N rows (queries for a BEIR folder) are kept, 0 keeps all; `inFile` counts
// them all.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "analysis/task_metrics.h"

namespace scalescope {

// ---- Texts (--texts) ----------------------------------------------------------------------------

// One text per line, or JSONL {"text": "...", "pair"?: "..."}: the first non-blank line decides. It
// is JSONL when that line is a JSON object; then every non-blank line must be an object with a
// string "text" (an empty text is a text) and may carry a string "pair" (null: none), the second
// text of a pair (a cross-encoder's passage). Otherwise every non-blank line is a text, as it is
// (UTF-8 required), and a line that is a JSON object is refused as a mix of the two formats. The
// one reader of such files: embed, classify, rerank, compare, sensitivity, check and noise-floor.
struct TextsFile {
    enum class Format { Lines, Jsonl };
    std::string path;
    Format format = Format::Lines;
    std::size_t inFile = 0;
    std::vector<std::string> texts;
    std::vector<std::optional<std::string>> pairs; // one per text: its "pair", when the row has one
    std::vector<std::size_t> lines; // the line of each kept text, for messages about it
    bool hasPairs() const;
};
TextsFile readTextsFile(const std::string& path, std::size_t maxSamples = 0);

// ---- STS (evaluate --sts) -----------------------------------------------------------------------

// TSV with a header row naming the columns sentence1, sentence2 and score (any order, other
// columns ignored; fields split at every tab, no quoting, as sentence-transformers reads
// stsbenchmark.tsv with QUOTE_NONE), or JSONL {"sentence1", "sentence2", "score"} (the first
// non-blank line a JSON object). Every row has the header's number of fields. A score is a finite
// number (in TSV: decimal text, read without the locale); the scale is the file's own (0-5 in STS-B).
struct StsPair {
    std::string sentence1, sentence2;
    double score = 0;
    std::size_t line = 0;
};
struct StsDataset {
    enum class Format { Tsv, Jsonl };
    std::string path;
    Format format = Format::Tsv;
    std::size_t inFile = 0;
    std::vector<StsPair> pairs;
};
StsDataset readStsFile(const std::string& path, std::size_t maxSamples = 0);

// ---- BEIR folder (evaluate --retrieval) ---------------------------------------------------------

// folder/corpus.jsonl {"_id", "title"?, "text"}, folder/queries.jsonl {"_id", "text"},
// folder/qrels/test.tsv "query-id<TAB>corpus-id<TAB>score" after a header row. Ids are strings (an
// integer _id is read as its decimal text, as qrels ids are text); an id given twice in corpus or
// queries is refused. A document's text is (title + " " + text) with white space stripped at both
// ends (Python's str.strip(), as BEIR's models do); a null or absent title is "".
// Qrels: the score is an integer grade (Python's int(), as BEIR's loader reads it); a pair given
// twice keeps the later grade (BEIR's dict does). A query id that is not in queries.jsonl is
// refused, naming the line: BEIR's loader fails on it too, and it means the files do not belong
// together. A corpus id that is not in corpus.jsonl is kept: its grade goes to the query's
// QueryQrels::absentDocumentGrades, where the metrics count it as pytrec_eval counts BEIR's (a
// relevant document never retrieved: in the ideal DCG and recall's denominator, so published
// numbers are reproduced); `qrelsForAbsentDocuments` says how many there were.
struct BeirDocument {
    std::string id;
    std::string text;
};
struct BeirQuery {
    std::string id;
    std::string text;
    QueryQrels qrels; // document indices into BeirDataset::corpus
};
struct BeirDataset {
    std::string folder;
    std::vector<BeirDocument> corpus;        // in corpus.jsonl order (the tie order)
    // The judged queries (those the qrels name), in queries.jsonl order; the first maxSamples.
    std::vector<BeirQuery> queries;
    std::size_t queriesInFile = 0;           // queries.jsonl's queries, judged or not
    std::size_t judgedQueries = 0;           // before maxSamples
    std::size_t qrelsForAbsentDocuments = 0; // over the kept queries
};
BeirDataset readBeirFolder(const std::string& folder, std::size_t maxSamples = 0);

// ---- Classification (evaluate --classification) -------------------------------------------------

// JSONL {"text", "pair"?, "label"?}: "pair" a string (or null: no pair); "label" an integer id
// (1.0 counts as 1) or a name of labelNames. labelNames[i] is the checkpoint's id2label name of id
// i (LABEL_i where it has none), one per label; ids must lie below its size. Empty labelNames
// means the labels are not known: names are then refused and any id >= 0 is kept. Either every row
// has a label or none has (then the metrics compare the sides only); a null label is no label.
struct ClassificationExample {
    std::string text;
    std::optional<std::string> pair;
    std::optional<std::size_t> label;
    std::size_t line = 0;
};
struct ClassificationDataset {
    std::string path;
    std::size_t inFile = 0;
    bool hasLabels = false;
    std::vector<ClassificationExample> examples;
};
ClassificationDataset readClassificationFile(const std::string& path, const std::vector<std::string>& labelNames,
                                             std::size_t maxSamples = 0);

// The same readers for text already in memory (the fuzzer's entry points); sourceName stands for
// the file in messages.
TextsFile parseTextsFile(const std::string& text, const std::string& sourceName, std::size_t maxSamples = 0);
StsDataset parseStsFile(const std::string& text, const std::string& sourceName, std::size_t maxSamples = 0);
ClassificationDataset parseClassificationFile(const std::string& text, const std::string& sourceName,
                                              const std::vector<std::string>& labelNames, std::size_t maxSamples = 0);

// Python's str.strip(): the white space Python's str.isspace() knows (ASCII and Unicode), removed
// at both ends of UTF-8 text.
std::string stripPythonWhitespace(const std::string& text);

} // namespace scalescope
