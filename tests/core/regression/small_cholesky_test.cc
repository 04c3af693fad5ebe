// The small Cholesky solver against Eigen's Householder QR on random
// symmetric positive definite systems of every size the local linear fits
// use, its refusals (not positive definite, not finite), and the last row
// of the solution from the forward substitution alone, bit for bit; and the
// scalar code's bits from its vector code.
#include "core/regression/small_cholesky.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "Eigen/Dense"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

using RowMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A = R^T R + 0.1 I with R n x n standard normal: well enough conditioned.
RowMatrix RandomSpd(std::size_t n, std::mt19937_64& random) {
  std::normal_distribution<double> normal(0.0, 1.0);
  RowMatrix r(n, n);
  for (Eigen::Index i = 0; i < r.size(); ++i) r.data()[i] = normal(random);
  RowMatrix a = r.transpose() * r;
  a.diagonal().array() += 0.1;
  return a;
}

RowMatrix RandomMatrix(std::size_t rows, std::size_t columns,
                       std::mt19937_64& random) {
  std::normal_distribution<double> normal(0.0, 1.0);
  RowMatrix b(rows, columns);
  for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = normal(random);
  return b;
}

std::span<double> Span(RowMatrix& m) {
  return {m.data(), static_cast<std::size_t>(m.size())};
}
std::span<const double> ConstSpan(const RowMatrix& m) {
  return {m.data(), static_cast<std::size_t>(m.size())};
}

TEST(SmallCholeskyTest, SolvesLikeQrAtEverySize) {
  std::mt19937_64 random(7);
  SmallCholesky cholesky;
  for (std::size_t n : {1, 2, 3, 5, 8, 22, 33, 65}) {
    for (std::size_t m : {1, 3, 7}) {
      const RowMatrix a = RandomSpd(n, random);
      const RowMatrix b = RandomMatrix(n, m, random);
      const RowMatrix expected = a.householderQr().solve(b);
      ASSERT_TRUE(cholesky.Factor(ConstSpan(a), n)) << n;
      EXPECT_EQ(cholesky.size(), n);
      RowMatrix x = b;
      cholesky.Solve(Span(x), m);
      EXPECT_LE((x - expected).cwiseAbs().maxCoeff(),
                1e-9 * (1.0 + expected.cwiseAbs().maxCoeff()))
          << "n " << n << " m " << m;
      // The factor itself: L L^T = A.
      RowMatrix identity = RowMatrix::Identity(n, n);
      cholesky.SolveLower(Span(identity), n);  // L^{-1}
      const RowMatrix l = identity.inverse();
      EXPECT_LE((l * l.transpose() - a).cwiseAbs().maxCoeff(),
                1e-9 * a.cwiseAbs().maxCoeff());
      EXPECT_LE(l.triangularView<Eigen::StrictlyUpper>()
                    .toDenseMatrix()
                    .cwiseAbs()
                    .maxCoeff(),
                1e-9 * l.cwiseAbs().maxCoeff());
    }
  }
}

// The factor and solves as scalar code, in the solver's order of
// operations: its vector code (SSE2 or AVX2, whichever this CPU runs) must
// give these bits.
struct ScalarCholesky {
  static double Dot(const double* a, const double* b, std::size_t count) {
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    std::size_t k = 0;
    for (; k + 4 <= count; k += 4) {
      for (std::size_t lane = 0; lane < 4; ++lane) {
        s[lane] += a[k + lane] * b[k + lane];
      }
    }
    for (; k < count; ++k) s[0] += a[k] * b[k];
    return (s[0] + s[1]) + (s[2] + s[3]);
  }
  ScalarCholesky(const RowMatrix& a, std::size_t n)
      : n(n), l(n * n, 0.0), inverse(n) {
    for (std::size_t i = 0; i < n; ++i) {
      double* row = l.data() + i * n;
      for (std::size_t j = 0; j < i; ++j) {
        row[j] = (a(Eigen::Index(i), Eigen::Index(j)) -
                  Dot(row, l.data() + j * n, j)) *
                 inverse[j];
      }
      row[i] =
          std::sqrt(a(Eigen::Index(i), Eigen::Index(i)) - Dot(row, row, i));
      inverse[i] = 1.0 / row[i];
    }
  }
  void Solve(RowMatrix& b) const {
    const std::size_t m = static_cast<std::size_t>(b.cols());
    double* x = b.data();
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t k = 0; k < i; ++k) {
        for (std::size_t c = 0; c < m; ++c) {
          x[i * m + c] -= l[i * n + k] * x[k * m + c];
        }
      }
      for (std::size_t c = 0; c < m; ++c) x[i * m + c] *= inverse[i];
    }
    for (std::size_t i = n; i-- > 0;) {
      for (std::size_t k = i + 1; k < n; ++k) {
        for (std::size_t c = 0; c < m; ++c) {
          x[i * m + c] -= l[k * n + i] * x[k * m + c];
        }
      }
      for (std::size_t c = 0; c < m; ++c) x[i * m + c] *= inverse[i];
    }
  }
  std::size_t n;
  std::vector<double> l;
  std::vector<double> inverse;
};

