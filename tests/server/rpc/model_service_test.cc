// The model RPCs in process, through the C++ client library
// (server/rpc/model_service.h): create, get, list and delete with the
// spec in effect, and intervals and a random-feature base asked for on
// the wire served as the engine serves them.
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "client/lib/learn_session.h"
#include "client/lib/predict_session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/service_fixture.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

TEST_F(ServiceTest, CreateGetListDeleteAndTheSpecInEffect) {
  v1::ModelSpec spec = RowsSpec(v1::METRIC_UNSPECIFIED);
  spec.add_input_names("a");
  spec.add_input_names("b");
  spec.add_input_names("c");
  absl::StatusOr<v1::Model> created = client_->CreateModel("arm-1", spec);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->name(), "arm-1");
  EXPECT_EQ(created->spec().metric(), v1::METRIC_MLKR);  // the default
  EXPECT_EQ(created->spec().regressor(), v1::REGRESSOR_KNN);
  EXPECT_EQ(created->spec().tuning().honest_lag(), 200u);
  EXPECT_TRUE(created->spec().linear_base());
  EXPECT_EQ(created->spec().tuning().base_ridge(), 1.0);
  EXPECT_EQ(created->spec().tuning().base_forgetting(), 1.0);
  EXPECT_EQ(created->spec().tuning().base_relative_ridge(), 0.03);
  EXPECT_EQ(created->spec().tuning().gradient_estimator(),
            v1::GRADIENT_ESTIMATOR_LOCAL_LINEAR);
  EXPECT_EQ(created->spec().kernel(), v1::KERNEL_BOX);
  EXPECT_EQ(created->spec().bandwidth_grid_size(), 27);  // the default grid
  EXPECT_EQ(created->spec().tuning().step_ratio(), 0.5);
  EXPECT_EQ(created->spec().tuning().max_scoring_stride(), 8u);
  EXPECT_EQ(created->spec().input_names(2), "c");
  EXPECT_GT(created->create_time().seconds(), 1'700'000'000);
  EXPECT_EQ(created->stats().num_samples(), 0u);

  for (const char* name : {"m0", "m1", "m2", "m3"}) {
    ASSERT_TRUE(client_->CreateModel(name, RowsSpec()).ok());
  }
  // Two at a time, in name order.
  v1::ListModelsRequest request;
  request.set_page_size(2);
  std::vector<std::string> names;
  do {
    grpc::ClientContext context;
    v1::ListModelsResponse page;
    ASSERT_TRUE(client_->models().ListModels(&context, request, &page).ok());
    EXPECT_LE(page.models_size(), 2);
    for (const v1::Model& model : page.models()) names.push_back(model.name());
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  EXPECT_THAT(names, ::testing::ElementsAre("arm-1", "m0", "m1", "m2", "m3"));
  EXPECT_EQ(client_->ListModels()->size(), 5u);

  ASSERT_TRUE(client_->DeleteModel("m1").ok());
  EXPECT_EQ(client_->GetModel("m1").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->ListModels()->size(), 4u);
}

// Intervals on the wire: the spec in effect reports the level asked for
// and the calibration's settings; each prediction's interval, and the
// stats' half widths and coverages, are the engine's exactly; a request
// may ask for another level; a level outside (0, 1) is refused naming the
// field, in a spec and in a request, and changes nothing.
TEST_F(ServiceTest, IntervalsOnTheWireAreTheEngines) {
  const Rows rows(1200, 3);
  const Rows queries(40, 4);
  v1::ModelSpec spec = RowsSpec();
  spec.set_interval_level(0.8);
  spec.mutable_tuning()->set_interval_step(0.01);
  CreateAndIngest("bands", rows, rows.size(), spec);
  const v1::Model model = *client_->GetModel("bands");
  EXPECT_EQ(model.spec().interval_level(), 0.8);
  EXPECT_EQ(model.spec().tuning().interval_step(), 0.01);
  EXPECT_EQ(model.spec().tuning().interval_window(), 2000u);
  const std::unique_ptr<Model> reference = Reference(spec, rows, rows.size());
  const ModelStats expected_stats = reference->stats();
  ASSERT_EQ(model.stats().interval_half_width_size(), Rows::kTargets);
  for (std::size_t t = 0; t < Rows::kTargets; ++t) {
    EXPECT_EQ(model.stats().interval_half_width(t),
              expected_stats.interval_half_width[t]);
    EXPECT_EQ(model.stats().interval_coverage(t),
              expected_stats.interval_coverage[t]);
    EXPECT_NEAR(model.stats().interval_coverage(t), 0.8, 0.05);
    // No Learn answer was sent: the next gets the engine's interval for
    // the stream's next sample, and none has a coverage yet.
    EXPECT_EQ(model.stats().answer_interval_half_width(t),
              expected_stats.answer_interval_half_width[t]);
    EXPECT_TRUE(std::isnan(model.stats().answer_interval_coverage(t)));
    EXPECT_TRUE(std::isnan(model.stats().answer_nmse(t)));
  }
  EXPECT_EQ(model.stats().answers_sent(), 0u);
  // Per query and target, the half width at the model's level.
  std::vector<double> model_level_half(queries.size() * Rows::kTargets);
  for (const std::optional<double> level :
       {std::optional<double>(), std::optional<double>(0.95)}) {
    absl::StatusOr<std::vector<v1::Prediction>> predictions =
        client_->Predict("bands", queries.x, Rows::kDim,
                         {.interval_level = level, .with_neighbors = false});
    ASSERT_TRUE(predictions.ok()) << predictions.status();
    const std::vector<Prediction> expected =
        EnginePredictions(*reference, queries, PredictOptions::AtLevel(level));
    for (std::size_t q = 0; q < queries.size(); ++q) {
      const v1::Prediction& got = (*predictions)[q];
      ASSERT_EQ(got.lower_size(), Rows::kTargets);
      for (std::size_t t = 0; t < Rows::kTargets; ++t) {
        ASSERT_EQ(got.lower(t), expected[q].lower[t]) << q;
        ASSERT_EQ(got.upper(t), expected[q].upper[t]) << q;
        const double half = (got.upper(t) - got.lower(t)) / 2;
        // At 95% wider than the model's 80% at the same query.
        if (level.has_value()) {
          EXPECT_GT(half, model_level_half[q * Rows::kTargets + t]);
        } else {
          model_level_half[q * Rows::kTargets + t] = half;
        }
      }
    }
  }
  const absl::StatusOr<std::vector<v1::Prediction>> refused =
      client_->Predict("bands", queries.x, Rows::kDim,
                       {.interval_level = 1.5, .with_neighbors = false});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("interval_level: must be in (0, 1), got 1.5"));
  spec.set_interval_level(0.0);
  const absl::Status bad_spec = client_->CreateModel("bad", spec).status();
  EXPECT_EQ(bad_spec.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_spec.message(),
              HasSubstr("spec.interval_level: must be in (0, 1), got 0"));
  spec.set_interval_level(0.9);
  spec.mutable_tuning()->set_interval_window(0);
  EXPECT_THAT(client_->CreateModel("bad", spec).status().message(),
              HasSubstr("spec.tuning.interval_window: 1 to 100000, got 0"));
  spec.mutable_tuning()->clear_interval_window();
  spec.mutable_tuning()->set_max_scoring_stride(0);
  EXPECT_THAT(client_->CreateModel("bad", spec).status().message(),
              HasSubstr("spec.tuning.max_scoring_stride: 1 to 1024, got 0"));
  EXPECT_EQ(client_->GetModel("bad").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->GetModel("bands")->stats().num_samples(), rows.size());
}

