#include "server/hosting/admission_gate.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace streamreg {
namespace {

// The payload of a status that carries a retry hint: milliseconds, decimal.
constexpr absl::string_view kRetryAfterUrl =
    "type.streamreg.dev/streamreg.RetryAfterMs";

}  // namespace

bool AdmissionGate::TryAcquire(std::uint64_t amount) {
  std::uint64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (limit_ != 0 && held != 0 && held + amount > limit_) {
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
  return WithRetryAfter(
      absl::ResourceExhaustedError(absl::StrCat(
          "overloaded: ", held(), " ", what_, ", ", amount, " more would pass ",
          limit_, " (", limit_name_, "); retry in ",
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

void AdmissionTicket::Release() {
  for (AdmissionGate* gate : gates_) gate->Release(amount_);
  gates_.clear();
  amount_ = 0;
}

absl::Status WithRetryAfter(absl::Status status, absl::Duration retry_after) {
  status.SetPayload(
      kRetryAfterUrl,
      absl::Cord(absl::StrCat(absl::ToInt64Milliseconds(retry_after))));
  return status;
}

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  const auto payload = status.GetPayload(kRetryAfterUrl);
  std::int64_t milliseconds = 0;
  if (!payload.has_value() ||
      !absl::SimpleAtoi(std::string(*payload), &milliseconds)) {
    return std::nullopt;
  }
  return absl::Milliseconds(milliseconds);
}

}  // namespace streamreg
