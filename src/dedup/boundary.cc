// The exact Jaccard similarity of a few pairs of documents, from their texts read again: passes
// over the inputs that hash only the documents of the pairs, keep their feature sets within a
// memory budget, and merge the sets of each pair whose two documents are held.
#include "dedup/boundary.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include "dedup/document_lines.h"
#include "neardup/input.h"
#include "util/parallel.h"

namespace neardup::dedup_internal {
namespace {

constexpr uint64_t kBytesPerFeature = sizeof(uint64_t);
constexpr uint64_t kNoBudget = std::numeric_limits<uint64_t>::max();
constexpr size_t kBatchTextBytes = size_t{1} << 20;
constexpr size_t kBatchDocuments = 1024;

// Jaccard similarity of two sorted sets of distinct hashes (1 for two empty sets). Which side of
// the merge moves is arithmetic, not a branch on the data (which would be mispredicted about every
// other step).
double JaccardOfSorted(std::span<const uint64_t> a, std::span<const uint64_t> b) {
  if (a.empty() && b.empty()) return 1.0;
  size_t i = 0, j = 0, common = 0;
  while (i < a.size() && j < b.size()) {
    const uint64_t x = a[i], y = b[j];
    common += x == y;
    i += x <= y;
    j += y <= x;
  }
  return static_cast<double>(common) / static_cast<double>(a.size() + b.size() - common);
}

// A document of a batch: read on the reading thread, hashed on a worker.
struct BatchDocument {
  size_t needed = 0;     // into the needed documents
  std::string location;  // "path:line"
  std::string text;
  std::vector<uint64_t> features;  // sorted distinct feature hashes, once hashed
  Status status;
};

// The feature sets of the documents of the pairs ("the needed documents", ascending), read pass
// after pass.
class FeatureSets {
 public:
  FeatureSets(const std::vector<InputFile>& files, const DocumentTable& table,
              const JobSettings& settings, std::vector<uint32_t> needed)
      : files_(files),
        table_(table),
        settings_(settings),
        needed_(std::move(needed)),
        parser_(
            settings.options.id_field, settings.options.text_field,
            settings.options.keep == KeepRule::kPriority ? settings.options.priority_field : ""),
        counts_(needed_.size(), 0),
        sets_(needed_.size()),
        held_(needed_.size(), false) {
    // As pass 1 parses (ReadDocuments), so that the same lines parse to the same texts.
    parser_.set_replace_invalid_utf8(settings.signer.options().features->invalid_utf8 ==
                                     InvalidUtf8::kReplace);
    for (int t = 0; t < std::max(settings.threads, 1); ++t) {
      builders_.push_back(settings.signer.fingerprinter().NewBuilder());
    }
  }

  const std::vector<uint32_t>& needed() const { return needed_; }
  // Feature count of needed document i (known after the first pass).
  uint64_t count(size_t i) const { return counts_[i]; }
  bool held(size_t i) const { return held_[i]; }
  std::span<const uint64_t> set(size_t i) const { return sets_[i]; }

  // One pass: reads the needed documents `wanted` (indices into needed(), ascending) and holds
  // each one's set while the sets held stay within budget_features (in document order); counts
  // every one. Sets of an earlier pass are released first.
  Status ReadPass(std::span<const size_t> wanted, uint64_t budget_features) {
    for (size_t i = 0; i < needed_.size(); ++i) {
      held_[i] = false;
      std::vector<uint64_t>().swap(sets_[i]);
    }
    used_features_ = 0;
    if (DocumentLinesAt::Available(table_, files_.size())) {
      return ReadPassAt(wanted, budget_features);
    }
    DocumentLines lines(files_, table_, settings_.options.max_line_bytes);
    DocumentLine line;
    std::vector<BatchDocument> batch;
    size_t batch_bytes = 0, w = 0, last_file = 0;
    for (uint64_t walked = 1;; ++walked) {
      auto more = lines.Next(&line);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if ((walked & 0xFFFF) == 0) NEARDUP_RETURN_IF_ERROR(settings_.Cancelled());
      if (w == wanted.size()) {
        // Read the last document's file to its end, so that DocumentLines checks its length.
        if (line.file != last_file) break;
        continue;
      }
      if (line.document != needed_[wanted[w]]) continue;
      ++w;
      NEARDUP_RETURN_IF_ERROR(
          Add(line, wanted[w - 1], w == wanted.size(), budget_features, &batch, &batch_bytes));
      last_file = line.file;
    }
    if (w < wanted.size()) {
      return Status::Internal(table_.Location(needed_[wanted[w]]) +
                              ": the input changed since pass 1 (this document is missing)");
    }
    return Status::OK();
  }

