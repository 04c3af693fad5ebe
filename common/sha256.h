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

}  // namespace streamreg

#endif  // STREAMREG_COMMON_SHA256_H_
