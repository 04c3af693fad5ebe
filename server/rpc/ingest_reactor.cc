#include "server/rpc/ingest_reactor.h"

#include "absl/strings/str_cat.h"
#include "server/rpc/call_deadline.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/request_limits.h"
#include "server/rpc/wire_conversion.h"
#include "spdlog/spdlog.h"

namespace streamreg {

IngestReactor::IngestReactor(Call* call, const ModelRegistry* registry,
                             const AccessControl* access,
                             v1::IngestResponse* response)
    : StreamReactor(call),
      context_(call->context()),
      stream_(registry, access, *context_, Permission::kWrite),
      response_(response) {
  if (absl::Status status = stream_.Authenticate(); !status.ok()) {
    Finish(ToGrpcStatus(status));
    return;
  }
  StartRead(&request_);
}

void IngestReactor::OnReadDone(bool ok) {
  if (!ok) {  // the client closed the stream (or the call is cancelled)
    Finish(StreamEndStatus(context_));
    return;
  }
  absl::StatusOr<std::shared_ptr<HostedModel>> model =
      stream_.Next(request_.model());
  if (!model.ok()) return Fail(model.status());
  if (request_.samples().empty()) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat(stream_.Where(), ": samples: empty batch")));
  }
  if (absl::Status status =
          CheckRepeatedCount(static_cast<std::size_t>(request_.samples_size()),
                             kMaxSamplesPerMessage, "samples");
      !status.ok()) {
    return Fail(Prefixed(status, stream_.Where()));
  }
  // Checked once, here, into a copy of their own.
  absl::StatusOr<ValidatedSamples> batch =
      (*model)->model().Validate(SamplesFromWire(request_.samples()));
  if (!batch.ok()) return Fail(Prefixed(batch.status(), stream_.Where()));
  absl::StatusOr<AdmissionTicket> admitted = stream_.AdmitSamples(
      **model, static_cast<std::uint64_t>(request_.samples_size()));
  if (!admitted.ok()) return Fail(admitted.status());
  // Counted in Learn streams' answers as received, not learned, from now.
  WriteTicket ticket = (*model)->Announce(*std::move(admitted), batch->size());
  (*model)->LearnInTurn(
      {.samples = *std::move(batch),
       .ticket = std::move(ticket),
       .deadline = CallDeadline(*context_),
       .abandoned = [this] { return context_->IsCancelled(); },
       .done =
           [this](absl::StatusOr<LearnOutcome> outcome) { Learned(outcome); }});
}

void IngestReactor::Learned(const absl::StatusOr<LearnOutcome>& outcome) {
  if (!outcome.ok()) return Fail(Prefixed(outcome.status(), stream_.Where()));
  response_->set_accepted(response_->accepted() + outcome->accepted);
  response_->set_duplicates(response_->duplicates() + outcome->duplicates);
  response_->set_batches(response_->batches() + 1);
  response_->set_num_samples(outcome->num_samples);
  StartRead(&request_);
}

void IngestReactor::Fail(const absl::Status& status) {
  const absl::Status reported =
      response_->batches() == 0
          ? status
          : WithMessage(
                status,
                absl::StrCat(status.message(), " (", response_->batches(),
                             " earlier messages were learned: ",
                             response_->accepted(), " samples)"));
  spdlog::debug("event=ingest_failed status={}", reported.ToString());
  Finish(ToGrpcStatus(reported, *context_));
}

}  // namespace streamreg
