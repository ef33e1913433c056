#pragma once
// Non-finite outputs of a task's forwards, per module: merged over batches, and put in words.
#include <string>
#include <vector>

#include "model/inference_backend.h"

namespace scalescope {

// Adds `from`'s counts to `into`, keeping the order in which modules first appeared (execution
// order within a forward; across batches the earliest module stays first).
void mergeNonFinite(std::vector<ModuleNonFinite>& into, const std::vector<ModuleNonFinite>& from);

// "inf or NaN first appears in roberta.encoder.layer.1.intermediate.dense (8 values; 5 modules
// in all)"; "" when the list is empty.
std::string describeNonFinite(const std::vector<ModuleNonFinite>& modules);

} // namespace scalescope
