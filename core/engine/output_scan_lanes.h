#pragma once
// The row scan under scanOutput (activation_kernels.h), one version per instruction set: every
// module output of every forward passes through it. row() takes the widest this CPU runs, decided
// once at the first call; the others stay callable so that tests compare them on any machine that
// runs them. Every version gives the same result: a maximum and counts do not depend on the
// order they are taken in, and the scalar tail is shared.
#include <cstdint>

#include "engine/activation_kernels.h"

namespace scalescope::scan_lanes {

// One row: |x| maximum starting from maxAbs (NaN never wins), the inf/NaN count, and the count
// of 0 < |x| < 2^-14; elements = features.
OutputScan row(const float* values, int64_t features, float maxAbs);
// Four lanes where SSE2 is there (every x86-64), else the scalar loop: runs on every CPU.
OutputScan portableRow(const float* values, int64_t features, float maxAbs);
// Whether this build has the AVX-512 version and the CPU runs it (AVX-512F, checked at run time).
bool avx512Available();
// Sixteen lanes in one AVX-512 register; call only when avx512Available().
OutputScan avx512Row(const float* values, int64_t features, float maxAbs);

} // namespace scalescope::scan_lanes
