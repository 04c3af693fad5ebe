#include "core/model/random_feature_refresh.h"

#include <algorithm>
#include <utility>

#include "core/base/background_thread.h"
#include "core/regression/random_feature_sums.h"

namespace streamreg {

RandomFeatureRefresh::~RandomFeatureRefresh() { StopWorker(); }

void RandomFeatureRefresh::StopWorker() {
  if (!worker_.joinable()) return;
  worker_.request_stop();
  {
    MutexLock lock(&mutex_);
    changed_.SignalAll();
  }
  worker_.join();
}

namespace {

// Whether BuildOver chooses among the job's candidates over n samples, and
// the samples [oldest, fitted) their sums are taken over (the rest up to n
// held out).
struct ChoiceSamples {
  bool choose = false;
  std::size_t oldest = 0;
  std::size_t fitted = 0;
};

ChoiceSamples ChoiceSamplesOf(const RandomFeatureRefresh::Job& job,
                              std::size_t n) {
  ChoiceSamples samples;
  samples.choose = n >= RandomFeatureRefresh::kMinChoiceSamples &&
                   (job.lengthscales.size() > 1 || job.ridges.size() > 1);
  // Over the newest kMaxChoiceSamples (all, if fewer): the oldest four
  // fifths fitted, the rest held out.
  const std::size_t most = RandomFeatureRefresh::kMaxChoiceSamples;
  samples.oldest = n > most ? n - most : 0;
  samples.fitted = samples.oldest + (n - samples.oldest) * 4 / 5;
  return samples;
}

}  // namespace

std::size_t RandomFeatureRefresh::ChoiceFrequencies(const Job& job) {
  return std::min(job.options.num_frequencies, kMaxChoiceFrequencies);
}

double RandomFeatureRefresh::SampleMultiplyAdds(const Job& job) {
  const auto f = static_cast<double>(1 + job.transform.dim() +
                                     2 * job.options.num_frequencies);
  return f * f / 2.0;
}

double RandomFeatureRefresh::MultiplyAdds(const Job& job) {
  // The features with `frequencies`.
  const auto features = [&](std::size_t frequencies) {
    return static_cast<double>(1 + job.transform.dim() + 2 * frequencies);
  };
  const double f = features(job.options.num_frequencies);
  double total =
      f * f / 2.0 * static_cast<double>(job.num_slots) + f * f * f / 6.0;
  const ChoiceSamples samples = ChoiceSamplesOf(job, job.num_slots);
  if (samples.choose) {
    const double c = features(ChoiceFrequencies(job));
    const auto lengthscales = static_cast<double>(job.lengthscales.size());
    const auto ridges = static_cast<double>(job.ridges.size());
    total += lengthscales * c * c / 2.0 *
                 static_cast<double>(samples.fitted - samples.oldest) +
             lengthscales * ridges * c * c * c / 6.0;
  }
  return total;
}

RandomFeatureRidge RandomFeatureRefresh::BuildOver(const Job& job,
                                                   const std::vector<double>& z,
                                                   const std::vector<double>& y,
                                                   Choice* choice) {
  const std::size_t d = job.transform.dim();
  const std::size_t m = job.num_targets;
  const std::size_t n = m == 0 ? 0 : y.size() / m;
  RandomFeatureRidge::Options options = job.options;
  const auto row = [&](const std::vector<double>& rows, std::size_t width,
                       std::size_t i) {
    return std::span<const double>(rows.data() + i * width, width);
  };
  const auto map_of = [&](double lengthscale, std::size_t frequencies) {
    return RandomFeaturePredictor(d, m, frequencies, lengthscale, options.seed);
  };
  const std::size_t choice_frequencies = ChoiceFrequencies(job);
  Choice best{options.lengthscale, options.ridge, 0.0};
  const ChoiceSamples samples = ChoiceSamplesOf(job, n);
  if (samples.choose) {
    const std::size_t oldest = samples.oldest;
    const std::size_t fitted = samples.fitted;
    // Each target's variance over the held-out samples.
    std::vector<double> mean(m, 0.0), variance(m, 0.0);
    for (std::size_t i = fitted; i < n; ++i) {
      for (std::size_t t = 0; t < m; ++t) mean[t] += y[i * m + t];
    }
    for (double& v : mean) v /= static_cast<double>(n - fitted);
    for (std::size_t i = fitted; i < n; ++i) {
      for (std::size_t t = 0; t < m; ++t) {
        variance[t] += (y[i * m + t] - mean[t]) * (y[i * m + t] - mean[t]);
      }
    }
    std::vector<double> predicted(m);
    bool first = true;
    for (const double lengthscale : job.lengthscales) {
      RandomFeatureSums sums(map_of(lengthscale, choice_frequencies),
                             options.forgetting);
      for (std::size_t i = oldest; i < fitted; ++i) {
        sums.Add(row(z, d, i), row(y, m, i));
      }
      for (const double ridge : job.ridges) {
        RandomFeatureRidge::Options candidate = options;
        candidate.num_frequencies = choice_frequencies;
        candidate.lengthscale = lengthscale;
        candidate.ridge = ridge;
        const RandomFeatureRidge fit =
            RandomFeatureRidge::FromSums(sums, candidate);
        std::vector<double> squared(m, 0.0);
        for (std::size_t i = fitted; i < n; ++i) {
          fit.Predict(row(z, d, i), predicted);
          for (std::size_t t = 0; t < m; ++t) {
            const double e = predicted[t] - y[i * m + t];
            squared[t] += e * e;
          }
        }
        double error = 0.0;
        for (std::size_t t = 0; t < m; ++t) {
          error += variance[t] > 0.0 ? squared[t] / variance[t] : 0.0;
        }
        if (first || error < best.error) {
          best = {lengthscale, ridge, error};
          first = false;
        }
      }
    }
  }
  options.lengthscale = best.lengthscale;
  options.ridge = best.ridge;
  if (choice != nullptr) *choice = best;
  RandomFeatureSums all(map_of(options.lengthscale, options.num_frequencies),
                        options.forgetting);
  for (std::size_t i = 0; i < n; ++i) all.Add(row(z, d, i), row(y, m, i));
  return RandomFeatureRidge::FromSums(all, options);
}

void RandomFeatureRefresh::Start(Job job, CopySlotRows rows) {
  StopWorker();
  {
    MutexLock lock(&mutex_);
    pending_.clear();
    busy_ = false;
    stored_done_ = false;
  }
  running_ = true;
  worker_ = std::jthread(
      [this, job = std::move(job), rows = std::move(rows)](
          std::stop_token stop) mutable { Run(stop, std::move(job), rows); });
}

void RandomFeatureRefresh::Resume(Built captured) {
  StopWorker();
  built_.emplace(std::move(captured));
  {
    MutexLock lock(&mutex_);
    pending_.clear();
    busy_ = false;
    stored_done_ = false;
  }
  running_ = true;
  worker_ = std::jthread([this](std::stop_token stop) {
    Run(stop, std::nullopt, CopySlotRows());
  });
}

void RandomFeatureRefresh::Run(std::stop_token stop, std::optional<Job> job,
                               CopySlotRows rows) {
  BeginBackgroundThread("rff-fit");
  if (job.has_value()) {
    std::vector<double> z, y;
    ReadMappedRows(job->num_slots, rows, job->transform, &z, &y);
    if (stop.stop_requested()) return;
    RandomFeatureRidge ridge = BuildOver(*job, z, y);
    built_.emplace(Built{std::move(job->transform), std::move(ridge)});
  }
  // Until the job is idle, the ridge is this thread's alone.
  Built& built = *built_;
  const std::size_t d = built.ridge.dim();
  const std::size_t m = built.ridge.num_targets();
  std::vector<double> z(d);
  std::deque<std::vector<double>> batch;
  {
    MutexLock lock(&mutex_);
    stored_done_ = true;
    changed_.SignalAll();
  }
  while (true) {
    {
      MutexLock lock(&mutex_);
      while (pending_.empty() && !stop.stop_requested()) {
        changed_.Wait(&mutex_);
      }
      if (stop.stop_requested()) return;
      batch.swap(pending_);
      busy_ = true;
    }
    for (const std::vector<double>& row : batch) {
      built.transform.Apply({row.data(), d}, z);
      built.ridge.Add(z, {row.data() + d, m});
    }
    batch.clear();
    MutexLock lock(&mutex_);
    busy_ = false;
    changed_.SignalAll();
  }
}

void RandomFeatureRefresh::Feed(std::span<const double> x,
                                std::span<const double> y) {
  std::vector<double> row(x.begin(), x.end());
  row.insert(row.end(), y.begin(), y.end());
  MutexLock lock(&mutex_);
  pending_.push_back(std::move(row));
  changed_.SignalAll();
}

void RandomFeatureRefresh::WaitUntilIdle() const {
  while (!stored_done_ || busy_ || !pending_.empty()) changed_.Wait(&mutex_);
}

bool RandomFeatureRefresh::Idle() const {
  MutexLock lock(&mutex_);
  return stored_done_ && !busy_ && pending_.empty();
}

RandomFeatureRefresh::Built RandomFeatureRefresh::Capture() const {
  MutexLock lock(&mutex_);
  WaitUntilIdle();
  return *built_;
}

RandomFeatureRefresh::Built RandomFeatureRefresh::Finish() {
  {
    MutexLock lock(&mutex_);
    WaitUntilIdle();
  }
  StopWorker();
  Built built = std::move(*built_);
  built_.reset();
  running_ = false;
  return built;
}

}  // namespace streamreg
