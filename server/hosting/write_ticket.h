#ifndef STREAMREG_SERVER_HOSTING_WRITE_TICKET_H_
#define STREAMREG_SERVER_HOSTING_WRITE_TICKET_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "server/hosting/admission_gate.h"
#include "server/hosting/learn_stage.h"

namespace streamreg {

// What a batch of samples holds on its way from the wire to learning, owned
// by whoever holds the batch: its admission (AdmissionTicket: the server's
// and the model's limits on queued samples) and its announcement (the
// samples count in answers' `unlearned` from the moment they are received,
// LearnStage::Announce). The write that queues the samples for learning
// takes the announcement over in the same step (TakeAnnounced, handed to
// LearnStage::Enqueue); whatever is left when the ticket is released or
// destroyed — a refused batch, a cancelled call, duplicates, a cluster
// write this replica's follower applied — is withdrawn, and the admission
// given back. Move-only; one model's.
class WriteTicket {
 public:
  // Nothing held: a write of samples no client waits for (recovery, a log
  // follower, tools).
  WriteTicket() = default;
  // Announces `samples` samples on `stage`, with the admission they passed.
  // The ticket does not keep the stage alive (a model's requests wait in
  // the model): once it is gone, nothing is left to withdraw.
  WriteTicket(std::shared_ptr<LearnStage> stage, AdmissionTicket admitted,
              std::uint64_t samples);
  WriteTicket(WriteTicket&& other) noexcept { *this = std::move(other); }
  WriteTicket& operator=(WriteTicket&& other) noexcept;
  ~WriteTicket() { Release(); }

  // Holds `other`'s samples and admission too (a group of requests written
  // as one batch); both are the same model's.
  void Join(WriteTicket other);
  // A ticket for `samples` of the announced ones, moved out of this one
  // (a request of a refused group, written alone); its admission stays
  // here.
  WriteTicket Split(std::uint64_t samples);
  // The announced samples, no longer this ticket's: the caller queues them
  // for learning (LearnStage::Enqueue takes the count over).
  std::uint64_t TakeAnnounced();
  // Withdraws what is still announced and gives the admission back.
  void Release();

  std::uint64_t announced() const { return announced_; }

 private:
  std::weak_ptr<LearnStage> stage_;
  std::vector<AdmissionTicket> admitted_;
  std::uint64_t announced_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_WRITE_TICKET_H_
