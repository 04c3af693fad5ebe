#include "server/hosting/admission_gate.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace streamreg {

void AdmissionGate::SetPacedLimit(std::function<std::uint64_t()> limit,
                                  std::string name) {
  paced_ = std::move(limit);
  paced_name_ = std::move(name);
}

std::uint64_t AdmissionGate::EffectiveLimit(const std::string** name) const {
  const std::uint64_t paced = paced_limit();
  if (paced != 0 && (limit_ == 0 || paced < limit_)) {
    if (name != nullptr) *name = &paced_name_;
    return paced;
  }
  if (name != nullptr) *name = &limit_name_;
  return limit_;
}

bool AdmissionGate::TryAcquire(std::uint64_t amount) {
  const std::uint64_t limit = EffectiveLimit();
  std::uint64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (limit != 0 && held != 0 && held + amount > limit) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  } while (!held_.compare_exchange_weak(held, held + amount,
                                        std::memory_order_relaxed));
  return true;
}

void AdmissionGate::Release(std::uint64_t amount) {
  held_.fetch_sub(amount, std::memory_order_relaxed);
}

absl::Status AdmissionGate::RefusalFor(std::uint64_t amount) const {
  const std::string* name = nullptr;
  const std::uint64_t limit = EffectiveLimit(&name);
  return WithRetryAfter(
      absl::ResourceExhaustedError(
          absl::StrCat("overloaded: ", held(), " ", what_, ", ", amount,
                       " more would pass ", limit, " (", *name, "); retry in ",
                       absl::ToInt64Milliseconds(kOverloadRetryAfter), " ms")),
      kOverloadRetryAfter);
}

AdmissionTicket& AdmissionTicket::operator=(AdmissionTicket&& other) noexcept {
  if (this != &other) {
    Release();
    gates_ = std::move(other.gates_);
    amount_ = other.amount_;
    other.gates_.clear();
    other.amount_ = 0;
  }
  return *this;
}

absl::StatusOr<AdmissionTicket> AdmissionTicket::Admit(
    std::initializer_list<AdmissionGate*> gates, std::uint64_t amount) {
  AdmissionTicket ticket;
  ticket.amount_ = amount;
  for (AdmissionGate* gate : gates) {
    if (!gate->TryAcquire(amount)) return gate->RefusalFor(amount);
    ticket.gates_.push_back(gate);  // given back if a later gate refuses
  }
  return ticket;
}

void AdmissionTicket::ReleaseAt(const AdmissionGate& gate) {
  const auto held = std::find(gates_.begin(), gates_.end(), &gate);
  if (held == gates_.end()) return;
  (*held)->Release(amount_);
  gates_.erase(held);
}

void AdmissionTicket::Release() {
  for (AdmissionGate* gate : gates_) gate->Release(amount_);
  gates_.clear();
  amount_ = 0;
}

}  // namespace streamreg
