#include "client/cli/used_neighbors_csv.h"

#include <cstdio>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "client/cli/csv_number.h"

namespace streamreg {
namespace {

std::string Header(const v1::ModelSpec& spec) {
  std::string header = "row,target,rank,sample_id,distance,y";
  const bool named =
      spec.input_names_size() == static_cast<int>(spec.input_dim());
  for (std::uint32_t i = 0; i < spec.input_dim(); ++i) {
    absl::StrAppend(
        &header, ",",
        named ? spec.input_names(static_cast<int>(i)) : absl::StrCat("x", i));
  }
  return header;
}

}  // namespace

absl::Status WriteUsedNeighborsCsv(
    const std::string& path, const v1::ModelSpec& spec,
    std::span<const v1::Prediction> predictions) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("--neighbors_out ", path, ": cannot write"));
  }
  absl::Cleanup close_file = [file] { std::fclose(file); };
  std::fprintf(file, "%s\n", Header(spec).c_str());
  for (std::size_t row = 0; row < predictions.size(); ++row) {
    const v1::Prediction& prediction = predictions[row];
    for (int t = 0; t < prediction.used_size(); ++t) {
      const std::string& target =
          t < spec.target_names_size() ? spec.target_names(t) : absl::StrCat(t);
      const auto& neighbors = prediction.used(t).neighbors();
      for (int rank = 0; rank < neighbors.size(); ++rank) {
        const v1::UsedNeighbor& neighbor = neighbors[rank];
        std::string line = absl::StrCat(
            row, ",", target, ",", rank, ",", neighbor.sample_id(), ",",
            CsvNumber(neighbor.distance()), ",", CsvNumber(neighbor.y()));
        for (double v : neighbor.x()) absl::StrAppend(&line, ",", CsvNumber(v));
        std::fprintf(file, "%s\n", line.c_str());
      }
    }
  }
  if (std::fflush(file) != 0 || std::ferror(file) != 0) {
    return absl::DataLossError(
        absl::StrCat("--neighbors_out ", path, ": write failed"));
  }
  return absl::OkStatus();
}

}  // namespace streamreg
