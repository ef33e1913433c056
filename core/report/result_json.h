#pragma once
// JSON views of the engine's result structs: the one writer of result JSON, shared by the CLI's
// --json output and the workbench's report (summary.json).
#include <nlohmann/json.hpp>

#include "analysis/consumers.h"
#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "model/checkpoint.h"
#include "numerics/metrics.h"
#include "tasks/checkpoint_diff.h"
#include "tasks/compare_runs.h"
#include "tasks/evaluate.h"
#include "tasks/sensitivity.h"

namespace scalescope {

// Non-finite numbers (an SQNR of identical outputs) become null: JSON has no infinity.
nlohmann::json finiteOrNull(double value);
// document as text; strings that are not valid UTF-8 (BPE tokens that are partial characters, a
// Latin-1 folder name) get their invalid bytes written as "\\xNN" instead of failing the dump.
std::string jsonText(const nlohmann::json& document, int indent = 2);
nlohmann::json metricsJson(const ErrorMetrics& metrics);
nlohmann::json findingsJson(const std::vector<Finding>& findings);
nlohmann::json scaleStatisticsJson(const LinearScaleStatistics& statistics);
// inspect's "consumers": [{"name", "verdict", "loadings" (aiu: {"fused", "unfused"}), "findings":
// [{"consumer", "loading" (aiu), "code", "severity", "modules", "message", "fix"}]}].
nlohmann::json consumersJson(const std::vector<ConsumerReport>& reports);
// inspect --json; also each Linear's and each Linear tensor's "fms_name" and "fms_fused_name".
nlohmann::json inspectJson(const Checkpoint& checkpoint, const std::vector<LinearScaleStatistics>& statistics,
                           const std::vector<Finding>& findings);
// Per module: "max_abs" ("inf" when it overflowed), "overflows_fp16", "below_half_normal_share".
nlohmann::json headroomJson(const std::vector<ModuleOutputRange>& ranges);
nlohmann::json comparisonJson(const ComparisonResult& comparison);

// SQuAD evaluation: the official script's score keys (HasAns/NoAns only where such questions exist).
nlohmann::json squadScoresJson(const SquadScores& scores);
// Where the run's inf/NaN starts over an evaluation: {"questions", "starts": [{"module",
// "questions"}], "per_question": [{"id", "first_nonfinite", "skipped"}]} (evaluated, then skipped).
nlohmann::json evaluationNonFiniteJson(const EvaluationResult& evaluation);
// `evaluate --json`'s document.
nlohmann::json evaluationJson(const EvaluationResult& evaluation, const std::string& checkpointDir,
                              const std::string& referenceDir);

// `sensitivity --json`'s document (the CLI adds "checkpoint", "reference" and "plots"), and the
// workbench report's "sensitivity": {"input", "granularity", "reference_label", "samples",
// "baseline", "all_float", "entries": [{"module", "label", "rank", "linears", "fp8_attention",
// "float_one", "fp8_one", "sqnr_gain_db", "sqnr_loss_db", "recovered_db", "recovered_infinite",
// "lost_alone_db", "lost_alone_infinite", "tie_rank", "cause"}], "causes", "target",
// "suggested_float", "suggested_float_count", "suggested_tied", "mode", "accumulation",
// "attention", "spread", "target_reached", "suggestion_note", "verified_prefixes", "forwards",
// "complete"}, and where they apply "suggested_float_metrics", "suggestion_valid_for",
// "suggestion_split_units", "suggestion_validity", "reference_scores", "stopped_reason".
nlohmann::json sensitivityJson(const SensitivityResult& result);

// `diff --json`'s document: {"a", "b", "identical", "config": [{"field","a","b"}], "linears":
// [{"module", "differences": [{"field","a","b"}]}], "tensors": [{"name", "verdict", "dtype_a",
// "dtype_b", "shape_a", "shape_b", "elements", "fp8_codes", "codes_differing", "code_step_histogram"
// {"steps": count}, "nan_mismatches", "signed_zero_swaps", "values_differing", "values_one_ulp_apart",
// "max_ulps", "ulp_histogram" {"ulps": count}, "ulp_unit", "scale_ratio_min", "scale_ratio_max"}], "only_in_a", "only_in_b",
// "verdict_counts", and with metrics "metrics": {"reference", "reference_is_stand_in", "input",
// "samples", "points": [{"name", "label", "kind", "a": {metrics}, "b": {metrics},
// "sqnr_difference_db"}], "ranked": [{"rank", "name", "sqnr_difference_db"}]}}.
nlohmann::json diffJson(const CheckpointDiff& diff, const DiffMetrics* metrics);

} // namespace scalescope
