#ifndef STREAMREG_COMMON_SHA256_H_
#define STREAMREG_COMMON_SHA256_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace streamreg {

// SHA-256 (OpenSSL's libcrypto): for what must hash alike on every server,
// build and platform — bearer-token digests, the message ids of a cluster's
// logs, rendezvous scores.
using Sha256Digest = std::array<std::uint8_t, 32>;
Sha256Digest Sha256(absl::string_view bytes);
// The digest as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view bytes);

// SHA-256 of bytes given a part at a time (a snapshot's chunks as they
// are published): Sha256Hex of the parts joined.
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(Sha256Hasher&& other) noexcept;
  Sha256Hasher& operator=(Sha256Hasher&& other) noexcept;
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void Update(absl::string_view part);
  // The digest of every part so far, as Sha256Hex writes it; the hasher
  // starts again empty.
  std::string FinishHex();

 private:
  struct Context;
  Context* context_;
};

}  // namespace streamreg

#endif  // STREAMREG_COMMON_SHA256_H_
