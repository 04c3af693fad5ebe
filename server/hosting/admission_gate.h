#ifndef STREAMREG_SERVER_HOSTING_ADMISSION_GATE_H_
#define STREAMREG_SERVER_HOSTING_ADMISSION_GATE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/retry_after.h"

namespace streamreg {

// Counts work admitted and not yet done — samples waiting on a model's
// write queue, predictions being answered — against a limit, so that a
// flood of clients is refused at once instead of queueing without bound.
// Lock-free: TryAcquire is a compare-and-swap loop. Work is admitted while
// what it adds stays within the limit, and always when nothing is held
// (one request larger than the limit still goes through alone).
class AdmissionGate {
 public:
  // `what` names the work and its limit in errors ("samples queued for
  // model 'arm'", "--max-queued-samples-per-model"); limit 0: no limit.
  AdmissionGate(std::string what, std::string limit_name, std::uint64_t limit)
      : what_(std::move(what)),
        limit_name_(std::move(limit_name)),
        limit_(limit) {}
  AdmissionGate(const AdmissionGate&) = delete;
  AdmissionGate& operator=(const AdmissionGate&) = delete;

  // A second limit that follows the work's pace, read at each admission
  // (what a model learns in --max-queue-delay: LearnRate::SamplesIn); 0
  // from it is no limit. `name` explains it in refusals. Set before the
  // gate is used.
  void SetPacedLimit(std::function<std::uint64_t()> limit, std::string name);

  // Holds `amount` more if the limits allow it (counting a refusal if not).
  bool TryAcquire(std::uint64_t amount);
  void Release(std::uint64_t amount);

  std::uint64_t held() const { return held_.load(std::memory_order_relaxed); }
  std::uint64_t limit() const { return limit_; }
  // The paced limit now (0: none).
  std::uint64_t paced_limit() const { return paced_ ? paced_() : 0; }
  // Requests refused so far.
  std::uint64_t refused() const {
    return refused_.load(std::memory_order_relaxed);
  }
  // RESOURCE_EXHAUSTED for a refusal of `amount`, naming the work, what is
  // held, the limit and its flag, with the retry hint (RetryAfter).
  absl::Status RefusalFor(std::uint64_t amount) const;

 private:
  // The smaller of the two limits (0: none), and its name.
  std::uint64_t EffectiveLimit(const std::string** name = nullptr) const;

  const std::string what_;
  const std::string limit_name_;
  const std::uint64_t limit_;
  std::function<std::uint64_t()> paced_;
  std::string paced_name_;
  std::atomic<std::uint64_t> held_{0};
  std::atomic<std::uint64_t> refused_{0};
};

// Work admitted through one or more gates (a model's, then the server's),
// released when the ticket is destroyed or Release()d. Movable.
class AdmissionTicket {
 public:
  AdmissionTicket() = default;
  AdmissionTicket(AdmissionTicket&& other) noexcept {
    *this = std::move(other);
  }
  AdmissionTicket& operator=(AdmissionTicket&& other) noexcept;
  ~AdmissionTicket() { Release(); }

  // Passes every gate or none: RESOURCE_EXHAUSTED from the first that
  // refuses (what the others took is given back).
  static absl::StatusOr<AdmissionTicket> Admit(
      std::initializer_list<AdmissionGate*> gates, std::uint64_t amount);
  void Release();
  // Gives back what it holds at `gate` alone (a read parked for learning
  // keeps its place among its model's reads, not the server's).
  void ReleaseAt(const AdmissionGate& gate);

 private:
  std::vector<AdmissionGate*> gates_;
  std::uint64_t amount_ = 0;
};

// How long an overloaded server asks a client to wait before it retries:
// carried by the RESOURCE_EXHAUSTED status of a refusal (and sent by the
// gRPC layer as the standard grpc-retry-pushback-ms trailer).
inline constexpr absl::Duration kOverloadRetryAfter = absl::Milliseconds(100);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_ADMISSION_GATE_H_