// A random-feature base asked for on the wire: the spec in effect reports
// its options with their defaults filled in, the model predicts exactly as
// the engine's, and bad options are refused naming the field.
TEST_F(ServiceTest, ARandomFeatureBaseOnTheWireIsTheEngines) {
  const Rows rows(1500, 1);
  const Rows queries(50, 2);
  v1::ModelSpec spec = RowsSpec(v1::METRIC_MLKR);
  spec.mutable_random_feature_base()->set_frequencies(16);
  spec.mutable_random_feature_base()->add_ridges(0.01);
  spec.mutable_random_feature_base()->add_ridges(0.1);
  CreateAndIngest("rf", rows, rows.size(), spec);
  const v1::ModelSpec in_effect = client_->GetModel("rf")->spec();
  ASSERT_TRUE(in_effect.has_random_feature_base());
  EXPECT_EQ(in_effect.random_feature_base().frequencies(), 16u);
  EXPECT_THAT(in_effect.random_feature_base().lengthscales(),
              ::testing::ElementsAre(0.25, 0.5, 1.0, 2.0));
  EXPECT_THAT(in_effect.random_feature_base().ridges(),
              ::testing::ElementsAre(0.01, 0.1));
  EXPECT_FALSE(client_->GetModel("rf")->spec().per_target_base());
  const std::shared_ptr<HostedModel> hosted =
      server_->registry().Find("rf").value();
  const std::unique_ptr<Model> reference = Reference(spec, rows, rows.size());
  hosted->CatchUp();
  const_cast<Model&>(hosted->model()).FinishRebuilds();
  reference->FinishRebuilds();
  EXPECT_GE(reference->stats().base_rebuilds, 1u);
  const v1::ModelStats stats = client_->GetModel("rf")->stats();
  EXPECT_EQ(stats.base_rebuilds(), reference->stats().base_rebuilds);
  EXPECT_EQ(stats.base_lengthscale(), reference->stats().base_lengthscale);
  EXPECT_EQ(stats.base_ridge(), reference->stats().base_ridge);
  EXPECT_TRUE(stats.base_ridge() == 0.01 || stats.base_ridge() == 0.1);
  EXPECT_EQ(reference->stats().base_metric, MetricKind::kMlkr);
  EXPECT_EQ(stats.base_metric(), v1::METRIC_MLKR);
  absl::StatusOr<std::vector<v1::Prediction>> predictions =
      client_->Predict("rf", queries.x, Rows::kDim);
  ASSERT_TRUE(predictions.ok()) << predictions.status();
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const Prediction expected = *reference->Predict(queries.input(q));
    ASSERT_EQ((*predictions)[q].base_variance_size(), Rows::kTargets);
    for (std::size_t t = 0; t < Rows::kTargets; ++t) {
      ASSERT_EQ((*predictions)[q].y(t), expected.value[t]) << "query " << q;
      ASSERT_EQ((*predictions)[q].base_variance(t), expected.base_variance[t])
          << "query " << q;
      EXPECT_GT(expected.base_variance[t], 0.0);
    }
  }
  // A model without one reports none, nor a variance.
  CreateAndIngest("linear", rows, 100, RowsSpec());
  EXPECT_FALSE(client_->GetModel("linear")->spec().has_random_feature_base());
  predictions = client_->Predict("linear", queries.x, Rows::kDim);
  ASSERT_TRUE(predictions.ok()) << predictions.status();
  EXPECT_EQ(predictions->front().base_variance_size(), 0);

  spec = RowsSpec(v1::METRIC_MLKR);
  spec.mutable_random_feature_base()->set_frequencies(1300);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.random_feature_base.frequencies: at least 1"));
  spec.mutable_random_feature_base()->set_frequencies(0);
  spec.mutable_random_feature_base()->add_lengthscales(1.0);
  spec.mutable_random_feature_base()->add_lengthscales(-2.0);
  EXPECT_THAT(client_->CreateModel("x", spec).status().message(),
              HasSubstr("spec.random_feature_base.lengthscales[1]: must be "
                        "finite and > 0"));
  spec.mutable_random_feature_base()->clear_lengthscales();
  spec.set_linear_base(false);
  const absl::Status no_base = client_->CreateModel("x", spec).status();
  EXPECT_EQ(no_base.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_base.message(),
              HasSubstr("spec.random_feature_base: needs the base on"));
  EXPECT_EQ(client_->GetModel("x").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace streamreg
