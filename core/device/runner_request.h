#pragma once
// How the CPU runner reads a request (packaging/runners/PROTOCOL.md): one line to a JSON object with
// its id and the payload it announces, and each op's fields to plain values. Pure parsing, no
// LibTorch and no state: core/engine/runner_server answers with it, and fuzz/fuzz_runner_request.cpp
// feeds it hostile lines without a model.
// Errors: the parse* functions throw scalescope::Error with the sentence the client receives.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/inference_backend.h"
#include "model/linear_plan.h"
#include "model/run_settings.h"

namespace scalescope {

struct RequestLine {
    enum class Kind {
        Blank,       // only spaces and tabs: skipped
        StopReading, // the input may have lost its framing: answer `sentence` and read nothing more
        NotAnObject, // answer `sentence` and read on (nothing in it can announce a payload)
        Request,
    };
    Kind kind = Kind::Blank;
    std::string sentence;
    nlohmann::json request; // Request: the parsed object
    nlohmann::json id;      // the request's "id" (null when it has none or the line did not parse)
    std::optional<uint64_t> payload; // the byte count "bytes" announces, when present
    // The first integer beyond 64 bits, as written (ProtocolLineCheck); such a request is refused.
    std::string integerOutOfRange;
};

// Checks a line read by readProtocolLine within the protocol's bounds and parses it.
RequestLine parseRequestLine(const std::string& line);

// The request's "op" string; throws when it has none.
std::string requestOp(const nlohmann::json& request);

// A field the op needs; throws "The OP request has no "FIELD" field."
const nlohmann::json& requireRequestField(const nlohmann::json& request, const char* field, const std::string& op);

// The request's "hash": 64 lower-case hex digits (a checkpoint's content hash).
std::string requireRequestHash(const nlohmann::json& request, const std::string& op);

// hello: the highest protocol version both sides speak (version 1 when the client offers none).
int negotiatedProtocol(const nlohmann::json& hello);

struct LoadRequest {
    std::string hash;       // protocol 2: a checkpoint received by hash (then `checkpoint` is empty)
    std::string checkpoint; // a folder path on the runner's host
    // Of the settings only "mode" and "accumulate" travel: how FP8 products are summed ("float32"
    // when absent; "dl16" only with an FP8 mode). A forward names its own overrides; the rest keep
    // their defaults.
    RunSettings settings;
    // An embedder's pooling and normalization ("embedding": {"pooling": "mean", "normalize": true}):
    // the client's reading of the folder's sentence-transformers files or the user's --pooling,
    // which a runner applies and says back. Absent for other heads.
    std::optional<SentenceEmbeddingConfig> embedding;
};
LoadRequest parseLoadRequest(const nlohmann::json& request);
// The load request's "embedding" object, and the one a runner answers with.
nlohmann::json embeddingRequestJson(const SentenceEmbeddingConfig& embedding);

struct UploadRequest {
    std::string hash;   // the checkpoint's content hash
    std::string name;   // a plain file name inside it
    std::string sha256; // the file's own hash
};
// hasPayload: whether the line announced "bytes" (an upload without them is refused).
UploadRequest parseUploadRequest(const nlohmann::json& request, bool hasPayload);

struct ForwardRequest {
    EncoderInputs inputs;
    std::string output; // protocol 1: the file to write; empty under protocol 2 (in-band answer)
    PrecisionOverrides overrides;
    // Names as the request gives them; whether the model has them is the runner's to check.
    CaptureRequest capture;
};
ForwardRequest parseForwardRequest(const nlohmann::json& request, int protocol);

} // namespace scalescope
