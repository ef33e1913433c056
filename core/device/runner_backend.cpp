#include "device/runner_backend.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "device/checkpoint_manifest.h"
#include "device/forward_summary.h"
#include "device/runner_channel.h"
#include "device/runner_request.h"
#include "model/forward_inputs.h"
#include "io/interrupt_cleanup.h"
#include "io/safetensors.h"
#include "io/temporary_owner.h"

namespace scalescope {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string stringField(const json& object, const char* key)
{
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string defaultExchangeParent()
{
    for (const char* variable : {"SCALESCOPE_RUNNER_EXCHANGE_DIR", "TMPDIR"}) {
        const char* value = std::getenv(variable);
        if (value && *value)
            return value;
    }
    return "/tmp";
}

constexpr const char* kExchangePrefix = "scalescope-runner-";

int64_t nonFiniteValues(const FloatTensor& tensor)
{
    return std::count_if(tensor.values.begin(), tensor.values.end(), [](float v) { return !std::isfinite(v); });
}

// The runner's per-module inf/NaN counts ("nonfinite", as `scalescope-cli runner` reports them).
// A runner that does not report them still has what it returned checked: the captured module
// outputs, and the final outputs, which the head Linear produced. Padding is included there.
std::vector<ModuleNonFinite> nonFiniteOfReply(const json& response, const ForwardResult& result,
                                              const EncoderLayout& layout)
{
    std::vector<ModuleNonFinite> modules;
    const auto reported = response.find("nonfinite");
    if (reported != response.end() && reported->is_array()) {
        for (const json& entry : *reported)
            if (entry.is_object() && entry.contains("module") && entry["module"].is_string() &&
                entry.contains("count") && entry["count"].is_number_integer())
                modules.push_back({entry["module"].get<std::string>(), entry["count"].get<int64_t>()});
        return modules;
    }
    const std::string suffix = ".output";
    for (const NamedTensor& capture : result.captures) {
        const std::string& name = capture.name;
        if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
            if (const int64_t count = nonFiniteValues(capture.tensor))
                modules.push_back({name.substr(0, name.size() - suffix.size()), count});
    }
    int64_t headCount = 0;
    for (const NamedTensor& output : result.outputs)
        headCount += nonFiniteValues(output.tensor);
    const std::string head = layout.linears().back().module;
    if (headCount > 0 && (modules.empty() || modules.back().module != head))
        modules.push_back({head, headCount});
    return modules;
}

const char* precisionName(Precision precision)
{
    return precision == Precision::Float ? "float" : "fp8";
}

// PROTOCOL.md: {"MODULE": "float" | "fp8", ...}, and "*": "float" for every Linear not named.
json overridesJson(const PrecisionOverrides& overrides)
{
    json out = json::object();
    for (const auto& [module, precision] : overrides.modules)
        out[module] = precisionName(precision);
    if (overrides.othersFloat)
        out["*"] = "float";
    return out;
}

// The most a forward's safetensors can hold for this request: its outputs and every selected
// capture at the widest width the model has, plus a generous header.
uint64_t largestForwardBytes(const ModelConfig& c, const EncoderInputs& inputs, std::size_t captures)
{
    int64_t seq = 0;
    for (const auto& row : inputs.inputIds)
        seq = std::max<int64_t>(seq, static_cast<int64_t>(row.size()));
    const uint64_t tokens = uint64_t(inputs.inputIds.size()) * uint64_t(seq);
    const uint64_t widest = uint64_t(std::max({c.vocabSize, c.intermediateSize, c.hiddenSize, int64_t(2)}));
    return (uint64_t(captures) + 2) * tokens * widest * sizeof(float) + (1u << 20) + 256u * captures;
}

} // namespace

void removeStaleExchangeFolders(const std::string& parent)
{
    removeFoldersOfGoneOwners(parent, [](std::string_view name) { return ownerOfMkdtempName(name, kExchangePrefix); });
}

const std::vector<std::string>& runnerRequestKinds()
{
    static const std::vector<std::string> kinds = {"hello", "has_checkpoint", "upload", "commit_checkpoint", "load",
                                                   "forward"};
    return kinds;
}

std::chrono::milliseconds defaultRunnerDeadline(const std::string& request)
{
    using std::chrono::minutes;
    if (request == "upload")
        return minutes(60);
    if (request == "load")
        return minutes(120);
    if (request == "forward")
        return minutes(30);
    return minutes(5);
}

std::map<std::string, std::chrono::milliseconds> runnerDeadlinesFromEnvironment()
{
    std::map<std::string, std::chrono::milliseconds> deadlines;
    const char* value = std::getenv("SCALESCOPE_RUNNER_DEADLINES");
    if (!value || !*value)
        return deadlines;
    const std::string text = value;
    const auto trimmed = [](const std::string& s) {
        const std::size_t first = s.find_first_not_of(" \t");
        return first == std::string::npos ? std::string() : s.substr(first, s.find_last_not_of(" \t") - first + 1);
    };
    for (std::size_t from = 0; from <= text.size();) {
        const std::size_t end = std::min(text.find(',', from), text.size());
        const std::string item = trimmed(text.substr(from, end - from));
        from = end + 1;
        if (item.empty())
            continue;
        const std::size_t equals = item.find('=');
        const std::string kind = trimmed(item.substr(0, equals));
        const std::string seconds = equals == std::string::npos ? std::string() : trimmed(item.substr(equals + 1));
        char* parsedEnd = nullptr;
        const double number = seconds.empty() ? 0.0 : std::strtod(seconds.c_str(), &parsedEnd);
        const auto& kinds = runnerRequestKinds();
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end() || seconds.empty() ||
            parsedEnd != seconds.c_str() + seconds.size() || !(number > 0) || number > 1e7)
            throw Error("SCALESCOPE_RUNNER_DEADLINES=\"" + abbreviatedText(text, 200) + "\": \"" +
                        abbreviatedText(item, 80) + "\" is not KIND=SECONDS with a positive number of seconds (the kinds are " +
                        joinedWords(kinds) + ").");
        deadlines[kind] = std::chrono::milliseconds(static_cast<int64_t>(std::llround(number * 1000.0)));
    }
    return deadlines;
}

