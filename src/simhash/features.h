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

namespace neardup::simhash_internal {

// Hashes features and folds them into the 64 per-bit sums, in batches for the SIMD kernels.
class FeatureSink {
 public:
  explicit FeatureSink(bool record_features) : record_(record_features) { Reset(); }

  void Reset();

  // One occurrence of a feature. Weight 1 takes an exact integer path; other weights are summed in
  // double precision in feature order.
  void Add(std::string_view feature, double weight = 1.0);

  // The fingerprint of everything added since Reset(). *count receives the number of occurrences.
  uint64_t Finish(uint64_t* count);

  // Recorded features by decreasing weight, then text (record_features only).
  std::vector<WeightedFeature> Top(size_t limit) const;

 private:
  static constexpr size_t kBatch = 256;
  void FlushUnit();
  void FlushWeighted();

  const bool record_;
  size_t unit_pending_ = 0, weighted_pending_ = 0;
  uint64_t unit_total_ = 0, weighted_total_ = 0;
  std::array<uint64_t, kBatch> unit_hashes_;
  std::array<uint64_t, kBatch> weighted_hashes_;
  std::array<double, kBatch> weights_;
  std::array<uint64_t, 64> ones_;
  std::array<double, 64> sums_;
  std::unordered_map<std::string, double> recorded_;
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

 private:
  void AddWordUnit(std::string_view unit, FeatureSink* sink);
  void AddCharUnit(std::string_view code_point, FeatureSink* sink);
  // Calls on_word(word, trie node) for each jieba word of a CJK run; false if there is no model.
  template <typename OnWord>
  bool CutChinese(std::string_view run, OnWord&& on_word);

  std::shared_ptr<const KeywordModel> model_;
  std::unique_ptr<segment_internal::CutEngine> engine_;
  Status status_;

  const FeatureMode mode_;
  const ShingleUnit unit_;
  const size_t n_;
  uint64_t units_seen_ = 0;
  std::vector<std::string> word_window_;  // ring of the last n word units
  std::string joined_;
  std::string char_window_;               // bytes of the last n code points
  std::vector<uint8_t> char_lengths_;     // their lengths, oldest first
  bool tokens_seen_ = false;
};

}  // namespace neardup::simhash_internal

#endif  // NEARDUP_SIMHASH_FEATURES_H_
