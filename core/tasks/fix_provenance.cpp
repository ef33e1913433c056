#include "tasks/fix_provenance.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/error.h"
#include "common/text_files.h"
#include "io/atomic_write.h"
#include "io/sha256.h"
#include "report/decibel_text.h"

namespace scalescope {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

constexpr int kProvenanceVersion = 1;

std::string absolutePath(const std::string& dir)
{
    std::error_code error;
    const fs::path path = fs::weakly_canonical(fs::absolute(dir), error);
    return error ? dir : path.string();
}

ordered_json sideJson(const FixSide& side)
{
    ordered_json out = ordered_json::object();
    out["sqnr_db"] = side.sqnrDb && std::isfinite(*side.sqnrDb) ? ordered_json(*side.sqnrDb)
                     : side.sqnrDb                               ? ordered_json(*side.sqnrDb > 0 ? "inf" : "-inf")
                                                                 : ordered_json(nullptr);
    out["agrees"] = side.agrees ? ordered_json(*side.agrees) : ordered_json(nullptr);
    return out;
}

ordered_json measurementJson(const FixMeasurement& m)
{
    if (!m.known())
        return nullptr;
    ordered_json out;
    out["measured_by"] = m.measuredBy;
    out["inputs"] = m.inputs.is_null() ? ordered_json(nullptr) : ordered_json::parse(m.inputs.dump());
    out["target"] = m.target.empty() ? ordered_json(nullptr) : ordered_json(m.target);
    out["before"] = sideJson(m.before);
    out["after"] = sideJson(m.after);
    return out;
}

std::string stringAt(const json& object, const char* key)
{
    return object.is_object() && object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : std::string();
}

std::string dbText(const json& value)
{
    if (value.is_number())
        return decibelString(value.get<double>());
    return value.is_string() ? value.get<std::string>() : std::string("not measured");
}

// A task panel's whole input as the window records it (tasks/fix_task_input.h), in words; "" when
// none is recorded.
std::string taskInputsText(const json& task)
{
    const std::string kind = stringAt(task, "kind");
    const auto count = [&](const char* key) {
        return task.contains(key) && task[key].is_array() ? std::to_string(task[key].size()) : std::string("?");
    };
    if (kind == "rerank")
        return "the query \"" + stringAt(task, "query") + "\" over " + count("passages") + " passages (the Rerank panel's input)";
    if (kind == "embed")
        return count("texts") + " texts (the Embed panel's input)";
    if (kind == "classify")
        return "the text \"" + stringAt(task, "text") + "\"" +
               (stringAt(task, "pair").empty() ? std::string() : " with the pair \"" + stringAt(task, "pair") + "\"") +
               " (the Classify panel's input)";
    return {};
}

std::string sideText(const json& side)
{
    if (!side.is_object())
        return "not measured";
    std::string text = dbText(side.value("sqnr_db", json())) + " dB";
    if (side.contains("agrees") && side["agrees"].is_boolean())
        text += side["agrees"].get<bool>() ? ", the outputs agree with the reference's" : ", the outputs differ from the reference's";
    return text;
}

} // namespace

ordered_json folderFingerprint(const std::string& dir)
{
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file() && entry.path().filename() != kProvenanceFileName)
            files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    ordered_json out = ordered_json::array();
    for (const fs::path& file : files)
        out.push_back({{"name", file.filename().string()},
                       {"bytes", static_cast<std::uint64_t>(fs::file_size(file))},
                       {"sha256", sha256OfFile(file.string())}});
    return out;
}

ordered_json fixProvenanceJson(const FixProvenance& p)
{
    ordered_json out;
    out["format"] = "scalescope-fix-provenance";
    out["version"] = kProvenanceVersion;
    out["written_by"] = "ScaleScope " + p.toolVersion + " keep-float";
    out["tool_version"] = p.toolVersion;
    out["source"] = {{"path", absolutePath(p.sourceDir)}, {"files", folderFingerprint(p.sourceDir)}};
    out["reference"] = p.referenceDir.empty() ? ordered_json(nullptr) : ordered_json(absolutePath(p.referenceDir));
    out["kept_float"] = p.keptFloat;
    out["weights"] = p.referenceDir.empty() ? "dequantized" : "reference";
    out["weight_dtype"] = p.weightDtype;
    out["written_for"] = p.consumers;
    out["measurement"] = measurementJson(p.measurement);
    return out;
}

