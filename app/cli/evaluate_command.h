#pragma once
// `scalescope-cli evaluate CKPT --squad FILE [--reference DIR] [--max-samples N] [--csv FILE] --json`:
// SQuAD exact match and F1 of the FP8 run and its reference, their agreement and the questions
// where they differ. Progress goes to stderr; Ctrl-C stops early and still prints what was done.
#include "arguments.h"

namespace scalescope::cli {

int commandEvaluate(const Arguments& args);

} // namespace scalescope::cli
