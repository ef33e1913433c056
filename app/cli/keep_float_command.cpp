#include "keep_float_command.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "engine/encoder_model.h"
#include "io/sha256.h"
#include "report/result_json.h"
#include "tasks/compare_runs.h"
#include "tasks/keep_float.h"
#include "text_output.h"

namespace scalescope::cli {
namespace {

using json = nlohmann::json;

// --consumer aiu|vllm|all (default all) and --unfused (the AIU loads with fused_weights=False).
KeepFloatConsumers readConsumers(const Arguments& args)
{
    const std::string consumer = args.value("consumer", "all");
    if (consumer != "aiu" && consumer != "vllm" && consumer != "all")
        throw UsageError{"--consumer must be aiu, vllm or all, not \"" + consumer + "\"."};
    KeepFloatConsumers consumers;
    consumers.aiu = consumer != "vllm";
    consumers.vllm = consumer != "aiu";
    consumers.aiuUnfused = args.flag("unfused");
    return consumers;
}

// What the rerun measured, as the provenance records it: a texts file by its path, SHA-256 and row
// count (the rows themselves may be many), a pair with its second text.
json rerunInputs(const ComparisonInput& input, const Arguments& args)
{
    if (!input.question.empty())
        return {{"question", input.question}, {"context", input.context}};
    if (!input.text.empty())
        return input.pair.empty() ? json{{"text", input.text}} : json{{"text", input.text}, {"pair", input.pair}};
    if (auto path = args.value("texts"))
        return {{"texts", *path}, {"sha256", sha256Hex(readFileToString(*path))}, {"rows", input.texts.size()}};
    return {{"input_ids", input.inputIds}};
}

FixSide fixSide(const ComparisonResult& result)
{
    FixSide side;
    side.sqnrDb = result.finalLogits.sqnrDb;
    if (result.qa && !result.qa->windows.empty())
        side.agrees = result.qa->sameBestAnswer;
    return side;
}

// What each runtime will do with the copy as written: inspect's verdicts, one line.
std::string consumersLine(const std::vector<ConsumerReport>& reports)
{
    std::string line;
    for (const ConsumerReport& report : reports) {
        const std::string loadings = aiuLoadingsText(report);
        line += (line.empty() ? "" : "; ") + std::string(consumerName(report.consumer)) + ": " + verdictName(report.verdict) +
                (loadings.empty() ? "" : " (" + loadings + ")");
    }
    return line;
}

} // namespace

int commandKeepFloatForConsumers(const Arguments& args)
{
    const std::string checkpointDir = args.positionals()[0];
    const std::string destinationDir = args.positionals()[1];
    ComparisonInput input;
    if (readComparisonInput(args, input) > 1)
        throw UsageError{"keep-float takes at most one of --question/--context, --text, --input-ids or --texts for its rerun."};
    if (args.has("max-samples") && !args.has("texts"))
        throw UsageError{"--max-samples applies only with --texts."};
    KeepFloatOptions options;
    options.modules = parseNameList(args.required("modules"));
    options.referenceDir = args.value("reference", "");
    options.overwrite = args.flag("force");
    options.consumers = readConsumers(args);
    options.perChannelWeights = args.flag("per-channel-weights");
    options.toolVersion = SCALESCOPE_VERSION;
    if (options.modules.empty())
        throw UsageError{"--modules names no Linear; give exact Linear names separated by commas."};
    const KeepFloatResult written = keepFloat(checkpointDir, destinationDir, options);

    // Before and after against the same yardstick (the reference, or the source's dequant run);
    // "after" is the checkpoint as written, loaded back from DST.
    std::unique_ptr<EncoderModel> before = EncoderModel::load(checkpointDir);
    std::unique_ptr<EncoderModel> after = EncoderModel::load(destinationDir);
    std::unique_ptr<EncoderModel> reference;
    if (!options.referenceDir.empty())
        reference = EncoderModel::load(options.referenceDir);
    if (input.question.empty() && input.text.empty() && input.inputIds.empty() && input.texts.empty())
        input.text = "The quick brown fox jumps over the lazy dog.";
    const ComparisonResult b = compareRuns(*before, reference.get(), input);
    const ComparisonResult a = compareRuns(*after, reference ? reference.get() : before.get(), input);
    FixMeasurement measurement;
    measurement.measuredBy = "keep-float rerun";
    measurement.inputs = rerunInputs(input, args);
    measurement.before = fixSide(b);
    measurement.after = fixSide(a);
    recordFixMeasurement(destinationDir, measurement);

    json document = {{"checkpoint", checkpointDir},
                     {"destination", destinationDir},
                     {"modules", options.modules},
                     {"weights", written.weightSource},
                     {"weight_dtype", dtypeName(written.weightDtype)},
                     {"consumer", args.value("consumer", "all")},
                     {"unfused", written.writtenFor.aiuUnfused},
                     {"per_channel_weights", options.perChannelWeights},
                     {"loading_note", written.loadingNote.empty() ? json(nullptr) : json(written.loadingNote)},
                     {"ignore", written.ignore},
                     {"rewritten_files", written.rewrittenFiles},
                     {"reference", reference ? json(options.referenceDir) : json(nullptr)},
                     {"before", {{"sqnr_db", finiteOrNull(b.finalLogits.sqnrDb)}}},
                     {"after", {{"sqnr_db", finiteOrNull(a.finalLogits.sqnrDb)}}},
                     {"recipe", llmCompressorRecipe(written.ignore)},
                     {"consumers", consumersJson(written.consumers)},
                     {"provenance", *readFixProvenance(destinationDir)}};
    if (b.qa && !b.qa->windows.empty()) {
        document["before"]["agrees"] = b.qa->sameBestAnswer;
        document["after"]["agrees"] = a.qa->sameBestAnswer;
    }
    if (args.flag("json")) {
        std::cout << jsonText(document) << std::endl;
        return 0;
    }
    std::cout << "Wrote " << terminalSafe(destinationDir) << ": " << options.modules.size() << " Linear(s) float ("
              << terminalSafe(written.weightSource) << " weights in " << dtypeName(written.weightDtype)
              << ", listed by HF and FMS name); rewritten:";
    for (const std::string& f : written.rewrittenFiles)
        std::cout << " " << terminalSafe(f);
    std::cout << "; every other file copied unchanged.\n";
    if (options.perChannelWeights)
        std::cout << "Per-tensor weight scales stored per output channel (the same value on every row, so the same "
                     "numbers), as the AIU's fused q/k/v loading takes them.\n";
    std::cout << "Final SQNR vs " << (reference ? "the reference" : "the source's dequant run") << ": before "
              << decibelText(b.finalLogits.sqnrDb) << " dB, after " << decibelText(a.finalLogits.sqnrDb) << " dB\n"
              << (written.loadingNote.empty() ? "" : terminalSafe(written.loadingNote) + "\n")
              << "What each runtime will do with it (as inspect says): " << consumersLine(written.consumers) << "\n"
              << "Recorded what it was verified against in " << terminalSafe(destinationDir) << "/" << kProvenanceFileName << "\n\n"
              << llmCompressorRecipe(written.ignore);
    return 0;
}

} // namespace scalescope::cli
