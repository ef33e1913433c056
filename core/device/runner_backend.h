#pragma once
// Devices behind InferenceBackend: the in-process CPU engine, or a runner process that serves
// forward passes over the JSON-lines protocol of packaging/runners/PROTOCOL.md, started from a
// user command line (a local `scalescope-cli runner`, or `ssh aiu-host torchrun ... aiu_runner.py`).
//
// RunnerBackend owns: the conversation with the child (device/runner_channel.h: process, pipes,
// framing, timeouts), a private exchange folder for the safetensors files (removed on
// destruction, and by SIGINT or SIGTERM where the program installed io/interrupt_cleanup.h's
// handler), and the checkpoint opened locally for the config, the tokenizer and the plan (no
// weights are decoded here). With protocol 2 nothing is shared: the checkpoint is uploaded once
// (device/checkpoint_manifest.h) and tensors come back in-band.
// Threading: like every backend, not to be used from two threads at once. It starts no threads:
// while a request is pending it polls the child's stdout and stderr together in short slices, so
// the child can never block on a full stderr pipe, and the cancel flag is seen within ~50 ms.
// Errors: every failure (timeout, cancel, the child exiting, an answer that is not the protocol,
// ok:false) throws scalescope::Error (Cancelled for the cancel flag) with one sentence that names
// the runner and, when it wrote any, its last stderr line; the child is then stopped (SIGTERM, then
// SIGKILL) and the next request restarts it (spawn, hello, load) without the caller doing anything.
// Inputs are checked here before they are sent (ids inside the vocabulary, sequence length, mask
// shape), so a well-formed request the runner refuses means the runner is in trouble, and a restart
// is the remedy; a bad input costs no restart.
//
// The runner returns logits and captures only: ForwardOptions::activationStatistics and
// linearInputAmax are in-process features and are ignored here (the result's lists stay empty).
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device/device_spec.h"
#include "model/inference_backend.h"
#include "model/run_settings.h"

