#pragma once
// Whether the runtimes that serve a checkpoint load it as intended: for each consumer (the AIU's
// fms + fms_mo, vLLM, compressed-tensors under transformers), a verdict and the findings behind it,
// one per rule of docs/ARCHITECTURE.md "How each consumer loads a checkpoint". This file is the one
// place those rules live in C++: inspect reports them, keep-float asks keepFloatRefusal() and
// writes keepFloatIgnoreNames(), and the Model panel can show ConsumerReport as it is.
//
// The AIU loads q, k and v either fused into one Linear (fms's default fused_weights=True) or
// unfused (aiu-fms-testing-utils' encoder path, --unfuse_weights). Every AIU finding is tagged with
// the loading it holds for ("fused", "unfused" or "both"); the AIU report carries a verdict per
// loading, and its overall verdict is the worse of the two, except for a copy keep-float wrote for
// the unfused loading alone (its provenance says so): that copy is judged as it is meant to load.
//
// Reads the parsed QuantizationConfig and LinearPlan (compressed-tensors' matching, as the engine
// resolves it), the tensor headers, and the raw config keys where the AIU reads them raw
// (quantization_status, group_0, keys it indexes directly). No LibTorch; never throws for a
// checkpoint that opened.
#include <optional>
#include <string>
#include <vector>

#include "analysis/diagnostics.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"

namespace scalescope {

enum class Consumer { Aiu, Vllm, CompressedTensors };
const char* consumerName(Consumer consumer); // "aiu", "vllm", "compressed-tensors"

// Error findings make a consumer fail, warnings make it run differently, infos change nothing.
enum class ConsumerVerdict { AsIntended, RunsDifferently, Fails };
const char* verdictName(ConsumerVerdict verdict); // "as intended", "runs differently", "fails"

enum class AiuLoading { Fused, Unfused };
const char* aiuLoadingName(AiuLoading loading); // "fused", "unfused"

struct ConsumerFinding {
    Consumer consumer = Consumer::Aiu;
    std::string loading;              // AIU: "fused", "unfused" or "both"; "" for other consumers
    std::string code;                 // stable, e.g. "aiu-float-built-fp8" (list in consumers.cpp)
    Severity severity = Severity::Info;
    std::vector<std::string> modules; // Hugging Face names of the Linears (or tensors) it touches
    std::string message;              // one sentence: what the consumer does
    std::string fix;                  // one sentence: what to change ("" for a harmless note)
};

struct ConsumerReport {
    Consumer consumer = Consumer::Aiu;
    ConsumerVerdict verdict = ConsumerVerdict::AsIntended;
    // AIU only: the verdict of each loading (fused, unfused); empty for the others.
    std::vector<std::pair<AiuLoading, ConsumerVerdict>> loadings;
    // AIU only: the one loading the checkpoint was written for (keep-float's provenance records
    // "aiu unfused" without "aiu fused"), which the verdict is then the verdict of.
    std::optional<AiuLoading> writtenFor;
    std::vector<ConsumerFinding> findings;
};

// The AIU's loadings in words: "fused: fails, unfused: as intended", led by "written for the
// unfused loading; " when the report has writtenFor; "" for a report without loadings.
std::string aiuLoadingsText(const ConsumerReport& report);

// The verdict a set of findings gives (the worst severity among them).
ConsumerVerdict verdictOf(const std::vector<ConsumerFinding>& findings);

// quantization_status judged against the tensors (ARCHITECTURE "Configs written since 2025"): when
// FP8 weights are on disk under a label other than exactly "compressed" (frozen, calibration,
// initialized, decompressed, missing), the consumers that read the label and so misread the
// checkpoint, each with what it then does; empty when the label agrees with the tensors. vLLM is
// never listed: it does not read quantization_status. (ScaleScope itself runs FP8 weights as
// compressed whatever the label: the plan reads the stored dtypes.)
struct StatusMisreading {
    Consumer consumer = Consumer::Aiu;
    std::string consequence; // a clause: "the AIU (fms_mo) builds FP8 Linears only for exactly ..."
};
std::vector<StatusMisreading> statusMisreadings(const Checkpoint& checkpoint);

// AIU, vLLM, compressed-tensors, in that order.
std::vector<ConsumerReport> assessConsumers(const Checkpoint& checkpoint);

// The float dtype the checkpoint keeps its float tensors in (the word embeddings' dtype, else the
// config's torch_dtype/dtype): what a Linear kept float must be stored in.
Dtype checkpointFloatDtype(const Checkpoint& checkpoint);

// For whom keep-float writes a checkpoint.
struct KeepFloatConsumers {
    bool aiu = true;
    bool vllm = true;
    bool aiuUnfused = false; // the AIU loads with fused_weights=False
};

// The one sentence that refuses keeping `modules` float (on top of the Linears already stored
// float) for those consumers, or nullopt: one of q, k, v of a layer float without the others, for
// vLLM (it packs them into one Linear) or for the AIU loading fused.
std::optional<std::string> keepFloatRefusal(const Checkpoint& checkpoint, const std::vector<std::string>& modules,
                                            const KeepFloatConsumers& consumers);

// The consumers a keep-float copy of `checkpoint` keeping `modules` float is written for: as
// requested, except that a copy for the AIU's fused loading is written for its unfused loading
// when the checkpoint's own scheme fails the fused loading and not the unfused one (per-tensor
// q/k/v scales concatenate to [3]): no copy could load fused, and the AIU loads encoders unfused
// anyway (aiu-fms-testing-utils --unfuse_weights). `why` gets one sentence saying so ("" else).
KeepFloatConsumers consumersTheSchemeAllows(const Checkpoint& checkpoint, const std::vector<std::string>& modules,
                                            KeepFloatConsumers requested, std::string& why);

// Who can load a keep-float set as intended, named for the sweep's suggestion: "aiu fused" (fms's
// default fused_weights=True), "aiu unfused", "vllm", "compressed-tensors" (and transformers).
inline const char* const kConsumerAiuFused = "aiu fused";
inline const char* const kConsumerAiuUnfused = "aiu unfused";
inline const char* const kConsumerVllm = "vllm";
inline const char* const kConsumerCompressedTensors = "compressed-tensors";

struct KeepFloatValidity {
    std::vector<std::string> consumers;  // who can honour the set, from the four above
    std::vector<std::string> splitUnits; // labels of the fused units the set splits ("L0.qkv")
    std::string sentence;                // says which consumers and why
};

// Who can load the checkpoint that keeps `keptFloat` float as intended: a fused unit
// (model/runtime_units.h) whose Linears end up part float, part FP8 (counting Linears already
// stored float) is a split that only the unfused AIU path and compressed-tensors honour. The same
// rule, on the same count, keepFloatRefusal() applies.
KeepFloatValidity keepFloatValidity(const Checkpoint& checkpoint, const std::vector<std::string>& keptFloat);

// The ignore entries that keep these Linears float for every consumer: each HF name and its FMS
// name, and a layer's qkv_fused name when q, k and v of that layer all end up float.
std::vector<std::string> keepFloatIgnoreNames(const Checkpoint& checkpoint, const std::vector<std::string>& modules);

} // namespace scalescope
