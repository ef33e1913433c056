// scalescope-bench: one run measures, side by side on this machine, a roberta-base-sized model
// (12 layers, hidden 768, 12 heads, intermediate 3072, vocabulary 50,265; random weights, fixed
// seed) at sequence length 384, batch 1: fp8 / dequant / reference forwards, the same float32
// forward in PyTorch eager, bare GEMMs of the forward's shapes, load time and peak memory, a full
// compare, and QA end to end on a 300-word context. Prints a table and writes JSON.
// With --embed, the embed throughput of a sentence embedder of that size instead (bench_embed.h).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cfloat>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tasks/compare_runs.h"
#include "common/error.h"
#include "engine/compute_threads.h"
#include "engine/float_gemm.h"
#include "engine/fp8_gemm.h"
#include "engine/matmul_benchmark.h"
#include "engine/encoder_model.h"
#include "tasks/sensitivity.h"
#include "io/safetensors.h"
#include "support/fixtures.h"
#include "support/forwarding_backend.h"
#include "support/reference_forward.h"
#include "tasks/answer_question.h"
#include "tasks/evaluate.h"
#include "engine/quantize.h"
#include "tasks/squad_dataset.h"

#include "bench_common.h"
#include "bench_embed.h"

using namespace scalescope;
namespace fs = std::filesystem;
using json = nlohmann::json;
using bench::cpuModelAndFlags;
using bench::measure;
using bench::Timing;

namespace {

struct Options {
    std::string workdir = (fs::temp_directory_path() / "scalescope-bench").string();
    std::string output = "bench.json";
    int threads = 2;
    int repeats = 5;
    int sequenceLength = 384;
    int profileRows = 1; // --profile-rows: sequences per forward of --profile fp8|reference (4: the 4 x seq row)
    bool skipPeer = false;
    bool skipSensitivity = false;
    std::size_t squadSamples = 64;
    // One of kProfiles: "fp8", "reference", "compare" or "load": only that, `repeats` times (for
    // perf record); "first-load": one FP8 checkpoint load in this process, its time printed (the
    // table's fresh-process row); "first-forward": a new process's first fp8 forward after that
    // load against the warm ones after it (issue 53: oneDNN primitives and packing on first use);
    // "sweep": the per-Linear sensitivity sweep's seconds per entry, in fp8 forwards, with and
    // without its reuse of unchanged layers (issue 53 point 5).
    std::string profile;
    // --embed: issue 49's embed throughput instead of all of the above (bench_embed.h), over
    // embedTexts texts.
    bool embed = false;
    std::size_t embedTexts = 1000;
};

const std::vector<std::string> kProfiles = {"fp8", "reference", "compare", "load", "first-load", "first-forward", "sweep"};

// kProfiles as the usage line writes them: fp8|reference|...
std::string profileChoices()
{
    std::string choices;
    for (const std::string& name : kProfiles)
        choices += (choices.empty() ? "" : "|") + name;
    return choices;
}

// Starts the peak over from what is resident now, so that generating and quantizing the
// checkpoints on a first run (a float model, its FP8 copy) does not count as the models' peak.
// False where the kernel refuses (Linux before 4.0, or /proc read-only).
bool restartPeakResident()
{
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    return bool(clear);
}

// FLOPs of one forward at sequence length s (multiply-adds count two): the Linears and the two
// attention matmuls; softmax, LayerNorm and GELU are negligible next to them.
double forwardFlops(int64_t s, int64_t h, int64_t i, int64_t layers)
{
    const double linears = 2.0 * s * (4.0 * h * h + 2.0 * h * i);
    const double attention = 2.0 * 2.0 * s * s * h;
    return layers * (linears + attention) + 2.0 * s * h * 2; // + qa_outputs
}

std::string contextOf300Words()
{
    const std::vector<std::string> words = {"the", "river", "flows", "past", "an", "old", "mill", "where", "farmers",
                                            "bring", "grain", "every", "autumn", "and", "the", "town", "gathers",
                                            "to", "celebrate", "harvest", "with", "music", "bread", "and", "stories"};
    std::string text;
    for (int w = 0; w < 300; ++w)
        text += (w ? " " : "") + words[static_cast<std::size_t>(w) % words.size()] + (w % 17 == 16 ? "." : "");
    return text;
}

void printRow(const std::string& name, const std::string& value, const std::string& note = "")
{
    std::printf("%-44s %22s  %s\n", name.c_str(), value.c_str(), note.c_str());
}

std::string ms(double v)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.1f ms", v);
    return buffer;
}


// Resident memory now, in MB: anonymous (the engine's own buffers) and file-backed (mapped
// checkpoint files and libraries), from /proc/self/status.
struct Resident {
    double anonMb = 0, fileMb = 0;
    double peakMb = 0; // VmHWM: the peak since the start or the last restartPeakResident
};
Resident residentNow()
{
    Resident r;
    std::ifstream status("/proc/self/status");
    std::string key;
    double kb = 0;
    std::string unit;
    while (status >> key) {
        if (key == "RssAnon:" && status >> kb >> unit)
            r.anonMb = kb / 1024.0;
        else if (key == "RssFile:" && status >> kb >> unit)
            r.fileMb = kb / 1024.0;
        else if (key == "VmHWM:" && status >> kb >> unit)
            r.peakMb = kb / 1024.0;
        else
            status.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    return r;
}

// Peak resident memory in MB: VmHWM, which clear_refs can restart (getrusage's maximum, the
// fallback where /proc does not say, cannot).
double peakResidentMb()
{
    if (const double peak = residentNow().peakMb; peak > 0)
        return peak;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_maxrss) / 1024.0; // kilobytes on Linux
}

// What each part of a loaded model pair adds to resident memory, in the order the bench builds
// them (docs/ARCHITECTURE.md, "Speed and memory": the memory budget of a loaded model).
struct MemoryLedger {
    Resident last = residentNow();
    json parts = json::array();
    void record(const std::string& part)
    {
        const Resident now = residentNow();
        parts.push_back({{"part", part}, {"anon_mb", now.anonMb - last.anonMb}, {"file_mb", now.fileMb - last.fileMb},
                         {"total_anon_mb", now.anonMb}, {"total_file_mb", now.fileMb}});
        last = now;
    }
};

