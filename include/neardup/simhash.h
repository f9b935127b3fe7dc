// The 64-bit SimHash fingerprint of a text (specified exactly in doc/fingerprint.md).
//
// Text is checked and normalised (neardup/text.h), cut into features by the chosen mode, and each
// feature is hashed to 64 bits with XXH3_64bits (seed 0). For every bit position j the fingerprint
// keeps the sum S_j of +w over the features whose hash has bit j set and -w over the others (w: the
// feature's weight, each occurrence counted; with FeatureWeighting::kDistinct each distinct feature
// once, w = 1); bit j of the fingerprint is 1 iff S_j > 0. Bit 0 is the least significant bit. A
// text with no features has fingerprint 0 and FingerprintResult::empty set.
//
// Similar texts get fingerprints a few bits apart: HammingDistance (neardup/hamming.h) compares
// them.
//
// Thread safety: a Fingerprinter is immutable after Create() and may be shared by threads; a
// FingerprintBuilder is used by one thread at a time.
#ifndef NEARDUP_SIMHASH_H_
#define NEARDUP_SIMHASH_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/folding.h"
#include "neardup/keywords.h"
#include "neardup/status.h"
#include "neardup/text.h"

namespace neardup {

// Chinese (a CJK run of the tokeniser) is cut into words by jieba's segmenter (neardup/segment.h)
// in kTerms and in word shingles; other text is unaffected by the segmenter and the IDF table.
enum class FeatureMode {
  kTerms,     // every word once per occurrence: weight 1, or for a word of a CJK run its IDF (the
              // table's median for unknown words; stop words are left out), so a word's total
              // weight is its TF-IDF up to the document's constant 1/total
  kShingles,  // n-grams of words or of characters, once per occurrence, weight 1
  kKeywords,  // the classic method: the top-N TF-IDF keywords of jieba.analyse.extract_tags over
              // the whole normalised text, each once with its TF-IDF weight
};

enum class ShingleUnit {
  kWord,  // n consecutive words joined by one space; a CJK run gives its jieba words
  kChar,  // n consecutive code points of the tokens joined by one space
};

// How often a feature counts in the fold.
enum class FeatureWeighting {
  kOccurrences,  // every occurrence adds its weight (the classic modes)
  kDistinct,  // each distinct feature (by its 64-bit hash) once, weight 1: a set, as Jaccard sees
              // it
};

// How runs of Chinese (Han) characters are cut into words (terms and word shingles).
enum class Language {
  kAuto,  // by the jieba-compatible segmenter; its dictionary is loaded on the first Chinese text
  kChinese,  // the same, the dictionary loaded by Fingerprinter::Create() (a bad one fails at once)
  kOther,    // every Han character is a word of its own; the dictionary is never loaded
};

struct FingerprintOptions {
  FeatureMode mode = FeatureMode::kShingles;

  // Chinese word segmentation (terms, word shingles). kKeywords always segments (jieba's
  // extract_tags): it does not accept kOther.
  Language language = Language::kAuto;

  // Shingle unit and length n (1..64). Texts with fewer than n units give one feature: all of them.
  ShingleUnit shingle_unit = ShingleUnit::kWord;
  int shingle_size = 3;

  // NFKC + case folding (neardup/text.h). Turning it off makes "Word" and "word" different
  // features.
  bool normalize = true;

  InvalidUtf8 invalid_utf8 = InvalidUtf8::kReplace;

  // Documents longer than this many bytes are refused with ResourceExhausted (0: no limit). Memory
  // use does not grow with document length: a builder streams (kKeywords keeps the distinct words).
  uint64_t max_document_bytes = 0;

  // kKeywords: how many keywords (1..100000), or 0 for automatic: max(5, min(200, bytes / 120)) for
  // a document of `bytes` input bytes.
  int keyword_count = 0;

  // The segmentation dictionary, IDF table and stop words. Null: jieba's own files, found and
  // loaded on first use (once per process, shared by all threads; kKeywords loads them in
  // Create()).
  std::shared_ptr<const KeywordModel> keyword_model;

  // kDistinct folds each distinct feature once and keeps the document's distinct feature hashes (8
  // bytes each, so memory grows with the document) for FingerprintBuilder::DistinctFeatureHashes().
  FeatureWeighting weighting = FeatureWeighting::kOccurrences;

