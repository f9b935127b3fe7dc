// Fuzz target: the text and fingerprint pipeline. The first bytes choose the options and how the
// document is cut into pieces; the rest is the document. Checks that nothing crashes, that pieces
// never change the result, and the contracts of the UTF-8 functions: the reported error offset is
// the first byte of an invalid sequence inside the input, replacement gives valid UTF-8 (the input
// itself when it was valid), normalised text and tokens are valid UTF-8, and kReject fails exactly
// on invalid input. A violation aborts, which libFuzzer and the replay both report.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "neardup/simhash.h"
#include "neardup/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  neardup::FingerprintOptions options;
  options.mode = (data[0] & 1) ? neardup::FeatureMode::kTerms : neardup::FeatureMode::kShingles;
  options.shingle_unit = (data[0] & 2) ? neardup::ShingleUnit::kChar : neardup::ShingleUnit::kWord;
  options.normalize = (data[0] & 4) == 0;
  options.invalid_utf8 =
      (data[0] & 8) ? neardup::InvalidUtf8::kReject : neardup::InvalidUtf8::kReplace;
  options.shingle_size = 1 + data[1] % 8;
  const size_t piece = 1 + data[2] % 64;
  std::string_view text(reinterpret_cast<const char*>(data + 3), size - 3);

  auto fingerprinter = neardup::Fingerprinter::Create(options);
  if (!fingerprinter.ok()) std::abort();
  auto whole = (*fingerprinter)->Fingerprint(text);
  auto builder = (*fingerprinter)->NewBuilder(/*record_features=*/true);
  neardup::Status status;
  for (size_t at = 0; at < text.size() && status.ok(); at += piece)
    status = builder->Update(text.substr(at, piece));
  auto pieces =
      status.ok() ? builder->Finish() : neardup::Result<neardup::FingerprintResult>(status);
  if (whole.ok() != pieces.ok()) std::abort();
  if (whole.ok() &&
      (whole->simhash != pieces->simhash || whole->feature_count != pieces->feature_count)) {
    std::abort();
  }
  (void)builder->Features(5);

  const size_t invalid = neardup::FindInvalidUtf8(text);
  const bool valid = invalid == text.size();
  if (invalid > text.size()) std::abort();
  // The bytes before the error are valid on their own, and end where a sequence starts: the rest
  // is invalid from its first byte.
  if (!valid && (neardup::FindInvalidUtf8(text.substr(0, invalid)) != invalid ||
                 neardup::FindInvalidUtf8(text.substr(invalid)) != 0)) {
    std::abort();
  }
  size_t replaced = 0;
  std::string cleaned = neardup::ReplaceInvalidUtf8(text, &replaced);
  if (neardup::FindInvalidUtf8(cleaned) != cleaned.size()) std::abort();
  if (valid != (replaced == 0) || (valid && cleaned != text)) std::abort();
  const bool replacing = options.invalid_utf8 == neardup::InvalidUtf8::kReplace;
  if (whole.ok() && whole->replaced_utf8 != (replacing ? replaced : 0)) std::abort();
  if (options.invalid_utf8 == neardup::InvalidUtf8::kReject && whole.ok() != valid) std::abort();
  // No size limit is set: with replacement every document has a fingerprint.
  if (replacing && !whole.ok()) std::abort();
  auto normalized = neardup::NormalizeText(text);
  if (normalized.ok() != valid) std::abort();
  if (normalized.ok()) {
    if (neardup::FindInvalidUtf8(*normalized) != normalized->size()) std::abort();
    for (const neardup::Token& token : neardup::Tokenize(*normalized)) {
      if (token.text.empty() || token.text.size() > neardup::kMaxTokenBytes) std::abort();
      if (neardup::FindInvalidUtf8(token.text) != token.text.size()) std::abort();
      if (token.text.data() < normalized->data() ||
          token.text.data() + token.text.size() > normalized->data() + normalized->size()) {
        std::abort();
      }
    }
  }
  return 0;
}