namespace scalescope {

// The protocol versions this build speaks (packaging/runners/PROTOCOL.md): version 1 exchanges
// tensors through a shared folder, version 2 in-band with checkpoint upload by content hash. The
// client offers both at hello and uses what the runner picks; a hello that offers nothing gets 1.
constexpr int kRunnerProtocolVersion = 1;
constexpr int kRunnerProtocolLatest = 2;

// One progress line of a runner (packaging/runners/PROTOCOL.md): which runner, during which
// request, how far and at what stage.
struct RunnerProgressLine {
    std::string runner;  // the runner "COMMAND"
    std::string request; // "load", "forward", ...
    double fraction = 0;
    std::string stage;
};

// The request kinds that have a deadline of their own ("shutdown" has shutdownTimeout).
const std::vector<std::string>& runnerRequestKinds();
// The built-in deadline of a request kind: hello, has_checkpoint and commit_checkpoint 5 min, an
// upload (one file) 1 h, load 2 h (an AIU runner compiles every shape it serves while it loads),
// forward 30 min.
std::chrono::milliseconds defaultRunnerDeadline(const std::string& request);
// $SCALESCOPE_RUNNER_DEADLINES ("load=3600,forward=120": seconds per request kind, comma-separated)
// as a map; empty when unset. Throws scalescope::Error naming the variable and the item at fault.
std::map<std::string, std::chrono::milliseconds> runnerDeadlinesFromEnvironment();

// Exchange folders are named "scalescope-runner-OWNER-XXXXXX" (io/temporary_owner.h): one whose
// owner on this host is gone (kill -9, a crash) is removed by the next client that starts in the
// same parent folder, which other hosts may share (SCALESCOPE_RUNNER_EXCHANGE_DIR). Nothing else
// in `parent` is touched: no other name, no link.
void removeStaleExchangeFolders(const std::string& parent);

struct RunnerOptions {
    // Idle timeouts: how long the runner may stay silent. Every progress line restarts them.
    // The child gets this long to start and answer hello (ssh and torchrun take a while).
    std::chrono::milliseconds helloTimeout{60000};
    std::chrono::milliseconds loadTimeout{120000};
    std::chrono::milliseconds forwardTimeout{60000};
    // Overall deadlines by request kind (runnerRequestKinds()): however many progress lines the
    // runner sends, a request that is not answered by then fails with one sentence naming the
    // runner and the request. A kind missing here takes $SCALESCOPE_RUNNER_DEADLINES, else its
    // defaultRunnerDeadline().
    std::map<std::string, std::chrono::milliseconds> deadlines;
    // How long the destructor waits for the runner to exit after shutdown before stopping it.
    std::chrono::milliseconds shutdownTimeout{5000};
    // Where the private exchange folder is created. Empty: $SCALESCOPE_RUNNER_EXCHANGE_DIR, else
    // $TMPDIR, else /tmp. A runner on another host needs a folder both hosts see at the same path,
    // and the checkpoint at the same path too.
    std::string exchangeParent;
    // What the runner loads at start; forward() reloads when it asks for another mode or
    // accumulation. Of the settings only those two travel (accumulation as "accumulate", sent only
    // when it is dl16).
    RunSettings initialSettings;
    // Called with every stderr line of the runner, on the calling thread, while a request is pending.
    std::function<void(const std::string& line)> onLogLine;
    // Called with every progress line of the runner, on the calling thread (the CLI prints them).
    std::function<void(const RunnerProgressLine&)> onProgressLine;
    // How many of the runner's last stderr lines are kept for messages.
    std::size_t stderrLinesKept = 8;
};

class RunnerBackend : public InferenceBackend {
public:
    // Opens checkpointDir locally, starts `command` through /bin/sh -c, checks hello's protocol
    // version and loads the checkpoint as options.initialSettings say. Throws scalescope::Error.
    static std::unique_ptr<RunnerBackend> start(const std::string& command, const std::string& checkpointDir,
                                                const RunnerOptions& options = {}, const Progress& progress = {});
    // The same for a checkpoint that is already open (it is not opened twice).
    static std::unique_ptr<RunnerBackend> start(const DeviceSpec& device, std::shared_ptr<const Checkpoint> checkpoint,
                                                const RunnerOptions& options = {}, const Progress& progress = {});
    // Asks the runner to shut down, stops it when it does not exit in time, removes the exchange folder.
    ~RunnerBackend() override;
    RunnerBackend(const RunnerBackend&) = delete;
    RunnerBackend& operator=(const RunnerBackend&) = delete;

    const Checkpoint& checkpoint() const override;
    const std::vector<LinearInfo>& linears() const override;
    std::vector<std::string> capturePoints() const override;
    // Reloads the runner first when options.mode or options.accumulation differs from what is loaded. elapsedMs is the
    // runner's own elapsed_ms (its compute time); lastRoundTripMs() has the time the caller waited.
    ForwardResult forward(const EncoderInputs& inputs, const ForwardOptions& options,
                          const Progress& progress = {}) override;
    // The runner's own name from hello ("ScaleScope CPU runner, 2 threads"), or the command.
    std::string deviceName() const override;

    const std::string& command() const;
    // "cpu", "aiu", ... as the runner announced it at hello.
    const std::string& runnerDevice() const;
    // True while a runner process is up and loaded; false after a failure until the next request.
    bool isRunning() const;
    // How many times the runner was started (1 after start(), +1 per transparent restart).
    int startCount() const;
    // The protocol version the runner picked at hello (1 or 2).
    int protocolVersion() const;
    double lastRoundTripMs() const;
    // The last stderr lines of the runner (oldest first), for a log view.
    std::vector<std::string> recentLogLines() const;
    // The folder where request files are exchanged.
    const std::string& exchangeDirectory() const;

private:
    RunnerBackend();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace scalescope
