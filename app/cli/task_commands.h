#pragma once
// The sequence tasks on the command line (DESIGN.md, "Tasks beyond QA and fill-mask"):
// `embed CKPT (--text T ... | --texts FILE) [--prompt P] [--pooling M] [--normalize | --no-normalize]
// [--output FILE.safetensors]`, `classify CKPT (--text T [--pair T2] | --texts FILE)`,
// `rerank CKPT --query Q (--passage P ... | --passages FILE) [--top-k K]`, each with the run options
// of qa (--mode, --reference, --accumulate, --attention, --device) and --json.
#include "arguments.h"

namespace scalescope::cli {

int commandEmbed(const Arguments& args);
int commandClassify(const Arguments& args);
int commandRerank(const Arguments& args);
// evaluate CKPT --sts FILE | --retrieval DIR | --classification FILE [--max-samples N] [--reference DIR].
int commandEvaluateTask(const Arguments& args);

} // namespace scalescope::cli
