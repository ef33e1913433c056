#include "engine/runner_server.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <vector>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "device/checkpoint_manifest.h"
#include "device/forward_summary.h"
#include "device/runner_backend.h"
#include "engine/compute_threads.h"
#include "io/safetensors.h"
#include "io/sha256.h"
#include "engine/encoder_model.h"

namespace scalescope {
namespace {

using json = nlohmann::json;

std::string canonicalFolder(const std::string& dir)
{
    std::error_code error;
    const std::filesystem::path path = std::filesystem::weakly_canonical(dir, error);
    return error ? dir : path.string();
}

const json& requireField(const json& request, const char* field, const std::string& op)
{
    const auto it = request.find(field);
    if (it == request.end())
        throw Error("The " + op + " request has no \"" + field + "\" field.");
    return *it;
}

std::vector<std::vector<int64_t>> intMatrix(const json& value, const char* field)
{
    const std::string expected = std::string("\"") + field + "\" must be a list of lists of non-negative integers.";
    if (!value.is_array())
        throw Error(expected);
    std::vector<std::vector<int64_t>> rows;
    for (const json& row : value) {
        if (!row.is_array())
            throw Error(expected);
        std::vector<int64_t> values;
        values.reserve(row.size());
        for (const json& v : row) {
            if (!v.is_number_integer() || v.get<int64_t>() < 0)
                throw Error(expected);
            values.push_back(v.get<int64_t>());
        }
        rows.push_back(std::move(values));
    }
    return rows;
}

// PROTOCOL.md: where received checkpoints are kept, one folder per hash.
std::string defaultCacheFolder()
{
    if (const char* dir = std::getenv("SCALESCOPE_RUNNER_CACHE"); dir && *dir)
        return dir;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return std::string(xdg) + "/scalescope-runner";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::string(home) + "/.cache/scalescope-runner";
    return "/tmp/scalescope-runner-cache";
}

bool isHash(const std::string& text)
{
    return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string requireHash(const json& request, const std::string& op)
{
    const json& hash = requireField(request, "hash", op);
    if (!hash.is_string() || !isHash(hash.get<std::string>()))
        throw Error("The " + op + " request's \"hash\" must be 64 lower-case hex digits.");
    return hash.get<std::string>();
}

// PROTOCOL.md: {"MODULE": "float" | "fp8", ...}; "*": "float" runs every Linear not named in float.
PrecisionOverrides parseOverrides(const json& value)
{
    const std::string expected = "\"overrides\" must map Linear module names (or \"*\") to \"float\" or \"fp8\".";
    if (!value.is_object())
        throw Error(expected);
    PrecisionOverrides overrides;
    for (const auto& [module, precision] : value.items()) {
        if (precision != "float" && precision != "fp8")
            throw Error(expected);
        if (module == "*")
            overrides.othersFloat = precision == "float";
        else
            overrides.modules[module] = precision == "float" ? Precision::Float : Precision::Fp8;
    }
    return overrides;
}

// Reads exactly `size` bytes that follow a request line into `file` (or discards them when file is
// empty), so that the stream stays in step even when the request is refused.
void receivePayload(std::istream& in, uint64_t size, const std::string& file)
{
    std::ofstream out;
    if (!file.empty())
        out.open(file, std::ios::binary | std::ios::trunc);
    std::vector<char> buffer(1 << 20);
    while (size > 0) {
        const auto chunk = static_cast<std::streamsize>(std::min<uint64_t>(size, buffer.size()));
        in.read(buffer.data(), chunk);
        if (in.gcount() != chunk)
            throw Error("The input ended inside a payload.");
        if (out.is_open())
            out.write(buffer.data(), chunk);
        size -= static_cast<uint64_t>(chunk);
    }
    if (out.is_open()) {
        out.close();
        if (!out)
            throw Error("Cannot write " + file + ".");
    }
}

class Server {
public:
    Server(std::ostream& out, std::ostream& log, RunnerServerOptions options)
        : out_(out), log_(log), options_(std::move(options))
    {
        cache_ = options_.cacheFolder.empty() ? defaultCacheFolder() : options_.cacheFolder;
    }

    // The request's payload (its "bytes") is in `payloadFile` when the op takes one.
    json handle(const std::string& op, const json& request, const std::string& payloadFile)
    {
        if (op == "hello")
            return hello(request);
        if (op == "load")
            return load(request);
        if (op == "forward")
            return forward(request);
        if (op == "has_checkpoint" || op == "upload" || op == "commit_checkpoint") {
            if (protocol_ < 2)
                throw Error("The " + op + " request needs protocol 2; say so in hello's \"protocols\".");
            if (op == "has_checkpoint")
                return {{"cached", std::filesystem::is_directory(cache_ + "/" + requireHash(request, op))}};
            return op == "upload" ? upload(request, payloadFile) : commit(request);
        }
        if (op == "shutdown")
            return json::object();
        throw Error("Unknown op \"" + op + "\"; expected hello, load, forward, has_checkpoint, upload, "
                    "commit_checkpoint or shutdown.");
    }

    // Where an upload's bytes go before handle() checks them: the hash's partial folder.
    std::string payloadTarget(const std::string& op, const json& request)
    {
        if (op != "upload")
            return "";
        const std::string hash = requireHash(request, op);
        const json& name = requireField(request, "name", op);
        if (!name.is_string() || !isSafeManifestName(name.get<std::string>()))
            throw Error("The upload request's \"name\" must be a plain file name.");
        if (protocol_ < 2)
            throw Error("The upload request needs protocol 2; say so in hello's \"protocols\".");
        const std::string partial = partialFolder(hash);
        std::filesystem::create_directories(partial);
        return partial + "/" + name.get<std::string>();
    }

    void setCurrentId(const json& id) { currentId_ = id; }

    // This session's unfinished uploads go: they never look like a complete checkpoint.
    ~Server()
    {
        for (const std::string& folder : partialFolders_) {
            std::error_code ignored;
            std::filesystem::remove_all(folder, ignored);
        }
    }

private:
    // Runners on one host share the cache, so each session uploads into a folder of its own.
    std::string partialFolder(const std::string& hash)
    {
        const std::string folder = cache_ + "/" + hash + ".partial-" + std::to_string(::getpid());
        partialFolders_.insert(folder);
        return folder;
    }

public:

private:
    json hello(const json& request)
    {
        const std::string name = options_.name.empty()
            ? "ScaleScope CPU runner, " + std::to_string(computeThreads()) + " threads"
            : options_.name;
        // The highest version both speak; a client that offers none gets version 1.
        protocol_ = kRunnerProtocolVersion;
        if (const auto offered = request.find("protocols"); offered != request.end() && offered->is_array())
            for (const json& version : *offered)
                if (version.is_number_integer() && version.get<int64_t>() <= kRunnerProtocolLatest)
                    protocol_ = std::max<int>(protocol_, static_cast<int>(version.get<int64_t>()));
        return {{"protocol", protocol_}, {"device", "cpu"}, {"name", name}};
    }

    json upload(const json& request, const std::string& file)
    {
        const json& sha = requireField(request, "sha256", "upload");
        if (!sha.is_string() || !isHash(sha.get<std::string>()))
            throw Error("The upload request's \"sha256\" must be 64 lower-case hex digits.");
        const std::string received = sha256OfFile(file);
        if (received != sha.get<std::string>()) {
            std::error_code ignored;
            std::filesystem::remove(file, ignored);
            throw Error("The upload of " + request["name"].get<std::string>() +
                        " arrived damaged: its SHA-256 is " + received + ", not " + sha.get<std::string>() + ".");
        }
        return json::object();
    }

    json commit(const json& request)
    {
        const std::string hash = requireHash(request, "commit_checkpoint");
        const json& files = requireField(request, "files", "commit_checkpoint");
        if (!files.is_array() || files.empty())
            throw Error("The commit_checkpoint request's \"files\" must list the uploaded files.");
        const std::string partial = partialFolder(hash);
        std::vector<ManifestFile> manifest;
        for (const json& entry : files) {
            if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
                !entry.contains("size") || !entry["size"].is_number_unsigned() || !entry.contains("sha256") ||
                !entry["sha256"].is_string())
                throw Error("Each entry of \"files\" must have a name, a size and a sha256.");
            ManifestFile file{entry["name"].get<std::string>(), "", entry["size"].get<uint64_t>(),
                              entry["sha256"].get<std::string>()};
            if (!isSafeManifestName(file.name))
                throw Error("The file name \"" + file.name + "\" is not a plain file name.");
            std::error_code error;
            const uint64_t size = std::filesystem::file_size(partial + "/" + file.name, error);
            if (error || size != file.size)
                throw Error("The file " + file.name + " of checkpoint " + hash + " was not uploaded whole.");
            manifest.push_back(std::move(file));
        }
        if (manifestHash(manifest) != hash)
            throw Error("The files listed do not make up checkpoint " + hash + ".");
        std::error_code error;
        std::filesystem::rename(partial, cache_ + "/" + hash, error);
        if (error && !std::filesystem::is_directory(cache_ + "/" + hash))
            throw Error("Cannot store checkpoint " + hash + " in " + cache_ + ": " + error.message() + ".");
        // Another session committed the same checkpoint first: keep theirs.
        std::filesystem::remove_all(partial, error);
        partialFolders_.erase(partial);
        log_ << "scalescope runner: received checkpoint " << hash << " (" << manifest.size() << " files)" << std::endl;
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

    std::string checkpointFolder(const json& request)
    {
        if (request.contains("hash")) {
            const std::string hash = requireHash(request, "load");
            const std::string dir = cache_ + "/" + hash;
            if (!std::filesystem::is_directory(dir))
                throw Error("This runner has no checkpoint " + hash + "; upload it first.");
            return dir;
        }
        const json& checkpoint = requireField(request, "checkpoint", "load");
        if (!checkpoint.is_string() || checkpoint.get<std::string>().empty())
            throw Error("The load request's \"checkpoint\" must be a folder path.");
        return checkpoint.get<std::string>();
    }

    json load(const json& request)
    {
        const std::string dir = checkpointFolder(request);
        std::string modeName = "fp8";
        if (request.contains("mode")) {
            if (!request["mode"].is_string())
                throw Error("The load request's \"mode\" must be \"fp8\", \"dequant\" or \"fp16\".");
            modeName = request["mode"].get<std::string>();
        }
        RunMode mode = RunMode::Fp8;
        if (!parseRunMode(modeName, mode))
            throw Error("The load request's mode \"" + modeName + "\" is not fp8 or dequant (nor fp16, the AIU's CPU twin).");

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
        mode_ = mode;
        return {{"architecture", architectureName(model_->config().architecture)}};
    }

    json forward(const json& request)
    {
        if (!model_)
            throw Error("No checkpoint is loaded; send a load request first.");
        EncoderInputs inputs;
        inputs.inputIds = intMatrix(requireField(request, "input_ids", "forward"), "input_ids");
        if (request.contains("attention_mask") && !request["attention_mask"].is_null())
            inputs.attentionMask = intMatrix(request["attention_mask"], "attention_mask");
        if (request.contains("logit_positions") && !request["logit_positions"].is_null()) {
            for (const std::vector<int64_t>& pair : intMatrix(request["logit_positions"], "logit_positions")) {
                if (pair.size() != 2)
                    throw Error("\"logit_positions\" must hold [row, position] pairs.");
                inputs.logitPositions.emplace_back(static_cast<int>(pair[0]), static_cast<int>(pair[1]));
            }
        }
        if (request.contains("token_type_ids") && !request["token_type_ids"].is_null())
            inputs.tokenTypeIds = intMatrix(request["token_type_ids"], "token_type_ids");
        // Protocol 2 answers with the tensors in-band; version 1 writes the file the client names.
        std::string output;
        if (protocol_ < 2) {
            const json& outputField = requireField(request, "output", "forward");
            if (!outputField.is_string() || outputField.get<std::string>().empty())
                throw Error("The forward request's \"output\" must be a file path.");
            output = outputField.get<std::string>();
        }

        ForwardOptions options;
        options.mode = mode_;
        if (request.contains("overrides") && !request["overrides"].is_null())
            options.overrides = parseOverrides(request["overrides"]);
        if (request.contains("capture") && !request["capture"].is_null()) {
            const json& capture = request["capture"];
            if (capture.is_string() && capture.get<std::string>() == "all") {
                options.capture.all = true;
            } else if (capture.is_array()) {
                const std::vector<std::string> points = model_->capturePoints();
                std::set<std::string> known(points.begin(), points.end());
                for (const std::string& point : points)
                    known.insert(point.substr(0, point.rfind('.')));
                for (const json& name : capture) {
                    if (!name.is_string())
                        throw Error("\"capture\" must be a list of capture point or module names, or \"all\".");
                    if (!known.count(name.get<std::string>()))
                        throw Error("Unknown capture point \"" + name.get<std::string>() + "\".");
                    options.capture.names.push_back(name.get<std::string>());
                }
            } else {
                throw Error("\"capture\" must be a list of capture point or module names, or \"all\".");
            }
        }

        const ForwardResult result = model_->forward(inputs, options);
        std::vector<TensorToWrite> tensors;
        for (const NamedTensor& t : result.outputs)
            tensors.push_back(makeF32Tensor(t.name, t.tensor));
        for (const NamedTensor& t : result.captures)
            tensors.push_back(makeF32Tensor(t.name, t.tensor));
        const std::map<std::string, std::string> metadata = {{"producer", "scalescope-cli runner"},
                                                             {"mode", runModeName(mode_)}};
        log_ << "scalescope runner: forward " << inputs.inputIds.size() << " sequence(s), " << result.captures.size()
             << " capture(s), " << result.elapsedMs << " ms" << std::endl;
        nlohmann::json answer = forwardSummaryJson(result);
        answer["elapsed_ms"] = result.elapsedMs;
        if (protocol_ < 2) {
            writeSafetensors(output, tensors, metadata);
            answer["output"] = output;
            return answer;
        }
        std::filesystem::create_directories(cache_);
        const std::string blob = cache_ + "/.forward-" + std::to_string(::getpid()) + ".safetensors";
        writeSafetensors(blob, tensors, metadata);
        payload_ = readFileToString(blob, 1ull << 40);
        std::error_code ignored;
        std::filesystem::remove(blob, ignored);
        answer["bytes"] = payload_.size();
        return answer;
    }

public:
    // The bytes the last response announced, sent right after it; emptied then.
    std::string payload_;

private:
    std::ostream& out_;
    std::ostream& log_;
    RunnerServerOptions options_;
    std::string cache_;
    std::set<std::string> partialFolders_;
    int protocol_ = kRunnerProtocolVersion;
    json currentId_;
    std::chrono::steady_clock::time_point lastProgress_{};
    std::unique_ptr<EncoderModel> model_;
    std::string loadedFolder_;
    RunMode mode_ = RunMode::Fp8;
};

void respond(std::ostream& out, json response)
{
    out << response.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    out.flush();
}

} // namespace

namespace {

// Parses one request line; nullopt-like empty object with an error response already sent otherwise.
bool parseRequest(const std::string& line, std::ostream& out, std::ostream& log, json& request)
{
    if (jsonNestingExceeded(line.data(), line.data() + line.size(), 64) >= 0) {
        respond(out, {{"id", nullptr}, {"ok", false}, {"error", "The request nests JSON more than 64 levels deep."}});
        return false;
    }
    try {
        request = json::parse(line);
    } catch (const json::parse_error& e) {
        log << "scalescope runner: a request is not JSON: " << e.what() << std::endl;
        respond(out, {{"id", nullptr}, {"ok", false},
                      {"error", "The request is not valid JSON (byte " + std::to_string(e.byte) + ")."}});
        return false;
    } catch (const json::exception& e) { // e.g. a number beyond double range
        log << "scalescope runner: a request is not usable JSON: " << e.what() << std::endl;
        respond(out, {{"id", nullptr}, {"ok", false}, {"error", "The request holds a number out of range."}});
        return false;
    }
    if (!request.is_object()) {
        respond(out, {{"id", nullptr}, {"ok", false}, {"error", "The request is not a JSON object."}});
        return false;
    }
    return true;
}

json handleSafely(Server& server, const std::string& op, const json& request, std::istream& in, std::ostream& log)
{
    try {
        // A payload is read whole even when the request is refused, so the stream stays in step.
        std::string target;
        std::string refusal;
        try {
            target = server.payloadTarget(op, request);
        } catch (const Error& e) {
            refusal = e.what();
        }
        if (const auto bytes = request.find("bytes"); bytes != request.end()) {
            if (!bytes->is_number_unsigned())
                throw Error("\"bytes\" must be a byte count.");
            receivePayload(in, bytes->get<uint64_t>(), target);
        }
        if (!refusal.empty())
            throw Error(refusal);
        json response = server.handle(op, request, target);
        response["ok"] = true;
        return response;
    } catch (const Error& e) {
        log << "scalescope runner: " << op << " failed: " << e.what() << std::endl;
        return {{"ok", false}, {"error", e.what()}};
    } catch (const std::bad_alloc&) {
        return {{"ok", false}, {"error", "The runner ran out of memory."}};
    } catch (const std::exception& e) {
        return {{"ok", false}, {"error", std::string("Internal error: ") + e.what() + "."}};
    }
}

} // namespace

int serveRunner(std::istream& in, std::ostream& out, std::ostream& log, const RunnerServerOptions& options)
{
    Server server(out, log, options);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos)
            continue;
        json request;
        if (!parseRequest(line, out, log, request))
            continue;
        const json id = request.contains("id") ? request["id"] : json(nullptr);
        const auto op = request.find("op");
        if (op == request.end() || !op->is_string()) {
            respond(out, {{"id", id}, {"ok", false}, {"error", "The request has no \"op\" string."}});
            continue;
        }
        server.setCurrentId(id);
        json response = handleSafely(server, op->get<std::string>(), request, in, log);
        response["id"] = id;
        respond(out, response);
        if (!server.payload_.empty() && response.value("ok", false)) {
            out.write(server.payload_.data(), static_cast<std::streamsize>(server.payload_.size()));
            out.flush();
        }
        server.payload_.clear();
        if (op->get<std::string>() == "shutdown")
            return 0;
    }
    return 0;
}

} // namespace scalescope
