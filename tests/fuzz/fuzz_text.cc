// Fuzz target: the text and fingerprint pipeline. The first bytes choose the options and how the
// document is cut into pieces; the rest is the document. Checks that nothing crashes and that pieces
// never change the result.
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
  options.invalid_utf8 = (data[0] & 8) ? neardup::InvalidUtf8::kReject : neardup::InvalidUtf8::kReplace;
  options.shingle_size = 1 + data[1] % 8;
  const size_t piece = 1 + data[2] % 64;
  std::string_view text(reinterpret_cast<const char*>(data + 3), size - 3);

  auto fingerprinter = neardup::Fingerprinter::Create(options);
  if (!fingerprinter.ok()) std::abort();
  auto whole = (*fingerprinter)->Fingerprint(text);
  auto builder = (*fingerprinter)->NewBuilder(/*record_features=*/true);
  neardup::Status status;
  for (size_t at = 0; at < text.size() && status.ok(); at += piece) status = builder->Update(text.substr(at, piece));
  auto pieces = status.ok() ? builder->Finish() : neardup::Result<neardup::FingerprintResult>(status);
  if (whole.ok() != pieces.ok()) std::abort();
  if (whole.ok() && (whole->simhash != pieces->simhash || whole->feature_count != pieces->feature_count)) {
    std::abort();
  }
  (void)builder->Features(5);

  const size_t invalid = neardup::FindInvalidUtf8(text);
  std::string cleaned = neardup::ReplaceInvalidUtf8(text);
  if (neardup::FindInvalidUtf8(cleaned) != cleaned.size()) std::abort();
  auto normalized = neardup::NormalizeText(text);
  if (normalized.ok() != (invalid == text.size())) std::abort();
  if (normalized.ok()) (void)neardup::Tokenize(*normalized);
  return 0;
}
