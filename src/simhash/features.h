// Internal: turning tokens into features (FeatureGenerator) and features into a fingerprint
// (FeatureSink). Both stream: a document of any length needs memory for one shingle window only.
#ifndef NEARDUP_SIMHASH_FEATURES_H_
#define NEARDUP_SIMHASH_FEATURES_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "neardup/simhash.h"
#include "neardup/text.h"
#include "segment/cut_engine.h"
#include "simhash/char_shingles.h"
#include "simhash/distinct_set.h"

namespace neardup::simhash_internal {

// Hashes features and folds them into the 64 per-bit sums, in batches for the SIMD kernels.
class FeatureSink {
 public:
  // distinct: each distinct feature hash is folded once, with weight 1
  // (FeatureWeighting::kDistinct).
  explicit FeatureSink(bool record_features, bool distinct = false)
      : record_(record_features), distinct_(distinct) {
    Reset();
  }

  void Reset();

  // One occurrence of a feature. Weight 1 takes an exact integer path; other weights are summed in
  // double precision in feature order.
  void Add(std::string_view feature, double weight = 1.0);

  // One occurrence of a feature of weight 1 whose hash is known: HashFeature(feature).
  void AddHashed(std::string_view feature, uint64_t hash) {
    if (distinct_) {
      // The distinct hashes are folded once, by Finish().
      if (distinct_set_.Insert(hash) && record_) Record(feature, 1.0);
      return;
    }
    if (record_) Record(feature, 1.0);
    unit_hashes_[unit_pending_++] = hash;
    if (unit_pending_ == kBatch) FlushUnit();
  }

  // Occurrences of features of weight 1 given by their hashes only, in order. Not when recording
  // (records() is true): use AddHashed, which has the texts.
  void AddUnitHashes(std::span<const uint64_t> hashes);

  bool records() const { return record_; }

  // The fingerprint of everything added since Reset(). *count receives the number of occurrences.
  uint64_t Finish(uint64_t* count);

  // Recorded features by decreasing weight, then text (record_features only).
  std::vector<WeightedFeature> Top(size_t limit) const;

  // The distinct feature hashes added since Reset() (distinct mode only; empty otherwise).
  std::span<const uint64_t> distinct_hashes() const { return distinct_set_.hashes(); }

 private:
  static constexpr size_t kBatch = 256;
  void FlushUnit();
  void FlushWeighted();
  void Record(std::string_view feature, double weight);

  const bool record_;
  const bool distinct_;
  DistinctHashSet distinct_set_;
  size_t unit_pending_ = 0, weighted_pending_ = 0;
  uint64_t unit_total_ = 0, weighted_total_ = 0;
  std::array<uint64_t, kBatch> unit_hashes_;
  std::array<uint64_t, kBatch> weighted_hashes_;
  std::array<double, kBatch> weights_;
  std::array<uint64_t, 64> ones_;
  std::array<double, 64> sums_;
  std::unordered_map<std::string, double> recorded_;
};

// The last n units of a stream, contiguous in one buffer so that a shingle is a view, not a copy.
// Units are separated by one space when `spaced` (word shingles) and adjacent otherwise
// (characters).
class UnitWindow {
 public:
  UnitWindow(size_t n, bool spaced) : n_(n), spaced_(spaced), starts_(n) {}

  void Reset() {
    buffer_.clear();
    seen_ = 0;
    next_ = 0;
  }

  // Appends a unit; returns true when n units are in the window (the shingle is ready).
  bool Push(std::string_view unit) {
    if (buffer_.size() + unit.size() + 1 > kCompactAt && seen_ > 0) Compact();
    starts_[next_] = buffer_.size();
    next_ = next_ + 1 == n_ ? 0 : next_ + 1;
    buffer_.append(unit);
    if (spaced_) buffer_.push_back(' ');
    ++seen_;
    return seen_ >= n_;
  }

  // The last n units (or all of them when fewer were pushed), joined.
  std::string_view Shingle() const {
    const size_t first = seen_ >= n_ ? starts_[next_] : starts_[0];  // next_ is the oldest slot
    const size_t end = buffer_.size() - (spaced_ ? 1 : 0);
    return std::string_view(buffer_).substr(first, end - first);
  }

  uint64_t seen() const { return seen_; }
  bool full() const { return seen_ >= n_; }

 private:
  static constexpr size_t kCompactAt = 1 << 16;
  void Compact();

  const size_t n_;
  const bool spaced_;
  std::vector<size_t> starts_;  // ring of the starts of the last n units
  size_t next_ = 0;             // slot of the next unit (when full: of the oldest)
  std::string buffer_;
  uint64_t seen_ = 0;
};

// Cuts a token stream into the features of a mode (terms, word shingles, character shingles). CJK
// runs go through jieba's segmenter in terms and word shingles; its dictionaries are loaded on the
// first CJK run (KeywordModel::Default() unless the options name a model).
class FeatureGenerator {
 public:
  explicit FeatureGenerator(const FingerprintOptions& options);

  void Reset();
  void AddToken(const Token& token, FeatureSink* sink);
  void Finish(FeatureSink* sink);

  // Not OK when the dictionaries could not be loaded; the document's features are then incomplete.
  const Status& status() const { return status_; }

  // In the character shingles mode, where tokens may go directly instead of AddToken (the same,
  // without the call and the checks of the mode); null in the other modes.
  CharShingles* char_shingles() {
    return mode_ == FeatureMode::kShingles && unit_ == ShingleUnit::kChar ? &char_shingles_
                                                                          : nullptr;
  }

 private:
  // Calls on_word(word, trie node) for each jieba word of a CJK run; false if there is no model.
  template <typename OnWord>
  bool CutChinese(std::string_view run, OnWord&& on_word);

  std::shared_ptr<const KeywordModel> model_;
  std::unique_ptr<segment_internal::CutEngine> engine_;
  Status status_;

  const FeatureMode mode_;
  const Language language_;
  const ShingleUnit unit_;
  UnitWindow window_;           // word shingles
  CharShingles char_shingles_;  // character shingles
  bool tokens_seen_ = false;
};

}  // namespace neardup::simhash_internal

#endif  // NEARDUP_SIMHASH_FEATURES_H_
