#include "device/runner_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "engine/forward_inputs.h"
#include "io/safetensors.h"
#include "model/encoder_model.h"

extern char** environ;

namespace scalescope {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Short enough that cancel feels immediate, long enough not to spin.
constexpr std::chrono::milliseconds kPollSlice{50};
// A response line longer than this is not the protocol (tensors travel in files).
constexpr std::size_t kMaxResponseLine = 16u << 20;
constexpr std::size_t kMaxLogLine = 2000;

std::string abbreviated(const std::string& text, std::size_t limit)
{
    if (text.size() <= limit)
        return text;
    return text.substr(0, limit - 3) + "...";
}

std::string secondsText(std::chrono::milliseconds duration)
{
    std::ostringstream out;
    const double seconds = double(duration.count()) / 1000.0;
    if (seconds == std::floor(seconds))
        out << static_cast<long long>(seconds);
    else
        out << seconds;
    out << " s";
    return out.str();
}

std::string withoutFinalPeriod(std::string sentence)
{
    while (!sentence.empty() && (sentence.back() == '.' || sentence.back() == ' ' || sentence.back() == '\n'))
        sentence.pop_back();
    return sentence;
}

std::string stringField(const nlohmann::json& object, const char* key)
{
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// ---- the child process ------------------------------------------------------------------------

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

class RunnerProcess {
public:
    explicit RunnerProcess(const std::string& command)
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

        std::string shell = "/bin/sh", dashC = "-c", script = command;
        char* argv[] = {shell.data(), dashC.data(), script.data(), nullptr};
        const int failure = ::posix_spawn(&pid_, "/bin/sh", &actions, &attributes, argv, environ);
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attributes);
        closeFd(in[0]);
        closeFd(out[1]);
        closeFd(err[1]);
        if (failure != 0) {
            pid_ = -1;
            closeAll();
            throw Error("Cannot start the runner \"" + abbreviated(command, 60) + "\": " + std::strerror(failure) + ".");
        }
        stdin_ = in[1];
        stdout_ = out[0];
        stderr_ = err[0];
        for (int fd : {stdin_, stdout_, stderr_})
            ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }

    ~RunnerProcess() { stop(std::chrono::milliseconds(2000)); }

    int stdinFd() const { return stdin_; }
    int stdoutFd() const { return stdout_; }
    int stderrFd() const { return stderr_; }
    void closeStdin() { closeFd(stdin_); }
    void closeStdout() { closeFd(stdout_); }
    void closeStderr() { closeFd(stderr_); }

    // True when the shell has exited within `wait`. The child is left unreaped (WNOWAIT) so that
    // its process group id cannot be reused before stop() has signalled what is left in the group.
    bool hasExited(std::chrono::milliseconds wait)
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

    // SIGTERM to the whole group, SIGKILL after `grace` to whatever is left, then reap.
    void stop(std::chrono::milliseconds grace)
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
            pid_ = -1;
        }
        closeStdout();
        closeStderr();
    }

    // "exit code 1" or "signal 9, Killed" once hasExited() saw the exit; "" before.
    const std::string& exitDescription() const { return exitDescription_; }

private:
    pid_t pid_ = -1;
    bool exited_ = false;
    std::string exitDescription_;
    int stdin_ = -1, stdout_ = -1, stderr_ = -1;
};

std::string defaultExchangeParent()
{
    for (const char* variable : {"SCALESCOPE_RUNNER_EXCHANGE_DIR", "TMPDIR"}) {
        const char* value = std::getenv(variable);
        if (value && *value)
            return value;
    }
    return "/tmp";
}

} // namespace

// ---- RunnerBackend ------------------------------------------------------------------------------

struct RunnerBackend::Impl {
    std::string command;
    RunnerOptions options;
    std::shared_ptr<const Checkpoint> checkpoint;
    std::string checkpointPath; // absolute, as sent to the runner
    std::string exchangeDir;

