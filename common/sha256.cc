#include "common/sha256.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <utility>

#include "absl/strings/escaping.h"

namespace streamreg {
namespace {

// 64 lowercase hex digits.
std::string Hex(const Sha256Digest& digest) {
  return absl::BytesToHexString(absl::string_view(
      reinterpret_cast<const char*>(digest.data()), digest.size()));
}

}  // namespace

Sha256Digest Sha256(absl::string_view bytes) {
  Sha256Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
         digest.data());
  return digest;
}

std::string Sha256Hex(absl::string_view bytes) { return Hex(Sha256(bytes)); }

struct Sha256Hasher::Context {
  EVP_MD_CTX* digest = EVP_MD_CTX_new();
  Context() { EVP_DigestInit_ex(digest, EVP_sha256(), nullptr); }
  ~Context() { EVP_MD_CTX_free(digest); }
};

Sha256Hasher::Sha256Hasher() : context_(new Context) {}

Sha256Hasher::~Sha256Hasher() { delete context_; }

Sha256Hasher::Sha256Hasher(Sha256Hasher&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)) {}

Sha256Hasher& Sha256Hasher::operator=(Sha256Hasher&& other) noexcept {
  std::swap(context_, other.context_);
  return *this;
}

void Sha256Hasher::Update(absl::string_view part) {
  if (context_ == nullptr) context_ = new Context;
  EVP_DigestUpdate(context_->digest, part.data(), part.size());
}

std::string Sha256Hasher::FinishHex() {
  if (context_ == nullptr) context_ = new Context;
  Sha256Digest digest;
  unsigned int size = 0;
  EVP_DigestFinal_ex(context_->digest, digest.data(), &size);
  EVP_DigestInit_ex(context_->digest, EVP_sha256(), nullptr);
  return Hex(digest);
}

}  // namespace streamreg
