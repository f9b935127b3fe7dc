// The factories of neardup/index.h.
#include "index/permuted_table_index.h"

namespace neardup {
namespace {

Result<TableDesign> ChooseDesign(const IndexOptions& options, uint64_t size) {
  if (!options.design.block_bits.empty()) {
    NEARDUP_RETURN_IF_ERROR(options.design.Validate());
    return options.design;
  }
  uint64_t n = options.expected_size > 0 ? options.expected_size : size;
  if (n == 0) n = uint64_t{1} << 20;
  auto plan = PlanDesign(n, options.max_k, options.memory_budget_bytes);
  if (!plan.ok()) return plan.status();
  return plan->design;
}

}  // namespace

QueryStats& QueryStats::operator+=(const QueryStats& other) {
  queries += other.queries;
  tables_probed += other.tables_probed;
  candidates_verified += other.candidates_verified;
  matches += other.matches;
  return *this;
}

Result<std::unique_ptr<Index>> NewPermutedTableIndex(const IndexOptions& options) {
  auto design = ChooseDesign(options, 0);
  if (!design.ok()) return design.status();
  return std::unique_ptr<Index>(
      std::make_unique<index_internal::PermutedTableIndex>(*design, options));
}

Result<std::unique_ptr<Index>> BuildPermutedTableIndex(std::span<const uint64_t> ids,
                                                       std::span<const uint64_t> fingerprints,
                                                       const IndexOptions& options) {
  auto design = ChooseDesign(options, fingerprints.size());
  if (!design.ok()) return design.status();
  auto index = std::make_unique<index_internal::PermutedTableIndex>(*design, options);
  NEARDUP_RETURN_IF_ERROR(index->BulkBuild(ids, fingerprints));
  return std::unique_ptr<Index>(std::move(index));
}

}  // namespace neardup
