// The MLKR map a model learns (MlkrMap) and its batch refresh
// (MlkrRefresh): what they compute, against direct computations.
#include "core/metric/mlkr_map.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/metric/mlkr_fit.h"
#include "core/metric/mlkr_fit_exchange.h"
#include "core/metric/mlkr_refresh.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

double Norm(std::span<const double> v) {
  double sum = 0.0;
  for (double x : v) sum += x * x;
  return std::sqrt(sum);
}

MlkrMap KnownMap() {
  MlkrMap map;
  // A = [[1, 2, 0], [0, -1, 3]]: rank 2 in 3 inputs.
  map.Install(2, {1.0, 2.0, 0.0, 0.0, -1.0, 3.0}, 0.1);
  return map;
}

TEST(MlkrMapTest, ItsMetricIsATransposeA) {
  const LearnedMetric metric = KnownMap().Metric(3);
  EXPECT_EQ(metric.kind, MetricKind::kMlkr);
  EXPECT_EQ(metric.rank, 2u);
  const std::vector<double> expected = {1, 2, 0, 2, 5, -3, 0, -3, 9};
  EXPECT_EQ(metric.matrix, expected);
  EXPECT_EQ(metric.weights, (std::vector<double>{1, 5, 9}));
  // The spectrum: the squared singular values of A, whose sum is |A|_F^2
  // (= 15), and a zero beyond the rank.
  ASSERT_EQ(metric.eigenvalues.size(), 3u);
  EXPECT_NEAR(metric.eigenvalues[0] + metric.eigenvalues[1], 15.0, 1e-12);
  EXPECT_NEAR(metric.eigenvalues[2], 0.0, 1e-12);
  // Unknown: no information, all zero.
  const LearnedMetric unknown = MlkrMap().Metric(3);
  EXPECT_EQ(unknown.rank, 0u);
  EXPECT_EQ(unknown.weights, (std::vector<double>{0, 0, 0}));
}

TEST(MlkrMapTest, AStepFollowsTheGradientAndNeverMovesTheMapFar) {
  MlkrMap map = KnownMap();
  // A small gradient: the fit's step (0.1) times it.
  map.Step(std::vector<double>{0.01, 0, 0, 0, 0, -0.02});
  EXPECT_DOUBLE_EQ(map.a()[0], 1.0 - 0.001);
  EXPECT_DOUBLE_EQ(map.a()[5], 3.0 + 0.002);
  EXPECT_EQ(map.online_steps(), 1u);
  // A huge one: moved by 1% of |A| along it.
  const std::vector<double> before(map.a().begin(), map.a().end());
  const std::vector<double> huge = {1e6, 0, 0, 0, 0, 0};
  map.Step(huge);
  EXPECT_NEAR(before[0] - map.a()[0], MlkrMap::kMaxRelativeStep * Norm(before),
              1e-12);
  // One that is not finite, or of another shape: nothing.
  const std::vector<double> moved(map.a().begin(), map.a().end());
  map.Step(std::vector<double>{std::numeric_limits<double>::quiet_NaN(), 0, 0,
                               0, 0, 0});
  map.Step(std::vector<double>{1.0});
  EXPECT_EQ(std::vector<double>(map.a().begin(), map.a().end()), moved);
  EXPECT_EQ(map.online_steps(), 2u);
  // An unknown map takes no step.
  MlkrMap unknown;
  unknown.Step(huge);
  EXPECT_FALSE(unknown.known());
}

TEST(MlkrMapTest, SavesExactlyAndRefusesAnotherShape) {
  MlkrMap map = KnownMap();
  map.Step(std::vector<double>{0.5, 0.25, 0, 0, 0, 0});
  std::string bytes;
  ByteWriter out(&bytes);
  map.Save(out);
  MlkrMap back;
  ByteReader in(bytes);
  ASSERT_TRUE(back.Load(in, 3));
  EXPECT_EQ(std::vector<double>(back.a().begin(), back.a().end()),
            std::vector<double>(map.a().begin(), map.a().end()));
  EXPECT_EQ(back.rank(), 2u);
  EXPECT_EQ(back.step(), map.step());
  EXPECT_EQ(back.online_steps(), 1u);
  ByteReader other(bytes);
  EXPECT_FALSE(back.Load(other, 4));  // 6 values are not 2 x 4
  const std::string cut = bytes.substr(0, bytes.size() - 3);
  ByteReader truncated(cut);
  EXPECT_FALSE(back.Load(truncated, 3));
}