// Runs `arguments` (argv[0] is the program) with its stdout written to `stdoutFile`; true when it
// exited with 0.
bool runChildProcess(const std::vector<std::string>& arguments, const std::string& stdoutFile)
{
    std::fflush(stdout); // the child would write what this process still buffers
    const pid_t child = fork();
    if (child < 0)
        return false;
    if (child == 0) {
        std::vector<char*> argv;
        for (const std::string& a : arguments)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        if (!std::freopen(stdoutFile.c_str(), "w", stdout))
            _exit(127);
        execv(argv[0], argv.data());
        _exit(127);
    }
    int status = 0;
    return waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Peak resident memory of a process running `arguments` (argv[0] is the program), in MB; its
// stdout goes to /dev/null. -1 when it could not run or failed. Linux carries a process's peak
// over exec, so a child forked from the bench (GBs resident) would report the bench's peak: the
// program runs under /usr/bin/time, itself small, which forks it afresh and writes its peak.
double childPeakResidentMb(const std::vector<std::string>& program, const std::string& workdir)
{
    const std::string peakFile = workdir + "/child-peak-kb.txt";
    std::vector<std::string> arguments = {"/usr/bin/time", "-f", "%M", "-o", peakFile};
    if (!fs::exists(arguments.front()))
        return -1;
    arguments.insert(arguments.end(), program.begin(), program.end());
    if (!runChildProcess(arguments, "/dev/null"))
        return -1;
    std::ifstream in(peakFile);
    double kilobytes = -1;
    return in >> kilobytes ? kilobytes / 1024.0 : -1;
}

// SQNR of the fp8 forward's Linears (the path that ran) against a float64 recomputation of the same
// FP8 products from each Linear's captured input, the tests' exhaustive-search rounding and the
// file's codes: sum over the probed Linears of exact^2 over sum of (ours - exact)^2.
// SQNR of a's first output (the logits) against b's, in dB (inf when identical).
double logitsSqnrDb(const ForwardResult& a, const ForwardResult& b)
{
    const std::vector<float>& x = a.outputs.front().tensor.values;
    const std::vector<float>& ref = b.outputs.front().tensor.values;
    double signal = 0, noise = 0;
    for (std::size_t i = 0; i < x.size() && i < ref.size(); ++i) {
        signal += double(ref[i]) * ref[i];
        noise += (double(ref[i]) - x[i]) * (double(ref[i]) - x[i]);
    }
    return noise == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(signal / noise);
}

double linearSqnrAgainstFloat64(EncoderModel& model, const std::string& fp8Dir, const EncoderInputs& inputs)
{
    const std::vector<std::string> modules = {"roberta.encoder.layer.0.attention.self.query",
                                              "roberta.encoder.layer.5.intermediate.dense",
                                              "roberta.encoder.layer.11.output.dense"};
    ForwardOptions options;
    options.capture.names = modules;
    const ForwardResult result = model.forward(inputs, options);
    auto captured = [&](const std::string& name) -> const FloatTensor& {
        for (const NamedTensor& t : result.captures)
            if (t.name == name)
                return t.tensor;
        throw Error("The bench's forward did not capture " + name + ".");
    };
    const auto store = TensorStore::openFile(fp8Dir + "/model.safetensors");
    double signal = 0, noise = 0;
    for (const std::string& module : modules) {
        const FloatTensor& x = captured(module + ".input");
        const FloatTensor& y = captured(module + ".output");
        const TensorView& codes = store->require(module + ".weight");
        const std::vector<float> weightScale = store->require(module + ".weight_scale").toFloat().values;
        const std::vector<float> bias = store->require(module + ".bias").toFloat().values;
        const int64_t in = codes.shape[1], out = codes.shape[0], rows = int64_t(x.values.size()) / in;
        std::vector<double> weights(static_cast<std::size_t>(out * in));
        for (std::size_t i = 0; i < weights.size(); ++i)
            weights[i] = testing::referenceDecodeE4M3(codes.data[i]);
        std::vector<double> values(static_cast<std::size_t>(in));
        for (int64_t t = 0; t < rows; ++t) {
            const float* row = x.values.data() + t * in;
            float amax = 0;
            for (int64_t k = 0; k < in; ++k)
                amax = std::max(amax, std::fabs(row[k]));
            const float sa = std::max(amax / 448.0f, FLT_MIN);
            for (int64_t k = 0; k < in; ++k)
                values[std::size_t(k)] = testing::referenceRoundToE4M3(row[k] / sa);
            for (int64_t o = 0; o < out; ++o) {
                double sum = 0;
                const double* w = weights.data() + o * in;
                for (int64_t k = 0; k < in; ++k)
                    sum += values[std::size_t(k)] * w[k];
                const double exact = double(sa) * weightScale[weightScale.size() == 1 ? 0 : std::size_t(o)] * sum + bias[std::size_t(o)];
                const double e = double(y.values[std::size_t(t * out + o)]) - exact;
                signal += exact * exact;
                noise += e * e;
            }
        }
    }
    return noise == 0 ? INFINITY : 10 * std::log10(signal / noise);
}

// fp8 forwards (1 x seq and 4 x seq tokens) on one FP8 GEMM path, with a model loaded for it.
json fp8PathTimings(Fp8GemmPath path, const std::string& fp8Dir, const EncoderInputs& one, const EncoderInputs& four,
                    int repeats, double* sqnrDb)
{
    forceFp8GemmPath(&path);
    json out;
    out["path"] = fp8GemmDescription();
    {
        std::unique_ptr<EncoderModel> model = EncoderModel::load(fp8Dir);
        ForwardOptions fp8Mode;
        out["forward_1x"] = measure(repeats, [&] { model->forward(one, fp8Mode); }).toJson();
        out["forward_4x"] = measure(std::max(1, repeats / 2), [&] { model->forward(four, fp8Mode); }).toJson();
        if (sqnrDb) {
            *sqnrDb = linearSqnrAgainstFloat64(*model, fp8Dir, one);
            out["linear_sqnr_db_vs_float64"] = *sqnrDb;
        }
    }
    forceFp8GemmPath(nullptr);
    return out;
}

// Questions per second of `evaluate` on the shared SQuAD sample, fp8 against the float reference.
// The sensitivity sweep on the bench input, per Linear and per layer, in forward-equivalents
// (issue 15's targets: <= 80 per Linear, <= 15 per layer), counted two ways:
// - over one fp8 forward (forward_equivalents, sweep_forward_equivalents);
// - over the mean forward of the runs the sweep stands for (sweep_run_forward_equivalents): its
//   baseline and float_one runs are fp8 forwards (one unit float), its fp8_one runs all-float
//   forwards (one unit FP8), and where FP8 GEMMs run on bf16 units an all-float forward costs
//   several fp8 forwards, so half of the sweep's runs are dearer than the first unit says.
json sensitivityTimings(EncoderModel& fp8, EncoderModel& reference, const std::vector<int64_t>& ids, double fp8ForwardMs,
                        double allFloatForwardMs)
{
    json out;
    for (const char* granularity : {"layer", "linear"}) {
        SensitivityInput input;
        input.single.inputIds = {ids};
        SensitivityOptions options;
        options.granularity = granularity;
        const auto start = std::chrono::steady_clock::now();
        // The sweep proper (references, baseline, all float, every entry both ways) ends with the
        // last entry; the suggestion's verification runs come after it.
        auto sweepEnd = start, firstEntryEnd = start;
        options.onEntry = [&](const SensitivityEntry&) {
            sweepEnd = std::chrono::steady_clock::now();
            if (firstEntryEnd == start)
                firstEntryEnd = sweepEnd;
        };
        const SensitivityResult result = runSensitivity(fp8, &reference, input, options);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        const double sweepMs = std::chrono::duration<double, std::milli>(sweepEnd - start).count();
        const double units = double(result.entries.size());
        // An entry's mean time, from the first entry's end to the last's (its two runs, no setup).
        const double entryMs = units > 1 ? std::chrono::duration<double, std::milli>(sweepEnd - firstEntryEnd).count() / (units - 1) : 0;
        const double meanRunMs = (fp8ForwardMs * (1 + units) + allFloatForwardMs * units) / (1 + 2 * units);
        out[granularity] = {{"seconds", ms / 1e3},
                            {"entries", result.entries.size()},
                            {"forwards", result.forwards},
                            {"forward_equivalents", ms / fp8ForwardMs},
                            {"sweep_seconds", sweepMs / 1e3},
                            {"sweep_forward_equivalents", sweepMs / fp8ForwardMs},
                            {"sweep_run_forward_equivalents", sweepMs / meanRunMs},
                            {"seconds_per_entry", entryMs / 1e3},
                            {"entry_fp8_forwards", entryMs / fp8ForwardMs},
                            {"whole_runs_ms", meanRunMs * (1 + 2 * units)}};
    }
    const ModelConfig& c = fp8.config();
    // Two records (baseline, all float) of numLayers + 1 layer inputs.
    out["layer_cache_mb"] = 2.0 * double(c.numLayers + 1) * double(ids.size()) * double(c.hiddenSize) * 4.0 / 1e6;
    return out;
}

json squadThroughput(EncoderModel& fp8, EncoderModel& reference, const std::string& squadFile, std::size_t samples,
                     bool groupByLength)
{
    const SquadDataset dataset = readSquadFile(squadFile);
    EvaluationOptions options;
    options.maxSamples = samples;
    options.maxDetailedDisagreements = 0;
    options.groupByLength = groupByLength;
    const EvaluationResult result = evaluateSquad(fp8, &reference, dataset, options);
    return {{"questions", result.examples.size()},
            {"questions_per_second", result.questionsPerSecond},
            {"seconds", result.seconds},
            {"batch_tokens", result.batchTokens},
            {"window_tokens", result.windowTokens},
            {"fp8_f1", result.runScores.f1},
            {"reference_f1", result.referenceScores.f1},
            {"agreement", result.agreement}};
}

// The command line into `options`; false (after printing the usage) on an unknown argument.
bool parseArguments(int argc, char** argv, Options& options)
{
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::cerr << arg << " needs a value\n";
                std::exit(2);
            }
            return argv[++i];
        };
        if (arg == "--workdir") options.workdir = next();
        else if (arg == "--output") options.output = next();
        else if (arg == "--threads") options.threads = std::atoi(next().c_str());
        else if (arg == "--repeats") options.repeats = std::atoi(next().c_str());
        else if (arg == "--seq") options.sequenceLength = std::atoi(next().c_str());
        else if (arg == "--profile-rows") options.profileRows = std::atoi(next().c_str());
        else if (arg == "--skip-peer") options.skipPeer = true;
        else if (arg == "--skip-sensitivity") options.skipSensitivity = true;
        else if (arg == "--squad-samples") options.squadSamples = static_cast<std::size_t>(std::atol(next().c_str()));
        else if (arg == "--embed")
            options.embed = true;
        else if (arg == "--embed-texts")
            options.embedTexts = static_cast<std::size_t>(std::atol(next().c_str()));
        else if (arg == "--profile") {
            options.profile = next();
            if (std::find(kProfiles.begin(), kProfiles.end(), options.profile) == kProfiles.end()) {
                std::cerr << "scalescope-bench: --profile takes " << profileChoices() << ", not \"" << options.profile
                          << "\"\n";
                return false;
            }
        } else {
            std::cerr << "usage: scalescope-bench [--workdir DIR] [--output FILE] [--threads N] [--repeats N] "
                         "[--seq N] [--skip-peer] [--skip-sensitivity] [--squad-samples N] [--profile "
                      << profileChoices() << " [--profile-rows N]] [--embed [--embed-texts N]]\n";
            return false;
        }
    }
    return true;
}