struct RunnerBackend::Impl {
    DeviceSpec device;
    RunnerOptions options;
    std::shared_ptr<const Checkpoint> checkpoint;
    std::string checkpointPath; // absolute, as sent to a protocol-1 runner
    std::string exchangeDir;
    std::unique_ptr<InterruptCleanup> exchangeCleanup; // SIGINT or SIGTERM removes exchangeDir
    std::unique_ptr<RunnerChannel> channel;
    bool loaded = false;
    RunMode loadedMode = RunMode::Fp8;
    Accumulation loadedAccumulation = Accumulation::Float32;
    int starts = 0;
    int protocol = 0;
    std::string runnerDevice;
    std::string name;
    std::unique_ptr<CheckpointManifest> manifest; // protocol 2: computed once, on first need
    std::map<std::string, std::chrono::milliseconds> deadlines; // every kind, resolved at start

    ~Impl()
    {
        if (channel)
            channel->clearLogCallback(); // the owner's callback may already be gone
        try {
            shutdown();
        } catch (...) {
            // A destructor reports nothing; the process is stopped below either way.
        }
        channel.reset();
        if (!exchangeDir.empty()) {
            std::error_code ignored;
            std::filesystem::remove_all(exchangeDir, ignored);
        }
    }

    std::string label() const { return channel->label(); }

    [[noreturn]] void fail(const std::string& what)
    {
        loaded = false;
        channel->fail(what);
    }

