#include "simhash/features.h"

#include <xxhash.h>

#include <algorithm>

#include "simhash/kernels.h"
#include "text/utf8.h"

namespace neardup {

uint64_t HashFeature(std::string_view feature) { return XXH3_64bits(feature.data(), feature.size()); }

namespace simhash_internal {
namespace {

// Length of the UTF-8 sequence whose lead byte is c (text here is already checked).
inline size_t SequenceLength(unsigned char c) {
  return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

}  // namespace

void FeatureSink::Reset() {
  unit_pending_ = weighted_pending_ = 0;
  unit_total_ = weighted_total_ = 0;
  ones_.fill(0);
  sums_.fill(0.0);
  recorded_.clear();
}

void FeatureSink::Add(std::string_view feature, double weight) {
  const uint64_t hash = HashFeature(feature);
  if (record_) recorded_[std::string(feature)] += weight;
  if (weight == 1.0) {
    unit_hashes_[unit_pending_++] = hash;
    if (unit_pending_ == kBatch) FlushUnit();
  } else {
    weighted_hashes_[weighted_pending_] = hash;
    weights_[weighted_pending_++] = weight;
    if (weighted_pending_ == kBatch) FlushWeighted();
  }
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
  *count = unit_total_ + weighted_total_;
  uint64_t fingerprint = 0;
  for (int j = 0; j < 64; ++j) {
    // Unit weights: S_j = ones - (total - ones), exact in integers. A document that mixes unit and other
    // weights adds the two parts.
    const auto unit_sum = static_cast<int64_t>(2 * ones_[j]) - static_cast<int64_t>(unit_total_);
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
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(limit), all.end(), order);
    all.resize(limit);
  } else {
    std::sort(all.begin(), all.end(), order);
  }
  return all;
}

FeatureGenerator::FeatureGenerator(const FingerprintOptions& options)
    : model_(options.keyword_model),
      mode_(options.mode),
      unit_(options.shingle_unit),
      n_(static_cast<size_t>(std::max(1, options.shingle_size))),
      word_window_(n_) {}

void FeatureGenerator::Reset() {
  status_ = Status::OK();
  units_seen_ = 0;
  char_window_.clear();
  char_lengths_.clear();
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
      CutChinese(text, [&](std::string_view word, int32_t) { AddWordUnit(word, sink); });
    } else {
      AddWordUnit(text, sink);
    }
  } else {
    if (tokens_seen_) AddCharUnit(" ", sink);
    for (size_t i = 0; i < text.size();) {
      const size_t len = SequenceLength(static_cast<unsigned char>(text[i]));
      AddCharUnit(text.substr(i, len), sink);
      i += len;
    }
  }
  tokens_seen_ = true;
}

void FeatureGenerator::AddWordUnit(std::string_view unit, FeatureSink* sink) {
  word_window_[units_seen_ % n_].assign(unit);
  ++units_seen_;
  if (units_seen_ < n_) return;
  if (n_ == 1) {
    sink->Add(unit);
    return;
  }
  joined_.clear();
  for (size_t i = units_seen_ - n_; i < units_seen_; ++i) {
    if (i != units_seen_ - n_) joined_.push_back(' ');
    joined_.append(word_window_[i % n_]);
  }
  sink->Add(joined_);
}

void FeatureGenerator::AddCharUnit(std::string_view code_point, FeatureSink* sink) {
  char_window_.append(code_point);
  char_lengths_.push_back(static_cast<uint8_t>(code_point.size()));
  ++units_seen_;
  if (char_lengths_.size() > n_) {
    char_window_.erase(0, char_lengths_.front());
    char_lengths_.erase(char_lengths_.begin());
  }
  if (char_lengths_.size() == n_) sink->Add(char_window_);
}

void FeatureGenerator::Finish(FeatureSink* sink) {
  if (mode_ != FeatureMode::kShingles || units_seen_ == 0 || units_seen_ >= n_) return;
  // Fewer units than the shingle length: the whole text is one feature.
  if (unit_ == ShingleUnit::kChar) {
    sink->Add(char_window_);
    return;
  }
  joined_.clear();
  for (size_t i = 0; i < units_seen_; ++i) {
    if (i != 0) joined_.push_back(' ');
    joined_.append(word_window_[i]);
  }
  sink->Add(joined_);
}

}  // namespace simhash_internal
}  // namespace neardup
