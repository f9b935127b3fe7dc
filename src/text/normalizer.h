// StreamNormalizer: UTF-8 checking and NFKC_Casefold of a document given in pieces of any size.
#ifndef NEARDUP_TEXT_NORMALIZER_H_
#define NEARDUP_TEXT_NORMALIZER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "neardup/status.h"
#include "neardup/text.h"

namespace neardup::text_internal {

// Not thread-safe: one per thread (cheap to construct; Reset() between documents).
class StreamNormalizer {
 public:
  StreamNormalizer(bool normalize, InvalidUtf8 invalid_utf8)
      : normalize_(normalize), invalid_utf8_(invalid_utf8) {}

  void Reset();

  // Checks and normalises the next piece of the document, appending finished text to *out. Bytes
  // that a later piece could still change (an incomplete UTF-8 sequence at the end, characters that
  // may combine with what follows) are held back until the next call or Finish(). The output does
  // not depend on how the document is cut into pieces.
  Status Update(std::string_view piece, std::string* out);

  // Flushes what was held back. An incomplete sequence at the very end is invalid.
  Status Finish(std::string* out);

  // Invalid sequences replaced by U+FFFD so far in this document.
  uint64_t replaced() const { return replaced_; }

 private:
  Status Process(std::string_view data, bool final, std::string* out);
  void Normalize(std::string_view valid, std::string* out) const;

  const bool normalize_;
  const InvalidUtf8 invalid_utf8_;
  std::string pending_;    // held back from the previous call
  std::string scratch_;    // cleaned copy of the input when it had invalid bytes
  uint64_t consumed_ = 0;  // document bytes before pending_
  uint64_t replaced_ = 0;
};

}  // namespace neardup::text_internal

#endif  // NEARDUP_TEXT_NORMALIZER_H_
