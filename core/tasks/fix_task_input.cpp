#include "tasks/fix_task_input.h"

#include <filesystem>

#include "common/error.h"
#include "io/sha256.h"
#include "tasks/task_datasets.h"

namespace scalescope {
namespace {

using json = nlohmann::json;

std::string stringOf(const json& object, const char* key)
{
    return object.is_object() && object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : std::string();
}

std::vector<std::string> stringsOf(const json& object, const char* key)
{
    std::vector<std::string> out;
    if (object.is_object() && object.contains(key) && object[key].is_array())
        for (const json& item : object[key])
            if (item.is_string())
                out.push_back(item.get<std::string>());
    return out;
}

FixTaskKind kindNamed(const std::string& name)
{
    for (FixTaskKind kind : {FixTaskKind::Embed, FixTaskKind::Rerank, FixTaskKind::Classify})
        if (name == fixTaskKindName(kind))
            return kind;
    return FixTaskKind::None;
}

// The window's record: the panel's whole input, in its own kind.
FixTaskInput fromRecordedTask(const json& task)
{
    FixTaskInput input;
    input.kind = kindNamed(stringOf(task, "kind"));
    input.texts = stringsOf(task, "texts");
    input.prompt = stringOf(task, "prompt");
    input.query = stringOf(task, "query");
    input.passages = stringsOf(task, "passages");
    if (task.contains("compared_passage") && task["compared_passage"].is_number_integer())
        input.comparedPassage = task["compared_passage"].get<int>();
    if (input.comparedPassage >= static_cast<int>(input.passages.size()))
        input.comparedPassage = -1;
    input.text = stringOf(task, "text");
    input.pair = stringOf(task, "pair");
    return input;
}

// Rows of texts (and their pairs) as the input of a `kind` panel.
FixTaskInput fromRows(FixTaskKind kind, const std::vector<std::string>& texts, const std::vector<std::string>& pairs,
                      const std::string& source)
{
    FixTaskInput input;
    input.kind = kind;
    if (texts.empty()) {
        input.problem = source + " holds no text to run again.";
        return input;
    }
    if (kind == FixTaskKind::Embed) {
        input.texts = texts;
    } else if (kind == FixTaskKind::Classify) {
        input.text = texts.front();
        input.pair = pairs.front();
    } else {
        // A reranker ranks one query's passages: rows that pair the same text with a passage each.
        for (std::size_t i = 0; i < texts.size(); ++i)
            if (texts[i] != texts.front() || pairs[i].empty()) {
                input.problem = source + " is not one query with its passages (each row the same text with a pair), so the "
                                         "Rerank panel cannot run it again; compare --texts runs it row by row.";
                return input;
            }
        input.query = texts.front();
        input.passages = pairs;
    }
    return input;
}

// The CLI's texts file, read again when it is still the file that was measured.
FixTaskInput fromTextsFile(FixTaskKind kind, const json& inputs)
{
    const std::string path = stringOf(inputs, "texts");
    FixTaskInput input;
    input.kind = kind;
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) {
        input.problem = "The texts file " + path + " the fix was measured on is no longer there.";
        return input;
    }
    if (!stringOf(inputs, "sha256").empty() && sha256OfFile(path) != stringOf(inputs, "sha256")) {
        input.problem = "The texts file " + path + " changed since the fix was measured on it.";
        return input;
    }
    try {
        const TextsFile file = readTextsFile(path);
        std::vector<std::string> pairs;
        for (const auto& pair : file.pairs)
            pairs.push_back(pair.value_or(std::string()));
        pairs.resize(file.texts.size());
        return fromRows(kind, file.texts, pairs, "The texts file " + path);
    } catch (const Error& e) {
        input.problem = e.what();
        return input;
    }
}

} // namespace

const char* fixTaskKindName(FixTaskKind kind)
{
    switch (kind) {
    case FixTaskKind::Embed: return "embed";
    case FixTaskKind::Rerank: return "rerank";
    case FixTaskKind::Classify: return "classify";
    case FixTaskKind::None: break;
    }
    return "";
}

json embedTaskJson(const std::vector<std::string>& texts, const std::string& prompt)
{
    return {{"kind", fixTaskKindName(FixTaskKind::Embed)}, {"texts", texts}, {"prompt", prompt}};
}

json rerankTaskJson(const std::string& query, const std::vector<std::string>& passages, int comparedPassage)
{
    return {{"kind", fixTaskKindName(FixTaskKind::Rerank)}, {"query", query}, {"passages", passages}, {"compared_passage", comparedPassage}};
}

json classifyTaskJson(const std::string& text, const std::string& pair)
{
    return {{"kind", fixTaskKindName(FixTaskKind::Classify)}, {"text", text}, {"pair", pair}};
}

FixTaskInput provenanceTaskInput(const json& provenance, FixTaskKind servedBy)
{
    const json measurement = provenance.is_object() ? provenance.value("measurement", json()) : json();
    const json inputs = measurement.is_object() ? measurement.value("inputs", json()) : json();
    if (!inputs.is_object())
        return {};
    if (inputs.contains("task") && inputs["task"].is_object()) {
        FixTaskInput recorded = fromRecordedTask(inputs["task"]);
        if (recorded.kind != FixTaskKind::None)
            return recorded;
    }
    if (servedBy == FixTaskKind::None)
        return {};
    if (inputs.contains("texts") && inputs["texts"].is_string())
        return fromTextsFile(servedBy, inputs);
    if (inputs.contains("text") && inputs["text"].is_string())
        return fromRows(servedBy, {stringOf(inputs, "text")}, {stringOf(inputs, "pair")}, "The recorded text");
    return {};
}

} // namespace scalescope
