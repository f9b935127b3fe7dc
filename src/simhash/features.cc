#include "simhash/features.h"

// XXH3 inlined (xxHash's documented header-only mode): most features are a few bytes long, and the
// call into the shared library would cost as much as the hash.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>

#include "simhash/kernels.h"
#include "text/utf8.h"

namespace neardup {

uint64_t HashFeature(std::string_view feature) {
  return XXH3_64bits(feature.data(), feature.size());
}

namespace simhash_internal {

void FeatureSink::Reset() {
  unit_pending_ = weighted_pending_ = 0;
  unit_total_ = weighted_total_ = 0;
  ones_.fill(0);
  sums_.fill(0.0);
  recorded_.clear();
  if (distinct_) distinct_set_.Clear();
}

void FeatureSink::Add(std::string_view feature, double weight) {
  const uint64_t hash = HashFeature(feature);
  // Distinct features all weigh 1.
  if (distinct_ || weight == 1.0) return AddHashed(feature, hash);
  if (record_) Record(feature, weight);
  weighted_hashes_[weighted_pending_] = hash;
  weights_[weighted_pending_++] = weight;
  if (weighted_pending_ == kBatch) FlushWeighted();
}

void FeatureSink::AddUnitHashes(std::span<const uint64_t> hashes) {
  if (distinct_) return distinct_set_.InsertAll(hashes);
  FoldUnit(hashes.data(), hashes.size(), ones_.data());
  unit_total_ += hashes.size();
}

void FeatureSink::Record(std::string_view feature, double weight) {
  recorded_[std::string(feature)] += weight;
}

void FeatureSink::FlushUnit() {
  FoldUnit(unit_hashes_.data(), unit_pending_, ones_.data());
  unit_total_ += unit_pending_;
  unit_pending_ = 0;
}

void FeatureSink::FlushWeighted() {
  FoldWeighted(weighted_hashes_.data(), weights_.data(), weighted_pending_, sums_.data());
  weighted_total_ += weighted_pending_;
  weighted_pending_ = 0;
}

uint64_t FeatureSink::Finish(uint64_t* count) {
  FlushUnit();
  FlushWeighted();
  // Distinct hashes are folded here, all at once (into copies: Finish may be called again).
  std::array<uint64_t, 64> ones = ones_;
  uint64_t unit_total = unit_total_;
  if (distinct_) {
    const std::span<const uint64_t> distinct = distinct_set_.hashes();
    FoldUnit(distinct.data(), distinct.size(), ones.data());
    unit_total += distinct.size();
  }
  *count = unit_total + weighted_total_;
  uint64_t fingerprint = 0;
  for (int j = 0; j < 64; ++j) {
    // Unit weights: S_j = ones - (total - ones), exact in integers. A document that mixes unit and
    // other weights adds the two parts.
    const auto unit_sum = static_cast<int64_t>(2 * ones[j]) - static_cast<int64_t>(unit_total);
    const double sum = weighted_total_ == 0 ? static_cast<double>(unit_sum)
                                            : sums_[j] + static_cast<double>(unit_sum);
    if (sum > 0) fingerprint |= uint64_t{1} << j;
  }
  return fingerprint;
}

std::vector<WeightedFeature> FeatureSink::Top(size_t limit) const {
  std::vector<WeightedFeature> all;
  all.reserve(recorded_.size());
  for (const auto& [text, weight] : recorded_) all.push_back({text, weight, HashFeature(text)});
  auto order = [](const WeightedFeature& a, const WeightedFeature& b) {
    return a.weight != b.weight ? a.weight > b.weight : a.text < b.text;
  };
  if (all.size() > limit) {
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(limit), all.end(),
                      order);
    all.resize(limit);
  } else {
    std::sort(all.begin(), all.end(), order);
  }
  return all;
}

// Drops everything before the last n - 1 units (all a later shingle can use).
void UnitWindow::Compact() {
  const uint64_t keep = std::min<uint64_t>(seen_, n_ - 1);
  const size_t from = keep == 0 ? buffer_.size() : starts_[(next_ + n_ - keep) % n_];
  buffer_.erase(0, from);
  for (uint64_t i = 0; i < keep; ++i) starts_[(next_ + n_ - 1 - i) % n_] -= from;
}

FeatureGenerator::FeatureGenerator(const FingerprintOptions& options)
    : model_(options.keyword_model),
      mode_(options.mode),
      language_(options.language),
      unit_(options.shingle_unit),
      window_(static_cast<size_t>(std::max(1, options.shingle_size)),
              options.shingle_unit == ShingleUnit::kWord),
      char_shingles_(static_cast<size_t>(std::max(1, options.shingle_size))) {}

void FeatureGenerator::Reset() {
  status_ = Status::OK();
  window_.Reset();
  char_shingles_.Reset();
  tokens_seen_ = false;
}

template <typename OnWord>
bool FeatureGenerator::CutChinese(std::string_view run, OnWord&& on_word) {
  if (engine_ == nullptr) {
    if (model_ == nullptr) {
      auto loaded = KeywordModel::Default();
      if (!loaded.ok()) {
        if (status_.ok()) status_ = loaded.status().WithContext("Chinese segmentation");
        return false;
      }
      model_ = *loaded;
    }
    engine_ = std::make_unique<segment_internal::CutEngine>(model_->dictionary()->data());
  }
  engine_->CutDefault<true>(run, on_word);
  return true;
}

void FeatureGenerator::AddToken(const Token& token, FeatureSink* sink) {
  const std::string_view text = token.text;
  if (token.kind == TokenKind::kCjk && language_ == Language::kOther &&
      (mode_ == FeatureMode::kTerms || unit_ == ShingleUnit::kWord)) {
    // No segmentation: every character is a word (occurrence weight in terms, like other words).
    for (size_t i = 0; i < text.size();) {
      const std::string_view character =
          text.substr(i, text_internal::Utf8SequenceLength(static_cast<unsigned char>(text[i])));
      if (mode_ == FeatureMode::kTerms) {
        sink->Add(character);
      } else if (window_.Push(character)) {
        sink->Add(window_.Shingle());
      }
      i += character.size();
    }
    tokens_seen_ = true;
    return;
  }
  if (mode_ == FeatureMode::kTerms) {
    if (token.kind == TokenKind::kCjk) {
      CutChinese(text, [&](std::string_view word, int32_t node) {
        if (model_->stop_words().Contains(word)) return;
        sink->Add(word, model_->IdfOf(word, node));
      });
    } else {
      sink->Add(text);
    }
  } else if (unit_ == ShingleUnit::kWord) {
    if (token.kind == TokenKind::kCjk) {
      CutChinese(text, [&](std::string_view word, int32_t) {
        if (window_.Push(word)) sink->Add(window_.Shingle());
      });
    } else if (window_.Push(text)) {
      sink->Add(window_.Shingle());
    }
  } else {
    // Character shingles take every code point, with one space between tokens.
    char_shingles_.AddToken(text, sink);
  }
  tokens_seen_ = true;
}

void FeatureGenerator::Finish(FeatureSink* sink) {
  if (mode_ != FeatureMode::kShingles) return;
  if (unit_ == ShingleUnit::kChar) return char_shingles_.Finish(sink);
  // Fewer units than the shingle length: the whole text is one feature.
  if (window_.seen() > 0 && !window_.full()) sink->Add(window_.Shingle());
}

}  // namespace simhash_internal
}  // namespace neardup
