#pragma once
// What a runner reports about a forward besides its tensors, on the wire (PROTOCOL.md "forward"):
// the inf/NaN counts per module, the first non-finite module per batch row, and each module's
// output range against float16's limits. One encoder (the CPU runner) and one reader (the client)
// so the two sides cannot drift.
#include <nlohmann/json.hpp>

#include "model/inference_backend.h"

namespace scalescope {

// {"nonfinite": [...], "first_nonfinite_rows": [M or null, ...], "output_ranges": [{"module",
// "max_abs" (null for inf), "below_half_normal", "elements"}]}.
nlohmann::json forwardSummaryJson(const ForwardResult& result);

// Fills firstNonFiniteByRow and outputRanges from a reply that carries them (left empty when a
// runner does not report them; malformed entries are skipped). `rows` is the batch size.
void readForwardSummary(const nlohmann::json& reply, std::size_t rows, ForwardResult& result);

} // namespace scalescope
