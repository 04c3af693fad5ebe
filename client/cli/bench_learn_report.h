// `streamreg bench learn`'s report: a line per robot, the learn and
// durability lags, the fleet's and the predictors' latencies, the
// intervals' coverage and the model's own figures, printed; and the JSON
// report `--json` writes (and `--plots` draws).
#ifndef STREAMREG_CLIENT_CLI_BENCH_LEARN_REPORT_H_
#define STREAMREG_CLIENT_CLI_BENCH_LEARN_REPORT_H_

#include <cstdio>

#include "absl/status/status.h"
#include "client/cli/bench_learn_run.h"
#include "client/cli/cli_options.h"
#include "client/lib/client.h"

namespace streamreg {

// Prints the run's figures to `out`, reads the first model's own figures
// from the server, and writes and plots the JSON report if asked.
absl::Status ReportLearn(Client& client, const CliOptions& options,
                         const LearnPlan& plan, const LearnRuns& runs,
                         std::FILE* out);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_BENCH_LEARN_REPORT_H_
