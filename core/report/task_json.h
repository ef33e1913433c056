#pragma once
// JSON views of the sequence tasks' results (embed, classify, rerank), as DESIGN.md's CLI table
// "Tasks beyond QA and fill-mask" specifies them: the CLI's --json output and the workbench's
// report write them through here.
#include <nlohmann/json.hpp>

#include "tasks/classify.h"
#include "tasks/embed.h"
#include "tasks/rerank.h"
#include "tasks/task_datasets.h"
#include "tasks/task_evaluation.h"

namespace scalescope {

nlohmann::json embedJson(const EmbedResult& result);
nlohmann::json classifyJson(const ClassifyResult& result);
nlohmann::json rerankJson(const RerankResult& result);
// `evaluate --sts | --retrieval | --classification`: each side's metrics, and the inputs whose
// result differs (at most kListedDifferences).
nlohmann::json stsJson(const StsEvaluation& result, const StsDataset& dataset);
nlohmann::json retrievalJson(const RetrievalEvaluation& result, const BeirDataset& dataset);
nlohmann::json classificationJson(const ClassificationEvaluation& result);

} // namespace scalescope