struct Checkpoints {
    std::string floatDir;
    std::string fp8Dir;
    bool realTokenizer = false;
};

// The float checkpoint and its FP8 quantization in the work directory, made on the first run.
Checkpoints prepareCheckpoints(const Options& options)
{
    Checkpoints c;
    c.floatDir = options.workdir + "/roberta-base-float";
    c.fp8Dir = options.workdir + "/roberta-base-fp8";
    fs::create_directories(options.workdir);
    if (!fs::exists(c.floatDir + "/model.safetensors")) {
        std::cerr << "Generating a roberta-base-sized float checkpoint in " << c.floatDir << "...\n";
        testing::TinyModelSpec spec;
        spec.hiddenSize = 768;
        spec.numLayers = 12;
        spec.numHeads = 12;
        spec.intermediateSize = 3072;
        spec.maxPositionEmbeddings = 514;
        spec.vocabularySize = 50265;
        testing::writeTinyFloatCheckpoint(c.floatDir, spec);
    }
    // With the real roberta-base tokenizer (same vocabulary size) the QA latency tokenizes real
    // text as a user's would; the generated byte-level one splits it into far more tokens.
    const std::string shared = std::string(SCALESCOPE_SHARED_DATA) + "/roberta-base-tokenizer";
    c.realTokenizer = fs::exists(shared + "/vocab.json");
    for (const std::string& dir : {c.floatDir, c.fp8Dir}) {
        if (!c.realTokenizer || !fs::exists(dir))
            continue;
        fs::copy_file(shared + "/vocab.json", dir + "/vocab.json", fs::copy_options::overwrite_existing);
        fs::copy_file(shared + "/merges.txt", dir + "/merges.txt", fs::copy_options::overwrite_existing);
    }
    if (!fs::exists(c.fp8Dir + "/model.safetensors")) {
        std::cerr << "Quantizing it to " << c.fp8Dir << "...\n";
        QuantizeOptions q;
        q.overwrite = true;
        quantizeCheckpoint(c.floatDir, c.fp8Dir, q);
    }
    return c;
}

// Everything one run measures, as the report and the table need it.
struct Measurements {
    Timing load;
    Timing firstLoad; // in a process of its own (an empty Timing when the child could not run)
    Timing fp8Forward;
    Timing dequantForward;
    Timing twinForward;
    json twinFirstNonFinite;
    double twinSqnrDb = 0;
    Timing referenceForward;
    Timing allFloatForward;
    Timing compare;
    Timing referenceForward4;
    json pathReports = json::array();
    double comparePeakMb = -1;
    json evaluateFileOrder = nullptr;
    json evaluateGrouped = nullptr;
    double flops = 0;
    double gemmHidden = 0;
    double gemmUp = 0;
    double gemmDown = 0;
    double boundMs = 0;
    double attainableGflops = 0;
    double fp8GemmQkv = 0, fp8GemmHidden = 0, fp8GemmUp = 0, fp8GemmDown = 0; // the FP8 GEMM alone (bf16 where it runs)
    double fp8BoundMs = 0;
    double fp8AttainableGflops = 0;
    // Attention's per-head float32 products alone (q k^T, p v) at the forward's shapes, and what they
    // take of one forward at those rates (the FP8 GEMM limit leaves them out: they stay float32).
    double attentionScoresGflops = 0, attentionContextGflops = 0, attentionBoundMs = 0;
    MemoryLedger memory;
    double loadedResidentMb = 0; // peak resident memory once both models are loaded, before any forward
    Timing qaLatency;
    json peer = nullptr;
    json peerEnginePlacement = nullptr;
    json peerFmsFallback = nullptr; // fms_mo's CPU fallback in PyTorch, engine placement
    json peerBf16 = nullptr;        // PyTorch eager bf16 (issue 53's peer), torch threads, 1 x seq
    json peerBf16Four = nullptr;    // the same, 4 x seq
};

// A batch-1 input of the bench's sequence length: <s>, random ids, </s>.
std::vector<int64_t> benchInputIds(int sequenceLength, std::mt19937& random)
{
    std::vector<int64_t> ids = {0};
    while (static_cast<int>(ids.size()) < sequenceLength - 1)
        ids.push_back(4 + static_cast<int64_t>(random() % 50000));
    ids.push_back(2);
    return ids;
}

