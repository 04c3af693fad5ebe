#include "core/model/validated_samples.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace streamreg {

ValidatedSamples ValidatedSamples::CopyOf(std::span<const Sample> samples,
                                          std::size_t input_dim,
                                          std::size_t num_targets) {
  auto storage = std::make_shared<Storage>();
  std::size_t values = 0;
  for (const Sample& sample : samples) {
    values += sample.x.size() + sample.y.size();
  }
  storage->values.reserve(values);
  for (const Sample& sample : samples) {
    storage->values.insert(storage->values.end(), sample.x.begin(),
                           sample.x.end());
    storage->values.insert(storage->values.end(), sample.y.begin(),
                           sample.y.end());
  }
  storage->samples.reserve(samples.size());
  const double* next = storage->values.data();
  for (const Sample& sample : samples) {
    const std::span<const double> x(next, sample.x.size());
    const std::span<const double> y(next + x.size(), sample.y.size());
    storage->samples.push_back({x, y, sample.sample_id});
    next += x.size() + y.size();
  }
  ValidatedSamples copy;
  copy.size_ = samples.size();
  copy.input_dim_ = input_dim;
  copy.num_targets_ = num_targets;
  copy.storage_ = std::move(storage);
  return copy;
}

ValidatedSamples ValidatedSamples::Subspan(std::size_t begin,
                                           std::size_t count) const {
  begin = std::min(begin, size_);
  ValidatedSamples part = *this;
  part.begin_ = begin_ + begin;
  part.size_ = std::min(count, size_ - begin);
  return part;
}

ValidatedSamples ValidatedSamples::Select(
    std::span<const std::size_t> indexes) const {
  if (indexes.size() == size_) return *this;  // ascending: all of them
  std::vector<Sample> chosen;
  chosen.reserve(indexes.size());
  for (const std::size_t i : indexes) chosen.push_back((*this)[i]);
  return CopyOf(chosen, input_dim_, num_targets_);
}

absl::StatusOr<ValidatedSamples> ValidatedSamples::Concatenate(
    std::span<const ValidatedSamples> parts) {
  if (parts.empty()) return ValidatedSamples();
  if (parts.size() == 1) return parts.front();
  std::vector<Sample> all;
  absl::flat_hash_set<std::uint64_t> ids;
  for (const ValidatedSamples& part : parts) {
    if (part.input_dim_ != parts.front().input_dim_ ||
        part.num_targets_ != parts.front().num_targets_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "samples of ", part.input_dim_, " inputs and ", part.num_targets_,
          " targets joined to samples of ", parts.front().input_dim_,
          " inputs and ", parts.front().num_targets_, " targets"));
    }
    for (const Sample& sample : part.samples()) {
      if (sample.sample_id != 0 && !ids.insert(sample.sample_id).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sample_id ", sample.sample_id, " joined to a batch holding it"));
      }
      all.push_back(sample);
    }
  }
  return CopyOf(all, parts.front().input_dim_, parts.front().num_targets_);
}

}  // namespace streamreg
