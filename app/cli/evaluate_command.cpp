#include "evaluate_command.h"
#include "task_commands.h"

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "device/backend_pool.h"
#include "common/error.h"
#include "common/text_files.h"
#include "engine/open_backend.h"
#include "interrupt_flag.h"
#include "io/atomic_write.h"
#include "output_files.h"
#include "report/csv.h"
#include "report/result_json.h"
#include "engine/encoder_model.h"
#include "tasks/evaluate.h"
#include "tasks/squad_dataset.h"

namespace scalescope::cli {
namespace {

using json = nlohmann::json;

constexpr int kMaxSamples = 100'000'000;
constexpr std::size_t kDisagreementsShownAsText = 20;

std::string answerText(const QaAnswer& answer)
{
    return answer.isNull ? std::string() : answer.text;
}

std::string csvNumber(double value)
{
    std::ostringstream out;
    out << std::setprecision(6) << value;
    return out.str();
}

std::string evaluationCsv(const EvaluationResult& r)
{
    std::string out = "id,question,golds,run_answer,reference_answer,run_exact,run_f1,reference_exact,reference_f1,logits_sqnr_db,agree\r\n";
    for (const EvaluatedExample& e : r.examples) {
        std::string golds;
        for (std::size_t i = 0; i < e.example.golds.size(); ++i)
            golds += (i ? " | " : "") + e.example.golds[i];
        out += csvField(e.example.id, true) + "," + csvField(e.example.question, true) + "," + csvField(golds, true) + "," +
               csvField(answerText(e.runAnswer), true) + "," + csvField(answerText(e.referenceAnswer), true) + "," +
               csvNumber(e.run.exact) + "," + csvNumber(e.run.f1) + "," + csvNumber(e.reference.exact) + "," +
               csvNumber(e.reference.f1) + "," + csvNumber(e.logits.sqnrDb) + "," + (e.agree ? "1" : "0") + "\r\n";
    }
    return out;
}

std::string quoted(const QaAnswer& answer)
{
    return answer.isNull ? std::string("(no answer)") : "\"" + answer.text + "\"";
}

void printScoreRows(const std::string& label, const SquadScores& s)
{
    const auto row = [](const std::string& name, double exact, double f1, std::size_t total) {
        std::cout << "  " << std::left << std::setw(22) << name << std::right << std::fixed << std::setprecision(2)
                  << std::setw(9) << exact << std::setw(9) << f1 << std::setw(8) << total << "\n";
    };
    row(label, s.exact, s.f1, s.total);
    if (s.hasAnsTotal > 0)
        row("  HasAns", s.hasAnsExact, s.hasAnsF1, s.hasAnsTotal);
    if (s.noAnsTotal > 0)
        row("  NoAns", s.noAnsExact, s.noAnsF1, s.noAnsTotal);
}

std::string formatSqnr(double db)
{
    if (!std::isfinite(db))
        return db > 0 ? "inf" : "-inf";
    std::ostringstream out;
    out << std::fixed << std::setprecision(1) << db;
    return out.str();
}

// "3 questions had inf/NaN in the fp16 run; it starts at: ..." (nothing when every output was finite).
void printNonFiniteSummary(const EvaluationResult& r)
{
    if (r.nonFiniteQuestions == 0)
        return;
    std::cout << r.nonFiniteQuestions << " question(s) had inf/NaN outputs in the " << r.runLabel
              << " run; where it starts:";
    for (const NonFiniteStart& start : r.nonFiniteStarts)
        std::cout << "\n  " << terminalSafe(start.module) << ": " << start.questions << " question(s)";
    std::cout << "\n";
}

void printText(const EvaluationResult& r)
{
    if (!r.note.empty())
        std::cout << "Note: " << r.note << "\n";
    std::cout << "SQuAD " << (r.squadV2 ? "v2.0" : "v1.1") << " (" << r.datasetPath << "): " << r.examples.size()
              << " of " << r.questionsSelected << " selected questions evaluated";
    if (r.questionsSelected != r.questionsInFile)
        std::cout << " (" << r.questionsInFile << " in the file)";
    std::cout << ", " << r.skipped.size() << " skipped.\n";
    std::cout << "Windows of " << r.qa.maxSeqLen << " tokens, stride " << r.qa.docStride << ", batches of "
              << r.batchSize << " windows";
    if (r.qa.nullThreshold)
        std::cout << ", null threshold " << *r.qa.nullThreshold;
    std::cout << ".\n\n";
    std::cout << "  " << std::left << std::setw(22) << "" << std::right << std::setw(9) << "exact" << std::setw(9)
              << "F1" << std::setw(8) << "total" << "\n";
    printScoreRows(r.runLabel, r.runScores);
    printScoreRows(r.referenceLabel, r.referenceScores);
    std::cout << "\nAgreement: " << std::fixed << std::setprecision(1) << 100.0 * r.agreement << "% (" << r.agreeing
              << " of " << r.examples.size() << " questions get the same answer from both).\n";
    std::cout << "Throughput: " << std::setprecision(1) << r.questionsPerSecond << " questions/s (" << r.examples.size()
              << " questions in " << std::setprecision(1) << r.seconds << " s; forward " << std::setprecision(0)
              << r.runForwardMs << " ms " << r.runLabel << ", " << r.referenceForwardMs << " ms reference).\n";
    printNonFiniteSummary(r);

    for (const SkippedExample& s : r.skipped)
        std::cout << "Skipped " << terminalSafe(s.id) << ": " << terminalSafe(s.reason) << "\n";

    if (!r.disagreements.empty()) {
        std::cout << "\nDisagreements: " << r.disagreements.size() << " (per-layer SQNR for the first "
                  << r.detailLimit << " only, to bound the cost):\n";
        const std::size_t shown = std::min(r.disagreements.size(), kDisagreementsShownAsText);
        for (std::size_t k = 0; k < shown; ++k) {
            const Disagreement& d = r.disagreements[k];
            const EvaluatedExample& e = r.examples[d.example];
            std::string golds;
            for (std::size_t i = 0; i < e.example.golds.size(); ++i)
                golds += (i ? " | " : "") + e.example.golds[i];
            std::cout << "  " << terminalSafe(e.example.id) << "  " << terminalSafe(e.example.question) << "\n"
                      << "    gold: " << (golds.empty() ? "(no answer)" : terminalSafe(golds)) << "\n"
                      << "    " << r.runLabel << ": " << terminalSafe(quoted(e.runAnswer)) << " (EM " << std::setprecision(0)
                      << e.run.exact << ", F1 " << std::setprecision(2) << e.run.f1 << ")   reference: "
                      << terminalSafe(quoted(e.referenceAnswer)) << " (EM " << std::setprecision(0) << e.reference.exact << ", F1 "
                      << std::setprecision(2) << e.reference.f1 << ")\n";
            if (d.detailed) {
                std::cout << "    SQNR dB:";
                for (const CapturePointMetrics& p : d.layers)
                    std::cout << " " << (p.layer < 0 ? std::string("emb") : "L" + std::to_string(p.layer)) << " "
                              << formatSqnr(p.metrics.sqnrDb);
                std::cout << ", logits " << formatSqnr(d.finalLogits.sqnrDb) << "\n";
            } else if (!d.detailError.empty()) {
                std::cout << "    per-layer comparison failed: " << d.detailError << "\n";
            }
        }
        if (shown < r.disagreements.size())
            std::cout << "  ... " << r.disagreements.size() - shown << " more (see --json or --csv).\n";
    }
}

// What would make the CSV fail at the end, found before the run.

// Writes the CSV; returns the reason it could not be written, or "".
std::string writeCsv(const std::string& csvPath, const EvaluationResult& result, bool force)
{
    try {
        writeBytesAtomically(csvPath, evaluationCsv(result), force);
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

// Devices of a pool that failed during the run (their batches ran on the others).
std::vector<std::string> deviceFailures(const InferenceBackend& run)
{
    const auto* pool = dynamic_cast<const BackendPool*>(&run);
    return pool ? pool->retirements() : std::vector<std::string>();
}

void printResults(const EvaluationResult& result, const InferenceBackend& run, const std::string& checkpointDir,
                  const std::string& referenceDir, const std::string& csvPath, const std::string& csvError, bool asJson)
{
    for (const std::string& failure : deviceFailures(run))
        std::cerr << "scalescope-cli evaluate: a device failed and its batches ran on the others: "
                  << terminalSafe(failure) << "\n";
    if (asJson) {
        json document = evaluationJson(result, checkpointDir, referenceDir);
        document["device"] = run.deviceName();
        if (!deviceFailures(run).empty())
            document["device_failures"] = deviceFailures(run);
        if (!csvPath.empty())
            document["csv"] = csvError.empty() ? json(csvPath) : json(nullptr);
        if (!csvError.empty())
            document["csv_error"] = csvError;
        std::cout << jsonText(document) << std::endl;
        return;
    }
    printText(result);
    if (!csvPath.empty() && csvError.empty())
        std::cout << "\nWrote " << result.examples.size() << " rows to " << csvPath << ".\n";
}


EvaluationOptions squadEvaluationOptions(const Arguments& args)
{
    EvaluationOptions options;
    options.qa.maxSeqLen = args.intValue("max-seq-len", 384, 8, 100000);
    options.qa.docStride = args.intValue("doc-stride", 128, 0, 100000);
    options.qa.maxAnswerLen = args.intValue("max-answer-len", 30, 1, 100000);
    options.qa.nullThreshold = args.floatValue("null-threshold");
    options.batchSize = args.intValue("batch-size", 16, 1, 4096);
    options.maxSamples = static_cast<std::size_t>(args.intValue("max-samples", 0, 0, kMaxSamples));
    options.runs.run = runSettingsOption(args, ModeChoices::RunSide, DeviceChoices::Several);
    return options;
}

} // namespace

int commandEvaluate(const Arguments& args)
{
    const int datasets = int(args.has("squad")) + int(args.has("sts")) + int(args.has("retrieval")) +
                         int(args.has("classification"));
    if (datasets != 1)
        throw UsageError{"evaluate needs exactly one of --squad FILE, --sts FILE, --retrieval DIR or --classification FILE."};
    if (!args.has("squad"))
        return commandEvaluateTask(args);
    const std::string checkpointDir = args.positionals()[0];
    const std::string squadPath = args.required("squad");
    const std::string referenceDir = args.value("reference", "");
    const std::string csvPath = args.value("csv", "");

    EvaluationOptions options = squadEvaluationOptions(args);

    // Refuse what would fail at the end before spending the evaluation's time.
    if (args.has("csv")) // an empty path too, which is refused rather than ignored
        checkOutputFileTarget(csvPath, args.flag("force"));

    const SquadDataset dataset = readSquadFile(squadPath);
    // The run goes to --device (several make a pool that splits each batch); a float reference runs in-process on CPU. Without --reference the
    // run alternates fp8 and dequant per batch on the device (the AIU runner keeps both loaded).
    std::unique_ptr<InferenceBackend> run = openBackends(deviceOptions(args), Checkpoint::open(checkpointDir), {}, cliRunnerOptions());
    std::unique_ptr<EncoderModel> reference;
    if (!referenceDir.empty())
        reference = EncoderModel::load(referenceDir);

    InterruptFlag interrupt;
    Progress progress;
    progress.cancel = interrupt.flag();
    bool progressLineOpen = false;
    options.onUpdate = [&](const EvaluationUpdate& update) {
        char line[128];
        std::snprintf(line, sizeof line, "evaluated %zu/%zu questions (%.1f q/s)", update.done, update.total,
                      update.questionsPerSecond);
        std::fprintf(stderr, "\r%-60s", line);
        std::fflush(stderr);
        progressLineOpen = true;
    };
    progress.callback = [&](double, const std::string& stage) {
        if (stage.rfind("Per-layer", 0) != 0)
            return; // the answering pass reports through onUpdate, with its rate
        std::fprintf(stderr, "\r%-60s", stage.c_str());
        std::fflush(stderr);
        progressLineOpen = true;
    };

    EvaluationResult result;
    try {
        result = evaluateSquad(*run, reference.get(), dataset, options, progress);
    } catch (...) {
        if (progressLineOpen)
            std::fputc('\n', stderr);
        throw;
    }
    if (progressLineOpen)
        std::fputc('\n', stderr);

    // A CSV that fails now (disk full, a folder or link put there during the run) must not take the
    // finished evaluation with it: the results are still printed, and the failure is reported after.
    const std::string csvError = csvPath.empty() ? std::string() : writeCsv(csvPath, result, args.flag("force"));
    printResults(result, *run, checkpointDir, referenceDir, csvPath, csvError, args.flag("json"));
    if (!csvError.empty()) {
        std::cerr << "scalescope-cli evaluate: " << terminalSafe(csvError)
                  << " The results above are complete; only the CSV is missing.\n";
        return 1;
    }
    if (!result.complete) {
        std::cerr << "scalescope-cli evaluate: " << result.stoppedReason
                  << (result.stoppedReason.empty() || result.stoppedReason.back() == '.' ? "" : ".")
                  << " The results above cover the finished questions only.\n";
        return 1;
    }
    return 0;
}

} // namespace scalescope::cli