// The 1 x seq forwards in every mode, and a full compare.
void measureForwards(EncoderModel& fp8, EncoderModel& reference, const std::vector<int64_t>& ids, int repeats,
                     Measurements& m)
{
    const EncoderInputs inputs{{ids}, {}, {}, {}};
    ForwardOptions fp8Mode, dequantMode;
    dequantMode.mode = RunMode::Dequant;

    m.fp8Forward = measure(repeats, [&] { fp8.forward(inputs, fp8Mode); });
    m.memory.record("fp8 forwards (activations)");
    m.dequantForward = measure(repeats, [&] { fp8.forward(inputs, dequantMode); });
    m.memory.record("dequant forwards (decoded float32 weights)");
    // The fp16 twin: its half weights are made on the first fp16 forward, outside the timing.
    ForwardOptions twinMode;
    twinMode.mode = RunMode::Fp16;
    const ForwardResult twinResult = fp8.forward(inputs, twinMode);
    m.twinFirstNonFinite = twinResult.firstNonFinite();
    m.twinForward = measure(repeats, [&] { fp8.forward(inputs, twinMode); });
    m.memory.record("fp16 twin forwards (its weights)");
    const ForwardResult fp8Result = fp8.forward(inputs, fp8Mode);
    m.twinSqnrDb = logitsSqnrDb(twinResult, fp8Result);
    m.referenceForward = measure(repeats, [&] { reference.forward(inputs, dequantMode); });
    m.memory.record("reference forwards (its weights read)");
    // What a sweep's fp8_one run would cost whole: every quantized Linear float (the reference's weights).
    ForwardOptions allFloatMode;
    allFloatMode.overrides.othersFloat = true;
    allFloatMode.floatWeightsFrom = floatWeightSource(&reference);
    m.allFloatForward = measure(repeats, [&] { fp8.forward(inputs, allFloatMode); });
    ComparisonInput compareInput;
    compareInput.inputIds = {ids};
    m.compare = measure(repeats, [&] { compareRuns(fp8, &reference, compareInput); });
    m.memory.record("compares (all captures)");
}

// 4 x seq tokens, and every FP8 GEMM path this machine runs, each with a model loaded for it.
void measureFp8Paths(EncoderModel& reference, const std::string& fp8Dir, const std::vector<int64_t>& ids, int repeats,
                     std::mt19937& random, Measurements& m)
{
    const EncoderInputs inputs{{ids}, {}, {}, {}};
    ForwardOptions dequantMode;
    dequantMode.mode = RunMode::Dequant;
    EncoderInputs four;
    for (int row = 0; row < 4; ++row) {
        std::vector<int64_t> rowIds = ids;
        std::shuffle(rowIds.begin() + 1, rowIds.end() - 1, random);
        four.inputIds.push_back(rowIds);
    }
    m.referenceForward4 = measure(std::max(1, repeats / 2), [&] { reference.forward(four, dequantMode); });
    std::vector<Fp8GemmPath> paths = {Fp8GemmPath::Float32, Fp8GemmPath::FactoredFloat32};
    if (fp8GemmStatus().bf16Available)
        paths.insert(paths.begin(), Fp8GemmPath::Bf16);
    for (Fp8GemmPath path : paths) {
        double sqnr = 0;
        json timings = fp8PathTimings(path, fp8Dir, inputs, four, repeats, &sqnr);
        timings["default"] = path == fp8GemmPath();
        m.pathReports.push_back(timings);
    }
}

// Each path's forwards over the reference's (measureForwards runs the 1 x seq reference after them).
void addPathRatios(Measurements& m)
{
    for (json& timings : m.pathReports) {
        timings["over_reference_1x"] = timings["forward_1x"]["median_ms"].get<double>() / m.referenceForward.median();
        timings["over_reference_4x"] = timings["forward_4x"]["median_ms"].get<double>() / m.referenceForward4.median();
    }
}

// Peak resident memory of `scalescope-cli compare` on the bench input, in its own process.
double compareCliPeakMb(const Checkpoints& checkpoints, const std::vector<int64_t>& ids)
{
    std::string idsText;
    for (int64_t id : ids)
        idsText += (idsText.empty() ? "" : ",") + std::to_string(id);
    return childPeakResidentMb({SCALESCOPE_CLI, "compare", checkpoints.fp8Dir, "--reference", checkpoints.floatDir,
                                "--input-ids", idsText, "--json"},
                               fs::path(checkpoints.fp8Dir).parent_path().string());
}

// The FP8 checkpoint's load as a new process's first: the bench's own binary with --profile
// first-load, `repeats` times. The in-process row reloads into the heap the previous model freed
// (kept by keepForwardBuffers); a first load faults every weight page in (on the float32 FP8 path,
// 340 MB of decoded weights at roberta-base size). Still a warm file cache.
Timing firstLoadInNewProcess(const Options& options)
{
    Timing t;
    const std::string outputFile = options.workdir + "/child-first-load.txt";
    const std::vector<std::string> arguments = {"/proc/self/exe", "--workdir", options.workdir, "--threads",
                                                std::to_string(options.threads), "--profile", "first-load"};
    for (int i = 0; i < options.repeats; ++i) {
        if (!runChildProcess(arguments, outputFile))
            return {};
        std::ifstream in(outputFile);
        double ms = -1;
        for (std::string line; std::getline(in, line);)
            if (line.rfind("first-load: ", 0) == 0)
                ms = std::atof(line.c_str() + 12);
        if (ms <= 0)
            return {};
        t.ms.push_back(ms);
    }
    return t;
}

// The forward's FLOPs, bare-GEMM rates of its shapes, and the attainable time of its Linears at those rates.
void measureGemmLimits(const ModelConfig& c, int sequenceLength, Measurements& m)
{
    m.flops = forwardFlops(sequenceLength, c.hiddenSize, c.intermediateSize, c.numLayers);
    const int64_t s = sequenceLength;
    m.gemmHidden = measureMatmulGflops(s, c.hiddenSize, c.hiddenSize, 10);
    m.gemmUp = measureMatmulGflops(s, c.intermediateSize, c.hiddenSize, 10);
    m.gemmDown = measureMatmulGflops(s, c.hiddenSize, c.intermediateSize, 10);
    const double perLayerHidden = 2.0 * s * c.hiddenSize * c.hiddenSize;
    const double perLayerUpDown = 2.0 * s * c.hiddenSize * c.intermediateSize;
    m.boundMs = 1e3 * c.numLayers *
                (4 * perLayerHidden / (m.gemmHidden * 1e9) + perLayerUpDown / (m.gemmUp * 1e9) +
                 perLayerUpDown / (m.gemmDown * 1e9));
    const double linearFlops = c.numLayers * (4 * perLayerHidden + 2 * perLayerUpDown);
    m.attainableGflops = linearFlops / (m.boundMs * 1e6);
    // q, k and v run as one GEMM of width 3h in fp8 mode; it is timed as such.
    m.fp8GemmQkv = measureFp8GemmGflops(s, 3 * c.hiddenSize, c.hiddenSize, 10);
    m.fp8GemmHidden = measureFp8GemmGflops(s, c.hiddenSize, c.hiddenSize, 10);
    m.fp8GemmUp = measureFp8GemmGflops(s, c.intermediateSize, c.hiddenSize, 10);
    m.fp8GemmDown = measureFp8GemmGflops(s, c.hiddenSize, c.intermediateSize, 10);
    m.fp8BoundMs = 1e3 * c.numLayers *
                   (3 * perLayerHidden / (m.fp8GemmQkv * 1e9) + perLayerHidden / (m.fp8GemmHidden * 1e9) +
                    perLayerUpDown / (m.fp8GemmUp * 1e9) + perLayerUpDown / (m.fp8GemmDown * 1e9));
    m.fp8AttainableGflops = linearFlops / (m.fp8BoundMs * 1e6);
    const int64_t heads = c.numHeads, headDim = c.hiddenSize / c.numHeads;
    m.attentionScoresGflops = measureHeadsMatmulGflops(heads, s, headDim, s, /*transposedB=*/true, 10);
    m.attentionContextGflops = measureHeadsMatmulGflops(heads, s, s, headDim, /*transposedB=*/false, 10);
    const double perLayerProduct = 2.0 * heads * s * s * headDim; // each of the two
    m.attentionBoundMs = 1e3 * c.numLayers *
                         (perLayerProduct / (m.attentionScoresGflops * 1e9) + perLayerProduct / (m.attentionContextGflops * 1e9));
}

