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
inline constexpr std::string_view kFormatVersionKey = "format_version";
inline constexpr std::string_view kSettingsKey = "settings";
inline constexpr std::string_view kNextRowKey = "next_row";
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
