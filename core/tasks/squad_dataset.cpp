#include "tasks/squad_dataset.h"

#include <algorithm>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"

namespace scalescope {
namespace {

using json = nlohmann::json;

struct TextPosition {
    std::size_t line = 1;
    std::size_t column = 1;
};

// Line and column (both from 1, columns in bytes) of the byte at `offset`.
TextPosition positionOf(const std::string& text, std::size_t offset)
{
    TextPosition position;
    const std::size_t end = std::min(offset, text.size());
    for (std::size_t i = 0; i < end; ++i) {
        if (text[i] == '\n') {
            ++position.line;
            position.column = 1;
        } else {
            ++position.column;
        }
    }
    return position;
}

std::string describePosition(const std::string& text, std::size_t offset)
{
    const TextPosition p = positionOf(text, offset);
    return "line " + std::to_string(p.line) + ", column " + std::to_string(p.column) + " (byte " +
           std::to_string(offset + 1) + ")";
}

// Depth is bounded before parsing: a file of a million '[' is refused with its position, before the
// reader opens a frame for each.
void checkNestingDepth(const std::string& text, const std::string& sourceName, int maxDepth)
{
    const long long at = jsonNestingExceeded(text.data(), text.data() + text.size(), maxDepth);
    if (at >= 0)
        throw Error(sourceName + " nests arrays and objects more than " + std::to_string(maxDepth) + " levels deep at "
            + describePosition(text, static_cast<std::size_t>(at)) + "; a SQuAD file needs 9.");
}

// The parser's explanation of a syntax error at `position` (bytes read up to and including the
// offending one), as one sentence naming the file.
std::string syntaxError(const std::string& text, const std::string& sourceName, std::size_t position,
                        const nlohmann::detail::exception& error)
{
    // A number beyond double's range ("1e400") comes as out_of_range, without a position.
    if (dynamic_cast<const json::parse_error*>(&error) == nullptr)
        return sourceName + " is not valid JSON: it holds a number too large to represent.";
    const std::size_t offset = position > 0 ? position - 1 : 0;
    std::string detail = error.what();
    // Keep the parser's explanation, drop its own exception id and position.
    const std::size_t colon = detail.find(": ");
    if (colon != std::string::npos && detail.compare(0, 1, "[") == 0)
        detail = detail.substr(colon + 2);
    if (!detail.empty() && detail.back() != '.')
        detail += '.';
    return sourceName + " is not valid JSON: syntax error at " + describePosition(text, offset) + ": " + detail;
}

// A value's JSON type as nlohmann's type_name() says it.
enum class ValueType { Null, Boolean, Number, String, Object, Array };

const char* typeName(ValueType type)
{
    switch (type) {
    case ValueType::Null: return "null";
    case ValueType::Boolean: return "boolean";
    case ValueType::Number: return "number";
    case ValueType::String: return "string";
    case ValueType::Object: return "object";
    case ValueType::Array: return "array";
    }
    return "value";
}

// A scalar as it arrived; only the parts a SQuAD file's keys need.
struct Scalar {
    ValueType type = ValueType::Null;
    std::string text;           // a string's value, or a number's JSON spelling
    bool boolean = false;
    bool integer = false;       // a number without fraction or exponent that fits 64 bits
};

// Reads a SQuAD file through nlohmann's SAX interface, so that no DOM of the file is ever built
// (one costs about 40 times the text: a 60 MB file of empty objects took 2.4 GB): what is kept is
// the examples, and per open object or array a frame with its path. The checks and their sentences
// are those of a walk over the whole document, in the walk's order: each frame keeps the first
// problem per check, ordered as the walk would meet them, and hands the first of all to its
// parent when it closes, so a key written before another in the file cannot change which problem
// is reported. Once an array has a problem, its later elements are only parsed (a syntax error
// anywhere still comes first, as the parser reads the whole text before anything is checked).
class SquadSax {
public:
    SquadSax(const std::string& text, const std::string& source, const SquadLimits& limits, SquadDataset& dataset)
        : text_(text), source_(source), limits_(limits), dataset_(dataset)
    {
    }

