#ifndef STREAMREG_CORE_BASE_BYTE_CODING_H_
#define STREAMREG_CORE_BASE_BYTE_CODING_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace streamreg {

static_assert(std::endian::native == std::endian::little,
              "the on-disk formats are little-endian; add byte swapping to "
              "run on a big-endian machine");

// Appends fixed-width little-endian values to a byte string: the encoding of
// every record payload on disk (write-ahead log, snapshots). Doubles are
// stored as their IEEE-754 bits, so a value read back is bit-identical.
class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}

  void U8(std::uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void U32(std::uint32_t v) { Raw(&v, sizeof v); }
  void U64(std::uint64_t v) { Raw(&v, sizeof v); }
  void I64(std::int64_t v) { Raw(&v, sizeof v); }
  void Double(double v) { Raw(&v, sizeof v); }
  // A length (u64) and then the values.
  void Doubles(std::span<const double> values) {
    U64(values.size());
    RawDoubles(values);
  }
  // The values alone (the reader knows how many).
  void RawDoubles(std::span<const double> values) {
    Raw(values.data(), values.size_bytes());
  }
  void String(absl::string_view s) {
    U64(s.size());
    out_->append(s.data(), s.size());
  }

 private:
  void Raw(const void* data, std::size_t size) {
    if (size == 0) return;  // data may be null (an empty vector's)
    out_->append(static_cast<const char*>(data), size);
  }
  std::string* out_;
};

// Reads what a ByteWriter wrote. A read past the end (or a length that does
// not fit) sets a sticky failure and yields zeros; callers check ok() once
// at the end, so a truncated or malformed payload is never misread as data.
class ByteReader {
 public:
  explicit ByteReader(absl::string_view in) : in_(in) {}

  std::uint8_t U8() { return Fixed<std::uint8_t>(); }
  std::uint32_t U32() { return Fixed<std::uint32_t>(); }
  std::uint64_t U64() { return Fixed<std::uint64_t>(); }
  std::int64_t I64() { return Fixed<std::int64_t>(); }
  double Double() { return Fixed<double>(); }
  // Reads a length and values into `values`, which must already have that
  // many (the shape the reader expects); false otherwise.
  bool DoublesOfSize(std::vector<double>* values) {
    const std::uint64_t n = U64();
    if (!ok_ || n != values->size()) {
      ok_ = false;
      return false;
    }
    RawDoubles(*values);
    return ok_;
  }
  std::vector<double> Doubles() {
    const std::uint64_t n = U64();
    std::vector<double> values;
    if (n > remaining() / sizeof(double)) {
      ok_ = false;
      return values;
    }
    values.resize(n);
    RawDoubles(values);
    return values;
  }
  void RawDoubles(std::span<double> out) { Raw(out.data(), out.size_bytes()); }
  std::string String() {
    const std::uint64_t n = U64();
    if (n > remaining()) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(position_, n));
    position_ += n;
    return s;
  }

  bool ok() const { return ok_; }
  // Bytes read so far: where the next value starts.
  std::size_t position() const { return position_; }
  std::size_t remaining() const { return in_.size() - position_; }
  // ok() and every byte consumed.
  bool done() const { return ok_ && remaining() == 0; }
  // OK if done(); else DATA_LOSS naming `what` and where it went wrong:
  // "<what>: truncated at byte 40" or "<what>: 3 bytes after its end".
  absl::Status Finish(absl::string_view what) const {
    if (!ok_) {
      return absl::DataLossError(
          absl::StrCat(what, ": truncated at byte ", position_));
    }
    if (remaining() != 0) {
      return absl::DataLossError(absl::StrCat(
          what, ": ", remaining(), " bytes after its end at byte ", position_));
    }
    return absl::OkStatus();
  }

 private:
  template <class T>
  T Fixed() {
    T v{};
    Raw(&v, sizeof v);
    return v;
  }
  void Raw(void* out, std::size_t size) {
    if (size == 0) return;  // out may be null (an empty vector's data)
    if (!ok_ || size > remaining()) {
      ok_ = false;
      std::memset(out, 0, size);
      return;
    }
    std::memcpy(out, in_.data() + position_, size);
    position_ += size;
  }

  absl::string_view in_;
  std::size_t position_ = 0;
  bool ok_ = true;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_BYTE_CODING_H_
