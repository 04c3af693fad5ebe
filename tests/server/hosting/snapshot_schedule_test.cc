// When a model's next snapshot falls due (server/hosting/
// snapshot_schedule.h): by samples learned or by time with writes unsaved,
// counted again from each snapshot taken.
#include "server/hosting/snapshot_schedule.h"

#include <chrono>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "server/hosting/model_registry.h"
#include "tests/support/hosted_model_fixture.h"

namespace streamreg {
namespace {

// Scheduled snapshots fall due by samples learned or by time with writes
// unsaved, and once taken count again from there.
TEST_F(HostedModelTest, SnapshotsFallDueBySamplesOrByTimeWithWritesUnsaved) {
  ModelRegistry registry({.max_models = 4}, {&pool_, &learning_});
  std::shared_ptr<HostedModel> model =
      *registry.Make("m", SmallConfig(), {}, absl::Now());
  const auto settled = [&] {
    model->CatchUp();
    while (!model->model().BackgroundWorkSettled()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  model->log_writer()->NoteApplied(1);
  Batch first(40, 1000);
  ASSERT_TRUE(ApplyAsLogEntry(*model, first.samples, 2).ok());
  settled();
  const SnapshotSchedule by_samples{.every_samples = 50,
                                    .interval = absl::InfiniteDuration()};
  const absl::Time last = model->last_snapshot_time();
  EXPECT_FALSE(by_samples.Due(*model, true, last + absl::Hours(5)));
  Batch second(20, 2000);
  ASSERT_TRUE(ApplyAsLogEntry(*model, second.samples, 3).ok());
  settled();
  EXPECT_TRUE(by_samples.Due(*model, true, last));

  const SnapshotSchedule by_time{.every_samples = 1000,
                                 .interval = absl::Minutes(1)};
  EXPECT_FALSE(by_time.Due(*model, true, last + absl::Seconds(59)));
  EXPECT_TRUE(by_time.Due(*model, true, last + absl::Seconds(61)));
  EXPECT_FALSE(by_time.Due(*model, false, last + absl::Hours(5)));

  ASSERT_TRUE(model->CaptureForLog().ok());
  model->SnapshotStored(60);
  EXPECT_FALSE(by_samples.Due(*model, true, absl::Now()));
  EXPECT_FALSE(by_time.Due(*model, true, absl::Now()));
}

}  // namespace
}  // namespace streamreg
