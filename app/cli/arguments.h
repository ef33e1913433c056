#pragma once
// Command-line parsing for scalescope-cli: `<command> [positionals] [--option value] [--flag]`.
// Each command declares its options; anything else is a usage error naming the option.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "device/device_spec.h"
#include "device/runner_backend.h"
#include "model/run_settings.h"
#include "tasks/compare_runs.h"

namespace scalescope::cli {

struct UsageError {
    std::string message;
};

struct CommandSpec {
    std::string name;
    int positionals = 0;                  // exact count
    std::vector<std::string> positionalNames;
    std::set<std::string> valueOptions;   // --name VALUE (also --name=VALUE)
    std::set<std::string> flags;          // --name
    std::string summary;
};

class Arguments {
public:
    // Throws UsageError.
    static Arguments parse(const CommandSpec& spec, const std::vector<std::string>& args);

    const std::vector<std::string>& positionals() const { return positionals_; }
    bool flag(const std::string& name) const { return flags_.count(name) > 0; }
    bool has(const std::string& name) const { return values_.count(name) > 0; }
    std::optional<std::string> value(const std::string& name) const;
    std::string value(const std::string& name, const std::string& fallback) const;
    std::string required(const std::string& name) const;       // UsageError when absent
    int intValue(const std::string& name, int fallback, int minimum, int maximum) const;
    std::optional<float> floatValue(const std::string& name) const;
    // Every value of an option that may be repeated (--device), in command-line order.
    std::vector<std::string> values(const std::string& name) const;

private:
    std::string command_;
    std::vector<std::string> positionals_;
    std::map<std::string, std::string> values_;   // the first value of each option
    std::map<std::string, std::vector<std::string>> repeated_;
    std::set<std::string> flags_;
};

// --device (default cpu), parsed by the one device parser; a bad value is a usage error (exit 2)
// whatever the command.
// Given more than once, it is a usage error here: only evaluate spreads work over several devices.
DeviceSpec deviceOption(const Arguments& args);
// The options of every runner the CLI starts: the runner's progress lines are printed on stderr, so
// a long load (an AIU runner compiles for minutes) is seen to be working.
RunnerOptions cliRunnerOptions();
// Which --mode values a command takes: the run side of a comparison, fp8 (the default), dequant or
// fp16 (the reference is the other side, so "reference" is not one); or also `reference` (qa,
// fill-mask, forward), the float reference itself, which runs as dequant.
enum class ModeChoices { RunSide, RunSideOrReference };
// Whether --device names the one device the run goes to (RunSettings::device), or evaluate's and
// check's several (deviceOptions), which the settings do not hold.
enum class DeviceChoices { One, Several };
// The run side's settings, the one reading of their flags: --mode; --accumulate float32 (default)
// or dl16 (the DL16 twin), which needs an FP8 mode; --attention float (default) or fp8-aiu (AIU FP8
// attention, linear_plan.h AttentionPrecision); --device as deviceOption reads it. A flag the
// command does not take keeps its default. UsageError naming the flag otherwise.
RunSettings runSettingsOption(const Arguments& args, ModeChoices modes, DeviceChoices devices);
// Every --device, plus one per line of --devices FILE (blank lines and # comments skipped); cpu
// when neither is given. Several make a device pool (see core/device/backend_pool.h).
std::vector<DeviceSpec> deviceOptions(const Arguments& args);

// Comma-separated token ids of --OPTION ("0,31414,232,2"); a usage error names the bad entry.
std::vector<int64_t> parseIdList(const std::string& text, const std::string& option);
// "a, b,c" -> {"a", "b", "c"}: comma-separated names (--modules), blanks around each dropped.
std::vector<std::string> parseNameList(const std::string& text);
// Several sequences separated by ';' ("0,5,2;0,7,8,2"), padded into one batch by the model.
std::vector<std::vector<int64_t>> parseIdBatch(const std::string& text, const std::string& option = "input-ids");

// The input of compare, sensitivity and keep-float: --question/--context, --text or --input-ids,
// with the QA options and --top-k. Returns how many of the three sources were given; each
// command says how many it takes.
int readComparisonInput(const Arguments& args, ComparisonInput& input);

} // namespace scalescope::cli
