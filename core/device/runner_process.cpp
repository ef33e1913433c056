#include "device/runner_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/text_files.h"

extern char** environ;

namespace scalescope {
namespace {

using Clock = std::chrono::steady_clock;

void closeFd(int& fd)
{
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

// Pipe ends that must not land on 0, 1 or 2 (the parent may have closed its own standard streams):
// posix_spawn's dup2 onto the same number would keep close-on-exec set.
int awayFromStandardStreams(int fd)
{
    if (fd > 2)
        return fd;
    const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    ::close(fd);
    return moved;
}

// Process groups of live runners, for the signal handler: a fixed table of atomics, because a
// handler may neither lock nor allocate.
std::array<std::atomic<pid_t>, 64> liveGroups{};

void registerGroup(pid_t group)
{
    for (auto& slot : liveGroups) {
        pid_t empty = 0;
        if (slot.compare_exchange_strong(empty, group))
            return;
    }
}

void unregisterGroup(pid_t group)
{
    for (auto& slot : liveGroups) {
        pid_t expected = group;
        if (slot.compare_exchange_strong(expected, 0))
            return;
    }
}

} // namespace

// Writes without letting SIGPIPE kill the program when the child has closed its stdin: the signal
// is blocked for this thread during the write and a SIGPIPE the write raised is consumed.
ssize_t writeWithoutSigpipe(int fd, const char* data, std::size_t size)
{
    sigset_t pipeOnly, previous;
    sigemptyset(&pipeOnly);
    sigaddset(&pipeOnly, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipeOnly, &previous);
    sigset_t pending;
    sigpending(&pending);
    const bool alreadyPending = sigismember(&pending, SIGPIPE) == 1;
    const ssize_t written = ::write(fd, data, size);
    const int writeErrno = errno;
    if (written < 0 && writeErrno == EPIPE && !alreadyPending) {
        const timespec noWait{0, 0};
        while (sigtimedwait(&pipeOnly, nullptr, &noWait) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    errno = writeErrno;
    return written;
}

RunnerProcess::RunnerProcess(const std::string& command, const std::vector<std::string>& argv)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    auto closeAll = [&] {
        for (int* p : {in, out, err})
            for (int i = 0; i < 2; ++i)
                closeFd(p[i]);
    };
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
        const std::string reason = std::strerror(errno);
        closeAll();
        throw Error("Cannot create pipes for the runner: " + reason + ".");
    }
    for (int* p : {in, out, err})
        for (int i = 0; i < 2; ++i)
            p[i] = awayFromStandardStreams(p[i]);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);

    // Its own process group, so that stopping it reaches what the shell started (ssh,
    // torchrun and its ranks); default signal handling and an empty mask whatever ours are.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attributes, 0);
    sigset_t none, defaults;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    sigemptyset(&defaults);
    for (int signal : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT})
        sigaddset(&defaults, signal);
    posix_spawnattr_setsigdefault(&attributes, &defaults);

    std::vector<std::string> arguments = argv.empty() ? std::vector<std::string>{"/bin/sh", "-c", command} : argv;
    std::vector<char*> pointers;
    for (std::string& argument : arguments)
        pointers.push_back(argument.data());
    pointers.push_back(nullptr);
    const int failure = ::posix_spawn(&pid_, pointers[0], &actions, &attributes, pointers.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    closeFd(in[0]);
    closeFd(out[1]);
    closeFd(err[1]);
    if (failure != 0) {
        pid_ = -1;
        closeAll();
        throw Error("Cannot start the runner \"" + abbreviatedText(command, 60) + "\": " + std::strerror(failure) + ".");
    }
    stdin_ = in[1];
    stdout_ = out[0];
    stderr_ = err[0];
    for (int fd : {stdin_, stdout_, stderr_})
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    registerGroup(pid_);
}

RunnerProcess::~RunnerProcess() { stop(std::chrono::milliseconds(2000)); }

void RunnerProcess::closeStdin() { closeFd(stdin_); }
void RunnerProcess::closeStdout() { closeFd(stdout_); }
void RunnerProcess::closeStderr() { closeFd(stderr_); }

bool RunnerProcess::hasExited(std::chrono::milliseconds wait)
{
    if (pid_ < 0 || exited_)
        return true;
    const auto deadline = Clock::now() + wait;
    while (true) {
        siginfo_t info;
        std::memset(&info, 0, sizeof info);
        const int result = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
        if (result == 0 && info.si_pid == pid_) {
            exited_ = true;
            if (info.si_code == CLD_EXITED)
                exitDescription_ = "exit code " + std::to_string(info.si_status);
            else if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED)
                exitDescription_ = "signal " + std::to_string(info.si_status) + ", " + ::strsignal(info.si_status);
            return true;
        }
        if (result < 0 && errno != EINTR) {
            exited_ = true; // not our child any more; nothing to wait for
            return true;
        }
        if (Clock::now() >= deadline)
            return false;
        ::usleep(10000);
    }
}

void RunnerProcess::stop(std::chrono::milliseconds grace)
{
    closeStdin();
    if (pid_ > 0) {
        if (!hasExited(std::chrono::milliseconds(0))) {
            ::kill(-pid_, SIGTERM);
            if (!hasExited(grace)) {
                ::kill(-pid_, SIGKILL);
                hasExited(std::chrono::milliseconds(5000));
            }
        }
        // Something the shell started may outlive it in the group; the unreaped shell keeps the
        // group id ours until here.
        ::kill(-pid_, SIGKILL);
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        unregisterGroup(pid_);
        pid_ = -1;
    }
    closeStdout();
    closeStderr();
}

void stopAllRunnerProcessesFromSignalHandler()
{
    for (auto& slot : liveGroups) {
        const pid_t group = slot.load();
        if (group > 0)
            ::kill(-group, SIGTERM);
    }
    // A short grace for the runners to exit on their own, then SIGKILL; nanosleep is
    // async-signal-safe.
    const timespec grace{0, 300 * 1000 * 1000};
    ::nanosleep(&grace, nullptr);
    for (auto& slot : liveGroups) {
        const pid_t group = slot.load();
        if (group > 0)
            ::kill(-group, SIGKILL);
    }
}

} // namespace scalescope
