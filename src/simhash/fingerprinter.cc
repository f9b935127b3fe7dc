// The fingerprint pipeline: StreamNormalizer -> tokeniser -> FeatureGenerator -> FeatureSink, or
// for kKeywords StreamNormalizer -> KeywordExtractor -> FeatureSink.
#include <algorithm>
#include <unordered_set>

#include "neardup/hamming.h"
#include "neardup/simhash.h"
#include "simhash/features.h"
#include "simhash/kernels.h"
#include "text/normalizer.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace neardup {
namespace {

using simhash_internal::CharShingles;
using simhash_internal::FeatureGenerator;
using simhash_internal::FeatureSink;

// Input is handed to the normaliser in slices of this size, so the working set stays in cache.
constexpr size_t kSlice = 64 * 1024;

class BuilderImpl final : public FingerprintBuilder {
 public:
  BuilderImpl(const FingerprintOptions& options, bool record,
              std::shared_ptr<const CharacterFolding> folding)
      : options_(options),
        folding_(std::move(folding)),
        normalizer_(options.normalize, options.invalid_utf8),
        generator_(options),
        sink_(record, options.weighting == FeatureWeighting::kDistinct) {
    if (options.mode == FeatureMode::kKeywords) {
      keywords_ = std::make_unique<KeywordExtractor>(options.keyword_model);
    }
  }

  void Reset() override {
    normalizer_.Reset();
    normalized_.clear();
    generator_.Reset();
    if (keywords_) keywords_->Reset();
    sink_.Reset();
    bytes_ = 0;
    failed_ = false;
  }

  Status Update(std::string_view piece) override {
    if (failed_) return Status::FailedPrecondition("the document failed earlier; call Reset()");
    bytes_ += piece.size();
    if (options_.max_document_bytes != 0 && bytes_ > options_.max_document_bytes) {
      failed_ = true;
      return Status::ResourceExhausted("document longer than the limit of " +
                                       std::to_string(options_.max_document_bytes) + " bytes");
    }
    for (size_t start = 0; start < piece.size(); start += kSlice) {
      const size_t before = normalized_.size();
      Status status = normalizer_.Update(piece.substr(start, kSlice), &normalized_);
      if (status.ok()) {
        FoldFrom(before);
        status = Tokenize(/*final=*/false);
      }
      if (!status.ok()) {
        failed_ = true;
        return status;
      }
    }
    return Status::OK();
  }

  Result<FingerprintResult> Finish() override {
    if (failed_) return Status::FailedPrecondition("the document failed earlier; call Reset()");
    const size_t before = normalized_.size();
    Status status = normalizer_.Finish(&normalized_);
    if (status.ok()) {
      FoldFrom(before);
      status = Tokenize(/*final=*/true);
    }
    if (!status.ok()) {
      failed_ = true;
      return status;
    }
    if (keywords_) {
      auto keywords = keywords_->Finish(KeywordCountFor(options_, bytes_));
      if (!keywords.ok()) {
        failed_ = true;
        return keywords.status();
      }
      for (const Keyword& keyword : *keywords) sink_.Add(keyword.word, keyword.weight);
    } else {
      generator_.Finish(&sink_);
    }
    FingerprintResult result;
    result.simhash = sink_.Finish(&result.feature_count);
    result.empty = result.feature_count == 0;
    result.bytes = bytes_;
    result.replaced_utf8 = normalizer_.replaced();
    return result;
  }

  std::vector<WeightedFeature> Features(size_t limit) const override { return sink_.Top(limit); }

  std::span<const uint64_t> DistinctFeatureHashes() const override {
    return sink_.distinct_hashes();
  }

 private:
  // Folds the normalised text appended from `from` on (Traditional to Simplified).
  void FoldFrom(size_t from) {
    if (folding_ == nullptr || from >= normalized_.size()) return;
    // ASCII folds to itself: the text is copied through the folding from its first other byte on.
    const auto* begin = reinterpret_cast<const unsigned char*>(normalized_.data());
    from += text_internal::AsciiPrefixLength(begin + from, begin + normalized_.size());
    if (from == normalized_.size()) return;
    folded_.clear();
    folding_->FoldUtf8(std::string_view(normalized_).substr(from), &folded_);
    normalized_.resize(from);
    normalized_.append(folded_);
  }

  Status Tokenize(bool final) {
    if (keywords_) {
      Status status = keywords_->Add(normalized_);
      normalized_.clear();
      return status;
    }
    CharShingles* char_shingles = generator_.char_shingles();
    const size_t used =
        char_shingles != nullptr
            ? text_internal::TokenizeSome(normalized_, final,
                                          [this, char_shingles](const Token& token) {
                                            char_shingles->AddToken(token.text, &sink_);
                                          })
            : text_internal::TokenizeSome(normalized_, final, [this](const Token& token) {
                generator_.AddToken(token, &sink_);
              });
    normalized_.erase(0, used);
    return generator_.status();
  }