    std::unique_ptr<RunnerProcess> process;
    bool loaded = false;
    RunMode loadedMode = RunMode::Fp8;
    int64_t nextId = 1;
    int starts = 0;
    std::string stdoutBuffer;
    std::string stderrPartial;
    std::deque<std::string> stderrLines;
    std::string device;
    std::string name;
    double lastRoundTripMs = 0;

    ~Impl()
    {
        options.onLogLine = nullptr; // the owner's callback may already be gone
        try {
            shutdown();
        } catch (...) {
            // A destructor reports nothing; the process is stopped below either way.
        }
        process.reset();
        if (!exchangeDir.empty()) {
            std::error_code ignored;
            std::filesystem::remove_all(exchangeDir, ignored);
        }
    }

    std::string runnerText() const { return "the runner \"" + abbreviated(command, 60) + "\""; }
    std::string label() const { return "The runner \"" + abbreviated(command, 60) + "\""; }

    std::string lastLogLine() const
    {
        for (auto it = stderrLines.rbegin(); it != stderrLines.rend(); ++it)
            if (it->find_first_not_of(" \t") != std::string::npos)
                return *it;
        if (stderrPartial.find_first_not_of(" \t") != std::string::npos)
            return abbreviated(stderrPartial, kMaxLogLine);
        return "";
    }

    // Stops the child and throws: the one exit for every failure of a request.
    [[noreturn]] void fail(const std::string& what)
    {
        drainStderr(); // its last words may have arrived with the failure
        std::string message = withoutFinalPeriod(what);
        const std::string last = lastLogLine();
        if (!last.empty() && message.find(last) == std::string::npos)
            message += "; its last message was: " + withoutFinalPeriod(abbreviated(last, 300));
        stopProcess();
        throw Error(message + ".");
    }

    [[noreturn]] void failCancelled()
    {
        stopProcess();
        throw Cancelled();
    }

    void stopProcess()
    {
        if (process)
            process->stop(std::chrono::milliseconds(2000));
        process.reset();
        loaded = false;
        stdoutBuffer.clear();
    }

    void consumeStderr(const char* data, std::size_t size)
    {
        for (std::size_t i = 0; i < size; ++i) {
            const char c = data[i];
            if (c == '\n') {
                if (!stderrPartial.empty() && stderrPartial.back() == '\r')
                    stderrPartial.pop_back();
                if (options.onLogLine)
                    options.onLogLine(stderrPartial);
                stderrLines.push_back(std::move(stderrPartial));
                stderrPartial.clear();
                while (stderrLines.size() > std::max<std::size_t>(1, options.stderrLinesKept))
                    stderrLines.pop_front();
            } else if (stderrPartial.size() < kMaxLogLine) {
                stderrPartial.push_back(c);
            }
        }
    }

