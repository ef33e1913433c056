#include "arguments.h"

#include "common/error.h"
#include "common/text_files.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace scalescope::cli {
namespace {

// Options that may be given more than once; the command decides what several mean.
const std::set<std::string> kRepeatable = {"device"};

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
                if (out.values_.count(name) && !kRepeatable.count(name))
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

} // namespace scalescope::cli