// The PyTorch eager peers: the float32 forward as PyTorch sets itself up with N threads and with
// the engine's thread placement (OpenBLAS N, OpenMP 1), so the comparison is like for like, and
// fms_mo's CPU fallback for FP8 Linears (quant-dequant activations, weights dequantized at every
// call, F.linear) on the FP8 checkpoint, with the engine's placement; and the same forward in eager
// bf16 (oneDNN's bf16 GEMMs where the CPU has them) at 1 x seq and 4 x seq, torch.set_num_threads
// set to the engine's threads: what a user who wants speed runs instead (issue 53).
void runPyTorchPeers(const Options& options, const Checkpoints& checkpoints, Measurements& m)
{
    struct Peer {
        const char* name;
        const char* placement;
        const char* variant;
        int rows;
        json* into;
    };
    for (const Peer& peer : {Peer{"float-torch", "torch", "float", 1, &m.peer},
                             Peer{"float-engine", "engine", "float", 1, &m.peerEnginePlacement},
                             Peer{"fms-fallback-engine", "engine", "fms-fallback", 1, &m.peerFmsFallback},
                             Peer{"bf16-torch", "torch", "bf16", 1, &m.peerBf16},
                             Peer{"bf16-torch-4x", "torch", "bf16", 4, &m.peerBf16Four}}) {
        const std::string peerJson = options.workdir + "/peer-" + peer.name + ".json";
        std::error_code ignored;
        fs::remove(peerJson, ignored);
        const std::string command = "/usr/bin/python3 " + std::string(SCALESCOPE_TORCH_PEER) + " --checkpoint " +
                                    checkpoints.floatDir + " --fp8-checkpoint " + checkpoints.fp8Dir + " --variant " +
                                    peer.variant + " --seq " + std::to_string(options.sequenceLength) + " --threads " +
                                    std::to_string(computeThreads()) + " --repeats " +
                                    std::to_string(options.repeats) + " --rows " + std::to_string(peer.rows) +
                                    " --placement " + peer.placement + " --output " +
                                    peerJson + " 1>&2";
        if (std::system(command.c_str()) == 0 && fs::exists(peerJson)) {
            std::ifstream in(peerJson);
            *peer.into = json::parse(in);
        } else {
            std::cerr << "PyTorch peer not run (python3-torch missing?): install it with packaging/install-deps.sh --dev\n";
            break;
        }
    }
}

// The report of the FP8 GEMM path fp8 mode takes by default (it has the 4 x seq forward), or null.
const json* defaultPathReport(const Measurements& m)
{
    for (const json& path : m.pathReports)
        if (path["default"].get<bool>())
            return &path;
    return nullptr;
}

// The measurements into the JSON report (beside what main wrote at load time).
void addMeasurements(const Measurements& m, json& report)
{
    report["fp8_forward"] = m.fp8Forward.toJson();
    report["dequant_forward"] = m.dequantForward.toJson();
    report["fp16_twin_forward"] = m.twinForward.toJson();
    report["fp16_twin_over_fp8"] = m.twinForward.median() / m.fp8Forward.median();
    report["fp16_twin_vs_fp8_logits_sqnr_db"] = m.twinSqnrDb;
    report["fp16_twin_first_nonfinite"] = m.twinFirstNonFinite;
    report["reference_forward"] = m.referenceForward.toJson();
    report["all_float_forward"] = m.allFloatForward.toJson();
    report["compare"] = m.compare.toJson();
    report["compare_cli_peak_resident_mb"] = m.comparePeakMb;
    report["reference_forward_4x"] = m.referenceForward4.toJson();
    report["fp8_paths"] = m.pathReports;
    report["evaluate_file_order"] = m.evaluateFileOrder;
    report["evaluate_grouped_by_length"] = m.evaluateGrouped;
    report["qa_end_to_end_300_words"] = m.qaLatency.toJson();
    report["forward_gflop"] = m.flops / 1e9;
    report["gemm_gflops"] = {{"384x768x768", m.gemmHidden}, {"384x3072x768", m.gemmUp}, {"384x768x3072", m.gemmDown},
                             {"attainable_for_forward_linears", m.attainableGflops}};
    report["linear_bound_ms"] = m.boundMs;
    report["fp8_gemm_gflops"] = {{"384x2304x768", m.fp8GemmQkv}, {"384x768x768", m.fp8GemmHidden},
                                 {"384x3072x768", m.fp8GemmUp}, {"384x768x3072", m.fp8GemmDown},
                                 {"attainable_for_forward_linears", m.fp8AttainableGflops}};
    report["fp8_linear_bound_ms"] = m.fp8BoundMs;
    report["attention_gflops"] = {{"scores_q_kT", m.attentionScoresGflops}, {"context_p_v", m.attentionContextGflops},
                                  {"bound_ms", m.attentionBoundMs}};
    report["memory_parts"] = m.memory.parts;
    report["pytorch_fms_fallback_peer_engine_placement"] = m.peerFmsFallback;
    report["pytorch_eager_peer"] = m.peer;
    report["pytorch_eager_peer_engine_placement"] = m.peerEnginePlacement;
    report["pytorch_eager_bf16_peer"] = m.peerBf16;
    report["pytorch_eager_bf16_peer_4x"] = m.peerBf16Four;
    const double fp8Ratio = m.fp8Forward.median() / m.referenceForward.median();
    const double compareRatio = m.compare.median() / m.referenceForward.median();
    report["ratios"] = {{"fp8_over_reference", fp8Ratio},
                        {"compare_over_reference", compareRatio},
                        {"reference_fraction_of_gemm_limit", m.flops / 1e6 / m.referenceForward.median() / m.attainableGflops},
                        {"fp8_fraction_of_gemm_limit", m.flops / 1e6 / m.fp8Forward.median() / m.attainableGflops},
                        {"fp8_fraction_of_fp8_gemm_limit", m.flops / 1e6 / m.fp8Forward.median() / m.fp8AttainableGflops}};
    if (!m.peer.is_null())
        report["ratios"]["reference_over_pytorch"] = m.referenceForward.median() / m.peer["median_ms"].get<double>();
    if (!m.peerEnginePlacement.is_null()) {
        const double peerMs = m.peerEnginePlacement["median_ms"].get<double>();
        report["ratios"]["reference_over_pytorch_engine_placement"] = m.referenceForward.median() / peerMs;
        report["ratios"]["fp8_over_pytorch_engine_placement"] = m.fp8Forward.median() / peerMs;
    }
    if (!m.peerFmsFallback.is_null())
        report["ratios"]["fp8_over_fms_fallback_engine_placement"] =
            m.fp8Forward.median() / m.peerFmsFallback["median_ms"].get<double>();
    if (!m.peerBf16.is_null())
        report["ratios"]["fp8_over_pytorch_bf16"] = m.fp8Forward.median() / m.peerBf16["median_ms"].get<double>();
    if (!m.peerBf16Four.is_null() && defaultPathReport(m))
        report["ratios"]["fp8_4x_over_pytorch_bf16_4x"] =
            (*defaultPathReport(m))["forward_4x"]["median_ms"].get<double>() / m.peerBf16Four["median_ms"].get<double>();
    report["ratios"]["compare_over_fp8_plus_reference"] =
        m.compare.median() / (m.fp8Forward.median() + m.referenceForward.median());
}