    // The first problem of the file, "" when none.
    std::string problem() const { return problem_; }
    bool sawImpossibleKey() const { return sawImpossibleKey_; }
    const std::string& firstUnansweredPath() const { return firstUnansweredPath_; }

    bool null() { return scalar({ValueType::Null, {}, false, false}); }
    bool boolean(bool value) { return scalar({ValueType::Boolean, {}, value, false}); }
    bool number_integer(json::number_integer_t value) { return scalar({ValueType::Number, std::to_string(value), false, true}); }
    bool number_unsigned(json::number_unsigned_t value) { return scalar({ValueType::Number, std::to_string(value), false, true}); }
    bool number_float(json::number_float_t value, const std::string&) { return scalar({ValueType::Number, json(value).dump(), false, false}); }
    bool string(std::string& value) { return scalar({ValueType::String, std::move(value), false, false}); }
    bool binary(json::binary_t&) { return true; } // JSON text has none
    bool start_object(std::size_t) { return open(ValueType::Object); }
    bool start_array(std::size_t) { return open(ValueType::Array); }
    bool key(std::string& name)
    {
        frames_.back().key = std::move(name);
        return true;
    }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& error)
    {
        syntaxProblem_ = syntaxError(text_, source_, position, error);
        return false;
    }

    // Why the text is not JSON, "" when it is.
    const std::string& syntaxProblem() const { return syntaxProblem_; }

private:
    enum class Kind { Skip, Top, Data, Article, Paragraphs, Paragraph, Qas, Question, Answers, Answer };

    struct Frame {
        Kind kind = Kind::Skip;
        std::string path;
        int orderInParent = 0;          // which of the parent's checks this frame's problem belongs to
        std::string key;                // an object's current key
        std::size_t elements = 0;       // an array's elements so far
        std::map<int, std::string> problems; // per check, in the walk's order; the first of each
        std::set<std::string> seen;     // keys met (a missing key is a problem)
        std::size_t firstExample = 0;   // articles and paragraphs: their first example
        std::string text;               // an article's title, a paragraph's context
        SquadExample example;           // a question
        std::optional<bool> impossible; // a question's is_impossible when boolean
        bool impossibleKey = false;
    };

    [[nodiscard]] std::string fail(const std::string& path, const std::string& problem) const
    {
        return source_ + ": " + path + " " + problem + ".";
    }
    [[nodiscard]] std::string missing(const std::string& path, const char* key) const
    {
        return source_ + ": " + path + ": \"" + key + "\" is missing.";
    }
    [[nodiscard]] std::string wrongType(const std::string& path, const char* expected, ValueType found) const
    {
        return fail(path, std::string("must be ") + expected + ", found " + typeName(found));
    }

    static void note(Frame& frame, int check, std::string problem)
    {
        frame.problems.emplace(check, std::move(problem));
    }

    // Where a value goes in the frame that holds it: the frame kind it opens (a container), or the
    // check it belongs to; Skip for what no check reads.
    struct Slot {
        Kind opens = Kind::Skip;
        int check = 0;
        std::string path;
    };

    // Handles a value met in the innermost frame: checks it, keeps what is kept, and says which
    // frame a container opens.
    Slot place(Frame& frame, ValueType type, const Scalar* scalar)
    {
        switch (frame.kind) {
        case Kind::Skip: return {};
        case Kind::Top: return placeInTop(frame, type, scalar);
        case Kind::Data:
        case Kind::Paragraphs:
        case Kind::Qas:
        case Kind::Answers: return placeElement(frame, type);
        case Kind::Article: return placeInArticle(frame, type, scalar);
        case Kind::Paragraph: return placeInParagraph(frame, type, scalar);
        case Kind::Question: return placeInQuestion(frame, type, scalar);
        case Kind::Answer: placeInAnswer(frame, type, scalar); return {};
        }
        return {};
    }

