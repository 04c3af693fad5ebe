#ifndef STREAMREG_CORE_BASE_CHUNKED_ROWS_H_
#define STREAMREG_CORE_BASE_CHUNKED_ROWS_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

namespace streamreg {

// A growable array of fixed-width rows (width elements of T each) stored in
// chunks of kRowsPerChunk rows. Growing adds a chunk and never moves a row:
// a std::vector would copy everything when it doubles — at 10^5 points of
// 21 coordinates that is 20 ms spent under the writer's exclusive lock, with
// every search waiting. Rows of one chunk are adjacent in memory.
//
// Chunks are shared copy-on-write: Share() hands out the chunks as they
// are now (a few pointers, whatever the size), and a later write through
// WritableRow copies the one chunk it lands in if a share still holds it.
// Snapshots read a model's samples that way while learning goes on.
// AppendRow never copies: a share never reads beyond its size, so the new
// row is nobody else's — and rows only ever appended stay where they are,
// which lets cover trees keep pointers to a model's stored samples.
template <class T>
class ChunkedRows {
 public:
  static constexpr std::size_t kChunkBits = 12;
  static constexpr std::size_t kRowsPerChunk = std::size_t{1} << kChunkBits;

  explicit ChunkedRows(std::size_t width) : width_(width) {}
  // Moves only: a copy would share chunks that Row() writes in place.
  ChunkedRows(const ChunkedRows&) = delete;
  ChunkedRows& operator=(const ChunkedRows&) = delete;
  ChunkedRows(ChunkedRows&&) noexcept = default;
  ChunkedRows& operator=(ChunkedRows&&) noexcept = default;

  // Row i for writing in place (never shared: the cover tree's storage).
  T* Row(std::size_t i) {
    return chunks_[i >> kChunkBits].get() + (i & (kRowsPerChunk - 1)) * width_;
  }
  const T* Row(std::size_t i) const {
    return chunks_[i >> kChunkBits].get() + (i & (kRowsPerChunk - 1)) * width_;
  }
  // The first element of row i (the whole row when width is 1).
  T& operator[](std::size_t i) { return *Row(i); }
  const T& operator[](std::size_t i) const { return *Row(i); }

  // Row i for writing, first copying its chunk if a share holds it.
  T* WritableRow(std::size_t i) {
    std::shared_ptr<T[]>& chunk = chunks_[i >> kChunkBits];
    if (chunk.use_count() > 1) {
      std::shared_ptr<T[]> copy = NewChunk();
      std::copy(chunk.get(), chunk.get() + kRowsPerChunk * width_, copy.get());
      chunk = std::move(copy);
    } else {
      // The last share may have just been released on another thread after
      // reading the chunk; use_count() is a relaxed load, which orders
      // nothing. Taking and dropping a reference is an acquire-release
      // read-modify-write of the same count, so those reads happen before
      // the write below.
      std::shared_ptr<T[]> synchronize = chunk;
    }
    return Row(i);
  }

  // Appends a row of value-initialized elements and returns it, in place
  // even in a chunk a share holds (rows beyond its size are not its own).
  T* AppendRow() {
    if (size_ == capacity()) chunks_.push_back(NewChunk());
    return Row(size_++);
  }

  // The chunks as they are now: rows [0, size()) in chunks of
  // kRowsPerChunk rows, unchanged by later writes.
  struct Shared {
    std::size_t size = 0;
    std::size_t width = 0;
    std::vector<std::shared_ptr<const T[]>> chunks;
    const T* Row(std::size_t i) const {
      return chunks[i >> kChunkBits].get() + (i & (kRowsPerChunk - 1)) * width;
    }
  };
  Shared Share() const {
    return Shared{size_, width_, {chunks_.begin(), chunks_.end()}};
  }

  // Allocates chunks for `rows` rows up front.
  void Reserve(std::size_t rows) {
    chunks_.reserve((rows + kRowsPerChunk - 1) / kRowsPerChunk);
    while (capacity() < rows) chunks_.push_back(NewChunk());
  }

  // Grows to `rows` rows (never shrinks), the new ones value-initialized;
  // rows already there stay in place.
  void GrowTo(std::size_t rows) {
    Reserve(rows);
    size_ = std::max(size_, rows);
  }

  std::size_t size() const { return size_; }
  std::size_t width() const { return width_; }
  std::size_t capacity() const { return chunks_.size() * kRowsPerChunk; }
  std::size_t MemoryUsage() const {
    return capacity() * width_ * sizeof(T) +
           chunks_.capacity() * sizeof(std::shared_ptr<T[]>);
  }

 private:
  std::shared_ptr<T[]> NewChunk() const {
    return std::shared_ptr<T[]>(new T[kRowsPerChunk * width_]());
  }

  std::size_t width_;
  std::size_t size_ = 0;
  std::vector<std::shared_ptr<T[]>> chunks_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_CHUNKED_ROWS_H_
