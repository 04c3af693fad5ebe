#ifndef STREAMREG_SERVER_HOSTING_DURABILITY_WATERMARK_H_
#define STREAMREG_SERVER_HOSTING_DURABILITY_WATERMARK_H_

#include <cstdint>
#include <set>

namespace streamreg {

// How far one stream's messages are durable: the longest run 1..n of
// message numbers all reported durable. Messages are made durable in
// order, almost always reported in order too; one reported early (a
// message held back from its group commit, LearnBatcher) waits here until
// the messages before it are. Not thread-safe (its owner's lock).
class DurabilityWatermark {
 public:
  // Message `number` (1-based) is durable.
  void MarkDurable(std::uint64_t number) {
    if (number <= through_) return;
    if (number == through_ + 1 && ahead_.empty()) {  // in order: the rule
      through_ = number;
      return;
    }
    ahead_.insert(number);
    while (!ahead_.empty() && *ahead_.begin() == through_ + 1) {
      ahead_.erase(ahead_.begin());
      ++through_;
    }
  }
  // Messages 1..through() are durable.
  std::uint64_t through() const { return through_; }

 private:
  std::uint64_t through_ = 0;
  std::set<std::uint64_t> ahead_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_DURABILITY_WATERMARK_H_
