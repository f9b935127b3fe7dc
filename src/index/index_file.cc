// SaveIndex: writes the file format of doc/index_format.md (LoadIndex is in index_loader.cc).
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "index/index_format.h"
#include "index/permuted_table_index.h"
#include "neardup/output.h"

namespace neardup {
namespace {

using index_internal::IndexRun;
using index_internal::Layout;
using index_internal::PermutedTableIndex;
using index_internal::TableView;

constexpr auto& kMagic = index_internal::kIndexMagic;
constexpr uint32_t kVersion = index_internal::kIndexVersion;
constexpr size_t kHeaderBytes = index_internal::kIndexHeaderBytes;
constexpr size_t kChecksumOffset = index_internal::kIndexChecksumOffset;
constexpr size_t kSectionEntryBytes = index_internal::kIndexSectionEntryBytes;
constexpr size_t kAlignment = index_internal::kIndexSectionAlignment;

struct Section {
  uint32_t kind = 0;
  uint32_t table = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t checksum = 0;
  const void* data = nullptr;  // when writing
};

template <typename T>
void Put(std::string* out, size_t offset, T value) {
  std::memcpy(out->data() + offset, &value, sizeof(T));
}

size_t AlignUp(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

std::string EncodeHeader(const TableDesign& design, int prefix_bits, uint64_t count,
                         const std::vector<Section>& sections) {
  std::string header(kHeaderBytes + sections.size() * kSectionEntryBytes, '\0');
  std::memcpy(header.data(), kMagic, sizeof(kMagic));
  Put<uint32_t>(&header, 8, kVersion);
  Put<uint32_t>(&header, 12, static_cast<uint32_t>(header.size()));
  Put<uint32_t>(&header, 16, static_cast<uint32_t>(design.block_bits.size()));
  Put<uint32_t>(&header, 20, static_cast<uint32_t>(design.key_blocks));
  for (size_t j = 0; j < design.block_bits.size(); ++j) {
    Put<uint8_t>(&header, 24 + j, static_cast<uint8_t>(design.block_bits[j]));
  }
  Put<uint32_t>(&header, 32, static_cast<uint32_t>(prefix_bits));
  Put<uint32_t>(&header, 36, static_cast<uint32_t>(design.tables()));
  Put<uint64_t>(&header, 40, count);
  Put<uint32_t>(&header, 48, static_cast<uint32_t>(sections.size()));
  for (size_t s = 0; s < sections.size(); ++s) {
    const size_t at = kHeaderBytes + s * kSectionEntryBytes;
    Put<uint32_t>(&header, at, sections[s].kind);
    Put<uint32_t>(&header, at + 4, sections[s].table);
    Put<uint64_t>(&header, at + 8, sections[s].offset);
    Put<uint64_t>(&header, at + 16, sections[s].bytes);
    Put<uint64_t>(&header, at + 24, sections[s].checksum);
  }
  const uint64_t checksum = XXH3_64bits(header.data(), kChecksumOffset) ^
                            XXH3_64bits(header.data() + kHeaderBytes, header.size() - kHeaderBytes);
  Put<uint64_t>(&header, kChecksumOffset, checksum);
  return header;
}

}  // namespace

Status SaveIndex(const Index& index, OutputFile* out) {
  const auto* permuted = dynamic_cast<const PermutedTableIndex*>(&index);
  if (permuted == nullptr) return Status::InvalidArgument("only a PermutedTableIndex can be saved");
  const PermutedTableIndex::Compact compact = permuted->Compacted();
  const std::vector<uint64_t>& ids = compact.ids;
  const IndexRun& run = *compact.run;
  const Layout& layout = permuted->layout();

  std::vector<Section> sections;
  auto add = [&](uint32_t kind, uint32_t table, const void* data, size_t bytes) {
    sections.push_back(Section{kind, table, 0, bytes, XXH3_64bits(data, bytes), data});
  };
  add(index_internal::kIndexIds, 0, ids.data(), ids.size() * sizeof(uint64_t));
  add(index_internal::kIndexCodes, 0, compact.codes.data(),
      compact.codes.size() * sizeof(uint64_t));
  for (int t = 0; t < layout.tables(); ++t) {
    const TableView& table = run.table(t);
    const auto u = static_cast<uint32_t>(t);
    add(index_internal::kIndexDirectory, u, table.directory.data(), table.directory.size_bytes());
    add(index_internal::kIndexFragments, u, table.fragments.data(), table.fragments.size_bytes());
    add(index_internal::kIndexRows, u, table.rows.data(), table.rows.size_bytes());
  }
  size_t offset = AlignUp(kHeaderBytes + sections.size() * kSectionEntryBytes);
  for (Section& section : sections) {
    section.offset = offset;
    offset = AlignUp(offset + section.bytes);
  }
  const std::string header = EncodeHeader(layout.design(), run.prefix_bits(), ids.size(), sections);

  std::string zeros;
  out->Write(header);
  size_t position = header.size();
  for (const Section& section : sections) {
    zeros.assign(section.offset - position, '\0');
    out->Write(zeros);
    out->Write(std::string_view(static_cast<const char*>(section.data), section.bytes));
    position = section.offset + section.bytes;
  }
  return out->status();
}

Status SaveIndex(const Index& index, const std::string& path) {
  OutputFile out;
  NEARDUP_RETURN_IF_ERROR(out.Open(path));
  NEARDUP_RETURN_IF_ERROR(SaveIndex(index, &out));
  return out.Commit();
}

}  // namespace neardup
