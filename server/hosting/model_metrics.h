#ifndef STREAMREG_SERVER_HOSTING_MODEL_METRICS_H_
#define STREAMREG_SERVER_HOSTING_MODEL_METRICS_H_

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/hosting/hosted_model.h"
#include "server/telemetry/prometheus_text.h"

namespace streamreg {

// What one reading of a model holds, read once for a scrape or the status
// page: its stats (without waiting for learning), what waits to be
// learned, the error learning met (OK so far) and, with a journal, its
// durability figures.
struct ModelReading {
  // Learning's waits for background work at its take-over points (and the
  // engine's own, a refit's), since the server started; how long the
  // current one has lasted (zero: learning is not waiting).
  struct LearningWaits {
    std::uint64_t count = 0;
    double seconds = 0.0;
    double longest_seconds = 0.0;
    absl::Duration current = absl::ZeroDuration();
  };

  const HostedModel* model = nullptr;
  absl::Time read_at;  // the `now` it was read at
  ModelStats stats;
  AnswerErrors::Figures answers;  // the Learn answers sent
  AnswerErrors::Figures ahead;    // the predictions ahead sent and scored
  LearnStage::Backlog backlog;
  LearningWaits learning_waits = {};
  absl::Status learning_error;
  bool has_journal = false;
  std::uint64_t wal_bytes = 0;
  double snapshot_age_seconds = 0.0;
  std::uint64_t samples_since_snapshot = 0;
};
ModelReading ReadModel(const HostedModel& model, absl::Time now);

// The per-model families of /metrics, each series labelled with the model
// (and the target, for the prequential errors): samples, prequential nMSE
// and MSE, the learn lag, index rebuilds and their duration, metric refreshes,
// memory, write-ahead log bytes and the age of the last snapshot. Read from
// each model's stats at scrape time, so learning pays nothing for them.
void WriteModelMetrics(std::span<const std::shared_ptr<HostedModel>> models,
                       absl::Time now, PrometheusText& out);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_MODEL_METRICS_H_
