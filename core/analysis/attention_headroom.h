#pragma once
// The headroom view of AIU FP8 attention (docs/ARCHITECTURE.md "Run modes"): math_fp8 gives each
// sequence ONE scale for K (and one for V) over all heads, from fixed ranges (K 200, V 100). The
// head with the largest |x| sets it and reaches the range; every other head gets the share of
// E4M3's 448 that its own amax / scale reaches, and its small values fall to E4M3's subnormals or
// to zero. This summarises the casts a forward recorded (ForwardResult::attentionCasts), per layer,
// tensor (K or V) and head, over every sequence seen.
//
// Torch-free, pure functions; no errors.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/inference_backend.h"

namespace scalescope {

struct HeadHeadroom {
    int head = 0;
    // The top of the head's range in a sequence: max |x| / scale, the largest E4M3 magnitude its
    // values reach (at most the fixed range). Median and smallest over the sequences.
    double topMedian = 0;
    double topMin = 0;
    // The binades of E4M3 above the head's top that it never uses, log2(448 / top), at the median top.
    double unusedBinades = 0;
    // How many sequences this head set the scale in (its amax was the sequence's).
    std::size_t setsScale = 0;
    // Real-token values, and of them those the cast rounded to zero (x != 0) or to a subnormal.
    int64_t values = 0;
    int64_t zeros = 0;
    int64_t subnormals = 0;
    double zeroShare() const { return values ? double(zeros) / double(values) : 0.0; }
    double subnormalShare() const { return values ? double(subnormals) / double(values) : 0.0; }
};

struct CastHeadroom {
    std::string module;      // roberta.encoder.layer.3.attention.self.key_fp8
    int layer = -1;
    bool key = true;         // K or V
    double range = 0;        // 200 or 100
    std::size_t sequences = 0;
    double scaleMedian = 0;  // the sequences' scales
    std::vector<HeadHeadroom> heads;
    // The head whose median top is lowest, and that top: the one that gets least of the range.
    int tightestHead() const;
    // Over every head: the real-token values and the shares rounded to zero and to a subnormal.
    int64_t values() const;
    double zeroShare() const;
    double subnormalShare() const;
};

// One entry per cast module, in the order first seen (execution order: per layer K then V); records
// of the same module from several forwards are pooled.
std::vector<CastHeadroom> summarizeAttentionHeadroom(const std::vector<AttentionCastRecord>& records);

} // namespace scalescope