    RunnerChannel::Reply exchange(json request, const std::string& requestName, std::chrono::milliseconds timeout,
                                  const Progress& progress, const OutgoingPayload* payload = nullptr,
                                  uint64_t maxResponseBytes = 0)
    {
        const auto deadline = deadlines.find(requestName);
        try {
            return channel->exchange(std::move(request), requestName, timeout,
                                     deadline != deadlines.end() ? deadline->second : timeout, progress, payload,
                                     maxResponseBytes);
        } catch (...) {
            loaded = false; // a failed exchange stopped the child
            throw;
        }
    }

    void hello(const Progress& progress)
    {
        progress.report(0.0, "Starting the runner");
        const json response =
            exchange({{"op", "hello"}, {"protocols", {1, kRunnerProtocolLatest}}}, "hello", options.helloTimeout, progress)
                .response;
        const auto version = response.find("protocol");
        if (version == response.end() || !version->is_number_integer())
            fail(label() + " did not say which protocol version it speaks in its hello answer");
        if (version->get<int64_t>() < kRunnerProtocolVersion || version->get<int64_t>() > kRunnerProtocolLatest)
            fail(label() + " speaks protocol version " + version->dump() +
                 ", but this ScaleScope speaks versions 1 and 2");
        protocol = static_cast<int>(version->get<int64_t>());
        runnerDevice = stringField(response, "device");
        name = stringField(response, "name");
    }

    // Protocol 2: the runner gets the checkpoint's files unless it has them cached by hash.
    void ensureUploaded(const Progress& progress)
    {
        if (!manifest) {
            progress.report(0.05, "Hashing the checkpoint");
            manifest = std::make_unique<CheckpointManifest>(CheckpointManifest::of(checkpoint->directory()));
        }
        const json cached = exchange({{"op", "has_checkpoint"}, {"hash", manifest->hash}}, "has_checkpoint",
                                     options.helloTimeout, progress)
                                .response;
        if (cached.value("cached", false))
            return;
        uint64_t total = 0, sent = 0;
        for (const ManifestFile& file : manifest->files)
            total += file.size;
        for (const ManifestFile& file : manifest->files) {
            progress.report(total ? 0.1 + 0.4 * double(sent) / double(total) : 0.1,
                            "Sending " + file.name + " to the runner");
            const OutgoingPayload payload{file.path, file.size};
            exchange({{"op", "upload"}, {"hash", manifest->hash}, {"name", file.name}, {"sha256", file.sha256}},
                     "upload", options.loadTimeout, progress, &payload);
            sent += file.size;
        }
        exchange({{"op", "commit_checkpoint"}, {"hash", manifest->hash}, {"files", manifest->filesJson()}},
                 "commit_checkpoint", options.loadTimeout, progress);
    }

    void load(RunMode mode, Accumulation accumulation, const Progress& progress)
    {
        json request = {{"op", "load"}, {"mode", runModeName(mode)}};
        // Only the DL16 twin is asked for: every runner takes a load without the field.
        if (accumulation != Accumulation::Float32)
            request["accumulate"] = accumulationName(accumulation);
        const bool embedder = checkpoint->layout().head() == HeadKind::Embedding;
        if (embedder)
            request["embedding"] = embeddingRequestJson(checkpoint->config().embedding);
        if (protocol >= 2) {
            ensureUploaded(progress);
            request["hash"] = manifest->hash;
        } else {
            request["checkpoint"] = checkpointPath;
        }
        progress.report(0.5, "Loading the checkpoint on the runner");
        const json response = exchange(request, "load", options.loadTimeout, progress).response;
        const std::string expected = architectureName(checkpoint->config().architecture);
        const auto architecture = response.find("architecture");
        if (architecture != response.end() && architecture->is_string() && architecture->get<std::string>() != expected)
            fail(label() + " loaded " + checkpointPath + " as " + architecture->get<std::string>() + ", but it is " +
                 expected + " here; the runner must see the same folder at the same path");
        if (accumulation != Accumulation::Float32) {
            const auto accumulate = response.find("accumulate");
            if (accumulate == response.end() || *accumulate != accumulationName(accumulation))
                fail(label() + " did not confirm \"accumulate\": \"" + accumulationName(accumulation) +
                     "\" when loading; it does not run the DL16 twin");
        }
        if (embedder && response.value("embedding", json()) != request["embedding"])
            fail(label() + " did not confirm the embedding's pooling " + request["embedding"].dump() +
                 " when loading; it does not pool this embedder as ScaleScope reads it");
        loaded = true;
        loadedMode = mode;
        loadedAccumulation = accumulation;
    }