void printTimingRow(const std::string& name, const Timing& t, const std::string& note = "")
{
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, "%.1f ms [%.1f-%.1f]", t.median(), t.min(), t.max());
    printRow(name, buffer, note);
}

// PyTorch eager bf16 at 1 x seq and 4 x seq, each beside the fp8 forward of the same size.
void printBf16PeerRows(const Measurements& m)
{
    char note[128];
    if (!m.peerBf16.is_null()) {
        const double peerMs = m.peerBf16["median_ms"].get<double>();
        std::snprintf(note, sizeof note, "fp8 %.2fx of it", m.fp8Forward.median() / peerMs);
        printRow("PyTorch eager bf16 (torch threads)", ms(peerMs), note);
    }
    if (!m.peerBf16Four.is_null()) {
        const double peerMs = m.peerBf16Four["median_ms"].get<double>();
        const json* path = defaultPathReport(m);
        if (path)
            std::snprintf(note, sizeof note, "fp8 4 x seq %.2fx of it",
                          (*path)["forward_4x"]["median_ms"].get<double>() / peerMs);
        printRow("PyTorch eager bf16, 4 x seq (torch threads)", ms(peerMs), path ? note : "");
    }
}

// The table's forwards, sweeps, compare, QA, load, memory and GEMM rows.
void printForwardRows(const Measurements& m, const json& report)
{
    char note[192];
    std::snprintf(note, sizeof note, "%.0f GFLOP/s, %.0f%% of GEMM limit", m.flops / 1e6 / m.fp8Forward.median(),
                  100 * m.flops / 1e6 / m.fp8Forward.median() / m.attainableGflops);
    printTimingRow("fp8 forward", m.fp8Forward, note);
    std::snprintf(note, sizeof note, "%.0f%% of the FP8 GEMM limit (%.0f GFLOP/s at the Linears' shapes)",
                  100 * m.flops / 1e6 / m.fp8Forward.median() / m.fp8AttainableGflops, m.fp8AttainableGflops);
    printRow("", "", note);
    printTimingRow("dequant forward", m.dequantForward);
    std::snprintf(note, sizeof note, "%.2fx fp8; logits vs fp8 %.1f dB", m.twinForward.median() / m.fp8Forward.median(),
                  m.twinSqnrDb);
    printTimingRow("fp16 twin (AIU) forward", m.twinForward, note);
    std::snprintf(note, sizeof note, "%.2fx fp8 (a sweep's fp8_one run, whole)", m.allFloatForward.median() / m.fp8Forward.median());
    printTimingRow("all-float forward (fp8 model)", m.allFloatForward, note);
    if (report.contains("sensitivity"))
        for (const char* granularity : {"layer", "linear"}) {
            const json& sweep = report["sensitivity"][granularity];
            std::snprintf(note, sizeof note,
                          "%.2f s (%.2f fp8 forwards) per entry; sweep alone %.1f fp8 / %.1f run forwards; all %.1f "
                          "fp8, %d forwards",
                          sweep["seconds_per_entry"].get<double>(), sweep["entry_fp8_forwards"].get<double>(),
                          sweep["sweep_forward_equivalents"].get<double>(),
                          sweep["sweep_run_forward_equivalents"].get<double>(),
                          sweep["forward_equivalents"].get<double>(), sweep["forwards"].get<int>());
            char time[64];
            std::snprintf(time, sizeof time, "%.1f s", sweep["seconds"].get<double>());
            printRow(std::string("sensitivity sweep per ") + granularity, time, note);
        }
    std::snprintf(note, sizeof note, "%.0f GFLOP/s, %.0f%% of GEMM limit", m.flops / 1e6 / m.referenceForward.median(),
                  100 * m.flops / 1e6 / m.referenceForward.median() / m.attainableGflops);
    printTimingRow("reference (float32) forward", m.referenceForward, note);
    if (!m.peer.is_null())
        printRow("PyTorch eager float32 (torch threads)", ms(m.peer["median_ms"].get<double>()));
    if (!m.peerEnginePlacement.is_null()) {
        const double peerMs = m.peerEnginePlacement["median_ms"].get<double>();
        std::snprintf(note, sizeof note, "reference %.2fx, fp8 %.2fx of it", m.referenceForward.median() / peerMs,
                      m.fp8Forward.median() / peerMs);
        printRow("PyTorch eager float32 (engine placement)", ms(peerMs), note);
    }
    if (!m.peerFmsFallback.is_null()) {
        const double peerMs = m.peerFmsFallback["median_ms"].get<double>();
        std::snprintf(note, sizeof note, "fp8 %.2fx of it", m.fp8Forward.median() / peerMs);
        printRow("PyTorch fms_mo CPU fallback (engine placement)", ms(peerMs), note);
    }
    printBf16PeerRows(m);
    std::snprintf(note, sizeof note, "%.2fx reference, %.2fx (fp8 + reference)", m.compare.median() / m.referenceForward.median(),
                  m.compare.median() / (m.fp8Forward.median() + m.referenceForward.median()));
    printTimingRow("full compare (both runs, all captures)", m.compare, note);
    printTimingRow("QA end to end, 300-word context", m.qaLatency);
    printTimingRow("FP8 checkpoint load (warm cache)", m.load, "a reload: into the heap the last model freed");
    if (!m.firstLoad.ms.empty())
        printTimingRow("FP8 checkpoint load, new process (warm)", m.firstLoad, "its weight pages faulted in");
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, "%.0f MB", m.loadedResidentMb);
    printRow("resident memory, fp8 + reference loaded", buffer);
    std::snprintf(buffer, sizeof buffer, "%.0f MB", peakResidentMb());
    printRow("peak resident memory, whole bench", buffer, "both models in every mode, sweeps, evaluate");
    std::snprintf(buffer, sizeof buffer, "%.1f GFLOP", m.flops / 1e9);
    printRow("forward FLOPs", buffer);
    std::snprintf(buffer, sizeof buffer, "%.0f / %.0f / %.0f", m.gemmHidden, m.gemmUp, m.gemmDown);
    printRow("bare float32 GEMM GFLOP/s (768x768, 768->3072, 3072->768)", buffer);
    std::snprintf(buffer, sizeof buffer, "%.0f / %.0f / %.0f / %.0f", m.fp8GemmQkv, m.fp8GemmHidden, m.fp8GemmUp, m.fp8GemmDown);
    printRow("bare FP8 GEMM GFLOP/s (qkv 768->2304, 768x768, up, down)", buffer);
    std::snprintf(buffer, sizeof buffer, "%.0f / %.0f", m.attentionScoresGflops, m.attentionContextGflops);
    char attentionNote[96];
    std::snprintf(attentionNote, sizeof attentionNote, "%.1f ms of a forward at these rates (FP8 bound %.1f ms)",
                  m.attentionBoundMs, m.fp8BoundMs);
    printRow("bare float32 attention GFLOP/s (q k^T, p v)", buffer, attentionNote);
    for (const json& part : m.memory.parts) {
        std::snprintf(buffer, sizeof buffer, "%+.0f MB", part["anon_mb"].get<double>() + part["file_mb"].get<double>());
        char detail[128];
        std::snprintf(detail, sizeof detail, "%+.0f anonymous, %+.0f mapped files", part["anon_mb"].get<double>(),
                      part["file_mb"].get<double>());
        printRow("memory: " + part["part"].get<std::string>(), buffer, detail);
    }
    std::snprintf(buffer, sizeof buffer, "%.2fx", m.fp8Forward.median() / m.referenceForward.median());
    printRow("fp8 / reference forward", buffer);
    printTimingRow("reference (float32) forward, 4 x seq", m.referenceForward4);
}

