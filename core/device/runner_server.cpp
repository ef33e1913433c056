#include "device/runner_server.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "device/runner_backend.h"
#include "engine/compute_threads.h"
#include "io/safetensors.h"
#include "model/encoder_model.h"

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

class Server {
public:
    Server(std::ostream& log, RunnerServerOptions options) : log_(log), options_(std::move(options)) {}

    json handle(const std::string& op, const json& request)
    {
        if (op == "hello")
            return hello();
        if (op == "load")
            return load(request);
        if (op == "forward")
            return forward(request);
        if (op == "shutdown")
            return json::object();
        throw Error("Unknown op \"" + op + "\"; expected hello, load, forward or shutdown.");
    }

private:
    json hello() const
    {
        const std::string name = options_.name.empty()
            ? "ScaleScope CPU runner, " + std::to_string(computeThreads()) + " threads"
            : options_.name;
        return {{"protocol", kRunnerProtocolVersion}, {"device", "cpu"}, {"name", name}};
    }

    json load(const json& request)
    {
        const json& checkpoint = requireField(request, "checkpoint", "load");
        if (!checkpoint.is_string() || checkpoint.get<std::string>().empty())
            throw Error("The load request's \"checkpoint\" must be a folder path.");
        std::string modeName = "fp8";
        if (request.contains("mode")) {
            if (!request["mode"].is_string())
                throw Error("The load request's \"mode\" must be \"fp8\" or \"dequant\".");
            modeName = request["mode"].get<std::string>();
        }
        RunMode mode;
        if (modeName == "fp8")
            mode = RunMode::Fp8;
        else if (modeName == "dequant")
            mode = RunMode::Dequant;
        else
            throw Error("The load request's mode \"" + modeName + "\" is not fp8 or dequant.");

        const std::string dir = checkpoint.get<std::string>();
        const std::string canonical = canonicalFolder(dir);
        // EncoderModel runs either mode from the same weights, so a mode switch costs nothing here.
        if (!model_ || canonical != loadedFolder_) {
            model_.reset();
            loadedFolder_.clear();
            const auto started = std::chrono::steady_clock::now();
            model_ = EncoderModel::load(dir);
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
        const json& outputField = requireField(request, "output", "forward");
        if (!outputField.is_string() || outputField.get<std::string>().empty())
            throw Error("The forward request's \"output\" must be a file path.");
        const std::string output = outputField.get<std::string>();

        ForwardOptions options;
        options.mode = mode_;
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
        writeSafetensors(output, tensors, {{"producer", "scalescope-cli runner"}, {"mode", runModeName(mode_)}});
        log_ << "scalescope runner: forward " << inputs.inputIds.size() << " sequence(s), " << result.captures.size()
             << " capture(s), " << result.elapsedMs << " ms" << std::endl;
        return {{"output", output}, {"elapsed_ms", result.elapsedMs}};
    }

    std::ostream& log_;
    RunnerServerOptions options_;
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

int serveRunner(std::istream& in, std::ostream& out, std::ostream& log, const RunnerServerOptions& options)
{
    Server server(log, options);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos)
            continue;
        json request;
        try {
            request = json::parse(line);
        } catch (const json::parse_error& e) {
            log << "scalescope runner: a request is not JSON: " << e.what() << std::endl;
            respond(out, {{"id", nullptr}, {"ok", false},
                          {"error", "The request is not valid JSON (byte " + std::to_string(e.byte) + ")."}});
            continue;
        } catch (const json::exception& e) { // e.g. a number beyond double range
            log << "scalescope runner: a request is not usable JSON: " << e.what() << std::endl;
            respond(out, {{"id", nullptr}, {"ok", false}, {"error", "The request holds a number out of range."}});
            continue;
        }
        if (!request.is_object()) {
            respond(out, {{"id", nullptr}, {"ok", false}, {"error", "The request is not a JSON object."}});
            continue;
        }
        const json id = request.contains("id") ? request["id"] : json(nullptr);
        const auto op = request.find("op");
        if (op == request.end() || !op->is_string()) {
            respond(out, {{"id", id}, {"ok", false}, {"error", "The request has no \"op\" string."}});
            continue;
        }
        json response;
        try {
            response = server.handle(op->get<std::string>(), request);
            response["ok"] = true;
        } catch (const Error& e) {
            log << "scalescope runner: " << op->get<std::string>() << " failed: " << e.what() << std::endl;
            response = {{"ok", false}, {"error", e.what()}};
        } catch (const std::bad_alloc&) {
            response = {{"ok", false}, {"error", "The runner ran out of memory."}};
        } catch (const std::exception& e) {
            response = {{"ok", false}, {"error", std::string("Internal error: ") + e.what() + "."}};
        }
        response["id"] = id;
        respond(out, response);
        if (op->get<std::string>() == "shutdown")
            return 0;
    }
    return 0;
}

} // namespace scalescope
