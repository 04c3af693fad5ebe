#include "server/hosting/write_ticket.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace streamreg {

WriteTicket::WriteTicket(std::shared_ptr<LearnStage> stage,
                         AdmissionTicket admitted, std::uint64_t samples)
    : stage_(stage), announced_(samples) {
  admitted_.push_back(std::move(admitted));
  stage->Announce(samples);
}

WriteTicket& WriteTicket::operator=(WriteTicket&& other) noexcept {
  if (this != &other) {
    Release();
    stage_ = std::move(other.stage_);
    admitted_ = std::move(other.admitted_);
    announced_ = std::exchange(other.announced_, 0);
    other.admitted_.clear();
  }
  return *this;
}

void WriteTicket::Join(WriteTicket other) {
  if (stage_.expired()) stage_ = other.stage_;
  announced_ += std::exchange(other.announced_, 0);
  std::move(other.admitted_.begin(), other.admitted_.end(),
            std::back_inserter(admitted_));
  other.admitted_.clear();
}

WriteTicket WriteTicket::Split(std::uint64_t samples) {
  WriteTicket part;
  part.stage_ = stage_;
  part.announced_ = std::min(samples, announced_);
  announced_ -= part.announced_;
  return part;
}

std::uint64_t WriteTicket::TakeAnnounced() {
  return std::exchange(announced_, 0);
}

void WriteTicket::Release() {
  if (announced_ > 0) {
    if (const std::shared_ptr<LearnStage> stage = stage_.lock()) {
      stage->Withdraw(announced_);
    }
  }
  announced_ = 0;
  admitted_.clear();  // each gives its admission back
}

}  // namespace streamreg
