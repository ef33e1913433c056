// scalescope-cli: the headless front end of the ScaleScope engine.
#include <string>
#include <vector>

#include "commands.h"
#include "device/runner_process.h"
#include "io/interrupt_cleanup.h"

int main(int argc, char** argv)
{
    // Ctrl-C, SIGTERM or SIGHUP during a run: the runners (own process groups, so the terminal's
    // signal does not reach them) are stopped, then the temporaries of outputs being written and
    // the runners' exchange folders are removed, before this process dies with the same signal.
    scalescope::installInterruptCleanup(scalescope::stopAllRunnerProcessesFromSignalHandler);
    std::vector<std::string> args(argv + 1, argv + argc);
    return scalescope::cli::run(args);
}
