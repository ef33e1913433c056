#include "tasks/squad_dataset.h"

#include <algorithm>
#include <new>
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

// The parser builds the whole tree and its destructor recurses, so depth is bounded before parsing:
// a file of a million '[' must be refused, not crash the program.
void checkNestingDepth(const std::string& text, const std::string& sourceName, int maxDepth)
{
    const long long at = jsonNestingExceeded(text.data(), text.data() + text.size(), maxDepth);
    if (at >= 0)
        throw Error(sourceName + " nests arrays and objects more than " + std::to_string(maxDepth) + " levels deep at "
            + describePosition(text, static_cast<std::size_t>(at)) + "; a SQuAD file needs 9.");
}

json parseJson(const std::string& text, const std::string& sourceName)
{
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        // e.byte counts the bytes read up to and including the offending one.
        const std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
        std::string detail = e.what();
        // Keep the parser's explanation, drop its own exception id and position.
        const std::size_t colon = detail.find(": ");
        if (colon != std::string::npos && detail.compare(0, 1, "[") == 0)
            detail = detail.substr(colon + 2);
        if (!detail.empty() && detail.back() != '.')
            detail += '.';
        throw Error(sourceName + " is not valid JSON: syntax error at " + describePosition(text, offset) + ": " +
                    detail);
    } catch (const json::exception&) {
        // A number beyond double's range ("1e400") comes as out_of_range, without a position.
        throw Error(sourceName + " is not valid JSON: it holds a number too large to represent.");
    } catch (const std::bad_alloc&) {
        throw Error("Cannot read " + sourceName + ": its " + std::to_string(text.size()) +
                    " bytes of JSON need more memory than the process can have.");
    }
}

class SquadReader {
public:
    SquadReader(std::string sourceName, const SquadLimits& limits) : source_(std::move(sourceName)), limits_(limits) {}

    SquadDataset read(const json& root)
    {
        SquadDataset dataset;
        dataset.path = source_;
        if (!root.is_object())
            fail("the top level", "must be an object with \"data\", found " + std::string(root.type_name()));
        dataset.version = readVersion(root);
        const json& data = member(root, "data", "the top level");
        expectArray(data, "data");
        for (std::size_t a = 0; a < data.size(); ++a)
            readArticle(data[a], "data[" + std::to_string(a) + "]", dataset);

        const bool versionSaysV2 = dataset.version.rfind("v2", 0) == 0 || dataset.version.rfind("2", 0) == 0;
        dataset.isV2 = sawImpossibleKey_ || versionSaysV2;
        // SQuAD 1.1 has no unanswerable questions; one without answers there cannot be scored.
        if (!dataset.isV2 && !firstUnansweredPath_.empty())
            fail(firstUnansweredPath_, "has no answers, which a SQuAD v1.1 file does not allow");
        if (dataset.examples.empty())
            throw Error(source_ + " holds no questions.");
        return dataset;
    }

private:
    std::string readVersion(const json& root) const
    {
        const auto version = root.find("version");
        if (version == root.end())
            return {};
        if (version->is_string())
            return version->get<std::string>();
        if (!version->is_number())
            fail("version", "must be a string, found " + std::string(version->type_name()));
        return version->dump();
    }

    void readArticle(const json& article, const std::string& articlePath, SquadDataset& dataset)
    {
        expectObject(article, articlePath);
        std::string title;
        if (auto t = article.find("title"); t != article.end()) {
            expectString(*t, articlePath + ".title");
            title = t->get<std::string>();
        }
        const json& paragraphs = member(article, "paragraphs", articlePath);
        expectArray(paragraphs, articlePath + ".paragraphs");
        ++dataset.articles;
        for (std::size_t p = 0; p < paragraphs.size(); ++p)
            readParagraph(paragraphs[p], articlePath + ".paragraphs[" + std::to_string(p) + "]", title, dataset);
    }

    void readParagraph(const json& paragraph, const std::string& paragraphPath, const std::string& title,
                       SquadDataset& dataset)
    {
        expectObject(paragraph, paragraphPath);
        const std::string& context = stringMember(paragraph, "context", paragraphPath);
        if (context.size() > limits_.maxContextBytes)
            fail(paragraphPath + ".context", "is " + std::to_string(context.size()) +
                                                 " bytes long, more than the limit of " +
                                                 std::to_string(limits_.maxContextBytes));
        const json& qas = member(paragraph, "qas", paragraphPath);
        expectArray(qas, paragraphPath + ".qas");
        ++dataset.paragraphs;
        for (std::size_t q = 0; q < qas.size(); ++q) {
            const std::string qaPath = paragraphPath + ".qas[" + std::to_string(q) + "]";
            SquadExample example = readQuestion(qas[q], qaPath);
            example.title = title;
            example.context = context;
            readImpossibleFlag(qas[q], qaPath, example);
            auto [it, inserted] = pathById_.emplace(example.id, qaPath);
            if (!inserted)
                fail(qaPath, "repeats the id \"" + example.id + "\" of " + it->second);
            if (dataset.examples.size() >= limits_.maxQuestions)
                throw Error(source_ + " holds more than " + std::to_string(limits_.maxQuestions) +
                            " questions, more than this reader accepts.");
            dataset.examples.push_back(std::move(example));
        }
    }

