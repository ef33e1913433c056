#include "tasks/task_datasets.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "text/utf8.h"

namespace scalescope {
namespace {

using json = nlohmann::json;

// A non-blank line of a file: its number from 1 and its text without the line break.
struct Line {
    std::size_t number = 0;
    std::string_view text;
};

bool isBlank(std::string_view text)
{
    return text.find_first_not_of(" \t") == std::string_view::npos;
}

// The file's non-blank lines; views into `text`, which must outlive them.
std::vector<Line> nonBlankLines(const std::string& text)
{
    std::string_view rest(text);
    // Editors on Windows write a byte order mark; it is not part of the first line's text.
    if (rest.substr(0, 3) == "\xEF\xBB\xBF")
        rest.remove_prefix(3);
    std::vector<Line> lines;
    std::size_t number = 0;
    while (!rest.empty()) {
        const std::size_t end = rest.find('\n');
        std::string_view line = rest.substr(0, end);
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
        ++number;
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        if (!isBlank(line))
            lines.push_back({number, line});
    }
    return lines;
}

// "<source> line <n>: <problem>."
[[noreturn]] void failAt(const std::string& source, std::size_t line, const std::string& problem)
{
    throw Error(source + " line " + std::to_string(line) + ": " + problem + ".");
}

// A bounded, printable quote of a value from the file, for messages.
std::string quotedValue(std::string_view value)
{
    return "\"" + terminalSafe(abbreviatedText(std::string(value), 60)) + "\"";
}

// The line as JSON, or why it is not: "" when it parsed.
std::string parseJsonLine(std::string_view text, json& value)
{
    if (const long long at = jsonNestingExceeded(text.data(), text.data() + text.size()); at >= 0)
        return "nests arrays and objects more than " + std::to_string(kMaxJsonDepth) + " levels deep";
    try {
        value = json::parse(text.begin(), text.end());
        return {};
    } catch (const json::parse_error& e) {
        return "is not valid JSON (at column " + std::to_string(e.byte) + ")";
    } catch (const json::exception&) {
        // A number beyond double's range ("1e400") comes as out_of_range.
        return "is not valid JSON: it holds a number too large to represent";
    }
}

bool isJsonObjectLine(std::string_view text)
{
    json value;
    return parseJsonLine(text, value).empty() && value.is_object();
}

// A JSONL row: a JSON object, else an error naming the line.
json requireObjectLine(const std::string& source, const Line& line)
{
    json value;
    if (const std::string problem = parseJsonLine(line.text, value); !problem.empty())
        failAt(source, line.number, problem);
    if (!value.is_object())
        failAt(source, line.number, std::string("is a JSON ") + value.type_name() + ", not an object");
    return value;
}

// row[key] as a string; absent, null (when allowNull) -> nullopt; another type is an error.
std::optional<std::string> optionalString(const json& row, const char* key, const std::string& source,
                                          std::size_t line, bool allowNull = true)
{
    const auto found = row.find(key);
    if (found == row.end() || (allowNull && found->is_null()))
        return std::nullopt;
    if (!found->is_string())
        failAt(source, line, std::string("\"") + key + "\" must be a string, found " + found->type_name());
    return found->get<std::string>();
}

std::string requireString(const json& row, const char* key, const std::string& source, std::size_t line)
{
    std::optional<std::string> value = optionalString(row, key, source, line, false);
    if (!value)
        failAt(source, line, std::string("\"") + key + "\" is missing");
    return std::move(*value);
}

std::string_view trimmed(std::string_view text)
{
    const std::size_t begin = text.find_first_not_of(" \t\r\n\f\v");
    if (begin == std::string_view::npos)
        return {};
    const std::size_t end = text.find_last_not_of(" \t\r\n\f\v");
    return text.substr(begin, end - begin + 1);
}

// Decimal text as Python's float() reads it (white space around, a leading '+'), but finite only
// and read without the locale (a Qt program runs under the user's, where "4,5" may be a number).
std::optional<double> parseFiniteNumber(std::string_view text)
{
    text = trimmed(text);
    if (text.size() > 1 && text[0] == '+' && text[1] != '-')
        text.remove_prefix(1);
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
        return std::nullopt;
    return value;
}

// Decimal integer text as Python's int() reads it (white space around, a leading '+').
std::optional<long long> parseInteger(std::string_view text)
{
    text = trimmed(text);
    if (text.size() > 1 && text[0] == '+' && text[1] != '-')
        text.remove_prefix(1);
    long long value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

std::vector<std::string_view> splitTabs(std::string_view line)
{
    std::vector<std::string_view> fields;
    while (true) {
        const std::size_t tab = line.find('\t');
        fields.push_back(line.substr(0, tab));
        if (tab == std::string_view::npos)
            return fields;
        line.remove_prefix(tab + 1);
    }
}

void requireUtf8(std::string_view text, const std::string& source, std::size_t line)
{
    if (!isValidUtf8(std::string(text)))
        failAt(source, line, "is not UTF-8 text");
}

template <typename Read>
auto readWhole(const std::string& path, Read read)
{
    return readingUserFile(path, [&] { return read(readFileToString(path)); });
}

bool isPythonSpace(char32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

} // namespace

std::string stripPythonWhitespace(const std::string& text)
{
    const std::vector<CodePoint> points = decodeCodePoints(text);
    std::size_t first = 0, last = points.size();
    // A byte that is not UTF-8 decodes as U+FFFD, which is not white space: it stays.
    while (first < last && isPythonSpace(points[first].value))
        ++first;
    while (last > first && isPythonSpace(points[last - 1].value))
        --last;
    if (first == last)
        return {};
    return text.substr(points[first].byteBegin, points[last - 1].byteEnd - points[first].byteBegin);
}

// ---- Texts ---------------------------------------------------------------------------------------

namespace {

// In a JSONL texts file: a line that opens an object is a row (its JSON errors are its own);
// anything else is a plain text among JSON rows.
struct TextRow {
    std::string text;
    std::optional<std::string> pair;
};

TextRow textOfJsonLine(const std::string& source, const Line& line, std::size_t firstLine)
{
    if (trimmed(line.text).substr(0, 1) != "{")
        failAt(source, line.number,
               "is not a JSON object, but line " + std::to_string(firstLine) +
                   " made this a JSONL file; a texts file holds one text per line or one {\"text\": ...} "
                   "object per line, not both");
    const json row = requireObjectLine(source, line);
    return {requireString(row, "text", source, line.number), optionalString(row, "pair", source, line.number)};
}

TextRow textOfPlainLine(const std::string& source, const Line& line, std::size_t firstLine)
{
    requireUtf8(line.text, source, line.number);
    if (line.text.find('{') != std::string_view::npos && isJsonObjectLine(line.text))
        failAt(source, line.number,
               "is a JSON object, but line " + std::to_string(firstLine) +
                   " is plain text; a texts file holds one text per line or one {\"text\": ...} object per "
                   "line, not both");
    return {std::string(line.text), std::nullopt};
}

} // namespace

TextsFile parseTextsFile(const std::string& text, const std::string& sourceName, std::size_t maxSamples)
{
    TextsFile file;
    file.path = sourceName;
    const std::vector<Line> lines = nonBlankLines(text);
    if (lines.empty())
        throw Error(sourceName + " holds no text (one text per line, or JSONL {\"text\": ...}, is expected).");
    const std::size_t firstLine = lines.front().number;
    file.format = isJsonObjectLine(lines.front().text) ? TextsFile::Format::Jsonl : TextsFile::Format::Lines;
    for (const Line& line : lines) {
        TextRow row = file.format == TextsFile::Format::Jsonl ? textOfJsonLine(sourceName, line, firstLine)
                                                              : textOfPlainLine(sourceName, line, firstLine);
        ++file.inFile;
        if (maxSamples == 0 || file.texts.size() < maxSamples) {
            file.texts.push_back(std::move(row.text));
            file.pairs.push_back(std::move(row.pair));
            file.lines.push_back(line.number);
        }
    }
    return file;
}

bool TextsFile::hasPairs() const
{
    return std::any_of(pairs.begin(), pairs.end(), [](const std::optional<std::string>& p) { return p.has_value(); });
}

TextsFile readTextsFile(const std::string& path, std::size_t maxSamples)
{
    return readWhole(path, [&](const std::string& text) { return parseTextsFile(text, path, maxSamples); });
}

// ---- STS -----------------------------------------------------------------------------------------

namespace {

constexpr const char* kStsColumns[] = {"sentence1", "sentence2", "score"};

StsPair stsPairOfJson(const std::string& source, const Line& line)
{
    const json row = requireObjectLine(source, line);
    StsPair pair;
    pair.line = line.number;
    pair.sentence1 = requireString(row, "sentence1", source, line.number);
    pair.sentence2 = requireString(row, "sentence2", source, line.number);
    const auto score = row.find("score");
    if (score == row.end())
        failAt(source, line.number, "\"score\" is missing");
    if (!score->is_number())
        failAt(source, line.number, std::string("\"score\" must be a number, found ") + score->type_name());
    pair.score = score->get<double>();
    return pair;
}

// The header's columns for sentence1, sentence2 and score, by name.
std::vector<std::size_t> stsColumns(const std::string& source, const Line& header)
{
    const std::vector<std::string_view> names = splitTabs(header.text);
    std::vector<std::size_t> columns;
    for (const char* wanted : kStsColumns) {
        std::size_t found = 0;
        while (found < names.size() && trimmed(names[found]) != wanted)
            ++found;
        if (found == names.size())
            failAt(source, header.number,
                   std::string("(the header row) has no \"") + wanted +
                       "\" column; an STS TSV file names the columns sentence1, sentence2 and score in its "
                       "first line");
        columns.push_back(found);
    }
    return columns;
}

StsPair stsPairOfTsv(const std::string& source, const Line& line, const std::vector<std::size_t>& columns,
                     std::size_t headerFields)
{
    requireUtf8(line.text, source, line.number);
    const std::vector<std::string_view> fields = splitTabs(line.text);
    if (fields.size() != headerFields)
        failAt(source, line.number,
               "has " + std::to_string(fields.size()) + " tab-separated fields where the header row has " +
                   std::to_string(headerFields));
    StsPair pair;
    pair.line = line.number;
    pair.sentence1 = std::string(fields[columns[0]]);
    pair.sentence2 = std::string(fields[columns[1]]);
    const std::optional<double> score = parseFiniteNumber(fields[columns[2]]);
    if (!score)
        failAt(source, line.number, "the score " + quotedValue(fields[columns[2]]) + " is not a number");
    pair.score = *score;
    return pair;
}

} // namespace

StsDataset parseStsFile(const std::string& text, const std::string& sourceName, std::size_t maxSamples)
{
    StsDataset dataset;
    dataset.path = sourceName;
    const std::vector<Line> lines = nonBlankLines(text);
    if (lines.empty())
        throw Error(sourceName + " holds no sentence pairs (TSV with a header row, or JSONL, is expected).");
    dataset.format = isJsonObjectLine(lines.front().text) ? StsDataset::Format::Jsonl : StsDataset::Format::Tsv;
    std::vector<std::size_t> columns;
    std::size_t headerFields = 0;
    if (dataset.format == StsDataset::Format::Tsv) {
        requireUtf8(lines.front().text, sourceName, lines.front().number);
        columns = stsColumns(sourceName, lines.front());
        headerFields = splitTabs(lines.front().text).size();
    }
    const std::size_t first = dataset.format == StsDataset::Format::Tsv ? 1 : 0;
    for (std::size_t i = first; i < lines.size(); ++i) {
        StsPair pair = dataset.format == StsDataset::Format::Jsonl
                           ? stsPairOfJson(sourceName, lines[i])
                           : stsPairOfTsv(sourceName, lines[i], columns, headerFields);
        ++dataset.inFile;
        if (maxSamples == 0 || dataset.pairs.size() < maxSamples)
            dataset.pairs.push_back(std::move(pair));
    }
    if (dataset.pairs.empty())
        throw Error(sourceName + " holds no sentence pairs after its header row.");
    return dataset;
}

StsDataset readStsFile(const std::string& path, std::size_t maxSamples)
{
    return readWhole(path, [&](const std::string& text) { return parseStsFile(text, path, maxSamples); });
}

// ---- BEIR ----------------------------------------------------------------------------------------

namespace {

constexpr const char* kBeirLayout = "a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/test.tsv";

// An "_id": a string, or an integer read as its decimal text.
std::string beirId(const json& row, const std::string& source, std::size_t line)
{
    const auto found = row.find("_id");
    if (found == row.end())
        failAt(source, line, "\"_id\" is missing");
    if (found->is_string())
        return found->get<std::string>();
    if (found->is_number_integer())
        return found->dump();
    failAt(source, line, std::string("\"_id\" must be a string, found ") + found->type_name());
}

// Rows of corpus.jsonl or queries.jsonl: id, text and the line, with ids unique.
struct IdRows {
    std::vector<BeirDocument> rows;
    std::unordered_map<std::string, std::size_t> index;
};

IdRows readIdRows(const std::string& path, bool withTitle)
{
    return readWhole(path, [&](const std::string& text) {
        IdRows out;
        std::vector<std::size_t> lineOf;
        for (const Line& line : nonBlankLines(text)) {
            const json row = requireObjectLine(path, line);
            BeirDocument entry{beirId(row, path, line.number), requireString(row, "text", path, line.number)};
            if (withTitle) {
                const std::string title = optionalString(row, "title", path, line.number).value_or("");
                entry.text = stripPythonWhitespace(title + " " + entry.text);
            }
            const auto [at, added] = out.index.emplace(entry.id, out.rows.size());
            if (!added)
                failAt(path, line.number,
                       "the _id " + quotedValue(entry.id) + " was already given on line " + std::to_string(lineOf[at->second]));
            out.rows.push_back(std::move(entry));
            lineOf.push_back(line.number);
        }
        if (out.rows.empty())
            throw Error(path + " holds no entries (one JSON object per line is expected).");
        return out;
    });
}

// Per query index: known documents' grades and the grades of documents not in the corpus, by id
// (a later line for the same pair replaces the earlier one, as in BEIR's dict).
struct QrelsByQuery {
    std::map<std::size_t, std::map<std::size_t, int>> known;
    std::map<std::size_t, std::map<std::string, int>> absent;
};

void checkQrelsHeader(const std::string& path, const Line& header)
{
    const std::vector<std::string_view> fields = splitTabs(header.text);
    if (fields.size() == 3 && parseInteger(fields[2]))
        failAt(path, header.number,
               "holds a judgement where the header row (query-id, corpus-id, score) belongs; BEIR's qrels "
               "files start with one");
}

void readQrelsLine(const std::string& path, const Line& line, const IdRows& queries, const IdRows& corpus,
                   QrelsByQuery& qrels)
{
    const std::vector<std::string_view> fields = splitTabs(line.text);
    if (fields.size() != 3)
        failAt(path, line.number,
               "has " + std::to_string(fields.size()) +
                   " tab-separated fields; a qrels line is query-id, corpus-id and score");
    const std::optional<long long> grade = parseInteger(fields[2]);
    if (!grade || *grade < std::numeric_limits<int>::min() || *grade > std::numeric_limits<int>::max())
        failAt(path, line.number, "the score " + quotedValue(fields[2]) + " is not an integer grade");
    const auto query = queries.index.find(std::string(fields[0]));
    if (query == queries.index.end())
        failAt(path, line.number, "the query-id " + quotedValue(fields[0]) + " is not in queries.jsonl");
    const std::string documentId(fields[1]);
    if (const auto document = corpus.index.find(documentId); document != corpus.index.end())
        qrels.known[query->second][document->second] = static_cast<int>(*grade);
    else
        qrels.absent[query->second][documentId] = static_cast<int>(*grade);
}

QrelsByQuery readQrels(const std::string& path, const IdRows& queries, const IdRows& corpus)
{
    return readWhole(path, [&](const std::string& text) {
        const std::vector<Line> lines = nonBlankLines(text);
        QrelsByQuery qrels;
        if (!lines.empty()) {
            requireUtf8(lines.front().text, path, lines.front().number);
            checkQrelsHeader(path, lines.front());
        }
        for (std::size_t i = 1; i < lines.size(); ++i) {
            requireUtf8(lines[i].text, path, lines[i].number);
            readQrelsLine(path, lines[i], queries, corpus, qrels);
        }
        if (qrels.known.empty() && qrels.absent.empty())
            throw Error(path + " holds no judgements after its header row.");
        return qrels;
    });
}

void requireBeirFile(const std::string& folder, const std::string& path)
{
    if (!fileExists(path) && nonFileKind(path) == nullptr)
        throw Error(path + " is missing; " + kBeirLayout + " (" + folder + " does not).");
}

} // namespace

BeirDataset readBeirFolder(const std::string& folder, std::size_t maxSamples)
{
    if (!directoryExists(folder))
        throw Error("Cannot read " + folder + ": it is not a folder; " + kBeirLayout + ".");
    const std::string corpusPath = joinPath(folder, "corpus.jsonl");
    const std::string queriesPath = joinPath(folder, "queries.jsonl");
    const std::string qrelsPath = joinPath(joinPath(folder, "qrels"), "test.tsv");
    for (const std::string& path : {corpusPath, queriesPath, qrelsPath})
        requireBeirFile(folder, path);
    IdRows corpus = readIdRows(corpusPath, true);
    IdRows queries = readIdRows(queriesPath, false);
    const QrelsByQuery qrels = readQrels(qrelsPath, queries, corpus);

    BeirDataset dataset;
    dataset.folder = folder;
    dataset.queriesInFile = queries.rows.size();
    for (std::size_t q = 0; q < queries.rows.size(); ++q) {
        const auto known = qrels.known.find(q);
        const auto absent = qrels.absent.find(q);
        if (known == qrels.known.end() && absent == qrels.absent.end())
            continue; // unjudged: BEIR keeps only the queries of its qrels
        ++dataset.judgedQueries;
        if (maxSamples != 0 && dataset.queries.size() >= maxSamples)
            continue;
        BeirQuery query{queries.rows[q].id, std::move(queries.rows[q].text), {}};
        if (known != qrels.known.end())
            query.qrels.grades = known->second;
        if (absent != qrels.absent.end())
            for (const auto& [id, grade] : absent->second)
                query.qrels.absentDocumentGrades.push_back(grade);
        dataset.qrelsForAbsentDocuments += query.qrels.absentDocumentGrades.size();
        dataset.queries.push_back(std::move(query));
    }
    dataset.corpus = std::move(corpus.rows);
    return dataset;
}

// ---- Classification ------------------------------------------------------------------------------

namespace {

std::string labelList(const std::vector<std::string>& labelNames)
{
    std::vector<std::string> shown;
    for (std::size_t i = 0; i < labelNames.size() && i < 8; ++i)
        shown.push_back(quotedValue(labelNames[i]));
    if (labelNames.size() > 8)
        shown.push_back(std::to_string(labelNames.size() - 8) + " more");
    return joinedWords(shown);
}

std::size_t labelIdOfName(const std::string& name, const std::vector<std::string>& labelNames,
                          const std::string& source, std::size_t line)
{
    for (std::size_t id = 0; id < labelNames.size(); ++id)
        if (labelNames[id] == name)
            return id;
    if (labelNames.empty())
        failAt(source, line,
               "the label " + quotedValue(name) + " is a name, but the model's label names are not known; give the id");
    failAt(source, line,
           "the label " + quotedValue(name) + " is not one of the model's labels (" + labelList(labelNames) +
               "); give one of those names or an id");
}

std::size_t labelIdOf(const json& label, const std::vector<std::string>& labelNames, const std::string& source,
                      std::size_t line)
{
    if (label.is_string())
        return labelIdOfName(label.get<std::string>(), labelNames, source, line);
    const std::string problem =
        "the label " + terminalSafe(abbreviatedText(label.dump(-1, ' ', false, json::error_handler_t::replace), 60)) + " ";
    if (!label.is_number())
        failAt(source, line, problem + "must be an integer id or a label name, found " + label.type_name());
    const double value = label.get<double>();
    // 2^53: past it a double no longer tells neighbouring integers apart.
    if (label.is_number_float() && (!std::isfinite(value) || std::floor(value) != value || std::fabs(value) > 9.0e15))
        failAt(source, line, problem + "is not an integer id");
    if (value < 0)
        failAt(source, line, problem + "is negative; label ids count from 0");
    const std::size_t id = label.is_number_unsigned() ? label.get<std::size_t>() : static_cast<std::size_t>(value);
    if (!labelNames.empty() && id >= labelNames.size())
        failAt(source, line,
               problem + "is past the model's " + std::to_string(labelNames.size()) + " labels (ids 0 to " +
                   std::to_string(labelNames.size() - 1) + ")");
    return id;
}

ClassificationExample classificationRow(const std::string& source, const Line& line,
                                        const std::vector<std::string>& labelNames)
{
    const json row = requireObjectLine(source, line);
    ClassificationExample example;
    example.line = line.number;
    example.text = requireString(row, "text", source, line.number);
    example.pair = optionalString(row, "pair", source, line.number);
    if (const auto label = row.find("label"); label != row.end() && !label->is_null())
        example.label = labelIdOf(*label, labelNames, source, line.number);
    return example;
}

} // namespace

ClassificationDataset parseClassificationFile(const std::string& text, const std::string& sourceName,
                                              const std::vector<std::string>& labelNames, std::size_t maxSamples)
{
    ClassificationDataset dataset;
    dataset.path = sourceName;
    const std::vector<Line> lines = nonBlankLines(text);
    if (lines.empty())
        throw Error(sourceName + " holds no rows (JSONL {\"text\", \"pair\"?, \"label\"} is expected).");
    for (const Line& line : lines) {
        ClassificationExample example = classificationRow(sourceName, line, labelNames);
        if (line.number == lines.front().number)
            dataset.hasLabels = example.label.has_value();
        else if (example.label.has_value() != dataset.hasLabels)
            failAt(sourceName, line.number,
                   std::string(dataset.hasLabels ? "has no \"label\"" : "has a \"label\"") + ", but line " +
                       std::to_string(lines.front().number) + (dataset.hasLabels ? " has one" : " has none") +
                       "; either every row is labelled or none is");
        ++dataset.inFile;
        if (maxSamples == 0 || dataset.examples.size() < maxSamples)
            dataset.examples.push_back(std::move(example));
    }
    return dataset;
}

ClassificationDataset readClassificationFile(const std::string& path, const std::vector<std::string>& labelNames,
                                             std::size_t maxSamples)
{
    return readWhole(path, [&](const std::string& text) {
        return parseClassificationFile(text, path, labelNames, maxSamples);
    });
}

} // namespace scalescope
