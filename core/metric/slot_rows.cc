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
                    std::vector<double>* targets, std::size_t stride) {
  const std::size_t d = transform.dim();
  const std::size_t kept = (num_slots + stride - 1) / stride;
  coordinates->resize(kept * d);
  if (targets != nullptr) targets->clear();
  std::vector<double> x, y;
  std::size_t row = 0;
  for (std::size_t begin = 0; begin < num_slots; begin += kChunk) {
    const std::size_t end = std::min(num_slots, begin + kChunk);
    copy(begin, end, &x, targets != nullptr ? &y : nullptr);
    const std::size_t width = targets != nullptr ? y.size() / (end - begin) : 0;
    // The first slot of the chunk on the stride.
    for (std::size_t slot = (begin + stride - 1) / stride * stride; slot < end;
         slot += stride, ++row) {
      const std::size_t offset = slot - begin;
      transform.Apply(std::span<const double>(x.data() + offset * d, d),
                      std::span<double>(coordinates->data() + row * d, d));
      if (targets != nullptr) {
        targets->insert(targets->end(), y.begin() + offset * width,
                        y.begin() + (offset + 1) * width);
      }
    }
  }
}

}  // namespace streamreg
