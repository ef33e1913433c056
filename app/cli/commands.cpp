#include "commands.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/compute_threads.h"
#include "engine/float_gemm.h"
#include "engine/fp8_gemm.h"
#include "tasks/compare_runs.h"
#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "arguments.h"
#include "common/error.h"
#include "tasks/forward_cache.h"
#include "tasks/non_finite.h"
#include "common/option_error.h"
#include "engine/open_backend.h"
#include "device/runner_backend.h"
#include "engine/runner_server.h"
#include "check_command.h"
#include "evaluate_command.h"
#include "sensitivity_command.h"
#include "diff_command.h"
#include "keep_float_command.h"
#include "task_commands.h"
#include "calibrate_command.h"
#include "analysis/consumers.h"
#include "report/result_json.h"
#include "tasks/fix_provenance.h"
#include "charts/chart_export.h"
#include "plot_files.h"
#include "report/charts.h"
#include "report/family_table_json.h"
#include "common/text_files.h"
#include "io/atomic_write.h"
#include "io/safetensors.h"
#include "engine/encoder_model.h"
#include "tasks/answer_question.h"
#include "tasks/fill_mask.h"
#include "engine/quantize.h"

namespace scalescope::cli {
namespace {

using json = nlohmann::json;

const std::set<std::string> kRunOptions = {"mode", "reference", "device"};

// What a command runs: the model (the checkpoint itself, or the reference checkpoint), its
// settings, and a note for the output when dequant stands in for a missing reference.
struct RunSelection {
    std::unique_ptr<InferenceBackend> model;
    RunSettings settings; // --mode reference runs as dequant
    std::string modeName;
    std::string referenceDir;
    std::string note;
};

// --device cpu (the default) runs in this process; --device runner:"COMMAND" runs the checkpoint
// in a runner process. A float reference (--mode reference --reference DIR) always runs in this
// process on CPU: it is the yardstick, not the device under test.
RunSelection selectRun(const Arguments& args, const std::string& checkpointDir)
{
    RunSelection run;
    run.settings = runSettingsOption(args, ModeChoices::RunSideOrReference, DeviceChoices::One);
    run.modeName = args.value("mode", "fp8");
    run.referenceDir = args.value("reference", "");
    const DeviceSpec device = parseDeviceSpec(run.settings.device);
    auto open = [&]() -> std::unique_ptr<InferenceBackend> {
        if (device.isCpu())
            return EncoderModel::load(checkpointDir);
        RunnerOptions options = cliRunnerOptions();
        options.initialSettings = run.settings; // spares the runner a reload on the first forward
        return RunnerBackend::start(device, Checkpoint::open(checkpointDir), options);
    };
    if (run.modeName != "reference") {
        run.model = open();
    } else if (run.referenceDir.empty()) {
        run.model = open();
        run.note = "No --reference was given, so dequant (dequantized weights, float activations) stands in for the reference.";
    } else {
        std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(checkpointDir);
        run.model = EncoderModel::load(run.referenceDir);
        if (run.model->config().architecture != checkpoint->config().architecture)
            throw Error("The reference " + run.referenceDir + " is " +
                        architectureName(run.model->config().architecture) + " but " + checkpointDir + " is " +
                        architectureName(checkpoint->config().architecture) + ".");
        if (!device.isCpu())
            run.note = "The reference " + run.referenceDir + " ran in-process on CPU; --device applies to the checkpoint's own modes.";
    }
    if (const std::string unused = run.model->checkpoint().unusedTensorsNote(); !unused.empty())
        run.note += (run.note.empty() ? "" : " ") + unused;
    return run;
}

void addRunFields(json& out, const RunSelection& run)
{
    out["mode"] = run.modeName;
    out["accumulation"] = accumulationName(run.settings.accumulation);
    out["attention"] = attentionPrecisionName(run.settings.attention);
    out["reference"] = run.referenceDir.empty() ? json(nullptr) : json(run.referenceDir);
    if (!run.note.empty())
        out["note"] = run.note;
}

json offsetsJson(const Encoding& encoding)
{
    json offsets = json::array();
    for (const auto& [start, end] : encoding.offsets)
        offsets.push_back({start, end});
    return offsets;
}

void printJson(const json& document)
{
    std::cout << jsonText(document) << std::endl;
}

// The JSON's "nonfinite" (modules whose output held inf/NaN, in execution order) and "first_nonfinite".
void addNonFiniteFields(json& out, const std::vector<ModuleNonFinite>& modules)
{
    json list = json::array();
    for (const ModuleNonFinite& module : modules)
        list.push_back({{"module", module.module}, {"count", module.count}});
    out["nonfinite"] = list;
    out["first_nonfinite"] = modules.empty() ? json(nullptr) : json(modules.front().module);
}

// Checkpoint strings (tokens, names, answers) printed for a person: escape sequences in them
// would drive the terminal.
std::string shown(const std::string& text)
{
    return terminalSafe(text);
}

// ---- commands ------------------------------------------------------------------------------

int commandTokenize(const Arguments& args)
{
    std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(args.positionals()[0]);
    const Tokenizer& tokenizer = checkpoint->tokenizer();
    const std::string text = args.required("text");
    const Encoding encoding = args.has("pair") ? tokenizer.encodePair(text, *args.value("pair")) : tokenizer.encode(text);
    if (args.flag("json")) {
        printJson({{"input_ids", encoding.ids}, {"offsets", offsetsJson(encoding)}, {"sequence_ids", encoding.sequenceIds},
                   {"token_type_ids", encoding.typeIds}});
        return 0;
    }
    std::cout << std::left << std::setw(6) << "index" << std::setw(8) << "id" << std::setw(12) << "offsets" << "token\n";
    for (std::size_t i = 0; i < encoding.ids.size(); ++i) {
        std::ostringstream offsets;
        offsets << encoding.offsets[i].first << "-" << encoding.offsets[i].second;
        std::cout << std::setw(6) << i << std::setw(8) << encoding.ids[i] << std::setw(12) << offsets.str()
                  << shown(tokenizer.tokenString(encoding.ids[i])) << "\n";
    }
    return 0;
}

// The encoder family table (the AIU runner's packaging/runners/encoder_families.json is this output).
int commandFamilies(const Arguments&)
{
    printJson(familyTableJson());
    return 0;
}

int commandQa(const Arguments& args)
{
    QaOptions options;
    options.maxSeqLen = args.intValue("max-seq-len", 384, 8, 100000);
    options.docStride = args.intValue("doc-stride", 128, 0, 100000);
    options.maxAnswerLen = args.intValue("max-answer-len", 30, 1, 100000);
    options.topK = args.intValue("top-k", 1, 1, 1000);
    options.nBest = std::max(20, options.topK);
    options.nullThreshold = args.floatValue("null-threshold");
    const std::string question = args.required("question");
    const std::string context = args.required("context");

    RunSelection run = selectRun(args, args.positionals()[0]);
    const QaResult result = answerQuestion(*run.model, question, context, run.settings, options);

    if (args.flag("json")) {
        json answers = json::array();
        for (const QaAnswer& answer : result.answers)
            answers.push_back({{"text", answer.text}, {"score", answer.score}, {"start", answer.start}, {"end", answer.end}});
        json ids = json::array(), types = json::array(), starts = json::array(), ends = json::array(),
             offsets = json::array();
        for (std::size_t w = 0; w < result.windows.size(); ++w) {
            ids.push_back(result.windows[w].encoding.ids);
            types.push_back(result.windows[w].encoding.typeIds);
            offsets.push_back(offsetsJson(result.windows[w].encoding));
            starts.push_back(result.startLogits[w]);
            ends.push_back(result.endLogits[w]);
        }
        json out = {{"answers", answers}, {"input_ids", ids}, {"token_type_ids", types}, {"start_logits", starts}, {"end_logits", ends},
                    {"offsets", offsets}, {"windows", result.windows.size()}, {"elapsed_ms", result.elapsedMs}};
        addRunFields(out, run);
        printJson(out);
        return 0;
    }
    if (!run.note.empty())
        std::cout << "Note: " << run.note << "\n";
    std::cout << "Mode " << (run.settings.accumulation == Accumulation::Dl16 ? run.settings.label() : run.modeName)
              << (run.settings.attention == AttentionPrecision::Float
                      ? ""
                      : std::string(", attention ") + attentionPrecisionName(run.settings.attention))
              << ", " << result.windows.size() << " window(s), forward "
              << std::fixed << std::setprecision(1) << result.elapsedMs << " ms\n";
    if (result.answers.empty())
        std::cout << "No answer span found.\n";
    for (std::size_t i = 0; i < result.answers.size(); ++i) {
        const QaAnswer& a = result.answers[i];
        std::cout << i + 1 << ". " << (a.isNull ? std::string("(no answer)") : "\"" + shown(a.text) + "\"") << "  score "
                  << std::setprecision(4) << a.score << "  chars " << a.start << "-" << a.end << "\n";
    }
    return 0;
}

int commandFillMask(const Arguments& args)
{
    const int topK = args.intValue("top-k", 5, 1, 1000);
    const std::string text = args.required("text");
    RunSelection run = selectRun(args, args.positionals()[0]);
    const FillMaskResult result = runFillMask(*run.model, text, run.settings, topK);
    // NaN or infinite logits make every probability NaN: the ranking is printed as it is, marked,
    // and the command fails so that no script takes it for a prediction.
    std::string nonFinite;
    for (std::size_t m = 0; m < result.nonFiniteLogits.size(); ++m)
        if (result.nonFiniteLogits[m] > 0 && nonFinite.empty())
            nonFinite = "The model's logits at mask " + std::to_string(m + 1) + " hold " +
                        std::to_string(result.nonFiniteLogits[m]) +
                        " NaN or infinite values, so its probabilities are meaningless" +
                        (result.nonFinite.empty() ? std::string() : "; " + describeNonFinite(result.nonFinite)) +
                        "; inspect the checkpoint (`scalescope-cli inspect`) or compare it with a reference.";
    if (args.flag("json")) {
        json masks = json::array();
        for (std::size_t m = 0; m < result.predictions.size(); ++m) {
            json predictions = json::array();
            for (const MaskPrediction& p : result.predictions[m])
                predictions.push_back({{"token_id", p.tokenId}, {"token", p.token}, {"probability", p.probability}});
            masks.push_back(predictions);
        }
        json out = {{"masks", masks}, {"mask_positions", result.maskPositions}, {"input_ids", result.encoding.ids},
                    {"elapsed_ms", result.elapsedMs}, {"nonfinite_logits", result.nonFiniteLogits}};
        addNonFiniteFields(out, result.nonFinite);
        if (!nonFinite.empty())
            out["error"] = nonFinite;
        addRunFields(out, run);
        printJson(out);
        if (!nonFinite.empty())
            std::cerr << "scalescope-cli fill-mask: " << nonFinite << "\n";
        return nonFinite.empty() ? 0 : 1;
    }
    if (!run.note.empty())
        std::cout << "Note: " << run.note << "\n";
    for (std::size_t m = 0; m < result.predictions.size(); ++m) {
        std::cout << "Mask " << m + 1 << " (token " << result.maskPositions[m] << "):\n";
        for (const MaskPrediction& p : result.predictions[m])
            std::cout << "  " << std::left << std::setw(20) << ("\"" + shown(p.token) + "\"") << std::right << std::fixed
                      << std::setprecision(4) << p.probability << "  (id " << p.tokenId << ")\n";
    }
    if (!nonFinite.empty()) {
        std::cerr << "scalescope-cli fill-mask: " << nonFinite << "\n";
        return 1;
    }
    return 0;
}

int commandForward(const Arguments& args)
{
    const std::string output = args.required("output");
    EncoderInputs inputs;
    inputs.inputIds = parseIdBatch(args.required("input-ids"));
    if (args.has("token-type-ids"))
        inputs.tokenTypeIds = parseIdBatch(*args.value("token-type-ids"), "token-type-ids");
    // What --force cannot fix (a folder, an empty path) is said first, before any advice to use it.
    if (const std::string problem = outputTargetProblem(output); !problem.empty())
        throw Error(problem);
    // A dangling symbolic link exists too, though std::filesystem::exists follows it and says no.
    std::error_code statusError;
    if (std::filesystem::exists(std::filesystem::symlink_status(output, statusError)) && !args.flag("force"))
        throw Error(output + " already exists; pass --force to overwrite it.");
    RunSelection run = selectRun(args, args.positionals()[0]);

    ForwardOptions options = forwardOptions(run.settings);
    const std::string capture = args.value("capture", "");
    if (capture == "all") {
        options.capture.all = true;
    } else if (!capture.empty()) {
        std::vector<std::string> points = run.model->capturePoints();
        if (run.settings.attention == AttentionPrecision::Fp8Aiu) // the K/V casts are points of such a run
            for (int layer = 0; layer < static_cast<int>(run.model->config().numLayers); ++layer)
                for (const std::string& cast : {run.model->checkpoint().layout().keyCastModule(layer),
                                                run.model->checkpoint().layout().valueCastModule(layer)}) {
                    points.push_back(cast + ".input");
                    points.push_back(cast + ".output");
                }
        const std::set<std::string> known(points.begin(), points.end());
        std::set<std::string> modules;
        for (const std::string& point : points)
            modules.insert(point.substr(0, point.rfind('.')));
        std::stringstream stream(capture);
        std::string name;
        while (std::getline(stream, name, ',')) {
            if (!known.count(name) && !modules.count(name))
                throw Error("Unknown capture point \"" + name + "\"; `scalescope-cli inspect` lists the module names.");
            options.capture.names.push_back(name);
        }
    }
    const ForwardResult result = run.model->forward(inputs, options);

    std::vector<TensorToWrite> tensors;
    for (const NamedTensor& t : result.outputs)
        tensors.push_back(makeF32Tensor(t.name, t.tensor));
    for (const NamedTensor& t : result.captures)
        tensors.push_back(makeF32Tensor(t.name, t.tensor));
    std::map<std::string, std::string> metadata = {{"mode", run.modeName}, {"checkpoint", args.positionals()[0]},
                                                   {"producer", "scalescope-cli"},
                                                   {"accumulation", accumulationName(run.settings.accumulation)},
                                                   {"attention", attentionPrecisionName(run.settings.attention)}};
    if (!run.note.empty())
        metadata["note"] = run.note;
    writeSafetensors(output, tensors, metadata);

    if (args.flag("json")) {
        json list = json::array();
        for (const TensorToWrite& t : tensors)
            list.push_back({{"name", t.name}, {"shape", t.shape}});
        json out = {{"output", output}, {"tensors", list}, {"elapsed_ms", result.elapsedMs}};
        addNonFiniteFields(out, result.nonFinite);
        addRunFields(out, run);
        printJson(out);
    } else {
        if (!run.note.empty())
            std::cout << "Note: " << run.note << "\n";
        std::cout << "Wrote " << tensors.size() << " tensor(s) to " << output << " (forward " << std::fixed
                  << std::setprecision(1) << result.elapsedMs << " ms, mode " << run.modeName << ").\n";
        if (!result.nonFinite.empty())
            std::cout << "Non-finite outputs: " << result.nonFinite.size() << " module(s), first "
                      << shown(result.firstNonFinite()) << " (" << result.nonFinite.front().count
                      << " inf/NaN values).\n";
    }
    return 0;
}

// "128" -> 128; anything but a whole positive number (up to a million) -> nullopt.
std::optional<int64_t> positiveSize(const std::string& text)
{
    if (text.empty() || text.size() > 7 || text.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    const int64_t value = std::stoll(text);
    return value > 0 ? std::optional<int64_t>(value) : std::nullopt;
}

// --block ROWSxCOLUMNS (with --weights block) and --group-size N (with --activations group).
void parseGranularity(const Arguments& args, QuantizeOptions& options)
{
    if (auto block = args.value("block")) {
        if (options.weights != WeightStrategy::Block)
            throw UsageError{"--block applies only to --weights block."};
        const std::size_t x = block->find('x');
        const auto rows = x == std::string::npos ? std::nullopt : positiveSize(block->substr(0, x));
        const auto columns = x == std::string::npos ? std::nullopt : positiveSize(block->substr(x + 1));
        if (!rows || !columns)
            throw UsageError{"--block must be two positive sizes ROWSxCOLUMNS such as 128x128, not \"" + *block + "\"."};
        options.blockRows = *rows;
        options.blockColumns = *columns;
    }
    if (auto group = args.value("group-size")) {
        if (options.activations != ActivationScheme::Group)
            throw UsageError{"--group-size applies only to --activations group."};
        const auto size = positiveSize(*group);
        if (!size)
            throw UsageError{"--group-size must be a positive number of channels such as 128, not \"" + *group + "\"."};
        options.groupSize = *size;
    }
}

int commandQuantize(const Arguments& args)
{
    QuantizeOptions options;
    const std::string weights = args.value("weights", "channel");
    const std::string activations = args.value("activations", "token");
    const std::string scaleDtype = args.value("scale-dtype", "float32");
    const std::map<std::string, WeightStrategy> weightStrategies = {
        {"channel", WeightStrategy::Channel}, {"tensor", WeightStrategy::Tensor}, {"block", WeightStrategy::Block}};
    const std::map<std::string, ActivationScheme> activationSchemes = {{"token", ActivationScheme::Token},
                                                                       {"tensor", ActivationScheme::Tensor},
                                                                       {"group", ActivationScheme::Group},
                                                                       {"none", ActivationScheme::None}};
    const std::map<std::string, Dtype> scaleDtypes = {
        {"float32", Dtype::F32}, {"bfloat16", Dtype::BF16}, {"float16", Dtype::F16}};
    if (!weightStrategies.count(weights))
        throw UsageError{"--weights must be channel, tensor or block, not \"" + weights + "\"."};
    if (!activationSchemes.count(activations))
        throw UsageError{"--activations must be token, tensor, group or none, not \"" + activations + "\"."};
    if (!scaleDtypes.count(scaleDtype))
        throw UsageError{"--scale-dtype must be float32, bfloat16 or float16, not \"" + scaleDtype + "\"."};
    options.weights = weightStrategies.at(weights);
    options.activations = activationSchemes.at(activations);
    options.scaleDtype = scaleDtypes.at(scaleDtype);
    const std::string embeddings = args.value("embeddings", "float");
    if (embeddings != "float" && embeddings != "fp8")
        throw UsageError{"--embeddings must be float or fp8 (F8_E4M3 with one scale per row), not \"" + embeddings + "\"."};
    options.embeddings = embeddings == "fp8" ? EmbeddingQuantization::Fp8PerRow : EmbeddingQuantization::Float;
    parseGranularity(args, options);
    if (auto calibration = args.value("calibration")) {
        options.calibrationTexts = readCalibrationTexts(*calibration);
        options.inputFiles.push_back(*calibration);
    }
    options.overwrite = args.flag("force");
    quantizeCheckpoint(args.positionals()[0], args.positionals()[1], options);
    if (args.flag("json")) {
        nlohmann::json out = {{"output", args.positionals()[1]}, {"weights", weights},
                               {"activations", activations}, {"scale_dtype", scaleDtype}, {"embeddings", embeddings}};
        if (options.weights == WeightStrategy::Block)
            out["block_structure"] = {options.blockRows, options.blockColumns};
        if (options.activations == ActivationScheme::Group)
            out["group_size"] = options.groupSize;
        printJson(out);
    } else {
        std::cout << "Wrote FP8 checkpoint " << args.positionals()[1] << " (weights per " << weights
                  << ", activations " << activations << ", scales " << scaleDtype << ").\n";
    }
    return 0;
}

void printFindings(const std::vector<Finding>& findings)
{
    if (findings.empty()) {
        std::cout << "Diagnostics: none.\n";
        return;
    }
    std::cout << "Diagnostics:\n";
    for (const Finding& f : findings)
        std::cout << "  [" << severityName(f.severity) << "] " << f.code << " (" << shown(f.subject) << "): "
                  << shown(f.message) << "\n";
}

// inspect's "Consumers" section: each consumer's verdict, then its errors and warnings (infos are in --json).
void printConsumers(const std::vector<ConsumerReport>& reports)
{
    std::cout << "\nConsumers:\n";
    for (const ConsumerReport& report : reports) {
        const std::string loadings = aiuLoadingsText(report);
        std::cout << "  " << consumerName(report.consumer) << ": " << verdictName(report.verdict)
                  << (loadings.empty() ? "" : " (" + loadings + ")") << "\n";
        for (const ConsumerFinding& f : report.findings) {
            if (f.severity == Severity::Info)
                continue;
            std::cout << "    [" << severityName(f.severity) << "] " << f.code
                      << (f.loading.empty() || f.loading == "both" ? "" : " (" + f.loading + ")") << ": "
                      << shown(f.message) << (f.fix.empty() ? "" : " Fix: " + shown(f.fix)) << "\n";
        }
    }
}

std::string formatDb(double db)
{
    std::ostringstream out;
    if (std::isinf(db))
        out << (db > 0 ? "inf" : "-inf");
    else
        out << std::fixed << std::setprecision(2) << db;
    return out.str();
}

// A bad option value is a usage error (exit 2) in every command, whichever layer notices it.
void checkPlotFormat(const Arguments& args)
{
    if (!args.has("plots") && !args.has("format"))
        return;
    try {
        ui::parseChartFormat(args.value("format", "png"));
    } catch (const Error& e) {
        throw UsageError{e.what()};
    }
}

// inspect's --plots: the weight scales of every Linear, then the scales and exponents of one
// (--linear, or the one whose scales spread widest).
std::vector<ChartData> inspectCharts(
    const Arguments& args, const Checkpoint& checkpoint, const std::vector<LinearScaleStatistics>& statistics)
{
    std::vector<ChartData> charts = {weightScaleRangesChart(statistics), weightCodeSharesChart(statistics)};
    std::string linear = args.value("linear", "");
    int chosen = -1;
    for (std::size_t i = 0; i < statistics.size(); ++i)
        if (statistics[i].module == linear)
            chosen = static_cast<int>(i);
    if (!linear.empty() && chosen < 0)
        throw Error("--linear " + linear + " is not a Linear module of " + checkpoint.directory() + ".");
    if (chosen < 0)
        chosen = widestScaleSpread(statistics);
    if (chosen >= 0) {
        const LinearScaleStatistics& linear = statistics[static_cast<std::size_t>(chosen)];
        // A block-wise weight's scales are a grid: a heat map of output by input blocks.
        charts.push_back(linear.gridRows > 0 ? blockScalesChart(linear) : channelScalesChart(linear));
        charts.push_back(exponentHistogramChart(statistics[static_cast<std::size_t>(chosen)]));
    }
    return charts;
}

// inspect's heading: the model's shape, its quantization schemes, its word embeddings.
void printCheckpointSummary(const Checkpoint& checkpoint)
{
    const ModelConfig& c = checkpoint.config();
    std::cout << shown(checkpoint.directory()) << "\n  " << architectureName(c.architecture) << ", " << c.numLayers
              << " layers, hidden " << c.hiddenSize << ", " << c.numHeads << " heads, intermediate "
              << c.intermediateSize << ", vocabulary " << c.vocabSize << ", dtype " << shown(c.torchDtype) << "\n";
    if (c.quantization) {
        for (const ConfigGroup& g : c.quantization->groups) {
            const auto reason = unsupportedSchemeReason(*c.quantization, g);
            std::cout << "  " << shown(g.name) << ": " << shown(describeScheme(g))
                      << (reason ? "  (not supported: " + shown(*reason) + ")" : "")
                      << "\n";
            // The keys that change nothing in the run (observers) or that describeScheme does not say.
            const std::pair<const char*, const std::optional<QuantizationArgs>*> blocks[] = {
                {"weights", &g.weights}, {"input_activations", &g.inputActivations}, {"output_activations", &g.outputActivations}};
            for (const auto& [label, block] : blocks)
                if (*block && !describeArgsExtras(**block).empty())
                    std::cout << "    " << label << ": " << shown(describeArgsExtras(**block)) << "\n";
        }
        if (const auto refusal = transformRefusal(*c.quantization))
            std::cout << "  transform_config: " << shown(*refusal) << "\n";
        std::cout << "  quantization_status: "
                  << (c.quantization->status.empty() ? std::string("missing")
                                                     : "\"" + shown(c.quantization->status) + "\"")
                  << (checkpoint.plan().anyQuantized() ? "; FP8 weights on disk, run as compressed" : "") << "\n";
    } else {
        std::cout << "  not quantized\n";
    }
    const EmbeddingInfo& embedding = checkpoint.plan().wordEmbeddings();
    if (embedding.quantized)
        std::cout << "  word embeddings " << shown(embedding.module) << ": FP8 "
                  << embeddingScaleText(embedding.weightStrategy) << " (" << shown(embedding.rule) << ")\n";
    else if (!checkpoint.plan().wordEmbeddingsProblem().empty())
        std::cout << "  word embeddings " << shown(embedding.module)
                  << ": cannot run: " << shown(checkpoint.plan().wordEmbeddingsProblem()) << "\n";
}

// inspect's table: one row per Linear, its weight scales and its input's.
void printScaleTable(const std::vector<LinearScaleStatistics>& statistics)
{
    std::cout << std::left << std::setw(52) << "Linear" << std::right << std::setw(9) << "weight" << std::setw(12)
              << "scale min" << std::setw(12) << "median" << std::setw(12) << "max" << std::setw(9) << "ratio"
              << std::setw(9) << "clip%" << std::setw(9) << "uflow%" << "  " << "input" << "\n";
    for (const LinearScaleStatistics& s : statistics) {
        std::cout << std::left << std::setw(52) << shown(s.module) << std::right << std::setw(9) << s.weightDtype;
        if (s.quantized)
            std::cout << std::scientific << std::setprecision(3) << std::setw(12) << s.scaleMin << std::setw(12)
                      << s.scaleMedian << std::setw(12) << s.scaleMax << std::fixed << std::setprecision(1)
                      << std::setw(9) << s.scaleRatio << std::setprecision(2) << std::setw(9) << 100 * s.clippedShare
                      << std::setw(9) << 100 * s.underflowShare;
        else
            std::cout << std::setw(12 * 3 + 9 * 3) << "";
        if (s.inputScale)
            std::cout << "  " << std::scientific << std::setprecision(3) << *s.inputScale;
        else
            std::cout << "  " << s.activationScheme;
        if (s.gridRows > 0)
            std::cout << ", " << s.gridRows << "x" << s.gridColumns << " blocks of " << s.blockRows << "x" << s.blockColumns;
        if (s.embedding && s.quantized)
            std::cout << ", scales " << embeddingScaleText(s.weightStrategy);
        std::cout << std::defaultfloat << "\n";
    }
}

int commandInspect(const Arguments& args)
{
    checkPlotFormat(args);
    std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(args.positionals()[0]);
    const std::vector<LinearScaleStatistics> statistics = computeScaleStatistics(*checkpoint);
    const std::vector<Finding> findings = diagnoseCheckpoint(*checkpoint, statistics);
    checkpoint->tensors().checkUnchanged(); // statistics of a file rewritten meanwhile are not reported
    json document = inspectJson(*checkpoint, statistics, findings);

    if (auto plots = args.value("plots"))
        document["plots"] = writePlotFiles(inspectCharts(args, *checkpoint, statistics), *plots,
            args.value("format", "png"), document, "inspect", args.flag("force"));
    if (args.flag("json")) {
        printJson(document);
        return 0;
    }
    printCheckpointSummary(*checkpoint);
    std::cout << "  " << checkpoint->tensors().tensors().size() << " tensors\n\n";
    printScaleTable(statistics);
    std::cout << "\n";
    printFindings(findings);
    printConsumers(assessConsumers(*checkpoint));
    if (document["provenance"].is_object())
        std::cout << "\n" << (document["provenance"].contains("error") ? "Provenance: " + shown(document["provenance"]["error"].get<std::string>()) + "\n"
                                                                         : terminalSafe(provenanceText(document["provenance"]), true));
    if (document.contains("plots"))
        std::cout << "\nWrote " << document["plots"].size() << " files to " << *args.value("plots") << ".\n";
    return 0;
}

void printComparisonText(const ComparisonResult& comparison, const json& document)
{
    if (comparison.referenceIsStandIn)
        std::cout << "Note: " << document["note"].get<std::string>() << "\n";
    std::cout << "FP8 run vs " << shown(comparison.referenceLabel) << " (" << std::fixed << std::setprecision(1)
              << comparison.runMs << " ms / " << comparison.referenceMs << " ms)\n\n";
    std::cout << std::left << std::setw(60) << "capture point" << std::right << std::setw(10) << "SQNR dB"
              << std::setw(10) << "cosine" << std::setw(12) << "rel. L2" << std::setw(12) << "max abs" << "\n";
    for (const CapturePointMetrics& p : comparison.points) {
        if (p.kind == CaptureKind::LinearInput)
            continue; // inputs repeat the previous outputs; the JSON has them
        std::cout << std::left << std::setw(60) << p.name << std::right << std::setw(10) << formatDb(p.metrics.sqnrDb)
                  << std::fixed << std::setprecision(5) << std::setw(10) << p.metrics.cosine << std::scientific
                  << std::setprecision(3) << std::setw(12) << p.metrics.relativeL2 << std::setw(12)
                  << p.metrics.maxAbsError << std::defaultfloat << "\n";
    }
    std::cout << "\nFinal logits: SQNR " << formatDb(comparison.finalLogits.sqnrDb) << " dB, cosine " << std::fixed
              << std::setprecision(5) << comparison.finalLogits.cosine << "\n";
    const bool nonFinite = comparison.runOutputsNonFinite || comparison.referenceOutputsNonFinite;
    if (const auto& sequence = comparison.sequence) {
        std::cout << sequence->rows << " inputs:";
        if (sequence->labelFlips)
            std::cout << " " << *sequence->labelFlips << " label flips";
        if (sequence->meanCosine && sequence->minCosine)
            std::cout << " cosine mean " << *sequence->meanCosine << ", min " << *sequence->minCosine;
        if (sequence->kendallTau)
            std::cout << " Kendall tau " << *sequence->kendallTau << (sequence->sameOrder ? ", same order" : ", order changed");
        std::cout << "\n";
    }
    if (comparison.qa)
        std::cout << "Best answer: FP8 \"" << shown(comparison.qa->runAnswer.text) << "\" vs reference \""
                  << shown(comparison.qa->referenceAnswer.text) << "\" ("
                  << (!comparison.nonFiniteNote.empty() && nonFinite ? "not compared: non-finite outputs"
                      : comparison.qa->sameBestAnswer                ? "same"
                                                                     : "different")
                  << ", F1 " << std::setprecision(2) << comparison.qa->answerF1 << ")\n";
    if (comparison.fillMask)
        for (const auto& m : comparison.fillMask->masks)
            std::cout << "Mask at token " << m.position << ": top-1 "
                      << (nonFinite ? "not compared (non-finite outputs)" : m.top1Agrees ? "agrees" : "differs")
                      << ", top-k overlap " << std::setprecision(2) << m.topKOverlap << ", KL " << std::setprecision(5)
                      << m.klDivergence << " nats\n";
    if (!comparison.nonFiniteNote.empty())
        std::cout << "Non-finite values: " << shown(comparison.nonFiniteNote) << "\n";
    std::cout << "\n";
    printFindings(comparison.findings);
}

int commandCompare(const Arguments& args)
{
    const std::string checkpointDir = args.positionals()[0];
    ComparisonInput input;
    if (readComparisonInput(args, input) != 1)
        throw UsageError{"compare needs exactly one of --question/--context, --text, --input-ids or --texts."};
    checkPlotFormat(args); // refuse a bad format before the runs

    // The run goes to --device; a float reference runs in-process on CPU (the yardstick). Without
    // --reference, dequant on the same device stands in.
    input.runs.run = runSettingsOption(args, ModeChoices::RunSide, DeviceChoices::One);
    std::unique_ptr<InferenceBackend> run =
        openBackend(parseDeviceSpec(input.runs.run.device), Checkpoint::open(checkpointDir), {}, cliRunnerOptions());
    std::unique_ptr<EncoderModel> reference;
    if (auto dir = args.value("reference"))
        reference = EncoderModel::load(*dir);
    input.oneShot = true; // the process ends after this compare
    const ComparisonResult comparison = compareRuns(*run, reference.get(), input);
    json document = comparisonJson(comparison);
    document["checkpoint"] = checkpointDir;

    if (auto plots = args.value("plots")) {
        const auto& linears = run->linears();
        const bool anyStatic = std::any_of(linears.begin(), linears.end(),
            [](const LinearInfo& l) { return l.activations == ActivationQuantization::StaticPerTensor; });
        document["plots"] = writePlotFiles(comparisonPlots(comparison, !anyStatic), *plots, args.value("format", "png"),
            document, "compare", args.flag("force"));
    }
    if (args.flag("json")) {
        printJson(document);
        return 0;
    }
    printComparisonText(comparison, document);
    if (document.contains("plots"))
        std::cout << "\nWrote " << document["plots"].size() << " files to " << *args.value("plots") << ".\n";
    return 0;
}

struct Command {
    CommandSpec spec;
    std::function<int(const Arguments&)> handler;
};

std::set<std::string> withRunOptions(std::set<std::string> options)
{
    options.insert(kRunOptions.begin(), kRunOptions.end());
    return options;
}

// The sequence tasks (app/cli/task_commands.h), listed after fill-mask.
std::vector<Command> taskCommands()
{
    return {
        {{"embed", 1, {"CKPT"},
          withRunOptions({"text", "texts", "prompt", "pooling", "output", "accumulate", "attention"}),
          {"json", "force", "normalize", "no-normalize"},
          "sentence embeddings of the run and its reference: cosine per text, similarity matrices"},
         commandEmbed},
        {{"classify", 1, {"CKPT"}, withRunOptions({"text", "pair", "texts", "accumulate", "attention"}), {"json"},
          "labels and probabilities of a sequence classifier on both sides: flips, KL"},
         commandClassify},
        {{"rerank", 1, {"CKPT"},
          withRunOptions({"query", "passage", "passages", "top-k", "accumulate", "attention"}), {"json"},
          "rank passages for a query (cross-encoder or embedder) on both sides: order, Kendall's tau"},
         commandRerank},
    };
}

// The family table for the AIU runner, and the CPU runner itself: listed last.
std::vector<Command> serviceCommands()
{
    return {
        {{"families", 0, {}, {}, {"json"},
          "the encoder family table (classes, layouts, HF and FMS names) as JSON, for the AIU runner"},
         commandFamilies},
        {{"runner", 0, {}, {}, {}, "serve the runner protocol on stdin/stdout (the CPU runner; packaging/runners/PROTOCOL.md)"},
         [](const Arguments&) {
             RunnerServerOptions options;
             options.name = "ScaleScope CPU runner " SCALESCOPE_VERSION ", " + std::to_string(computeThreads()) + " threads";
             return serveRunner(std::cin, std::cout, std::cerr, options);
         }},
    };
}

std::vector<Command> commands()
{
    auto with = [](std::set<std::string> a, const std::set<std::string>& b) {
        a.insert(b.begin(), b.end());
        return a;
    };
    std::vector<Command> all = {
        {{"tokenize", 1, {"CKPT"}, {"text", "pair"}, {"json"}, "token ids and character offsets of a text"},
         commandTokenize},
        {{"qa", 1, {"CKPT"},
          with({"question", "context", "top-k", "max-seq-len", "doc-stride", "max-answer-len", "null-threshold",
                "accumulate", "attention"}, kRunOptions),
          {"json"}, "answer a question from a context"},
         commandQa},
        {{"fill-mask", 1, {"CKPT"}, with({"text", "top-k"}, kRunOptions), {"json"}, "predict the tokens at each mask token"},
         commandFillMask},
        {{"forward", 1, {"CKPT"}, with({"input-ids", "token-type-ids", "capture", "output", "accumulate", "attention"}, kRunOptions), {"json", "force"},
          "run a forward pass and write logits and captures to a safetensors file"},
         commandForward},
        {{"quantize", 2, {"SRC", "DST"}, {"weights", "activations", "calibration", "scale-dtype", "block", "group-size", "embeddings"}, {"force", "json"},
          "write a compressed-tensors FP8 checkpoint from a float one"},
         commandQuantize},
        {{"inspect", 1, {"CKPT"}, {"plots", "format", "linear"}, {"json", "force"},
          "architecture, quantization config, tensors, scale statistics and diagnostics"},
         commandInspect},
        {{"compare", 1, {"CKPT"},
          {"reference", "question", "context", "text", "pair", "input-ids", "texts", "plots", "format", "max-seq-len", "doc-stride",
           "max-answer-len", "null-threshold", "top-k", "device", "mode", "accumulate", "attention"},
          {"json", "force"}, "per-layer error of the FP8 run against its reference"},
         commandCompare},
        {{"evaluate", 1, {"CKPT"},
          {"squad", "sts", "retrieval", "classification", "reference", "max-samples", "csv", "max-seq-len", "doc-stride",
           "max-answer-len", "null-threshold", "batch-size", "device", "devices", "mode", "accumulate", "attention"},
          {"json", "force"},
          "SQuAD EM/F1, STS Spearman, retrieval nDCG/MRR/recall or classification accuracy of the run and its reference"},
         commandEvaluate},
        {{"noise-floor", 1, {"CKPT"},
          {"reference", "squad", "texts", "max-samples", "runs", "output", "max-seq-len", "doc-stride", "max-answer-len",
           "null-threshold"},
          {"json", "force", "no-cache"}, "thresholds per capture point between two runs that should agree up to rounding"},
         commandNoiseFloor},
        {{"check", 1, {"CKPT"},
          {"reference", "squad", "texts", "max-samples", "against", "thresholds", "max-failure-rate", "max-f1-drop",
           "junit", "plots", "format", "device", "devices", "mode", "accumulate", "max-seq-len", "doc-stride", "max-answer-len",
           "null-threshold"},
          {"json", "force", "no-cache"}, "a device (or an FP8 mode) against its twins per capture point: verdict, where it departs, F1 interval"},
         commandCheck},
        {{"sensitivity", 1, {"CKPT"},
          {"reference", "question", "context", "text", "pair", "input-ids", "squad", "texts", "max-samples", "granularity", "target-sqnr",
           "target-f1-drop", "plots", "format", "max-seq-len", "doc-stride", "max-answer-len", "null-threshold", "top-k",
           "device", "mode", "accumulate", "attention"},
          {"json", "force"}, "which Linear (or layer) breaks the answer: each kept float alone and in FP8 alone, ranked"},
         commandSensitivity},
        {{"diff", 2, {"A", "B"},
          {"reference", "question", "context", "text", "pair", "input-ids", "texts", "squad", "max-samples", "plots",
           "format", "max-seq-len", "doc-stride", "max-answer-len", "null-threshold", "top-k"},
          {"json", "force"},
          "two quantized checkpoints side by side: scheme, scale and code differences, both runs' metrics"},
         commandDiff},
        {{"keep-float", 2, {"CKPT", "DST"},
          {"modules", "reference", "question", "context", "text", "pair", "input-ids", "texts", "max-samples",
           "max-seq-len", "doc-stride", "max-answer-len", "null-threshold", "top-k", "consumer"},
          {"force", "json", "unfused", "per-channel-weights"},
          "write a copy with these Linears float for every consumer (HF and FMS names in ignore); print before/after SQNR"},
         commandKeepFloatForConsumers},
        {{"calibrate", 1, {"FLOAT_DIR"}, {"calibration", "eval", "sizes", "orders", "plots", "format", "write"},
          {"json", "force"},
          "static scales after n calibration samples (running max), clip shares on --eval texts, the smallest sufficient n"},
         commandCalibrate},
    };
    const auto fillMask = std::find_if(all.begin(), all.end(), [](const Command& c) { return c.spec.name == "fill-mask"; });
    const std::vector<Command> tasks = taskCommands();
    all.insert(fillMask + 1, tasks.begin(), tasks.end());
    const std::vector<Command> services = serviceCommands();
    all.insert(all.end(), services.begin(), services.end());
    return all;
}

void printUsage(std::ostream& out)
{
    out << "usage: scalescope-cli <command> [options]\n\ncommands:\n";
    for (const Command& c : commands()) {
        std::string line = "  " + c.spec.name;
        for (const auto& p : c.spec.positionalNames)
            line += " " + p;
        out << std::left << std::setw(26) << line << c.spec.summary << "\n";
    }
    out << "\nRun `scalescope-cli <command> --help` for a command's options. docs/ARCHITECTURE.md describes the JSON contract.\n";
}

// The flag that sets each option the core names.
std::string flagOf(TaskOption option)
{
    switch (option) {
    case TaskOption::MaxSeqLen: return "--max-seq-len";
    case TaskOption::DocStride: return "--doc-stride";
    case TaskOption::MaxAnswerLen: return "--max-answer-len";
    case TaskOption::NBest: return "the n-best size";
    case TaskOption::TopK: return "--top-k";
    case TaskOption::NullThreshold: return "--null-threshold";
    case TaskOption::BatchSize: return "--batch-size";
    case TaskOption::Weights: return "--weights";
    case TaskOption::Activations: return "--activations";
    case TaskOption::ScaleDtype: return "--scale-dtype";
    case TaskOption::Calibration: return "--calibration FILE";
    case TaskOption::BlockSize: return "--block";
    case TaskOption::GroupSize: return "--group-size";
    case TaskOption::Overwrite: return "--force";
    case TaskOption::Modules: return "--modules";
    case TaskOption::Reference: return "--reference DIR";
    case TaskOption::Granularity: return "--granularity";
    case TaskOption::TargetSqnr: return "--target-sqnr";
    case TaskOption::TargetF1Drop: return "--target-f1-drop";
    case TaskOption::Question: return "--question/--context";
    case TaskOption::Squad: return "--squad";
    case TaskOption::Runs: return "--runs";
    case TaskOption::Against: return "--against";
    }
    return "an option";
}

} // namespace

int run(const std::vector<std::string>& args)
{
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        printUsage(args.empty() ? std::cerr : std::cout);
        return args.empty() ? 2 : 0;
    }
    // Threads first, --version too: it may measure the float32 GEMM (floatGemmDescription), and a
    // measurement on LibTorch's default of one thread would be cached for the runs that use two.
    // Every setting the environment makes is checked here, before any command, as this one is: a
    // bad value is one sentence naming the variable, whichever command would have read it.
    try {
        setComputeThreads(computeThreadsFromEnvironment(std::getenv("SCALESCOPE_THREADS")));
        fp8GemmPathFromEnvironment();
        floatGemmRequestFromEnvironment();
        defaultForwardCacheSettings();
        runnerDeadlinesFromEnvironment();
    } catch (const Error& e) {
        std::cerr << "scalescope-cli: " << e.what() << "\n";
        return 1;
    }
    if (args[0] == "--version") {
        std::cout << "scalescope-cli " << SCALESCOPE_VERSION << "\n" << fp8GemmDescription() << "\n"
                  << floatGemmDescription() << "\n";
        return 0;
    }