// The table's per-FP8-GEMM-path blocks, the compare CLI's memory and the evaluate rows.
void printPathAndEvaluateRows(const Measurements& m)
{
    char buffer[96];
    for (const json& path : m.pathReports) {
        std::printf("\n%s%s\n", path["path"].get<std::string>().c_str(), path["default"].get<bool>() ? " [default]" : "");
        std::snprintf(buffer, sizeof buffer, "%.1f ms, %.2fx", path["forward_1x"]["median_ms"].get<double>(),
                      path["over_reference_1x"].get<double>());
        printRow("  fp8 forward, 1 x seq (vs reference)", buffer);
        std::snprintf(buffer, sizeof buffer, "%.1f ms, %.2fx", path["forward_4x"]["median_ms"].get<double>(),
                      path["over_reference_4x"].get<double>());
        printRow("  fp8 forward, 4 x seq (vs reference)", buffer);
        std::snprintf(buffer, sizeof buffer, "%.1f dB", path["linear_sqnr_db_vs_float64"].get<double>());
        printRow("  3 Linears vs float64 recomputation", buffer);
    }
    std::printf("\n");
    std::snprintf(buffer, sizeof buffer, "%.0f MB", m.comparePeakMb);
    printRow("compare (scalescope-cli) peak resident memory", buffer);
    for (const auto& [name, e] : {std::make_pair("evaluate, file-order batches", m.evaluateFileOrder),
                                  std::make_pair("evaluate, length-grouped batches", m.evaluateGrouped)}) {
        if (e.is_null())
            continue;
        std::snprintf(buffer, sizeof buffer, "%.2f q/s", e["questions_per_second"].get<double>());
        char detail[128];
        std::snprintf(detail, sizeof detail, "%zu questions, %zu of %zu positions real",
                      e["questions"].get<std::size_t>(), e["window_tokens"].get<std::size_t>(),
                      e["batch_tokens"].get<std::size_t>());
        printRow(name, buffer, detail);
    }
}

// The table on stdout: its heading, then every row.
void printTable(const Options& options, const Measurements& m, const json& report)
{
    std::printf(
        "\nScaleScope benchmark: roberta-base size, seq %d, batch 1, %d threads, %d repeats (median [min-max])\n\n",
        options.sequenceLength, computeThreads(), options.repeats);
    std::printf("CPU: %s\n%s\n%s\n\n", cpuModelAndFlags().c_str(), fp8GemmDescription().c_str(),
        floatGemmDescription().c_str());
    printForwardRows(m, report);
    printPathAndEvaluateRows(m);
}

// --profile first-load: one load of the FP8 checkpoint, timed from a process that has loaded nothing.
int profileFirstLoad(const Checkpoints& checkpoints)
{
    const auto start = std::chrono::steady_clock::now();
    const std::unique_ptr<EncoderModel> model = EncoderModel::load(checkpoints.fp8Dir);
    std::printf("first-load: %.3f ms\n",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    return 0;
}

// This process's minor page faults so far (first touches of fresh memory).
long minorPageFaults()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

// --profile first-forward: the FP8 checkpoint loaded in a process that has run nothing, then its
// first fp8 forward at 1 x seq and `repeats` warm ones after it, each printed in ms, with the load
// before them (what is done at load is not done by the first forward: the two go together) and
// the page faults each took (fresh memory touched: what a first forward pays that a warm one does not).
int profileFirstForward(const Options& options, const Checkpoints& checkpoints)
{
    const long faultsAtStart = minorPageFaults();
    const auto loadStart = std::chrono::steady_clock::now();
    const std::unique_ptr<EncoderModel> model = EncoderModel::load(checkpoints.fp8Dir);
    std::printf("load: %.3f ms, %ld page faults\n",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - loadStart).count(),
                minorPageFaults() - faultsAtStart);
    std::mt19937 random(7);
    const EncoderInputs inputs{{benchInputIds(options.sequenceLength, random)}, {}, {}, {}};
    const ForwardOptions fp8Mode;
    const long faultsBeforeFirst = minorPageFaults();
    const Timing first = measure(1, [&] { model->forward(inputs, fp8Mode); }, /*warmUp=*/false);
    const long faultsBeforeWarm = minorPageFaults();
    const Timing warm = measure(options.repeats, [&] { model->forward(inputs, fp8Mode); }, /*warmUp=*/false);
    std::printf("first-forward: %.3f ms, %ld page faults\nwarm-forward: %.3f ms median [%.3f-%.3f], %ld page faults "
                "in %d\nfirst-over-warm: %.3f\n",
                first.median(), faultsBeforeWarm - faultsBeforeFirst, warm.median(), warm.min(), warm.max(),
                minorPageFaults() - faultsBeforeWarm, options.repeats, first.median() / warm.median());
    return 0;
}

// One per-Linear sweep's entries timed: from the first entry's end to the last's, over the entries
// between (so the references, the baseline and the all-float run before the first are left out).
struct SweepEntryTiming {
    std::size_t entries = 0;
    std::size_t forwards = 0;
    double secondsPerEntry = 0;
};

SweepEntryTiming timeSweepEntries(InferenceBackend& run, InferenceBackend& reference, const std::vector<int64_t>& ids)
{
    SensitivityInput input;
    input.single.inputIds = {ids};
    SensitivityOptions options;
    options.granularity = "linear";
    std::vector<std::chrono::steady_clock::time_point> ends;
    options.onEntry = [&](const SensitivityEntry&) { ends.push_back(std::chrono::steady_clock::now()); };
    const SensitivityResult result = runSensitivity(run, &reference, input, options);
    SweepEntryTiming t;
    t.entries = result.entries.size();
    t.forwards = result.forwards;
    if (ends.size() > 1)
        t.secondsPerEntry = std::chrono::duration<double>(ends.back() - ends.front()).count() / double(ends.size() - 1);
    return t;
}

// --profile sweep: the fp8 forward and the all-float one (what a sweep's fp8_one run is whole),
// then the per-Linear sweep with its reuse of unchanged layers and without it, `repeats` times
// each in turn (a shared machine's load falls on both alike), seconds per entry in each unit.
int profileSweep(const Options& options, const Checkpoints& checkpoints)
{
    std::mt19937 random(7);
    const std::vector<int64_t> ids = benchInputIds(options.sequenceLength, random);
    const std::unique_ptr<EncoderModel> fp8 = EncoderModel::load(checkpoints.fp8Dir);
    const std::unique_ptr<EncoderModel> reference = EncoderModel::load(checkpoints.floatDir);
    const EncoderInputs inputs{{ids}, {}, {}, {}};
    const Timing fp8Forward = measure(options.repeats, [&] { fp8->forward(inputs, ForwardOptions{}); });
    ForwardOptions allFloatMode;
    allFloatMode.overrides.othersFloat = true;
    allFloatMode.floatWeightsFrom = floatWeightSource(reference.get());
    const Timing allFloat = measure(options.repeats, [&] { fp8->forward(inputs, allFloatMode); });
    std::printf("fp8 forward: %.1f ms median [%.1f-%.1f]\nall-float forward: %.1f ms median [%.1f-%.1f] (%.2fx fp8)\n",
                fp8Forward.median(), fp8Forward.min(), fp8Forward.max(), allFloat.median(), allFloat.min(),
                allFloat.max(), allFloat.median() / fp8Forward.median());
    testing::ForwardingBackend whole(*fp8, /*resumes=*/false); // the sweep reuses nothing
    Timing reusing, wholeRuns;
    for (int round = 0; round < std::max(1, options.repeats); ++round)
        for (InferenceBackend* run : {static_cast<InferenceBackend*>(fp8.get()), static_cast<InferenceBackend*>(&whole)}) {
            const SweepEntryTiming t = timeSweepEntries(*run, *reference, ids);
            (run == &whole ? wholeRuns : reusing).ms.push_back(t.secondsPerEntry * 1e3);
            std::printf("round %d, %s: %zu entries, %zu forwards, %.3f s per entry\n", round + 1,
                        run == &whole ? "whole runs" : "reusing unchanged layers", t.entries, t.forwards,
                        t.secondsPerEntry);
        }
    for (const auto& [name, t] : {std::pair<const char*, const Timing&>{"reusing unchanged layers", reusing},
                                  std::pair<const char*, const Timing&>{"whole runs", wholeRuns}})
        std::printf("sweep per linear, %s: %.3f s per entry median [%.3f-%.3f] = %.2f fp8 forwards, %.2f all-float "
                    "forwards\n",
                    name, t.median() / 1e3, t.min() / 1e3, t.max() / 1e3, t.median() / fp8Forward.median(),
                    t.median() / allFloat.median());
    return 0;
}

