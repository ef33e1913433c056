#include "device/device_spec.h"

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

DeviceSpec cpuRunnerDevice(const std::string& cliExecutable)
{
    DeviceSpec spec;
    spec.kind = DeviceSpec::Kind::Runner;
    spec.argv = {cliExecutable, "runner"};
    spec.command = shellQuoted(spec.argv);
    return spec;
}

} // namespace scalescope
