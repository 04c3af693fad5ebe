// The registry of a server's models (run under ThreadSanitizer): names,
// limits and duplicates, and creates, learns, finds and deletes at once.
#include "server/hosting/model_registry.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/hosting_test_support.h"

namespace streamreg {
namespace {

TEST(ModelRegistryTest, NamesLimitsAndDuplicates) {
  WorkerPool pool(1);
  WorkerPool learning(1);
  ModelRegistry registry({.max_models = 2, .max_samples_per_model = 100},
                         {&pool, &learning});
  for (const char* bad : {"", ".hidden", "a/b", "white space"}) {
    EXPECT_EQ(registry.Create(bad, SmallConfig(), {}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_TRUE(registry.Create("a", SmallConfig(), {}).ok());
  EXPECT_EQ(registry.Create("a", SmallConfig(), {}).status().code(),
            absl::StatusCode::kAlreadyExists);
  ModelConfig windowed = SmallConfig();
  windowed.capacity = {CapacityPolicy::kWindow, 101};
  EXPECT_EQ(registry.Create("w", windowed, {}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(registry.Create("b", SmallConfig(), {"x0"}).status().code(),
            absl::StatusCode::kInvalidArgument);  // 1 name for 2 inputs
  EXPECT_TRUE(registry.Create("b", SmallConfig(), {"x0", "x1"}).ok());
  EXPECT_EQ(registry.Create("c", SmallConfig(), {}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(registry.List("", 10).size(), 2u);
  EXPECT_EQ(registry.List("a", 10).front()->name(), "b");
  std::shared_ptr<HostedModel> a = *registry.Find("a");
  EXPECT_TRUE(registry.Delete("a").ok());
  EXPECT_TRUE(a->deleted());
  EXPECT_EQ(registry.Find("a").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(registry.Delete("a").code(), absl::StatusCode::kNotFound);
}

TEST(ModelRegistryTest, ConcurrentCreateLearnFindAndDelete) {
  WorkerPool pool(2);
  WorkerPool learning(2);
  ModelRegistry registry({.max_models = 100}, {&pool, &learning});
  std::vector<std::thread> threads;
  std::atomic<int> learned = 0;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        const std::string name = absl::StrCat("m", t, "-", round % 3);
        (void)registry.Create(name, SmallConfig(), {});
        if (absl::StatusOr<std::shared_ptr<HostedModel>> found =
                registry.Find(name);
            found.ok()) {
          Batch batch(5, 0);
          if ((*found)->Learn(batch.samples, nullptr).ok()) ++learned;
          (void)(*found)->model().stats();
        }
        if (round % 4 == 3) (void)registry.Delete(name);
        (void)registry.List("", 100);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_GT(learned.load(), 0);
  EXPECT_LE(registry.size(), 12u);
}

}  // namespace
}  // namespace streamreg
