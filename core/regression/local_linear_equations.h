#ifndef STREAMREG_CORE_REGRESSION_LOCAL_LINEAR_EQUATIONS_H_
#define STREAMREG_CORE_REGRESSION_LOCAL_LINEAR_EQUATIONS_H_

#include <cstddef>
#include <span>
#include <vector>

#include "core/regression/small_cholesky.h"

namespace streamreg {

// The ridge normal equations of a linear fit to m targets over rows v_j (d
// coordinates each, offsets from the point the fit is at):
//   minimize sum_j |y_j - a - B^T v_j|^2 + ridge |B|^2
// (the intercept a is not shrunk), i.e. (G + ridge diag(1, ..., 1, 0))
// theta = C with the design rows (v_j, 1): theta's rows 0 .. d - 1 are B,
// row d the intercepts. The intercept comes last so that it is the one
// unknown a forward substitution alone gives (SmallCholesky). Rows are
// added in batches, so that a fit over each prefix of one list of
// neighbours costs one pass over the list. What the local linear regressor
// and the metric's slope estimates (Xia et al.'s OPG) both solve.
class LocalLinearEquations {
 public:
  // Empty equations in d coordinates and m targets; with `residuals`, the
  // targets' squares are summed too, as FitTargets needs (the values alone,
  // Intercepts and Solve, do not pay for them).
  void Reset(std::size_t d, std::size_t m, bool residuals = false);

  // Adds `rows` rows: their coordinates from `offsets` (d each, rows
  // `offset_stride` apart) and targets from `targets` (m each, rows
  // `target_stride` apart).
  void Add(const double* offsets, std::size_t offset_stride,
           const double* targets, std::size_t target_stride, std::size_t rows);

  // The number of rows added since Reset.
  std::size_t rows() const { return rows_; }
  std::size_t dim() const { return d_; }

  // Makes these the equations of `full`'s rows over their first
  // `coordinates` coordinates (at most full.dim()): the leading block of
  // its sums, the intercept's row and column with it, in
  // O(coordinates x (coordinates + m)) instead of a pass over the rows.
  void CopyLeading(const LocalLinearEquations& full, std::size_t coordinates);

  // Factors the system with `ridge` on the slopes. False if it is not
  // positive definite (ridge 0 and too few rows, or values not finite).
  bool Factor(double ridge);

  // After a successful Factor: the m intercepts.
  void Intercepts(std::span<double> out);

  // After a successful Factor: theta, row-major (d + 1) x m (rows 0 .. d - 1
  // the slopes, row d the intercepts); valid until the next call.
  std::span<const double> Solve();

  // After a successful Factor: each listed target's intercept a_t and the
  // residual sum of squares of its fit over the rows added,
  //   sum_j (y_jt - a_t - B_t^T v_j)^2 = yy_t - theta_t^T C_t - ridge |B_t|^2
  // (the ridge objective's minimum, yy - theta^T C, less its penalty), from
  // the sums alone: the listed columns are solved, and each sum of squares
  // costs O(d), not a pass over the rows. Out spans are as long as
  // `targets`; false if a value is not finite, or the squares were not
  // summed (Reset without `residuals`).
  bool FitTargets(std::span<const std::size_t> targets,
                  std::span<double> intercepts,
                  std::span<double> residual_squares);

 private:
  // Adds the rows' shifted targets' squares (the rows not yet counted).
  void AddSquares(const double* targets, std::size_t target_stride,
                  std::size_t rows);

  std::size_t d_ = 0;
  std::size_t m_ = 0;
  std::size_t rows_ = 0;
  bool residuals_ = false;
  double ridge_ = 0.0;  // the last Factor's
  // Row-major, in plain vectors so that headers do not carry Eigen: G
  // ((d + 1)^2, lower triangle used), C ((d + 1) x m), G + the ridge, and
  // theta (all m columns, or the listed ones).
  std::vector<double> gram_;
  std::vector<double> cross_;
  std::vector<double> system_;
  std::vector<double> solution_;
  // The first row's targets, and sum_j (y_jt - shift_t)^2 per target: the
  // residuals' sums of squares are found with the targets less the shift
  // (which the unshrunk intercept absorbs), so that yy_t is near the
  // residuals' scale, not the square of the targets' mean.
  std::vector<double> shift_;
  std::vector<double> shifted_squares_;
  SmallCholesky cholesky_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_REGRESSION_LOCAL_LINEAR_EQUATIONS_H_
