#ifndef STREAMREG_SERVER_HOSTING_MODEL_METRICS_H_
#define STREAMREG_SERVER_HOSTING_MODEL_METRICS_H_

#include <memory>
#include <span>

#include "absl/time/time.h"
#include "server/hosting/hosted_model.h"
#include "server/telemetry/prometheus_text.h"

namespace streamreg {

// The per-model families of /metrics, each series labelled with the model
// (and the target, for the prequential errors): samples, prequential nMSE
// and MSE, the learn lag, index rebuilds and their duration, metric refreshes,
// memory, write-ahead log bytes and the age of the last snapshot. Read from
// each model's stats at scrape time, so learning pays nothing for them.
void WriteModelMetrics(std::span<const std::shared_ptr<HostedModel>> models,
                       absl::Time now, PrometheusText& out);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_MODEL_METRICS_H_
