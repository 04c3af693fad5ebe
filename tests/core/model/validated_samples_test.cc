// ValidatedSamples (core/model/validated_samples.h): slices share the
// checked values, selections and concatenations copy them in order, and
// a concatenation refuses parts of other dimensions or a repeated id.
#include "core/model/validated_samples.h"

#include <memory>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

// Samples of `dim` inputs and one target: x = (i, ..., i), y = 10 i, id
// first_id + i (0: none).
struct Rows {
  std::vector<double> values;
  std::vector<Sample> samples;
  Rows(std::size_t n, std::size_t dim, std::uint64_t first_id)
      : values(n * (dim + 1)) {
    for (std::size_t i = 0; i < n; ++i) {
      double* row = &values[i * (dim + 1)];
      for (std::size_t j = 0; j < dim; ++j) row[j] = static_cast<double>(i);
      row[dim] = 10.0 * static_cast<double>(i);
      samples.push_back(
          Sample{{row, dim}, {row + dim, 1}, first_id == 0 ? 0 : first_id + i});
    }
  }
};

std::unique_ptr<Model> ModelOf(std::size_t dim) {
  ModelConfig config;
  config.input_dim = dim;
  config.target_names = {"y"};
  return *Model::Create(config);
}

std::vector<std::uint64_t> Ids(const ValidatedSamples& samples) {
  std::vector<std::uint64_t> ids;
  for (const Sample& sample : samples.samples())
    ids.push_back(sample.sample_id);
  return ids;
}

TEST(ValidatedSamplesTest, SlicesShareTheCheckedValuesAndSelectionsCopyThem) {
  const std::unique_ptr<Model> model = ModelOf(2);
  Rows rows(5, 2, 100);
  const absl::StatusOr<ValidatedSamples> all = model->Validate(rows.samples);
  ASSERT_TRUE(all.ok()) << all.status();
  // A copy of the caller's values: changing them afterwards changes nothing.
  rows.values[0] = 99;
  EXPECT_EQ((*all)[0].x[0], 0.0);
  EXPECT_EQ(all->input_dim(), 2u);
  EXPECT_EQ(all->num_targets(), 1u);

  const ValidatedSamples middle = all->Subspan(1, 3);
  EXPECT_EQ(Ids(middle), (std::vector<std::uint64_t>{101, 102, 103}));
  EXPECT_EQ(middle[0].x.data(), (*all)[1].x.data());  // shared, not copied
  EXPECT_EQ(Ids(all->First(2)), (std::vector<std::uint64_t>{100, 101}));

  const std::vector<std::size_t> chosen = {0, 3, 4};
  const ValidatedSamples selected = all->Select(chosen);
  EXPECT_EQ(Ids(selected), (std::vector<std::uint64_t>{100, 103, 104}));
  EXPECT_EQ(selected[1].y[0], 30.0);
  EXPECT_NE(selected[1].x.data(), (*all)[3].x.data());  // its own copy
  EXPECT_TRUE(ValidatedSamples().empty());
}

TEST(ValidatedSamplesTest, AConcatenationJoinsPartsOfOneModelWithoutRepeats) {
  const std::unique_ptr<Model> model = ModelOf(2);
  const Rows first(2, 2, 10), second(3, 2, 20), again(1, 2, 11);
  const std::vector<ValidatedSamples> parts = {
      *model->Validate(first.samples), *model->Validate(second.samples)};
  const absl::StatusOr<ValidatedSamples> joined =
      ValidatedSamples::Concatenate(parts);
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(Ids(*joined), (std::vector<std::uint64_t>{10, 11, 20, 21, 22}));
  EXPECT_EQ((*joined)[3].y[0], 10.0);

  // Sample 11 twice: held back, not joined.
  const std::vector<ValidatedSamples> repeated = {
      *model->Validate(first.samples), *model->Validate(again.samples)};
  EXPECT_EQ(ValidatedSamples::Concatenate(repeated).status().message(),
            "sample_id 11 joined to a batch holding it");
  // Samples without ids may repeat.
  const Rows no_ids(2, 2, 0);
  const std::vector<ValidatedSamples> anonymous = {
      *model->Validate(no_ids.samples), *model->Validate(no_ids.samples)};
  EXPECT_EQ(ValidatedSamples::Concatenate(anonymous)->size(), 4u);
  // Another model's dimensions.
  const std::unique_ptr<Model> wider = ModelOf(3);
  const Rows three(1, 3, 50);
  const std::vector<ValidatedSamples> mixed = {*model->Validate(first.samples),
                                               *wider->Validate(three.samples)};
  EXPECT_EQ(ValidatedSamples::Concatenate(mixed).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace streamreg
