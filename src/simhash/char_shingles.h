// Internal: character shingles (FeatureMode::kShingles with ShingleUnit::kChar) hashed straight
// from the joined token text, without a per-code-point window.
#ifndef NEARDUP_SIMHASH_CHAR_SHINGLES_H_
#define NEARDUP_SIMHASH_CHAR_SHINGLES_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace neardup::simhash_internal {

class FeatureSink;

// HashFeature(text) (XXH3-64, seed 0), with the lengths of most character shingles (4 to 8 bytes:
// an ASCII 5-gram) computed inline.
uint64_t HashShingle(const char* text, size_t length);

// The unit stream of doc/fingerprint.md (every code point of every token, one space between
// tokens) kept as text: a shingle of n units is then a slice of it, hashed in place. Units are
// added a token at a time and hashed in batches; the result does not depend on how the tokens were
// cut into pieces of the document.
class CharShingles {
 public:
  explicit CharShingles(size_t n) : n_(n) {}

  void Reset();

  // Appends a token's code points (after a space unit, unless it is the document's first token).
  // Hashes the shingles of the text held so far once it is long.
  void AddToken(std::string_view token, FeatureSink* sink) {
    // units_ is a buffer of which the first size_ bytes are used (std::string::append costs more
    // than the rest of this for a word).
    if (size_ + token.size() + 1 > units_.size()) units_.resize(2 * (size_ + token.size() + 1));
    char* out = units_.data() + size_;
    if (seen_tokens_) *out++ = ' ';
    std::memcpy(out, token.data(), token.size());
    size_ = static_cast<size_t>(out - units_.data()) + token.size();
    seen_tokens_ = true;
    if (size_ >= kFlushBytes) Flush(sink);
  }

  // Hashes the shingles left and, when the document has fewer than n units, the whole unit stream
  // as its one feature.
  void Finish(FeatureSink* sink);

 private:
  static constexpr size_t kFlushBytes = 16 * 1024;

  // Adds the shingles that end in the units appended since the last flush to the sink, then keeps
  // only the last n - 1 units (all a later shingle can use).
  void Flush(FeatureSink* sink);

  const size_t n_;
  // units_[0, size_): the last units flushed (at most n - 1), then the units appended since.
  std::string units_;
  size_t size_ = 0;
  std::vector<uint32_t> starts_;  // scratch of Flush: the byte offset of each unit of units_
  std::vector<uint64_t> hashes_;  // scratch of Flush: the hashes of its shingles
  size_t kept_units_ = 0;         // the units of units_ flushed already
  uint64_t seen_units_ = 0;       // units flushed in this document
  bool seen_tokens_ = false;
};

}  // namespace neardup::simhash_internal

#endif  // NEARDUP_SIMHASH_CHAR_SHINGLES_H_
