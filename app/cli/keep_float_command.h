#pragma once
// `scalescope-cli keep-float CKPT DST --modules A,B [--consumer aiu|vllm|all] [--unfused]`: writes
// the fixed checkpoint for the chosen consumers (HF and FMS names in ignore, kept weights in the
// checkpoint's float dtype), reruns what was written against the source, and prints before/after.
#include "arguments.h"

namespace scalescope::cli {

int commandKeepFloatForConsumers(const Arguments& args);

} // namespace scalescope::cli
