#ifndef STREAMREG_METRICS_PROCESS_METRICS_H_
#define STREAMREG_METRICS_PROCESS_METRICS_H_

#include "metrics/prometheus_text.h"

namespace streamreg {

// The standard process_* families every Prometheus client exports (resident
// and virtual memory, CPU seconds, start time, open and maximum file
// descriptors, threads), read from /proc/self at scrape time. Where /proc
// is missing, nothing is written.
void WriteProcessMetrics(PrometheusText& out);

}  // namespace streamreg

#endif  // STREAMREG_METRICS_PROCESS_METRICS_H_
