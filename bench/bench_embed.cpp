// scalescope-bench --embed: issue 49's performance point. A roberta-base-size sentence-transformers
// embedder (bare RobertaModel with unprefixed tensor names, mean pooling, normalize; the tests'
// fixture weights, fixed seed) and its FP8 version (channel weights, dynamic per-token activations:
// the fixtures' writeTinyFp8Checkpoint), 1,000 texts of 32 tokens, texts per second of:
// - the FP8 run side alone: the texts encoded and batched as embedRows does, the FP8 forwards and
//   the pooled rows read back, and nothing else (embedRows always runs a reference side too);
// - embed's both sides: embedRows itself, as `scalescope-cli embed` runs it, without --reference
//   (dequant on the FP8 model stands in for the reference) and with the float checkpoint as it;
// - the engine's float32 forwards of the float checkpoint, and PyTorch eager float32 of the same
//   embedder (bench/torch_peer.py --variant embed) on the same token ids, batches and threads.
// Every case runs once per round, round after round, so that a change in the load of a shared
// machine falls on all of them alike rather than on whichever case ran last.
#include "bench_embed.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "common/error.h"
#include "engine/compute_threads.h"
#include "engine/encoder_model.h"
#include "engine/float_gemm.h"
#include "engine/fp8_gemm.h"
#include "model/checkpoint.h"
#include "model/run_settings.h"
#include "support/fixtures.h"
#include "tasks/embed.h"
#include "tasks/sequence_runs.h"

namespace scalescope::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int kTokensPerText = 32; // specials included: what the model sees of a text
constexpr std::size_t kEmbedBatch = 16; // embedRows' batch (runSequenceRows' default)
constexpr std::size_t kLargeBatch = 64; // the batch size's effect, on the run side and the peer
constexpr std::size_t kPeerRowsChecked = 16; // the peer's embeddings checked against the engine's

// Words that roberta-base's tokenizer keeps as one token after a space (the fixtures' generated
// tokenizer, which the checkpoint carries where ../shared/data has no roberta-base, is given them
// whole), so that a text can be filled to an exact token count.
const std::vector<std::string> kWords = {"the", "river", "flows", "past", "an", "old", "mill", "where", "farmers",
    "bring", "grain", "every", "and", "town", "to", "with", "music", "bread", "stories", "a", "small", "boat", "under",
    "stone", "bridge", "while", "children", "watch", "from", "bank", "light", "falls", "on", "quiet", "water", "birds",
    "sing", "in", "near", "road", "people", "walk", "home", "after", "long", "day", "market", "windows", "open", "warm",
    "wind", "sound", "of", "fields", "autumn", "harvest", "evening", "trees", "across", "bells"};

struct EmbedderDirs {
    std::string floatDir, fp8Dir;
    bool realTokenizer = false;
};

// The float embedder and its FP8 version in the work directory, made on the first run.
EmbedderDirs prepareEmbedders(const std::string& workdir)
{
    EmbedderDirs d;
    d.floatDir = workdir + "/roberta-base-embedder-float";
    d.fp8Dir = workdir + "/roberta-base-embedder-fp8";
    fs::create_directories(workdir);
    if (!fs::exists(d.floatDir + "/model.safetensors")) {
        std::cerr << "Generating a roberta-base-size sentence-transformers embedder in " << d.floatDir << "...\n";
        testing::TinyModelSpec spec;
        spec.architecture = "RobertaModel";
        spec.bareTensorNames = true; // as sentence-transformers saves a RoBERTa embedder
        spec.pooling = "mean";
        spec.normalize = true;
        spec.hiddenSize = 768;
        spec.numLayers = 12;
        spec.numHeads = 12;
        spec.intermediateSize = 3072;
        spec.maxPositionEmbeddings = 514;
        spec.vocabularySize = 50265;
        spec.words = kWords;
        testing::writeTinyFloatCheckpoint(d.floatDir, spec);
    }
    // With the real roberta-base tokenizer (same vocabulary size) the texts are tokenized as a
    // user's would be. Copied before the FP8 version is written, which copies the float's.
    const std::string shared = std::string(SCALESCOPE_SHARED_DATA) + "/roberta-base-tokenizer";
    d.realTokenizer = fs::exists(shared + "/vocab.json");
    for (const std::string& dir : {d.floatDir, d.fp8Dir}) {
        if (!d.realTokenizer || !fs::exists(dir))
            continue;
        fs::copy_file(shared + "/vocab.json", dir + "/vocab.json", fs::copy_options::overwrite_existing);
        fs::copy_file(shared + "/merges.txt", dir + "/merges.txt", fs::copy_options::overwrite_existing);
    }
    if (!fs::exists(d.fp8Dir + "/model.safetensors")) {
        std::cerr << "Writing its FP8 version (channel weights, dynamic per-token activations) to " << d.fp8Dir
                  << "...\n";
        testing::writeTinyFp8Checkpoint(d.floatDir, d.fp8Dir, testing::Fp8Scheme{});
    }
    return d;
}