    Slot placeInTop(Frame& frame, ValueType type, const Scalar* scalar)
    {
        Slot slot;
        frame.seen.insert(frame.key);
        if (frame.key == "version") {
            slot.check = 0;
            if (type == ValueType::String || type == ValueType::Number)
                dataset_.version = scalar->text;
            else
                note(frame, 0, wrongType("version", "a string", type));
        } else if (frame.key == "data") {
            slot.check = 1;
            if (type == ValueType::Array)
                slot = {Kind::Data, 1, "data"};
            else
                note(frame, 1, wrongType("data", "an array", type));
        }
        return slot;
    }

    // An element of data, paragraphs, qas or answers: an object that opens its own frame.
    Slot placeElement(Frame& frame, ValueType type)
    {
        const std::size_t index = frame.elements++;
        if (!frame.problems.empty())
            return {}; // settled: the first problem of an array is its problem
        const std::string path = frame.path + "[" + std::to_string(index) + "]";
        if (frame.kind == Kind::Answers && index >= limits_.maxAnswersPerQuestion)
            return {}; // counted only; the count is the problem when the array closes
        if (type != ValueType::Object) {
            note(frame, 0, wrongType(path, "an object", type));
            return {};
        }
        const Kind element = frame.kind == Kind::Data         ? Kind::Article
                             : frame.kind == Kind::Paragraphs ? Kind::Paragraph
                             : frame.kind == Kind::Qas        ? Kind::Question
                                                              : Kind::Answer;
        return {element, 0, path};
    }

    Slot placeInArticle(Frame& frame, ValueType type, const Scalar* scalar)
    {
        frame.seen.insert(frame.key);
        if (frame.key == "title") {
            if (type == ValueType::String)
                frame.text = scalar->text;
            else
                note(frame, 0, wrongType(frame.path + ".title", "a string", type));
        } else if (frame.key == "paragraphs") {
            if (type == ValueType::Array)
                return {Kind::Paragraphs, 1, frame.path + ".paragraphs"};
            note(frame, 1, wrongType(frame.path + ".paragraphs", "an array", type));
        }
        return {};
    }

    Slot placeInParagraph(Frame& frame, ValueType type, const Scalar* scalar)
    {
        frame.seen.insert(frame.key);
        if (frame.key == "context") {
            if (type != ValueType::String)
                note(frame, 0, wrongType(frame.path + ".context", "a string", type));
            else if (scalar->text.size() > limits_.maxContextBytes)
                note(frame, 0, fail(frame.path + ".context", "is " + std::to_string(scalar->text.size()) +
                                                                  " bytes long, more than the limit of " +
                                                                  std::to_string(limits_.maxContextBytes)));
            else
                frame.text = scalar->text;
        } else if (frame.key == "qas") {
            if (type == ValueType::Array)
                return {Kind::Qas, 1, frame.path + ".qas"};
            note(frame, 1, wrongType(frame.path + ".qas", "an array", type));
        }
        return {};
    }

    Slot placeInQuestion(Frame& frame, ValueType type, const Scalar* scalar)
    {
        frame.seen.insert(frame.key);
        if (frame.key == "id") {
            if (type == ValueType::String || (type == ValueType::Number && scalar->integer))
                frame.example.id = scalar->text;
            else
                note(frame, 0, wrongType(frame.path + ".id", "a string", type));
        } else if (frame.key == "question") {
            if (type != ValueType::String)
                note(frame, 1, wrongType(frame.path + ".question", "a string", type));
            else if (scalar->text.size() > limits_.maxQuestionBytes)
                note(frame, 1, fail(frame.path + ".question", "is " + std::to_string(scalar->text.size()) +
                                                                   " bytes long, more than the limit of " +
                                                                   std::to_string(limits_.maxQuestionBytes)));
            else
                frame.example.question = scalar->text;
        } else if (frame.key == "answers") {
            if (type == ValueType::Array)
                return {Kind::Answers, 2, frame.path + ".answers"};
            note(frame, 2, wrongType(frame.path + ".answers", "an array", type));
        } else if (frame.key == "is_impossible") {
            frame.impossibleKey = true;
            if (type == ValueType::Boolean)
                frame.impossible = scalar->boolean;
            else
                note(frame, 3, wrongType(frame.path + ".is_impossible", "true or false", type));
        }
        return {};
    }

