#pragma once
// Which Linears a runtime can keep float one by one: the units of the sensitivity sweep and of the
// consumer rules' q/k/v checks (analysis/consumers.h says who can load a keep-float set).
//
// fms on the AIU serves q, k and v of a layer as ONE Linear by default (attn.in_proj.qkv_fused), and
// vLLM packs them into one qkv_proj that refuses q, k, v of different schemes; so keeping one of
// them float without the others is honoured only by fms with unfused q/k/v and by
// compressed-tensors/transformers. A "runtime unit" is the set of a layer's Linears whose roles
// share one fused FMS name in the family table (model/architecture.h): q, k and v for RoBERTa and
// BERT, every other Linear alone. Nothing here spells a module name.
//
// Torch-free, pure functions of a layout; no errors beyond what the layout throws.
#include <set>
#include <string>
#include <vector>

#include "model/architecture.h"

namespace scalescope {

struct RuntimeUnit {
    std::string module;               // roberta.encoder.layer.3.attention.self for q/k/v; a Linear's own name
    std::string label;                // L3.qkv; L3.ffn.in; a head Linear's name
    std::vector<std::string> linears; // its Linears in execution order
    bool fused() const { return linears.size() > 1; }
};

// Every Linear of the layout in execution order, grouped into runtime units.
std::vector<RuntimeUnit> runtimeUnits(const EncoderLayout& layout);

// A fused unit (q, k, v) and which of its Linears are float after a keep-float: split when some
// are float and some stay FP8, which a runtime that fuses them cannot hold.
struct FusedUnitFloat {
    RuntimeUnit unit;
    std::vector<std::string> floatLinears; // execution order
    bool split() const { return !floatLinears.empty() && floatLinears.size() < unit.linears.size(); }
    bool whole() const { return floatLinears.size() == unit.linears.size(); }
};

// Every fused unit of the layout with its Linears in `floatAfter` (kept float, or already float).
std::vector<FusedUnitFloat> fusedUnitsFloat(const EncoderLayout& layout, const std::set<std::string>& floatAfter);

// "L0.qkv (float: L0.v; FP8: L0.q, L0.k)": a split unit in words.
std::string splitUnitText(const EncoderLayout& layout, const FusedUnitFloat& split);

} // namespace scalescope
