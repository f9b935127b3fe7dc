#include "index/segment.h"

#include <atomic>
#include <thread>

namespace neardup::index_internal {
namespace {

template <typename Visit>
void ForEachEntry(std::span<const EntrySource> sources, const RowSet* removed, Visit&& visit) {
  for (const EntrySource& source : sources) {
    const bool explicit_rows = !source.rows.empty();
    for (size_t i = 0; i < source.codes.size(); ++i) {
      const uint32_t row = explicit_rows ? source.rows[i] : source.first_row + static_cast<uint32_t>(i);
      if (removed != nullptr && removed->Contains(row)) continue;
      visit(source.codes[i], row);
    }
  }
}

// A stable counting sort of the entries on the table's key prefix.
void BuildTable(const Layout& layout, int table, int prefix_bits,
                std::span<const EntrySource> sources, const RowSet* removed,
                std::span<const uint32_t> remap, std::vector<uint32_t>* directory, std::vector<uint64_t>* codes,
                std::vector<uint32_t>* rows) {
  const size_t buckets = size_t{1} << prefix_bits;
  directory->assign(buckets + 1, 0);
  uint32_t* counts = directory->data() + 1;
  ForEachEntry(sources, removed,
               [&](uint64_t code, uint32_t) { ++counts[layout.Prefix(table, code, prefix_bits)]; });
  for (size_t b = 1; b <= buckets; ++b) (*directory)[b] += (*directory)[b - 1];
  const size_t n = directory->back();
  codes->resize(n);
  rows->resize(n);
  std::vector<uint32_t> cursor(directory->begin(), directory->end() - 1);
  ForEachEntry(sources, removed, [&](uint64_t code, uint32_t row) {
    const uint32_t position = cursor[layout.Prefix(table, code, prefix_bits)]++;
    (*codes)[position] = code;
    (*rows)[position] = remap.empty() ? row : remap[row];
  });
}

}  // namespace

int ResolveThreads(int threads) {
  if (threads > 0) return threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void ParallelFor(size_t count, int threads, const std::function<void(size_t)>& body) {
  const size_t workers = std::min<size_t>(count, static_cast<size_t>(ResolveThreads(threads)));
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) body(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) body(i);
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
}

std::shared_ptr<const Segment> Segment::Build(
    const Layout& layout, int prefix_bits, std::span<const EntrySource> sources,
    const std::vector<std::vector<EntrySource>>* per_table_sources, const RowSet* removed,
    std::span<const uint32_t> remap, int threads) {
  auto storage = std::make_shared<Storage>();
  const int tables = layout.tables();
  storage->directories.resize(tables);
  storage->codes.resize(tables);
  storage->rows.resize(tables);
  ParallelFor(static_cast<size_t>(tables), threads, [&](size_t t) {
    const std::span<const EntrySource> table_sources =
        per_table_sources != nullptr ? std::span<const EntrySource>((*per_table_sources)[t])
                                     : sources;
    BuildTable(layout, static_cast<int>(t), prefix_bits, table_sources, removed, remap,
               &storage->directories[t], &storage->codes[t], &storage->rows[t]);
  });
  auto segment = std::make_shared<Segment>();
  segment->prefix_bits_ = prefix_bits;
  segment->size_ = tables > 0 ? storage->codes[0].size() : 0;
  for (int t = 0; t < tables; ++t) {
    segment->tables_.push_back(TableView{storage->directories[t], storage->codes[t], storage->rows[t]});
    segment->memory_bytes_ += storage->directories[t].capacity() * sizeof(uint32_t) +
                              storage->codes[t].capacity() * sizeof(uint64_t) +
                              storage->rows[t].capacity() * sizeof(uint32_t);
  }
  segment->owner_ = std::move(storage);
  return segment;
}

std::shared_ptr<const Segment> Segment::FromViews(int prefix_bits, size_t size,
                                                  std::vector<TableView> tables,
                                                  std::shared_ptr<const void> owner,
                                                  uint64_t memory_bytes) {
  auto segment = std::make_shared<Segment>();
  segment->prefix_bits_ = prefix_bits;
  segment->size_ = size;
  segment->tables_ = std::move(tables);
  segment->owner_ = std::move(owner);
  segment->memory_bytes_ = memory_bytes;
  return segment;
}

}  // namespace neardup::index_internal