    void placeInAnswer(Frame& frame, ValueType type, const Scalar* scalar)
    {
        frame.seen.insert(frame.key);
        if (frame.key == "text") {
            if (type == ValueType::String)
                frame.text = scalar->text;
            else
                note(frame, 0, wrongType(frame.path + ".text", "a string", type));
        } else if (frame.key == "answer_start" && !(type == ValueType::Number && scalar->integer)) {
            note(frame, 1, wrongType(frame.path + ".answer_start", "an integer", type));
        }
    }

    bool scalar(Scalar value)
    {
        if (frames_.empty()) { // the whole document is one scalar
            problem_ = fail("the top level", std::string("must be an object with \"data\", found ") + typeName(value.type));
            return true;
        }
        place(frames_.back(), value.type, &value);
        return true;
    }

    bool open(ValueType type)
    {
        Frame frame;
        if (frames_.empty()) {
            if (type == ValueType::Object)
                frame.kind = Kind::Top;
            else
                topProblem_ = fail("the top level", std::string("must be an object with \"data\", found ") + typeName(type));
        } else {
            const Slot slot = place(frames_.back(), type, nullptr);
            frame.kind = slot.opens;
            frame.orderInParent = slot.check;
            frame.path = slot.path;
        }
        frame.firstExample = dataset_.examples.size();
        frames_.push_back(std::move(frame));
        return true;
    }

    bool close()
    {
        Frame frame = std::move(frames_.back());
        frames_.pop_back();
        finish(frame);
        std::string problem = frame.problems.empty() ? std::string() : std::move(frame.problems.begin()->second);
        if (frames_.empty())
            problem_ = topProblem_.empty() ? problem : topProblem_;
        else if (!problem.empty())
            note(frames_.back(), frame.orderInParent, std::move(problem));
        return true;
    }

    // The checks a frame can make only once it is closed: missing keys, counts, and what a
    // question, an article or a paragraph adds to the dataset.
    void finish(Frame& frame)
    {
        switch (frame.kind) {
        case Kind::Top:
            require(frame, 1, "data");
            break;
        case Kind::Article:
            require(frame, 1, "paragraphs");
            if (frame.problems.empty()) {
                ++dataset_.articles;
                for (std::size_t i = frame.firstExample; i < dataset_.examples.size(); ++i)
                    dataset_.examples[i].title = frame.text;
            }
            break;
        case Kind::Paragraph:
            require(frame, 0, "context");
            require(frame, 1, "qas");
            if (frame.problems.empty()) {
                ++dataset_.paragraphs;
                for (std::size_t i = frame.firstExample; i < dataset_.examples.size(); ++i)
                    dataset_.examples[i].context = frame.text;
            }
            break;
        case Kind::Answers:
            if (frame.elements > limits_.maxAnswersPerQuestion) {
                frame.problems.clear(); // the walk counted the answers before it looked at one
                note(frame, 0, fail(frame.path, "has " + std::to_string(frame.elements) +
                                                    " entries, more than the limit of " +
                                                    std::to_string(limits_.maxAnswersPerQuestion)));
            }
            break;
        case Kind::Answer:
            require(frame, 0, "text");
            if (frame.problems.empty()) // into the question that holds the answers
                frames_[frames_.size() - 2].example.golds.push_back(std::move(frame.text));
            break;
        case Kind::Question:
            finishQuestion(frame);
            break;
        default:
            break;
        }
    }