// n samples of 3 inputs with y = 3 x_0 + sin(2 x_1): a line in x_0 and a
// curve in x_1; x_2 is noise.
struct Rows {
  std::vector<double> x, y;
  CopySlotRows copy() const {
    return [this](std::size_t begin, std::size_t end, std::vector<double>* xs,
                  std::vector<double>* ys) {
      xs->assign(x.begin() + begin * 3, x.begin() + end * 3);
      if (ys != nullptr) ys->assign(y.begin() + begin, y.begin() + end);
    };
  }
};

Rows MakeRows(std::size_t n) {
  std::mt19937_64 random(4);
  std::uniform_real_distribution<double> uniform(-1.7, 1.7);
  Rows rows;
  for (std::size_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) rows.x.push_back(uniform(random));
    rows.y.push_back(3.0 * rows.x[i * 3] + std::sin(2.0 * rows.x[i * 3 + 1]));
  }
  return rows;
}

MlkrRefresh::Job JobFor(const Rows& rows) {
  // Standardization by the known centre (0) and scale of U(-1.7, 1.7).
  const double scale = 1.7 / std::sqrt(3.0);
  MlkrRefresh::Job job(
      MetricTransform::Standardizing({0, 0, 0}, {scale, scale, scale}));
  job.target_scales = {1.0};
  job.targets = {kAllTargets};
  job.start = {MlkrMap()};
  job.options.neighbors = 32;
  job.options.max_steps = 80;
  job.num_slots = rows.y.size();
  return job;
}

TEST(MlkrRefreshTest, FitsTheStridedStandardizedSamplesAsFitMlkrDoes) {
  const Rows rows = MakeRows(900);
  MlkrRefresh::Job job = JobFor(rows);
  job.max_samples = 300;
  EXPECT_EQ(MlkrRefresh::Stride(900, 300), 3u);
  EXPECT_EQ(MlkrRefresh::Stride(901, 300), 4u);
  EXPECT_EQ(MlkrRefresh::Stride(300, 300), 1u);
  EXPECT_EQ(MlkrRefresh::Stride(900, 0), 1u);
  const std::vector<MlkrMap> fitted = MlkrRefresh::Run(job, rows.copy());
  ASSERT_EQ(fitted.size(), 1u);
  ASSERT_TRUE(fitted[0].known());
  // The same fit by hand: every third sample, standardized.
  std::vector<double> x, y;
  const double scale = 1.7 / std::sqrt(3.0);
  for (std::size_t i = 0; i < 900; i += 3) {
    for (int k = 0; k < 3; ++k) x.push_back(rows.x[i * 3 + k] / scale);
    y.push_back(rows.y[i]);
  }
  const MlkrSamples samples{300, 3, 1, x, y};
  MlkrFitOptions options = job.options;
  const absl::StatusOr<MlkrFit> fit =
      FitMlkr(samples, InitialMlkrMap(samples), options);
  ASSERT_TRUE(fit.ok());
  // (To rounding: the standardization multiplies by 1 / scale.)
  ASSERT_EQ(fitted[0].a().size(), fit->a.size());
  for (std::size_t k = 0; k < fit->a.size(); ++k) {
    EXPECT_NEAR(fitted[0].a()[k], fit->a[k], 1e-9 * Norm(fit->a)) << k;
  }
  EXPECT_NEAR(fitted[0].step(), fit->step, 1e-9 * fit->step);
}