// `count` texts of exactly kTokensPerText tokens each under `tokenizer`: random words (fixed seed)
// appended while the text still fits. Texts rather than token ids, because embed takes texts and
// its tokenizing is part of what it costs; the ids they become go to the PyTorch peer.
std::vector<std::string> benchTexts(const Tokenizer& tokenizer, std::size_t count)
{
    std::mt19937 random(49);
    std::vector<std::string> texts;
    while (texts.size() < count) {
        std::string text;
        std::size_t length = tokenizer.encode(text).ids.size();
        for (int attempt = 0; length < kTokensPerText && attempt < 1000; ++attempt) {
            const std::string candidate = text + (text.empty() ? "" : " ") + kWords[random() % kWords.size()];
            const std::size_t candidateLength = tokenizer.encode(candidate).ids.size();
            if (candidateLength <= std::size_t(kTokensPerText)) {
                text = candidate;
                length = candidateLength;
            }
        }
        if (length != std::size_t(kTokensPerText))
            throw Error("The embed bench could not make a text of " + std::to_string(kTokensPerText) + " tokens.");
        texts.push_back(text);
    }
    return texts;
}

// The texts encoded as embedRows encodes them: no prompt, cut to the checkpoint's max_seq_length.
std::vector<Encoding> encodeTexts(const Checkpoint& checkpoint, const std::vector<std::string>& texts)
{
    const SentenceEmbeddingConfig& embedding = checkpoint.config().embedding;
    const int64_t modelLimit = checkpoint.layout().maxSequenceLength();
    const int64_t maxTokens = embedding.maxSeqLength > 0 ? std::min(embedding.maxSeqLength, modelLimit) : modelLimit;
    std::vector<Encoding> encodings;
    for (const std::string& text : texts)
        encodings.push_back(encodeSequence(checkpoint.tokenizer(), {text, std::nullopt}, maxTokens).encoding);
    return encodings;
}

struct SideRows {
    std::vector<std::vector<float>> rows;
    double forwardMs = 0; // the forwards' own elapsedMs, summed
};

// One side of embedRows without the other: the texts encoded, batches of batchSize rows run with
// `settings` (forwardOptions, as runSequenceRows makes them), the pooled rows read back.
SideRows runOneSide(
    InferenceBackend& model, const std::vector<std::string>& texts, const RunSettings& settings, std::size_t batchSize)
{
    const std::vector<Encoding> encodings = encodeTexts(model.checkpoint(), texts);
    const ForwardOptions options = forwardOptions(settings);
    const std::string& output = model.checkpoint().layout().headDefinition().outputs.at(0).name;
    SideRows side;
    for (std::size_t first = 0; first < encodings.size(); first += batchSize) {
        const std::size_t last = std::min(encodings.size(), first + batchSize);
        EncoderInputs inputs;
        for (std::size_t i = first; i < last; ++i)
            inputs.addSequence(encodings[i]);
        const ForwardResult result = model.forward(inputs, options);
        side.forwardMs += result.elapsedMs;
        const FloatTensor& values = result.output(output);
        const std::size_t width = static_cast<std::size_t>(values.shape.back());
        for (std::size_t row = 0; row < last - first; ++row)
            side.rows.emplace_back(values.values.begin() + row * width, values.values.begin() + (row + 1) * width);
    }
    return side;
}

