#include "core/model/take_over_key.h"

#include "absl/strings/str_cat.h"

namespace streamreg {

absl::string_view TakeOverRuleName(TakeOverRule rule) {
  return rule == TakeOverRule::kLogged ? "logged" : "fixed_count";
}

absl::StatusOr<TakeOverRule> ParseTakeOverRule(absl::string_view name,
                                               absl::string_view field) {
  for (TakeOverRule rule : {TakeOverRule::kLogged, TakeOverRule::kFixedCount}) {
    if (name == TakeOverRuleName(rule)) return rule;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": '", name, "' is not one of logged, fixed_count"));
}

std::string TakeOverKeyName(const TakeOverKey& key) {
  using Work = TakeOverKey::Work;
  switch (key.work) {
    case Work::kMetricRefresh:
      return "metric_refresh";
    case Work::kMlkrFit:
      return "mlkr_fit";
    case Work::kRandomFeatureRebuild:
      return "random_feature_rebuild";
    case Work::kGradientIndexRebuild:
      return "gradient_index_rebuild";
    case Work::kPredictionIndexRebuild:
      return absl::StrCat("prediction_index_rebuild[", key.index, "]");
  }
  return "unknown";
}

void SaveTakeOverKey(const TakeOverKey& key, ByteWriter& out) {
  out.U8(static_cast<std::uint8_t>(key.work));
  out.U32(key.index);
  out.U64(key.earliest);
}

absl::Status LoadTakeOverKey(ByteReader& in, TakeOverKey* key) {
  const std::size_t start = in.position();
  const std::uint8_t work = in.U8();
  if (work >
      static_cast<std::uint8_t>(TakeOverKey::Work::kPredictionIndexRebuild)) {
    return absl::DataLossError(absl::StrCat("take-over key: work at byte ",
                                            start, ": unknown kind ", work));
  }
  key->work = static_cast<TakeOverKey::Work>(work);
  key->index = in.U32();
  key->earliest = in.U64();
  return in.ok() ? absl::OkStatus() : in.Finish("take-over key");
}

}  // namespace streamreg
