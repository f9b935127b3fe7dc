#include "dedup/duplicate_ids.h"

#include <xxhash.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace neardup::dedup_internal {
namespace {

uint64_t HashOf(std::string_view id) { return XXH3_64bits(id.data(), id.size()); }

}  // namespace

DuplicateIds FindDuplicateIds(const DocumentTable& table) {
  DuplicateIds result;
  if (!table.has_id_field() || table.size() < 2) return result;
  // The hashes that occur more than once.
  std::vector<uint64_t> repeated;
  {
    std::vector<uint64_t> hashes;
    hashes.reserve(table.size());
    table.ForEachId([&](size_t, std::string_view id) { hashes.push_back(HashOf(id)); });
    std::sort(hashes.begin(), hashes.end());
    for (size_t i = 1; i < hashes.size(); ++i) {
      if (hashes[i] == hashes[i - 1] && (repeated.empty() || repeated.back() != hashes[i])) {
        repeated.push_back(hashes[i]);
      }
    }
  }
  if (repeated.empty()) return result;
  // The ids with those hashes, compared as text.
  std::vector<std::pair<std::string, size_t>> candidates;
  table.ForEachId([&](size_t d, std::string_view id) {
    if (std::binary_search(repeated.begin(), repeated.end(), HashOf(id)))
      candidates.emplace_back(id, d);
  });
  std::sort(candidates.begin(), candidates.end());
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (candidates[i].first != candidates[i - 1].first) continue;
    if (result.count == 0 || candidates[i].second < result.first) {
      // candidates[i - 1] is the earlier document of this id only for the second of the run; later
      // members of the run come after the second in input order, so they never win.
      result.first = candidates[i].second;
      result.earlier = candidates[i - 1].second;
    }
    ++result.count;
  }
  return result;
}

}  // namespace neardup::dedup_internal
