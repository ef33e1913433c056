#pragma once
// The runner protocol on the wire (packaging/runners/PROTOCOL.md): one request as a JSON line,
// optionally followed by an in-band payload (protocol 2), then the runner's progress lines and its
// response with, when it announces "bytes", a payload of exactly that size. Owns the child process.
//
// Threading: one owner thread; it starts none. While a request is pending it polls the child's
// stdin, stdout and stderr together in short slices, so the child never blocks on a full stderr
// pipe, a large upload never deadlocks against a chatty child, and the cancel flag is seen within
// ~50 ms. Each request has an idle timeout that every progress line restarts, and an overall
// deadline that nothing moves.
// Errors: every failure (timeout, cancel, the child exiting, an answer that is not the protocol,
// ok:false) stops the child and throws scalescope::Error (Cancelled for the cancel flag) with one
// sentence that names the runner and, when it wrote any, its last stderr line.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/progress.h"
#include "device/device_spec.h"

namespace scalescope {

class RunnerProcess;
struct RunnerProgressLine;

// Bytes that follow a request line: a whole file, streamed in chunks (a checkpoint upload).
struct OutgoingPayload {
    std::string filePath;
    uint64_t size = 0;
};

class RunnerChannel {
public:
    RunnerChannel(DeviceSpec device, std::size_t stderrLinesKept, std::function<void(const std::string&)> onLogLine,
                  std::function<void(const RunnerProgressLine&)> onProgressLine = nullptr);
    ~RunnerChannel();

    void start();
    bool running() const { return process_ != nullptr; }
    // Stops the child (SIGTERM, then SIGKILL after `grace`).
    void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));
    // Closes stdin and waits up to `wait` for the child to exit, then stops it.
    void finish(std::chrono::milliseconds wait);

    struct Reply {
        nlohmann::json response;
        std::string payload; // the bytes a response announced with "bytes"
    };
    // Sends the request (its "id" is set here) and the payload, and waits for the response: at most
    // idleTimeout without a sign of life (a progress line, bytes moving), at most `deadline` in all.
    // Progress lines go to `progress` and to the channel's onProgressLine. A response payload larger
    // than maxResponseBytes is refused before it is read.
    Reply exchange(nlohmann::json request, const std::string& requestName, std::chrono::milliseconds idleTimeout,
                   std::chrono::milliseconds deadline, const Progress& progress,
                   const OutgoingPayload* payload = nullptr, uint64_t maxResponseBytes = 0);

    // Stops the child and throws: the one exit for every failure of a request.
    [[noreturn]] void fail(const std::string& what);

    std::string label() const;      // The runner "COMMAND"
    std::string runnerText() const; // the runner "COMMAND"
    const std::deque<std::string>& recentLogLines() const { return stderrLines_; }
    double lastRoundTripMs() const { return lastRoundTripMs_; }
    void setLastRoundTripMs(double ms) { lastRoundTripMs_ = ms; }
    void clearLogCallback()
    {
        onLogLine_ = nullptr;
        onProgressLine_ = nullptr;
    }

private:
    struct Pending;
    bool drainStderr();
    void consumeStderr(const char* data, std::size_t size);
    std::string lastLogLine() const;
    [[noreturn]] void failExited(const std::string& requestName);
    [[noreturn]] void failCancelled();
    bool takeLine(std::string& line);
    bool pump(Pending& pending, std::chrono::steady_clock::time_point deadline);
    // exchange()'s steps: the request's id, line and payload file; a progress line reported (returns
    // it as the deadline's message quotes it); the overall deadline passed.
    int64_t prepareRequest(nlohmann::json& request, Pending& pending, const OutgoingPayload* payload);
    std::string reportProgressLine(const nlohmann::json& message, const std::string& requestName,
                                   const Progress& progress);
    [[noreturn]] void failDeadline(const std::string& requestName, std::chrono::milliseconds deadline,
                                   const std::string& lastProgress);
    nlohmann::json checkAnswer(const std::string& answer, int64_t id, const std::string& requestName);

    DeviceSpec device_;
    std::size_t stderrLinesKept_;
    std::function<void(const std::string&)> onLogLine_;
    std::function<void(const RunnerProgressLine&)> onProgressLine_;
    std::unique_ptr<RunnerProcess> process_;
    int64_t nextId_ = 1;
    std::string stdoutBuffer_;
    std::string stderrPartial_;
    std::deque<std::string> stderrLines_;
    double lastRoundTripMs_ = 0;
};

// Text helper shared by the client's messages (abbreviatedText is common/text_files.h's).
std::string withoutFinalPeriod(std::string sentence);

} // namespace scalescope
