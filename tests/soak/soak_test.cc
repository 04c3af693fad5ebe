// The soak: streamreg-server as a subprocess under mixed load (two robots
// on Learn, two bulk loaders on Ingest) for a bounded time, with every
// fault of a bad day injected while it runs:
//
//   kill -9            every --kill_every_min..--kill_every_max
//   torn last record   after half the kills, a record cut short (or zeros)
//                      appended to a model's newest log segment
//   disk full          the data directory on a small tmpfs filled up (as
//                      root), or the fault shim's free-space limit
//   slow fsync         the fault shim sleeps in every fsync
//   clock jump         the fault shim moves the wall clock an hour either
//                      way (the server syncs its logs on the steady clock)
//   disconnects        clients drop their streams mid-way without closing
//
// Each period between kills holds one of disk full, slow fsync or a clock
// jump. After every kill the clients stop, the server restarts (the sync
// policy alternating between always and interval:20) and each model is
// checked: it recovered every acknowledged sample and none it was never
// sent; once every sample sent is acknowledged (sent again; the server
// skips those it has by id) it holds exactly them, and its predictions
// equal, bit for bit, those of an engine model fed exactly them. The
// report counts the faults, the samples acknowledged and recovered, and
// the mismatches (which must be 0).
//
// usage: streamreg-soak [--duration=30m] [--kills=100]
//                       [--kill_every_min=10s --kill_every_max=30s]
//                       [--disk=auto|tmpfs|shim] [--report=FILE.json]
//                       [--server=PATH --fault_shim=PATH]
// CI runs a short version (tests/CMakeLists.txt).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "core/io/record_reader.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/rpc/spec_conversion.h"
#include "tests/soak/fault_control.h"
#include "tests/support/fresh_directory.h"
#include "tests/support/model_test_support.h"
#include "tests/support/sample_feed.h"
#include "tests/support/server_process.h"

ABSL_FLAG(absl::Duration, duration, absl::Seconds(45),
          "how long to run (the soak stops at the first kill after it)");
ABSL_FLAG(int, kills, 0, "stop after this many kills (0: --duration only)");
ABSL_FLAG(absl::Duration, kill_every_min, absl::Seconds(2),
          "the shortest time between two kills");
ABSL_FLAG(absl::Duration, kill_every_max, absl::Seconds(4),
          "the longest time between two kills");
ABSL_FLAG(std::string, disk, "auto",
          "how the disk fills: tmpfs (a 256 MiB tmpfs mounted over the data "
          "directory; needs root), shim (the fault shim's free-space limit) "
          "or auto (tmpfs where it can be mounted)");
ABSL_FLAG(std::size_t, samples_per_generation, 30'000,
          "a model that has learned this many samples is deleted and "
          "created anew, so that the soak's models stay small");
ABSL_FLAG(std::uint64_t, seed, 1, "the seed of every random choice");
ABSL_FLAG(std::string, report, "", "where to write the counts as JSON");
ABSL_FLAG(std::string, server, STREAMREG_SERVER,
          "the streamreg-server binary to soak");
ABSL_FLAG(std::string, fault_shim, STREAMREG_FAULT_SHIM,
          "the fault shim it preloads (libstreamreg_fault_shim.so)");

namespace streamreg {
namespace {

constexpr std::int64_t kTmpfsBytes = 256ll << 20;

// The control file both processes map (fault_control.h).
class SharedFaultControl {
 public:
  explicit SharedFaultControl(std::string path) : path_(std::move(path)) {
    const int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, sizeof(FaultControl)) != 0) {
      ADD_FAILURE() << "cannot make " << path_;
      return;
    }
    void* mapped = mmap(nullptr, sizeof(FaultControl), PROT_READ | PROT_WRITE,
                        MAP_SHARED, fd, 0);
    close(fd);
    if (mapped == MAP_FAILED) {
      ADD_FAILURE() << "cannot map " << path_;
      return;
    }
    control_ = new (mapped) FaultControl;
  }
  ~SharedFaultControl() {
    if (control_ != nullptr) munmap(control_, sizeof(FaultControl));
    std::filesystem::remove(path_);
  }
  SharedFaultControl(const SharedFaultControl&) = delete;
  SharedFaultControl& operator=(const SharedFaultControl&) = delete;

