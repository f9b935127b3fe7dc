// Constants of the index file format (doc/index_format.md), shared by the writer (index_file.cc),
// the loader (index_loader.cc) and the signature files (signature_file.cc) so that they cannot
// drift apart.
#ifndef NEARDUP_INDEX_INDEX_FORMAT_H_
#define NEARDUP_INDEX_INDEX_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace neardup::index_internal {

inline constexpr char kIndexMagic[8] = {'N', 'D', 'U', 'P', 'I', 'D', 'X', '\n'};
// Version 2 records the settings line and the file kind; version 1 files (fingerprints, settings
// unknown) are still read.
inline constexpr uint32_t kIndexVersion = 2;
inline constexpr uint32_t kIndexOldestVersion = 1;
inline constexpr size_t kIndexHeaderBytes = 128;
inline constexpr size_t kIndexChecksumOffset = 120;
inline constexpr size_t kIndexSectionEntryBytes = 32;
// Every section starts at a multiple of this many bytes.
inline constexpr size_t kIndexSectionAlignment = 64;
// Header fields shared by every kind of file.
inline constexpr size_t kIndexCountOffset = 40;
inline constexpr size_t kIndexSectionCountOffset = 48;
inline constexpr size_t kIndexKindOffset = 52;          // version 2
inline constexpr size_t kIndexSettingsSizeOffset = 56;  // version 2
// Fingerprints files (version 2): how the rows' ids name documents and the k queries default to.
// Both are zero in files of earlier builds (not recorded).
inline constexpr size_t kIndexIdNamesOffset = 60;
inline constexpr size_t kIndexQueryKOffset = 64;  // k + 1
// A settings line is at most this long.
inline constexpr uint32_t kIndexMaxSettingsBytes = 4096;
// Rows are numbered by uint32_t, the last value is kept free.
inline constexpr uint64_t kIndexMaxCount = 0xFFFFFFFEu;
// More sections than any kind of file has (fingerprints: 2 + 3 * 70 at most; online indexes:
// 11 + 3 * 64).
inline constexpr uint32_t kIndexMaxSections = 256;

// The file kind field (version 2; version 1 files are all kIndexFingerprints).
enum IndexFileKindCode : uint32_t {
  kIndexFingerprints = 1,  // SimHash fingerprints in permuted tables
  kIndexSignatures = 2,    // accurate-method signatures: sketches and band keys
  kIndexOnline = 3,        // the whole state of an OnlineIndex (OnlineIndex::Save)
};

// The kind field of a section table entry. Fingerprint files: ids, codes, then for each table:
// directory, fragments, rows. Signature files: ids, codes, sketches, band keys. Online index files:
// online/index_snapshot.cc (doc/index_format.md gives the order).
enum IndexSectionKind : uint32_t {
  kIndexIds = 1,
  kIndexCodes = 2,
  kIndexDirectory = 3,
  kIndexFragments = 4,
  kIndexRows = 5,
  kIndexSketches = 6,
  kIndexBandKeys = 7,
  kIndexState = 8,
  kIndexIdBytes = 9,
  kIndexIdOffsets = 10,
  kIndexIdSlots = 11,
  kIndexRemovedRows = 12,
  kIndexEmptyRows = 13,
  kIndexBufferRows = 14,
  kIndexBufferKeys = 15,
  kIndexBufferChains = 16,
  kIndexBandEntries = 17,
  kIndexBufferSlots = 18,
};

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_INDEX_FORMAT_H_