  const FingerprintOptions options_;
  const std::shared_ptr<const CharacterFolding> folding_;  // null: no folding
  text_internal::StreamNormalizer normalizer_;
  std::string normalized_;  // normalised text not yet tokenised (at most a partial token)
  std::string folded_;      // scratch of FoldFrom
  FeatureGenerator generator_;
  std::unique_ptr<KeywordExtractor> keywords_;  // kKeywords only
  FeatureSink sink_;
  uint64_t bytes_ = 0;
  bool failed_ = false;
};

class FingerprinterImpl final : public Fingerprinter {
 public:
  FingerprinterImpl(const FingerprintOptions& options,
                    std::shared_ptr<const CharacterFolding> folding)
      : options_(options), folding_(std::move(folding)) {}

  Result<FingerprintResult> Fingerprint(std::string_view text) const override {
    BuilderImpl builder(options_, /*record=*/false, folding_);
    NEARDUP_RETURN_IF_ERROR(builder.Update(text));
    return builder.Finish();
  }

  std::unique_ptr<FingerprintBuilder> NewBuilder(bool record_features) const override {
    return std::make_unique<BuilderImpl>(options_, record_features, folding_);
  }

  const FingerprintOptions& options() const override { return options_; }

 private:
  const FingerprintOptions options_;
  const std::shared_ptr<const CharacterFolding> folding_;
};

}  // namespace

Result<FeatureMode> ParseFeatureMode(std::string_view name) {
  if (name == "terms") return FeatureMode::kTerms;
  if (name == "shingles") return FeatureMode::kShingles;
  if (name == "keywords") return FeatureMode::kKeywords;
  return Status::InvalidArgument("unknown feature mode '" + std::string(name) +
                                 "' (expected terms, shingles or keywords)");
}

size_t KeywordCountFor(const FingerprintOptions& options, uint64_t bytes) {
  if (options.keyword_count > 0) return static_cast<size_t>(options.keyword_count);
  return static_cast<size_t>(std::max<uint64_t>(5, std::min<uint64_t>(200, bytes / 120)));
}

Result<ShingleUnit> ParseShingleUnit(std::string_view name) {
  if (name == "word") return ShingleUnit::kWord;
  if (name == "char") return ShingleUnit::kChar;
  return Status::InvalidArgument("unknown shingle unit '" + std::string(name) +
                                 "' (expected word or char)");
}

std::string_view FeatureModeName(FeatureMode mode) {
  switch (mode) {
    case FeatureMode::kTerms:
      return "terms";
    case FeatureMode::kShingles:
      return "shingles";
    case FeatureMode::kKeywords:
      return "keywords";
  }
  return "unknown";
}

std::string_view ShingleUnitName(ShingleUnit unit) {
  return unit == ShingleUnit::kWord ? "word" : "char";
}

Result<FeatureWeighting> ParseFeatureWeighting(std::string_view name) {
  if (name == "occurrences") return FeatureWeighting::kOccurrences;
  if (name == "distinct") return FeatureWeighting::kDistinct;
  return Status::InvalidArgument("unknown feature weighting '" + std::string(name) +
                                 "' (expected occurrences or distinct)");
}

std::string_view FeatureWeightingName(FeatureWeighting weighting) {
  return weighting == FeatureWeighting::kDistinct ? "distinct" : "occurrences";
}

Result<Language> ParseLanguage(std::string_view name) {
  if (name == "auto") return Language::kAuto;
  if (name == "zh" || name == "chinese") return Language::kChinese;
  if (name == "en" || name == "other") return Language::kOther;
  return Status::InvalidArgument("unknown language '" + std::string(name) +
                                 "' (expected auto, zh or en)");
}

std::string_view LanguageName(Language language) {
  switch (language) {
    case Language::kAuto:
      return "auto";
    case Language::kChinese:
      return "zh";
    case Language::kOther:
      return "en";
  }
  return "unknown";
}

