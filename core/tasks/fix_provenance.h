#pragma once
// What a fixed checkpoint (keep-float's copy) was verified against, written beside its files as
// scalescope_provenance.json: the source checkpoint (its path, and each file's size and SHA-256,
// so a later reader can tell whether it is still the same), the float reference the numbers were
// measured against, the Linears kept float and the runtimes the copy was written for, the inputs
// of the measurement with its before/after numbers, and the tool's version. keep-float writes it
// (CLI and GUI alike), `inspect` shows it, and the GUI opens a fix against its recorded reference.
// Torch-free. Errors: scalescope::Error, one sentence naming the file.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope {

inline const char* const kProvenanceFileName = "scalescope_provenance.json";

// One side of a measurement: the final output's SQNR against the reference, and whether the
// answer (or the outputs) agree with the reference's.
struct FixSide {
    std::optional<double> sqnrDb;
    std::optional<bool> agrees;
};

// How a fix was verified, as the caller measured it.
struct FixMeasurement {
    std::string measuredBy;      // "sensitivity sweep", "keep-float rerun"
    nlohmann::json inputs;       // {"question","context"}, {"text","pair"?}, {"input_ids"}, {"texts","sha256","rows"} or {"squad","sha256","max_samples"}; null when unknown
    std::string target;          // the sweep's target, "" when none
    FixSide before;              // the source as it is
    FixSide after;               // with the Linears kept float
    bool known() const { return !measuredBy.empty(); }
};

// What keep-float records; the writer fills in the fingerprint and the time-independent rest.
struct FixProvenance {
    std::string sourceDir;
    std::string referenceDir;              // "" = the source's dequantized weights
    std::vector<std::string> keptFloat;    // exact Linear names
    std::vector<std::string> consumers;    // written for: "aiu fused", "aiu unfused", "vllm"
    std::string weightDtype;               // "F32", "BF16", ...
    std::string toolVersion;               // "0.1.0"
    FixMeasurement measurement;
};

// The document written to DIR/scalescope_provenance.json (the source's fingerprint read now).
nlohmann::ordered_json fixProvenanceJson(const FixProvenance& provenance);

// Every regular file of a checkpoint folder: name, size in bytes and SHA-256, by name.
nlohmann::ordered_json folderFingerprint(const std::string& dir);

// DIR/scalescope_provenance.json as written, nullopt when the folder has none. A file that is not
// a provenance document throws Error naming it.
std::optional<nlohmann::json> readFixProvenance(const std::string& dir);

// Replaces the measurement of DIR's provenance (the CLI's rerun on the checkpoint as written);
// the file is rewritten atomically.
void recordFixMeasurement(const std::string& dir, const FixMeasurement& measurement);

// The recorded reference folder ("" when the fix was measured against dequantized weights).
std::string provenanceReference(const nlohmann::json& provenance);
// The recorded source checkpoint folder.
std::string provenanceSource(const nlohmann::json& provenance);
// Whether the source folder still holds the files the fingerprint recorded (sizes and SHA-256).
bool provenanceSourceUnchanged(const nlohmann::json& provenance);

// The measurement's inputs in words: "the question \"...\" on its context", "the SQuAD file X (first 50)".
std::string provenanceInputsText(const nlohmann::json& provenance);
// inspect's "Provenance" lines (each ends with a newline).
std::string provenanceText(const nlohmann::json& provenance);

} // namespace scalescope