    // Reads what stderr has now; false at end of file.
    bool drainStderr()
    {
        if (!process || process->stderrFd() < 0)
            return false;
        char buffer[8192];
        while (true) {
            const ssize_t n = ::read(process->stderrFd(), buffer, sizeof buffer);
            if (n > 0) {
                consumeStderr(buffer, static_cast<std::size_t>(n));
                continue;
            }
            if (n == 0) {
                process->closeStderr();
                return false;
            }
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
    }

    // The child closed stdout: collect its last words and exit status for the message.
    [[noreturn]] void failExited(const std::string& requestName)
    {
        const auto deadline = Clock::now() + std::chrono::milliseconds(1000);
        while (process && process->stderrFd() >= 0 && Clock::now() < deadline) {
            pollfd fd{process->stderrFd(), POLLIN, 0};
            ::poll(&fd, 1, 50);
            if (!drainStderr())
                break;
        }
        std::string how;
        if (process && process->hasExited(std::chrono::milliseconds(1000)))
            how = process->exitDescription();
        fail(label() + " exited" + (how.empty() ? "" : " (" + how + ")") + " during the " + requestName + " request");
    }

    void startProcess()
    {
        stdoutBuffer.clear();
        stderrPartial.clear();
        stderrLines.clear();
        loaded = false;
        process = std::make_unique<RunnerProcess>(command);
        ++starts;
    }

    json exchange(json request, const std::string& requestName, std::chrono::milliseconds timeout,
                  const Progress& progress)
    {
        if (!process)
            throw Error(label() + " is not running.");
        const int64_t id = nextId++;
        request["id"] = id;
        std::string line;
        try {
            line = request.dump() + "\n";
        } catch (const json::exception&) {
            // Only strings we were given can be at fault: paths that are not UTF-8.
            throw Error("The " + requestName + " request for " + runnerText() +
                        " holds a path that is not valid UTF-8.");
        }
        std::size_t written = 0;
        const auto started = Clock::now();
        const auto deadline = started + timeout;
        char buffer[65536];

        while (true) {
            if (progress.cancelled())
                failCancelled();
            // A complete line may already be buffered (read with the previous chunk).
            const std::size_t newline = stdoutBuffer.find('\n');
            if (newline != std::string::npos) {
                std::string answer = stdoutBuffer.substr(0, newline);
                stdoutBuffer.erase(0, newline + 1);
                if (!answer.empty() && answer.back() == '\r')
                    answer.pop_back();
                if (answer.find_first_not_of(" \t") == std::string::npos)
                    continue;
                lastRoundTripMs = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
                return checkAnswer(answer, id, requestName);
            }
            if (stdoutBuffer.size() > kMaxResponseLine)
                fail(label() + " wrote more than 16 MB on stdout without a line break during the " + requestName +
                     " request");
            const auto now = Clock::now();
            if (now >= deadline)
                fail(label() + " did not answer the " + requestName + " request within " + secondsText(timeout));

            pollfd fds[3];
            nfds_t count = 0;
            const int stdoutIndex = static_cast<int>(count);
            fds[count++] = {process->stdoutFd(), POLLIN, 0};
            int stderrIndex = -1, stdinIndex = -1;
            if (process->stderrFd() >= 0) {
                stderrIndex = static_cast<int>(count);
                fds[count++] = {process->stderrFd(), POLLIN, 0};
            }
            if (written < line.size() && process->stdinFd() >= 0) {
                stdinIndex = static_cast<int>(count);
                fds[count++] = {process->stdinFd(), POLLOUT, 0};
            }
            const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
            const int wait = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(remaining.count(), kPollSlice.count())));
            const int ready = ::poll(fds, count, wait);
            if (ready < 0) {
                if (errno == EINTR)
                    continue;
                fail("Waiting for " + runnerText() + " failed: " + std::strerror(errno));
            }
            if (ready == 0)
                continue;

            if (stderrIndex >= 0 && fds[stderrIndex].revents)
                drainStderr();
            if (stdinIndex >= 0 && fds[stdinIndex].revents) {
                const ssize_t n = writeWithoutSigpipe(process->stdinFd(), line.data() + written, line.size() - written);
                if (n > 0) {
                    written += static_cast<std::size_t>(n);
                } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    // The child closed its stdin; it is usually exiting, which stdout will show.
                    process->closeStdin();
                }
            }
            if (fds[stdoutIndex].revents) {
                const ssize_t n = ::read(process->stdoutFd(), buffer, sizeof buffer);
                if (n > 0)
                    stdoutBuffer.append(buffer, static_cast<std::size_t>(n));
                else if (n == 0)
                    failExited(requestName);
                else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                    failExited(requestName);
            }
        }
    }

    json checkAnswer(const std::string& answer, int64_t id, const std::string& requestName)
    {
        json response;
        try {
            response = json::parse(answer);
        } catch (const json::exception&) { // parse errors, and numbers out of range (1e400)
            fail(label() + " answered the " + requestName + " request with something that is not JSON: \"" +
                 abbreviated(answer, 80) + "\"");
        }
        if (!response.is_object())
            fail(label() + " answered the " + requestName + " request with JSON that is not an object: \"" +
                 abbreviated(answer, 80) + "\"");
        const auto idField = response.find("id");
        if (idField == response.end() || !idField->is_number_integer() || idField->get<int64_t>() != id) {
            std::string error;
            if (response.contains("error") && response["error"].is_string())
                error = " (it said: " + withoutFinalPeriod(response["error"].get<std::string>()) + ")";
            fail(label() + " answered request " + std::to_string(id) + " (" + requestName +
                 ") with the id of another request: " +
                 (idField == response.end() ? std::string("none") : idField->dump()) + error);
        }
        const auto ok = response.find("ok");
        if (ok == response.end() || !ok->is_boolean())
            fail(label() + " answered the " + requestName + " request without an \"ok\" field");
        if (!ok->get<bool>()) {
            std::string error = "no reason given";
            if (response.contains("error") && response["error"].is_string())
                error = response["error"].get<std::string>();
            fail(label() + " refused the " + requestName + " request: " + withoutFinalPeriod(error));
        }
        return response;
    }

    void hello(const Progress& progress)
    {
        progress.report(0.0, "Starting the runner");
        const json response = exchange({{"op", "hello"}}, "hello", options.helloTimeout, progress);
        const auto protocol = response.find("protocol");
        if (protocol == response.end() || !protocol->is_number_integer())
            fail(label() + " did not say which protocol version it speaks in its hello answer");
        if (protocol->get<int64_t>() != kRunnerProtocolVersion)
            fail(label() + " speaks protocol version " + protocol->dump() + ", but this ScaleScope speaks version " +
                 std::to_string(kRunnerProtocolVersion));
        device = stringField(response, "device");
        name = stringField(response, "name");
    }

    void load(RunMode mode, const Progress& progress)
    {
        progress.report(0.1, "Loading the checkpoint on the runner");
        const json response = exchange({{"op", "load"}, {"checkpoint", checkpointPath}, {"mode", runModeName(mode)}},
                                       "load", options.loadTimeout, progress);
        const std::string expected = architectureName(checkpoint->config().architecture);
        const auto architecture = response.find("architecture");
        if (architecture != response.end() && architecture->is_string() && architecture->get<std::string>() != expected)
            fail(label() + " loaded " + checkpointPath + " as " + architecture->get<std::string>() + ", but it is " +
                 expected + " here; the runner must see the same folder at the same path");
        loaded = true;
        loadedMode = mode;
    }

    void ensureReady(RunMode mode, const Progress& progress)
    {
        if (!process || !loaded) {
            stopProcess();
            startProcess();
            hello(progress);
            load(mode, progress);
        } else if (loadedMode != mode) {
            load(mode, progress);
        }
    }

    void shutdown()
    {
        if (!process)
            return;
        try {
            exchange({{"op", "shutdown"}}, "shutdown", options.shutdownTimeout, Progress{});
        } catch (const Error&) {
            return; // exchange has stopped the process
        }
        process->closeStdin();
        process->hasExited(options.shutdownTimeout);
        process->stop(std::chrono::milliseconds(2000));
        process.reset();
        loaded = false;
    }

    FloatTensor readTensor(const TensorStore& store, const std::string& file, const std::string& tensorName) const
    {
        const TensorView* view = store.find(tensorName);
        if (!view)
            throw Error("the runner's output " + file + " has no tensor '" + tensorName + "'");
        switch (view->dtype) {
        case Dtype::F32:
        case Dtype::F16:
        case Dtype::BF16:
        case Dtype::F64:
            break;
        default:
            throw Error("tensor '" + tensorName + "' in the runner's output " + file + " has dtype " +
                        dtypeName(view->dtype) + " instead of a float dtype");
        }
        return view->toFloat();
    }

    ForwardResult readResult(const std::string& file, const EncoderInputs& inputs, const std::vector<std::string>& selected)
    {
        ForwardResult result;
        const ModelConfig& c = checkpoint->config();
        const int64_t batch = static_cast<int64_t>(inputs.inputIds.size());
        int64_t seq = 0;
        for (const auto& row : inputs.inputIds)
            seq = std::max<int64_t>(seq, static_cast<int64_t>(row.size()));
        try {
            std::unique_ptr<TensorStore> store = TensorStore::openFile(file);
            auto expectShape = [&](const NamedTensor& t, const std::vector<int64_t>& shape) {
                if (t.tensor.shape != shape)
                    throw Error("tensor '" + t.name + "' in the runner's output " + file + " has shape " +
                                shapeText(t.tensor.shape) + " instead of " + shapeText(shape));
            };
            if (checkpoint->layout().isQuestionAnswering()) {
                for (const char* tensorName : {"start_logits", "end_logits"}) {
                    result.outputs.push_back({tensorName, readTensor(*store, file, tensorName)});
                    expectShape(result.outputs.back(), {batch, seq});
                }
            } else {
                result.outputs.push_back({"logits", readTensor(*store, file, "logits")});
                if (inputs.logitPositions.empty())
                    expectShape(result.outputs.back(), {batch, seq, c.vocabSize});
                else
                    expectShape(result.outputs.back(), {static_cast<int64_t>(inputs.logitPositions.size()), c.vocabSize});
            }
            for (const std::string& point : selected) {
                result.captures.push_back({point, readTensor(*store, file, point)});
                if (result.captures.back().tensor.values.empty())
                    throw Error("tensor '" + point + "' in the runner's output " + file + " is empty");
            }
        } catch (const Cancelled&) {
            throw;
        } catch (const Error& e) {
            std::error_code ignored;
            std::filesystem::remove(file, ignored);
            fail(label() + " wrote an output that does not fit the request: " + withoutFinalPeriod(e.what()));
        }
        std::error_code ignored;
        std::filesystem::remove(file, ignored);
        return result;
    }
};

