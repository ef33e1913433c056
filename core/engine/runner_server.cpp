#include "engine/runner_server.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <vector>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "device/checkpoint_manifest.h"
#include "device/forward_summary.h"
#include "device/runner_backend.h"
#include "device/runner_protocol.h"
#include "device/runner_request.h"
#include "engine/compute_threads.h"
#include "engine/encoder_model.h"
#include "engine/runner_cache.h"
#include "io/safetensors.h"

namespace scalescope {
namespace {

using json = nlohmann::json;

std::string canonicalFolder(const std::string& dir)
{
    std::error_code error;
    const std::filesystem::path path = std::filesystem::weakly_canonical(dir, error);
    return error ? dir : path.string();
}

// PROTOCOL.md: where received checkpoints are kept, one folder per hash; always the user's own.
std::string defaultCacheFolder()
{
    if (const char* dir = std::getenv("SCALESCOPE_RUNNER_CACHE"); dir && *dir)
        return dir;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return std::string(xdg) + "/scalescope-runner";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::string(home) + "/.cache/scalescope-runner";
    return "/tmp/scalescope-runner-" + std::to_string(::geteuid());
}

// Reads the `size` bytes that follow a request line to their end, into `incoming` when there is
// one and nowhere otherwise, so the stream stays framed whatever became of the request. Returns
// how many bytes were missing when the input ended first (0 when all arrived).
uint64_t receivePayload(std::istream& in, uint64_t size, RunnerCache::Incoming* incoming)
{
    std::vector<char> buffer(static_cast<std::size_t>(std::min<uint64_t>(size, 1u << 20)));
    while (size > 0) {
        const auto chunk = static_cast<std::streamsize>(std::min<uint64_t>(size, buffer.size()));
        in.read(buffer.data(), chunk);
        const auto got = static_cast<uint64_t>(in.gcount());
        if (incoming && got > 0)
            incoming->write(buffer.data(), static_cast<std::size_t>(got));
        size -= got;
        if (got < static_cast<uint64_t>(chunk))
            return size;
    }
    return 0;
}

// What a failure of any kind says to the client: one sentence.
std::string failureSentence(const std::exception_ptr& failure)
{
    try {
        std::rethrow_exception(failure);
    } catch (const Error& e) {
        return e.what();
    } catch (const std::bad_alloc&) {
        return "The runner ran out of memory.";
    } catch (const std::exception& e) {
        std::string what = e.what();
        while (!what.empty() && (what.back() == '.' || what.back() == '\n'))
            what.pop_back();
        return "Internal error: " + what + ".";
    } catch (...) {
        return "Internal error of an unknown kind.";
    }
}

class Server {
public:
    Server(std::ostream& out, std::ostream& log, RunnerServerOptions options)
        : out_(out), log_(log), options_(std::move(options)),
          cache_(options_.cacheFolder.empty() ? defaultCacheFolder() : options_.cacheFolder)
    {
    }

    // Answers one request read from a line (its "bytes", when it has them, already checked to be a
    // byte count). The payload is read to its end whatever becomes of the request, whichever way
    // it fails (PROTOCOL.md): into the cache for an upload, nowhere otherwise. Only input that ends
    // inside the payload loses the framing; then framingLost is set.
    json answer(const json& request, std::optional<uint64_t> payload, const std::string& integerOutOfRange,
                std::istream& in, bool& framingLost)
    {
        std::string op = "request";
        std::string refusal;
        std::unique_ptr<RunnerCache::Incoming> incoming;
        try {
            op = requestOp(request);
            if (!integerOutOfRange.empty())
                throw Error("The " + op + " request holds the integer " + integerOutOfRange +
                            ", outside the 64-bit range.");
            if (payload && op != "upload")
                throw Error("A " + op + " request carries no payload (\"bytes\").");
            if (op == "upload")
                incoming = prepareUpload(request, payload.has_value());
        } catch (...) {
            refusal = failureSentence(std::current_exception());
        }
        if (payload) {
            if (const uint64_t missing = receivePayload(in, *payload, incoming.get())) {
                framingLost = true;
                return failure(op, "The input ended " + std::to_string(missing) + " bytes before the end of a " +
                                       std::to_string(*payload) + "-byte payload; the runner stops reading this input.");
            }
        }
        if (!refusal.empty())
            return failure(op, refusal);
        try {
            json response = handle(op, request, incoming.get());
            response["ok"] = true;
            return response;
        } catch (...) {
            return failure(op, failureSentence(std::current_exception()));
        }
    }

    void setCurrentId(const json& id) { currentId_ = id; }

