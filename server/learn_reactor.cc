#include "server/learn_reactor.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/grpc_status.h"
#include "server/wire_conversion.h"

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
  return absl::Status(status.code(), absl::StrCat(where, ": ", field));
}

}  // namespace

LearnReactor::LearnReactor(grpc::CallbackServerContext* context,
                           const ModelRegistry* registry)
    : context_(context), stream_(registry) {
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
  (*model)->writes().Post([this, model = *model] { Learn(model); });
}

void LearnReactor::Learn(const std::shared_ptr<HostedModel>& model) {
  if (context_->IsCancelled()) {
    Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                        absl::StrCat(stream_.Where(),
                                     ": not learned, the call was cancelled")));
    return;
  }
  const Sample batch[] = {SampleFromWire(request_.sample())};
  absl::StatusOr<LearnOutcome> outcome = model->Learn(batch, &before_);
  if (!outcome.ok()) {
    Finish(ToGrpcStatus(AsSampleError(outcome.status(), stream_.Where())));
    return;
  }
  response_.Clear();
  PredictionToWire(before_[0], response_.mutable_prediction());
  response_.set_sequence(outcome->sequence[0]);
  response_.set_duplicate(outcome->duplicate[0]);
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
