#include "simhash/char_shingles.h"

// XXH3 inlined (xxHash's documented header-only mode): shingles of other lengths than 4 to 8 bytes
// are short too, and the call into the shared library would cost as much as the hash.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "simhash/features.h"
#include "simhash/kernels.h"
#include "text/utf8.h"

namespace neardup::simhash_internal {

uint64_t HashShingle(const char* text, size_t length) {
  if (length >= 4 && length <= 8) return Xxh3Of4To8(text, length);
  return XXH3_64bits(text, length);
}

void CharShingles::Reset() {
  size_ = 0;
  kept_units_ = 0;
  seen_units_ = 0;
  seen_tokens_ = false;
}

void CharShingles::Flush(FeatureSink* sink) {
  const char* text = units_.data();
  const size_t bytes = size_;
  const auto* begin = reinterpret_cast<const unsigned char*>(text);
  const bool ascii = text_internal::AsciiPrefixLength(begin, begin + bytes) == bytes;
  // One unit a byte in ASCII text; otherwise the byte offset of every unit, and one past the last.
  if (!ascii) {
    starts_.clear();
    for (size_t i = 0; i < bytes;) {
      starts_.push_back(static_cast<uint32_t>(i));
      i = std::min(bytes, i + text_internal::Utf8SequenceLength(begin[i]));
    }
    starts_.push_back(static_cast<uint32_t>(bytes));
  }
  const size_t units = ascii ? bytes : starts_.size() - 1;
  auto start = [&](size_t unit) { return ascii ? unit : size_t{starts_[unit]}; };
  // Shingle i holds units i .. i + n - 1; those ending before unit n - 1 of units_ were added by
  // an earlier flush (units_ starts with at most n - 1 units kept from it).
  const size_t count = units >= n_ ? units + 1 - n_ : 0;
  if (sink->records()) {
    for (size_t i = 0; i < count; ++i) {
      const std::string_view shingle(text + start(i), start(i + n_) - start(i));
      sink->AddHashed(shingle, HashShingle(shingle.data(), shingle.size()));
    }
  } else if (count > 0) {
    hashes_.resize(count);
    if (ascii && n_ >= 4 && n_ <= 8) {
      HashSlices4To8(text, count, n_, hashes_.data());
    } else {
      for (size_t i = 0; i < count; ++i) {
        hashes_[i] = HashShingle(text + start(i), start(i + n_) - start(i));
      }
    }
    sink->AddUnitHashes(hashes_);
  }
  seen_units_ += units - kept_units_;
  kept_units_ = std::min(units, n_ - 1);
  const size_t kept_from = start(units - kept_units_);
  std::memmove(units_.data(), text + kept_from, bytes - kept_from);
  size_ = bytes - kept_from;
}

void CharShingles::Finish(FeatureSink* sink) {
  Flush(sink);
  // Fewer units than the shingle length: the whole text is one feature (all of it is still held).
  if (seen_units_ > 0 && seen_units_ < n_) {
    sink->AddHashed(std::string_view(units_.data(), size_), HashShingle(units_.data(), size_));
  }
}

}  // namespace neardup::simhash_internal
