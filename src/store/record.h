// The byte encodings of the store's keys and values (doc/store.md): row keys, id entries, document
// records and meta values. Pure functions, no RocksDB: the store and its tests share them.
#ifndef NEARDUP_SRC_STORE_RECORD_H_
#define NEARDUP_SRC_STORE_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "neardup/method.h"
#include "neardup/status.h"

namespace neardup::store {

// The version of the whole layout, in meta/format_version. Open refuses any other.
inline constexpr uint32_t kFormatVersion = 1;
// The first byte of every document record.
inline constexpr uint8_t kRecordVersion = 1;

// Column family names and meta keys.
inline constexpr const char* kMetaFamily = "meta";
inline constexpr const char* kIdsFamily = "ids";
inline constexpr const char* kDocumentsFamily = "documents";
// Disk-resident stores only: the SimHash tables (store/simhash_tables.h).
inline constexpr const char* kTablesFamily = "tables";
// Row -> the document's attachment (opaque bytes the caller stores beside it; none: no key). Made
// in a store that lacks it at its first writable open.
inline constexpr const char* kAttachmentsFamily = "attachments";
// The removal log: removal number (8 bytes big-endian) -> the removed document's id, written in the
// batch of each remove, so that a snapshot of the in-memory index plus the removals and documents
// after it gives the index back (doc/store.md, "Snapshots"). Made like the attachments' family.
inline constexpr const char* kRemovalsFamily = "removals";
inline constexpr std::string_view kFormatVersionKey = "format_version";
inline constexpr std::string_view kSettingsKey = "settings";
inline constexpr std::string_view kNextRowKey = "next_row";
// The next removal number (uint64 LE), and the snapshot the index loads from (EncodeSnapshotRef).
inline constexpr std::string_view kNextRemovalKey = "next_removal";
inline constexpr std::string_view kSnapshotKey = "snapshot";
// Disk-resident stores only: "disk" in kIndexKey, the tables' design (DesignText), and the counts
// of stored documents and of those without features, written with every change (a count at open
// would read every document).
inline constexpr std::string_view kIndexKey = "index";
inline constexpr std::string_view kDiskIndex = "disk";
inline constexpr std::string_view kDesignKey = "design";
inline constexpr std::string_view kDocumentsKey = "documents";
inline constexpr std::string_view kEmptyDocumentsKey = "empty_documents";

// A row number as the key of the documents family: 8 bytes big-endian, so that the bytewise order
// of keys is the order of rows.
std::string RowKey(uint64_t row);
std::optional<uint64_t> ParseRowKey(std::string_view key);

// Little-endian fixed-width values (the ids family's rows, meta counters).
std::string EncodeFixed64(uint64_t value);
std::string EncodeFixed32(uint32_t value);
std::optional<uint64_t> DecodeFixed64(std::string_view bytes);  // exactly 8 bytes
std::optional<uint32_t> DecodeFixed32(std::string_view bytes);  // exactly 4 bytes

// The snapshot the in-memory index loads from (meta/snapshot): the rows (every row below `rows`)
// and removals (every removal number below `removals`) it covers, and its file's name in the
// store's directory. Encoded as rows and removals (uint64 LE each), then the name's bytes.
struct SnapshotRef {
  uint64_t rows = 0;
  uint64_t removals = 0;
  std::string file;
};
std::string EncodeSnapshotRef(const SnapshotRef& ref);
// nullopt when malformed (shorter than 17 bytes, or a name that is not SnapshotFileName's).
std::optional<SnapshotRef> DecodeSnapshotRef(std::string_view bytes);
// "snapshot-ROWS-REMOVALS.ndx": a new name for each cut, so that a snapshot never replaces the one
// in use before the database points to it.
std::string SnapshotFileName(uint64_t rows, uint64_t removals);
inline constexpr std::string_view kSnapshotPrefix = "snapshot-";

// The stamp of a settings line in every record: XXH32 of its bytes, seed 0.
uint32_t SettingsStamp(std::string_view settings_line);

// A document record: the id and signature of one row, stamped with its settings.
std::string EncodeDocument(std::string_view id, const Signature& signature,
                           uint32_t settings_stamp);

struct DecodedDocument {
  std::string_view id;  // points into the record
  Signature signature;
};

// Decodes a record written under the settings of `stamp` with the signer's sketch and band sizes.
// Corruption naming what is wrong (version, flags, stamp, a length past the end, trailing bytes).
Status DecodeDocument(std::string_view record, uint32_t stamp, size_t sketch_bytes, size_t bands,
                      DecodedDocument* document);

}  // namespace neardup::store

#endif  // NEARDUP_SRC_STORE_RECORD_H_