    // The bytes the last response announced, sent right after it; emptied then.
    std::string payload_;

private:
    json failure(const std::string& op, const std::string& sentence)
    {
        log_ << "scalescope runner: " << op << " failed: " << sentence << std::endl;
        return {{"ok", false}, {"error", sentence}};
    }

    json handle(const std::string& op, const json& request, RunnerCache::Incoming* incoming)
    {
        if (op == "hello")
            return hello(request);
        if (op == "load")
            return load(request);
        if (op == "forward")
            return forward(request);
        if (op == "has_checkpoint" || op == "upload" || op == "commit_checkpoint") {
            requireProtocol2(op);
            if (op == "has_checkpoint")
                return {{"cached", cache_.has(requireRequestHash(request, op))}};
            if (op == "upload") {
                cache_.finish(*incoming);
                return json::object();
            }
            return commit(request);
        }
        if (op == "shutdown")
            return json::object();
        throw Error("Unknown op \"" + op + "\"; expected hello, load, forward, has_checkpoint, upload, "
                    "commit_checkpoint or shutdown.");
    }

    void requireProtocol2(const std::string& op) const
    {
        if (protocol_ < 2)
            throw Error("The " + op + " request needs protocol 2; say so in hello's \"protocols\".");
    }

    // Where an upload's bytes go while they arrive: the hash's staging folder in the cache.
    std::unique_ptr<RunnerCache::Incoming> prepareUpload(const json& request, bool hasPayload)
    {
        requireProtocol2("upload");
        const UploadRequest upload = parseUploadRequest(request, hasPayload);
        return cache_.receive(upload.hash, upload.name, upload.sha256);
    }

    json hello(const json& request)
    {
        const std::string name = options_.name.empty()
            ? "ScaleScope CPU runner, " + std::to_string(computeThreads()) + " threads"
            : options_.name;
        protocol_ = negotiatedProtocol(request);
        return {{"protocol", protocol_}, {"device", "cpu"}, {"name", name}};
    }

    json commit(const json& request)
    {
        const std::string hash = requireRequestHash(request, "commit_checkpoint");
        const json& files = requireRequestField(request, "files", "commit_checkpoint");
        cache_.commit(hash, files);
        log_ << "scalescope runner: received checkpoint " << hash << " (" << files.size() << " files)" << std::endl;
        return json::object();
    }

    // Progress lines while a long request runs (PROTOCOL.md): from its second second on, at most
    // one a second, so quick requests answer with their response alone.
    Progress progressLines()
    {
        Progress progress;
        lastProgress_ = std::chrono::steady_clock::now();
        progress.callback = [this](double fraction, const std::string& stage) {
            const auto now = std::chrono::steady_clock::now();
            if (now - lastProgress_ < std::chrono::seconds(1))
                return;
            lastProgress_ = now;
            out_ << json{{"id", currentId_}, {"progress", fraction}, {"stage", stage}}.dump() << '\n';
            out_.flush();
        };
        return progress;
    }

    json load(const json& request)
    {
        const LoadRequest parsed = parseLoadRequest(request);
        const std::string dir = parsed.hash.empty() ? parsed.checkpoint : cache_.published(parsed.hash);

        const std::string canonical = canonicalFolder(dir);
        // EncoderModel runs either mode from the same weights, so a mode switch costs nothing here.
        if (!model_ || canonical != loadedFolder_) {
            model_.reset();
            loadedFolder_.clear();
            const auto started = std::chrono::steady_clock::now();
            model_ = EncoderModel::load(dir, progressLines());
            loadedFolder_ = canonical;
            log_ << "scalescope runner: loaded " << dir << " ("
                 << architectureName(model_->config().architecture) << ") in "
                 << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count()
                 << " ms" << std::endl;
        }
        if (parsed.embedding && model_->checkpoint().layout().head() == HeadKind::Embedding) {
            const SentenceEmbeddingConfig& now = model_->checkpoint().config().embedding;
            if (now.pooling != parsed.embedding->pooling || now.normalize != parsed.embedding->normalize) {
                SentenceEmbeddingConfig wanted = now;
                wanted.pooling = parsed.embedding->pooling;
                wanted.normalize = parsed.embedding->normalize;
                wanted.fromModules = true;
                model_ = EncoderModel::load(model_->checkpoint().withEmbedding(wanted), progressLines());
            }
        }
        settings_ = parsed.settings;
        json answer = {{"architecture", architectureName(model_->config().architecture)}};
        // Said back so that the client knows the runner pools as asked (a runner that ignores the
        // field would pool as it reads the folder).
        if (model_->checkpoint().layout().head() == HeadKind::Embedding)
            answer["embedding"] = embeddingRequestJson(model_->checkpoint().config().embedding);
        // Said back only when asked for, so a client can tell a runner that runs the DL16 twin
        // from one that ignored the field.
        if (request.contains("accumulate"))
            answer["accumulate"] = accumulationName(settings_.accumulation);
        return answer;
    }