double timedMs(const std::function<void()>& work)
{
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The 1-, 5- and 15-minute load averages now: how busy the shared machine was while measuring.
std::vector<double> loadAverage()
{
    std::ifstream in("/proc/loadavg");
    std::vector<double> load(3, -1);
    in >> load[0] >> load[1] >> load[2];
    return load;
}

// The PyTorch eager float32 peer over the ids in idsFile, batches of batchSize, torch threads set to
// the engine's: one timed pass after a warm-up batch. Its report, or null when it could not run.
json runTorchPeer(
    const EmbedBenchOptions& options, const EmbedderDirs& dirs, const std::string& idsFile, std::size_t batchSize)
{
    const std::string out = options.workdir + "/peer-embed-" + std::to_string(batchSize) + ".json";
    std::error_code ignored;
    fs::remove(out, ignored);
    const std::string command = "/usr/bin/python3 " + std::string(SCALESCOPE_TORCH_PEER)
        + " --variant embed --checkpoint " + dirs.floatDir + " --ids " + idsFile + " --batch "
        + std::to_string(batchSize) + " --threads " + std::to_string(computeThreads())
        + " --repeats 1 --placement torch --output " + out + " 1>&2";
    if (std::system(command.c_str()) != 0 || !fs::exists(out))
        return nullptr;
    std::ifstream in(out);
    return json::parse(in);
}

// The token ids of the texts, for the peer: {"ids": [[...], ...]}.
std::string writeIds(const std::string& workdir, const std::vector<Encoding>& encodings)
{
    json rows = json::array();
    for (const Encoding& encoding : encodings)
        rows.push_back(encoding.ids);
    const std::string file = workdir + "/embed-ids.json";
    std::ofstream(file) << json{{"ids", rows}}.dump() << "\n";
    return file;
}

// What the cases' last passes returned, for the checks that they computed what they claim.
struct LastOutputs {
    SideRows fp8Alone, floatAlone;
    EmbeddedRows defaultEmbed, floatReferenceEmbed;
    json peer16 = nullptr;
    Timing embedRunMs; // embedRows' own account of its run side: the FP8 forwards' elapsedMs
};

struct Case {
    Case(std::string key, std::string name, std::function<double()> pass)
        : key(std::move(key)), name(std::move(name)), pass(std::move(pass))
    {
    }
    std::string key, name;
    std::function<double()> pass; // one pass over every text, wall ms; < 0 when it cannot run
    Timing timing;
    bool dropped = false;
};

struct Models {
    EncoderModel& fp8;
    EncoderModel& reference;
    const std::vector<std::string>& texts;
};

// The engine's cases: tokenizing alone, one side alone (FP8, engine float32), embedRows both ways.
std::vector<Case> engineCases(const Models& m, LastOutputs& last)
{
    std::vector<Case> cases;
    cases.emplace_back(Case{"tokenize", "tokenize (as embedRows encodes; in every engine row)",
        [&m] { return timedMs([&] { encodeTexts(m.fp8.checkpoint(), m.texts); }); }});
    for (std::size_t batch : {kEmbedBatch, kLargeBatch})
        cases.emplace_back(Case{"fp8_run_side_b" + std::to_string(batch),
            "FP8 run side alone, batch " + std::to_string(batch), [&m, &last, batch] {
                return timedMs([&] {
                    SideRows side = runOneSide(m.fp8, m.texts, RunSettings{}, batch);
                    if (batch == kEmbedBatch)
                        last.fp8Alone = std::move(side);
                });
            }});
    cases.emplace_back(
        Case{"engine_float32_b16", "engine float32 (float checkpoint) alone, batch 16", [&m, &last] {
                 return timedMs(
                     [&] { last.floatAlone = runOneSide(m.reference, m.texts, referenceRunSettings(), kEmbedBatch); });
             }});
    cases.emplace_back(Case{
        "embed_both_sides_dequant", "embed both sides: FP8 + dequant (no --reference)", [&m, &last] {
            const double ms = timedMs([&] { last.defaultEmbed = embedRows(m.fp8, nullptr, m.texts, "", RunPair{}); });
            last.embedRunMs.ms.push_back(last.defaultEmbed.runMs);
            return ms;
        }});
    cases.push_back(
        {"embed_both_sides_float_reference", "embed both sides: FP8 + float32 (--reference float)", [&m, &last] {
             return timedMs([&] { last.floatReferenceEmbed = embedRows(m.fp8, &m.reference, m.texts, "", RunPair{}); });
         }});
    return cases;
}

// The PyTorch peer's cases, at embed's batch and the larger one.
std::vector<Case> peerCases(
    const EmbedBenchOptions& options, const EmbedderDirs& dirs, const std::string& idsFile, LastOutputs& last)
{
    std::vector<Case> cases;
    for (std::size_t batch : {kEmbedBatch, kLargeBatch})
        cases.emplace_back(Case{"pytorch_eager_float32_b" + std::to_string(batch),
            "PyTorch eager float32, batch " + std::to_string(batch), [&options, &dirs, idsFile, &last, batch] {
                const json peer = runTorchPeer(options, dirs, idsFile, batch);
                if (peer.is_null()) {
                    std::cerr << "PyTorch peer not run (python3-torch missing?): install it with "
                                 "packaging/install-deps.sh --dev\n";
                    return -1.0;
                }
                if (batch == kEmbedBatch)
                    last.peer16 = peer;
                return peer["median_ms"].get<double>();
            }});
    return cases;
}

// One short pass of each engine path before the rounds: the first forwards of a model build what
// later ones reuse (decoded weights, buffers), which a user's first embed pays once.
void warmUp(const Models& m)
{
    const std::vector<std::string> few(
        m.texts.begin(), m.texts.begin() + std::min<std::size_t>(kLargeBatch, m.texts.size()));
    runOneSide(m.fp8, few, RunSettings{}, kEmbedBatch);
    runOneSide(m.fp8, few, RunSettings{}, kLargeBatch);
    runOneSide(m.reference, few, referenceRunSettings(), kEmbedBatch);
    embedRows(m.fp8, nullptr, few, "", RunPair{});
    embedRows(m.fp8, &m.reference, few, "", RunPair{});
}

double maxAbsDifference(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b)
{
    double worst = a.size() == b.size() ? 0 : INFINITY;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
        for (std::size_t j = 0; j < a[i].size() && j < b[i].size(); ++j)
            worst = std::max(worst, std::fabs(double(a[i][j]) - double(b[i][j])));
    return worst;
}

// That every case computed the same embedder: the FP8 run side alone is embed's run side, the
// engine's float32 is embed's float reference side, PyTorch's embeddings are the engine's float32
// ones; and how far FP8 is from float32 (the embedder works, its weights are random).
json checks(const LastOutputs& last)
{
    json out;
    out["fp8_alone_vs_embed_run_side_max_abs"] = maxAbsDifference(last.fp8Alone.rows, last.defaultEmbed.run);
    out["engine_float32_vs_embed_reference_side_max_abs"]
        = maxAbsDifference(last.floatAlone.rows, last.floatReferenceEmbed.reference);
    double sum = 0, lowest = 1;
    for (std::size_t i = 0; i < last.floatReferenceEmbed.run.size(); ++i) {
        const double c = cosineSimilarity(last.floatReferenceEmbed.run[i], last.floatReferenceEmbed.reference[i]);
        sum += c;
        lowest = std::min(lowest, c);
    }
    out["fp8_vs_float32_cosine_mean"] = sum / double(std::max<std::size_t>(1, last.floatReferenceEmbed.run.size()));
    out["fp8_vs_float32_cosine_min"] = lowest;
    if (!last.peer16.is_null()) {
        const auto peerRows = last.peer16.at("embeddings_head").get<std::vector<std::vector<float>>>();
        double peerLowest = 1;
        for (std::size_t i = 0; i < peerRows.size() && i < last.floatAlone.rows.size(); ++i)
            peerLowest = std::min(peerLowest, cosineSimilarity(peerRows[i], last.floatAlone.rows[i]));
        const std::vector<std::vector<float>> engineHead(last.floatAlone.rows.begin(),
            last.floatAlone.rows.begin() + std::min(peerRows.size(), last.floatAlone.rows.size()));
        out["pytorch_vs_engine_float32_cosine_min"] = peerLowest;
        out["pytorch_vs_engine_float32_max_abs"] = maxAbsDifference(peerRows, engineHead);
    }
    return out;
}

// Texts per second of a median pass over `texts` texts.
double textsPerSecond(std::size_t texts, double ms)
{
    return ms > 0 ? double(texts) / (ms / 1e3) : 0;
}

void printCaseRow(const std::string& name, std::size_t texts, const Timing& t)
{
    char timing[96];
    std::snprintf(timing, sizeof timing, "%.0f ms [%.0f-%.0f]", t.median(), t.min(), t.max());
    std::printf("%-56s %9.1f texts/s  %s\n", name.c_str(), textsPerSecond(texts, t.median()), timing);
}

void printTable(
    const EmbedBenchOptions& options, const std::vector<Case>& cases, const Timing& embedRunMs, const json& report)
{
    std::printf("\nScaleScope embed benchmark: roberta-base-size sentence embedder (RobertaModel, mean pooling, "
                "normalize), %zu texts x %d tokens, %d threads, %d rounds (median [min-max])\n\n",
        options.texts, kTokensPerText, computeThreads(), options.repeats);
    std::printf("CPU: %s\n%s\n%s\nTokenizer: %s\nLoad average (1 min) at each round's start and at the end:",
        cpuModelAndFlags().c_str(), fp8GemmDescription().c_str(), floatGemmDescription().c_str(),
        report["tokenizer"].get<std::string>().c_str());
    for (const json& load : report["load_average"])
        std::printf(" %.2f", load[0].get<double>());
    std::printf("\n\n");
    for (const Case& c : cases)
        if (!c.dropped)
            printCaseRow(c.name, options.texts, c.timing);
    printCaseRow("  of which embedRows' run side (its FP8 forwards' time)", options.texts, embedRunMs);
    std::printf("\nChecks: %s\n", report["checks"].dump().c_str());
}

// The report: the setting, each case's timings and texts per second, the checks.
json embedReport(const EmbedBenchOptions& options, const EmbedderDirs& dirs, const std::vector<Case>& cases,
    const LastOutputs& last, const json& loads)
{
    json report;
    report["cpu"] = cpuModelAndFlags();
    report["fp8_gemm"] = fp8GemmDescription();
    report["float_gemm"] = floatGemmDescription();
    report["threads"] = computeThreads();
    report["texts"] = options.texts;
    report["tokens_per_text"] = kTokensPerText;
    report["rounds"] = options.repeats;
    report["tokenizer"] = dirs.realTokenizer ? "roberta-base (../shared/data)" : "generated byte-level (fixtures)";
    report["load_average"] = loads;
    for (const Case& c : cases) {
        if (c.dropped)
            continue;
        report["cases"][c.key] = c.timing.toJson();
        report["cases"][c.key]["name"] = c.name;
        report["cases"][c.key]["texts_per_second"] = textsPerSecond(options.texts, c.timing.median());
    }
    report["embed_run_side_forward_ms"] = last.embedRunMs.toJson();
    report["embed_run_side_forward_texts_per_second"] = textsPerSecond(options.texts, last.embedRunMs.median());
    report["checks"] = checks(last);
    return report;
}

} // namespace