  FaultControl* operator->() { return control_; }
  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  FaultControl* control_ = nullptr;
};

// The data directory, on a tmpfs of its own where one can be mounted; its
// disk is filled by a ballast file there, and by the shim's limit
// elsewhere.
class SoakDisk {
 public:
  SoakDisk(std::string directory, const std::string& mode,
           SharedFaultControl* control)
      : directory_(std::move(directory)), control_(control) {
    if (mode == "shim") return;
    const std::string options = absl::StrCat("size=", kTmpfsBytes);
    tmpfs_ = mount("streamreg-soak", directory_.c_str(), "tmpfs", 0,
                   options.c_str()) == 0;
    if (!tmpfs_) {
      mount_error_ = std::strerror(errno);
      if (mode == "tmpfs") {
        ADD_FAILURE() << "cannot mount a tmpfs on " << directory_ << ": "
                      << mount_error_;
      }
    }
  }
  ~SoakDisk() {
    if (tmpfs_) umount2(directory_.c_str(), MNT_DETACH);
  }
  SoakDisk(const SoakDisk&) = delete;
  SoakDisk& operator=(const SoakDisk&) = delete;

  std::string Describe() const {
    if (tmpfs_) return "a 256 MiB tmpfs filled by a ballast file";
    return "the fault shim's free-space limit" +
           (mount_error_.empty() ? std::string(" (--disk=shim)")
                                 : " (no tmpfs: " + mount_error_ + ")");
  }

  // Leaves `free_bytes` (about that, on a tmpfs) for the server.
  void Fill(std::int64_t free_bytes) {
    if (!tmpfs_) {
      (*control_)->free_bytes = free_bytes;
      return;
    }
    const std::string ballast = directory_ + "/ballast";
    const int fd = open(ballast.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<char> block(1 << 16, 1);
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    // Gives back what the server may use.
    const off_t size = lseek(fd, 0, SEEK_END);
    EXPECT_EQ(ftruncate(fd, std::max<off_t>(0, size - free_bytes)), 0);
    close(fd);
  }
  void Free() {
    if (!tmpfs_) {
      (*control_)->free_bytes = -1;
      return;
    }
    std::filesystem::remove(directory_ + "/ballast");
  }

 private:
  const std::string directory_;
  SharedFaultControl* const control_;
  bool tmpfs_ = false;
  std::string mount_error_;
};

// What the soak counts.
struct SoakCounts {
  std::map<std::string, int> faults;
  std::uint64_t samples_acknowledged = 0;  // over every model generation
  // Summed over the restarts: what the models had acknowledged when the
  // server was killed, and what they held when it was back.
  std::uint64_t samples_acknowledged_at_kills = 0;
  std::uint64_t samples_recovered = 0;
  std::uint64_t samples_verified = 0;  // checked against a reference
  int checks = 0;
  int mismatches = 0;
  std::uint64_t syncs_during_clock_jumps = 0;
  std::uint64_t writes_refused_for_space = 0;
  // The errors clients saw (by status code), each retried.
  std::map<std::string, int> client_errors;

  nlohmann::json Json() const {
    return {{"faults", faults},
            {"samples_acknowledged", samples_acknowledged},
            {"samples_acknowledged_at_kills", samples_acknowledged_at_kills},
            {"samples_recovered", samples_recovered},
            {"samples_verified", samples_verified},
            {"checks", checks},
            {"mismatches", mismatches},
            {"syncs_during_clock_jumps", syncs_during_clock_jumps},
            {"writes_refused_for_space", writes_refused_for_space},
            {"client_errors", client_errors}};
  }
};

// One model's feed and the engine model that learns, in the soak's own
// process, exactly what the server acknowledged.
struct SoakModel {
  std::unique_ptr<Feed> feed;
  std::unique_ptr<Model> reference;
  std::size_t reference_samples = 0;
  int generation = 0;
};

class Soak {
 public:
  Soak(std::string data_dir, SharedFaultControl* control, SoakDisk* disk)
      : data_dir_(std::move(data_dir)),
        control_(control),
        disk_(disk),
        random_(absl::GetFlag(FLAGS_seed)) {
    spec_.set_input_dim(kDim);
    spec_.add_target_names("first");
    spec_.add_target_names("second");
    spec_.set_metric(v1::METRIC_EGOP);
    config_ = *ConfigFromSpec(spec_);
  }