// A known map's fit descends from the paper's initial map and from the map
// (the lower objective wins), or, once the map is settled
// (Job::also_from_initial_map false), from the map alone.
TEST(MlkrRefreshTest, AKnownMapAlsoDescendsFromTheInitialMapUnlessSettled) {
  const Rows rows = MakeRows(400);
  MlkrRefresh::Job job = JobFor(rows);
  // A poor start: the noise input x_2 weighs most.
  MlkrMap poor;
  poor.Install(3, {0.2, 0, 0, 0, 0.2, 0, 0, 0, 3.0}, 1.0);
  job.start = {poor};
  std::vector<double> x, y;
  const double scale = 1.7 / std::sqrt(3.0);
  for (std::size_t i = 0; i < 400; ++i) {
    for (int k = 0; k < 3; ++k) x.push_back(rows.x[i * 3 + k] / scale);
    y.push_back(rows.y[i]);
  }
  const MlkrSamples samples{400, 3, 1, x, y};
  const absl::StatusOr<MlkrFit> onward =
      FitMlkr(samples, poor.Square(3), job.options);
  const absl::StatusOr<MlkrFit> initial =
      FitMlkr(samples, InitialMlkrMap(samples), job.options);
  ASSERT_TRUE(onward.ok());
  ASSERT_TRUE(initial.ok());
  // The descent from the poor map ends worse than the one from the initial
  // map: the flag decides which map is fitted.
  ASSERT_LT(initial->loss, onward->loss);
  const auto expect_fit = [](const MlkrMap& map, const MlkrFit& fit) {
    ASSERT_EQ(map.a().size(), fit.a.size());
    for (std::size_t k = 0; k < fit.a.size(); ++k) {
      EXPECT_NEAR(map.a()[k], fit.a[k], 1e-9 * Norm(fit.a)) << k;
    }
  };
  job.also_from_initial_map = true;
  expect_fit(MlkrRefresh::Run(job, rows.copy())[0],
             onward->loss <= initial->loss ? *onward : *initial);
  job.also_from_initial_map = false;
  expect_fit(MlkrRefresh::Run(job, rows.copy())[0], *onward);
  // An unknown map is fitted from the initial map whatever the flag says.
  job.start = {MlkrMap()};
  expect_fit(MlkrRefresh::Run(job, rows.copy())[0], *initial);
}

TEST(MlkrRefreshTest, FitsTheResidualsUnderTheLinearBase) {
  const Rows rows = MakeRows(800);
  // The base: the ridge fit of y on x, which takes the line 3 x_0.
  OnlineRidge base(3, 1, 1e-6, 1.0);
  for (std::size_t i = 0; i < 800; ++i) {
    base.Add({rows.x.data() + i * 3, 3}, {rows.y.data() + i, 1});
  }
  MlkrRefresh::Job plain = JobFor(rows);
  MlkrRefresh::Job residual = JobFor(rows);
  residual.base = base;
  const LearnedMetric on_y = MlkrRefresh::Run(plain, rows.copy())[0].Metric(3);
  const LearnedMetric on_residual =
      MlkrRefresh::Run(residual, rows.copy())[0].Metric(3);
  // On y, x_0 (slope 3) weighs most; on the residual (the curve in x_1
  // left once the base has the line), x_1 does.
  EXPECT_GT(on_y.weights[0], on_y.weights[1]);
  EXPECT_GT(on_residual.weights[1], 2.0 * on_residual.weights[0]);
  // x_2 never matters.
  EXPECT_LT(on_residual.weights[2], 0.2 * on_residual.weights[1]);
}

// An exchange that records what is shared, computing first or not.
class RecordingExchange : public MlkrFitExchange {
 public:
  explicit RecordingExchange(bool computes_first)
      : computes_first_(computes_first) {}
  bool ComputesFirst() const override { return computes_first_; }
  void Share(std::uint64_t fit, const std::vector<MlkrMap>& maps) override {
    std::lock_guard<std::mutex> lock(mutex_);
    shared_.emplace_back(fit, maps);
  }
  std::vector<std::pair<std::uint64_t, std::vector<MlkrMap>>> shared() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return shared_;
  }

 private:
  const bool computes_first_;
  mutable std::mutex mutex_;
  std::vector<std::pair<std::uint64_t, std::vector<MlkrMap>>> shared_;
};

bool SameMaps(const std::vector<MlkrMap>& a, const std::vector<MlkrMap>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k].rank() != b[k].rank() || !std::ranges::equal(a[k].a(), b[k].a()) ||
        a[k].step() != b[k].step()) {
      return false;
    }
  }
  return true;
}