    void finishQuestion(Frame& frame)
    {
        require(frame, 0, "id");
        if (frame.seen.count("id") && !frame.problems.count(0) && frame.example.id.empty())
            note(frame, 0, fail(frame.path + ".id", "is empty"));
        require(frame, 1, "question");
        require(frame, 2, "answers");
        if (!frame.problems.empty())
            return;
        SquadExample& example = frame.example;
        if (frame.impossibleKey) {
            sawImpossibleKey_ = true;
            if (*frame.impossible && !example.golds.empty())
                return note(frame, 3, fail(frame.path, "has \"is_impossible\": true but also answers"));
            if (!*frame.impossible && example.golds.empty())
                return note(frame, 3, fail(frame.path, "has \"is_impossible\": false but no answers"));
        } else if (example.golds.empty() && firstUnansweredPath_.empty()) {
            firstUnansweredPath_ = frame.path;
        }
        example.isImpossible = example.golds.empty();
        auto [it, inserted] = pathById_.emplace(example.id, frame.path);
        if (!inserted)
            return note(frame, 4, fail(frame.path, "repeats the id \"" + example.id + "\" of " + it->second));
        if (dataset_.examples.size() >= limits_.maxQuestions)
            return note(frame, 5, source_ + " holds more than " + std::to_string(limits_.maxQuestions) +
                                      " questions, more than this reader accepts.");
        dataset_.examples.push_back(std::move(example));
    }

    void require(Frame& frame, int check, const char* key) const
    {
        if (!frame.seen.count(key))
            note(frame, check, missing(frame.path.empty() ? "the top level" : frame.path, key));
    }

    const std::string& text_;
    const std::string& source_;
    const SquadLimits& limits_;
    SquadDataset& dataset_;
    std::vector<Frame> frames_;
    std::string problem_, topProblem_, syntaxProblem_;
    bool sawImpossibleKey_ = false;
    std::string firstUnansweredPath_; // a question with no answers and no is_impossible key
    std::unordered_map<std::string, std::string> pathById_;
};

} // namespace

SquadDataset parseSquadJson(const std::string& text, const std::string& sourceName, const SquadLimits& limits)
{
    if (text.size() > limits.maxFileBytes)
        throw Error(sourceName + " is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                    std::to_string(limits.maxFileBytes) + ".");
    checkNestingDepth(text, sourceName, limits.maxNestingDepth);
    SquadDataset dataset;
    dataset.path = sourceName;
    try {
        SquadSax reader(text, sourceName, limits, dataset);
        if (!json::sax_parse(text, &reader))
            throw Error(reader.syntaxProblem());
        if (!reader.problem().empty())
            throw Error(reader.problem());
        const bool versionSaysV2 = dataset.version.rfind("v2", 0) == 0 || dataset.version.rfind("2", 0) == 0;
        dataset.isV2 = reader.sawImpossibleKey() || versionSaysV2;
        // SQuAD 1.1 has no unanswerable questions; one without answers there cannot be scored.
        if (!dataset.isV2 && !reader.firstUnansweredPath().empty())
            throw Error(sourceName + ": " + reader.firstUnansweredPath() + " has no answers, which a SQuAD v1.1 file does not allow.");
    } catch (const std::bad_alloc&) {
        throw Error("Cannot read " + sourceName + ": its " + std::to_string(text.size()) +
                    " bytes of JSON need more memory than the process can have.");
    }
    if (dataset.examples.empty())
        throw Error(sourceName + " holds no questions.");
    return dataset;
}

SquadDataset readSquadFile(const std::string& path, const SquadLimits& limits)
{
    return readingUserFile(path, [&] { return parseSquadJson(readFileToString(path, limits.maxFileBytes), path, limits); });
}

} // namespace scalescope
