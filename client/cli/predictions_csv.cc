#include "client/cli/predictions_csv.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli/csv_number.h"

namespace streamreg {
namespace {

void AppendValues(std::span<const double> values, std::string* line) {
  for (double value : values) {
    absl::StrAppend(line, line->empty() ? "" : ",", CsvNumber(value));
  }
}
void AppendValues(const google::protobuf::RepeatedField<double>& values,
                  std::string* line) {
  AppendValues(std::span<const double>(values.data(), values.size()), line);
}

}  // namespace

PredictionsCsv::PredictionsCsv(const v1::ModelSpec& spec, bool with_truth,
                               bool legacy)
    : spec_(spec), with_truth_(with_truth && !legacy), legacy_(legacy) {}

std::string PredictionsCsv::Header() const {
  std::vector<std::string> prefixes;
  if (with_truth_) prefixes.push_back("");
  if (legacy_) {
    prefixes.insert(prefixes.end(), {"target_", "spread_", "lower_", "upper_"});
  } else {
    prefixes.insert(prefixes.end(),
                    {"predicted_", "lower_", "upper_", "spread_"});
  }
  if (spec_.has_random_feature_base()) prefixes.push_back("base_variance_");
  std::string header;
  for (const std::string& prefix : prefixes) {
    for (const std::string& name : spec_.target_names()) {
      absl::StrAppend(&header, header.empty() ? "" : ",", prefix, name);
    }
  }
  return absl::StrCat(header, ",neighbors");
}

std::string PredictionsCsv::Row(const v1::Prediction& p,
                                std::span<const double> truth) const {
  std::string line;
  if (with_truth_) AppendValues(truth, &line);
  AppendValues(p.y(), &line);
  if (legacy_) {
    AppendValues(p.spread(), &line);
    AppendValues(p.lower(), &line);
    AppendValues(p.upper(), &line);
  } else {
    AppendValues(p.lower(), &line);
    AppendValues(p.upper(), &line);
    AppendValues(p.spread(), &line);
  }
  AppendValues(p.base_variance(), &line);
  return absl::StrCat(line, ",", p.neighbors());
}

}  // namespace streamreg
