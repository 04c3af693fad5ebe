#ifndef STREAMREG_SERVER_TELEMETRY_PROCESS_METRICS_H_
#define STREAMREG_SERVER_TELEMETRY_PROCESS_METRICS_H_

#include "server/telemetry/prometheus_text.h"

namespace streamreg {

// The standard process_* families every Prometheus client exports (resident
// and virtual memory, CPU seconds, start time, open and maximum file
// descriptors, threads), read from /proc/self at scrape time. Where /proc
// is missing, nothing is written.
void WriteProcessMetrics(PrometheusText& out);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_TELEMETRY_PROCESS_METRICS_H_
