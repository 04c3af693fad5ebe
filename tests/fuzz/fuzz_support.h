#ifndef STREAMREG_TESTS_FUZZ_FUZZ_SUPPORT_H_
#define STREAMREG_TESTS_FUZZ_FUZZ_SUPPORT_H_

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/string_view.h"
#include "spdlog/spdlog.h"

// What the fuzz targets share. Each target defines LLVMFuzzerTestOneInput:
// libFuzzer calls it with generated inputs (the fuzz preset), and
// fuzz_replay_main.cc with the checked-in corpus (every other build, as a
// test). A target returns normally for any input its code must refuse; it
// aborts (FUZZ_CHECK) where the code broke a promise its documentation
// makes, and the sanitizers abort on memory and undefined-behaviour errors.

// Aborts with the condition, file and line when `condition` is false.
#define FUZZ_CHECK(condition)                                          \
  do {                                                                 \
    if (!(condition)) {                                                \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, \
                   __LINE__, #condition);                              \
      std::abort();                                                    \
    }                                                                  \
  } while (false)

namespace streamreg {

// The input as text.
inline absl::string_view AsText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Logs off: the code under test logs every refusal, which would slow the
// fuzzer down and bury its report.
inline void SilenceLogs() { spdlog::set_level(spdlog::level::off); }

// A new empty directory for this process, in memory where the machine has
// /dev/shm (file-writing targets run thousands of times a second), removed
// when the process exits normally.
inline std::string ScratchDirectory() {
  static std::vector<std::string>* made = nullptr;
  if (made == nullptr) {
    made = new std::vector<std::string>;
    std::atexit([] {
      for (const std::string& path : *made) {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
      }
    });
  }
  const char* base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  // mkdtemp(3) replaces the template's six trailing X's with a unique name.
  std::string path = std::string(base) + "/streamreg-fuzz-XXXXXX";
  if (mkdtemp(path.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  made->push_back(path);
  return path;
}

// Reads a little-endian unsigned integer of `bytes` bytes at `data`.
inline std::uint64_t ReadLittleEndian(const std::uint8_t* data,
                                      std::size_t bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = bytes; i-- > 0;) value = (value << 8) | data[i];
  return value;
}

// Splits an input into length-prefixed parts: a 2-byte little-endian
// length, then that many bytes (fewer if the input ends first).
class PartReader {
 public:
  PartReader(const std::uint8_t* data, std::size_t size)
      : data_(data), size_(size) {}

  bool done() const { return position_ >= size_; }
  // The next byte (0 at the end).
  std::uint8_t Byte() { return done() ? 0 : data_[position_++]; }
  // The next part.
  std::string Part() {
    if (size_ - position_ < 2) {
      position_ = size_;
      return {};
    }
    const std::size_t length = ReadLittleEndian(data_ + position_, 2);
    position_ += 2;
    const std::size_t taken = std::min(length, size_ - position_);
    std::string part(reinterpret_cast<const char*>(data_ + position_), taken);
    position_ += taken;
    return part;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t position_ = 0;
};

// The part format PartReader reads: `part` behind its 2-byte length.
inline std::string LengthPrefixed(absl::string_view part) {
  std::string out;
  out.push_back(static_cast<char>(part.size() & 0xff));
  out.push_back(static_cast<char>((part.size() >> 8) & 0xff));
  out.append(part.data(), part.size());
  return out;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_FUZZ_FUZZ_SUPPORT_H_
