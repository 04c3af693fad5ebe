// Refit calls in process (server/rpc/refit_reactor.h): progress streamed,
// and the call ending with the refitted model's stats.
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "client/lib/learn_session.h"
#include "client/lib/predict_session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/service_fixture.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

TEST_F(ServiceTest, RefitStreamsProgressAndEndsWithTheNewStats) {
  const Rows rows(800, 7);
  CreateAndIngest("m", rows, rows.size());
  std::vector<std::uint64_t> done;
  absl::StatusOr<v1::ModelStats> stats =
      client_->Refit("m", [&](std::uint64_t d, std::uint64_t total) {
        EXPECT_EQ(total, rows.size());
        done.push_back(d);
      });
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_FALSE(done.empty());
  EXPECT_TRUE(std::is_sorted(done.begin(), done.end()));
  EXPECT_EQ(done.back(), rows.size());
  EXPECT_EQ(stats->num_samples(), rows.size());
  // The refitted metric is the engine's batch refit of the same samples.
  std::unique_ptr<Model> reference = Reference(RowsSpec(), rows, rows.size());
  ASSERT_TRUE(reference->Refit().ok());
  const v1::MetricReport report = *client_->GetMetric("m");
  for (std::size_t i = 0; i < Rows::kDim; ++i) {
    EXPECT_EQ(report.metrics(0).weights(i),
              reference->metric().metrics[0].weights[i]);
  }
}

}  // namespace
}  // namespace streamreg
