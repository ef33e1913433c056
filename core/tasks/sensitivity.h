#pragma once
// The sensitivity sweep (issue 15): which quantized Linear (or runtime unit, or encoder layer)
// breaks the answer. A unit (issue 26) is what a runtime can keep float: q, k and v of a layer
// together, every other Linear alone (model/runtime_units.h); the result says which consumers can
// honour its suggestion.
// For one input (question/context, a masked text, input ids) or a SQuAD subset, every unit is run
// twice with precision overrides (model/linear_plan.h): kept float alone (`float_one`: only it runs
// float) and in FP8 alone (`fp8_one`: everything else float). Both are measured on the final
// outputs against the reference, exactly as compareRuns measures them. The units are ranked by
// what keeping them float gains, and the smallest prefix of that ranking that meets the target is
// found by running it. Each quantized Linear also gets a cause label from what is measured on its
// own input and weight: clipped/flushed/subnormal input shares, weight-scale clipping/underflow,
// and its "FP8 floor" (the SQNR of its output when only E4M3 rounding with ideal scales acts).
//
// Torch-free: drives any InferenceBackend. Threading: runs on the calling thread; the backends
// must not be used elsewhere meanwhile. Errors: bad options or input throw scalescope::Error
// before any forward. Cancellation (Progress::cancel) stops the sweep between forwards and returns
// the finished entries with complete == false.
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/inference_backend.h"
#include "tasks/compare_runs.h"
#include "tasks/final_outputs.h"
#include "analysis/consumers.h"
#include "model/runtime_units.h"
#include "tasks/sensitivity_cause.h"
#include "tasks/squad_dataset.h"