    json forward(const json& request)
    {
        if (!model_)
            throw Error("No checkpoint is loaded; send a load request first.");
        ForwardRequest parsed = parseForwardRequest(request, protocol_);
        const EncoderInputs& inputs = parsed.inputs;
        ForwardOptions options = forwardOptions(settings_.withOverrides(std::move(parsed.overrides)));
        options.capture = std::move(parsed.capture);
        if (!options.capture.names.empty()) {
            const std::vector<std::string> points = model_->capturePoints();
            std::set<std::string> known(points.begin(), points.end());
            for (const std::string& point : points)
                known.insert(point.substr(0, point.rfind('.')));
            for (const std::string& name : options.capture.names)
                if (!known.count(name))
                    throw Error("Unknown capture point \"" + abbreviatedText(name, 200) + "\".");
        }
        const std::string& output = parsed.output;

        const ForwardResult result = model_->forward(inputs, options);
        std::vector<TensorToWrite> tensors;
        for (const NamedTensor& t : result.outputs)
            tensors.push_back(makeF32Tensor(t.name, t.tensor));
        for (const NamedTensor& t : result.captures)
            tensors.push_back(makeF32Tensor(t.name, t.tensor));
        const std::map<std::string, std::string> metadata = {{"producer", "scalescope-cli runner"},
                                                             {"mode", settings_.label()}};
        log_ << "scalescope runner: forward " << inputs.inputIds.size() << " sequence(s), " << result.captures.size()
             << " capture(s), " << result.elapsedMs << " ms" << std::endl;
        nlohmann::json answer = forwardSummaryJson(result);
        answer["elapsed_ms"] = result.elapsedMs;
        if (protocol_ < 2) {
            writeSafetensors(output, tensors, metadata);
            answer["output"] = output;
            return answer;
        }
        payload_ = safetensorsBytes(tensors, metadata); // in-band: nothing is written on this host
        answer["bytes"] = payload_.size();
        return answer;
    }

    std::ostream& out_;
    std::ostream& log_;
    RunnerServerOptions options_;
    RunnerCache cache_;
    int protocol_ = kRunnerProtocolVersion;
    json currentId_;
    std::chrono::steady_clock::time_point lastProgress_{};
    std::unique_ptr<EncoderModel> model_;
    std::string loadedFolder_;
    RunSettings settings_; // as the last load asked
};

void respond(std::ostream& out, json response)
{
    out << response.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    out.flush();
}

} // namespace

int serveRunner(std::istream& in, std::ostream& out, std::ostream& log, const RunnerServerOptions& options)
{
    Server server(out, log, options);
    // PROTOCOL.md: input that may have lost the framing (a line that cannot be read, a "bytes" that
    // is not a byte count, a payload cut short) gets one answer, and nothing more is read from it:
    // whatever follows could be a payload's bytes, never to be run as requests.
    const auto stopReading = [&](const json& id, const std::string& sentence) {
        log << "scalescope runner: stopped reading: " << sentence << std::endl;
        respond(out, {{"id", id}, {"ok", false}, {"error", sentence}});
        return 1;
    };
    std::string line;
    while (true) {
        const LineRead read = readProtocolLine(in, line);
        if (read == LineRead::EndOfInput)
            return 0;
        if (read == LineRead::TooLong)
            return stopReading(nullptr, "A request line is longer than 64 MiB; the runner stops reading this input.");
        const RequestLine parsed = parseRequestLine(line);
        if (parsed.kind == RequestLine::Kind::Blank)
            continue;
        if (parsed.kind == RequestLine::Kind::StopReading)
            return stopReading(parsed.id, parsed.sentence);
        if (parsed.kind == RequestLine::Kind::NotAnObject) {
            respond(out, {{"id", nullptr}, {"ok", false}, {"error", parsed.sentence}});
            continue;
        }
        const json& request = parsed.request;
        const json& id = parsed.id;
        server.setCurrentId(id);
        bool framingLost = false;
        json response = server.answer(request, parsed.payload, parsed.integerOutOfRange, in, framingLost);
        response["id"] = id;
        respond(out, response);
        if (framingLost)
            return 1;
        if (!server.payload_.empty() && response.value("ok", false)) {
            out.write(server.payload_.data(), static_cast<std::streamsize>(server.payload_.size()));
            out.flush();
        }
        server.payload_.clear();
        const auto op = request.find("op");
        if (op != request.end() && *op == "shutdown" && response.value("ok", false))
            return 0;
    }
}

} // namespace scalescope
