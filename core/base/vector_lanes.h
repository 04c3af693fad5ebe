#ifndef STREAMREG_CORE_BASE_VECTOR_LANES_H_
#define STREAMREG_CORE_BASE_VECTOR_LANES_H_

#include <cstddef>
#include <cstring>

namespace streamreg {

// Four doubles operated on together, for the numeric kernels compiled
// twice — for every x86-64 CPU (two SSE2 registers a vector) and, where
// RunsAvx2(), for AVX2 (one register) — that must give the same bits on
// both: each lane's operations are the scalar code's, in its order, and
// the build never fuses a multiply and an add (-ffp-contract=off). A
// scalar operand is broadcast.
using Lanes = double __attribute__((vector_size(32)));
inline constexpr std::size_t kLanes = sizeof(Lanes) / sizeof(double);

// Vectors are copied in and out with memcpy, as rows are not aligned, and
// passed by reference: a function that took or returned one by value would
// change the ABI between the two widths.
[[gnu::always_inline]] inline void LoadLanes(const double* p, Lanes& lanes) {
  std::memcpy(&lanes, p, sizeof lanes);
}

[[gnu::always_inline]] inline void StoreLanes(const Lanes& lanes, double* p) {
  std::memcpy(p, &lanes, sizeof lanes);
}

// Whether the AVX2 code runs: on a CPU that has AVX2, unless the
// environment sets STREAMREG_NO_AVX2 (which runs the SSE2 code, e.g. to
// check that both learn the same); false off x86-64.
bool RunsAvx2();

// Compiles a function for AVX2 (to be called where RunsAvx2(); off x86-64,
// for the CPU's own vectors).
#if defined(__x86_64__)
#define STREAMREG_FOR_AVX2 [[gnu::target("avx2")]]
#else
#define STREAMREG_FOR_AVX2
#endif

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_VECTOR_LANES_H_
