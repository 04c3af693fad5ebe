#include "server/cluster/fit_exchange.h"

#include <nats/nats.h>

#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/base/byte_coding.h"
#include "core/model/model_state_codec.h"
#include "server/cluster/subscription_reaper.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

constexpr absl::string_view kSubjectPrefix = "streamreg.fit.";
// A result's first bytes: what it is, and its encoding's version.
constexpr absl::string_view kMagic = "mlkrfit1";
// How long the destructor waits for the subscription to close (a delivery
// in progress to end).
constexpr absl::Duration kCloseWait = absl::Seconds(5);

}  // namespace

// One replica's side of the exchange (MlkrFitExchange), held by its model:
// shares what it computes through the server's exchange while that is
// there (Detach: the replica removed, or the exchange gone).
class FitExchange::ReplicaFits : public MlkrFitExchange {
 public:
  ReplicaFits(FitExchange* exchange, std::string subject,
              std::function<bool()> computes_first)
      : exchange_(exchange),
        subject_(std::move(subject)),
        computes_first_(std::move(computes_first)) {}

  bool ComputesFirst() const override {
    MutexLock lock(&mutex_);
    return exchange_ != nullptr && computes_first_();
  }
  void Share(std::uint64_t fit, const std::vector<MlkrMap>& maps) override {
    MutexLock lock(&mutex_);
    if (exchange_ != nullptr) exchange_->Publish(subject_, fit, maps);
  }
  void Detach() {
    MutexLock lock(&mutex_);
    exchange_ = nullptr;
  }

 private:
  mutable Mutex mutex_;
  FitExchange* exchange_ ABSL_GUARDED_BY(mutex_);
  const std::string subject_;
  const std::function<bool()> computes_first_;
};

FitExchange::FitExchange(JetStreamClient& client)
    : client_(client), id_(absl::Uniform<std::uint64_t>(absl::BitGen())) {}

absl::StatusOr<std::unique_ptr<FitExchange>> FitExchange::Start(
    JetStreamClient& client) {
  std::unique_ptr<FitExchange> exchange(new FitExchange(client));
  const std::string every_model = absl::StrCat(kSubjectPrefix, "*");
  natsSubscription* subscription = nullptr;
  natsStatus status = natsConnection_Subscribe(
      &subscription, client.connection(), every_model.c_str(),
      &FitExchange::OnMessage, exchange.get());
  if (status == NATS_OK) {
    exchange->subscription_ = subscription;
    status = natsSubscription_SetOnCompleteCB(
        subscription, &FitExchange::OnClosed, exchange.get());
  }
  if (status != NATS_OK) {
    return absl::UnavailableError(absl::StrCat(
        "subscribing to ", every_model, ": ", natsStatus_GetText(status)));
  }
  return exchange;
}

FitExchange::~FitExchange() {
  // Unsubscribed, and freed a while later, by the reaper (a reader thread
  // may still look it up); the library calls OnClosed once the handler
  // has returned for the last time.
  if (subscription_ != nullptr) SubscriptionReaper::Get().Retire(subscription_);
  MutexLock lock(&mutex_);
  const absl::Time deadline = absl::Now() + kCloseWait;
  while (subscription_ != nullptr && !closed_ &&
         closed_changed_.WaitUntil(&mutex_, deadline)) {
  }
  if (subscription_ != nullptr && !closed_) {
    spdlog::warn(
        "event=cluster_fit_exchange_close_slow seconds={:.1f} why=\"the NATS "
        "client did not report the subscription closed\"",
        absl::ToDoubleSeconds(kCloseWait));
  }
  for (auto& [stream, hosted] : hosted_) hosted.fits->Detach();
}

void FitExchange::OnClosed(void* self) {
  FitExchange* exchange = static_cast<FitExchange*>(self);
  MutexLock lock(&exchange->mutex_);
  exchange->closed_ = true;
  exchange->closed_changed_.SignalAll();
}

std::string FitExchange::Subject(absl::string_view log_stream) {
  return absl::StrCat(kSubjectPrefix, log_stream);
}

