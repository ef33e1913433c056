#include "device/runner_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

#include "common/error.h"
#include "common/text_files.h"
#include "device/runner_backend.h"
#include "device/runner_process.h"
#include "device/runner_protocol.h"

namespace scalescope {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Short enough that cancel feels immediate, long enough not to spin.
constexpr std::chrono::milliseconds kPollSlice{50};
// A response line longer than this is not the protocol (tensors travel as payloads or files).
constexpr std::size_t kMaxResponseLine = 16u << 20;
constexpr std::size_t kMaxLogLine = 2000;
// PROTOCOL.md: no message nests deeper.
constexpr int kMaxProtocolDepth = 64;
constexpr std::size_t kUploadChunk = 1u << 20;

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

} // namespace

std::string withoutFinalPeriod(std::string sentence)
{
    while (!sentence.empty() && (sentence.back() == '.' || sentence.back() == ' ' || sentence.back() == '\n'))
        sentence.pop_back();
    return sentence;
}

// What is still to be written for the pending request, and what its response announced.
struct RunnerChannel::Pending {
    std::string line;
    std::size_t lineWritten = 0;
    int payloadFd = -1;
    uint64_t payloadLeft = 0;
    std::string chunk;
    std::size_t chunkWritten = 0;
    std::string requestName;

    ~Pending()
    {
        if (payloadFd >= 0)
            ::close(payloadFd);
    }
    bool writing() const { return lineWritten < line.size() || chunkWritten < chunk.size() || payloadLeft > 0; }
};

RunnerChannel::RunnerChannel(DeviceSpec device, std::size_t stderrLinesKept,
                             std::function<void(const std::string&)> onLogLine,
                             std::function<void(const RunnerProgressLine&)> onProgressLine)
    : device_(std::move(device)), stderrLinesKept_(std::max<std::size_t>(1, stderrLinesKept)),
      onLogLine_(std::move(onLogLine)), onProgressLine_(std::move(onProgressLine))
{
}

RunnerChannel::~RunnerChannel() = default;

std::string RunnerChannel::runnerText() const { return "the runner \"" + abbreviatedText(device_.command, 60) + "\""; }
std::string RunnerChannel::label() const { return "The runner \"" + abbreviatedText(device_.command, 60) + "\""; }

void RunnerChannel::start()
{
    stdoutBuffer_.clear();
    stderrPartial_.clear();
    stderrLines_.clear();
    process_ = std::make_unique<RunnerProcess>(device_.command, device_.argv);
}

void RunnerChannel::stop(std::chrono::milliseconds grace)
{
    if (process_)
        process_->stop(grace);
    process_.reset();
    stdoutBuffer_.clear();
}

void RunnerChannel::finish(std::chrono::milliseconds wait)
{
    if (!process_)
        return;
    process_->closeStdin();
    process_->hasExited(wait);
    stop();
}

std::string RunnerChannel::lastLogLine() const
{
    for (auto it = stderrLines_.rbegin(); it != stderrLines_.rend(); ++it)
        if (it->find_first_not_of(" \t") != std::string::npos)
            return *it;
    if (stderrPartial_.find_first_not_of(" \t") != std::string::npos)
        return abbreviatedText(stderrPartial_, kMaxLogLine);
    return "";
}

void RunnerChannel::fail(const std::string& what)
{
    drainStderr(); // its last words may have arrived with the failure
    std::string message = withoutFinalPeriod(what);
    const std::string last = lastLogLine();
    if (!last.empty() && message.find(last) == std::string::npos)
        message += "; its last message was: " + withoutFinalPeriod(abbreviatedText(last, 300));
    stop();
    throw Error(message + ".");
}

void RunnerChannel::failCancelled()
{
    stop();
    throw Cancelled();
}