 private:
  // ReadPass with the inputs read at random: the lines of just the wanted documents.
  Status ReadPassAt(std::span<const size_t> wanted, uint64_t budget_features) {
    std::vector<uint32_t> documents;
    documents.reserve(wanted.size());
    for (size_t i : wanted) documents.push_back(needed_[i]);
    DocumentLinesAt lines(files_, table_, settings_.options.max_line_bytes, documents);
    DocumentLine line;
    std::vector<BatchDocument> batch;
    size_t batch_bytes = 0;
    for (size_t w = 0; w < wanted.size(); ++w) {
      if ((w & 0xFFFF) == 0xFFFF) NEARDUP_RETURN_IF_ERROR(settings_.Cancelled());
      auto more = lines.Next(&line);
      if (!more.ok()) return more.status();
      if (!*more) return Status::Internal("exact Jaccard: a document was not read");
      NEARDUP_RETURN_IF_ERROR(
          Add(line, wanted[w], w + 1 == wanted.size(), budget_features, &batch, &batch_bytes));
    }
    return Status::OK();
  }

  // Puts the line of needed document `needed` in the batch, and hashes the batch when it is full
  // or `last`.
  Status Add(const DocumentLine& line, size_t needed, bool last, uint64_t budget_features,
             std::vector<BatchDocument>* batch, size_t* batch_bytes) {
    BatchDocument& d = batch->emplace_back();
    d.needed = needed;
    d.location = files_[line.file].name + ":" + std::to_string(line.line_number);
    NEARDUP_RETURN_IF_ERROR(TextOf(line, &d));
    *batch_bytes += d.text.size();
    if (*batch_bytes >= kBatchTextBytes || batch->size() >= kBatchDocuments || last) {
      NEARDUP_RETURN_IF_ERROR(Flush(batch, budget_features));
      *batch_bytes = 0;
    }
    return Status::OK();
  }

  // The document's text, as pass 1 read it.
  Status TextOf(const DocumentLine& line, BatchDocument* d) {
    if (!files_[line.file].jsonl) {
      d->text = line.text();
      return Status::OK();
    }
    const Status parsed = parser_.Parse(line.text(), &fields_);
    if (!parsed.ok()) {
      return Status::Internal(d->location + ": the input changed since pass 1 (" +
                              parsed.message() + ")");
    }
    d->text = std::move(fields_.text);
    return Status::OK();
  }

  // The sorted distinct feature hashes of d's text.
  static void Hash(FingerprintBuilder* builder, BatchDocument* d) {
    thread_local std::vector<uint64_t> scratch;
    thread_local std::vector<uint32_t> starts;
    builder->Reset();
    d->status = builder->Update(d->text);
    if (!d->status.ok()) return;
    auto result = builder->Finish();
    if (!result.ok()) {
      d->status = result.status();
      return;
    }
    if (!result->empty) {
      const std::span<const uint64_t> hashes = builder->DistinctFeatureHashes();
      d->features.assign(hashes.begin(), hashes.end());
      SortHashes(&d->features, &scratch, &starts);
    }
  }

