// FindAllPairs, one table at a time, all threads on the same table:
//   1. scatter: every fingerprint, its bits permuted so the table's key comes first, is cut into a
//      bucket (its leading bits, at most 4096 buckets so the write streams stay in cache) and a
//      32-bit field (the next bits: the rest of the key, then bits from outside it); each thread
//      counts then scatters its share of the input into one shared array of 8-byte entries
//      (field << 32 | row);
//   2. buckets are handed out to the threads; each sorts a bucket by field in cache (a counting
//      pass on the leading key bits, then the few groups that share them) and, inside runs of
//      equal keys, reads the codes of only the pairs whose field bits outside the key are within
//      k.
// A pair is kept only by the first table whose key both fingerprints share (the owner rule, on the
// actual blocks, so keys cut to bucket + 32 bits stay exact). The pairs of all tables are sorted
// once at the end.
#include "neardup/join.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "index/huge_page_array.h"
#include "index/layout.h"
#include "index/run.h"
#include "simhash/kernels.h"
#include "util/parallel.h"

namespace neardup {
namespace {

using index_internal::Layout;

constexpr int kMaxBucketBits = 12;
// Buckets above this many entries (skewed input) are sorted in place instead of through the
// worker's buffer, so no buffer grows with the input.
constexpr size_t kMaxBufferedBucket = size_t{1} << 16;
constexpr size_t kBucketsPerGrab = 16;

// Cost of a join design (ns, one core): the scatter and in-cache sort of every table, and the
// comparisons inside runs of equal keys.
double JoinCost(const TableDesign& design, uint64_t n) {
  const Layout layout(design);
  const double count = static_cast<double>(n);
  double cost = 0;
  for (int t = 0; t < layout.tables(); ++t) {
    const int key_bits = std::min(44, layout.key_bits(t));
    cost += count * 8.0 + 0.5 * count * count / std::ldexp(1.0, key_bits) * 5.0;
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

// How one table's permuted code is cut: its leading bucket_bits pick the bucket; the next 32 bits
// (the field) go in the entry: fragment_bits more key bits (the key cut to bucket + 32 bits), then
// 32 - fragment_bits code bits from outside the key.
struct KeySplit {
  int bucket_bits = 0;
  int fragment_bits = 0;
};

KeySplit SplitKey(int key_bits, size_t n) {
  // About 256 or more entries per bucket on average, and at most 2^kMaxBucketBits buckets.
  const int log2n = n <= 1 ? 0 : std::bit_width(n) - 1;
  KeySplit split;
  split.bucket_bits = std::min({key_bits - 1, std::max(0, log2n - 8), kMaxBucketBits});
  split.fragment_bits = std::min(32, key_bits - split.bucket_bits);
  return split;
}

struct alignas(64) CacheLine {
  uint64_t entries[8];
};

// out[position] = line.entries[position % 8] for position in [begin, end), within one line;
// whole lines bypass the cache (they are read back only when their bucket is sorted).
void WriteLine(const CacheLine& line, uint32_t begin, uint32_t end, uint64_t* out) {
#if defined(__x86_64__)
  if (end - begin == 8) {
    for (int j = 0; j < 8; ++j) {
      _mm_stream_si64(reinterpret_cast<long long*>(out + begin + j),
                      static_cast<long long>(line.entries[j]));
    }
    return;
  }
#endif
  for (uint32_t position = begin; position < end; ++position) {
    out[position] = line.entries[position % 8];
  }
}

// Orders the streaming stores above before the thread's later writes (and its exit).
void StoreFence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

struct Worker {
  std::vector<CacheLine> lines;  // one per bucket, during the scatter
  std::vector<uint64_t> sorted;
  std::vector<uint32_t> counts;
  std::vector<uint64_t> candidates;  // (first << 32 | second), first < second
  std::vector<uint64_t> run_codes;
  std::vector<uint64_t> masks;
  std::vector<Pair> pairs;
};

// The bucket's entries sorted by (fragment, row): in worker->sorted, or in place when large.
std::span<const uint64_t> SortByFragment(std::span<uint64_t> bucket, int fragment_bits,
                                         Worker* worker) {
  const size_t m = bucket.size();
  if (m > kMaxBufferedBucket) {
    std::sort(bucket.begin(), bucket.end());
    return bucket;
  }
  // Counting sort on the fragment's leading bits (about one value per entry), stable, so rows stay
  // ascending; the groups that share those bits are then sorted on the whole entry.
  const int bits = std::min(fragment_bits, std::max(1, static_cast<int>(std::bit_width(m)) - 1));
  const int shift = 64 - bits;
  std::vector<uint32_t>& counts = worker->counts;
  counts.assign(size_t{1} << bits, 0);
  for (uint64_t e : bucket) ++counts[e >> shift];
  uint32_t sum = 0;
  for (uint32_t& c : counts) {
    const uint32_t size = c;
    c = sum;
    sum += size;
  }
  worker->sorted.resize(m);
  uint64_t* out = worker->sorted.data();
  for (uint64_t e : bucket) out[counts[e >> shift]++] = e;
  if (bits < fragment_bits) {
    uint32_t begin = 0;
    for (uint32_t end : counts) {
      if (end - begin > 1) std::sort(out + begin, out + end);
      begin = end;
    }
  }
  return worker->sorted;
}

// Runs longer than this (clustered or duplicate-heavy input) compare their codes with the SIMD
// kernel instead of filtering pair by pair.
constexpr size_t kLongRun = 32;

// The pairs `table` owns inside one run of equal keys, appended to worker->pairs.
void LongRunPairs(const Layout& layout, int table, std::span<const uint64_t> codes, int k,
                  std::span<const uint64_t> run, Worker* worker) {
  std::vector<uint64_t>& run_codes = worker->run_codes;
  run_codes.clear();
  for (uint64_t e : run) run_codes.push_back(codes[static_cast<uint32_t>(e)]);
  for (size_t i = 0; i + 1 < run.size(); ++i) {
    const uint64_t a = run_codes[i];
    const size_t rest = run.size() - i - 1;
    worker->masks.resize((rest + 63) / 64);
    simhash_internal::HammingMasks(run_codes.data() + i + 1, rest, a, k, worker->masks.data());
    for (size_t w = 0; w < worker->masks.size(); ++w) {
      for (uint64_t m = worker->masks[w]; m != 0; m &= m - 1) {
        const size_t j = i + 1 + w * 64 + static_cast<size_t>(std::countr_zero(m));
        const uint64_t b = run_codes[j];
        if (!layout.Owns(table, a, b)) continue;
        const auto first = static_cast<uint32_t>(run[i]);
        const auto second = static_cast<uint32_t>(run[j]);
        worker->pairs.push_back(
            Pair{std::min(first, second), std::max(first, second), std::popcount(a ^ b)});
      }
    }
  }
}

// Appends to worker->pairs the pairs `table` owns among the runs of equal key bits of `sorted`.
// The field's bits after the key (extra_bits of them) are code bits outside the key: a pair whose
// extra bits already differ in more than k places is dropped without reading its codes.
void PairsInRuns(const Layout& layout, int table, std::span<const uint64_t> codes, int k,
                 int extra_bits, std::span<const uint64_t> sorted, Worker* worker) {
  const int key_shift = 32 + extra_bits;
  auto row = [&](size_t i) { return static_cast<uint32_t>(sorted[i]); };
  std::vector<uint64_t>& candidates = worker->candidates;
  candidates.clear();
  for (size_t begin = 0; begin < sorted.size();) {
    size_t end = begin + 1;
    while (end < sorted.size() && (sorted[end] >> key_shift) == (sorted[begin] >> key_shift)) {
      ++end;
    }
    if (end - begin > kLongRun) {
      LongRunPairs(layout, table, codes, k, sorted.subspan(begin, end - begin), worker);
      begin = end;
      continue;
    }
    for (size_t i = begin; i + 1 < end; ++i) {
      const uint64_t field = sorted[i] >> 32;
      for (size_t j = i + 1; j < end; ++j) {
        if (std::popcount((sorted[j] >> 32) ^ field) > k) continue;
        const uint32_t a = row(i);
        const uint32_t b = row(j);
        candidates.push_back(a < b ? (uint64_t{a} << 32 | b) : (uint64_t{b} << 32 | a));
      }
    }
    begin = end;
  }
  // The codes of candidates are read at random: prefetch them kPrefetchAhead candidates ahead.
  constexpr size_t kPrefetchAhead = 16;
  for (size_t c = 0; c < std::min(kPrefetchAhead, candidates.size()); ++c) {
    __builtin_prefetch(codes.data() + (candidates[c] >> 32));
    __builtin_prefetch(codes.data() + static_cast<uint32_t>(candidates[c]));
  }
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (c + kPrefetchAhead < candidates.size()) {
      __builtin_prefetch(codes.data() + (candidates[c + kPrefetchAhead] >> 32));
      __builtin_prefetch(codes.data() + static_cast<uint32_t>(candidates[c + kPrefetchAhead]));
    }
    const auto first = static_cast<uint32_t>(candidates[c] >> 32);
    const auto second = static_cast<uint32_t>(candidates[c]);
    const uint64_t a = codes[first];
    const uint64_t b = codes[second];
    const int distance = std::popcount(a ^ b);
    if (distance <= k && layout.Owns(table, a, b)) {
      worker->pairs.push_back(Pair{first, second, distance});
    }
  }
}

// The join's state across tables: one entry array shared by all threads, one Worker per thread.
class Joiner {
 public:
  Joiner(const Layout& layout, std::span<const uint64_t> codes, int k, int threads)
      : layout_(layout),
        codes_(codes),
        k_(k),
        threads_(threads),
        entries_(codes.size()),
        chunk_counts_(static_cast<size_t>(threads)),
        workers_(static_cast<size_t>(threads)) {}

  void JoinTable(int table) {
    const KeySplit split = SplitKey(layout_.key_bits(table), codes_.size());
    Scatter(table, split);
    const size_t buckets = bucket_starts_.size() - 1;
    std::atomic<size_t> next{0};
    util_internal::ParallelFor(workers_.size(), threads_, [&](size_t w) {
      Worker& worker = workers_[w];
      for (size_t first = next.fetch_add(kBucketsPerGrab); first < buckets;
           first = next.fetch_add(kBucketsPerGrab)) {
        for (size_t b = first; b < std::min(buckets, first + kBucketsPerGrab); ++b) {
          const std::span<uint64_t> bucket(entries_.data() + bucket_starts_[b],
                                           bucket_starts_[b + 1] - bucket_starts_[b]);
          if (bucket.size() < 2) continue;
          PairsInRuns(layout_, table, codes_, k_, 32 - split.fragment_bits,
                      SortByFragment(bucket, split.fragment_bits, &worker), &worker);
        }
      }
    });
  }

  // Every pair found, in (first, second) order.
  std::vector<Pair> TakePairs() {
    size_t total = 0;
    for (const Worker& worker : workers_) total += worker.pairs.size();
    std::vector<Pair> pairs;
    pairs.reserve(total);
    for (Worker& worker : workers_) {
      pairs.insert(pairs.end(), worker.pairs.begin(), worker.pairs.end());
      std::vector<Pair>().swap(worker.pairs);
    }
    std::sort(pairs.begin(), pairs.end(), [](const Pair& x, const Pair& y) {
      return x.first != y.first ? x.first < y.first : x.second < y.second;
    });
    return pairs;
  }

 private:
  // Fills entries_ bucket by bucket, and bucket_starts_. The input is cut into one chunk per
  // thread; chunk c's entries of a bucket go after those of chunks < c, so rows stay ascending.
  void Scatter(int table, const KeySplit& split) {
    const size_t n = codes_.size();
    const size_t buckets = size_t{1} << split.bucket_bits;
    const size_t chunks = chunk_counts_.size();
    auto permuted = [&](size_t i) { return layout_.Permute(table, codes_[i]); };
    auto chunk_begin = [&](size_t c) { return n * c / chunks; };
    util_internal::ParallelFor(chunks, threads_, [&](size_t c) {
      std::vector<uint32_t>& counts = chunk_counts_[c];
      counts.assign(buckets, 0);
      for (size_t i = chunk_begin(c); i < chunk_begin(c + 1); ++i) {
        ++counts[Layout::PrefixOf(permuted(i), split.bucket_bits)];
      }
    });
    bucket_starts_.resize(buckets + 1);
    uint32_t sum = 0;
    for (size_t b = 0; b < buckets; ++b) {
      bucket_starts_[b] = sum;
      for (std::vector<uint32_t>& counts : chunk_counts_) {
        const uint32_t size = counts[b];
        counts[b] = sum;
        sum += size;
      }
    }
    bucket_starts_[buckets] = sum;
    util_internal::ParallelFor(chunks, threads_, [&](size_t c) {
      // Software write-combining: each bucket's entries gather in a cache line, written out whole.
      std::vector<uint32_t>& cursor = chunk_counts_[c];
      const std::vector<uint32_t> first(cursor);
      std::vector<CacheLine>& lines = workers_[c].lines;
      lines.resize(buckets);
      uint64_t* out = entries_.data();
      for (size_t i = chunk_begin(c); i < chunk_begin(c + 1); ++i) {
        const uint64_t code = permuted(i);
        const uint64_t bucket = Layout::PrefixOf(code, split.bucket_bits);
        const uint32_t position = cursor[bucket]++;
        lines[bucket].entries[position % 8] =
            uint64_t{Layout::FragmentOf(code, split.bucket_bits)} << 32 | i;
        if (position % 8 == 7) {
          WriteLine(lines[bucket], std::max(first[bucket], position - 7), position + 1, out);
        }
      }
      for (size_t b = 0; b < buckets; ++b) {
        WriteLine(lines[b], std::max(first[b], cursor[b] & ~7u), cursor[b], out);
      }
      StoreFence();
    });
  }

  const Layout& layout_;
  std::span<const uint64_t> codes_;
  const int k_;
  const int threads_;
  index_internal::HugePageArray<uint64_t> entries_;
  std::vector<uint32_t> bucket_starts_;
  std::vector<std::vector<uint32_t>> chunk_counts_;
  std::vector<Worker> workers_;
};

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
  if (fingerprints.size() < 2) return std::vector<Pair>();
  const Layout layout(design);
  // Below kMinRowsPerThread rows per thread, starting threads costs more than it saves.
  constexpr size_t kMinRowsPerThread = size_t{1} << 16;
  const int threads = static_cast<int>(std::clamp<size_t>(fingerprints.size() / kMinRowsPerThread,
                                                          1, ResolveThreads(options.threads)));
  Joiner joiner(layout, fingerprints, k, threads);
  for (int t = 0; t < layout.tables(); ++t) joiner.JoinTable(t);
  return joiner.TakePairs();
}

Status ForEachPair(std::span<const uint64_t> fingerprints, int k, const JoinOptions& options,
                   const std::function<Status(const Pair&)>& on_pair) {
  auto pairs = FindAllPairs(fingerprints, k, options);
  if (!pairs.ok()) return pairs.status();
  for (const Pair& pair : *pairs) NEARDUP_RETURN_IF_ERROR(on_pair(pair));
  return Status::OK();
}

}  // namespace neardup
