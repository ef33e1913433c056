#include "device/runner_request.h"

#include <algorithm>
#include <limits>

#include "common/error.h"
#include "common/text_files.h"
#include "device/checkpoint_manifest.h"
#include "device/runner_backend.h"
#include "device/runner_protocol.h"
#include "model/sentence_transformers.h"

namespace scalescope {
namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxOpLength = 40;
const char* const kStopsReading = "; the runner stops reading this input.";

bool isHash(const std::string& text)
{
    return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A list of rows of non-negative 64-bit integers. A refusal quotes the value as the request wrote
// it (integers beyond 64 bits never get here: the line check refuses them first).
std::vector<std::vector<int64_t>> intMatrix(const json& value, const char* field)
{
    const std::string expected = std::string("\"") + field + "\" must be a list of lists of non-negative integers";
    if (!value.is_array())
        throw Error(expected + ".");
    std::vector<std::vector<int64_t>> rows;
    rows.reserve(value.size());
    for (const json& row : value) {
        if (!row.is_array())
            throw Error(expected + ".");
        std::vector<int64_t> values;
        values.reserve(row.size());
        for (const json& v : row) {
            const bool inRange = v.is_number_unsigned()
                                     ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max())
                                     : v.is_number_integer() && v.get<int64_t>() >= 0;
            if (!inRange)
                throw Error(expected + ", not " + abbreviatedText(v.dump(), 40) + ".");
            values.push_back(v.get<int64_t>());
        }
        rows.push_back(std::move(values));
    }
    return rows;
}

bool present(const json& request, const char* field)
{
    const auto it = request.find(field);
    return it != request.end() && !it->is_null();
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

CaptureRequest parseCapture(const json& capture)
{
    const char* const expected = "\"capture\" must be a list of capture point or module names, or \"all\".";
    CaptureRequest request;
    if (capture.is_string() && capture.get_ref<const std::string&>() == "all") {
        request.all = true;
        return request;
    }
    if (!capture.is_array())
        throw Error(expected);
    for (const json& name : capture) {
        if (!name.is_string())
            throw Error(expected);
        request.names.push_back(name.get<std::string>());
    }
    return request;
}

} // namespace

RequestLine parseRequestLine(const std::string& line)
{
    RequestLine result;
    if (line.find_first_not_of(" \t") == std::string::npos)
        return result;
    result.kind = RequestLine::Kind::StopReading;
    const ProtocolLineCheck check = checkProtocolLine(line);
    if (!check.refusal.empty()) {
        result.sentence = "The request " + check.refusal + kStopsReading;
        return result;
    }
    try {
        result.request = json::parse(line);
    } catch (const json::parse_error& e) {
        result.sentence = "The request is not valid JSON (byte " + std::to_string(e.byte) + ")" + kStopsReading;
        return result;
    } catch (const json::exception&) { // e.g. a number beyond double's range
        result.sentence = std::string("The request holds a number out of range") + kStopsReading;
        return result;
    }
    if (!result.request.is_object()) {
        result.kind = RequestLine::Kind::NotAnObject;
        result.sentence = "The request is not a JSON object.";
        result.request = nullptr;
        return result;
    }
    if (const auto id = result.request.find("id"); id != result.request.end())
        result.id = *id;
    if (const auto bytes = result.request.find("bytes"); bytes != result.request.end()) {
        if (!bytes->is_number_unsigned() || bytes->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
            result.sentence = "\"bytes\" must be a byte count (a non-negative integer), not " +
                              abbreviatedText(bytes->dump(), 40) + kStopsReading;
            return result;
        }
        result.payload = bytes->get<uint64_t>();
    }
    result.kind = RequestLine::Kind::Request;
    result.integerOutOfRange = check.integerOutOfRange;
    return result;
}

std::string requestOp(const json& request)
{
    const auto field = request.find("op");
    if (field == request.end() || !field->is_string())
        throw Error("The request has no \"op\" string.");
    // Every known op is a short word; a longer one is refused here, so that no message quotes it whole.
    const std::string& op = field->get_ref<const std::string&>();
    if (op.size() > kMaxOpLength)
        throw Error("Unknown op \"" + escapeInvalidUtf8(abbreviatedText(op, kMaxOpLength)) + "\".");
    return op;
}

const json& requireRequestField(const json& request, const char* field, const std::string& op)
{
    const auto it = request.find(field);
    if (it == request.end())
        throw Error("The " + op + " request has no \"" + field + "\" field.");
    return *it;
}

std::string requireRequestHash(const json& request, const std::string& op)
{
    const json& hash = requireRequestField(request, "hash", op);
    if (!hash.is_string() || !isHash(hash.get_ref<const std::string&>()))
        throw Error("The " + op + " request's \"hash\" must be 64 lower-case hex digits.");
    return hash.get<std::string>();
}

int negotiatedProtocol(const json& hello)
{
    int protocol = kRunnerProtocolVersion;
    if (const auto offered = hello.find("protocols"); offered != hello.end() && offered->is_array())
        for (const json& version : *offered)
            if (version.is_number_integer() && version.get<int64_t>() <= kRunnerProtocolLatest)
                protocol = std::max<int>(protocol, static_cast<int>(version.get<int64_t>()));
    return protocol;
}

LoadRequest parseLoadRequest(const json& request)
{
    LoadRequest load;
    if (request.contains("hash")) {
        load.hash = requireRequestHash(request, "load");
    } else {
        const json& checkpoint = requireRequestField(request, "checkpoint", "load");
        if (!checkpoint.is_string() || checkpoint.get_ref<const std::string&>().empty())
            throw Error("The load request's \"checkpoint\" must be a folder path.");
        load.checkpoint = checkpoint.get<std::string>();
    }
    if (const auto mode = request.find("mode"); mode != request.end()) {
        if (!mode->is_string())
            throw Error("The load request's \"mode\" must be \"fp8\", \"dequant\" or \"fp16\".");
        const std::string& name = mode->get_ref<const std::string&>();
        if (!parseRunMode(name, load.settings.mode))
            throw Error("The load request's mode \"" + abbreviatedText(name, 40) +
                        "\" is not fp8 or dequant (nor fp16, the AIU's CPU twin).");
    }
    if (const auto accumulate = request.find("accumulate"); accumulate != request.end()) {
        if (!accumulate->is_string() ||
            !parseAccumulation(accumulate->get_ref<const std::string&>(), load.settings.accumulation))
            throw Error("The load request's \"accumulate\" must be \"float32\" or \"dl16\", not " +
                        abbreviatedText(accumulate->dump(), 40) + ".");
        if (const std::string problem = load.settings.problem(); !problem.empty())
            throw Error(problem);
    }
    if (const auto embedding = request.find("embedding"); embedding != request.end()) {
        const auto pooling = embedding->is_object() ? embedding->find("pooling") : embedding->end();
        const auto normalize = embedding->is_object() ? embedding->find("normalize") : embedding->end();
        if (!embedding->is_object() || pooling == embedding->end() || !pooling->is_string() ||
            normalize == embedding->end() || !normalize->is_boolean())
            throw Error("The load request's \"embedding\" must be {\"pooling\": cls|mean|max|mean_sqrt_len, "
                        "\"normalize\": true|false}.");
        SentenceEmbeddingConfig config;
        config.pooling = poolingModeFromName(pooling->get<std::string>());
        config.normalize = normalize->get<bool>();
        config.fromModules = true;
        load.embedding = config;
    }
    return load;
}

json embeddingRequestJson(const SentenceEmbeddingConfig& embedding)
{
    return {{"pooling", poolingModeName(embedding.pooling)}, {"normalize", embedding.normalize}};
}

UploadRequest parseUploadRequest(const json& request, bool hasPayload)
{
    UploadRequest upload;
    upload.hash = requireRequestHash(request, "upload");
    const json& name = requireRequestField(request, "name", "upload");
    if (!name.is_string() || !isSafeManifestName(name.get_ref<const std::string&>()))
        throw Error("The upload request's \"name\" must be a plain file name.");
    upload.name = name.get<std::string>();
    const json& sha = requireRequestField(request, "sha256", "upload");
    if (!sha.is_string() || !isHash(sha.get_ref<const std::string&>()))
        throw Error("The upload request's \"sha256\" must be 64 lower-case hex digits.");
    upload.sha256 = sha.get<std::string>();
    if (!hasPayload)
        throw Error("The upload request announces no \"bytes\".");
    return upload;
}

ForwardRequest parseForwardRequest(const json& request, int protocol)
{
    ForwardRequest forward;
    EncoderInputs& inputs = forward.inputs;
    inputs.inputIds = intMatrix(requireRequestField(request, "input_ids", "forward"), "input_ids");
    if (present(request, "attention_mask"))
        inputs.attentionMask = intMatrix(request["attention_mask"], "attention_mask");
    if (present(request, "logit_positions")) {
        std::size_t longest = 0;
        for (const auto& row : inputs.inputIds)
            longest = std::max(longest, row.size());
        for (const std::vector<int64_t>& pair : intMatrix(request["logit_positions"], "logit_positions")) {
            if (pair.size() != 2)
                throw Error("\"logit_positions\" must hold [row, position] pairs.");
            // Checked as 64-bit values before they narrow to int: 2^32 + 1 is not position 1.
            if (uint64_t(pair[0]) >= inputs.inputIds.size() || uint64_t(pair[1]) >= longest)
                throw Error("Logit position (" + std::to_string(pair[0]) + ", " + std::to_string(pair[1]) +
                            ") is outside the input.");
            inputs.logitPositions.emplace_back(static_cast<int>(pair[0]), static_cast<int>(pair[1]));
        }
    }
    if (present(request, "token_type_ids"))
        inputs.tokenTypeIds = intMatrix(request["token_type_ids"], "token_type_ids");
    // Protocol 2 answers with the tensors in-band; version 1 writes the file the client names.
    if (protocol < 2) {
        const json& output = requireRequestField(request, "output", "forward");
        if (!output.is_string() || output.get_ref<const std::string&>().empty())
            throw Error("The forward request's \"output\" must be a file path.");
        forward.output = output.get<std::string>();
    }
    if (present(request, "overrides"))
        forward.overrides = parseOverrides(request["overrides"]);
    if (present(request, "capture"))
        forward.capture = parseCapture(request["capture"]);
    return forward;
}

} // namespace scalescope