    void ensureReady(RunMode mode, Accumulation accumulation, const Progress& progress)
    {
        if (!channel->running() || !loaded) {
            channel->stop();
            loaded = false;
            channel->start();
            ++starts;
            hello(progress);
            load(mode, accumulation, progress);
        } else if (loadedMode != mode || loadedAccumulation != accumulation) {
            load(mode, accumulation, progress);
        }
    }

    void shutdown()
    {
        if (!channel || !channel->running())
            return;
        try {
            exchange({{"op", "shutdown"}}, "shutdown", options.shutdownTimeout, Progress{});
        } catch (const Error&) {
            return; // exchange has stopped the process
        }
        channel->finish(options.shutdownTimeout);
        loaded = false;
    }

    json forwardRequest(const EncoderInputs& inputs, const ForwardOptions& options,
                        const std::vector<std::string>& selected) const
    {
        json mask = json::array();
        for (std::size_t b = 0; b < inputs.inputIds.size(); ++b)
            mask.push_back(inputs.attentionMask.empty() ? std::vector<int64_t>(inputs.inputIds[b].size(), 1)
                                                        : inputs.attentionMask[b]);
        json request = {{"op", "forward"}, {"input_ids", inputs.inputIds}, {"attention_mask", mask}, {"capture", selected}};
        if (!inputs.tokenTypeIds.empty())
            request["token_type_ids"] = inputs.tokenTypeIds;
        if (checkpoint->layout().headGathersPositions() && !inputs.logitPositions.empty()) {
            json positions = json::array();
            for (const auto& [row, position] : inputs.logitPositions)
                positions.push_back({row, position});
            request["logit_positions"] = positions;
        }
        if (!options.overrides.empty())
            request["overrides"] = overridesJson(options.overrides);
        return request;
    }

    // The shapes a forward's outputs must have, checked against the file's header before any data
    // is read (a hostile or broken runner cannot make the client read gigabytes).
    std::vector<std::pair<std::string, std::vector<int64_t>>> expectedOutputs(const EncoderInputs& inputs) const
    {
        const int64_t batch = static_cast<int64_t>(inputs.inputIds.size());
        int64_t seq = 0;
        for (const auto& row : inputs.inputIds)
            seq = std::max<int64_t>(seq, static_cast<int64_t>(row.size()));
        return checkpoint->layout().finalOutputShapes(batch, seq, static_cast<int64_t>(inputs.logitPositions.size()));
    }

    static FloatTensor readTensor(const TensorStore& store, const std::string& file, const std::string& tensorName,
                                  int64_t largestNumel)
    {
        const TensorView* view = store.find(tensorName);
        if (!view)
            throw Error("the runner's output " + file + " has no tensor '" + tensorName + "'");
        if (!isFloatDtype(view->dtype))
            throw Error("tensor '" + tensorName + "' in the runner's output " + file + " has dtype " +
                        dtypeName(view->dtype) + " instead of a float dtype");
        if (view->numel() > largestNumel)
            throw Error("tensor '" + tensorName + "' in the runner's output " + file + " has shape " +
                        shapeText(view->shape) + ", larger than the request can produce");
        return view->toFloat();
    }