bool Ready(const std::shared_future<std::vector<MlkrMap>>& result) {
  return result.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

TEST(MlkrRefreshSharingTest, AFitComputedHereIsSharedFirstOrOnceWaitedFor) {
  const Rows rows = MakeRows(600);
  const std::vector<MlkrMap> direct =
      MlkrRefresh::Run(JobFor(rows), rows.copy());
  for (const bool computes_first : {true, false}) {
    SCOPED_TRACE(computes_first);
    auto exchange = std::make_shared<RecordingExchange>(computes_first);
    MlkrRefresh refresh;
    refresh.SetExchange(exchange);
    refresh.Start(JobFor(rows), rows.copy(), 600);
    // Computed as it starts, or (held back) once Finish waits for it, as
    // the learner at the take-over point does; shared either way.
    EXPECT_TRUE(SameMaps(refresh.Finish(), direct));
    ASSERT_EQ(exchange->shared().size(), 1u);
    EXPECT_EQ(exchange->shared()[0].first, 600u);
    EXPECT_TRUE(SameMaps(exchange->shared()[0].second, direct));
    EXPECT_EQ(refresh.computed(), 1u);
    EXPECT_EQ(refresh.taken(), 0u);
  }
}

TEST(MlkrRefreshSharingTest, AHeldFitEndsWithTheResultOfferedForIt) {
  const Rows rows = MakeRows(600);
  auto exchange = std::make_shared<RecordingExchange>(false);
  MlkrRefresh refresh;
  refresh.SetExchange(exchange);
  refresh.Start(JobFor(rows), rows.copy(), 600);
  // An offer for an earlier fit is dropped.
  EXPECT_FALSE(refresh.Offer(599, {KnownMap()}));
  // Held back: nothing computes it meanwhile.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(refresh.computed(), 0u);
  // The offer for it is its result, whatever a fit would give.
  EXPECT_TRUE(refresh.Offer(600, {KnownMap()}));
  EXPECT_TRUE(SameMaps(refresh.Finish(), {KnownMap()}));
  EXPECT_EQ(refresh.taken(), 1u);
  EXPECT_EQ(refresh.computed(), 0u);
  EXPECT_TRUE(exchange->shared().empty());
  // Once taken, another offer for it changes nothing.
  EXPECT_FALSE(refresh.Offer(600, {MlkrMap()}));
}

TEST(MlkrRefreshSharingTest, AResultOfferedBeforeItsFitStartsIsTakenAtStart) {
  const Rows rows = MakeRows(600);
  MlkrRefresh refresh;
  refresh.SetExchange(std::make_shared<RecordingExchange>(false));
  EXPECT_TRUE(refresh.Offer(700, {MlkrMap()}));  // a later fit: kept
  EXPECT_TRUE(refresh.Offer(600, {KnownMap()}));
  refresh.Start(JobFor(rows), rows.copy(), 600);
  EXPECT_TRUE(Ready(refresh.result()));
  EXPECT_TRUE(SameMaps(refresh.Finish(), {KnownMap()}));
  EXPECT_EQ(refresh.taken(), 1u);
  EXPECT_EQ(refresh.computed(), 0u);
  // The later one is still kept for its fit.
  refresh.Start(JobFor(rows), rows.copy(), 700);
  EXPECT_TRUE(SameMaps(refresh.Finish(), {MlkrMap()}));
  EXPECT_EQ(refresh.taken(), 2u);
}

TEST(MlkrRefreshSharingTest, AnAbandonedFitStopsWhetherHeldOrComputing) {
  const Rows rows = MakeRows(2000);
  for (const bool computes_first : {false, true}) {
    MlkrRefresh refresh;
    refresh.SetExchange(std::make_shared<RecordingExchange>(computes_first));
    MlkrRefresh::Job job = JobFor(rows);
    job.options.max_steps = 100000;  // minutes, unless stopped
    refresh.Start(job, rows.copy(), 2000);
    refresh.Abandon();
    EXPECT_FALSE(refresh.running()) << computes_first;
    EXPECT_EQ(refresh.computed(), 0u) << computes_first;
    EXPECT_FALSE(refresh.Offer(2000, {KnownMap()})) << computes_first;
  }
}

}  // namespace
}  // namespace streamreg
