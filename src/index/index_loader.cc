// LoadIndex: opens a file of doc/index_format.md, checking everything a query relies on before use.
#include <algorithm>

#include "index/index_file_io.h"
#include "index/index_format.h"
#include "index/permuted_table_index.h"

namespace neardup {
namespace {

using index_internal::CommonHeader;
using index_internal::FileBytes;
using index_internal::GetLittleEndian;
using index_internal::IndexRun;
using index_internal::Layout;
using index_internal::PermutedTableIndex;
using index_internal::SectionData;
using index_internal::TableView;

constexpr int kMaxPrefixBits = 30;

struct Header {
  CommonHeader common;
  TableDesign design;
  int prefix_bits = 0;
};

// The common header, then the fields of a fingerprint file: the design must be valid and the
// section count that of the design.
Result<Header> ParseHeader(const FileBytes& file, const std::string& path) {
  auto corrupt = [&](const std::string& what) { return Status::Corruption(path + ": " + what); };
  auto common = index_internal::ParseCommonHeader(file, path);
  if (!common.ok()) return common.status();
  if (common->kind == index_internal::kIndexOnline) {
    return Status::InvalidArgument(
        path + ": an online index file, not fingerprints (OnlineIndex::Load reads it)");
  }
  if (common->kind != index_internal::kIndexFingerprints) {
    return Status::InvalidArgument(path +
                                   ": an index of the accurate method (signatures, not "
                                   "fingerprints): `neardup dedup --against` reads it "
                                   "(LoadSignatureIndex)");
  }
  const uint8_t* p = file.data();
  Header h;
  h.common = std::move(*common);
  const uint32_t blocks = GetLittleEndian<uint32_t>(p, 16);
  if (blocks > index_internal::kMaxBlocks) return corrupt("too many blocks");
  for (uint32_t j = 0; j < blocks; ++j) h.design.block_bits.push_back(p[24 + j]);
  h.design.key_blocks = static_cast<int>(GetLittleEndian<uint32_t>(p, 20));
  Status valid = h.design.Validate();
  if (!valid.ok()) return corrupt("invalid design: " + valid.message());
  h.prefix_bits = static_cast<int>(GetLittleEndian<uint32_t>(p, 32));
  auto fields = index_internal::ParseFingerprintFileFields(p, h.common, path);
  if (!fields.ok()) return fields.status();
  if (fields->query_k > h.design.max_exact_k()) {
    return corrupt("query k " + std::to_string(fields->query_k) + " above the design's " +
                   std::to_string(h.design.max_exact_k()));
  }
  const Layout layout(h.design);
  if (h.prefix_bits < 0 || h.prefix_bits > std::min(layout.min_key_bits(), kMaxPrefixBits) ||
      GetLittleEndian<uint32_t>(p, 36) != static_cast<uint32_t>(layout.tables()) ||
      h.common.sections != 2 + 3 * static_cast<uint32_t>(layout.tables())) {
    return corrupt("header fields inconsistent with the design " + h.design.ToString());
  }
  return h;
}

}  // namespace

Result<std::unique_ptr<Index>> LoadIndex(const std::string& path, const LoadOptions& options) {
  auto file = FileBytes::Open(path, options.map_file);
  if (!file.ok()) return file.status();
  const FileBytes& bytes = **file;
  auto header = ParseHeader(bytes, path);
  if (!header.ok()) return header.status();
  const Header& h = *header;
  const Layout layout(h.design);
  const uint64_t n = h.common.count;
  const bool verify = options.verify_checksums;
  NEARDUP_RETURN_IF_ERROR(index_internal::CheckTiling(bytes, path, h.common));

  auto ids = SectionData(bytes, path, 0, index_internal::kIndexIds, 0, n * 8, verify);
  if (!ids.ok()) return ids.status();
  auto codes = SectionData(bytes, path, 1, index_internal::kIndexCodes, 0, n * 8, verify);
  if (!codes.ok()) return codes.status();

  const uint64_t directory_size = (uint64_t{1} << h.prefix_bits) + 1;
  std::vector<TableView> tables;
  for (int t = 0; t < layout.tables(); ++t) {
    const auto table = static_cast<uint32_t>(t);
    const uint32_t first = 2 + 3 * table;
    auto directory = SectionData(bytes, path, first, index_internal::kIndexDirectory, table,
                                 directory_size * 4, verify);
    if (!directory.ok()) return directory.status();
    auto fragments =
        SectionData(bytes, path, first + 1, index_internal::kIndexFragments, table, n * 4, verify);
    if (!fragments.ok()) return fragments.status();
    auto rows =
        SectionData(bytes, path, first + 2, index_internal::kIndexRows, table, n * 4, verify);
    if (!rows.ok()) return rows.status();
    TableView view{{reinterpret_cast<const uint32_t*>(*directory), directory_size},
                   {reinterpret_cast<const uint32_t*>(*fragments), n},
                   {reinterpret_cast<const uint32_t*>(*rows), n}};
    // Queries index codes through the directory: check it always (it is small).
    if (view.directory[0] != 0 || view.directory[directory_size - 1] != n) {
      return Status::Corruption(path + ": directory of table " + std::to_string(t) +
                                " does not span the table");
    }
    for (uint64_t b = 1; b < directory_size; ++b) {
      if (view.directory[b] < view.directory[b - 1]) {
        return Status::Corruption(path + ": directory of table " + std::to_string(t) +
                                  " decreases at bucket " + std::to_string(b));
      }
    }
    if (verify) {
      for (uint32_t row : view.rows) {
        if (row >= n)
          return Status::Corruption(path + ": row out of range in table " + std::to_string(t));
      }
    }
    tables.push_back(view);
  }
  const uint64_t table_bytes = bytes.size() - 16 * n;  // ids and codes are copied, not shared
  auto run = IndexRun::FromViews(h.prefix_bits, n, static_cast<uint32_t>(n), std::move(tables),
                                 *file, table_bytes);
  auto index = std::make_unique<PermutedTableIndex>(h.design, options.index);
  index->Adopt(std::move(run), {reinterpret_cast<const uint64_t*>(*ids), n},
               {reinterpret_cast<const uint64_t*>(*codes), n});
  return std::unique_ptr<Index>(std::move(index));
}

}  // namespace neardup