std::optional<json> readFixProvenance(const std::string& dir)
{
    const fs::path path = fs::path(dir) / kProvenanceFileName;
    std::error_code error;
    if (!fs::is_regular_file(path, error))
        return std::nullopt;
    json document = readJsonFile(path.string());
    if (!document.is_object() || stringAt(document, "format") != "scalescope-fix-provenance" ||
        !document.contains("source") || !document["source"].is_object())
        throw Error(path.string() + " is not a ScaleScope provenance file (no \"format\": \"scalescope-fix-provenance\" with a source).");
    return document;
}

void recordFixMeasurement(const std::string& dir, const FixMeasurement& measurement)
{
    const fs::path path = fs::path(dir) / kProvenanceFileName;
    if (!readFixProvenance(dir))
        throw Error(path.string() + " does not exist, so there is no provenance to add the measurement to.");
    ordered_json document = ordered_json::parse(readFileToString(path.string()));
    document["measurement"] = measurementJson(measurement);
    writeBytesAtomically(path.string(), document.dump(2) + "\n");
}

std::string provenanceReference(const json& provenance)
{
    return provenance.contains("reference") && provenance["reference"].is_string() ? provenance["reference"].get<std::string>()
                                                                                   : std::string();
}

std::string provenanceSource(const json& provenance) { return stringAt(provenance.value("source", json()), "path"); }

bool provenanceSourceUnchanged(const json& provenance)
{
    const std::string source = provenanceSource(provenance);
    std::error_code error;
    if (source.empty() || !fs::is_directory(source, error))
        return false;
    try {
        return json::parse(folderFingerprint(source).dump()) == provenance["source"].value("files", json());
    } catch (const std::exception&) {
        return false;
    }
}

std::string provenanceInputsText(const json& provenance)
{
    const json measurement = provenance.value("measurement", json());
    const json inputs = measurement.is_object() ? measurement.value("inputs", json()) : json();
    if (!inputs.is_object())
        return "inputs not recorded";
    if (inputs.contains("squad"))
        return "the SQuAD file " + stringAt(inputs, "squad") +
               (inputs.value("max_samples", 0) > 0 ? " (first " + std::to_string(inputs.value("max_samples", 0)) + " questions)" : "");
    if (inputs.contains("question"))
        return "the question \"" + stringAt(inputs, "question") + "\" on its context";
    if (const std::string task = taskInputsText(inputs.value("task", json())); !task.empty())
        return task;
    if (inputs.contains("text"))
        return "the text \"" + stringAt(inputs, "text") + "\"" +
               (inputs.contains("pair") ? " with the pair \"" + stringAt(inputs, "pair") + "\"" : std::string());
    if (inputs.contains("texts")) {
        const json rows = inputs["rows"];
        return "the texts file " + stringAt(inputs, "texts") +
               (rows.is_number_unsigned() ? " (" + std::to_string(rows.get<std::size_t>()) + " rows)" : std::string());
    }
    if (inputs.contains("input_ids"))
        return "the given input ids";
    return "inputs not recorded";
}

std::string provenanceText(const json& provenance)
{
    std::string text = "Provenance (" + std::string(kProvenanceFileName) + ", " + stringAt(provenance, "written_by") + "):\n";
    const std::string source = provenanceSource(provenance);
    text += "  fixed from: " + source + (provenanceSourceUnchanged(provenance) ? " (unchanged since)" : " (gone or changed since)") + "\n";
    const std::string reference = provenanceReference(provenance);
    std::error_code error;
    text += "  reference: " + (reference.empty() ? std::string("none (the source's dequantized weights)")
                                                 : reference + (fs::is_directory(reference, error) ? "" : " (no longer there)")) + "\n";
    std::string kept;
    for (const json& name : provenance.value("kept_float", json::array()))
        kept += (kept.empty() ? "" : ", ") + (name.is_string() ? name.get<std::string>() : name.dump());
    text += "  kept float: " + (kept.empty() ? std::string("none") : kept) + " (" + stringAt(provenance, "weights") + " weights, " +
            stringAt(provenance, "weight_dtype") + ")\n";
    std::string consumers;
    for (const json& name : provenance.value("written_for", json::array()))
        consumers += (consumers.empty() ? "" : ", ") + (name.is_string() ? name.get<std::string>() : name.dump());
    text += "  written for: " + (consumers.empty() ? std::string("not recorded") : consumers) + "\n";
    const json measurement = provenance.value("measurement", json());
    if (measurement.is_object()) {
        text += "  measured by the " + stringAt(measurement, "measured_by") + " on " + provenanceInputsText(provenance) + ":\n";
        text += "    before: " + sideText(measurement.value("before", json())) + "\n";
        text += "    after:  " + sideText(measurement.value("after", json())) + "\n";
    } else {
        text += "  measured: not recorded\n";
    }
    return text;
}

} // namespace scalescope