  void Run() {
    ASSERT_NO_FATAL_FAILURE(Restart());
    for (int m = 0; m < 4; ++m) {
      models_.emplace_back();
      ASSERT_NO_FATAL_FAILURE(NewGeneration(m));
    }
    const absl::Time end = absl::Now() + absl::GetFlag(FLAGS_duration);
    const int max_kills = absl::GetFlag(FLAGS_kills);
    int kills = 0;
    while (absl::Now() < end && (max_kills == 0 || kills < max_kills)) {
      ASSERT_NO_FATAL_FAILURE(LoadWithOneFault());
      ++kills;
      ASSERT_NO_FATAL_FAILURE(Restart());
      ASSERT_NO_FATAL_FAILURE(CheckEveryModel());
      std::printf("soak: kill %d: %llu acknowledged, %d mismatches\n", kills,
                  static_cast<unsigned long long>(Acknowledged()),
                  counts_.mismatches);
      std::fflush(stdout);
    }
    counts_.writes_refused_for_space = (*control_)->writes_refused.load();
    for (SoakModel& model : models_) CountGeneration(model);
  }

  const SoakCounts& counts() const { return counts_; }

 private:
  // Streams into every model until the next kill, with one of disk full,
  // slow fsync or a clock jump somewhere in between; then kill -9.
  void LoadWithOneFault() {
    std::atomic<bool> stop = false;
    FeedThreads streams(&stop);
    const std::string address = server_->address();
    for (SoakModel& model : models_) {
      streams.Start(
          [this, &stop, address, feed = model.feed.get(), seed = random_()] {
            StreamWithDisconnects(*feed, address, stop, seed);
          });
    }
    const absl::Duration period = Uniform(absl::GetFlag(FLAGS_kill_every_min),
                                          absl::GetFlag(FLAGS_kill_every_max));
    const absl::Duration before = period * Uniform(0.2, 0.5);
    const absl::Duration during = period * Uniform(0.2, 0.4);
    absl::SleepFor(before);
    InjectOneFault(during);
    absl::SleepFor(period - before - during);

    const bool killed = server_->Kill();
    ++counts_.faults["kill -9"];
    Check(killed, absl::StrCat("the server had ended by itself; see ",
                               data_dir_, ".log"));
    std::vector<std::size_t> acknowledged;
    for (SoakModel& model : models_) {
      acknowledged.push_back(model.feed->acknowledged);
    }
    for (std::size_t count : acknowledged) {
      counts_.samples_acknowledged_at_kills += count;
    }
    acknowledged_at_kill_ = std::move(acknowledged);
    streams.StopAndJoin();
    if (random_() % 2 == 0) TearTheLastRecord();
  }