// Any other --profile: one task over and over, nothing else, for a profiler.
int profileTask(const Options& options, const Checkpoints& checkpoints)
{
    std::mt19937 random(7);
    const std::vector<int64_t> ids = benchInputIds(options.sequenceLength, random);
    EncoderInputs inputs;
    inputs.inputIds.assign(static_cast<std::size_t>(std::max(1, options.profileRows)), ids);
    std::unique_ptr<EncoderModel> model
        = EncoderModel::load(options.profile == "reference" ? checkpoints.floatDir : checkpoints.fp8Dir);
    std::unique_ptr<EncoderModel> reference
        = options.profile == "compare" ? EncoderModel::load(checkpoints.floatDir) : nullptr;
    ForwardOptions mode;
    mode.mode = options.profile == "reference" ? RunMode::Dequant : RunMode::Fp8;
    ComparisonInput compareInput;
    compareInput.inputIds = {ids};
    const Timing t = measure(options.repeats, [&] {
        if (options.profile == "load") { // the FP8 checkpoint, one model at a time as in the table
            model.reset();
            model = EncoderModel::load(checkpoints.fp8Dir);
        } else if (reference)
            compareRuns(*model, reference.get(), compareInput);
        else
            model->forward(inputs, mode);
    });
    std::printf("%s: %.1f ms median [%.1f-%.1f]\n", options.profile.c_str(), t.median(), t.min(), t.max());
    return 0;
}

// What the report's numbers were measured on: the CPU, the GEMMs, the tokenizer and the options.
json reportSetting(const Options& options, const Checkpoints& checkpoints)
{
    json report;
    report["cpu"] = cpuModelAndFlags();
    report["tokenizer"] = checkpoints.realTokenizer ? "roberta-base (../shared/data)" : "generated byte-level";
    report["threads"] = computeThreads();
    report["fp8_gemm"] = fp8GemmDescription();
    report["float_gemm"] = floatGemmDescription();
    report["sequence_length"] = options.sequenceLength;
    report["repeats"] = options.repeats;
    return report;
}

// Every measurement in the order the bench has always taken them (the loads first, the peers last).
int runBench(const Options& options)
{
    setComputeThreads(options.threads);
    const Checkpoints checkpoints = prepareCheckpoints(options);
    if (options.profile == "first-load")
        return profileFirstLoad(checkpoints);
    if (options.profile == "first-forward")
        return profileFirstForward(options, checkpoints);
    if (options.profile == "sweep")
        return profileSweep(options, checkpoints);
    if (!options.profile.empty())
        return profileTask(options, checkpoints);

    json report = reportSetting(options, checkpoints);
    if (!restartPeakResident())
        std::fprintf(stderr, "note: the peak resident memory includes preparing the checkpoints (could not restart it)\n");
    Measurements m;
    m.memory.record("start (libraries)");
    std::unique_ptr<EncoderModel> fp8;
    m.load = measure(3, [&] {
        fp8.reset(); // one model at a time, as a user's load replaces the last
        fp8 = EncoderModel::load(checkpoints.fp8Dir);
    });
    report["fp8_load"] = m.load.toJson();
    m.firstLoad = firstLoadInNewProcess(options);
    if (!m.firstLoad.ms.empty())
        report["fp8_first_load_new_process"] = m.firstLoad.toJson();
    // What the load builds for the FP8 GEMMs depends on the path this machine takes (fp8_gemm.h).
    m.memory.record(fp8GemmPath() == Fp8GemmPath::Bf16 ? "fp8 model loaded (FP8 codes, bf16 weights)"
                                                       : "fp8 model loaded (FP8 codes, decoded float32 weights)");
    std::unique_ptr<EncoderModel> reference = EncoderModel::load(checkpoints.floatDir);
    m.memory.record("float reference loaded");
    m.loadedResidentMb = peakResidentMb();
    report["peak_resident_mb_fp8_and_reference"] = m.loadedResidentMb;

    std::mt19937 random(7);
    const std::vector<int64_t> ids = benchInputIds(options.sequenceLength, random);
    // The other FP8 GEMM paths first, each on a model of its own made and dropped in turn, while
    // the two models hold no mode's weights yet: the bench's peak is then what a session with the
    // two models run in every mode holds, not that plus a third model.
    measureFp8Paths(*reference, checkpoints.fp8Dir, ids, options.repeats, random, m);
    m.memory.record("other FP8 GEMM paths (their models dropped)");
    measureForwards(*fp8, *reference, ids, options.repeats, m);
    addPathRatios(m);
    m.comparePeakMb = compareCliPeakMb(checkpoints, ids);
    const std::string squad = std::string(SCALESCOPE_SHARED_DATA) + "/squad/squad2-dev-sample.json";
    if (checkpoints.realTokenizer && fs::exists(squad) && options.squadSamples > 0) {
        m.evaluateFileOrder = squadThroughput(*fp8, *reference, squad, options.squadSamples, false);
        m.evaluateGrouped = squadThroughput(*fp8, *reference, squad, options.squadSamples, true);
        m.memory.record("evaluate (SQuAD sample)");
    }
    measureGemmLimits(fp8->config(), options.sequenceLength, m);

    std::string context = contextOf300Words();
    QaOptions qa;
    m.qaLatency = measure(options.repeats, [&] {
        answerQuestion(*fp8, "where do farmers bring grain every autumn?", context, RunSettings{RunMode::Fp8}, qa);
    });
    if (!options.skipPeer)
        runPyTorchPeers(options, checkpoints, m);

    addMeasurements(m, report);
    if (!options.skipSensitivity)
        report["sensitivity"] =
            sensitivityTimings(*fp8, *reference, ids, m.fp8Forward.median(), m.allFloatForward.median());

    printTable(options, m, report);
    report["peak_resident_mb_whole_run"] = peakResidentMb();

    std::ofstream out(options.output);
    out << report.dump(2) << "\n";
    std::printf("\nWrote %s\n", options.output.c_str());
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    Options options;
    if (!parseArguments(argc, argv, options))
        return 2;
    try {
        if (options.embed)
            return bench::runEmbedBench({options.workdir, options.output, options.threads, options.repeats,
                options.embedTexts, options.skipPeer});
        return runBench(options);
    } catch (const Error& e) {
        std::cerr << "scalescope-bench: " << e.what() << "\n";
        return 1;
    }
}
