#ifndef STREAMREG_CORE_MODEL_VALIDATED_SAMPLES_H_
#define STREAMREG_CORE_MODEL_VALIDATED_SAMPLES_H_

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/sample.h"

namespace streamreg {

// Samples a model has checked (Model::Validate): every input and target
// vector of the model's size, each value finite and within
// kMaxValueMagnitude, no sample id but 0 twice. Only Model::Validate
// makes one from raw samples, so holding one is the proof of the check: the
// write
// path validates a sample once, where it arrives, and everything after it
// (the group commit, the log, the learning stage, Model::Learn) takes this
// type and checks nothing again.
//
// It owns a copy of the values, shared and immutable: copies, slices
// (First, Subspan) and hand-overs to other threads cost no copy of the
// values.
class ValidatedSamples {
 public:
  ValidatedSamples() = default;  // no samples

  std::span<const Sample> samples() const {
    return std::span<const Sample>(
        storage_ == nullptr ? nullptr : storage_->samples.data() + begin_,
        size_);
  }
  // The input and target dimensions of the model that checked them.
  std::size_t input_dim() const { return input_dim_; }
  std::size_t num_targets() const { return num_targets_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Sample& operator[](std::size_t i) const { return samples()[i]; }

  // Samples [begin, begin + count) of these, sharing their values.
  ValidatedSamples Subspan(std::size_t begin, std::size_t count) const;
  ValidatedSamples First(std::size_t count) const { return Subspan(0, count); }
  // The samples at `indexes` (ascending), in a copy of their own.
  ValidatedSamples Select(std::span<const std::size_t> indexes) const;
  // The parts one after another, in a copy of their own: INVALID_ARGUMENT
  // if they were checked by models of other dimensions, or if two parts
  // share a sample id (a group commit holds a repeat back for the next
  // group: LearnBatcher).
  static absl::StatusOr<ValidatedSamples> Concatenate(
      std::span<const ValidatedSamples> parts);

 private:
  friend class Model;
  // The values of `samples` copied, without a check (the caller's: each
  // of `input_dim` inputs and `num_targets` targets).
  static ValidatedSamples CopyOf(std::span<const Sample> samples,
                                 std::size_t input_dim,
                                 std::size_t num_targets);

  struct Storage {
    std::vector<double> values;
    std::vector<Sample> samples;  // views into `values`
  };
  std::shared_ptr<const Storage> storage_;
  std::size_t begin_ = 0;
  std::size_t size_ = 0;
  std::size_t input_dim_ = 0;
  std::size_t num_targets_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_VALIDATED_SAMPLES_H_
