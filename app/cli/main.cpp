// scalescope-cli: the headless front end of the ScaleScope engine.
#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "commands.h"
#include "device/runner_process.h"

namespace {

// Ctrl-C or SIGTERM during a run on a runner: the runners (own process groups, so the terminal's
// signal does not reach them) are stopped before this process dies with the same signal.
void stopRunnersAndDie(int signal)
{
    scalescope::stopAllRunnerProcessesFromSignalHandler();
    ::signal(signal, SIG_DFL);
    ::raise(signal);
}

} // namespace

int main(int argc, char** argv)
{
    for (int signal : {SIGINT, SIGTERM, SIGHUP})
        ::signal(signal, stopRunnersAndDie);
    std::vector<std::string> args(argv + 1, argv + argc);
    return scalescope::cli::run(args);
}
