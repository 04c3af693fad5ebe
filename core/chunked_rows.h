#ifndef STREAMREG_CORE_CHUNKED_ROWS_H_
#define STREAMREG_CORE_CHUNKED_ROWS_H_

#include <cstddef>
#include <memory>
#include <vector>

namespace streamreg {

// A growable array of fixed-width rows (width elements of T each) stored in
// chunks of kRowsPerChunk rows. Growing adds a chunk and never moves a row:
// a std::vector would copy everything when it doubles — at 10^5 points of
// 21 coordinates that is 20 ms spent under the writer's exclusive lock, with
// every search waiting. Rows of one chunk are adjacent in memory.
template <class T>
class ChunkedRows {
 public:
  static constexpr std::size_t kChunkBits = 12;
  static constexpr std::size_t kRowsPerChunk = std::size_t{1} << kChunkBits;

  explicit ChunkedRows(std::size_t width) : width_(width) {}

  T* Row(std::size_t i) {
    return chunks_[i >> kChunkBits].get() + (i & (kRowsPerChunk - 1)) * width_;
  }
  const T* Row(std::size_t i) const {
    return chunks_[i >> kChunkBits].get() + (i & (kRowsPerChunk - 1)) * width_;
  }
  // The first element of row i (the whole row when width is 1).
  T& operator[](std::size_t i) { return *Row(i); }
  const T& operator[](std::size_t i) const { return *Row(i); }

  // Appends a row of value-initialized elements and returns it.
  T* AppendRow() {
    if (size_ == capacity()) {
      chunks_.push_back(std::make_unique<T[]>(kRowsPerChunk * width_));
    }
    return Row(size_++);
  }

  // Allocates chunks for `rows` rows up front.
  void Reserve(std::size_t rows) {
    chunks_.reserve((rows + kRowsPerChunk - 1) / kRowsPerChunk);
    while (capacity() < rows) {
      chunks_.push_back(std::make_unique<T[]>(kRowsPerChunk * width_));
    }
  }

  std::size_t size() const { return size_; }
  std::size_t width() const { return width_; }
  std::size_t capacity() const { return chunks_.size() * kRowsPerChunk; }
  std::size_t MemoryUsage() const {
    return capacity() * width_ * sizeof(T) +
           chunks_.capacity() * sizeof(std::unique_ptr<T[]>);
  }

 private:
  std::size_t width_;
  std::size_t size_ = 0;
  std::vector<std::unique_ptr<T[]>> chunks_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_CHUNKED_ROWS_H_
