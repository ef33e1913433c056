#include "arguments.h"

#include "common/error.h"
#include "common/text_files.h"
#include "tasks/task_datasets.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>

namespace scalescope::cli {
namespace {

// Options that may be given more than once; the command decides what several mean.
const std::set<std::string> kRepeatable = {"device"};
// Options that only some commands take more than once: embed's texts, rerank's passages (elsewhere
// --text names the one input, and a second one is a mistake to report).
const std::map<std::string, std::set<std::string>> kRepeatableInCommand = {{"embed", {"text"}}, {"rerank", {"passage"}}};

bool repeatable(const std::string& command, const std::string& option)
{
    const auto it = kRepeatableInCommand.find(command);
    return kRepeatable.count(option) || (it != kRepeatableInCommand.end() && it->second.count(option));
}

} // namespace

Arguments Arguments::parse(const CommandSpec& spec, const std::vector<std::string>& args)
{
    Arguments out;
    out.command_ = spec.name;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
            std::string name = arg.substr(2);
            std::optional<std::string> inlineValue;
            if (auto eq = name.find('='); eq != std::string::npos) {
                inlineValue = name.substr(eq + 1);
                name = name.substr(0, eq);
            }
            if (spec.flags.count(name)) {
                if (inlineValue)
                    throw UsageError{"--" + name + " takes no value."};
                out.flags_.insert(name);
            } else if (spec.valueOptions.count(name)) {
                if (!inlineValue) {
                    if (i + 1 >= args.size())
                        throw UsageError{"--" + name + " needs a value."};
                    inlineValue = args[++i];
                }
                if (out.values_.count(name) && !repeatable(spec.name, name))
                    throw UsageError{"--" + name + " is given twice."};
                out.values_.emplace(name, *inlineValue);
                out.repeated_[name].push_back(*inlineValue);
            } else {
                throw UsageError{"Unknown option --" + name + " for command " + spec.name + "."};
            }
        } else {
            out.positionals_.push_back(arg);
        }
    }
    if (static_cast<int>(out.positionals_.size()) != spec.positionals) {
        std::string expected;
        for (const auto& name : spec.positionalNames)
            expected += (expected.empty() ? "" : " ") + name;
        throw UsageError{"Command " + spec.name + " takes " +
                         (spec.positionals ? expected : std::string("no positional arguments")) + " (got " +
                         std::to_string(out.positionals_.size()) + ")."};
    }
    return out;
}

std::optional<std::string> Arguments::value(const std::string& name) const
{
    auto it = values_.find(name);
    if (it == values_.end())
        return std::nullopt;
    return it->second;
}

std::string Arguments::value(const std::string& name, const std::string& fallback) const
{
    return value(name).value_or(fallback);
}

std::string Arguments::required(const std::string& name) const
{
    auto v = value(name);
    if (!v)
        throw UsageError{"Command " + command_ + " needs --" + name + "."};
    return *v;
}

int Arguments::intValue(const std::string& name, int fallback, int minimum, int maximum) const
{
    auto v = value(name);
    if (!v)
        return fallback;
    errno = 0;
    char* end = nullptr;
    const long parsed = std::strtol(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno != 0 || parsed < minimum || parsed > maximum)
        throw UsageError{"--" + name + " must be an integer from " + std::to_string(minimum) + " to " +
                         std::to_string(maximum) + ", not \"" + *v + "\"."};
    return static_cast<int>(parsed);
}

std::optional<float> Arguments::floatValue(const std::string& name) const
{
    auto v = value(name);
    if (!v)
        return std::nullopt;
    char* end = nullptr;
    const float parsed = std::strtof(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !std::isfinite(parsed))
        throw UsageError{"--" + name + " must be a number, not \"" + *v + "\"."};
    return parsed;
}

std::vector<std::string> Arguments::values(const std::string& name) const
{
    const auto it = repeated_.find(name);
    return it == repeated_.end() ? std::vector<std::string>() : it->second;
}

RunSettings runSettingsOption(const Arguments& args, ModeChoices modes, DeviceChoices devices)
{
    RunSettings settings;
    const std::string modeName = args.value("mode", "fp8");
    if (modes == ModeChoices::RunSideOrReference && modeName == "reference")
        settings.mode = RunMode::Dequant; // a float checkpoint runs the same in either mode
    else if (!parseRunMode(modeName, settings.mode))
        throw UsageError{std::string(modes == ModeChoices::RunSide ? "--mode must be fp8, dequant or fp16"
                                                                   : "--mode must be fp8, dequant, fp16 or reference") +
                         ", not \"" + modeName + "\"."};
    const std::string accumulation = args.value("accumulate", "float32");
    if (!parseAccumulation(accumulation, settings.accumulation))
        throw UsageError{"--accumulate must be float32 or dl16, not \"" + accumulation + "\"."};
    if (!settings.problem().empty())
        throw UsageError{"--accumulate dl16 models FP8 x FP8 products, so it needs --mode fp8 or fp16, not " +
                         modeName + "."};
    const std::string attention = args.value("attention", "float");
    if (!parseAttentionPrecision(attention, settings.attention))
        throw UsageError{"--attention must be float or fp8-aiu, not \"" + attention + "\"."};
    if (devices == DeviceChoices::One)
        settings.device = deviceOption(args).text();
    return settings;
}