  // A client's loop: reconnects after every failure, and now and then
  // drops its stream mid-way.
  void StreamWithDisconnects(Feed& feed, const std::string& address,
                             const std::atomic<bool>& stop,
                             std::uint64_t seed) {
    std::mt19937_64 random(seed);
    while (!stop && feed.acknowledged < feed.stream.size()) {
      const std::size_t abandon_at =
          random() % 4 == 0 ? feed.acknowledged + 1 + random() % 500
                            : std::numeric_limits<std::size_t>::max();
      const absl::Status streamed = StreamUntilFailure(
          feed, address, feed.stream.size(), &stop, abandon_at);
      if (absl::IsCancelled(streamed)) {
        ++feed.disconnects;
      } else if (!streamed.ok()) {
        std::lock_guard<std::mutex> lock(client_errors_mutex_);
        ++counts_.client_errors[absl::StatusCodeToString(streamed.code())];
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  void InjectOneFault(absl::Duration during) {
    switch (random_() % 3) {
      case 0: {
        ++counts_.faults["disk full"];
        disk_->Fill(static_cast<std::int64_t>(random_() % 65'536));
        absl::SleepFor(during);
        disk_->Free();
        break;
      }
      case 1: {
        ++counts_.faults["slow fsync"];
        (*control_)->fsync_delay_us = 20'000 + random_() % 180'000;
        absl::SleepFor(during);
        (*control_)->fsync_delay_us = 0;
        break;
      }
      default: {
        ++counts_.faults["clock jump"];
        const std::int64_t hour = 3'600'000'000'000ll;
        (*control_)->realtime_offset_ns = random_() % 2 == 0 ? hour : -hour;
        const std::uint64_t syncs = (*control_)->syncs;
        const std::uint64_t acknowledged = Acknowledged();
        absl::SleepFor(during);
        const std::uint64_t synced = (*control_)->syncs - syncs;
        (*control_)->realtime_offset_ns = 0;
        counts_.syncs_during_clock_jumps += synced;
        // Under either policy, samples acknowledged while the clock was
        // off were fsynced: none without a sync.
        ++counts_.checks;
        if (Acknowledged() > acknowledged && synced == 0) {
          ++counts_.mismatches;
          ADD_FAILURE() << "no log was synced in the " << during
                        << " the wall clock was off, though samples were "
                           "acknowledged";
        }
        break;
      }
    }
  }

  // Appends to one model's newest log segment what a crash in the middle
  // of an append leaves: the first bytes of a record (a copy of the last
  // one's), or zeros (the file grown, its data never written).
  void TearTheLastRecord() {
    const SoakModel& model = models_[random_() % models_.size()];
    const std::string directory = data_dir_ + "/models/" + model.feed->model;
    std::string newest;
    for (const auto& entry : std::filesystem::directory_iterator(directory)) {
      const std::string name = entry.path().filename();
      if (name.starts_with("wal-") && name > newest) newest = name;
    }
    if (newest.empty()) return;
    const std::string path = directory + "/" + newest;
    std::string contents;
    {
      std::ifstream in(path, std::ios::binary);
      contents.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::string torn;
    const std::size_t last = LastRecordOffset(contents);
    if (random_() % 2 == 0 && last < contents.size()) {
      const std::size_t length = contents.size() - last;
      torn = contents.substr(last, 1 + random_() % (length - 1));
    } else {
      torn.assign(1 + random_() % 64, '\0');
    }
    std::ofstream(path, std::ios::binary | std::ios::app) << torn;
    ++counts_.faults["torn last record"];
  }

  // Where the last whole record of a log segment begins, read with the
  // log's own reader; the size if it holds none.
  static std::size_t LastRecordOffset(const std::string& contents) {
    RecordReader reader(contents, "segment");
    RecordType type;
    absl::string_view payload;
    std::size_t last = contents.size();
    for (std::size_t start = 0;
         reader.Next(&type, &payload) == RecordReader::Result::kRecord;
         start = reader.end_of_records()) {
      last = start;
    }
    return last;
  }

  // Starts the server anew, alternating its sync policy.
  void Restart() {
    const bool always = restarts_++ % 2 == 0;
    server_ = std::make_unique<ServerProcess>(
        absl::GetFlag(FLAGS_server), data_dir_,
        std::vector<std::string>{
            always ? "--sync=always" : "--sync=interval:20",
            "--snapshot_every_samples=2000", "--wal_segment_bytes=262144",
            // The references learn the samples alone.
            "--take_over=fixed_count", "--log_level=warn"});
    server_->SetEnvironment(
        {absl::StrCat("LD_PRELOAD=", absl::GetFlag(FLAGS_fault_shim)),
         absl::StrCat(kFaultControlVariable, "=", control_->path()),
         absl::StrCat(kFaultDataDirVariable, "=", data_dir_)});
    ASSERT_NO_FATAL_FAILURE(server_->Start());
  }

  // After a restart: each model recovered what it acknowledged, and, once
  // everything sent is acknowledged, equals its reference.
  void CheckEveryModel() {
    Client client(KillTestClientOptions(server_->address()));
    for (std::size_t m = 0; m < models_.size(); ++m) {
      ASSERT_NO_FATAL_FAILURE(CheckRecovered(client, m));
    }
    // The references learn what was acknowledged since the last check,
    // side by side (the longest part of a check).
    std::vector<std::thread> learners;
    for (SoakModel& model : models_) {
      learners.emplace_back([&model] {
        LearnAll(*model.reference, model.feed->stream, model.reference_samples,
                 model.feed->sent, 500);
        model.reference_samples = model.feed->sent;
      });
    }
    for (std::thread& learner : learners) learner.join();
    for (std::size_t m = 0; m < models_.size(); ++m) {
      ASSERT_NO_FATAL_FAILURE(CheckPredictions(client, m));
    }
  }

  // Model m holds what it acknowledged before the kill and nothing it was
  // never sent; once everything sent is acknowledged, exactly that.
  void CheckRecovered(Client& client, std::size_t m) {
    Feed& feed = *models_[m].feed;
    SCOPED_TRACE(feed.model);
    absl::StatusOr<v1::Model> recovered = client.GetModel(feed.model);
    ASSERT_TRUE(recovered.ok()) << recovered.status();
    const std::size_t found = recovered->stats().num_samples();
    counts_.samples_recovered += found;
    Check(found >= acknowledged_at_kill_[m],
          absl::StrCat(found, " samples recovered of ",
                       acknowledged_at_kill_[m], " acknowledged"));
    Check(found <= feed.sent, absl::StrCat(found, " samples recovered of ",
                                           feed.sent.load(), " ever sent"));
    while (feed.acknowledged < feed.sent) {
      StreamUntilFailure(feed, server_->address(), feed.sent).IgnoreError();
    }
    absl::StatusOr<v1::Model> now = client.GetModel(feed.model);
    ASSERT_TRUE(now.ok()) << now.status();
    Check(now->stats().num_samples() == feed.sent,
          absl::StrCat(now->stats().num_samples(),
                       " samples held after sending all ", feed.sent.load(),
                       " again"));
  }

  // Model m predicts, bit for bit, as its reference; a model at the end of
  // its stream then begins its next generation.
  void CheckPredictions(Client& client, std::size_t m) {
    Feed& feed = *models_[m].feed;
    SCOPED_TRACE(feed.model);
    absl::StatusOr<std::size_t> differing = CountServedPredictionsDiffering(
        client, feed.model, *models_[m].reference, queries_);
    ASSERT_TRUE(differing.ok()) << differing.status();
    Check(*differing == 0,
          absl::StrCat(*differing, " of ", queries_.size(),
                       " predictions differ from a model fed the same "
                       "samples; ",
                       Compared(client, feed.model, *models_[m].reference)));
    counts_.samples_verified += feed.sent;
    if (feed.sent >= feed.stream.size()) {
      ASSERT_TRUE(client.DeleteModel(feed.model).ok());
      ASSERT_NO_FATAL_FAILURE(NewGeneration(m));
    }
  }

  // The server's model beside its reference, for a mismatch's report:
  // where their learning parted (the prequential error differs from the
  // first prediction that did) or only their state now.
  static std::string Compared(Client& client, const std::string& name,
                              const Model& reference) {
    absl::StatusOr<v1::Model> served = client.GetModel(name);
    if (!served.ok()) return served.status().ToString();
    const v1::ModelStats& s = served->stats();
    const ModelStats r = reference.stats();
    std::string out = absl::StrCat(
        "served / reference: samples ", s.num_samples(), " / ", r.samples_seen,
        ", metric refreshes ", s.metric_refreshes(), " / ", r.metric_refreshes,
        ", index rebuilds ", s.index_rebuilds(), " / ", r.index_rebuilds,
        ", duplicates ", s.duplicate_samples());
    for (int t = 0; t < s.prequential_mse_size(); ++t) {
      absl::StrAppend(&out, "; target ", t, ": prequential mse ",
                      absl::StrFormat("%.17g", s.prequential_mse(t)), " / ",
                      absl::StrFormat("%.17g", r.prequential_mse[t]),
                      ", honest mse ",
                      absl::StrFormat("%.17g", s.honest_mse(t)), " / ",
                      absl::StrFormat("%.17g", r.honest_mse[t]), ", k ", s.k(t),
                      " / ", r.k[t]);
    }
    return out;
  }

  void Check(bool holds, const std::string& what) {
    ++counts_.checks;
    if (holds) return;
    ++counts_.mismatches;
    ADD_FAILURE() << what;
  }

  // A model's next generation: created empty, with a stream of its own.
  void NewGeneration(std::size_t m) {
    SoakModel& model = models_[m];
    if (model.feed != nullptr) CountGeneration(model);
    const int generation = model.feed == nullptr ? 0 : model.generation + 1;
    auto feed = std::make_unique<Feed>();
    feed->robot = m < 2;
    feed->model = absl::StrCat(feed->robot ? "robot-" : "bulk-", m);
    feed->stream = MakeStream(absl::GetFlag(FLAGS_samples_per_generation),
                              100 * generation + m);
    feed->first_id = (generation * 10 + m + 1) * 1'000'000'000ull;
    Client client(KillTestClientOptions(server_->address()));
    absl::StatusOr<v1::Model> created = client.CreateModel(feed->model, spec_);
    ASSERT_TRUE(created.ok()) << created.status();
    model.feed = std::move(feed);
    model.reference = MakeModel(config_);
    model.reference_samples = 0;
    model.generation = generation;
  }

  // Adds a finished generation's acknowledgements and disconnects.
  void CountGeneration(const SoakModel& model) {
    counts_.samples_acknowledged += model.feed->acknowledged;
    counts_.faults["disconnect mid-stream"] += model.feed->disconnects;
  }

  std::uint64_t Acknowledged() const {
    std::uint64_t total = counts_.samples_acknowledged;
    for (const SoakModel& model : models_) total += model.feed->acknowledged;
    return total;
  }

  absl::Duration Uniform(absl::Duration low, absl::Duration high) {
    return low + (high - low) * Uniform(0.0, 1.0);
  }
  double Uniform(double low, double high) {
    return std::uniform_real_distribution<double>(low, high)(random_);
  }

  const std::string data_dir_;
  SharedFaultControl* const control_;
  SoakDisk* const disk_;
  std::mt19937_64 random_;
  v1::ModelSpec spec_;
  ModelConfig config_;
  const Stream queries_ = MakeStream(25, 99);
  std::vector<SoakModel> models_;
  std::vector<std::size_t> acknowledged_at_kill_;
  std::unique_ptr<ServerProcess> server_;
  int restarts_ = 0;
  std::mutex client_errors_mutex_;  // the clients' threads add errors
  SoakCounts counts_;
};

TEST(SoakTest, NoFaultLosesOrHalfAppliesASample) {
  const std::string root = FreshDirectory();
  const std::string data_dir = root + "/data";
  std::filesystem::create_directories(data_dir);
  SharedFaultControl control(root + "/faults");
  SoakDisk disk(data_dir, absl::GetFlag(FLAGS_disk), &control);
  std::printf("soak: the disk fills through %s\n", disk.Describe().c_str());
  Soak soak(data_dir, &control, &disk);
  soak.Run();
  const nlohmann::json report = soak.counts().Json();
  std::printf("soak: %s\n", report.dump(2).c_str());
  if (const std::string path = absl::GetFlag(FLAGS_report); !path.empty()) {
    std::ofstream(path) << report.dump(2) << "\n";
  }
  EXPECT_EQ(soak.counts().mismatches, 0);
  EXPECT_GT(soak.counts().faults.at("kill -9"), 0);
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  absl::ParseCommandLine(argc, argv);
  return RUN_ALL_TESTS();
}
