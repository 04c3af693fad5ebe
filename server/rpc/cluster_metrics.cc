#include "server/rpc/cluster_metrics.h"

#include <cstdint>
#include <initializer_list>

namespace streamreg {
namespace {

using Type = PrometheusText::Type;

// A family of one series without labels.
struct Single {
  const char* name;
  const char* help;
  std::uint64_t value;
};

void WriteSingles(Type type, std::initializer_list<Single> singles,
                  PrometheusText& out) {
  for (const Single& single : singles) {
    out.Family(single.name, type, single.help);
    out.Sample(single.name, {}, single.value);
  }
}

}  // namespace

void WriteClusterMetrics(const ClusterNode::Report& report,
                         PrometheusText& out) {
  std::uint64_t catching_up = 0;
  std::uint64_t fell_behind = 0;
  for (const ClusterNode::Report::Hosted& hosted : report.hosted) {
    catching_up += hosted.catching_up ? 1 : 0;
    fell_behind += hosted.fell_behind ? 1 : 0;
  }
  WriteSingles(
      Type::kGauge,
      {
          {"streamreg_cluster_live_servers",
           "Servers of the cluster this server last saw alive (itself "
           "included); a server missing from it for server_ttl has its "
           "models placed elsewhere.",
           report.live_servers},
          {"streamreg_cluster_models_hosted",
           "Models this server hosts a replica of.", report.hosted.size()},
          {"streamreg_cluster_models_catching_up",
           "Replicas on this server still replaying their log's tail "
           "(just hosted: writes go to the model's other servers).",
           catching_up},
          {"streamreg_cluster_models_fell_behind",
           "Replicas on this server whose next log entry was compacted "
           "away (hosted again from the newest snapshot next round).",
           fell_behind},
          {"streamreg_cluster_models_not_hosted",
           "Models placed on this server whose hosting failed and is "
           "retried with a backoff (up to a try every 4 s; the log's "
           "event=cluster_host_failed says why).",
           report.not_hosted},
      },
      out);
  out.Family("streamreg_cluster_log_applied_sequence", Type::kGauge,
             "The last entry of the model's replicated log this replica "
             "applied; every replica applies the same entries, so the "
             "difference from another server's is how far it is behind.");
  for (const ClusterNode::Report::Hosted& hosted : report.hosted) {
    out.Sample("streamreg_cluster_log_applied_sequence",
               {{"model", hosted.model}}, hosted.applied);
  }
  WriteSingles(
      Type::kCounter,
      {
          {"streamreg_cluster_heartbeat_failures_total",
           "Heartbeats (this server's liveness renewals) the cluster did not "
           "take; server_ttl without one and the others take it for gone.",
           report.heartbeat_failures},
          {"streamreg_cluster_reconcile_failures_total",
           "Reconcile rounds (hosting what the placements name, re-placing "
           "models) that could not finish.",
           report.reconcile_failures},
          {"streamreg_cluster_host_failures_total",
           "Tries to start hosting a model placed here that failed (retried "
           "after a backoff).",
           report.host_failures},
          {"streamreg_cluster_snapshots_total",
           "Whole snapshots this server put into the cluster (it snapshots "
           "the models whose placement it heads).",
           report.snapshots},
          {"streamreg_cluster_snapshot_increments_total",
           "Snapshot increments this server put into the cluster (a model's "
           "state and the samples since its snapshot before).",
           report.snapshot_increments},
          {"streamreg_cluster_snapshot_failures_total",
           "Snapshots this server tried and could not put (the log is then "
           "not compacted).",
           report.snapshot_failures},
          {"streamreg_cluster_models_moved_total",
           "Models this server re-placed as the first live server (a server "
           "gone or joined).",
           report.models_moved},
          {"streamreg_cluster_logs_given_up_total",
           "New model logs this server's creates gave up for another (no "
           "leader elected within a second or more: a NATS node down, "
           "drawn as the log's preferred leader).",
           report.logs_given_up},
          {"streamreg_cluster_orphan_streams_removed_total",
           "Model logs and snapshot streams no placement reads any more "
           "(left by a create or a deletion whose server stopped first) "
           "that this server removed as the first live server.",
           report.orphan_streams_removed},
          {"streamreg_cluster_fit_results_published_total",
           "MLKR fit results this server computed and published for the "
           "other replicas of its models.",
           report.fit_results_published},
          {"streamreg_cluster_fit_results_received_total",
           "MLKR fit results from other servers for models hosted here.",
           report.fit_results_received},
          {"streamreg_cluster_fit_results_refused_total",
           "Of those, messages that were not a fit's result for the model "
           "(event=cluster_fit_refused): that fit is computed here.",
           report.fit_results_refused},
      },
      out);
}

}  // namespace streamreg
