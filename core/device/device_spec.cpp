#include "device/device_spec.h"

#include <algorithm>

#include "common/error.h"

namespace scalescope {

std::string shellQuoted(const std::vector<std::string>& argv)
{
    std::string out;
    for (const std::string& argument : argv) {
        if (!out.empty())
            out += ' ';
        out += '\'';
        for (char c : argument) {
            if (c == '\'')
                out += "'\\''";
            else
                out += c;
        }
        out += '\'';
    }
    return out;
}

std::string DeviceSpec::text() const
{
    if (kind == Kind::Cpu)
        return "cpu";
    return "runner:" + (argv.empty() ? command : shellQuoted(argv));
}

DeviceSpec parseDeviceSpec(const std::string& text)
{
    if (text == "cpu")
        return {};
    const std::string prefix = "runner:";
    if (text.compare(0, prefix.size(), prefix) == 0) {
        DeviceSpec spec;
        spec.kind = DeviceSpec::Kind::Runner;
        spec.command = text.substr(prefix.size());
        if (spec.command.find_first_not_of(" \t") == std::string::npos)
            throw Error("The device \"runner:\" needs a command after the colon, e.g. runner:\"scalescope-cli runner\".");
        return spec;
    }
    throw Error("Unknown device \"" + text + "\"; expected cpu or runner:COMMAND.");
}

std::vector<DeviceSpec> parseDeviceList(const std::string& text, const std::string& origin)
{
    std::vector<DeviceSpec> devices;
    std::size_t lineNumber = 0;
    for (std::size_t from = 0; from <= text.size();) {
        const std::size_t end = std::min(text.find('\n', from), text.size());
        std::string line = text.substr(from, end - from);
        from = end + 1;
        ++lineNumber;
        const std::size_t first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '#')
            continue;
        line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
        try {
            devices.push_back(parseDeviceSpec(line));
        } catch (const Error& e) {
            throw Error(origin + " line " + std::to_string(lineNumber) + ": " + e.what());
        }
    }
    if (devices.empty())
        throw Error(origin + " names no device (one device per line).");
    return devices;
}

DeviceSpec cpuRunnerDevice(const std::string& cliExecutable)
{
    DeviceSpec spec;
    spec.kind = DeviceSpec::Kind::Runner;
    spec.argv = {cliExecutable, "runner"};
    spec.command = shellQuoted(spec.argv);
    return spec;
}

} // namespace scalescope
