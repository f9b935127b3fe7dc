// SaveIndex: writes a fingerprint file of doc/index_format.md (LoadIndex is in index_loader.cc).
#include "index/index_file_io.h"
#include "index/index_format.h"
#include "index/permuted_table_index.h"
#include "neardup/output.h"

namespace neardup {

using index_internal::IndexRun;
using index_internal::Layout;
using index_internal::PermutedTableIndex;
using index_internal::PutLittleEndian;
using index_internal::SectionToWrite;
using index_internal::TableView;

Status SaveIndex(const Index& index, OutputFile* out, std::string_view settings) {
  IndexFileOptions options;
  options.settings = std::string(settings);
  return SaveIndex(index, out, options);
}

Status SaveIndex(const Index& index, OutputFile* out, const IndexFileOptions& options) {
  const auto* permuted = dynamic_cast<const PermutedTableIndex*>(&index);
  if (permuted == nullptr) return Status::InvalidArgument("only a PermutedTableIndex can be saved");
  const PermutedTableIndex::Compact compact = permuted->Compacted();
  const std::vector<uint64_t>& ids = compact.ids;
  const IndexRun& run = *compact.run;
  const Layout& layout = permuted->layout();
  const TableDesign& design = layout.design();
  if (options.query_k < -1 || options.query_k > design.max_exact_k()) {
    return Status::InvalidArgument("query k " + std::to_string(options.query_k) +
                                   " is outside the range the design answers exactly, 0.." +
                                   std::to_string(design.max_exact_k()));
  }

  std::vector<SectionToWrite> sections;
  auto add = [&](uint32_t kind, uint32_t table, const void* data, size_t bytes) {
    sections.push_back(SectionToWrite{kind, table, data, bytes});
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
  auto design_fields = [&](std::string* header) {
    PutLittleEndian<uint32_t>(header, 16, static_cast<uint32_t>(design.block_bits.size()));
    PutLittleEndian<uint32_t>(header, 20, static_cast<uint32_t>(design.key_blocks));
    for (size_t j = 0; j < design.block_bits.size(); ++j) {
      PutLittleEndian<uint8_t>(header, 24 + j, static_cast<uint8_t>(design.block_bits[j]));
    }
    PutLittleEndian<uint32_t>(header, 32, static_cast<uint32_t>(run.prefix_bits()));
    PutLittleEndian<uint32_t>(header, 36, static_cast<uint32_t>(design.tables()));
    PutLittleEndian<uint32_t>(header, index_internal::kIndexIdNamesOffset,
                              static_cast<uint32_t>(options.id_names));
    PutLittleEndian<uint32_t>(header, index_internal::kIndexQueryKOffset,
                              static_cast<uint32_t>(options.query_k + 1));
  };
  return index_internal::WriteIndexFile(index_internal::kIndexFingerprints, options.settings,
                                        ids.size(), design_fields, sections, out);
}

Status SaveIndex(const Index& index, const std::string& path, std::string_view settings) {
  OutputFile out;
  NEARDUP_RETURN_IF_ERROR(out.Open(path));
  NEARDUP_RETURN_IF_ERROR(SaveIndex(index, &out, settings));
  return out.Commit();
}

}  // namespace neardup
