#include "server/rpc/server_metrics.h"

#include <limits>
#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "server/hosting/model_metrics.h"
#include "server/rpc/cluster_metrics.h"
#include "server/telemetry/process_metrics.h"
#include "server/telemetry/prometheus_text.h"

namespace streamreg {
namespace {

// The server's overload gates (docs/api.md, "Overload"): what they hold now
// and what they refused.
void WriteAdmissionMetrics(const ModelRegistry& registry, PrometheusText& out) {
  using Type = PrometheusText::Type;
  const AdmissionGate& samples = registry.queued_samples();
  const AdmissionGate& reads = registry.predictions_in_flight();
  out.Family("streamreg_queued_samples", Type::kGauge,
             "Samples admitted on the server and not yet through their "
             "model's write queue (--max-queued-samples).");
  out.Sample("streamreg_queued_samples", {}, samples.held());
  out.Family("streamreg_reads_in_flight", Type::kGauge,
             "Predictions and model reads being answered on the server "
             "(--max-predictions-in-flight).");
  out.Sample("streamreg_reads_in_flight", {}, reads.held());
  out.Family("streamreg_overload_refusals_total", Type::kCounter,
             "Requests refused with RESOURCE_EXHAUSTED by the server's "
             "limits, by limit, since the server started.");
  out.Sample("streamreg_overload_refusals_total",
             {{"limit", "max_queued_samples"}}, samples.refused());
  out.Sample("streamreg_overload_refusals_total",
             {{"limit", "max_predictions_in_flight"}}, reads.refused());
}

}  // namespace

std::string ServerMetrics::Render(const ModelRegistry& registry,
                                  const ClusterNode* cluster) const {
  using Type = PrometheusText::Type;
  PrometheusText out;
  out.Family("streamreg_build_info", Type::kGauge,
             "Always 1; the version of streamreg-server in a label.");
  out.Sample("streamreg_build_info", {{"version", STREAMREG_VERSION}},
             std::uint64_t{1});
  WriteProcessMetrics(out);
  rpc_.Write(out);
  out.Family("streamreg_wal_fsync_duration_seconds", Type::kHistogram,
             "Seconds each fsync of a write-ahead log took (before an "
             "acknowledgement under --sync=always; by the syncer under "
             "--sync=interval).");
  out.Histogram("streamreg_wal_fsync_duration_seconds", {}, wal_fsync_.Read());
  const std::vector<std::shared_ptr<HostedModel>> models =
      registry.List("", std::numeric_limits<std::size_t>::max());
  out.Family("streamreg_models", Type::kGauge, "Models the server hosts.");
  out.Sample("streamreg_models", {}, std::uint64_t{models.size()});
  out.Family("streamreg_models_failed", Type::kGauge,
             "Models whose files could not be recovered at start (see the "
             "log; they take no calls).");
  out.Sample("streamreg_models_failed", {},
             std::uint64_t{registry.failed().size()});
  WriteAdmissionMetrics(registry, out);
  WriteModelMetrics(models, absl::Now(), out);
  if (cluster != nullptr) WriteClusterMetrics(cluster->report(), out);
  return out.Take();
}

}  // namespace streamreg
