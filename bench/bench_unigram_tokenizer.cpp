// scalescope-bench-unigram: tokenizing a 100,000-character multilingual text with the Unigram
// (XLM-RoBERTa) tokenizer, time and peak memory, beside Hugging Face's npm tokenizers on the same
// text and tokenizer.json (bench/unigram_peer.mjs, run when --peer names the folder where
// `npm install tokenizers` was done). The text is the test corpus (tests/data/unigram/corpus.txt,
// Latin, Cyrillic, Greek, CJK, Arabic, Devanagari, Thai, emoji, full-width forms, ligatures) repeated
// and cut at 100,000 code points. Checks that both produce the same ids and offsets, prints a table
// and writes JSON.
//
//   build/bench/scalescope-bench-unigram [--peer /work/devtools] [--repeats 5] [--output FILE]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "text/bpe_tokenizer.h"
#include "text/unigram_tokenizer.h"

using namespace scalescope;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kData = SCALESCOPE_UNIGRAM_DATA;
constexpr int kTextCodePoints = 100'000;

struct Options {
    std::string peerFolder;
    std::string output = "bench-unigram.json";
    int repeats = 5;
};

// VmHWM (peak resident set) in MB; writing "5" to clear_refs restarts it at the current size.
double peakResidentMb()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0)
            return std::stod(line.substr(6)) / 1024.0;
    return 0.0;
}

double residentMb()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stod(line.substr(6)) / 1024.0;
    return 0.0;
}

void resetPeak()
{
    std::ofstream("/proc/self/clear_refs") << "5";
}

std::string benchText()
{
    std::ifstream in(kData + "/corpus.txt", std::ios::binary);
    const std::string corpus((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string text;
    while (codePointCount(text) < kTextCodePoints)
        text += corpus;
    return text.substr(0, byteOffsetOfCodePoint(text, kTextCodePoints));
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

json encodingJson(const Encoding& encoding)
{
    json offsets = json::array();
    for (const auto& [start, end] : encoding.offsets)
        offsets.push_back({start, end});
    return {{"ids", encoding.ids}, {"offsets", offsets}};
}

// Runs the npm peer on the same text and tokenizer.json; its JSON (timings, peak memory, encoding).
json runPeer(const Options& options, const std::string& textPath)
{
    const fs::path script = fs::path(SCALESCOPE_BENCH_DIR) / "unigram_peer.mjs";
    const std::string outPath = textPath + ".peer.json";
    const std::string command = "cd '" + options.peerFolder + "' && node '" + script.string() + "' '" + textPath +
                                "' '" + kData + "/tokenizer.json' " + std::to_string(options.repeats) + " > '" +
                                outPath + "'";
    if (std::system(command.c_str()) != 0)
        throw Error("The npm peer failed: " + command + ".");
    std::ifstream in(outPath);
    return json::parse(in);
}

Options parseOptions(int argc, char** argv)
{
    Options options;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--peer")
            options.peerFolder = argv[i + 1];
        else if (flag == "--output")
            options.output = argv[i + 1];
        else if (flag == "--repeats")
            options.repeats = std::max(1, std::atoi(argv[i + 1]));
        else
            throw Error("Unknown option " + flag + "; expected --peer, --output or --repeats.");
    }
    return options;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        const Options options = parseOptions(argc, argv);
        const std::string text = benchText();
        const double baseMb = residentMb();
        resetPeak();
        const auto loadStart = std::chrono::steady_clock::now();
        const auto tokenizer = UnigramTokenizer::loadFromTokenizerJson(kData + "/tokenizer.json");
        const double loadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - loadStart).count();
        const double loadedMb = residentMb();
        resetPeak();
        std::vector<double> encodeMs;
        Encoding encoding;
        for (int r = 0; r < options.repeats; ++r) {
            const auto start = std::chrono::steady_clock::now();
            encoding = tokenizer->encode(text);
            encodeMs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        }
        const double encodePeakMb = peakResidentMb() - loadedMb;
        json result = {{"text_code_points", kTextCodePoints}, {"text_bytes", text.size()},
                       {"tokens", encoding.ids.size()},
                       {"scalescope", {{"load_ms", loadMs}, {"encode_ms_median", median(encodeMs)},
                                       {"encode_ms", encodeMs}, {"tokenizer_mb", loadedMb - baseMb},
                                       {"encode_peak_extra_mb", encodePeakMb}, {"process_peak_mb", peakResidentMb()}}}};
        std::printf("text: %d code points, %zu bytes, %zu tokens\n", kTextCodePoints, text.size(), encoding.ids.size());
        std::printf("%-12s %10s %14s %14s %16s\n", "", "load ms", "encode ms", "tokenizer MB", "encode peak MB");
        std::printf("%-12s %10.1f %14.1f %14.1f %16.1f\n", "ScaleScope", loadMs, median(encodeMs), loadedMb - baseMb,
                    encodePeakMb);
        if (!options.peerFolder.empty()) {
            const std::string textPath = (fs::temp_directory_path() / ("scalescope-bench-unigram-" + std::to_string(getpid()) + ".txt")).string();
            std::ofstream(textPath, std::ios::binary) << text;
            const json peer = runPeer(options, textPath);
            fs::remove(textPath);
            fs::remove(textPath + ".peer.json");
            const bool same = peer["encoding"] == encodingJson(encoding);
            std::printf("%-12s %10.1f %14.1f %14.1f %16.1f\n", "npm peer", peer["load_ms"].get<double>(),
                        peer["encode_ms_median"].get<double>(), peer["tokenizer_mb"].get<double>(),
                        peer["encode_peak_extra_mb"].get<double>());
            std::printf("ids and offsets identical to the peer's: %s\n", same ? "yes" : "NO");
            json summary = peer;
            summary.erase("encoding");
            result["npm_peer"] = summary;
            result["identical_to_peer"] = same;
        }
        std::ofstream(options.output) << result.dump(2) << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
