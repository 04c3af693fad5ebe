#include "common/sha256.h"

#include <openssl/sha.h>

#include "absl/strings/escaping.h"

namespace streamreg {

Sha256Digest Sha256(absl::string_view bytes) {
  Sha256Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
         digest.data());
  return digest;
}

std::string Sha256Hex(absl::string_view bytes) {
  const Sha256Digest digest = Sha256(bytes);
  return absl::BytesToHexString(absl::string_view(
      reinterpret_cast<const char*>(digest.data()), digest.size()));
}

}  // namespace streamreg