namespace scalescope {

// The final-output metric of one run against the reference.
struct SensitivityMetrics {
    double sqnrDb = 0;          // the head's logits (QA: start and end) against the reference's
    // QA: the best answer (every SQuAD question's) agrees with the reference's (answersAgree);
    // fill-mask: every mask's top-1 agrees; otherwise the argmax at every real position agrees.
    bool agrees = false;
    bool finite = true;         // both sides' outputs hold no NaN or infinity
    // QA (one question): the run's best answer and its SQuAD F1 against the reference's, 0..1.
    std::string answer;
    double answerF1 = 0;
    // Fill-mask: share of masks whose top-1 agrees, mean KL(reference || run) in nats.
    double top1Agreement = 0;
    double klDivergence = 0;
    // SQuAD subset: exact match and F1 against the gold answers, percent; agreement 0..1.
    double exact = 0;
    double f1 = 0;
    double agreement = 0;
    // An embedder, a classifier or a reranker (tasks/final_outputs.h SequenceOutputAgreement), over
    // every input (a --texts file's rows run as one batch): label flips, the cosine per input (mean
    // and min), Kendall's tau-b of one score per row and whether their ranking is the same.
    std::optional<std::size_t> labelFlips;
    std::optional<double> meanCosine, minCosine, kendallTau;
    std::optional<bool> sameOrder;
};

// What every entry of one sweep is measured against, known before the first entry finishes: live
// entries carry it, so a GUI draws them with the same measures and title as the finished result.
struct SensitivitySweepInfo {
    std::string inputKind;                // "qa", "fill-mask", "forward", "texts" or "squad"
    std::string granularity;              // "linear", "unit" or "layer"
    std::string referenceLabel;           // "reference (DIR)" or "dequant"
    bool referenceIsStandIn = false;
    RunSettings run;                      // the run side: fp8, or the fp16 twin (no overrides)
    std::string target;                   // "the answer agrees with the reference", "final SQNR >= 30.00 dB", ...
    AgreementWords agreement;             // what "agrees" holds the run to, in words (final_outputs.h)
    std::optional<double> statedSpreadDb; // SensitivityOptions::spreadDb
    std::size_t samples = 1;
    SensitivityMetrics baseline;          // the all-FP8 run
    SensitivityMetrics allFloat;          // every quantized Linear float
    SensitivityMetrics reference;         // SQuAD: the reference's own scores
};

// How far apart two entries' "dB recovered" must be before the sweep calls one of them the more
// important (estimateSensitivitySpread). Entries closer than that are a tie.
struct SensitivitySpread {
    bool estimated = false;   // false: too few entries to tell; no tie is claimed
    double db = 0;            // recovered dB within this of each other: a tie
    double f1Points = 0;      // SQuAD: F1 within this (one question's worth) too
    std::size_t basis = 0;    // the entries the estimate rests on
    std::string method;       // one sentence: how it was estimated
};

struct SensitivityEntry {
    std::string module;               // the Linear, the unit (roberta.encoder.layer.3.attention.self)
                                      // or the encoder layer (roberta.encoder.layer.3)
    std::string label;                // short label for charts: "L3.ffn.in", "L3.qkv", "L3"
    std::vector<std::string> linears; // the quantized Linears the unit overrides (an FP8 attention
                                      // entry: its layer's EncoderLayout::fp8AttentionUnit)
    // "The attention of layer N in FP8" (AIU FP8 attention, a run option): ranked with the rest,
    // never part of a keep-float suggestion.
    bool fp8Attention = false;
    int rank = 0;                     // 1 = keeping it float helps most; 0 until ranked
    SensitivityMetrics floatOne;      // only this unit float
    SensitivityMetrics fp8One;        // only this unit FP8
    std::optional<SensitivityCause> cause; // an entry of one Linear
    // The two measures of the entry, in dB of the final logits' SQNR against the reference, set as
    // the entry finishes (the same live and when done). +inf: kept float the output is exact, or
    // alone in FP8 it is as bad as the whole FP8 run; NaN: not measurable.
    double recoveredDb = std::numeric_limits<double>::quiet_NaN(); // float_one's SQNR - the all-FP8 run's
    double lostAloneDb = std::numeric_limits<double>::quiet_NaN(); // sensitivityLostAloneDb(fp8_one)
    // Rank of the first entry of its tie group when it ties with others (within the spread); 0 when
    // it stands alone. Set when the entries are ranked.
    int tieRank = 0;
    std::shared_ptr<const SensitivitySweepInfo> sweep; // what it was measured against
};

struct SensitivityInput {
    // Used when squad is null. Its texts (a --texts file) run as one batch, so the sweep's SQNR is
    // that of every input's final output concatenated, as a SQuAD subset's is of every question's
    // logits, and a reranker's rows (one query's passages) have a ranking to keep.
    ComparisonInput single;
    const SquadDataset* squad = nullptr;  // a SQuAD subset instead
    std::size_t maxSamples = 0;           // the first N questions; 0 = all
};

struct SensitivityOptions {
    std::string granularity = "linear";   // one of sensitivityGranularities()
    std::optional<double> targetSqnrDb;   // suggestion target: final SQNR at least this
    std::optional<double> targetF1Drop;   // suggestion target: F1 (percent) within this of the reference
    // The run side: its mode (fp16: the sweep on the AIU's fp16 twin) and FP8 sums (Dl16: the DL16
    // twin); AIU FP8 attention (fp8-aiu) adds one entry per layer, "the attention of layer N in FP8"
    // (EncoderLayout::fp8AttentionUnit), ranked with the rest, never suggested. Its overrides are
    // not used: each run of the sweep sets its own. The reference runs referenceRunSettings().
    RunSettings run;
    // A stated tie tolerance in dB instead of the estimate (estimateSensitivitySpread); 0 claims no
    // ties, so every entry is its own step of the suggestion.
    std::optional<double> spreadDb;
    // Called after each finished entry (on the calling thread), so a GUI can fill in live.
    std::function<void(const SensitivityEntry&)> onEntry;
};

struct SensitivityResult {
    std::string inputKind;                // "qa", "fill-mask", "forward", "texts" or "squad"
    std::string granularity;
    std::string referenceLabel;           // "reference (DIR)" or "dequant"
    bool referenceIsStandIn = false;
    std::size_t samples = 1;              // questions (SQuAD), texts (a texts file) or 1
    SensitivityMetrics baseline;          // the FP8 run with no override
    SensitivityMetrics allFloat;          // every quantized Linear float (what fp8_one departs from)
    SensitivityMetrics reference;         // SQuAD: the reference's own EM/F1 against the gold answers
    std::vector<SensitivityEntry> entries; // ranked (rank order) when complete, else in model order
    std::vector<SensitivityCause> causes;  // every quantized Linear, model order
    std::string target;                    // "answer agrees", "SQNR >= 30 dB", ...
    AgreementWords agreement;              // what "agrees" holds the run to, in words (final_outputs.h)
    RunSettings run;                       // the run side as SensitivityOptions::run gave it
    SensitivitySpread spread;              // estimated on the entries (live: on those finished)
    std::vector<std::string> suggestedFloat; // Linear names
    // The suggested Linears that come from a tie group: the sweep cannot tell them apart, so the
    // suggestion takes all of the group or none of it (it never picks among them).
    std::vector<std::string> suggestedTied;
    std::optional<SensitivityMetrics> suggestedMetrics; // the verified run of that prefix
    // Every prefix of the ranking the suggestion search verified, in order: how the final output
    // recovers as more Linears stay float.
    struct VerifiedPrefix {
        std::size_t floatLinears = 0;
        SensitivityMetrics metrics;
    };
    std::vector<VerifiedPrefix> verifiedPrefixes;
    bool suggestionReached = false;
    std::string suggestionNote;            // says how it was found, or why the target is unreachable
    // Which consumers can load the checkpoint that keeps suggestedFloat float; set with the suggestion.
    std::optional<KeepFloatValidity> suggestionValidity;
    std::size_t forwards = 0;              // forward passes of the run side (reference excluded)
    bool complete = true;
    std::string stoppedReason;
};

// The granularities in the order a user reads them: linear, unit, layer.
const std::vector<std::string>& sensitivityGranularities();
// The message template for a granularity that is none of them ("{option} must be linear, unit or
// layer, not \"x\"."; OptionError names the option), "" for a valid one: the CLI's usage check
// and the sweep's own say the same.
std::string granularityProblem(const std::string& granularity);

// The dB the all-FP8 run loses to one entry, judged from the run where only that entry is FP8
// (fp8One): its error alone, N = noise(fp8One) - noise(allFloat), as a share of the all-FP8 run's
// noise B, is worth 10 log10(B / (B - N)) dB of SQNR (noise = 10^(-SQNR / 10), relative to the
// reference's signal). Were FP8 errors simply additive this would equal the dB recovered when the
// entry alone is kept float; it stays finite where the all-float run is exact (where "all-float
// SQNR minus fp8_one SQNR" is infinite for every entry). 0 when the entry alone adds no error,
// +inf when alone it is at least as bad as the whole FP8 run.
double sensitivityLostAloneDb(const SensitivityMetrics& fp8One, const SensitivityMetrics& baseline,
                              const SensitivityMetrics& allFloat);

// The run-to-run spread of "dB recovered" (see the definition in sensitivity.cpp), from the entries'
// own two measures; not estimated from fewer than three entries.
SensitivitySpread estimateSensitivitySpread(const std::vector<SensitivityEntry>& entries, const SensitivitySweepInfo& info);

// The result so far of a sweep that is still running: its info and the entries finished, ranked,
// with the spread and the ties, exactly as the finished result ranks them (no suggestion yet).
SensitivityResult partialSensitivityResult(const SensitivitySweepInfo& info, std::vector<SensitivityEntry> entries);

// reference may be null: then `run` in dequant mode is the reference and the result says so.
SensitivityResult runSensitivity(InferenceBackend& run, InferenceBackend* reference, const SensitivityInput& input,
                                 const SensitivityOptions& options, const Progress& progress = {});

} // namespace scalescope