  // Hashes the batch on the builders' threads, then holds the sets that fit, in order.
  Status Flush(std::vector<BatchDocument>* batch, uint64_t budget_features) {
    NEARDUP_RETURN_IF_ERROR(settings_.Cancelled());
    std::atomic<size_t> next{0};
    auto work = [&](FingerprintBuilder* builder) {
      for (size_t i = next.fetch_add(1); i < batch->size(); i = next.fetch_add(1)) {
        Hash(builder, &(*batch)[i]);
      }
    };
    const size_t workers = std::min(builders_.size(), batch->size());
    std::vector<std::thread> threads;
    for (size_t t = 1; t < workers; ++t) threads.emplace_back(work, builders_[t].get());
    work(builders_[0].get());
    for (std::thread& t : threads) t.join();
    for (BatchDocument& d : *batch) {
      if (!d.status.ok()) {
        // Pass 1 signed this text: it is not the same text any more.
        return Status::Internal(d.location + ": the input changed since pass 1 (" +
                                d.status.message() + ")");
      }
      counts_[d.needed] = d.features.size();
      if (budget_features == kNoBudget || used_features_ + d.features.size() <= budget_features) {
        used_features_ += d.features.size();
        sets_[d.needed] = std::move(d.features);
        held_[d.needed] = true;
      }
    }
    batch->clear();
    return Status::OK();
  }