int runEmbedBench(const EmbedBenchOptions& options)
{
    setComputeThreads(options.threads);
    const EmbedderDirs dirs = prepareEmbedders(options.workdir);
    const std::unique_ptr<EncoderModel> fp8 = EncoderModel::load(dirs.fp8Dir);
    const std::unique_ptr<EncoderModel> reference = EncoderModel::load(dirs.floatDir);
    const std::vector<std::string> texts = benchTexts(fp8->checkpoint().tokenizer(), options.texts);
    const std::string idsFile = writeIds(options.workdir, encodeTexts(fp8->checkpoint(), texts));
    const Models models{*fp8, *reference, texts};
    LastOutputs last;
    std::vector<Case> cases = engineCases(models, last);
    if (!options.skipPeer)
        for (Case& peer : peerCases(options, dirs, idsFile, last))
            cases.push_back(std::move(peer));
    warmUp(models);
    json loads = json::array();
    for (int round = 0; round < options.repeats; ++round) {
        loads.push_back(loadAverage());
        std::cerr << "Round " << round + 1 << " of " << options.repeats << " (load " << loads.back()[0] << ")\n";
        for (Case& c : cases) {
            if (c.dropped)
                continue;
            const double ms = c.pass();
            c.dropped = ms < 0;
            if (!c.dropped)
                c.timing.ms.push_back(ms);
        }
    }
    loads.push_back(loadAverage());
    const json report = embedReport(options, dirs, cases, last, loads);
    printTable(options, cases, last.embedRunMs, report);
    std::ofstream(options.output) << report.dump(2) << "\n";
    std::printf("\nWrote %s\n", options.output.c_str());
    return 0;
}

} // namespace scalescope::bench
