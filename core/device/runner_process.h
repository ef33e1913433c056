#pragma once
// A runner's child process: started through /bin/sh -c (a user's command line) or from an argv
// without a shell (our own CPU runner), in its own process group so that stopping it reaches
// everything the command started (ssh, torchrun and its ranks), with three non-blocking pipes.
// Threading: one owner thread. Errors: scalescope::Error when it cannot be started.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace scalescope {

class RunnerProcess {
public:
    // argv empty: `/bin/sh -c command`; otherwise argv[0] is executed with argv, and command only
    // names it in messages.
    RunnerProcess(const std::string& command, const std::vector<std::string>& argv);
    ~RunnerProcess();
    RunnerProcess(const RunnerProcess&) = delete;
    RunnerProcess& operator=(const RunnerProcess&) = delete;

    int stdinFd() const { return stdin_; }
    int stdoutFd() const { return stdout_; }
    int stderrFd() const { return stderr_; }
    void closeStdin();
    void closeStdout();
    void closeStderr();

    // True when the child has exited within `wait`. It is left unreaped (WNOWAIT) so that its
    // process group id cannot be reused before stop() has signalled what is left in the group.
    bool hasExited(std::chrono::milliseconds wait);
    // SIGTERM to the whole group, SIGKILL after `grace` to whatever is left, then reap.
    void stop(std::chrono::milliseconds grace);
    // "exit code 1" or "signal 9, Killed" once hasExited() saw the exit; "" before.
    const std::string& exitDescription() const { return exitDescription_; }
    pid_t processGroup() const { return pid_; }

private:
    pid_t pid_ = -1;
    bool exited_ = false;
    std::string exitDescription_;
    int stdin_ = -1, stdout_ = -1, stderr_ = -1;
};

// write(2) without letting SIGPIPE kill the program when the child has closed its stdin.
ssize_t writeWithoutSigpipe(int fd, const char* data, std::size_t size);

// Stops every runner process group still alive (SIGTERM, then SIGKILL): for a signal handler's
// last act, so that Ctrl-C or SIGTERM never orphans a runner. Async-signal-safe.
void stopAllRunnerProcessesFromSignalHandler();

} // namespace scalescope
