#include "core/metric/slot_rows.h"

#include <algorithm>
#include <span>

namespace streamreg {
namespace {

constexpr std::size_t kChunk = 4096;

}  // namespace

void ReadMappedRows(std::size_t num_slots, const CopySlotRows& copy,
                    const MetricTransform& transform,
                    std::vector<double>* coordinates,
                    std::vector<double>* targets) {
  const std::size_t d = transform.dim();
  coordinates->resize(num_slots * d);
  if (targets != nullptr) targets->clear();
  std::vector<double> x, y;
  for (std::size_t begin = 0; begin < num_slots; begin += kChunk) {
    const std::size_t end = std::min(num_slots, begin + kChunk);
    copy(begin, end, &x, targets != nullptr ? &y : nullptr);
    for (std::size_t slot = begin; slot < end; ++slot) {
      transform.Apply(std::span<const double>(x.data() + (slot - begin) * d, d),
                      std::span<double>(coordinates->data() + slot * d, d));
    }
    if (targets != nullptr) targets->insert(targets->end(), y.begin(), y.end());
  }
}

}  // namespace streamreg