RunnerBackend::RunnerBackend() : impl_(std::make_unique<Impl>()) {}
RunnerBackend::~RunnerBackend() = default;

std::unique_ptr<RunnerBackend> RunnerBackend::start(const std::string& command, const std::string& checkpointDir,
                                                    const RunnerOptions& options, const Progress& progress)
{
    if (command.find_first_not_of(" \t") == std::string::npos)
        throw Error("The runner command is empty.");
    std::unique_ptr<RunnerBackend> backend(new RunnerBackend());
    Impl& m = *backend->impl_;
    m.command = command;
    m.options = options;
    m.checkpoint = Checkpoint::open(checkpointDir);
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(checkpointDir, error);
    m.checkpointPath = (error ? std::filesystem::path(checkpointDir) : absolute).lexically_normal().string();
    while (m.checkpointPath.size() > 1 && m.checkpointPath.back() == '/')
        m.checkpointPath.pop_back();

    const std::string parent = options.exchangeParent.empty() ? defaultExchangeParent() : options.exchangeParent;
    std::string pattern = parent + "/scalescope-runner-XXXXXX";
    if (!::mkdtemp(pattern.data()))
        throw Error("Cannot create the runner's exchange folder in " + parent + ": " + std::strerror(errno) + ".");
    m.exchangeDir = pattern;

    m.ensureReady(options.initialMode, progress);
    progress.report(1.0, "Runner ready");
    return backend;
}