    for (const Command& command : commands()) {
        if (command.spec.name != args[0])
            continue;
        const std::vector<std::string> rest(args.begin() + 1, args.end());
        if (!rest.empty() && (rest[0] == "--help" || rest[0] == "-h")) {
            std::cout << "usage: scalescope-cli " << command.spec.name;
            for (const auto& p : command.spec.positionalNames)
                std::cout << " " << p;
            for (const auto& o : command.spec.valueOptions)
                std::cout << " [--" << o << " VALUE]";
            for (const auto& f : command.spec.flags)
                std::cout << " [--" << f << "]";
            std::cout << "\n" << command.spec.summary << "\n";
            return 0;
        }
        try {
            return command.handler(Arguments::parse(command.spec, rest));
        } catch (const UsageError& e) {
            std::cerr << "scalescope-cli " << command.spec.name << ": " << terminalSafe(e.message) << "\n";
            return 2;
        } catch (const OptionError& e) {
            // The core names the option; here it is the flag that sets it. Exit 1 like every error
            // the core finds (2 stays for what the command line itself gets wrong).
            std::cerr << "scalescope-cli " << command.spec.name << ": "
                      << terminalSafe(e.messageNaming(flagOf)) << "\n";
            return 1;
        } catch (const Cancelled& e) {
            std::cerr << "scalescope-cli " << command.spec.name << ": " << e.what() << "\n";
            return 1;
        } catch (const Error& e) {
            std::cerr << "scalescope-cli " << command.spec.name << ": " << terminalSafe(e.what()) << "\n";
            return 1;
        } catch (const std::bad_alloc&) {
            std::cerr << "scalescope-cli " << command.spec.name << ": out of memory.\n";
            return 1;
        } catch (const std::exception& e) {
            // Anything that is not a scalescope::Error is a bug, but the user still gets one sentence.
            std::cerr << "scalescope-cli " << command.spec.name << ": internal error: " << terminalSafe(e.what()) << "\n";
            return 1;
        }
    }
    std::cerr << "scalescope-cli: unknown command \"" << args[0] << "\".\n";
    printUsage(std::cerr);
    return 2;
}

} // namespace scalescope::cli
