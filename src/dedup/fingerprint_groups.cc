#include "dedup/fingerprint_groups.h"

#include <algorithm>
#include <thread>

#include "dedup/signature_groups.h"

namespace neardup::dedup_internal {
namespace {

constexpr int kBucketShift = 48;  // buckets by the top 16 bits
constexpr size_t kBuckets = size_t{1} << (64 - kBucketShift);

struct Entry {
  uint64_t fingerprint;
  uint32_t document;
  bool operator<(const Entry& o) const {
    return fingerprint != o.fingerprint ? fingerprint < o.fingerprint : document < o.document;
  }
};

// Points every document of a sorted run of equal fingerprints at the run's first (smallest)
// document.
template <typename Fingerprint, typename Document, typename It>
void MarkRuns(It begin, It end, Fingerprint fingerprint, Document document,
              std::vector<uint32_t>& group_of) {
  for (It run = begin; run != end;) {
    const uint32_t leader = document(*run);
    const uint64_t value = fingerprint(*run);
    for (; run != end && fingerprint(*run) == value; ++run) group_of[document(*run)] = leader;
  }
}

}  // namespace

void GroupIdenticalFingerprints(std::vector<uint64_t>* fingerprints,
                                std::vector<uint32_t>* group_of, int threads) {
  std::vector<uint64_t>& fp = *fingerprints;
  std::vector<uint32_t>& group = *group_of;
  const auto n = static_cast<uint32_t>(fp.size());
  std::vector<uint32_t> counts(kBuckets, 0);
  for (uint32_t d = 0; d < n; ++d) {
    if (group[d] != kNoGroup) ++counts[fp[d] >> kBucketShift];
  }
  // Pass 1: group[d] = the first document with d's fingerprint, one key range at a time.
  const size_t budget = std::max<size_t>(n / 4, size_t{1} << 16);  // entries: 16 bytes each
  std::vector<Entry> scratch;
  std::vector<size_t> offsets(kBuckets + 1);
  for (size_t b = 0; b < kBuckets;) {
    if (counts[b] > budget) {
      // One bucket bigger than the budget (a skewed corpus, many equal fingerprints): its documents
      // are sorted through their numbers, 4 bytes each.
      std::vector<uint32_t> docs;
      docs.reserve(counts[b]);
      for (uint32_t d = 0; d < n; ++d) {
        if (group[d] != kNoGroup && (fp[d] >> kBucketShift) == b) docs.push_back(d);
      }
      std::sort(docs.begin(), docs.end(),
                [&](uint32_t x, uint32_t y) { return fp[x] != fp[y] ? fp[x] < fp[y] : x < y; });
      MarkRuns(
          docs.begin(), docs.end(), [&](uint32_t d) { return fp[d]; }, [](uint32_t d) { return d; },
          group);
      ++b;
      continue;
    }
    // Buckets [b, e) hold at most `budget` documents: scatter them by bucket, in document order.
    size_t e = b, total = 0;
    while (e < kBuckets && counts[e] <= budget && total + counts[e] <= budget) {
      offsets[e] = total;
      total += counts[e++];
    }
    offsets[e] = total;
    scratch.resize(total);
    std::vector<size_t> fill(offsets.begin() + static_cast<std::ptrdiff_t>(b),
                             offsets.begin() + static_cast<std::ptrdiff_t>(e));
    const uint64_t low = uint64_t{b} << kBucketShift;
    const uint64_t span = uint64_t{e - b} << kBucketShift;  // 0 when the range is every bucket
    for (uint32_t d = 0; d < n; ++d) {
      if (group[d] == kNoGroup) continue;
      const uint64_t offset = fp[d] - low;
      if (span != 0 && offset >= span) continue;
      scratch[fill[(offset >> kBucketShift)]++] = {fp[d], d};
    }
    // Each bucket sorted and its runs marked; the buckets split between threads by entries.
    auto work = [&](size_t first, size_t last) {
      for (size_t k = first; k < last; ++k) {
        auto begin = scratch.begin() + static_cast<std::ptrdiff_t>(offsets[k]);
        auto end = scratch.begin() + static_cast<std::ptrdiff_t>(offsets[k + 1]);
        std::sort(begin, end);
        MarkRuns(
            begin, end, [](const Entry& x) { return x.fingerprint; },
            [](const Entry& x) { return x.document; }, group);
      }
    };
    const size_t parts = total < 65536 ? 1 : static_cast<size_t>(std::max(1, threads));
    std::vector<std::thread> helpers;
    size_t first = b;
    for (size_t p = 1; p <= parts; ++p) {
      size_t last = first;
      while (last < e && (p == parts || offsets[last] < total * p / parts)) ++last;
      if (p == parts) {
        work(first, last);
      } else {
        helpers.emplace_back(work, first, last);
      }
      first = last;
    }
    for (auto& t : helpers) t.join();
    b = e;
  }
  std::vector<Entry>().swap(scratch);
  // Pass 2, in document order: leaders get group numbers, the others their leader's; the
  // fingerprints are compacted in place (group g's leader is document >= g).
  uint32_t next = 0;
  for (uint32_t d = 0; d < n; ++d) {
    const uint32_t leader = group[d];
    if (leader == kNoGroup) continue;
    if (leader == d) {
      fp[next] = fp[d];
      group[d] = next++;
    } else {
      group[d] = group[leader];
    }
  }
  fp.resize(next);
}

}  // namespace neardup::dedup_internal
