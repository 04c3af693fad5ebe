#include "core/index/shell_order.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>

namespace streamreg {
namespace {

constexpr int kDigitBits = 8;
constexpr std::size_t kDigits = std::size_t{1} << kDigitBits;
// Below this many neighbours a comparison sort on the key beats the radix
// passes (each clears and sums kDigits counters).
constexpr std::size_t kRadixFrom = 256;

// One stable counting-sort pass of `from` into `to` by the digit of the key
// (kept in Neighbor::id) at bit `shift`.
void SortByDigit(const std::vector<Neighbor>& from, int shift,
                 std::vector<Neighbor>* to) {
  std::array<std::size_t, kDigits> start{};
  for (const Neighbor& n : from) ++start[(n.id >> shift) & (kDigits - 1)];
  std::size_t total = 0;
  for (std::size_t& count : start) {
    const std::size_t here = count;
    count = total;
    total += here;
  }
  to->resize(from.size());
  for (const Neighbor& n : from) {
    (*to)[start[(n.id >> shift) & (kDigits - 1)]++] = n;
  }
}

}  // namespace

void ShellOrder::Apply(std::span<const double> radii,
                       std::vector<Neighbor>* neighbors) {
  assert(radii.size() < 256);
  within_.assign(radii.size(), 0);
  // The key (shell, id) replaces the id while sorting; ids are slots, far
  // below 2^56.
  std::uint64_t largest_id = 0;
  double farthest = 0.0;
  for (const Neighbor& n : *neighbors) {
    largest_id = std::max(largest_id, n.id);
    farthest = std::max(farthest, n.distance);
  }
  const int id_bits = std::max(1, static_cast<int>(std::bit_width(largest_id)));
  assert(id_bits <= 56);
  // A neighbour's shell is the number of radii <= its distance. Most lie in
  // the outer shells (balls grow as r^dimension): walk down from the
  // farthest neighbour's shell rather than bisect all the radii.
  const std::size_t outer =
      std::upper_bound(radii.begin(), radii.end(), farthest) - radii.begin();
  for (Neighbor& n : *neighbors) {
    std::size_t shell = outer;
    while (shell > 0 && n.distance < radii[shell - 1]) --shell;
    if (shell < radii.size()) ++within_[shell];
    n.id |= static_cast<std::uint64_t>(shell) << id_bits;
  }
  for (std::size_t g = 1; g < within_.size(); ++g) {
    within_[g] += within_[g - 1];
  }
  if (neighbors->size() < kRadixFrom) {
    std::sort(neighbors->begin(), neighbors->end(),
              [](const Neighbor& a, const Neighbor& b) { return a.id < b.id; });
  } else {
    const int key_bits =
        id_bits + static_cast<int>(std::bit_width(radii.size()));
    for (int shift = 0; shift < key_bits; shift += kDigitBits) {
      SortByDigit(*neighbors, shift, &buffer_);
      neighbors->swap(buffer_);
    }
  }
  const std::uint64_t id_mask = (std::uint64_t{1} << id_bits) - 1;
  for (Neighbor& n : *neighbors) n.id &= id_mask;
}

}  // namespace streamreg