std::string FitExchange::Encode(std::uint64_t sender, std::uint64_t fit,
                                const std::vector<MlkrMap>& maps) {
  std::string bytes;
  ByteWriter out(&bytes);
  out.String(kMagic);
  out.U64(sender);
  out.U64(fit);
  SaveMlkrMaps(maps, out);
  return bytes;
}

absl::Status FitExchange::Decode(absl::string_view payload, std::size_t dim,
                                 std::uint64_t* sender, std::uint64_t* fit,
                                 std::vector<MlkrMap>* maps) {
  ByteReader in(payload);
  if (in.String() != kMagic) {
    return absl::DataLossError("not an MLKR fit's result");
  }
  *sender = in.U64();
  *fit = in.U64();
  if (absl::Status status = LoadMlkrMaps(in, dim, maps); !status.ok()) {
    return absl::DataLossError(
        absl::StrCat("an MLKR fit's result that is not maps over ", dim,
                     " inputs: ", status.message()));
  }
  if (!in.done()) return in.Finish("an MLKR fit's result");
  return absl::OkStatus();
}

void FitExchange::Add(const std::string& log_stream,
                      const std::shared_ptr<HostedModel>& model,
                      std::function<bool()> computes_first) {
  auto fits = std::make_shared<ReplicaFits>(this, Subject(log_stream),
                                            std::move(computes_first));
  {
    MutexLock lock(&mutex_);
    if (const auto old = hosted_.find(log_stream); old != hosted_.end()) {
      old->second.fits->Detach();
    }
    hosted_[log_stream] = Hosted{.model = model, .fits = fits};
  }
  model->ShareMlkrFits(std::move(fits));
}

void FitExchange::Remove(const std::string& log_stream) {
  Hosted hosted;
  {
    MutexLock lock(&mutex_);
    const auto it = hosted_.find(log_stream);
    if (it == hosted_.end()) return;
    hosted = std::move(it->second);
    hosted_.erase(it);
  }
  hosted.fits->Detach();
  if (auto model = hosted.model.lock(); model != nullptr) {
    model->ShareMlkrFits(nullptr);
  }
}

FitExchange::Counters FitExchange::counters() const {
  return {.published = published_.load(),
          .received = received_.load(),
          .refused = refused_.load()};
}

void FitExchange::Publish(const std::string& subject, std::uint64_t fit,
                          const std::vector<MlkrMap>& maps) {
  const std::string bytes = Encode(id_, fit, maps);
  // Buffered by the client: a connection down loses it, which only costs
  // the others the computation.
  if (natsConnection_Publish(client_.connection(), subject.c_str(),
                             bytes.data(),
                             static_cast<int>(bytes.size())) == NATS_OK) {
    published_.fetch_add(1);
  }
}

void FitExchange::OnMessage(natsConnection*, natsSubscription*,
                            natsMsg* message, void* self) {
  static_cast<FitExchange*>(self)->Received(
      natsMsg_GetSubject(message),
      absl::string_view(
          natsMsg_GetData(message),
          static_cast<std::size_t>(natsMsg_GetDataLength(message))));
  natsMsg_Destroy(message);
}

void FitExchange::Received(absl::string_view subject,
                           absl::string_view payload) {
  if (!absl::ConsumePrefix(&subject, kSubjectPrefix)) return;
  std::shared_ptr<HostedModel> model;
  {
    MutexLock lock(&mutex_);
    const auto it = hosted_.find(subject);
    if (it == hosted_.end()) return;  // not hosted here
    model = it->second.model.lock();
  }
  if (model == nullptr) return;
  std::uint64_t sender = 0, fit = 0;
  std::vector<MlkrMap> maps;
  const absl::Status decoded =
      Decode(payload, model->model().config().input_dim, &sender, &fit, &maps);
  if (decoded.ok() && sender == id_) return;  // its own, echoed
  received_.fetch_add(1);
  if (!decoded.ok()) {
    refused_.fetch_add(1);
    spdlog::warn("event=cluster_fit_refused model={} error=\"{}\"",
                 model->name(), std::string(decoded.message()));
    return;
  }
  (void)model->OfferMlkrFit(fit, std::move(maps));  // counted by the model
}

}  // namespace streamreg