  const std::vector<InputFile>& files_;
  const DocumentTable& table_;
  const JobSettings& settings_;
  const std::vector<uint32_t> needed_;
  JsonlParser parser_;
  JsonlParser::Fields fields_;
  std::vector<std::unique_ptr<FingerprintBuilder>> builders_;  // one per thread
  std::vector<uint64_t> counts_;
  std::vector<std::vector<uint64_t>> sets_;
  std::vector<bool> held_;
  uint64_t used_features_ = 0;
};

// The needed documents of the next pass: pairs taken in order while their sets fit together in
// budget_features (the first pair always, so that every pass makes progress).
std::vector<size_t> PlanPass(const std::vector<std::pair<size_t, size_t>>& positions,
                             const std::vector<size_t>& pending, const FeatureSets& sets,
                             uint64_t budget_features) {
  std::vector<bool> in_pass(sets.needed().size(), false);
  std::vector<size_t> wanted;
  uint64_t used = 0;
  for (size_t p : pending) {
    const auto [a, b] = positions[p];
    uint64_t extra = in_pass[a] ? 0 : sets.count(a);
    if (!in_pass[b] && b != a) extra += sets.count(b);
    if (!wanted.empty() && used + extra > budget_features) continue;
    used += extra;
    for (size_t i : {a, b}) {
      if (!in_pass[i]) wanted.push_back(i);
      in_pass[i] = true;
    }
  }
  std::sort(wanted.begin(), wanted.end());
  return wanted;
}

}  // namespace

// A counting pass on the top bits puts each hash in a bucket of its own or of a few, and an
// insertion sort then moves each past the few others of its bucket.
void SortHashes(std::vector<uint64_t>* hashes, std::vector<uint64_t>* scratch,
                std::vector<uint32_t>* starts) {
  constexpr size_t kSmall = 32;
  constexpr uint32_t kMostInBucket = 16;
  std::vector<uint64_t>& h = *hashes;
  const size_t n = h.size();
  if (n < kSmall) {
    std::sort(h.begin(), h.end());
    return;
  }
  const int bits = std::bit_width(n - 1);  // 2^bits >= n buckets
  const int shift = 64 - bits;
  std::vector<uint32_t>& start = *starts;
  start.assign((size_t{1} << bits) + 1, 0);
  for (const uint64_t x : h) ++start[(x >> shift) + 1];
  for (size_t b = 1; b < start.size(); ++b) {
    if (start[b] > kMostInBucket) {
      std::sort(h.begin(), h.end());
      return;
    }
    start[b] += start[b - 1];
  }
  scratch->resize(n);
  for (const uint64_t x : h) (*scratch)[start[x >> shift]++] = x;
  // Copied back rather than swapped: the caller's vector keeps its own (exact) capacity.
  std::copy(scratch->begin(), scratch->begin() + static_cast<std::ptrdiff_t>(n), h.begin());
  for (size_t i = 1; i < n; ++i) {
    const uint64_t x = h[i];
    size_t j = i;
    for (; j > 0 && h[j - 1] > x; --j) h[j] = h[j - 1];
    h[j] = x;
  }
}

double BoundaryMargin(const SketchOptions& sketch, double threshold, double z) {
  // Sets whose union fills every bin.
  const uint64_t large = 2 * static_cast<uint64_t>(sketch.bins);
  return threshold >= 1 ? 0 : z * EstimateSpread(sketch, threshold, large, large);
}

double PairBoundaryMargin(const SketchOptions& sketch, double threshold, uint64_t features_a,
                          uint64_t features_b, double z) {
  return threshold >= 1 ? 0 : z * EstimateSpread(sketch, threshold, features_a, features_b);
}

Result<std::vector<double>> ExactJaccards(const std::vector<InputFile>& files,
                                          const DocumentTable& table, const JobSettings& settings,
                                          std::span<const DocumentPair> pairs,
                                          size_t memory_budget_bytes) {
  const auto& features = settings.signer.options().features;
  if (!features || features->weighting != FeatureWeighting::kDistinct) {
    return Status::InvalidArgument(
        "exact Jaccard similarity needs distinct features (the accurate method's)");
  }
  std::vector<uint32_t> needed;
  for (const DocumentPair& p : pairs) {
    if (p.first >= table.size() || p.second >= table.size()) {
      return Status::InvalidArgument("document pair (" + std::to_string(p.first) + ", " +
                                     std::to_string(p.second) + ") outside the " +
                                     std::to_string(table.size()) + " documents");
    }
    needed.push_back(p.first);
    needed.push_back(p.second);
  }
  std::sort(needed.begin(), needed.end());
  needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  auto position = [&](uint32_t d) {
    return static_cast<size_t>(std::lower_bound(needed.begin(), needed.end(), d) - needed.begin());
  };
  std::vector<std::pair<size_t, size_t>> positions;
  for (const DocumentPair& p : pairs) positions.emplace_back(position(p.first), position(p.second));
  std::vector<size_t> pending(pairs.size());
  for (size_t p = 0; p < pending.size(); ++p) pending[p] = p;

  FeatureSets sets(files, table, settings, std::move(needed));
  const uint64_t budget_features = memory_budget_bytes / kBytesPerFeature;
  std::vector<double> jaccards(pairs.size(), 0);
  // The first pass wants every document and holds what fits; the later ones are planned from its
  // counts and hold all they read.
  std::vector<size_t> wanted(sets.needed().size());
  for (size_t i = 0; i < wanted.size(); ++i) wanted[i] = i;
  uint64_t pass_budget = budget_features;
  while (!pending.empty()) {
    NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
    NEARDUP_RETURN_IF_ERROR(sets.ReadPass(wanted, pass_budget));
    // The pairs whose two sets are held, merged on every thread, a block of pairs at a time.
    constexpr size_t kBlock = 4096;
    std::vector<uint8_t> merged(pending.size(), 0);
    util_internal::ParallelFor((pending.size() + kBlock - 1) / kBlock, settings.threads,
                               [&](size_t block) {
                                 const size_t end = std::min(pending.size(), (block + 1) * kBlock);
                                 for (size_t i = block * kBlock; i < end; ++i) {
                                   const auto [a, b] = positions[pending[i]];
                                   if (!sets.held(a) || !sets.held(b)) continue;
                                   jaccards[pending[i]] = JaccardOfSorted(sets.set(a), sets.set(b));
                                   merged[i] = 1;
                                 }
                               });
    std::vector<size_t> left;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (!merged[i]) left.push_back(pending[i]);
    }
    if (left.size() == pending.size() && pass_budget == kNoBudget) {
      return Status::Internal("exact Jaccard: a planned pass held none of its pairs");
    }
    pending = std::move(left);
    wanted = PlanPass(positions, pending, sets, budget_features);
    pass_budget = kNoBudget;
  }
  return jaccards;
}

}  // namespace neardup::dedup_internal
