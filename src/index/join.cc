// FindAllPairs: per table, sort (key, position) with an LSD radix sort and compare inside runs of
// equal keys; a pair is kept only by the first table whose key both fingerprints share, so each
// pair comes out once. Tables run in parallel; each table's pairs are sorted, then all are merged
// in order.
#include "neardup/join.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>

#include "index/layout.h"
#include "index/segment.h"
#include "simhash/kernels.h"

namespace neardup {
namespace {

using index_internal::Layout;

constexpr int kRadixBits = 11;

// Cost of a join design (ns, one core): a radix sort per table, and the comparisons inside runs.
double JoinCost(const TableDesign& design, uint64_t n) {
  const Layout layout(design);
  const double count = static_cast<double>(n);
  double cost = 0;
  for (int t = 0; t < layout.tables(); ++t) {
    const int key_bits = std::min(32, layout.key_bits(t));
    const int passes = (key_bits + kRadixBits - 1) / kRadixBits;
    cost += count * (2.0 + 1.5 * passes);
    cost += 0.5 * count * count / std::ldexp(1.0, key_bits) * 1.0;
  }
  return cost;
}

TableDesign ChooseJoinDesign(uint64_t n, int k) {
  TableDesign best;
  double best_cost = 0;
  for (int blocks = std::max(2, k + 1); blocks <= index_internal::kMaxBlocks; ++blocks) {
    for (int key_blocks = 1; key_blocks <= blocks - k && key_blocks < blocks; ++key_blocks) {
      const TableDesign design = TableDesign::Even(blocks, key_blocks);
      if (!design.Validate().ok() || design.tables() > 70) continue;
      const double cost = JoinCost(design, n);
      if (best.block_bits.empty() || cost < best_cost) {
        best = design;
        best_cost = cost;
      }
    }
  }
  return best;
}

// Sorts entries (key << 32 | position) by key, stably; scratch has the same size.
void RadixSortByKey(std::vector<uint64_t>* entries, std::vector<uint64_t>* scratch, int key_bits) {
  scratch->resize(entries->size());
  std::vector<uint32_t> counts(size_t{1} << kRadixBits);
  for (int low = 0; low < key_bits; low += kRadixBits) {
    const int bits = std::min(kRadixBits, key_bits - low);
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    const int shift = 32 + low;
    std::fill(counts.begin(), counts.end(), 0);
    for (uint64_t e : *entries) ++counts[(e >> shift) & mask];
    uint32_t sum = 0;
    for (size_t b = 0; b <= mask; ++b) {
      const uint32_t c = counts[b];
      counts[b] = sum;
      sum += c;
    }
    uint64_t* out = scratch->data();
    for (uint64_t e : *entries) out[counts[(e >> shift) & mask]++] = e;
    entries->swap(*scratch);
  }
}

// The pairs of one table, in (first, second) order.
std::vector<Pair> TablePairs(const Layout& layout, int table, std::span<const uint64_t> codes,
                             int k, std::vector<uint64_t>* entries,
                             std::vector<uint64_t>* scratch) {
  // Keys wider than 32 bits are cut to their leading 32: runs may then hold pairs with different
  // keys, which the owner rule (on the actual blocks) still sorts out.
  const int dropped = std::max(0, layout.key_bits(table) - 32);
  entries->resize(codes.size());
  for (size_t i = 0; i < codes.size(); ++i) {
    (*entries)[i] = ((layout.Key(table, codes[i]) >> dropped) << 32) | i;
  }
  RadixSortByKey(entries, scratch, layout.key_bits(table) - dropped);
  std::vector<Pair> pairs;
  std::vector<uint64_t> run_codes;
  std::vector<uint64_t> masks;
  const std::vector<uint64_t>& sorted = *entries;
  // Codes of run members are read at random: prefetch them kPrefetchAhead entries in advance.
  constexpr size_t kPrefetchAhead = 64;
  auto same_key = [&](size_t a, size_t b) { return (sorted[a] >> 32) == (sorted[b] >> 32); };
  size_t ahead = 1;
  for (size_t begin = 0; begin < sorted.size();) {
    for (; ahead < sorted.size() && ahead < begin + kPrefetchAhead; ++ahead) {
      if (same_key(ahead - 1, ahead)) {
        __builtin_prefetch(codes.data() + static_cast<uint32_t>(sorted[ahead - 1]));
        __builtin_prefetch(codes.data() + static_cast<uint32_t>(sorted[ahead]));
      }
    }
    size_t end = begin + 1;
    while (end < sorted.size() && (sorted[end] >> 32) == (sorted[begin] >> 32)) ++end;
    if (end - begin >= 2) {
      run_codes.clear();
      for (size_t i = begin; i < end; ++i)
        run_codes.push_back(codes[static_cast<uint32_t>(sorted[i])]);
      const size_t run = run_codes.size();
      for (size_t i = 0; i + 1 < run; ++i) {
        const uint64_t a = run_codes[i];
        const size_t rest = run - i - 1;
        masks.resize((rest + 63) / 64);
        simhash_internal::HammingMasks(run_codes.data() + i + 1, rest, a, k, masks.data());
        for (size_t w = 0; w < masks.size(); ++w) {
          for (uint64_t m = masks[w]; m != 0; m &= m - 1) {
            const size_t j = i + 1 + w * 64 + static_cast<size_t>(std::countr_zero(m));
            const uint64_t b = run_codes[j];
            if (!layout.Owns(table, a, b)) continue;
            pairs.push_back(Pair{static_cast<uint32_t>(sorted[begin + i]),
                                 static_cast<uint32_t>(sorted[begin + j]), std::popcount(a ^ b)});
          }
        }
      }
    }
    begin = end;
  }
  std::sort(pairs.begin(), pairs.end(), [](const Pair& x, const Pair& y) {
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  });
  return pairs;
}

std::vector<Pair> MergeSorted(std::vector<std::vector<Pair>>* parts) {
  auto less = [](const Pair& x, const Pair& y) {
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  };
  // Pairwise merges, smallest lists first, keep the work at O(pairs * log tables).
  while (parts->size() > 1) {
    std::vector<std::vector<Pair>> next;
    for (size_t i = 0; i + 1 < parts->size(); i += 2) {
      std::vector<Pair> merged((*parts)[i].size() + (*parts)[i + 1].size());
      std::merge((*parts)[i].begin(), (*parts)[i].end(), (*parts)[i + 1].begin(),
                 (*parts)[i + 1].end(), merged.begin(), less);
      std::vector<Pair>().swap((*parts)[i]);
      std::vector<Pair>().swap((*parts)[i + 1]);
      next.push_back(std::move(merged));
    }
    if (parts->size() % 2 == 1) next.push_back(std::move(parts->back()));
    *parts = std::move(next);
  }
  return parts->empty() ? std::vector<Pair>() : std::move(parts->front());
}

}  // namespace

Result<std::vector<Pair>> FindAllPairs(std::span<const uint64_t> fingerprints, int k,
                                       const JoinOptions& options) {
  if (k < 0 || k > 7) return Status::InvalidArgument("k must be 0..7 for an exact join");
  if (fingerprints.size() > 0xFFFFFFFFu) {
    return Status::InvalidArgument("more than 2^32 - 1 fingerprints");
  }
  TableDesign design = options.design;
  if (design.block_bits.empty()) {
    design = ChooseJoinDesign(fingerprints.size(), k);
  } else {
    NEARDUP_RETURN_IF_ERROR(design.Validate());
    if (k > design.max_exact_k()) {
      return Status::InvalidArgument("k=" + std::to_string(k) + " is above the design's exact k (" +
                                     design.ToString() + ")");
    }
  }
  const Layout layout(design);
  const int threads = std::min(index_internal::ResolveThreads(options.threads), layout.tables());
  std::vector<std::vector<Pair>> parts(static_cast<size_t>(layout.tables()));
  // One pair of sort buffers per worker: memory is 16 bytes * n * threads.
  std::vector<std::vector<uint64_t>> entries(static_cast<size_t>(threads));
  std::vector<std::vector<uint64_t>> scratch(static_cast<size_t>(threads));
  std::atomic<int> next_table{0};
  index_internal::ParallelFor(static_cast<size_t>(threads), threads, [&](size_t worker) {
    for (int t = next_table.fetch_add(1); t < layout.tables(); t = next_table.fetch_add(1)) {
      parts[t] = TablePairs(layout, t, fingerprints, k, &entries[worker], &scratch[worker]);
    }
  });
  return MergeSorted(&parts);
}

Status ForEachPair(std::span<const uint64_t> fingerprints, int k, const JoinOptions& options,
                   const std::function<Status(const Pair&)>& on_pair) {
  auto pairs = FindAllPairs(fingerprints, k, options);
  if (!pairs.ok()) return pairs.status();
  for (const Pair& pair : *pairs) NEARDUP_RETURN_IF_ERROR(on_pair(pair));
  return Status::OK();
}

Result<std::vector<uint32_t>> ClusterPairs(uint32_t count, std::span<const Pair> pairs,
                                           std::span<const int64_t> priorities) {
  if (!priorities.empty() && priorities.size() != count) {
    return Status::InvalidArgument("priorities has " + std::to_string(priorities.size()) +
                                   " entries for " + std::to_string(count) + " items");
  }
  std::vector<uint32_t> parent(count);
  for (uint32_t i = 0; i < count; ++i) parent[i] = i;
  auto find = [&](uint32_t x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  };
  for (const Pair& pair : pairs) {
    if (pair.first >= count || pair.second >= count) {
      return Status::InvalidArgument("pair (" + std::to_string(pair.first) + ", " +
                                     std::to_string(pair.second) +
                                     ") names an item >= " + std::to_string(count));
    }
    const uint32_t a = find(pair.first);
    const uint32_t b = find(pair.second);
    // The smaller root wins, so a root is always the lowest position of its component.
    if (a < b) {
      parent[b] = a;
    } else if (b < a) {
      parent[a] = b;
    }
  }
  std::vector<uint32_t> representative(count);
  for (uint32_t i = 0; i < count; ++i) representative[i] = find(i);
  if (priorities.empty()) return representative;
  // best[root]: highest priority, lowest position on ties (positions are visited in ascending
  // order).
  std::vector<uint32_t> best(representative);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t root = representative[i];
    if (priorities[i] > priorities[best[root]]) best[root] = i;
  }
  for (uint32_t i = 0; i < count; ++i) representative[i] = best[representative[i]];
  return representative;
}

}  // namespace neardup
