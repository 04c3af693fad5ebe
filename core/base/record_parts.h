#ifndef STREAMREG_CORE_BASE_RECORD_PARTS_H_
#define STREAMREG_CORE_BASE_RECORD_PARTS_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/byte_coding.h"

namespace streamreg {

// Follows the parts of one encoded record as a ByteReader reads them in
// order, so that a decoder says which part did not decode and at which
// byte it began ("model state: inputs at byte 96: truncated"), however
// its parts report failure:
//
//   RecordParts parts(in, "model state");
//   if (!parts.Read("inputs", state.inputs.Load(in))) return parts.status();
//
// A part begins where the one before it ended (the record's first where
// the reader stood when the RecordParts was made).
class RecordParts {
 public:
  RecordParts(const ByteReader& in, absl::string_view record)
      : in_(in), record_(record), part_start_(in.position()) {}

  // Whether the part just read decoded (`decoded`, and nothing ran past
  // the end); if not, status() names it.
  bool Read(absl::string_view part, bool decoded) {
    if (!status_.ok()) return false;
    if (decoded && in_.ok()) {
      part_start_ = in_.position();
      return true;
    }
    status_ = absl::DataLossError(absl::StrCat(
        record_, ": ", part, " at byte ", part_start_, ": ",
        in_.ok() ? "malformed, or not of this model" : "truncated"));
    return false;
  }
  // Whether every byte was read: the end of a record.
  bool End() {
    if (!status_.ok()) return false;
    status_ = in_.Finish(record_);
    return status_.ok();
  }

  // OK, or DATA_LOSS naming the first part that did not decode.
  const absl::Status& status() const { return status_; }

 private:
  const ByteReader& in_;
  std::string record_;
  std::size_t part_start_;
  absl::Status status_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_RECORD_PARTS_H_
