#include "check_command.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "device/checkpoint_manifest.h"
#include "engine/encoder_model.h"
#include "engine/open_backend.h"
#include "io/atomic_write.h"
#include "interrupt_flag.h"
#include "output_files.h"
#include "plot_files.h"
#include "report/check_report.h"
#include "report/result_json.h"
#include "tasks/device_check.h"

namespace scalescope::cli {
namespace {

using json = nlohmann::json;

constexpr int kMaxSamples = 100'000'000;

// The inputs both commands take: --squad FILE [--max-samples N] or --texts FILE.
CheckInputSet readCheckInputs(const Arguments& args)
{
    if (args.has("squad") == args.has("texts"))
        throw UsageError{"give exactly one of --squad FILE or --texts FILE."};
    const auto maxSamples = std::size_t(args.intValue("max-samples", 0, 0, kMaxSamples));
    return args.has("squad") ? squadCheckInputs(args.required("squad"), maxSamples)
                             : textCheckInputs(args.required("texts"), maxSamples);
}

CheckMeasureOptions measureOptions(const Arguments& args, const std::atomic<bool>* cancel, ForwardCache* cache)
{
    CheckMeasureOptions options;
    options.cache = args.flag("no-cache") ? nullptr : cache;
    options.qa.maxSeqLen = args.intValue("max-seq-len", 384, 8, 100000);
    options.qa.docStride = args.intValue("doc-stride", 128, 0, 100000);
    options.qa.maxAnswerLen = args.intValue("max-answer-len", 30, 1, 100000);
    options.qa.nullThreshold = args.floatValue("null-threshold");
    options.progress.cancel = cancel;
    return options;
}

// Progress on stderr, one line rewritten in place; the line is closed before anything else prints.
class ProgressLine {
public:
    void attach(Progress& progress)
    {
        progress.callback = [this](double, const std::string& stage) {
            std::fprintf(stderr, "\r%-70s", stage.c_str());
            std::fflush(stderr);
            open_ = true;
        };
    }
    void close()
    {
        if (open_)
            std::fputc('\n', stderr);
        open_ = false;
    }
    ~ProgressLine() { close(); }

private:
    bool open_ = false;
};

std::string utcDate()
{
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buffer;
}

std::vector<std::string> runNames(const Arguments& args, const std::string& option, const std::string& fallback)
{
    std::vector<std::string> names = parseNameList(args.value(option, fallback));
    if (names.empty())
        throw UsageError{"--" + option + " names no run."};
    return names;
}

json cacheJson(const ForwardCache& cache, const CheckMeasureOptions& options)
{
    if (!options.cache)
        return nullptr;
    return {{"folder", cache.folder()}, {"max_mb", cache.maxBytes() >> 20}, {"hits", cache.hits()},
            {"misses", cache.misses()}, {"problem", cache.problem().empty() ? json(nullptr) : json(cache.problem())}};
}

void reportCacheProblem(const ForwardCache& cache, const char* command)
{
    if (!cache.problem().empty())
        std::cerr << "scalescope-cli " << command << ": note: the check cache is off for this run: "
                  << terminalSafe(cache.problem()) << "\n";
}

std::string metricText(double value, int precision = 2)
{
    if (std::isnan(value))
        return "-";
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    std::ostringstream out;
    out << std::fixed << std::setprecision(precision) << value;
    return out.str();
}

void printCheckText(const CheckResult& result)
{
    const TwinCheck& primary = result.twins.front();
    std::cout << (result.passed ? "PASS: " : "FAIL: ") << result.verdictSentence << "\n";
    for (const std::string& reason : result.reasons)
        std::cout << "  " << reason << "\n";
    std::cout << "\nRun: " << result.measurements.runDescription << "\n";
    for (const TwinCheck& twin : result.twins)
        std::cout << "Twin " << twin.twin << ": " << twin.description << "\n";
    std::cout << "Inputs measured: " << result.measurements.measuredInputs() << " (skipped "
              << result.measurements.inputs.size() - result.measurements.measuredInputs() << ")\n\n";
    std::cout << std::left << std::setw(60) << "point (against " + primary.twin + ")" << std::right << std::setw(10)
              << "fail %" << std::setw(8) << "starts" << std::setw(12) << "median dB" << std::setw(12) << "worst dB"
              << "  best twin\n";
    for (std::size_t p = 0; p < primary.points.size(); ++p) {
        const PointCheck& point = primary.points[p];
        std::cout << std::left << std::setw(60) << terminalSafe(abbreviatedText(point.point, 58)) << std::right
                  << std::setw(10) << (point.checked ? metricText(100 * point.failureRate, 1) : std::string("n/a"))
                  << std::setw(8) << point.departuresStartHere << std::setw(12)
                  << metricText(point.median[std::size_t(CheckMetric::SqnrDb)]) << std::setw(12)
                  << metricText(point.worst[std::size_t(CheckMetric::SqnrDb)]) << "  " << result.bestTwinPerPoint[p]
                  << (point.failed ? "  FAIL" : "") << "\n";
    }
    if (result.runScores) {
        std::cout << "\nF1: run " << metricText(result.runScores->f1);
        for (const TwinCheck& twin : result.twins)
            if (twin.twinScores && twin.f1Difference)
                std::cout << ", " << twin.twin << " " << metricText(twin.twinScores->f1) << " (difference "
                          << metricText(twin.f1Difference->mean) << ", 95 % interval " << metricText(twin.f1Difference->low)
                          << " to " << metricText(twin.f1Difference->high) << ")";
        std::cout << "\n";
    }
}

CheckGate checkGate(const Arguments& args)
{
    CheckGate gate;
    if (const auto rate = args.floatValue("max-failure-rate")) {
        if (!(*rate >= 0 && *rate <= 1))
            throw UsageError{"--max-failure-rate must be a fraction from 0 to 1 (0.01 is 1 %)."};
        gate.maxFailureRate = *rate;
    }
    if (const auto drop = args.floatValue("max-f1-drop")) {
        if (!(*drop >= 0 && *drop <= 100))
            throw UsageError{"--max-f1-drop must be F1 points from 0 to 100."};
        gate.maxF1Drop = *drop;
    }
    return gate;
}

// The run under test: the checkpoint on the devices (opened into `device`), or without devices
// the checkpoint's model on this CPU.
CheckRun runUnderTest(const Arguments& args, const std::string& checkpointDir, const std::vector<DeviceSpec>* devices,
    const CheckRunSources& sources, std::unique_ptr<InferenceBackend>& device)
{
    CheckRun run;
    run.settings = runSettingsOption(args, ModeChoices::RunSide, DeviceChoices::Several);
    const std::string runName = run.settings.label();
    if (devices) {
        device = openBackends(*devices, Checkpoint::open(checkpointDir), {}, cliRunnerOptions());
        run.name = "device";
        run.backend = device.get();
        run.description = device->deviceName() + " running " + checkpointDir + " as " + runName;
    } else {
        run.name = runName;
        run.backend = sources.checkpoint;
        run.floatWeightsFrom = floatWeightSource(sources.reference);
        run.description = "the " + run.name + " run of " + checkpointDir + " on this CPU";
    }
    return run;
}

// The thresholds read from --thresholds, or without them a noise floor measured now; says where
// they came from.
std::string settleThresholds(std::optional<ThresholdSet>& thresholds, const Arguments& args,
    const CheckRunSources& sources, const CheckInputSet& inputs, const CheckMeasureOptions& options,
    const std::string& checkpointDir)
{
    if (!thresholds) {
        thresholds = measureNoiseFloor(sources, {}, inputs, options);
        return "measured now: " + thresholds->provenance["run_descriptions"] + " on the same inputs";
    }
    const auto recorded = thresholds->provenance.find("checkpoint_sha256");
    if (recorded != thresholds->provenance.end() && recorded->second != CheckpointManifest::of(checkpointDir).hash)
        std::cerr << "scalescope-cli check: note: the thresholds were measured on another checkpoint ("
                  << terminalSafe(thresholds->provenance["checkpoint"]) << ").\n";
    return "read from " + *args.value("thresholds");
}

// The --junit report and the --plots charts, each named in the document.
void writeCheckFiles(json& document, const CheckResult& result, const Arguments& args, const std::string& junitPath)
{
    if (!junitPath.empty()) {
        writeBytesAtomically(junitPath, checkJunitXml(result), args.flag("force"));
        document["junit"] = junitPath;
    }
    if (const auto plots = args.value("plots")) {
        std::vector<ChartData> charts = {checkFailureRateChart(result), checkDepartureStartChart(result)};
        if (result.runScores)
            charts.push_back(checkF1IntervalChart(result));
        document["plots"]
            = writePlotFiles(charts, *plots, args.value("format", "png"), document, "check", args.flag("force"));
    }
}

} // namespace

int commandNoiseFloor(const Arguments& args)
{
    const std::string checkpointDir = args.positionals()[0];
    const std::string outputPath = args.required("output");
    const std::string referenceDir = args.value("reference", "");
    const std::vector<std::string> runs = runNames(args, "runs", "reference,reference-fp16");
    checkOutputFileTarget(outputPath, args.flag("force"));
    const CheckInputSet inputs = readCheckInputs(args);

    std::unique_ptr<EncoderModel> model = EncoderModel::load(checkpointDir);
    std::unique_ptr<EncoderModel> reference;
    if (!referenceDir.empty())
        reference = EncoderModel::load(referenceDir);
    const CheckRunSources sources{model.get(), reference.get()};

    InterruptFlag interrupt;
    ForwardCache cache;
    CheckMeasureOptions options = measureOptions(args, interrupt.flag(), &cache);
    ProgressLine progressLine;
    progressLine.attach(options.progress);
    ThresholdSet thresholds = measureNoiseFloor(sources, runs, inputs, options);
    progressLine.close();
    reportCacheProblem(cache, "noise-floor");
    thresholds.provenance["checkpoint"] = checkpointDir;
    thresholds.provenance["checkpoint_sha256"] = CheckpointManifest::of(checkpointDir).hash;
    if (reference) {
        thresholds.provenance["reference"] = referenceDir;
        thresholds.provenance["reference_sha256"] = CheckpointManifest::of(referenceDir).hash;
    }
    thresholds.provenance["program"] = "scalescope-cli " SCALESCOPE_VERSION;
    thresholds.provenance["created"] = utcDate();
    const json document = thresholdsJson(thresholds);
    writeBytesAtomically(outputPath, jsonText(document) + "\n", args.flag("force"));

    if (args.flag("json")) {
        std::cout << jsonText({{"output", outputPath}, {"points", thresholds.points.size()},
                               {"inputs", thresholds.provenance["inputs_measured"]}, {"thresholds", document}})
                  << std::endl;
    } else {
        std::cout << "Wrote thresholds for " << thresholds.points.size() << " points, measured between "
                  << thresholds.provenance["run_descriptions"] << " over " << thresholds.provenance["inputs_measured"]
                  << " inputs, to " << outputPath << ".\n";
    }
    return 0;
}

int commandCheck(const Arguments& args)
{
    const std::string checkpointDir = args.positionals()[0];
    const std::string referenceDir = args.value("reference", "");
    const std::vector<DeviceSpec> devices = deviceOptions(args);
    const bool onDevice = !(devices.size() == 1 && devices.front().isCpu());
    const std::vector<std::string> against = runNames(args, "against", onDevice ? "emulation" : "reference");
    const CheckGate gate = checkGate(args);
    const std::string junitPath = args.value("junit", "");
    if (args.has("junit")) // an empty path too, which is refused rather than ignored
        checkOutputFileTarget(junitPath, args.flag("force"));
    const CheckInputSet inputs = readCheckInputs(args);
    std::optional<ThresholdSet> thresholds;
    if (const auto path = args.value("thresholds"))
        thresholds = readThresholdsFile(*path);

    std::unique_ptr<EncoderModel> model = EncoderModel::load(checkpointDir);
    std::unique_ptr<EncoderModel> reference;
    if (!referenceDir.empty())
        reference = EncoderModel::load(referenceDir);
    const CheckRunSources sources{model.get(), reference.get()};
    std::vector<CheckRun> twins;
    for (const std::string& name : against)
        twins.push_back(namedCheckRun(name, sources, TaskOption::Against));
    std::unique_ptr<InferenceBackend> device;
    const CheckRun run = runUnderTest(args, checkpointDir, onDevice ? &devices : nullptr, sources, device);

    InterruptFlag interrupt;
    ForwardCache cache;
    CheckMeasureOptions options = measureOptions(args, interrupt.flag(), &cache);
    ProgressLine progressLine;
    progressLine.attach(options.progress);
    const std::string thresholdsSource = settleThresholds(thresholds, args, sources, inputs, options, checkpointDir);
    CheckResult result = evaluateCheck(measureRuns(run, twins, inputs, options), *thresholds, gate);
    progressLine.close();

    reportCacheProblem(cache, "check");
    json document = checkResultJson(result);
    document["cache"] = cacheJson(cache, options);
    document["checkpoint"] = checkpointDir;
    document["reference"] = referenceDir.empty() ? json(nullptr) : json(referenceDir);
    document["thresholds_source"] = thresholdsSource;
    document["inputs_file"] = inputs.path;
    writeCheckFiles(document, result, args, junitPath);
    if (args.flag("json"))
        std::cout << jsonText(document) << std::endl;
    else {
        printCheckText(result);
        std::cout << "Thresholds: " << thresholdsSource << "\n";
        if (options.cache)
            std::cout << "CPU side: " << cache.hits() << " batches from the cache in " << cache.folder() << ", "
                      << cache.misses() << " computed\n";
    }
    return result.passed ? 0 : 1;
}

} // namespace scalescope::cli
