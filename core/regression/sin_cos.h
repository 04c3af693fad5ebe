#ifndef STREAMREG_CORE_REGRESSION_SIN_COS_H_
#define STREAMREG_CORE_REGRESSION_SIN_COS_H_

#include <span>

namespace streamreg {

// scale * sin(x) and scale * cos(x) for every angle x: what random Fourier
// features spend most of their time on (RandomFeaturePredictor), at a few
// nanoseconds an angle instead of libm's two calls. Each angle is reduced
// to r in [-pi/4, pi/4] by x - n pi/2, n the nearest integer to x 2/pi,
// with pi/2 in three parts (Cody & Waite 1980: exact products for
// |n| < 2^20), and sin r, cos r are their Taylor series to r^17 and r^16
// (truncation below 1e-17); n mod 4 picks and signs them, by bit masks.
// Plain double arithmetic in two-lane vectors (SSE2 on x86-64), no fused
// multiply-add (the build forbids them): every machine gets the same
// bits. Angles beyond 2^20 in magnitude (and NaN) take std::sin and
// std::cos. Within 4 units in the last place of them (its test); 7 ns an
// angle for both against libm's 14 on this project's bench machine.
// `sines` may be `angles` itself.
void SinCos(std::span<const double> angles, double scale,
            std::span<double> sines, std::span<double> cosines);

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_SIN_COS_H_
