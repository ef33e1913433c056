#pragma once
// The encoder family table (model/architecture.h) as JSON: what `scalescope-cli families --json`
// prints and what packaging/runners/encoder_families.json holds, so that the Python AIU runner
// reads the same layout and HF -> FMS names as the engine instead of keeping a copy.
#include <nlohmann/json.hpp>

namespace scalescope {

nlohmann::json familyTableJson();

} // namespace scalescope