DeviceSpec deviceOption(const Arguments& args)
{
    if (args.values("device").size() > 1)
        throw UsageError{"--device is given " + std::to_string(args.values("device").size()) +
                         " times; only evaluate spreads its work over several devices."};
    try {
        return parseDeviceSpec(args.value("device", "cpu"));
    } catch (const Error& e) {
        throw UsageError{std::string("--device: ") + e.what()};
    }
}

RunnerOptions cliRunnerOptions()
{
    RunnerOptions options;
    // Each new stage or percentage, and the same line again at most every 10 s (a runner repeats
    // its latest progress line as a heartbeat).
    struct Printed {
        std::string text;
        std::chrono::steady_clock::time_point at;
    };
    auto printed = std::make_shared<Printed>();
    options.onProgressLine = [printed](const RunnerProgressLine& line) {
        const int percent = static_cast<int>(std::lround(std::fmin(std::fmax(line.fraction, 0.0), 1.0) * 100.0));
        const std::string text =
            terminalSafe(line.runner + ", " + line.request + ": " + line.stage + " (" + std::to_string(percent) + " %)");
        const auto now = std::chrono::steady_clock::now();
        if (text == printed->text && now - printed->at < std::chrono::seconds(10))
            return;
        printed->text = text;
        printed->at = now;
        std::fprintf(stderr, "scalescope-cli: %s\n", text.c_str());
        std::fflush(stderr);
    };
    return options;
}

std::vector<DeviceSpec> deviceOptions(const Arguments& args)
{
    std::vector<DeviceSpec> devices;
    try {
        for (const std::string& text : args.values("device"))
            devices.push_back(parseDeviceSpec(text));
    } catch (const Error& e) {
        throw UsageError{std::string("--device: ") + e.what()};
    }
    if (const auto file = args.value("devices")) {
        const std::string content = readFileToString(*file, 1 << 20);
        try {
            for (DeviceSpec& device : parseDeviceList(content, *file))
                devices.push_back(std::move(device));
        } catch (const Error& e) {
            throw UsageError{std::string("--devices: ") + e.what()};
        }
    }
    if (devices.empty())
        devices.push_back(parseDeviceSpec("cpu"));
    return devices;
}

std::vector<std::string> parseNameList(const std::string& text)
{
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        const std::size_t first = item.find_first_not_of(" \t");
        if (first != std::string::npos)
            out.push_back(item.substr(first, item.find_last_not_of(" \t") - first + 1));
    }
    return out;
}

std::vector<int64_t> parseIdList(const std::string& text, const std::string& option)
{
    const std::string example = option == "input-ids" ? " like 0,31414,232,2" : " like 0,0,0,1,1";
    std::vector<int64_t> ids;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, ',')) {
        const auto first = item.find_first_not_of(" \t");
        if (first == std::string::npos)
            throw UsageError{"--" + option + " has an empty entry; expected comma-separated ids" + example + "."};
        item = item.substr(first, item.find_last_not_of(" \t") - first + 1);
        char* end = nullptr;
        errno = 0;
        const long long value = std::strtoll(item.c_str(), &end, 10);
        if (*end != '\0' || errno != 0 || value < 0)
            throw UsageError{"--" + option + " entry \"" + item + "\" is not a token id."};
        ids.push_back(value);
    }
    if (ids.empty())
        throw UsageError{"--" + option + " is empty; expected comma-separated ids" + example + "."};
    return ids;
}

// Several sequences are separated by ';' ("0,5,2;0,7,8,2"); they are padded into one batch.
std::vector<std::vector<int64_t>> parseIdBatch(const std::string& text, const std::string& option)
{
    std::vector<std::vector<int64_t>> batch;
    std::stringstream stream(text);
    std::string row;
    while (std::getline(stream, row, ';'))
        batch.push_back(parseIdList(row, option));
    if (batch.empty())
        throw UsageError{"--" + option + " is empty."};
    return batch;
}

int readComparisonInput(const Arguments& args, ComparisonInput& input)
{
    int sources = 0;
    if (args.has("question") || args.has("context")) {
        input.question = args.required("question");
        input.context = args.required("context");
        ++sources;
    }
    if (args.has("text")) {
        input.text = *args.value("text");
        input.pair = args.value("pair", "");
        ++sources;
    } else if (args.has("pair")) {
        throw UsageError{"--pair goes with --text (the pair's first text)."};
    }
    if (args.has("input-ids")) {
        input.inputIds = parseIdBatch(*args.value("input-ids"));
        ++sources;
    }
    if (auto path = args.value("texts")) { // the commands that list --texts (compare, sensitivity)
        const auto maxSamples = static_cast<std::size_t>(args.intValue("max-samples", 0, 0, 100'000'000));
        const TextsFile file = readTextsFile(*path, maxSamples);
        for (std::size_t i = 0; i < file.texts.size(); ++i)
            input.texts.push_back({file.texts[i], file.pairs[i]});
        ++sources;
    }
    input.qaOptions.maxSeqLen = args.intValue("max-seq-len", 384, 8, 100000);
    input.qaOptions.docStride = args.intValue("doc-stride", 128, 0, 100000);
    input.qaOptions.maxAnswerLen = args.intValue("max-answer-len", 30, 1, 100000);
    input.qaOptions.nullThreshold = args.floatValue("null-threshold");
    input.topK = args.intValue("top-k", 5, 1, 1000);
    return sources;
}

} // namespace scalescope::cli
