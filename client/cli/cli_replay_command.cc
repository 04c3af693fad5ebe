// streamreg replay: acts like a robot controller — streams a CSV through
// Learn at a fixed rate and prints the live prequential error and latency.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/cli/cli_commands.h"
#include "client/cli/csv_columns.h"
#include "client/lib/learn_session.h"
#include "client/tools/latency_recorder.h"
#include "client/tools/rate_ticker.h"
#include "client/tools/terminal.h"
#include "common/command_line.h"
#include "common/normalized_error.h"

namespace streamreg {

absl::Status ReplayCommand(Client& client, const CliOptions& options,
                           std::FILE* out) {
  absl::StatusOr<std::string> model = ModelName(options);
  if (!model.ok()) return model.status();
  absl::StatusOr<CsvTable> table = ReadCsvOption(options);
  if (!table.ok()) return table.status();
  const double rate = options.rate;
  if (!(rate > 0)) {
    return UsageError("--rate: must be positive (samples/s)");
  }
  absl::StatusOr<v1::ModelSpec> spec =
      ModelSpecFor(client, options, *model, *table);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<CsvColumns> columns =
      MatchColumns(*table, *spec, true, ColumnMatchingOf(options));
  if (!columns.ok()) return columns.status();
  const std::size_t rows = RowLimit(options, *table);

  std::unique_ptr<LearnSession> session = client.StartLearn(*model);
  NormalizedError error(columns->targets.size());
  LatencyRecorder window;
  LatencyRecorder all;
  RateTicker ticker(rate);
  const absl::Time start = ticker.start();
  absl::Time next_report = start + absl::Seconds(1);
  std::vector<double> x;
  std::vector<double> y;
  for (std::size_t row = 0; row < rows; ++row) {
    ticker.Wait();
    x.clear();
    y.clear();
    AppendRow(*table, row, columns->inputs, &x);
    AppendRow(*table, row, columns->targets, &y);
    const absl::Time sent = absl::Now();
    absl::StatusOr<v1::LearnResponse> response = session->Learn(x, y);
    if (!response.ok()) return response.status();
    const absl::Duration latency = absl::Now() - sent;
    window.Add(latency);
    all.Add(latency);
    error.Add(PredictedValues(response->prediction()), y);
    if (absl::Now() >= next_report || row + 1 == rows) {
      std::fprintf(
          out,
          "t=%6.1fs samples=%zu rate=%.0f/s nMSE=%.4f latency_us p50=%.0f "
          "p99=%.0f max=%.0f\n",
          absl::ToDoubleSeconds(absl::Now() - start), row + 1,
          (row + 1) / absl::ToDoubleSeconds(absl::Now() - start),
          error.MeanNmse(), window.PercentileMicros(0.5),
          window.PercentileMicros(0.99), window.PercentileMicros(1.0));
      std::fflush(out);
      window.Clear();
      next_report += absl::Seconds(1);
    }
  }
  if (absl::Status status = session->Close(); !status.ok()) return status;
  std::fprintf(
      out,
      "replayed %zu samples at %.0f/s (target %.0f/s, %llu late ticks): "
      "prequential nMSE %.4f, latency_us p50 %.0f p90 %.0f p99 %.0f p99.9 "
      "%.0f\n",
      rows, rows / absl::ToDoubleSeconds(absl::Now() - start), rate,
      static_cast<unsigned long long>(ticker.late_ticks()), error.MeanNmse(),
      all.PercentileMicros(0.5), all.PercentileMicros(0.9),
      all.PercentileMicros(0.99), all.PercentileMicros(0.999));
  return absl::OkStatus();
}

}  // namespace streamreg