    ForwardResult readResult(const std::string& file, const EncoderInputs& inputs, const std::vector<std::string>& selected)
    {
        ForwardResult result;
        const ModelConfig& c = checkpoint->config();
        int64_t seq = 0;
        for (const auto& row : inputs.inputIds)
            seq = std::max<int64_t>(seq, static_cast<int64_t>(row.size()));
        const int64_t largestCapture = int64_t(inputs.inputIds.size()) * seq *
                                       std::max({c.vocabSize, c.intermediateSize, c.hiddenSize});
        try {
            std::unique_ptr<TensorStore> store = TensorStore::openFile(file);
            for (const auto& [tensorName, shape] : expectedOutputs(inputs)) {
                int64_t numel = 1;
                for (int64_t d : shape)
                    numel *= d;
                result.outputs.push_back({tensorName, readTensor(*store, file, tensorName, numel)});
                if (result.outputs.back().tensor.shape != shape)
                    throw Error("tensor '" + tensorName + "' in the runner's output " + file + " has shape " +
                                shapeText(result.outputs.back().tensor.shape) + " instead of " + shapeText(shape));
            }
            for (const std::string& point : selected) {
                result.captures.push_back({point, readTensor(*store, file, point, largestCapture)});
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

    // Protocol 2's in-band blob goes through a private file so that one reader checks both paths.
    std::string storePayload(const std::string& payload, int64_t requestNumber)
    {
        const std::string file = exchangeDir + "/forward-" + std::to_string(requestNumber) + ".safetensors";
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
        out.close();
        if (!out)
            throw Error("Cannot store the runner's answer in " + file + ".");
        return file;
    }
};

RunnerBackend::RunnerBackend() : impl_(std::make_unique<Impl>()) {}
RunnerBackend::~RunnerBackend() = default;

std::unique_ptr<RunnerBackend> RunnerBackend::start(const std::string& command, const std::string& checkpointDir,
                                                    const RunnerOptions& options, const Progress& progress)
{
    if (command.find_first_not_of(" \t") == std::string::npos)
        throw Error("The runner command is empty.");
    DeviceSpec device;
    device.kind = DeviceSpec::Kind::Runner;
    device.command = command;
    return start(device, Checkpoint::open(checkpointDir), options, progress);
}

std::unique_ptr<RunnerBackend> RunnerBackend::start(const DeviceSpec& device,
                                                    std::shared_ptr<const Checkpoint> checkpoint,
                                                    const RunnerOptions& options, const Progress& progress)
{
    std::unique_ptr<RunnerBackend> backend(new RunnerBackend());
    Impl& m = *backend->impl_;
    m.device = device;
    m.options = options;
    m.checkpoint = std::move(checkpoint);
    const std::map<std::string, std::chrono::milliseconds> fromEnvironment = runnerDeadlinesFromEnvironment();
    for (const std::string& kind : runnerRequestKinds()) {
        const auto given = options.deadlines.find(kind);
        const auto set = fromEnvironment.find(kind);
        m.deadlines[kind] = given != options.deadlines.end() ? given->second
                            : set != fromEnvironment.end()   ? set->second
                                                             : defaultRunnerDeadline(kind);
    }
    std::error_code error;
    const std::string& checkpointDir = m.checkpoint->directory();
    const std::filesystem::path absolute = std::filesystem::absolute(checkpointDir, error);
    m.checkpointPath = (error ? std::filesystem::path(checkpointDir) : absolute).lexically_normal().string();
    while (m.checkpointPath.size() > 1 && m.checkpointPath.back() == '/')
        m.checkpointPath.pop_back();

    const std::string parent = options.exchangeParent.empty() ? defaultExchangeParent() : options.exchangeParent;
    removeStaleExchangeFolders(parent);
    std::string pattern = parent + "/" + kExchangePrefix + temporaryOwnerTag() + "-XXXXXX";
    if (!::mkdtemp(pattern.data()))
        throw Error("Cannot create the runner's exchange folder in " + parent + ": " + std::strerror(errno) + ".");
    m.exchangeDir = pattern;
    m.exchangeCleanup = std::make_unique<InterruptCleanup>(m.exchangeDir, TemporaryKind::Folder);
    m.channel = std::make_unique<RunnerChannel>(device, options.stderrLinesKept, options.onLogLine,
                                                options.onProgressLine);

    if (const std::string problem = options.initialSettings.problem(); !problem.empty())
        throw Error(problem);
    m.ensureReady(options.initialSettings.mode, options.initialSettings.accumulation, progress);
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
    progress.throwIfCancelled();
    if (const std::string problem = accumulationProblem(options.mode, options.accumulation); !problem.empty())
        throw Error(problem);
    // The runner protocol has no field for AIU FP8 attention: refused rather than run as float.
    if (options.attentionCastPoints ||
        anyAttentionRunsFp8(m.checkpoint->layout(), static_cast<int>(m.checkpoint->config().numLayers),
                            options.attention, options.overrides))
        throw Error("FP8 attention (--attention fp8-aiu) runs in-process only; " + m.label() +
                    " is a runner, whose protocol does not carry it.");
    m.ensureReady(options.mode, options.accumulation, progress);

    const std::vector<std::string> selected = selectCapturePoints(m.checkpoint->layout().capturePoints(), options.capture);
    json request = m.forwardRequest(inputs, options, selected);
    static int64_t requestNumber = 0;
    const int64_t number = ++requestNumber;
    std::string output;
    if (m.protocol < 2) {
        output = m.exchangeDir + "/forward-" + std::to_string(number) + ".safetensors";
        request["output"] = output;
    }
    progress.report(0.2, "Running on " + (m.name.empty() ? std::string("the runner") : m.name));
    const uint64_t largest = largestForwardBytes(m.checkpoint->config(), inputs, selected.size());
    RunnerChannel::Reply reply = m.exchange(request, "forward", m.options.forwardTimeout, progress, nullptr, largest);
    if (m.protocol >= 2) {
        if (!reply.response.contains("bytes"))
            m.fail(m.label() + " answered the forward request without the tensors (\"bytes\")");
        output = m.storePayload(reply.payload, number);
        reply.payload.clear();
    }
    ForwardResult result = m.readResult(output, inputs, selected);
    result.nonFinite = nonFiniteOfReply(reply.response, result, m.checkpoint->layout());
    readForwardSummary(reply.response, inputs.inputIds.size(), result);
    const auto elapsed = reply.response.find("elapsed_ms");
    const double roundTrip = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    result.elapsedMs = elapsed != reply.response.end() && elapsed->is_number() ? elapsed->get<double>() : roundTrip;
    m.channel->setLastRoundTripMs(roundTrip);
    if (options.onCapture) { // the runner's file is read whole; hand the points over as asked
        for (const NamedTensor& capture : result.captures)
            options.onCapture(capture.name, capture.tensor.shape, capture.tensor.values.data(), {});
        result.captures.clear();
    }
    progress.report(1.0, "Done");
    return result;
}

std::string RunnerBackend::deviceName() const
{
    return impl_->name.empty() ? "runner: " + abbreviatedText(impl_->device.command, 60) : impl_->name;
}

const std::string& RunnerBackend::command() const { return impl_->device.command; }
const std::string& RunnerBackend::runnerDevice() const { return impl_->runnerDevice; }
bool RunnerBackend::isRunning() const { return impl_->channel->running() && impl_->loaded; }
int RunnerBackend::startCount() const { return impl_->starts; }
int RunnerBackend::protocolVersion() const { return impl_->protocol; }
double RunnerBackend::lastRoundTripMs() const { return impl_->channel->lastRoundTripMs(); }
const std::string& RunnerBackend::exchangeDirectory() const { return impl_->exchangeDir; }

std::vector<std::string> RunnerBackend::recentLogLines() const
{
    const auto& lines = impl_->channel->recentLogLines();
    return std::vector<std::string>(lines.begin(), lines.end());
}

} // namespace scalescope
