#include "sensitivity_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/option_error.h"
#include "common/text_files.h"
#include "engine/open_backend.h"
#include "report/result_json.h"
#include "engine/encoder_model.h"
#include "plot_files.h"
#include "text_output.h"
#include "report/charts.h"
#include "tasks/sensitivity.h"
#include "tasks/sensitivity_words.h"
#include "tasks/squad_dataset.h"

namespace scalescope::cli {
namespace {

using json = nlohmann::json;

// An embedder's, a classifier's or a reranker's own measure of a run: "tau 0.67, order changed",
// "2 label flips", "cosine mean 0.998 min 0.991"; "" for other heads.
std::string sequenceMeasureText(const SensitivityMetrics& m)
{
    std::ostringstream text;
    text << std::fixed << std::setprecision(3);
    if (m.kendallTau)
        text << "tau " << *m.kendallTau << (m.sameOrder && !*m.sameOrder ? ", order changed" : ", same order");
    if (m.labelFlips)
        text << (text.tellp() > 0 ? ", " : "") << *m.labelFlips << " label flip" << (*m.labelFlips == 1 ? "" : "s");
    if (m.meanCosine && m.minCosine) // FP8 embeddings sit near 1: five places tell them apart
        text << (text.tellp() > 0 ? ", " : "") << std::setprecision(5) << "cosine mean " << *m.meanCosine << " min "
             << *m.minCosine;
    return text.str();
}

void printSensitivity(const SensitivityResult& r)
{
    std::cout << "Sensitivity (" << r.granularity << ") of the FP8 run vs " << terminalSafe(r.referenceLabel) << ", "
              << r.inputKind << " input"
              << (r.inputKind == "squad"   ? ", " + std::to_string(r.samples) + " questions"
                  : r.inputKind == "texts" ? ", " + std::to_string(r.samples) + " texts"
                                           : "")
              << ", " << r.forwards << " forward passes\n";
    std::cout << "Baseline: final SQNR " << decibelText(r.baseline.sqnrDb) << " dB, " << (r.baseline.agrees ? r.agreement.agrees : r.agreement.differs)
              << (r.inputKind == "squad" ? ", F1 " + decibelText(r.baseline.f1) : std::string())
              << (sequenceMeasureText(r.baseline).empty() ? "" : ", " + sequenceMeasureText(r.baseline)) << "\n\n";
    std::cout << "Spread: " << terminalSafe(r.spread.method) << "\n\n";
    // "=3": ties with rank 3 (within the spread), so its place among those is not meaningful.
    std::cout << std::left << std::setw(6) << "rank" << std::setw(56) << "module" << std::right << std::setw(12)
              << "float_one" << std::setw(12) << "fp8_one" << std::setw(11) << "recovered" << std::setw(11) << "lost alone"
              << "  cause\n";
    for (const SensitivityEntry& e : r.entries)
        std::cout << std::left << std::setw(6) << (e.tieRank ? sensitivityTieMark(e) : std::to_string(e.rank))
                  << std::setw(56) << e.module << std::right << std::setw(12) << decibelText(e.floatOne.sqnrDb)
                  << std::setw(12) << decibelText(e.fp8One.sqnrDb) << std::setw(11) << decibelText(e.recoveredDb)
                  << std::setw(11) << decibelText(e.lostAloneDb) << "  " << (e.cause ? e.cause->label : std::string())
                  << (sequenceMeasureText(e.floatOne).empty() ? "" : "  [float: " + sequenceMeasureText(e.floatOne) + "]")
                  << "\n";
    std::cout << "\nTarget: " << r.target << "\nSuggested float (" << r.suggestedFloat.size() << "):";
    for (const std::string& m : r.suggestedFloat)
        std::cout << "\n  " << m
                  << (std::find(r.suggestedTied.begin(), r.suggestedTied.end(), m) != r.suggestedTied.end() ? "  (tied)" : "");
    std::cout << (r.suggestedFloat.empty() ? " (none)" : "") << "\n" << terminalSafe(r.suggestionNote) << "\n";
    if (r.suggestionValidity) {
        std::cout << "Valid for:";
        for (std::size_t i = 0; i < r.suggestionValidity->consumers.size(); ++i)
            std::cout << (i ? ", " : " ") << r.suggestionValidity->consumers[i];
        std::cout << "\n" << r.suggestionValidity->sentence << "\n";
    }
    // In rank order, each unit's Linears whose error is beyond FP8 rounding (a unit of three or a
    // layer carries no cause of its own).
    for (const SensitivityEntry& e : r.entries)
        for (const SensitivityCause& c : r.causes)
            if (std::find(e.linears.begin(), e.linears.end(), c.module) != e.linears.end() && !c.explanation.empty() &&
                c.beyondFloor)
                std::cout << c.module << ": " << terminalSafe(c.explanation) << "\n";
}

} // namespace

int commandSensitivity(const Arguments& args)
{
    const std::string checkpointDir = args.positionals()[0];
    SensitivityInput input;
    int sources = readComparisonInput(args, input.single);
    if (args.has("squad"))
        ++sources;
    if (sources != 1)
        throw UsageError{"sensitivity needs exactly one of --question/--context, --text, --input-ids, --squad or --texts."};
    if (args.has("max-samples") && !args.has("squad") && !args.has("texts"))
        throw UsageError{"--max-samples applies only with --squad or --texts."};
    SensitivityOptions options;
    options.granularity = args.value("granularity", "linear");
    if (const std::string problem = granularityProblem(options.granularity); !problem.empty())
        throw UsageError{OptionError(TaskOption::Granularity, problem).messageNaming("--granularity")};
    if (auto t = args.floatValue("target-sqnr"))
        options.targetSqnrDb = *t;
    if (auto t = args.floatValue("target-f1-drop"))
        options.targetF1Drop = *t;
    options.run = runSettingsOption(args, ModeChoices::RunSide, DeviceChoices::One);
    input.maxSamples = static_cast<std::size_t>(args.intValue("max-samples", 0, 0, 100'000'000));
    if (args.has("format") && !args.has("plots"))
        throw UsageError{"--format applies only with --plots."};

    SquadDataset dataset;
    if (auto squad = args.value("squad")) {
        dataset = readSquadFile(*squad);
        input.squad = &dataset;
    }
    std::unique_ptr<InferenceBackend> run =
        openBackend(parseDeviceSpec(options.run.device), Checkpoint::open(checkpointDir), {}, cliRunnerOptions());
    std::unique_ptr<EncoderModel> reference;
    if (auto dir = args.value("reference"))
        reference = EncoderModel::load(*dir);
    Progress progress;
    progress.callback = [](double fraction, const std::string& stage) {
        std::fprintf(stderr, "\r%3d%% %-70.70s", int(100 * fraction), stage.c_str());
        std::fflush(stderr);
    };
    const SensitivityResult result = runSensitivity(*run, reference.get(), input, options, progress);
    std::fprintf(stderr, "\r%-76s\r", "");

    json document = sensitivityJson(result);
    document["checkpoint"] = checkpointDir;
    document["reference"] = reference ? json(*args.value("reference")) : json(nullptr);
    if (result.referenceIsStandIn)
        document["note"] = "No --reference was given, so dequant (dequantized weights, float activations) stands in for the reference.";
    if (auto plots = args.value("plots"))
        document["plots"] = writePlotFiles({sensitivityChart(result)}, *plots, args.value("format", "png"), document,
                                           "sensitivity", args.flag("force"));
    if (args.flag("json"))
        std::cout << jsonText(document) << std::endl;
    else
        printSensitivity(result);
    if (!result.suggestionReached && result.complete)
        std::cerr << "scalescope-cli sensitivity: " << terminalSafe(result.suggestionNote) << "\n";
    if (!result.complete) {
        std::cerr << "scalescope-cli sensitivity: " << result.stoppedReason << "\n";
        return 1;
    }
    return 0;
}

} // namespace scalescope::cli
