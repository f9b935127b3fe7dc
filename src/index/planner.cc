// The planner: a cost model of a query over each exact design, and the cheapest one that fits.
//
// Model (one core, uniform fingerprints): each table costs one probe (a directory entry and the
// start of a range: cache misses on a large index) plus a scan of the range, n / 2^prefix_bits
// fingerprints verified with SIMD popcounts of 32-bit fragments. Memory per fingerprint: per table
// 4 bytes of fragment and 4 of row, plus the directories; 8 bytes of code, 8 of id, about 5 of id
// map. The constants were measured with bench/index_bench on a 2-core x86-64 (AVX-512) machine; see
// bench/README.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "index/layout.h"
#include "neardup/index.h"

namespace neardup {
namespace {

constexpr double kProbeNs = 45.0;        // one table probe on an index much larger than the cache
constexpr double kCachedProbeNs = 12.0;  // the same when the tables fit in the last-level cache
constexpr double kCandidateNs = 0.25;    // one fragment verified (streamed, SIMD)
constexpr double kCacheBytes = 32.0 * (1 << 20);

struct Estimate {
  TableDesign design;
  int prefix_bits = 0;
  double candidates = 0;
  double bytes_per_fingerprint = 0;
  double cost_ns = 0;
};

Estimate EstimateDesign(const TableDesign& design, uint64_t n) {
  const index_internal::Layout layout(design);
  Estimate e;
  e.design = design;
  e.prefix_bits = index_internal::DefaultPrefixBits(layout, n);
  const double tables = layout.tables();
  const double per_range = static_cast<double>(n) / std::ldexp(1.0, e.prefix_bits);
  e.candidates = tables * per_range;
  const double directory_bytes = tables * 4.0 * std::ldexp(1.0, e.prefix_bits);
  e.bytes_per_fingerprint = tables * 8.0 + 16.0 + 5.0 + directory_bytes / static_cast<double>(n);
  const double total_bytes = e.bytes_per_fingerprint * static_cast<double>(n);
  const double probe = total_bytes < kCacheBytes ? kCachedProbeNs : kProbeNs;
  e.cost_ns = tables * probe + e.candidates * kCandidateNs;
  return e;
}

std::string Describe(const Estimate& e) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "%s: %.0f ns/query, %.1f candidates/query, %.1f bytes/fingerprint",
                e.design.ToString().c_str(), e.cost_ns, e.candidates, e.bytes_per_fingerprint);
  return line;
}

}  // namespace

Result<Plan> PlanDesign(uint64_t n, int max_k, uint64_t memory_budget_bytes) {
  if (max_k < 0 || max_k > 7) {
    return Status::InvalidArgument("k=" + std::to_string(max_k) +
                                   ": exact designs exist for k = 0..7 (use brute force beyond)");
  }
  n = std::max<uint64_t>(n, 1);
  std::vector<Estimate> estimates;
  for (int blocks = std::max(2, max_k + 1); blocks <= index_internal::kMaxBlocks; ++blocks) {
    for (int key_blocks = 1; key_blocks <= blocks - max_k && key_blocks < blocks; ++key_blocks) {
      const TableDesign design = TableDesign::Even(blocks, key_blocks);
      if (!design.Validate().ok() || design.tables() > index_internal::kMaxTables) continue;
      estimates.push_back(EstimateDesign(design, n));
    }
  }
  const double budget_per_fingerprint =
      memory_budget_bytes == 0 ? std::numeric_limits<double>::infinity()
                               : static_cast<double>(memory_budget_bytes) / static_cast<double>(n);
  const Estimate* best = nullptr;
  const Estimate* smallest = nullptr;
  for (const Estimate& e : estimates) {
    if (smallest == nullptr || e.bytes_per_fingerprint < smallest->bytes_per_fingerprint)
      smallest = &e;
    if (e.bytes_per_fingerprint > budget_per_fingerprint) continue;
    if (best == nullptr || e.cost_ns < best->cost_ns) best = &e;
  }
  if (best == nullptr) {
    // The budget as given and per fingerprint, in as many digits as it takes (a budget of 1K for
    // 1e9 fingerprints is 1e-06 bytes each, not "0.0").
    char message[512];
    const double smallest_bytes = smallest ? smallest->bytes_per_fingerprint : 0.0;
    std::snprintf(
        message, sizeof(message),
        "no exact design for k=%d fits %llu bytes for %llu fingerprints (%.3g bytes per "
        "fingerprint); the smallest needs %.1f bytes per fingerprint, %.0f bytes in all (%s)",
        max_k, static_cast<unsigned long long>(memory_budget_bytes),
        static_cast<unsigned long long>(n), budget_per_fingerprint, smallest_bytes,
        std::ceil(smallest_bytes * static_cast<double>(n)),
        smallest ? smallest->design.ToString().c_str() : "none");
    return Status::ResourceExhausted(message);
  }
  Plan plan;
  plan.design = best->design;
  plan.prefix_bits = best->prefix_bits;
  plan.candidates_per_query = best->candidates;
  plan.bytes_per_fingerprint = best->bytes_per_fingerprint;
  plan.cost_per_query_ns = best->cost_ns;
  for (const Estimate& e : estimates) {
    std::string line = Describe(e);
    if (&e == best) {
      line += "  <- chosen";
    } else if (e.bytes_per_fingerprint > budget_per_fingerprint) {
      line += "  (over the memory budget)";
    } else {
      line += "  (slower)";
    }
    plan.alternatives.push_back(std::move(line));
  }
  return plan;
}

}  // namespace neardup
