#pragma once
// The CPU runner: the server side of the runner protocol (packaging/runners/PROTOCOL.md) over an
// EncoderModel in this process. `scalescope-cli runner` serves it on stdin/stdout.
//
// One request per line in, one response per line out (flushed after each), logs on `log`.
// Requests (packaging/runners/PROTOCOL.md has versions 1 and 2 in full):
//   hello {protocols?}                     -> protocol (the highest both speak), device "cpu", name
//   has_checkpoint / upload / commit_checkpoint (version 2): a checkpoint sent by content hash
//   load {checkpoint, mode}                -> architecture; loading the checkpoint that is already
//                                             loaded only switches the mode (fp8 | dequant)
//   forward {input_ids, attention_mask?, capture?, output, logit_positions?}
//                                          -> output, elapsed_ms; the file holds the logits
//                                             ("start_logits"/"end_logits" or "logits") and the
//                                             captures by point name, float32, written atomically
//   shutdown                               -> ok, and serving ends
// `capture` is a list of capture point or module names (or the string "all"); `logit_positions` is
// an optional list of [row, position] pairs for MaskedLM heads (logits only at those positions),
// an extension of the protocol that runners may ignore only for QA models.
// A request that lacks a field, names something unknown or fails in any way gets
// {"id":..,"ok":false,"error":"one sentence"} and serving goes on; a payload it announced is read
// to its end first. Input that may have lost the framing (a line longer than 64 MiB or beyond the
// protocol's other bounds, a line that is not JSON, a "bytes" that is not a byte count, input that
// ends inside a payload) gets one such answer and serving ends: nothing after it is read.
// Checkpoints received by hash are kept and verified by RunnerCache (engine/runner_cache.h).
// Threading: runs on the calling thread until the end of input, shutdown or a framing error.
#include <iosfwd>
#include <string>

namespace scalescope {

struct RunnerServerOptions {
    // Reported by hello as the runner's name; empty gives "ScaleScope CPU runner, N threads".
    std::string name;
    // Where checkpoints received by hash are kept (protocol 2). Empty: $SCALESCOPE_RUNNER_CACHE,
    // else $XDG_CACHE_HOME/scalescope-runner, else ~/.cache/scalescope-runner, else
    // /tmp/scalescope-runner-UID: always a folder of the runner's user, created 0700.
    std::string cacheFolder;
};

// Serves until end of input or a shutdown request (returns 0), or until input that lost the
// framing (returns 1); the result is the process exit code.
int serveRunner(std::istream& in, std::ostream& out, std::ostream& log, const RunnerServerOptions& options = {});

} // namespace scalescope