    // SQuAD 2.0's is_impossible, checked against the answers; a question without answers and
    // without the key is remembered (it is an error in a v1.1 file only).
    void readImpossibleFlag(const json& qa, const std::string& qaPath, SquadExample& example)
    {
        const auto impossible = qa.find("is_impossible");
        if (impossible != qa.end()) {
            sawImpossibleKey_ = true;
            if (!impossible->is_boolean())
                fail(qaPath + ".is_impossible", "must be true or false, found " + std::string(impossible->type_name()));
            const bool flagged = impossible->get<bool>();
            if (flagged && !example.golds.empty())
                fail(qaPath, "has \"is_impossible\": true but also answers");
            if (!flagged && example.golds.empty())
                fail(qaPath, "has \"is_impossible\": false but no answers");
        } else if (example.golds.empty() && firstUnansweredPath_.empty()) {
            firstUnansweredPath_ = qaPath;
        }
        example.isImpossible = example.golds.empty();
    }

    [[noreturn]] void fail(const std::string& path, const std::string& problem) const
    {
        throw Error(source_ + ": " + path + " " + problem + ".");
    }

    const json& member(const json& object, const char* key, const std::string& path) const
    {
        const auto it = object.find(key);
        if (it == object.end())
            throw Error(source_ + ": " + path + ": \"" + key + "\" is missing.");
        return *it;
    }

    const std::string& stringMember(const json& object, const char* key, const std::string& path) const
    {
        const json& value = member(object, key, path);
        expectString(value, path + "." + key);
        return value.get_ref<const std::string&>();
    }

    void expectObject(const json& value, const std::string& path) const
    {
        if (!value.is_object())
            fail(path, "must be an object, found " + std::string(value.type_name()));
    }
    void expectArray(const json& value, const std::string& path) const
    {
        if (!value.is_array())
            fail(path, "must be an array, found " + std::string(value.type_name()));
    }
    void expectString(const json& value, const std::string& path) const
    {
        if (!value.is_string())
            fail(path, "must be a string, found " + std::string(value.type_name()));
    }

    SquadExample readQuestion(const json& qa, const std::string& path) const
    {
        expectObject(qa, path);
        SquadExample example;
        const json& id = member(qa, "id", path);
        if (id.is_string())
            example.id = id.get<std::string>();
        else if (id.is_number_integer())
            example.id = id.dump();
        else
            fail(path + ".id", "must be a string, found " + std::string(id.type_name()));
        if (example.id.empty())
            fail(path + ".id", "is empty");

        example.question = stringMember(qa, "question", path);
        if (example.question.size() > limits_.maxQuestionBytes)
            fail(path + ".question", "is " + std::to_string(example.question.size()) +
                                         " bytes long, more than the limit of " +
                                         std::to_string(limits_.maxQuestionBytes));

        const json& answers = member(qa, "answers", path);
        expectArray(answers, path + ".answers");
        if (answers.size() > limits_.maxAnswersPerQuestion)
            fail(path + ".answers", "has " + std::to_string(answers.size()) + " entries, more than the limit of " +
                                        std::to_string(limits_.maxAnswersPerQuestion));
        for (std::size_t i = 0; i < answers.size(); ++i) {
            const std::string answerPath = path + ".answers[" + std::to_string(i) + "]";
            expectObject(answers[i], answerPath);
            example.golds.push_back(stringMember(answers[i], "text", answerPath));
            if (auto start = answers[i].find("answer_start"); start != answers[i].end() && !start->is_number_integer())
                fail(answerPath + ".answer_start", "must be an integer, found " + std::string(start->type_name()));
        }
        return example;
    }

    std::string source_;
    SquadLimits limits_;
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
    const json root = parseJson(text, sourceName);
    return SquadReader(sourceName, limits).read(root);
}

SquadDataset readSquadFile(const std::string& path, const SquadLimits& limits)
{
    const std::string text = readFileToString(path, limits.maxFileBytes);
    return parseSquadJson(text, path, limits);
}

} // namespace scalescope
