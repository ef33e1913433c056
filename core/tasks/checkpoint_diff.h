#pragma once
// Two quantized checkpoints side by side (`scalescope-cli diff A B`, File > Compare With...):
// what their configs and per-Linear schemes say differently, how their tensors differ (scales as
// ratios and ULPs, FP8 codes in E4M3 steps), and, given inputs, both models' per-capture-point
// metrics against one reference, ranked by how far the two differ.
//
// Tensor verdicts (one rule, stated here and in docs/ARCHITECTURE.md "diff"):
// - FP8 codes are ordered by value: the magnitude bits (0x00..0x7E) count the finite E4M3 values
//   upwards from zero, so code c stands at step (c & 0x7F) on its sign's side and two codes are
//   |step(B) - step(A)| apart, where a negative code's step is negative. +0 and -0 are both step
//   0: the same value, so a swap of zero's sign is not a differing code (it is counted apart, in
//   signedZeroSwaps). A NaN code (0x7F, 0xFF) on either side that the other does not share has no
//   step: counted in nanMismatches.
// - Float elements (scales, biases, LayerNorm, float weights) are compared in the dtype they are
//   stored in when both sides share it: k ULPs = the distance of their bit patterns on the ordered
//   line of that dtype (so one ULP of a bfloat16 scale is one step of bfloat16); when the dtypes
//   differ, in float32. Integer elements (MXFP8's E8M0 exponents) are k units apart. A NaN on one
//   side only is counted in nanMismatches (no ULPs, no ratio); NaN on both sides is no difference.
// - "identical": same dtype, shape and bytes. "same up to one E4M3 step": same dtype and shape,
//   every FP8 code within one step, every other element within one ULP, and no NaN mismatch.
//   "different": anything else, with the exact counts.
// Threading: plain functions over immutable checkpoints. Errors: scalescope::Error naming the file.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "tasks/compare_runs.h"
#include "tasks/squad_dataset.h"

namespace scalescope {

inline const char* const kDiffIdentical = "identical";
inline const char* const kDiffWithinOneStep = "same up to one E4M3 step";
inline const char* const kDiffDifferent = "different";

struct FieldDifference {
    std::string field; // "weights.strategy", "config.quantization_config.format", "consumer aiu"
    std::string a, b; // each side's value as text ("(none)" when absent)
};

struct LinearDifference {
    std::string module;
    std::vector<FieldDifference> differences;
};

struct TensorDifference {
    std::string name;
    std::string verdict; // kDiffIdentical, kDiffWithinOneStep or kDiffDifferent
    std::string dtypeA, dtypeB;
    std::vector<int64_t> shapeA, shapeB;
    int64_t elements = 0; // compared elements (0 when the shapes differ)
    bool fp8Codes = false; // both sides F8_E4M3
    // FP8 codes: codes whose values differ, how many steps apart (|steps| -> count), and the rest.
    int64_t codesDiffering = 0;
    std::map<int64_t, int64_t> codeStepHistogram;
    int64_t nanMismatches = 0;
    int64_t signedZeroSwaps = 0;
    // Other elements: how many differ, their largest distance in ULPs (of ulpUnit), the count one
    // ULP apart, and the range of B / A over the elements where A is non-zero (NaN when none).
    int64_t valuesDiffering = 0;
    int64_t valuesOneUlpApart = 0;
    uint64_t maxUlps = 0;
    std::map<uint64_t, int64_t> ulpHistogram; // ULPs apart -> count, over the differing elements
    std::string ulpUnit; // "F32", "BF16", "F16", "U8", ...: the dtype the ULPs count in
    double ratioMin = 0, ratioMax = 0;
    bool hasRatio = false;
};

struct CheckpointDiff {
    std::string a, b; // the folders
    std::vector<FieldDifference> config; // config.json leaves and consumer verdicts that differ
    std::vector<LinearDifference> linears; // only Linears with differences; union by module name, A's order
    std::vector<TensorDifference> tensors; // every tensor in both, sorted by name
    std::vector<std::string> onlyInA, onlyInB; // tensor names
    bool identical() const;
};

// Works for any two checkpoints (a different model shows as config and tensor differences).
CheckpointDiff diffCheckpoints(const Checkpoint& a, const Checkpoint& b);

// Throws scalescope::Error naming both folders when A and B are not the same model (architecture
// or sizes differ), so that their runs cannot be set side by side.
void checkSameModel(const Checkpoint& a, const Checkpoint& b);

// The FP8 step of a code (see above): (c & 0x7F) for a positive code, -(c & 0x7F) for a negative
// one, both zeros 0. Meaningless for NaN codes.
int fp8Step(uint8_t code);
// How many values of the stored dtype lie between two finite elements (their ordered bit patterns'
// distance); the same float is 0, +0/-0 are 0. F32, F16, BF16, F64 only.
uint64_t ulpDistance(const uint8_t* a, const uint8_t* b, Dtype dtype);

// Both models' metrics against one reference, per capture point.
struct PointDifference {
    std::string name;
    std::string label;
    CaptureKind kind = CaptureKind::LinearOutput;
    ErrorMetrics a, b;
    double sqnrDifferenceDb = 0; // b.sqnrDb - a.sqnrDb (inf when one side is exact, 0 when both are)
};

struct DiffMetrics {
    std::string referenceLabel; // "reference (DIR)" or "dequant of A (DIR)"
    bool referenceIsStandIn = false;
    std::string inputKind; // "qa", "text", "ids", "squad"
    std::size_t samples = 1;
    // Each side as a comparison (for squad: points averaged over the questions, in dB for SQNR),
    // for the charts of compare to draw and overlay.
    ComparisonResult runA, runB;
    std::vector<PointDifference> points; // execution order
    std::vector<std::size_t> ranked; // indices into points, largest |sqnrDifferenceDb| first
};

// reference null: A in dequant mode is the reference of both (compare's stand-in rule, taken from
// A). With squad, `input`'s QA options apply to each of the first maxSamples questions (0: all).
// Throws scalescope::Error when the models do not match each other (checkSameModel) or the reference.
DiffMetrics diffMetrics(InferenceBackend& a, InferenceBackend& b, InferenceBackend* reference,
    const ComparisonInput& input, const SquadDataset* squad = nullptr, std::size_t maxSamples = 0,
    const Progress& progress = {});

// runA's and runB's capture points side by side into `points` (execution order) and `ranked`
// (largest |sqnrDifferenceDb| first, an undefined one first of all): the ranking diffMetrics and
// the GUI's Compare banner share. Throws scalescope::Error when the two recorded other points.
void rankPointDifferences(DiffMetrics& metrics);

// The fields of one Linear as the inspector shows them for one side: "weights channel (F8_E4M3),
// scales 0.0012..0.0044; activations dynamic token" in a line.
std::string linearSchemeLine(const Checkpoint& checkpoint, const std::string& module);

} // namespace scalescope
