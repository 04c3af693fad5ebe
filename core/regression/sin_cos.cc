#include "core/regression/sin_cos.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace streamreg {
namespace {

// Two lanes (the compiler's generic vectors: SSE2 on x86-64, NEON on
// arm64), so that the selections below are bit masks, not branches.
using Doubles = double __attribute__((vector_size(16)));
using Bits = std::int64_t __attribute__((vector_size(16)));

constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
// pi/2 = kHalfPi1 + kHalfPi2 + kHalfPi3 to 1e-37: 33, 33 and 53 bits.
constexpr double kHalfPi1 = 0x1.921fb544p+0;
constexpr double kHalfPi2 = 0x1.0b4611a6p-34;
constexpr double kHalfPi3 = 0x1.3198a2e037073p-69;
// Added and subtracted, it rounds a double below 2^51 to an integer, and
// leaves that integer (mod 2^51) in the sum's low mantissa bits.
constexpr double kRounder = 0x1.8p52;
constexpr double kLargest = 0x1p20;
constexpr std::int64_t kSignBit = std::int64_t{1} << 63;

// The Taylor coefficients (-1)^k / (2k + 1)! and (-1)^k / (2k)!.
constexpr double Factorial(int n) {
  return n <= 1 ? 1.0 : n * Factorial(n - 1);
}
constexpr double kS3 = -1.0 / Factorial(3), kS5 = 1.0 / Factorial(5),
                 kS7 = -1.0 / Factorial(7), kS9 = 1.0 / Factorial(9),
                 kS11 = -1.0 / Factorial(11), kS13 = 1.0 / Factorial(13),
                 kS15 = -1.0 / Factorial(15), kS17 = 1.0 / Factorial(17);
constexpr double kC4 = 1.0 / Factorial(4), kC6 = -1.0 / Factorial(6),
                 kC8 = 1.0 / Factorial(8), kC10 = -1.0 / Factorial(10),
                 kC12 = 1.0 / Factorial(12), kC14 = -1.0 / Factorial(14),
                 kC16 = 1.0 / Factorial(16);

Doubles Splat(double value) { return Doubles{value, value}; }

// Bits of `when_set` where `mask` is all ones, of `otherwise` where zero.
Doubles Select(Bits mask, Doubles when_set, Doubles otherwise) {
  return (Doubles)((mask & (Bits)when_set) | (~mask & (Bits)otherwise));
}

// Two angles' scaled sines and cosines; `in_range` gets all ones for those
// within kLargest (the others' results are for 0).
[[gnu::always_inline]] inline void SinCosPair(Doubles angle, double scale,
                                              Doubles* sines, Doubles* cosines,
                                              Bits* in_range) {
  const Doubles magnitude = (Doubles)((Bits)angle & ~Bits{kSignBit, kSignBit});
  *in_range = magnitude <= Splat(kLargest);
  const Doubles x = (Doubles)(*in_range & (Bits)angle);
  const Doubles rounded = x * kTwoOverPi + kRounder;
  const Doubles quadrants = rounded - kRounder;
  const Bits quadrant = (Bits)rounded;
  const Doubles r = ((x - quadrants * kHalfPi1) - quadrants * kHalfPi2) -
                    quadrants * kHalfPi3;
  const Doubles z = r * r;
  const Doubles sine_tail =
      kS9 + z * (kS11 + z * (kS13 + z * (kS15 + z * kS17)));
  const Doubles sine =
      r + r * z * (kS3 + z * (kS5 + z * (kS7 + z * sine_tail)));
  const Doubles cosine_tail = kC10 + z * (kC12 + z * (kC14 + z * kC16));
  const Doubles cosine =
      (1.0 - 0.5 * z) + z * z * (kC4 + z * (kC6 + z * (kC8 + z * cosine_tail)));
  // x = r + n pi/2: sin x = sin r, cos r, -sin r, -cos r for n mod 4 =
  // 0..3, and cos x = sin(x + pi/2).
  const Bits odd = (quadrant & 1) != 0;
  const Bits sine_sign = (quadrant & 2) << 62;
  const Bits cosine_sign = ((quadrant + 1) & 2) << 62;
  *sines = (Doubles)((Bits)Select(odd, cosine, sine) ^ sine_sign) * scale;
  *cosines = (Doubles)((Bits)Select(odd, sine, cosine) ^ cosine_sign) * scale;
}

}  // namespace

void SinCos(std::span<const double> angles, double scale,
            std::span<double> sines, std::span<double> cosines) {
  const std::size_t n = angles.size();
  for (std::size_t i = 0; i < n; i += 2) {
    const bool pair = i + 1 < n;
    Doubles angle;
    if (pair) {
      std::memcpy(&angle, angles.data() + i, sizeof angle);
    } else {
      angle = Doubles{angles[i], 0.0};
    }
    Doubles sine, cosine;
    Bits in_range;
    SinCosPair(angle, scale, &sine, &cosine, &in_range);
    if (in_range[0] == 0 || in_range[1] == 0) {
      // Rare: beyond the reduction's range, or not a number.
      for (int lane = 0; lane < 2; ++lane) {
        if (in_range[lane] != 0) continue;
        sine[lane] = scale * std::sin(angle[lane]);
        cosine[lane] = scale * std::cos(angle[lane]);
      }
    }
    if (pair) {
      std::memcpy(sines.data() + i, &sine, sizeof sine);
      std::memcpy(cosines.data() + i, &cosine, sizeof cosine);
    } else {
      sines[i] = sine[0];
      cosines[i] = cosine[0];
    }
  }
}

}  // namespace streamreg
