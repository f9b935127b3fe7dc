// Constants of the index file format (doc/index_format.md), shared by the writer (index_file.cc) and
// the loader (index_loader.cc) so that the two cannot drift apart.
#ifndef NEARDUP_INDEX_INDEX_FORMAT_H_
#define NEARDUP_INDEX_INDEX_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace neardup::index_internal {

inline constexpr char kIndexMagic[8] = {'N', 'D', 'U', 'P', 'I', 'D', 'X', '\n'};
inline constexpr uint32_t kIndexVersion = 1;
inline constexpr size_t kIndexHeaderBytes = 128;
inline constexpr size_t kIndexChecksumOffset = 120;
inline constexpr size_t kIndexSectionEntryBytes = 32;
// Every section starts at a multiple of this many bytes.
inline constexpr size_t kIndexSectionAlignment = 64;

// The kind field of a section table entry. Sections come in this order: ids, codes, then for each
// table: directory, fragments, rows.
enum IndexSectionKind : uint32_t {
  kIndexIds = 1,
  kIndexCodes = 2,
  kIndexDirectory = 3,
  kIndexFragments = 4,
  kIndexRows = 5,
};

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_INDEX_FORMAT_H_