  // Traditional Chinese folded to Simplified after normalisation, one code point at a time, by the
  // table at folding_table (neardup/folding.h: OpenCC's .ocd2 or a text table). Create() fails with
  // NotFound when the table is missing.
  bool fold_traditional = false;
  std::string folding_table = std::string(kDefaultTraditionalToSimplifiedTable);
};

// Keywords kept by kKeywords for a document of `bytes` input bytes.
size_t KeywordCountFor(const FingerprintOptions& options, uint64_t bytes);

// Parses "terms" / "shingles" / "keywords"; "word" / "char".
Result<FeatureMode> ParseFeatureMode(std::string_view name);
Result<ShingleUnit> ParseShingleUnit(std::string_view name);
std::string_view FeatureModeName(FeatureMode mode);
std::string_view ShingleUnitName(ShingleUnit unit);
// Parses "occurrences" / "distinct".
Result<FeatureWeighting> ParseFeatureWeighting(std::string_view name);
std::string_view FeatureWeightingName(FeatureWeighting weighting);
// Parses "auto" / "zh" / "en" (also "chinese", "other"); names are "auto", "zh", "en".
Result<Language> ParseLanguage(std::string_view name);
std::string_view LanguageName(Language language);

struct FingerprintResult {
  uint64_t simhash = 0;
  bool empty = false;          // no features: simhash is 0 by definition
  uint64_t feature_count = 0;  // feature occurrences folded in
  uint64_t bytes = 0;          // input bytes
  uint64_t replaced_utf8 = 0;  // invalid sequences replaced by U+FFFD
};

// A feature with its total weight in one document (the sum over its occurrences).
struct WeightedFeature {
  std::string text;
  double weight = 0;
  uint64_t hash = 0;  // XXH3_64bits of text
};

// Computes the fingerprint of one document given in pieces. Reuse one per thread: Reset() keeps its
// buffers.
class FingerprintBuilder {
 public:
  virtual ~FingerprintBuilder() = default;

  // Starts a new document.
  virtual void Reset() = 0;

  // Adds the next piece of the document (any cut: UTF-8 sequences and words may span pieces). After
  // an error the document is abandoned: call Reset().
  virtual Status Update(std::string_view piece) = 0;

  // Ends the document and returns its fingerprint.
  virtual Result<FingerprintResult> Finish() = 0;

  // The document's features by decreasing weight (ties: by text), at most `limit`. Only available
  // when the builder was created with record_features; empty otherwise.
  virtual std::vector<WeightedFeature> Features(size_t limit) const = 0;

  // The distinct feature hashes of the document last finished, in order of first occurrence (the
  // input of a Jaccard sketch, neardup/sketch.h). Only with FeatureWeighting::kDistinct; empty
  // otherwise. Valid until the next Reset().
  virtual std::span<const uint64_t> DistinctFeatureHashes() const { return {}; }
};

// OK when the options are valid for Fingerprinter::Create, else InvalidArgument naming the bad one
// (nothing is loaded: the dictionaries are Create's).
Status CheckFingerprintOptions(const FingerprintOptions& options);

class Fingerprinter {
 public:
  // Checks the options (CheckFingerprintOptions) and prepares the pipeline.
  static Result<std::unique_ptr<Fingerprinter>> Create(const FingerprintOptions& options);

  virtual ~Fingerprinter() = default;

  // Fingerprint of a whole document. Errors: InvalidArgument for invalid UTF-8 in reject mode (with
  // the byte offset), ResourceExhausted over max_document_bytes.
  virtual Result<FingerprintResult> Fingerprint(std::string_view text) const = 0;

  // A builder for streaming input or for many documents on one thread. With record_features the
  // builder also keeps every distinct feature and its weight (for explanations; costs a hash map).
  virtual std::unique_ptr<FingerprintBuilder> NewBuilder(bool record_features = false) const = 0;

  virtual const FingerprintOptions& options() const = 0;
};

// Folds weighted feature hashes into a fingerprint by the rule above (a building block for callers
// who make their own features).
uint64_t FoldFeatureHashes(const uint64_t* hashes, const double* weights, size_t count);

// XXH3_64bits (seed 0) of a feature's bytes.
uint64_t HashFeature(std::string_view feature);

// Why two texts are, or are not, near-duplicates.
struct Explanation {
  FingerprintResult a, b;
  int distance = 0;
  std::vector<int> differing_bits;     // positions, ascending (bit 0 = least significant)
  std::vector<WeightedFeature> top_a;  // largest weights in A
  std::vector<WeightedFeature> top_b;
  std::vector<WeightedFeature> only_a;  // largest weights among features A has and B has not
  std::vector<WeightedFeature> only_b;
  uint64_t shared_features = 0;  // distinct features in both
};

Result<Explanation> Explain(const Fingerprinter& fingerprinter, std::string_view a,
                            std::string_view b, size_t top = 10);

}  // namespace neardup

#endif  // NEARDUP_SIMHASH_H_