TEST(SmallCholeskyTest, GivesTheScalarCodesBitsOnEveryCpu) {
  std::mt19937_64 random(5);
  SmallCholesky cholesky;
  for (std::size_t n : {1, 3, 5, 9, 22}) {
    for (std::size_t m : {1, 2, 3, 5, 7, 14}) {
      const RowMatrix a = RandomSpd(n, random);
      RowMatrix b = RandomMatrix(n, m, random);
      const ScalarCholesky scalar(a, n);
      ASSERT_TRUE(cholesky.Factor(ConstSpan(a), n));
      RowMatrix x = b;
      cholesky.Solve(Span(x), m);
      scalar.Solve(b);
      for (Eigen::Index e = 0; e < x.size(); ++e) {
        ASSERT_EQ(x.data()[e], b.data()[e])
            << "n " << n << " m " << m << " entry " << e;
      }
    }
  }
}

TEST(SmallCholeskyTest, ReadsOnlyTheLowerTriangle) {
  std::mt19937_64 random(11);
  const std::size_t n = 6;
  const RowMatrix a = RandomSpd(n, random);
  RowMatrix lower_only = a;
  lower_only.triangularView<Eigen::StrictlyUpper>().setConstant(
      std::numeric_limits<double>::quiet_NaN());
  const RowMatrix b = RandomMatrix(n, 2, random);
  SmallCholesky full, lower;
  ASSERT_TRUE(full.Factor(ConstSpan(a), n));
  ASSERT_TRUE(lower.Factor(ConstSpan(lower_only), n));
  RowMatrix x = b, y = b;
  full.Solve(Span(x), 2);
  lower.Solve(Span(y), 2);
  EXPECT_EQ(x, y);
}

TEST(SmallCholeskyTest, TheLastRowNeedsOnlyTheForwardSubstitution) {
  std::mt19937_64 random(3);
  SmallCholesky cholesky;
  for (std::size_t n : {1, 4, 22}) {
    const RowMatrix a = RandomSpd(n, random);
    const RowMatrix b = RandomMatrix(n, 7, random);
    ASSERT_TRUE(cholesky.Factor(ConstSpan(a), n));
    RowMatrix full = b, forward = b;
    cholesky.Solve(Span(full), 7);
    cholesky.SolveLower(Span(forward), 7);
    std::vector<double> last(7);
    cholesky.LastRowOfSolution(ConstSpan(forward), 7, last);
    for (std::size_t c = 0; c < 7; ++c) {
      EXPECT_EQ(last[c], full(static_cast<Eigen::Index>(n - 1),
                              static_cast<Eigen::Index>(c)))
          << "n " << n << " column " << c;
    }
  }
}

TEST(SmallCholeskyTest, RefusesWhatIsNotPositiveDefinite) {
  SmallCholesky cholesky;
  // Singular: rank 1.
  const std::vector<double> singular = {1.0, 2.0, 2.0, 4.0};
  EXPECT_FALSE(cholesky.Factor(singular, 2));
  EXPECT_EQ(cholesky.size(), 0u);
  // Indefinite.
  const std::vector<double> indefinite = {1.0, 0.0, 0.0, -1.0};
  EXPECT_FALSE(cholesky.Factor(indefinite, 2));
  // Not finite.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(cholesky.Factor(std::vector<double>{nan}, 1));
  EXPECT_FALSE(cholesky.Factor(
      std::vector<double>{std::numeric_limits<double>::infinity()}, 1));
  // Refused, then accepted again.
  EXPECT_TRUE(cholesky.Factor(std::vector<double>{4.0}, 1));
  std::vector<double> x = {2.0};
  cholesky.Solve(x, 1);
  EXPECT_EQ(x[0], 0.5);
}

}  // namespace
}  // namespace streamreg