void RunnerChannel::consumeStderr(const char* data, std::size_t size)
{
    for (std::size_t i = 0; i < size; ++i) {
        const char c = data[i];
        if (c == '\n') {
            if (!stderrPartial_.empty() && stderrPartial_.back() == '\r')
                stderrPartial_.pop_back();
            if (onLogLine_)
                onLogLine_(stderrPartial_);
            stderrLines_.push_back(std::move(stderrPartial_));
            stderrPartial_.clear();
            while (stderrLines_.size() > stderrLinesKept_)
                stderrLines_.pop_front();
        } else if (stderrPartial_.size() < kMaxLogLine) {
            stderrPartial_.push_back(c);
        }
    }
}

bool RunnerChannel::drainStderr()
{
    if (!process_ || process_->stderrFd() < 0)
        return false;
    char buffer[8192];
    while (true) {
        const ssize_t n = ::read(process_->stderrFd(), buffer, sizeof buffer);
        if (n > 0) {
            consumeStderr(buffer, static_cast<std::size_t>(n));
            continue;
        }
        if (n == 0) {
            process_->closeStderr();
            return false;
        }
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;
    }
}

void RunnerChannel::failExited(const std::string& requestName)
{
    const auto deadline = Clock::now() + std::chrono::milliseconds(1000);
    while (process_ && process_->stderrFd() >= 0 && Clock::now() < deadline) {
        pollfd fd{process_->stderrFd(), POLLIN, 0};
        ::poll(&fd, 1, 50);
        if (!drainStderr())
            break;
    }
    std::string how;
    if (process_ && process_->hasExited(std::chrono::milliseconds(1000)))
        how = process_->exitDescription();
    fail(label() + " exited" + (how.empty() ? "" : " (" + how + ")") + " during the " + requestName + " request");
}

bool RunnerChannel::takeLine(std::string& line)
{
    while (true) {
        const std::size_t newline = stdoutBuffer_.find('\n');
        if (newline == std::string::npos)
            return false;
        line = stdoutBuffer_.substr(0, newline);
        stdoutBuffer_.erase(0, newline + 1);
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.find_first_not_of(" \t") != std::string::npos)
            return true;
    }
}

// One poll slice: writes what the child's stdin takes, reads what stdout and stderr have. False
// when nothing happened before the deadline or the slice ended.
bool RunnerChannel::pump(Pending& pending, Clock::time_point deadline)
{
    pollfd fds[3];
    nfds_t count = 0;
    fds[count++] = {process_->stdoutFd(), POLLIN, 0};
    int stderrIndex = -1, stdinIndex = -1;
    if (process_->stderrFd() >= 0) {
        stderrIndex = static_cast<int>(count);
        fds[count++] = {process_->stderrFd(), POLLIN, 0};
    }
    if (pending.writing() && process_->stdinFd() >= 0) {
        stdinIndex = static_cast<int>(count);
        fds[count++] = {process_->stdinFd(), POLLOUT, 0};
    }
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    const int wait = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(remaining.count(), kPollSlice.count())));
    const int ready = ::poll(fds, count, wait);
    if (ready < 0) {
        if (errno == EINTR)
            return false;
        fail("Waiting for " + runnerText() + " failed: " + std::strerror(errno));
    }
    if (ready == 0)
        return false;
    if (stderrIndex >= 0 && fds[stderrIndex].revents)
        drainStderr();
    if (stdinIndex >= 0 && fds[stdinIndex].revents) {
        // The line first, then the payload file chunk by chunk.
        if (pending.lineWritten == pending.line.size() && pending.chunkWritten == pending.chunk.size() &&
            pending.payloadLeft > 0) {
            pending.chunk.resize(static_cast<std::size_t>(std::min<uint64_t>(kUploadChunk, pending.payloadLeft)));
            const ssize_t got = ::read(pending.payloadFd, pending.chunk.data(), pending.chunk.size());
            if (got <= 0)
                fail("Cannot read the file being sent to " + runnerText() + ": it is shorter than announced");
            pending.chunk.resize(static_cast<std::size_t>(got));
            pending.chunkWritten = 0;
            pending.payloadLeft -= static_cast<uint64_t>(got);
        }
        const bool onLine = pending.lineWritten < pending.line.size();
        const std::string& source = onLine ? pending.line : pending.chunk;
        std::size_t& done = onLine ? pending.lineWritten : pending.chunkWritten;
        const ssize_t n = writeWithoutSigpipe(process_->stdinFd(), source.data() + done, source.size() - done);
        if (n > 0)
            done += static_cast<std::size_t>(n);
        else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            process_->closeStdin(); // the child closed its stdin; it is usually exiting, which stdout will show
    }
    if (fds[0].revents) {
        char buffer[65536];
        const ssize_t n = ::read(process_->stdoutFd(), buffer, sizeof buffer);
        if (n > 0)
            stdoutBuffer_.append(buffer, static_cast<std::size_t>(n));
        else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            failExited(pending.requestName);
    }
    return true;
}

