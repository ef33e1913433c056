#pragma once
// Where a model runs, parsed once for the CLI (--device) and the GUI (the Device box): in this
// process on CPU, or in a runner process started from a command line. Torch-free.
#include <string>
#include <vector>

namespace scalescope {

struct DeviceSpec {
    enum class Kind { Cpu, Runner };
    Kind kind = Kind::Cpu;
    // Runner: the user's command line, run through /bin/sh -c (it may go through ssh, oc exec,
    // srun or torchrun), or, when argv is set, a program of ours started without a shell so that
    // no character of its path is ever interpreted.
    std::string command;
    std::vector<std::string> argv;

    bool isCpu() const { return kind == Kind::Cpu; }
    // "cpu" or "runner:COMMAND", as parseDeviceSpec reads it back.
    std::string text() const;
};

// "cpu" or "runner:COMMAND". Throws scalescope::Error with one sentence naming the text otherwise;
// the CLI reports it as a usage error.
DeviceSpec parseDeviceSpec(const std::string& text);

// Several devices, one per line (a devices file, or the GUI's pool entry); blank lines and lines
// starting with # are skipped. Errors name `origin` and the line ("devices.txt line 3: ..."); a
// text that names no device is an error too.
std::vector<DeviceSpec> parseDeviceList(const std::string& text, const std::string& origin);

// The CPU runner of this installation (`scalescope-cli runner`), spawned without a shell.
DeviceSpec cpuRunnerDevice(const std::string& cliExecutable);

// A command line for a shell that runs exactly these arguments: each is single-quoted, with a
// single quote written as '\''. For messages and for users who copy a command.
std::string shellQuoted(const std::vector<std::string>& argv);

} // namespace scalescope