const Checkpoint& RunnerBackend::checkpoint() const { return *impl_->checkpoint; }
const std::vector<LinearInfo>& RunnerBackend::linears() const { return impl_->checkpoint->plan().linears(); }
std::vector<std::string> RunnerBackend::capturePoints() const { return impl_->checkpoint->layout().capturePoints(); }

ForwardResult RunnerBackend::forward(const EncoderInputs& inputs, const ForwardOptions& options, const Progress& progress)
{
    Impl& m = *impl_;
    const auto started = Clock::now();
    validateForwardInputs(inputs, m.checkpoint->config(), m.checkpoint->layout());
    validateOverrides(options.overrides, m.checkpoint->layout());
    if (!options.overrides.empty())
        throw Error("Precision overrides do not reach a runner yet; run them in-process (--device cpu).");
    progress.throwIfCancelled();
    m.ensureReady(options.mode, progress);

    const bool maskedLm = m.checkpoint->layout().isMaskedLm();
    json mask = json::array();
    for (std::size_t b = 0; b < inputs.inputIds.size(); ++b)
        mask.push_back(inputs.attentionMask.empty() ? std::vector<int64_t>(inputs.inputIds[b].size(), 1)
                                                    : inputs.attentionMask[b]);
    const std::vector<std::string> selected = selectCapturePoints(m.checkpoint->layout().capturePoints(), options.capture);
    const std::string output = m.exchangeDir + "/forward-" + std::to_string(m.nextId) + ".safetensors";
    json request = {{"op", "forward"}, {"input_ids", inputs.inputIds}, {"attention_mask", mask},
                    {"capture", selected}, {"output", output}};
    if (maskedLm && !inputs.logitPositions.empty()) {
        json positions = json::array();
        for (const auto& [row, position] : inputs.logitPositions)
            positions.push_back({row, position});
        request["logit_positions"] = positions;
    }
    progress.report(0.2, "Running on " + (m.name.empty() ? std::string("the runner") : m.name));
    const json response = m.exchange(request, "forward", m.options.forwardTimeout, progress);
    ForwardResult result = m.readResult(output, inputs, selected);
    const auto elapsed = response.find("elapsed_ms");
    m.lastRoundTripMs = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    result.elapsedMs = elapsed != response.end() && elapsed->is_number() ? elapsed->get<double>() : m.lastRoundTripMs;
    if (options.onCapture) { // the runner's file is read whole; hand the points over as asked
        for (const NamedTensor& capture : result.captures)
            options.onCapture(capture.name, capture.tensor.shape, capture.tensor.values.data());
        result.captures.clear();
    }
    progress.report(1.0, "Done");
    return result;
}