int64_t RunnerChannel::prepareRequest(json& request, Pending& pending, const OutgoingPayload* payload)
{
    const int64_t id = nextId_++;
    request["id"] = id;
    if (payload) {
        request["bytes"] = payload->size;
        pending.payloadFd = ::open(payload->filePath.c_str(), O_RDONLY | O_CLOEXEC);
        if (pending.payloadFd < 0)
            throw Error("Cannot read " + payload->filePath + " to send it to " + runnerText() + ": " +
                        std::strerror(errno) + ".");
        pending.payloadLeft = payload->size;
    }
    try {
        pending.line = request.dump() + "\n";
    } catch (const json::exception&) {
        // Only strings we were given can be at fault: paths that are not UTF-8.
        throw Error("The " + pending.requestName + " request for " + runnerText() +
                    " holds a path that is not valid UTF-8.");
    }
    return id;
}

std::string RunnerChannel::reportProgressLine(const json& message, const std::string& requestName,
                                              const Progress& progress)
{
    const auto fractionField = message.find("progress");
    const auto stageField = message.find("stage");
    const double fraction =
        fractionField != message.end() && fractionField->is_number() ? fractionField->get<double>() : 0.0;
    const std::string stage = abbreviatedText(
        stageField != message.end() && stageField->is_string() ? stageField->get<std::string>() : requestName, 200);
    progress.report(fraction, stage);
    if (onProgressLine_)
        onProgressLine_({runnerText(), requestName, fraction, stage});
    return stage + ", " + std::to_string(static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * 100))) + " %";
}

void RunnerChannel::failDeadline(const std::string& requestName, std::chrono::milliseconds deadline,
                                 const std::string& lastProgress)
{
    fail(label() + " did not finish the " + requestName + " request within its " + secondsText(deadline) +
         " deadline" + (lastProgress.empty() ? std::string(" (") : " (its last progress: " + lastProgress + "; ") +
         "SCALESCOPE_RUNNER_DEADLINES sets the deadlines)");
}

