#include "server/rpc/refit_reactor.h"

#include <utility>

#include "absl/time/clock.h"
#include "server/rpc/call_deadline.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/wire_conversion.h"
#include "spdlog/spdlog.h"

namespace streamreg {

RefitReactor::RefitReactor(Call* call,
                           absl::StatusOr<std::shared_ptr<HostedModel>> model,
                           absl::Time deadline)
    : StreamReactor(call), deadline_(deadline) {
  if (!model.ok()) {
    finished_ = true;
    Finish(ToGrpcStatus(model.status()));
  } else {
    model_ = *std::move(model);
    model_->RefitInTurn(
        [this](std::size_t done, std::size_t total) {
          v1::RefitProgress progress;
          progress.set_done(done);
          progress.set_total(total);
          Publish(std::move(progress));
        },
        deadline_, [this](absl::Status status) { Refitted(status); });
  }
}

void RefitReactor::Refitted(const absl::Status& status) {
  if (status.ok()) {
    v1::RefitProgress last;
    StatsToWire(*model_, {.deadline = FiguresAnswerBy(deadline_)},
                last.mutable_stats());
    const std::uint64_t samples = last.stats().num_stored();
    last.set_done(samples);
    last.set_total(samples);
    Publish(std::move(last));
    spdlog::info("event=refit model={} samples={} seconds={:.3f}",
                 model_->name(), samples,
                 absl::ToDoubleSeconds(absl::Now() - start_));
  }
  MutexLock lock(&mutex_);
  result_ = ToGrpcStatus(status);
  FinishIfDone();
}

void RefitReactor::Publish(v1::RefitProgress progress) {
  MutexLock lock(&mutex_);
  if (write_in_flight_) {
    pending_ = std::move(progress);
    return;
  }
  writing_ = std::move(progress);
  write_in_flight_ = true;
  StartWrite(&writing_);
}

void RefitReactor::OnWriteDone(bool ok) {
  MutexLock lock(&mutex_);
  write_in_flight_ = false;
  if (ok && pending_.has_value()) {
    writing_ = *std::move(pending_);
    pending_.reset();
    write_in_flight_ = true;
    StartWrite(&writing_);
    return;
  }
  pending_.reset();  // a failed write: the client is gone
  FinishIfDone();
}

void RefitReactor::FinishIfDone() {
  if (finished_ || write_in_flight_ || pending_.has_value() ||
      !result_.has_value()) {
    return;
  }
  finished_ = true;
  Finish(*result_);
}

}  // namespace streamreg