Status CheckFingerprintOptions(const FingerprintOptions& options) {
  if (options.mode != FeatureMode::kTerms && options.mode != FeatureMode::kShingles &&
      options.mode != FeatureMode::kKeywords) {
    return Status::InvalidArgument("unknown feature mode " +
                                   std::to_string(static_cast<int>(options.mode)));
  }
  if (options.shingle_size < 1 || options.shingle_size > 64) {
    return Status::InvalidArgument("shingle size must be between 1 and 64, got " +
                                   std::to_string(options.shingle_size));
  }
  if (options.weighting != FeatureWeighting::kOccurrences &&
      options.weighting != FeatureWeighting::kDistinct) {
    return Status::InvalidArgument("unknown feature weighting " +
                                   std::to_string(static_cast<int>(options.weighting)));
  }
  if (options.keyword_count < 0 || options.keyword_count > 100000) {
    return Status::InvalidArgument("keyword count must be between 0 (automatic) and 100000, got " +
                                   std::to_string(options.keyword_count));
  }
  if (options.language != Language::kAuto && options.language != Language::kChinese &&
      options.language != Language::kOther) {
    return Status::InvalidArgument("unknown language " +
                                   std::to_string(static_cast<int>(options.language)));
  }
  if (options.language == Language::kOther && options.mode == FeatureMode::kKeywords) {
    return Status::InvalidArgument(
        "the keywords mode segments Chinese with the dictionary: it needs "
        "language auto or zh, not en");
  }
  return Status::OK();
}

Result<std::unique_ptr<Fingerprinter>> Fingerprinter::Create(const FingerprintOptions& options) {
  NEARDUP_RETURN_IF_ERROR(CheckFingerprintOptions(options));
  FingerprintOptions resolved = options;
  if ((resolved.mode == FeatureMode::kKeywords || resolved.language == Language::kChinese) &&
      resolved.keyword_model == nullptr) {
    auto model = KeywordModel::Default();
    if (!model.ok()) {
      return model.status().WithContext(
          resolved.mode == FeatureMode::kKeywords ? "keywords mode" : "Chinese segmentation");
    }
    resolved.keyword_model = *model;
  }
  std::shared_ptr<const CharacterFolding> folding;
  if (options.fold_traditional) {
    auto loaded = CharacterFolding::LoadShared(options.folding_table);
    if (!loaded.ok()) return loaded.status();
    folding = std::move(*loaded);
  }
  return std::unique_ptr<Fingerprinter>(
      std::make_unique<FingerprinterImpl>(resolved, std::move(folding)));
}

uint64_t FoldFeatureHashes(const uint64_t* hashes, const double* weights, size_t count) {
  double sums[64] = {};
  simhash_internal::FoldWeighted(hashes, weights, count, sums);
  uint64_t fingerprint = 0;
  for (int j = 0; j < 64; ++j) {
    if (sums[j] > 0) fingerprint |= uint64_t{1} << j;
  }
  return fingerprint;
}

Result<Explanation> Explain(const Fingerprinter& fingerprinter, std::string_view a,
                            std::string_view b, size_t top) {
  auto builder_a = fingerprinter.NewBuilder(/*record_features=*/true);
  auto builder_b = fingerprinter.NewBuilder(/*record_features=*/true);
  Explanation e;
  NEARDUP_RETURN_IF_ERROR(builder_a->Update(a).WithContext("text A"));
  NEARDUP_RETURN_IF_ERROR(builder_b->Update(b).WithContext("text B"));
  auto result_a = builder_a->Finish();
  if (!result_a.ok()) return result_a.status().WithContext("text A");
  auto result_b = builder_b->Finish();
  if (!result_b.ok()) return result_b.status().WithContext("text B");
  e.a = *result_a;
  e.b = *result_b;
  e.distance = HammingDistance(e.a.simhash, e.b.simhash);
  for (int j = 0; j < 64; ++j) {
    if (((e.a.simhash ^ e.b.simhash) >> j) & 1) e.differing_bits.push_back(j);
  }
  std::vector<WeightedFeature> all_a = builder_a->Features(SIZE_MAX);
  std::vector<WeightedFeature> all_b = builder_b->Features(SIZE_MAX);
  std::unordered_set<std::string_view> in_a, in_b;
  for (const auto& f : all_a) in_a.insert(f.text);
  for (const auto& f : all_b) in_b.insert(f.text);
  for (const auto& f : all_a) {
    if (in_b.count(f.text)) {
      ++e.shared_features;
    } else if (e.only_a.size() < top) {
      e.only_a.push_back(f);
    }
  }
  for (const auto& f : all_b) {
    if (!in_a.count(f.text) && e.only_b.size() < top) e.only_b.push_back(f);
  }
  e.top_a.assign(all_a.begin(),
                 all_a.begin() + static_cast<std::ptrdiff_t>(std::min(top, all_a.size())));
  e.top_b.assign(all_b.begin(),
                 all_b.begin() + static_cast<std::ptrdiff_t>(std::min(top, all_b.size())));
  return e;
}

}  // namespace neardup
