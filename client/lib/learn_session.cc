#include "client/lib/learn_session.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/lib/internal/attempt_bound.h"
#include "client/lib/internal/client_routes.h"
#include "client/lib/internal/retry_call.h"
#include "common/durability_trailer.h"

namespace streamreg {

LearnSession::LearnSession(Client* client, std::string model,
                           LearnSessionOptions options)
    : client_(client),
      model_(std::move(model)),
      options_(std::move(options)),
      bound_(std::make_unique<AttemptBound>(client_, model_)) {}

LearnSession::~LearnSession() {
  if (stream_ != nullptr) context_->TryCancel();
}

std::size_t LearnSession::unconfirmed_samples() const {
  std::size_t samples = 0;
  for (const Unconfirmed& entry : unconfirmed_) samples += entry.samples;
  return samples;
}

absl::Duration LearnSession::durability_lag(absl::Time now) const {
  if (unconfirmed_.empty()) return absl::ZeroDuration();
  return now - unconfirmed_.front().first_sent;
}

absl::StatusOr<v1::LearnResponse> LearnSession::Learn(std::span<const double> x,
                                                      std::span<const double> y,
                                                      std::uint64_t sample_id) {
  v1::LearnRequest request;
  request.mutable_sample()->mutable_x()->Assign(x.begin(), x.end());
  request.mutable_sample()->mutable_y()->Assign(y.begin(), y.end());
  request.mutable_sample()->set_sample_id(
      sample_id != 0 ? sample_id : client_->NextSampleId());
  return Send(std::move(request), 1);
}

absl::StatusOr<v1::LearnResponse> LearnSession::LearnAhead(
    std::span<const TickSample> samples, std::span<const AheadPoint> ahead,
    bool answer_samples) {
  if (samples.empty() && ahead.empty()) {
    return absl::InvalidArgumentError("LearnAhead: no sample and no query");
  }
  v1::LearnRequest request;
  request.set_skip_answers(!answer_samples);
  for (const TickSample& tick : samples) {
    v1::Sample* sample = request.add_samples();
    sample->mutable_x()->Assign(tick.x.begin(), tick.x.end());
    sample->mutable_y()->Assign(tick.y.begin(), tick.y.end());
    sample->set_sample_id(tick.sample_id != 0 ? tick.sample_id
                                              : client_->NextSampleId());
  }
  for (const AheadPoint& point : ahead) {
    v1::Query* query = request.add_ahead();
    query->mutable_x()->Assign(point.x.begin(), point.x.end());
    query->set_sample_id(point.sample_id);
  }
  return Send(std::move(request), samples.size());
}

absl::StatusOr<v1::LearnResponse> LearnSession::Send(v1::LearnRequest request,
                                                     std::uint64_t samples) {
  Unconfirmed& entry = unconfirmed_.emplace_back();
  entry.serial = ++serials_;
  entry.number = samples_ + 1;
  entry.samples = samples;
  samples_ += samples;
  entry.first_sent = absl::Now();
  entry.request = std::move(request);
  entry.request.set_model(model_);
  entry.request.set_answer_when_durable(options_.answer_when_durable);
  const std::uint64_t serial = entry.serial;
  v1::LearnResponse response;
  const absl::Status status = RetryCall(
      client_->options().retry,
      [&](int /*attempt*/) { return TryLearn(&response); },
      &RetryPolicy::IsRetryableResend);
  if (!status.ok()) {
    // The caller has this message's error: it is not resent from here on.
    if (!unconfirmed_.empty() && unconfirmed_.back().serial == serial) {
      unconfirmed_.pop_back();
    }
    return status;
  }
  return response;
}

absl::Status LearnSession::TryLearn(v1::LearnResponse* response) {
  // The message to send is the last unconfirmed one: a watermark covers
  // only messages sent, and it is sent last.
  if (stream_ == nullptr) {
    if (absl::Status status = Reopen(1); !status.ok()) return status;
  }
  return Exchange(unconfirmed_.back(), response);
}

void LearnSession::Cancel() {
  absl::MutexLock lock(&cancel_mutex_);
  cancelled_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

absl::Status LearnSession::Reopen(std::size_t keep) {
  {
    absl::MutexLock lock(&cancel_mutex_);
    if (cancelled_) return absl::CancelledError("the session was cancelled");
    context_ = std::make_unique<grpc::ClientContext>();  // no deadline
  }
  server_ = ClientRoutes::Of(*client_).For(model_);
  stream_ = server_->regression->Learn(context_.get());
  messages_ = 0;
  // Resent in order; each answer's watermark may confirm some of them.
  const std::size_t resend =
      unconfirmed_.size() > keep ? unconfirmed_.size() - keep : 0;
  std::vector<std::uint64_t> serials;
  for (std::size_t i = 0; i < resend; ++i) {
    serials.push_back(unconfirmed_[i].serial);
  }
  for (const std::uint64_t serial : serials) {
    // Confirm() may have dropped entries from the front meanwhile.
    for (Unconfirmed& entry : unconfirmed_) {
      if (entry.serial != serial) continue;
      v1::LearnResponse dropped;
      if (absl::Status status = Exchange(entry, &dropped); !status.ok()) {
        return status;
      }
      break;
    }
  }
  return absl::OkStatus();
}

absl::Status LearnSession::Exchange(Unconfirmed& entry,
                                    v1::LearnResponse* response) {
  entry.message = ++messages_;
  bound_->Arm(context_.get());
  const bool answered =
      stream_->Write(entry.request) && stream_->Read(response);
  const bool timed_out = bound_->Disarm();
  if (answered) Confirm(response->durable_messages());
  if (timed_out) {
    // Cancelled: the stream is given up, and the samples it did not
    // report durable go to the next server (an answer that came just in
    // time is kept).
    (void)stream_->Finish();
    absl::Status silent = Abandon(absl::UnavailableError(absl::StrCat(
        "server ", server_->address, " did not answer a sample within ",
        absl::FormatDuration(client_->options().replica_attempt_timeout),
        "; sending it to another")));
    if (!answered) return silent;
  } else if (!answered) {
    return Broken();
  }
  return absl::OkStatus();
}

void LearnSession::Confirm(std::uint64_t durable_messages) {
  const absl::Time now = absl::Now();
  while (!unconfirmed_.empty() && unconfirmed_.front().message != 0 &&
         unconfirmed_.front().message <= durable_messages) {
    const Unconfirmed& entry = unconfirmed_.front();
    durable_samples_ += entry.samples;
    if (options_.on_durable) {
      for (std::uint64_t i = 0; i < entry.samples; ++i) {
        options_.on_durable(entry.number + i, now - entry.first_sent);
      }
    }
    unconfirmed_.pop_front();
  }
}

absl::Status LearnSession::Broken() {
  stream_->WritesDone();
  absl::Status status = FromGrpcStatus(stream_->Finish(), *context_);
  if (status.ok()) {
    status = absl::UnavailableError("the server closed the stream");
  }
  return Abandon(std::move(status));
}

absl::Status LearnSession::Abandon(absl::Status status) {
  stream_.reset();
  // Sent on no call now: each is sent again on the next.
  for (Unconfirmed& entry : unconfirmed_) entry.message = 0;
  if (!status.ok() && server_ != nullptr) {
    ClientRoutes::Of(*client_).Failed(model_, *server_, status);
  }
  return status;
}

absl::Status LearnSession::Close() {
  if (stream_ == nullptr && unconfirmed_.empty()) return absl::OkStatus();
  return RetryCall(
      client_->options().retry, [&](int /*attempt*/) { return TryClose(); },
      &RetryPolicy::IsRetryableResend);
}

absl::Status LearnSession::TryClose() {
  if (stream_ == nullptr) {
    if (absl::Status status = Reopen(0); !status.ok()) return status;
  }
  stream_->WritesDone();
  v1::LearnResponse response;
  while (stream_->Read(&response)) {  // none is due; read to the end
    Confirm(response.durable_messages());
  }
  absl::Status status = FromGrpcStatus(stream_->Finish(), *context_);
  if (!status.ok()) return Abandon(std::move(status));
  stream_.reset();
  // Ended OK: every message of the call is durable (the trailer says how
  // many there were).
  const auto& trailers = context_->GetServerTrailingMetadata();
  const auto found = trailers.find(kDurableMessagesTrailer);
  std::uint64_t durable = messages_;
  if (found != trailers.end() &&
      !absl::SimpleAtoi(
          absl::string_view(found->second.data(), found->second.size()),
          &durable)) {
    durable = 0;
  }
  Confirm(durable);
  if (!unconfirmed_.empty()) {  // not covered: sent again on a new call
    return Abandon(absl::UnavailableError(
        absl::StrCat("the server ended the stream with ", unconfirmed_samples(),
                     " samples not reported durable")));
  }
  return absl::OkStatus();
}

}  // namespace streamreg
