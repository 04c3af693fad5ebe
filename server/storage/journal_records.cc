#include "server/storage/journal_records.h"

#include "absl/strings/str_cat.h"
#include "core/base/byte_coding.h"
#include "core/model/model_settings.h"

namespace streamreg {
namespace {

void SaveIdentity(const ModelIdentity& identity, ByteWriter& out) {
  out.String(identity.name);
  out.I64(absl::ToUnixMicros(identity.create_time));
  SaveConfig(identity.config, out);
  out.U64(identity.input_names.size());
  for (const std::string& name : identity.input_names) out.String(name);
}

absl::Status LoadIdentity(ByteReader& in, ModelIdentity* identity) {
  identity->name = in.String();
  identity->create_time = absl::FromUnixMicros(in.I64());
  if (!in.ok()) return in.Finish("the model's name and create time");
  if (absl::Status status = LoadConfig(in, &identity->config); !status.ok()) {
    return status;
  }
  const std::size_t names_at = in.position();
  const std::uint64_t num_names = in.U64();
  if (num_names > in.remaining()) {
    return absl::DataLossError(absl::StrCat("input names at byte ", names_at,
                                            ": ", num_names,
                                            ", more than the bytes left hold"));
  }
  identity->input_names.resize(num_names);
  for (std::string& name : identity->input_names) name = in.String();
  return in.ok() ? absl::OkStatus() : in.Finish("input names");
}

}  // namespace

absl::Status DecodeLsn(absl::string_view payload, std::uint64_t* lsn) {
  ByteReader in(payload);
  *lsn = in.U64();
  return in.ok() ? absl::OkStatus() : in.Finish("lsn");
}

std::string EncodeCreate(std::uint64_t lsn, const ModelIdentity& identity) {
  std::string payload;
  ByteWriter out(&payload);
  out.U64(lsn);
  SaveIdentity(identity, out);
  return payload;
}

absl::Status DecodeCreate(absl::string_view payload, ModelIdentity* identity) {
  ByteReader in(payload);
  in.U64();
  if (absl::Status status = LoadIdentity(in, identity); !status.ok()) {
    return status;
  }
  return in.Finish("create record");
}

std::string EncodeSamples(std::uint64_t lsn, std::uint64_t first_sequence,
                          std::span<const Sample> samples) {
  std::string payload;
  if (!samples.empty()) {
    payload.reserve(20 + samples.size() *
                             (samples[0].x.size() + samples[0].y.size() + 1) *
                             sizeof(double));
  }
  ByteWriter out(&payload);
  out.U64(lsn);
  out.U64(first_sequence);
  out.U32(static_cast<std::uint32_t>(samples.size()));
  for (const Sample& sample : samples) {
    out.U64(sample.sample_id);
    out.RawDoubles(sample.x);
    out.RawDoubles(sample.y);
  }
  return payload;
}

absl::Status DecodeSamples(absl::string_view payload, std::size_t dim,
                           std::size_t num_targets, SamplesRecord* record) {
  ByteReader in(payload);
  in.U64();
  record->first_sequence = in.U64();
  const std::uint32_t count = in.U32();
  if (!in.ok()) return in.Finish("samples record");
  const std::size_t size = count * (1 + dim + num_targets) * sizeof(double);
  if (in.remaining() != size) {
    return absl::DataLossError(absl::StrCat(
        "samples record: ", count, " samples of ", dim, " inputs and ",
        num_targets, " targets at byte ", in.position(), " need ", size,
        " bytes, ", in.remaining(), " follow"));
  }
  record->x.resize(count * dim);
  record->y.resize(count * num_targets);
  record->ids.resize(count);
  for (std::size_t s = 0; s < count; ++s) {
    record->ids[s] = in.U64();
    in.RawDoubles({record->x.data() + s * dim, dim});
    in.RawDoubles({record->y.data() + s * num_targets, num_targets});
  }
  return in.Finish("samples record");
}

std::vector<Sample> SamplesRecord::samples(std::size_t dim,
                                           std::size_t num_targets) const {
  std::vector<Sample> out(ids.size());
  for (std::size_t s = 0; s < ids.size(); ++s) {
    out[s] = Sample{{x.data() + s * dim, dim},
                    {y.data() + s * num_targets, num_targets},
                    ids[s]};
  }
  return out;
}

std::string EncodeLsnOnly(std::uint64_t lsn) {
  std::string payload;
  ByteWriter(&payload).U64(lsn);
  return payload;
}

std::string EncodeTakeOver(std::uint64_t lsn, const TakeOverKey& key) {
  std::string payload;
  ByteWriter out(&payload);
  out.U64(lsn);
  SaveTakeOverKey(key, out);
  return payload;
}

absl::Status DecodeTakeOver(absl::string_view payload, TakeOverKey* key) {
  ByteReader in(payload);
  (void)in.U64();  // the lsn
  if (absl::Status status = LoadTakeOverKey(in, key); !status.ok()) {
    return status;
  }
  return in.Finish("take-over record");
}

std::string EncodeSnapshotHeader(const SnapshotHeader& header) {
  std::string payload;
  ByteWriter out(&payload);
  out.U64(header.lsn);
  SaveIdentity(header.identity, out);
  out.U64(header.num_samples);
  out.U64(header.duplicate_samples);
  out.U64(header.recent_ids.size());
  for (const auto& [id, sequence] : header.recent_ids) {
    out.U64(id);
    out.U64(sequence);
  }
  return payload;
}

absl::Status DecodeSnapshotHeader(absl::string_view payload,
                                  SnapshotHeader* header) {
  ByteReader in(payload);
  header->lsn = in.U64();
  if (absl::Status status = LoadIdentity(in, &header->identity); !status.ok()) {
    return status;
  }
  header->num_samples = in.U64();
  header->duplicate_samples = in.U64();
  const std::size_t ids_at = in.position();
  const std::uint64_t num_ids = in.U64();
  if (num_ids > in.remaining() / 16) {
    return absl::DataLossError(
        absl::StrCat("snapshot header: recent ids at byte ", ids_at, ": ",
                     num_ids, ", more than the bytes left hold"));
  }
  header->recent_ids.resize(num_ids);
  for (auto& [id, sequence] : header->recent_ids) {
    id = in.U64();
    sequence = in.U64();
  }
  return in.Finish("snapshot header");
}

std::string EncodeSnapshotEnd(std::uint64_t lsn, std::uint64_t records) {
  std::string payload;
  ByteWriter out(&payload);
  out.U64(lsn);
  out.U64(records);
  return payload;
}

absl::Status DecodeSnapshotEnd(absl::string_view payload, std::uint64_t* lsn,
                               std::uint64_t* records) {
  ByteReader in(payload);
  *lsn = in.U64();
  *records = in.U64();
  return in.Finish("snapshot end");
}

}  // namespace streamreg
