// Hot element-wise loops compiled once per x86 vector width and picked when the program starts by
// the CPU it finds (GCC's function multi-versioning, resolved through the loader): the binary
// stays baseline x86-64 for every machine, and an AVX-512 or AVX2 machine runs its wide lanes.
// The clones compute the same values: each lane does the same float operations in the same order,
// and -ffp-contract=off (core/CMakeLists.txt) keeps the compiler from fusing a multiply and an add
// into one FMA where a clone's target has it.
// GCC only: clang 14 (the fuzz build's compiler) made no clones of fp8.cpp's functions and compiled
// each for its first target alone, AVX-512, which stops with an illegal instruction on an AVX2 CPU.
// Under clang the loops stay baseline x86-64.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(SCALESCOPE_NO_CPU_CLONES)
#define SCALESCOPE_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SCALESCOPE_CPU_CLONES
#endif
