#include "server/rpc/learn_reactor.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/durability_trailer.h"
#include "server/rpc/call_deadline.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/request_limits.h"
#include "server/rpc/wire_conversion.h"

namespace streamreg {
namespace {

// An engine's error on this stream: its field `from` (the engine's name)
// named `to` (the stream's), after `where`.
absl::Status Renamed(const absl::Status& status, const std::string& where,
                     absl::string_view from, absl::string_view to) {
  absl::string_view message = status.message();
  std::string field(message);
  if (absl::ConsumePrefix(&message, from)) field = absl::StrCat(to, message);
  return WithMessage(status, absl::StrCat(where, ": ", field));
}

// The engine names the only sample of the batch "samples[0]"; on this
// stream it is the message's "sample".
absl::Status AsSampleError(const absl::Status& status,
                           const std::string& where) {
  return Renamed(status, where, "samples[0]", "sample");
}

// The engine names an ahead query "queries[i]"; on this stream it is
// "ahead[i]".
absl::Status AsAheadError(const absl::Status& status,
                          const std::string& where) {
  return Renamed(status, where, "queries", "ahead");
}

// How stale the answer's first prediction was.
void SetStaleness(const HostedModel::StandingPrediction& standing,
                  v1::LearnResponse* answer) {
  answer->set_learned(standing.prediction.learned);
  answer->set_unlearned(standing.unlearned);
  answer->set_learn_lag_us(static_cast<std::uint64_t>(
      absl::ToInt64Microseconds(standing.learn_lag)));
}

// "message N" of the 1-based message `number` (errors count from 0).
std::string MessageName(std::uint64_t number) {
  return absl::StrCat("message ", number - 1);
}

}  // namespace

LearnReactor::LearnReactor(Call* call, const ModelRegistry* registry,
                           const AccessControl* access)
    : StreamReactor(call),
      context_(call->context()),
      stream_(registry, access, *context_, Permission::kWrite) {
  if (absl::Status status = stream_.Authenticate(); !status.ok()) {
    {
      MutexLock lock(&mutex_);
      finished_ = true;
    }
    Finish(ToGrpcStatus(status));
    return;
  }
  StartRead(&request_);
}

void LearnReactor::OnReadDone(bool ok) {
  bool handle = false;
  {
    MutexLock lock(&mutex_);
    reading_ = false;
    if (!ok) {  // the client half-closed, or the call is gone
      half_closed_ = true;
      if (context_->IsCancelled() && !end_.has_value()) {
        end_ = absl::CancelledError("call cancelled");
      }
    } else if (!end_.has_value()) {  // (an ending call takes no message)
      handle = handling_ = true;
    }
  }
  std::optional<v1::LearnResponse> answer;
  std::optional<HandOn> hand_on;
  absl::Status status = handle ? Accept(&answer, &hand_on) : absl::OkStatus();
  Step step;
  {
    MutexLock lock(&mutex_);
    if (handle) handling_ = false;
    if (!status.ok() && !end_.has_value()) end_ = std::move(status);
    if (answer.has_value() && !end_.has_value()) {
      answer->set_durable_messages(durable_.through());
      response_ = *std::move(answer);
      writing_ = true;
      step = Step::kWrite;
    } else {
      step = Advance();
    }
  }
  if (step != Step::kNone) Take(step);
  // After the answer's write started, so that it is not behind the hand-off
  // (which wakes the model's write queue). The call cannot end meanwhile:
  // it waits for the sample's report (in_commit_), and its write completes
  // on this thread, after this returns.
  if (hand_on.has_value()) {
    hand_on->model->LearnInGroup(std::move(hand_on->request));
  }
}

absl::StatusOr<ValidatedSamples> LearnReactor::CheckedSamples(
    const HostedModel& model) const {
  if (request_.samples().empty()) {
    // A message of queries alone holds no sample.
    if (!request_.has_sample() && !request_.ahead().empty()) {
      return ValidatedSamples();
    }
    const Sample wire_sample = SampleFromWire(request_.sample());
    absl::StatusOr<ValidatedSamples> sample =
        model.model().Validate({&wire_sample, 1});
    if (!sample.ok()) return AsSampleError(sample.status(), stream_.Where());
    return sample;
  }
  if (request_.has_sample()) {
    return absl::InvalidArgumentError(absl::StrCat(
        stream_.Where(), ": sample and samples: set one, not both"));
  }
  if (absl::Status status =
          CheckRepeatedCount(static_cast<std::size_t>(request_.samples_size()),
                             kMaxLearnSamplesPerMessage, "samples");
      !status.ok()) {
    return Prefixed(status, stream_.Where());
  }
  absl::StatusOr<ValidatedSamples> samples =
      model.model().Validate(SamplesFromWire(request_.samples()));
  if (!samples.ok()) return Prefixed(samples.status(), stream_.Where());
  return samples;
}

absl::Status LearnReactor::PredictAhead(const HostedModel& model,
                                        std::vector<Prediction>* ahead,
                                        v1::LearnResponse* answer) const {
  if (request_.ahead().empty()) return absl::OkStatus();
  if (absl::Status status =
          CheckRepeatedCount(static_cast<std::size_t>(request_.ahead_size()),
                             kMaxAheadPerMessage, "ahead");
      !status.ok()) {
    return Prefixed(status, stream_.Where());
  }
  absl::StatusOr<HostedModel::StandingPrediction> staleness =
      model.PredictAhead(QueriesFromWire(request_.ahead()), ahead);
  if (!staleness.ok()) return AsAheadError(staleness.status(), stream_.Where());
  // Said of the samples' answers when there are any (made after these).
  SetStaleness(*staleness, answer);
  return absl::OkStatus();
}

void LearnReactor::SendAhead(HostedModel& model, std::vector<Prediction>& ahead,
                             v1::LearnResponse* answer) const {
  std::vector<std::uint64_t> sample_ids;
  sample_ids.reserve(ahead.size());
  for (const v1::Query& query : request_.ahead()) {
    sample_ids.push_back(query.sample_id());
  }
  model.SendAhead(sample_ids, ahead);
  for (const Prediction& prediction : ahead) {
    PredictionToWire(prediction, answer->add_ahead());
  }
}

absl::Status LearnReactor::AnswerAsItStands(HostedModel& model,
                                            const ValidatedSamples& samples,
                                            v1::LearnResponse* answer) const {
  for (std::size_t i = 0; i < samples.size(); ++i) {
    absl::StatusOr<HostedModel::StandingPrediction> standing =
        model.AnswerAsItStands(samples[i]);
    if (!standing.ok()) return Prefixed(standing.status(), stream_.Where());
    if (i == 0) SetStaleness(*standing, answer);
    PredictionToWire(standing->prediction, request_.samples().empty()
                                               ? answer->mutable_prediction()
                                               : answer->add_predictions());
  }
  return absl::OkStatus();
}

absl::Status LearnReactor::Accept(std::optional<v1::LearnResponse>* answer,
                                  std::optional<HandOn>* hand_on) {
  absl::StatusOr<std::shared_ptr<HostedModel>> found =
      stream_.Next(request_.model());
  if (!found.ok()) return found.status();
  std::shared_ptr<HostedModel> model = *std::move(found);
  const std::uint64_t number = stream_.messages();
  // Checked once, here, into a copy of their own (the next read reuses
  // request_).
  const bool answer_waits = request_.answer_when_durable();
  if (answer_waits && request_.skip_answers()) {
    return absl::InvalidArgumentError(absl::StrCat(
        stream_.Where(), ": answer_when_durable and skip_answers: set one"));
  }
  absl::StatusOr<ValidatedSamples> samples = CheckedSamples(*model);
  if (!samples.ok()) return samples.status();
  // Predicted before anything of the message is admitted (a bad query
  // refuses it whole), kept only once it is.
  v1::LearnResponse now;
  std::vector<Prediction> ahead;
  if (absl::Status status = PredictAhead(*model, &ahead, &now); !status.ok()) {
    return status;
  }
  if (samples->empty()) {  // queries alone: durable, as nothing is to be
    SendAhead(*model, ahead, &now);
    {
      MutexLock lock(&mutex_);
      durable_.MarkDurable(number);
    }
    *answer = std::move(now);
    return absl::OkStatus();
  }
  absl::StatusOr<AdmissionTicket> admitted =
      stream_.AdmitStreamedSamples(samples->size());
  if (!admitted.ok()) return admitted.status();
  SendAhead(*model, ahead, &now);
  model->SamplesArrived(*samples);
  if (!answer_waits) {
    // Answer first: predicted before the samples are handed on, so the
    // predictions cannot have learned them.
    if (!request_.skip_answers()) {
      if (absl::Status status = AnswerAsItStands(*model, *samples, &now);
          !status.ok()) {
        return status;
      }
    }
    *answer = std::move(now);
  }
  {
    MutexLock lock(&mutex_);
    ++in_commit_;
    awaiting_answer_ = answer_waits;
    if (answer_waits) held_ahead_ = std::move(*now.mutable_ahead());
  }
  // Announced once answered: the answers above did not count themselves.
  WriteTicket ticket = model->Announce(*std::move(admitted), samples->size());
  hand_on->emplace(
      HandOn{.model = model,
             .request = {.sample = *std::move(samples),
                         .ticket = std::move(ticket),
                         .predict = answer_waits,
                         .abandoned =
                             [this] {
                               MutexLock lock(&mutex_);
                               return write_failed_ || context_->IsCancelled();
                             },
                         .deadline = CallDeadline(*context_),
                         .done =
                             [this, number, answer_waits,
                              batched = !request_.samples().empty()](
                                 LearnBatcher::Result result) {
                               Logged(number, answer_waits, batched,
                                      std::move(result));
                             }}});
  return absl::OkStatus();
}

void LearnReactor::Logged(std::uint64_t number, bool answer_waits, bool batched,
                          LearnBatcher::Result result) {
  Step step = Step::kNone;
  {
    MutexLock lock(&mutex_);
    --in_commit_;
    if (answer_waits) awaiting_answer_ = false;
    if (!result.status.ok()) {
      write_failed_ = true;
      if (!end_.has_value()) {
        end_ = WithMessage(
            result.status,
            absl::StrCat(MessageName(number),
                         result.sync_deferred
                             ? ": sample learned, not durable: "
                             : ": sample not durable, not learned: ",
                         result.status.message()));
      }
    } else {
      durable_.MarkDurable(number);
    }
    if (answer_waits && result.status.ok() && !end_.has_value()) {
      response_.Clear();
      for (const Prediction& before : result.before) {
        PredictionToWire(before, batched ? response_.add_predictions()
                                         : response_.mutable_prediction());
      }
      *response_.mutable_ahead() = std::move(held_ahead_);
      held_ahead_.Clear();
      const std::uint64_t learned = result.before.front().learned;
      const std::uint64_t first =
          result.sequence + 1 -
          static_cast<std::uint64_t>(result.before.size());
      response_.set_sequence(result.sequence);
      response_.set_duplicate(result.duplicate);
      response_.set_learned(learned);
      response_.set_unlearned(
          result.duplicate || learned >= first ? 0 : first - 1 - learned);
      response_.set_learn_lag_us(static_cast<std::uint64_t>(
          absl::ToInt64Microseconds(result.learn_lag)));
      response_.set_durable_messages(durable_.through());
      writing_ = true;
      step = Step::kWrite;
    } else {
      step = Advance();
    }
  }
  if (step != Step::kNone) Take(step);
}

void LearnReactor::OnWriteDone(bool ok) {
  Step step;
  {
    MutexLock lock(&mutex_);
    writing_ = false;
    if (!ok && !end_.has_value()) {  // the client is gone
      end_ = absl::CancelledError("call cancelled");
    }
    step = Advance();
  }
  if (step != Step::kNone) Take(step);
}

LearnReactor::Step LearnReactor::Advance() {
  // A write in flight or a message being handled advances when done.
  if (finished_ || writing_ || handling_) return Step::kNone;
  if (end_.has_value()) {
    // Finished only once the group commit holds nothing of this call
    // (its reports refer to this reactor).
    if (in_commit_ > 0) return Step::kNone;
    finished_ = true;
    return Step::kFinish;
  }
  if (half_closed_) {
    // Every sample durable: OK, with the final watermark in the trailer.
    if (in_commit_ > 0) return Step::kNone;
    end_ = absl::OkStatus();
    finished_ = true;
    return Step::kFinish;
  }
  if (reading_ || awaiting_answer_) return Step::kNone;
  reading_ = true;
  return Step::kRead;
}

void LearnReactor::Take(Step step) {
  switch (step) {
    case Step::kNone:
      return;
    case Step::kRead:
      StartRead(&request_);
      return;
    case Step::kWrite:
      StartWrite(&response_);
      return;
    case Step::kFinish: {
      absl::Status status;
      std::uint64_t durable = 0;
      {
        MutexLock lock(&mutex_);
        status = *end_;
        durable = durable_.through();
      }
      context_->AddTrailingMetadata(kDurableMessagesTrailer,
                                    absl::StrCat(durable));
      Finish(ToGrpcStatus(status, *context_));
      return;
    }
  }
}

}  // namespace streamreg
