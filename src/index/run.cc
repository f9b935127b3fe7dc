#include "index/run.h"

#include "util/parallel.h"

namespace neardup::index_internal {
namespace {

// A stable counting sort of rows first_row .. end_row - 1 on the table's bucket.
void BuildTable(const Layout& layout, int table, int prefix_bits, const CodeView& codes,
                uint32_t first_row, uint32_t end_row, const RowSet* removed,
                std::span<const uint32_t> remap, std::vector<uint32_t>* directory,
                std::vector<uint32_t>* fragments, std::vector<uint32_t>* rows) {
  const size_t buckets = size_t{1} << prefix_bits;
  directory->assign(buckets + 1, 0);
  uint32_t* counts = directory->data() + 1;
  auto live = [&](uint32_t row) { return removed == nullptr || !removed->Contains(row); };
  for (uint32_t row = first_row; row < end_row; ++row) {
    if (live(row)) ++counts[Layout::PrefixOf(layout.Permute(table, codes[row]), prefix_bits)];
  }
  for (size_t b = 1; b <= buckets; ++b) (*directory)[b] += (*directory)[b - 1];
  const size_t n = directory->back();
  fragments->resize(n);
  rows->resize(n);
  std::vector<uint32_t> cursor(directory->begin(), directory->end() - 1);
  for (uint32_t row = first_row; row < end_row; ++row) {
    if (!live(row)) continue;
    const uint64_t permuted = layout.Permute(table, codes[row]);
    const uint32_t position = cursor[Layout::PrefixOf(permuted, prefix_bits)]++;
    (*fragments)[position] = Layout::FragmentOf(permuted, prefix_bits);
    (*rows)[position] = remap.empty() ? row : remap[row];
  }
}

}  // namespace

std::shared_ptr<const IndexRun> IndexRun::Build(const Layout& layout, int prefix_bits,
                                                const CodeView& codes, uint32_t first_row,
                                                uint32_t end_row, const RowSet* removed,
                                                std::span<const uint32_t> remap, int threads) {
  auto storage = std::make_shared<Storage>();
  const int tables = layout.tables();
  storage->directories.resize(tables);
  storage->fragments.resize(tables);
  storage->rows.resize(tables);
  util_internal::ParallelFor(static_cast<size_t>(tables), threads, [&](size_t t) {
    BuildTable(layout, static_cast<int>(t), prefix_bits, codes, first_row, end_row, removed, remap,
               &storage->directories[t], &storage->fragments[t], &storage->rows[t]);
  });
  auto run = std::make_shared<IndexRun>();
  run->prefix_bits_ = prefix_bits;
  run->size_ = tables > 0 ? storage->rows[0].size() : 0;
  run->first_row_ = remap.empty() ? first_row : 0;
  run->end_row_ = remap.empty() ? end_row : static_cast<uint32_t>(run->size_);
  for (int t = 0; t < tables; ++t) {
    run->tables_.push_back(
        TableView{storage->directories[t], storage->fragments[t], storage->rows[t]});
    run->memory_bytes_ += (storage->directories[t].capacity() + storage->fragments[t].capacity() +
                           storage->rows[t].capacity()) *
                          sizeof(uint32_t);
  }
  run->owner_ = std::move(storage);
  return run;
}

std::shared_ptr<const IndexRun> IndexRun::FromViews(int prefix_bits, size_t size, uint32_t end_row,
                                                    std::vector<TableView> tables,
                                                    std::shared_ptr<const void> owner,
                                                    uint64_t memory_bytes) {
  auto run = std::make_shared<IndexRun>();
  run->prefix_bits_ = prefix_bits;
  run->size_ = size;
  run->first_row_ = 0;
  run->end_row_ = end_row;
  run->tables_ = std::move(tables);
  run->owner_ = std::move(owner);
  run->memory_bytes_ = memory_bytes;
  return run;
}

}  // namespace neardup::index_internal