RunnerChannel::Reply RunnerChannel::exchange(json request, const std::string& requestName,
                                             std::chrono::milliseconds idleTimeout, std::chrono::milliseconds deadline,
                                             const Progress& progress, const OutgoingPayload* payload,
                                             uint64_t maxResponseBytes)
{
    if (!process_)
        throw Error(label() + " is not running.");
    Pending pending;
    pending.requestName = requestName;
    const int64_t id = prepareRequest(request, pending, payload);
    const auto started = Clock::now();
    auto idleUntil = started + idleTimeout;
    // The overall deadline: progress lines restart the idle timeout, never this.
    const auto finishBy = started + deadline;
    std::string lastProgress;
    Reply reply;
    bool awaitingPayload = false;
    uint64_t payloadSize = 0;
    while (true) {
        if (progress.cancelled())
            failCancelled();
        if (Clock::now() >= finishBy)
            failDeadline(requestName, deadline, lastProgress);
        if (awaitingPayload) {
            if (stdoutBuffer_.size() >= payloadSize) {
                reply.payload = stdoutBuffer_.substr(0, static_cast<std::size_t>(payloadSize));
                stdoutBuffer_.erase(0, static_cast<std::size_t>(payloadSize));
                lastRoundTripMs_ = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
                return reply;
            }
        } else if (std::string answer; takeLine(answer)) {
            json message = checkAnswer(answer, id, requestName);
            if (!message.contains("ok")) { // a progress line: the runner is working, not stuck
                idleUntil = Clock::now() + idleTimeout;
                lastProgress = reportProgressLine(message, requestName, progress);
                continue;
            }
            if (pending.writing())
                fail(label() + " answered the " + requestName + " request before it had read all of it");
            reply.response = std::move(message);
            const auto bytes = reply.response.find("bytes");
            if (bytes == reply.response.end()) {
                lastRoundTripMs_ = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
                return reply;
            }
            if (!bytes->is_number_unsigned() || (maxResponseBytes > 0 && bytes->get<uint64_t>() > maxResponseBytes))
                fail(label() + " announced " + abbreviatedText(bytes->dump(), 40) + " bytes for the " + requestName +
                     " request, more than the " + std::to_string(maxResponseBytes) + " the request can produce");
            payloadSize = bytes->get<uint64_t>();
            stdoutBuffer_.reserve(static_cast<std::size_t>(payloadSize));
            awaitingPayload = true;
            continue;
        }
        if (!awaitingPayload && stdoutBuffer_.size() > kMaxResponseLine)
            fail(label() + " wrote more than 16 MB on stdout without a line break during the " + requestName +
                 " request");
        if (Clock::now() >= idleUntil)
            fail(label() + " did not answer the " + requestName + " request within " + secondsText(idleTimeout));
        if (pump(pending, std::min(idleUntil, finishBy)) && (pending.writing() || awaitingPayload))
            idleUntil = std::max(idleUntil, Clock::now() + std::min(idleTimeout, std::chrono::milliseconds(60000)));
    }
}

json RunnerChannel::checkAnswer(const std::string& answer, int64_t id, const std::string& requestName)
{
    if (jsonNestingExceeded(answer.data(), answer.data() + answer.size(), kMaxProtocolDepth) >= 0)
        fail(label() + " answered the " + requestName + " request with JSON nested more than " +
             std::to_string(kMaxProtocolDepth) + " levels deep");
    // Bounded before it is parsed: a 16 MB line of empty objects would become gigabytes.
    if (const ProtocolLineCheck check = checkProtocolLine(answer); !check.refusal.empty())
        fail(label() + " answered the " + requestName + " request with a line that " + check.refusal);
    json response;
    try {
        response = json::parse(answer);
    } catch (const json::exception&) { // parse errors, and numbers out of range (1e400)
        fail(label() + " answered the " + requestName + " request with something that is not JSON: \"" +
             escapeInvalidUtf8(abbreviatedText(answer, 80)) + "\"");
    }
    if (!response.is_object())
        fail(label() + " answered the " + requestName + " request with JSON that is not an object: \"" +
             escapeInvalidUtf8(abbreviatedText(answer, 80)) + "\"");
    const auto idField = response.find("id");
    if (idField == response.end() || !idField->is_number_integer() || idField->get<int64_t>() != id) {
        std::string error;
        if (response.contains("error") && response["error"].is_string())
            error = " (it said: " + withoutFinalPeriod(response["error"].get<std::string>()) + ")";
        fail(label() + " answered request " + std::to_string(id) + " (" + requestName +
             ") with the id of another request: " +
             (idField == response.end() ? std::string("none") : abbreviatedText(idField->dump(), 40)) + error);
    }
    if (response.contains("progress") && !response.contains("ok"))
        return response;
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

} // namespace scalescope
