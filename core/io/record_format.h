#ifndef STREAMREG_CORE_IO_RECORD_FORMAT_H_
#define STREAMREG_CORE_IO_RECORD_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace streamreg {

// The on-disk record format shared by write-ahead log segments and snapshot
// files (docs/storage.md).
//
// A file is a sequence of records and nothing else:
//
//   record := header payload
//   header := payload_crc  u32   crc32 (zlib) of the payload bytes
//             length       u32   payload bytes (at most kMaxRecordLength)
//             type         u8    the record's RecordType (never 0)
//             header_crc   u32   crc32 of the 9 bytes before it
//
// All integers little-endian; payloads are encoded with ByteWriter
// (core/base/byte_coding.h). The header has its own checksum so that a damaged
// length is recognised before it is trusted: a flipped bit in a length can
// neither swallow the records after it nor pass for the end of the file.
//
// Every record is written by one append; a file only grows. What a crash
// can leave at the end of the file being written is a torn tail: the file
// ends inside a record, or the last record(s) read back as zeros or fail
// their checksum with nothing but zeros after them (a power cut after the
// file's size was extended but before its data reached the disk). A reader
// drops a torn tail — it was never acknowledged under --sync=always, and
// under --sync=interval it is the unsynced window that mode allows to lose.
// A record that fails its checksum with intact data after it, or any bad
// record in a file that was complete (an older log segment, a snapshot),
// is corruption: reported with the file and offset, never skipped.
//
// This layer gives the type byte no meaning beyond "not 0": the layer that
// writes a file defines its record types and their payloads (a model's log
// and snapshot records: server/storage/journal_records.h; the model's own
// state in a snapshot: core/model/model_snapshot.h), and numbers them so
// that the types of one file never collide.
enum class RecordType : std::uint8_t {};

inline constexpr std::size_t kRecordHeaderSize = 13;
inline constexpr std::uint32_t kMaxRecordLength = 1u << 30;

// zlib's crc32 of `data`.
std::uint32_t Crc32(absl::string_view data);

}  // namespace streamreg

#endif  // STREAMREG_CORE_IO_RECORD_FORMAT_H_
