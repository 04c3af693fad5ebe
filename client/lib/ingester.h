#ifndef STREAMREG_CLIENT_LIB_INGESTER_H_
#define STREAMREG_CLIENT_LIB_INGESTER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "client/lib/client.h"

namespace streamreg {

// Streams samples into a model through Ingest: collects them into batches
// of options().batch_size and sends each as it fills. A stream is closed
// (and its batches acknowledged) every kBatchesPerStream batches or half
// its deadline (options().timeout), whichever comes first; until then its
// batches are kept, and if the stream breaks with a retryable status (or
// its deadline passes while the server is busy) they are sent again on a
// new one — the server skips the samples it
// already learned by their ids, so nothing is learned twice or lost.
// While the model has another server, a server that stops answering pings
// for replica_attempt_timeout (a paused process; StallProbe) has its
// stream cancelled, and the batches go to the next server. Errors that
// retrying cannot fix (a bad sample) are returned at once.
class Ingester {
 public:
  static constexpr std::size_t kBatchesPerStream = 16;

  Ingester(Client* client, std::string model);
  ~Ingester();

  // Adds a sample (id 0: the client assigns one); sends a full batch.
  absl::Status Add(std::span<const double> x, std::span<const double> y,
                   std::uint64_t sample_id = 0);
  // Sends what is left and waits for every acknowledgement.
  absl::StatusOr<IngestSummary> Finish();
  // Samples acknowledged so far.
  std::uint64_t acknowledged() const {
    return summary_.accepted + summary_.duplicates;
  }

 private:
  struct Stream;
  absl::Status SendBatch();
  // Closes the stream and takes its totals; resends on retryable errors.
  absl::Status CloseStream();
  absl::Status OpenAndResend(int attempt);

  Client* client_;
  std::string model_;
  v1::IngestRequest batch_;
  std::deque<v1::IngestRequest> unacknowledged_;
  std::unique_ptr<Stream> stream_;
  IngestSummary summary_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INGESTER_H_
