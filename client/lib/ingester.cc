#include "client/lib/ingester.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "client/lib/internal/client_routes.h"
#include "client/lib/internal/retry_call.h"
#include "client/lib/internal/stall_probe.h"

namespace streamreg {

struct Ingester::Stream {
  absl::Time opened = absl::Now();
  std::shared_ptr<ServerStubs> server;  // the stream is open on
  std::unique_ptr<grpc::ClientContext> context;
  v1::IngestResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::IngestRequest>> writer;
  // While the model has another server: cancels the stream if its server
  // stops answering pings (paused), so that the batches go to the next.
  std::unique_ptr<StallProbe> probe;  // last: stopped first

  // The call's status, a cancellation by the probe said as what it was.
  absl::Status Finished(const grpc::Status& status) const {
    if (probe != nullptr && probe->fired()) {
      return absl::UnavailableError(absl::StrCat(
          "server ", server->address, " did not answer a ping within ",
          absl::FormatDuration(probe->interval()),
          "; sending the batches to another"));
    }
    return FromGrpcStatus(status, *context);
  }
};

Ingester::Ingester(Client* client, std::string model)
    : client_(client), model_(std::move(model)) {
  batch_.set_model(model_);
}

Ingester::~Ingester() {
  if (stream_ != nullptr) stream_->context->TryCancel();
}

absl::Status Ingester::Add(std::span<const double> x, std::span<const double> y,
                           std::uint64_t sample_id) {
  v1::Sample& sample = *batch_.add_samples();
  sample.mutable_x()->Assign(x.begin(), x.end());
  sample.mutable_y()->Assign(y.begin(), y.end());
  sample.set_sample_id(sample_id != 0 ? sample_id : client_->NextSampleId());
  if (static_cast<std::size_t>(batch_.samples_size()) <
      client_->options().batch_size) {
    return absl::OkStatus();
  }
  return SendBatch();
}

absl::Status Ingester::SendBatch() {
  if (batch_.samples().empty()) return absl::OkStatus();
  unacknowledged_.push_back(std::move(batch_));
  batch_ = v1::IngestRequest();
  batch_.set_model(model_);
  const bool written =
      stream_ != nullptr && stream_->writer->Write(unacknowledged_.back());
  if (!written) {
    // No stream yet, or it broke: its status decides (CloseStream).
    if (stream_ == nullptr) {
      if (absl::Status status = RetryCall(
              client_->options().retry,
              [this](int attempt) { return OpenAndResend(attempt); },
              &RetryPolicy::IsRetryableResend);
          !status.ok()) {
        return status;
      }
    } else {
      return CloseStream();
    }
  }
  // Closed (acknowledged) every few batches, and well before its deadline
  // however slowly the server learns.
  if (unacknowledged_.size() >= kBatchesPerStream ||
      absl::Now() - stream_->opened >= client_->options().timeout / 2) {
    return CloseStream();
  }
  return absl::OkStatus();
}

absl::Status Ingester::OpenAndResend(int attempt) {
  if (attempt > 1) ++summary_.retries;
  stream_ = std::make_unique<Stream>();
  stream_->context = client_->NewContext();
  stream_->server = ClientRoutes::Of(*client_).For(model_);
  stream_->writer = stream_->server->regression->Ingest(stream_->context.get(),
                                                        &stream_->response);
  if (ClientRoutes::Of(*client_).CandidatesFor(model_) >= 2) {
    stream_->probe = std::make_unique<StallProbe>(
        stream_->server->regression.get(), stream_->context.get(),
        client_->options().replica_attempt_timeout,
        [this] { return client_->NewContext(); });
  }
  for (const v1::IngestRequest& batch : unacknowledged_) {
    if (!stream_->writer->Write(batch)) {
      stream_->writer->WritesDone();
      const absl::Status status = stream_->Finished(stream_->writer->Finish());
      ClientRoutes::Of(*client_).Failed(model_, *stream_->server, status);
      stream_.reset();
      return status;
    }
  }
  return absl::OkStatus();
}

absl::Status Ingester::CloseStream() {
  absl::Status status = RetryCall(
      client_->options().retry,
      [this](int attempt) -> absl::Status {
        if (stream_ == nullptr) {
          if (absl::Status opened = OpenAndResend(attempt); !opened.ok()) {
            return opened;
          }
        }
        stream_->writer->WritesDone();
        const absl::Status finished =
            stream_->Finished(stream_->writer->Finish());
        if (finished.ok()) {
          summary_.accepted += stream_->response.accepted();
          summary_.duplicates += stream_->response.duplicates();
          summary_.batches += stream_->response.batches();
          summary_.num_samples = stream_->response.num_samples();
          unacknowledged_.clear();
        } else {
          ClientRoutes::Of(*client_).Failed(model_, *stream_->server, finished);
        }
        stream_.reset();
        return finished;
      },
      &RetryPolicy::IsRetryableResend);
  return status;
}

absl::StatusOr<IngestSummary> Ingester::Finish() {
  if (absl::Status status = SendBatch(); !status.ok()) return status;
  if (!unacknowledged_.empty() || stream_ != nullptr) {
    if (absl::Status status = CloseStream(); !status.ok()) return status;
  }
  return summary_;
}

}  // namespace streamreg
