#pragma once
// Which Linears a runtime can keep float one by one, and who can load a keep-float set (issue 26).
//
// fms on the AIU serves q, k and v of a layer as ONE Linear by default (attn.in_proj.qkv_fused), and
// vLLM packs them into one qkv_proj that refuses q, k, v of different schemes; so keeping one of
// them float without the others is honoured only by fms with unfused q/k/v and by
// compressed-tensors/transformers. A "runtime unit" is the set of a layer's Linears whose roles
// share one fused FMS name in the family table (model/architecture.h): q, k and v for RoBERTa and
// BERT, every other Linear alone. Nothing here spells a module name.
//
// Torch-free, pure functions of a layout; no errors beyond what the layout throws.
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/linear_plan.h"

namespace scalescope {

struct RuntimeUnit {
    std::string module;               // roberta.encoder.layer.3.attention.self for q/k/v; a Linear's own name
    std::string label;                // L3.qkv; L3.ffn.in; a head Linear's name
    std::vector<std::string> linears; // its Linears in execution order
    bool fused() const { return linears.size() > 1; }
};

// Every Linear of the layout in execution order, grouped into runtime units.
std::vector<RuntimeUnit> runtimeUnits(const EncoderLayout& layout);

// The consumers (DESIGN.md, "How each consumer loads a checkpoint") a keep-float set suits.
inline const char* const kConsumerAiuFused = "aiu fused";     // fms default, fused_weights=True
inline const char* const kConsumerAiuUnfused = "aiu unfused"; // fused_weights=False (--unfuse_weights)
inline const char* const kConsumerVllm = "vllm";
inline const char* const kConsumerCompressedTensors = "compressed-tensors"; // and transformers

struct KeepFloatValidity {
    std::vector<std::string> consumers; // who can honour the set, from the four above
    std::vector<std::string> splitUnits; // labels of the fused units the set splits ("L0.qkv")
    std::string sentence;               // says which consumers and why
};

// Who can load the checkpoint that keeps `keptFloat` float as intended: a fused unit whose
// Linears end up part float, part FP8 (counting Linears already float in the checkpoint, from
// `linears`) is a split that only the unfused AIU path and compressed-tensors honour.
KeepFloatValidity keepFloatValidity(const EncoderLayout& layout, const std::vector<LinearInfo>& linears,
                                    const std::vector<std::string>& keptFloat);

} // namespace scalescope
