#include "server/rpc/learn_reactor.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/rpc/call_deadline.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/wire_conversion.h"

namespace streamreg {
namespace {

// The engine names the only sample of the batch "samples[0]"; on this
// stream it is the message's "sample".
absl::Status AsSampleError(const absl::Status& status,
                           const std::string& where) {
  absl::string_view message = status.message();
  std::string field(message);
  if (absl::ConsumePrefix(&message, "samples[0]")) {
    field = absl::StrCat("sample", message);
  }
  return WithMessage(status, absl::StrCat(where, ": ", field));
}

}  // namespace

LearnReactor::LearnReactor(grpc::CallbackServerContext* context,
                           const ModelRegistry* registry,
                           const AccessControl* access)
    : context_(context),
      stream_(registry, access, *context, Permission::kWrite) {
  if (absl::Status status = stream_.Authenticate(); !status.ok()) {
    Finish(ToGrpcStatus(status));
    return;
  }
  StartRead(&request_);
}

void LearnReactor::OnReadDone(bool ok) {
  if (!ok) {
    Finish(StreamEndStatus(context_));
    return;
  }
  absl::StatusOr<std::shared_ptr<HostedModel>> model =
      stream_.Next(request_.model());
  if (!model.ok()) {
    Finish(ToGrpcStatus(model.status()));
    return;
  }
  absl::StatusOr<AdmissionTicket> admitted = stream_.AdmitStreamedSample();
  if (!admitted.ok()) {
    Finish(ToGrpcStatus(admitted.status(), *context_));
    return;
  }
  admitted_ = *std::move(admitted);
  LearnBatcher::Submit(
      *model,
      {.sample = SampleFromWire(request_.sample()),
       .cancelled = [this] { return context_->IsCancelled(); },
       .deadline = CallDeadline(*context_),
       .done =
           [this](LearnBatcher::Result result) { Answer(std::move(result)); }});
}

void LearnReactor::Answer(LearnBatcher::Result result) {
  admitted_.Release();  // before the next read admits the next sample
  if (!result.status.ok()) {
    Finish(
        ToGrpcStatus(AsSampleError(result.status, stream_.Where()), *context_));
    return;
  }
  response_.Clear();
  PredictionToWire(result.before, response_.mutable_prediction());
  response_.set_sequence(result.sequence);
  response_.set_duplicate(result.duplicate);
  response_.set_learned(result.before.learned);
  response_.set_learn_lag_us(
      static_cast<std::uint64_t>(absl::ToInt64Microseconds(result.learn_lag)));
  StartWrite(&response_);
}

void LearnReactor::OnWriteDone(bool ok) {
  if (!ok) {  // the client is gone
    Finish(StreamEndStatus(context_, /*write_failed=*/true));
    return;
  }
  StartRead(&request_);
}

}  // namespace streamreg
