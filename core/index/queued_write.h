#ifndef STREAMREG_CORE_INDEX_QUEUED_WRITE_H_
#define STREAMREG_CORE_INDEX_QUEUED_WRITE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace streamreg {

// A write made to an index while a new tree is being built, queued to be
// replayed on it: an insertion of a point — copied, or kept as a pointer to
// a row that stays where it is (a referencing tree's row) — or a removal.
class QueuedWrite {
 public:
  static QueuedWrite Insertion(std::uint64_t id, std::span<const double> point,
                               bool point_stays) {
    return point_stays ? QueuedWrite(id, {}, point.data())
                       : QueuedWrite(id, {point.begin(), point.end()}, nullptr);
  }
  static QueuedWrite Removal(std::uint64_t id) {
    return QueuedWrite(id, {}, nullptr);
  }

  std::uint64_t id() const { return id_; }
  bool removal() const { return row_ == nullptr && copy_.empty(); }
  // The inserted point (dim values).
  std::span<const double> point(std::size_t dim) const {
    return row_ != nullptr ? std::span<const double>(row_, dim)
                           : std::span<const double>(copy_);
  }

 private:
  QueuedWrite(std::uint64_t id, std::vector<double> copy, const double* row)
      : id_(id), copy_(std::move(copy)), row_(row) {}

  std::uint64_t id_;
  std::vector<double> copy_;
  const double* row_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_INDEX_QUEUED_WRITE_H_
