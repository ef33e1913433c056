#pragma once
// The comparison task: a run (`fp8`) against its reference (`reference` from a float checkpoint,
// or `dequant` standing in): the metrics of docs/ARCHITECTURE.md at every capture point, the FP8 activation
// shares of every quantized Linear, and agreement of the final outputs (QA answers or fill-mask
// distributions).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/attention_headroom.h"
#include "analysis/comparison.h"
#include "analysis/diagnostics.h"
#include "model/inference_backend.h"
#include "model/run_settings.h"
#include "tasks/fill_mask.h"
#include "tasks/final_outputs.h"
#include "tasks/sequence_runs.h"
#include "tasks/question_answering.h"

namespace scalescope {

// What to run. Exactly one of: question+context (QA models), text (fill-mask when it holds
// the tokenizer's mask token on a MaskedLM; otherwise one plain forward), inputIds.
struct ComparisonInput {
    std::string question;
    std::string context;
    std::string text;
    // With text: the second text of a pair (a cross-encoder's passage, a pair classifier's second
    // sentence), in the family's pair layout.
    std::string pair;
    std::vector<std::vector<int64_t>> inputIds;
    // Instead: several texts or pairs (a --texts file) on an embedder, a classifier or a reranker,
    // encoded as their task encodes them (tasks/sequence_runs.h) and run as one batch, one row each:
    // the final output is every row's, concatenated (a reranker's rows: one query's passages).
    std::vector<SequenceInput> texts;
    QaOptions qaOptions;
    int topK = 5;
    // The run side: fp8 (the default), dequant to see the weights' share of the error, or fp16 to see
    // the run as a float16 device (the AIU) stores it; DL16 sums, AIU FP8 attention, what-if
    // overrides. The reference side: dequant (a float checkpoint runs the same either way), or fp8
    // to compare a device's FP8 run with the in-process CPU emulation of the same checkpoint; it
    // records the same K/V cast points as the run.
    RunPair runs;
    // The text is a fill-mask request: the model must be a masked LM and the text hold a mask token
    // (otherwise a text is compared at every position).
    bool fillMask = false;
    // The caller runs these models for this compare only (the CLI's compare): once both sides have
    // run a part (the embeddings, each encoder layer), the pages of that part's file-mapped tensors
    // leave this process's resident memory, and every mapped page once the findings are made, so
    // the float reference's weights (500 MB at roberta-base) are never resident all at once. The
    // numbers cannot change (a page read again comes back from the page cache), but a caller that
    // compares again (the GUI) would fault every page in again each time: it leaves this off.
    bool oneShot = false;
};

struct QaAgreement {
    bool sameBestAnswer = false;
    QaAnswer runAnswer;
    QaAnswer referenceAnswer;
    double answerF1 = 0;     // SQuAD token F1 between the two best answers
    ErrorMetrics startLogits;
    ErrorMetrics endLogits;
    // Both sides' n-best answers (qaOptions.topK of them, best first): what the GUI lists.
    std::vector<QaAnswer> runAnswers, referenceAnswers;
    // The windows and both sides' logits, so that callers can draw charts without running the
    // models again, and the windows' special tokens as the tokenizer spells them.
    std::vector<QaWindow> windows;
    std::vector<std::vector<float>> runStartLogits, runEndLogits;
    std::vector<std::vector<float>> referenceStartLogits, referenceEndLogits;
    std::map<int64_t, std::string> specialTokens;
};

struct FillMaskAgreement {
    struct Mask {
        int position = 0;
        bool top1Agrees = false;
        double topKOverlap = 0;      // |top-k(run) n top-k(ref)| / k
        double klDivergence = 0;     // KL(reference || run), nats
        std::vector<std::pair<int64_t, float>> runTop, referenceTop;
        std::vector<MaskPrediction> runPredictions, referencePredictions; // the same with token texts
        std::vector<float> runDistribution, referenceDistribution; // softmax over the vocabulary
    };
    Encoding encoding; // the text's tokens
    std::vector<Mask> masks;
    ErrorMetrics logits;
};

struct ComparisonResult {
    std::string runLabel;          // "fp8", "fp16", "fp8+dl16" (runLabel of linear_plan.h)
    RunSettings run;               // how the run side ran
    // With FP8 attention in some layer: per layer, K and V, and head, how much of E4M3 the shared
    // per-sequence scale leaves each head (empty otherwise).
    std::vector<CastHeadroom> attentionHeadroom;
    std::string referenceLabel;    // "reference (DIR)" or "dequant"
    bool referenceIsStandIn = false;
    std::vector<CapturePointMetrics> points; // execution order
    std::vector<ActivationStatistics> activations;
    std::vector<Finding> findings;           // activation and fp16 headroom diagnostics of the run
    // Every module output of the run against float16's limits (execution order; a runner that does
    // not report ranges leaves it empty), and the run's modules with inf/NaN outputs.
    std::vector<ModuleOutputRange> outputRanges;
    std::vector<std::string> outputRangeLabels; // EncoderLayout::outputModuleLabel of each, for charts
    std::vector<ModuleNonFinite> runNonFinite;
    std::optional<QaAgreement> qa;
    std::optional<FillMaskAgreement> fillMask;
    ErrorMetrics finalLogits;                // the head's logits (all of them)
    // An embedder's, a classifier's or a reranker's rows: flips, cosines, Kendall's tau.
    std::optional<SequenceOutputAgreement> sequence;
    // Every row of the final outputs decides the same on both sides (finalOutputsAgree: the same
    // argmax, every score on the same side of 0, a pooled vector's cosine >= 0.99); false when
    // either side is non-finite. What a head without answers or masks (an embedder, a classifier)
    // agrees by.
    bool outputsAgree = false;
    // The first capture point (execution order) whose values hold NaN or infinity, per side, and
    // whether the final outputs do; "" / false when finite. Agreement is never claimed when
    // either side's outputs are non-finite (top1Agrees and sameBestAnswer are then false).
    std::string runFirstNonFinite, referenceFirstNonFinite;
    bool runOutputsNonFinite = false, referenceOutputsNonFinite = false;
    // One sentence about non-finite values for the user, "" when everything is finite.
    std::string nonFiniteNote;
    double runMs = 0;
    double referenceMs = 0;
};

// The batch a comparison runs, built once from its input: the QA windows, the masked text's
// tokens, or the given ids, with each row's real length. Exposed for tasks that run the same input
// many times (the sensitivity sweep).
struct PreparedComparisonInput {
    EncoderInputs inputs;
    std::vector<QaWindow> windows;
    Encoding maskedText;
    bool isFillMask = false;
    std::vector<std::size_t> lengths;
};
// Throws scalescope::Error when the input does not suit the model or is empty.
PreparedComparisonInput prepareComparisonInput(const InferenceBackend& run, const ComparisonInput& input);

// The final outputs of a run against its reference's, both already computed on `prepared`: the
// head's logits, the QA answers or the fill-mask distributions, and whether each side is finite.
struct FinalOutputComparison {
    ErrorMetrics finalLogits;
    bool outputsAgree = false; // finalOutputsAgree (tasks/final_outputs.h), false when either side is non-finite
    std::optional<SequenceOutputAgreement> sequence; // sequenceOutputAgreement, when both sides are finite
    std::optional<QaAgreement> qa;
    std::optional<FillMaskAgreement> fillMask;
    bool runOutputsNonFinite = false, referenceOutputsNonFinite = false;
};
FinalOutputComparison compareFinalOutputs(const InferenceBackend& run, const ForwardResult& runResult,
                                          const ForwardResult& referenceResult,
                                          const PreparedComparisonInput& prepared, const ComparisonInput& input);

// Where a run's float overrides take their weights (ForwardOptions::floatWeightsFrom): the
// reference's checkpoint when it is a float one; null for none, a stand-in, or an FP8 reference
// (the CPU emulation of the same checkpoint), whose Linears then run their dequantized weights.
const Checkpoint* floatWeightSource(const InferenceBackend* reference);

// Throws scalescope::Error naming both checkpoints when the two models differ in architecture or
// sizes, so that one cannot be measured against the other.
void checkModelsMatch(const InferenceBackend& run, const InferenceBackend& reference);

// reference may be null: then `run` in `dequant` mode is the reference and the result says so.
// Throws scalescope::Error when the two models do not match (architecture, sizes) or the input does
// not suit the model.
ComparisonResult compareRuns(InferenceBackend& run, InferenceBackend* reference, const ComparisonInput& input,
                             const Progress& progress = {});

} // namespace scalescope