std::string RunnerBackend::deviceName() const
{
    return impl_->name.empty() ? "runner: " + abbreviated(impl_->command, 60) : impl_->name;
}

const std::string& RunnerBackend::command() const { return impl_->command; }
const std::string& RunnerBackend::runnerDevice() const { return impl_->device; }
bool RunnerBackend::isRunning() const { return impl_->process != nullptr && impl_->loaded; }
int RunnerBackend::startCount() const { return impl_->starts; }
double RunnerBackend::lastRoundTripMs() const { return impl_->lastRoundTripMs; }
const std::string& RunnerBackend::exchangeDirectory() const { return impl_->exchangeDir; }

std::vector<std::string> RunnerBackend::recentLogLines() const
{
    return std::vector<std::string>(impl_->stderrLines.begin(), impl_->stderrLines.end());
}

std::unique_ptr<InferenceBackend> openBackend(const std::string& device, const std::string& checkpointDir,
                                              const Progress& progress)
{
    if (device == "cpu")
        return EncoderModel::load(checkpointDir, progress);
    const std::string prefix = "runner:";
    if (device.compare(0, prefix.size(), prefix) == 0) {
        const std::string command = device.substr(prefix.size());
        if (command.find_first_not_of(" \t") == std::string::npos)
            throw Error("The device \"runner:\" needs a command after the colon, e.g. runner:\"scalescope-cli runner\".");
        return RunnerBackend::start(command, checkpointDir, RunnerOptions{}, progress);
    }
    throw Error("Unknown device \"" + device + "\"; expected cpu or runner:COMMAND.");
}

} // namespace scalescope
