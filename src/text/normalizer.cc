#include "text/normalizer.h"

#include <cstring>

#include "text/unicode.h"
#include "text/utf8.h"

namespace neardup::text_internal {
namespace {

// Held-back text longer than this is normalised anyway (only a run of thousands of combining marks
// gets there; the result may then depend on where the document was cut).
constexpr size_t kMaxHeldBack = 1 << 16;

inline char AsciiLower(unsigned char c) {
  return static_cast<char>((c >= 'A' && c <= 'Z') ? c + 32 : c);
}

}  // namespace

size_t AsciiPrefixLength(const unsigned char* p, const unsigned char* end) {
  const unsigned char* start = p;
  while (end - p >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    if (word & 0x8080808080808080ULL) break;
    p += 8;
  }
  while (p < end && *p < 0x80) ++p;
  return static_cast<size_t>(p - start);
}

void StreamNormalizer::Reset() {
  pending_.clear();
  consumed_ = 0;
  replaced_ = 0;
}

Status StreamNormalizer::Update(std::string_view piece, std::string* out) {
  if (pending_.empty()) return Process(piece, /*final=*/false, out);
  pending_.append(piece);
  std::string data;
  data.swap(pending_);
  return Process(data, /*final=*/false, out);
}

Status StreamNormalizer::Finish(std::string* out) {
  std::string data;
  data.swap(pending_);
  return Process(data, /*final=*/true, out);
}

Status StreamNormalizer::Process(std::string_view data, bool final, std::string* out) {
  const auto* begin = reinterpret_cast<const unsigned char*>(data.data());
  const auto* end = begin + data.size();

  // 1. UTF-8 check. `valid` is the checked text (data itself when nothing was replaced).
  size_t checked_end = data.size();  // bytes of data covered by `valid`
  bool copied = false;
  const unsigned char* p = begin;
  size_t clean_from = 0;  // start of the not yet copied run when copying
  while (p < end) {
    p += AsciiPrefixLength(p, end);
    if (p >= end) break;
    char32_t cp;
    int n = DecodeUtf8(p, end, &cp);
    if (n > 0) {
      p += n;
      continue;
    }
    if (n == 0 && !final) {  // incomplete sequence cut by the end of this piece: wait for more
      checked_end = static_cast<size_t>(p - begin);
      break;
    }
    const size_t offset = static_cast<size_t>(p - begin);
    if (invalid_utf8_ == InvalidUtf8::kReject) {
      pending_.clear();
      return Status::InvalidArgument(InvalidUtf8Message(consumed_ + offset));
    }
    if (!copied) {
      scratch_.clear();
      copied = true;
    }
    scratch_.append(data.substr(clean_from, offset - clean_from));
    scratch_.append("\xEF\xBF\xBD");
    ++replaced_;
    p += (n == 0) ? (end - p) : -n;
    clean_from = static_cast<size_t>(p - begin);
  }
  std::string_view valid = data.substr(0, checked_end);
  if (copied) {
    scratch_.append(data.substr(clean_from, checked_end - clean_from));
    valid = scratch_;
  }

  // 2. Hold back the last characters that a later piece could still combine with: everything from
  // the
  //    last code point that has a normalisation boundary before it.
  size_t cut = valid.size();
  if (!final && normalize_) {
    const auto* v = reinterpret_cast<const unsigned char*>(valid.data());
    size_t i = valid.size();
    while (i > 0) {
      size_t start = i - 1;
      while (start > 0 && (v[start] & 0xC0) == 0x80) --start;
      char32_t cp = 0;
      DecodeUtf8(v + start, v + i, &cp);
      i = start;
      if (cp < 0x80 || NfkcCasefoldBoundaryBefore(cp)) break;
      if (valid.size() - i > kMaxHeldBack) break;
    }
    cut = i;
  }

  // 3. Normalise what is final and keep the rest for the next call.
  Normalize(valid.substr(0, cut), out);
  std::string held(valid.substr(cut));
  held.append(data.substr(checked_end));
  consumed_ += data.size() - held.size();  // exact when nothing was replaced (reject mode)
  pending_ = std::move(held);
  return Status::OK();
}

void StreamNormalizer::Normalize(std::string_view valid, std::string* out) const {
  if (!normalize_) {
    out->append(valid);
    return;
  }
  const auto* begin = reinterpret_cast<const unsigned char*>(valid.data());
  const auto* end = begin + valid.size();
  const unsigned char* p = begin;
  while (p < end) {
    // ASCII run: lower-case it here, except its last byte when non-ASCII text follows (a combining
    // mark may attach to it, so NFKC_Casefold must see it).
    const unsigned char* ascii_end = p + AsciiPrefixLength(p, end);
    const unsigned char* copy_end = (ascii_end < end && ascii_end > p) ? ascii_end - 1 : ascii_end;
    const size_t run = static_cast<size_t>(copy_end - p);
    const size_t at = out->size();
    out->resize(at + run);
    char* dst = out->data() + at;
    for (size_t i = 0; i < run; ++i) dst[i] = AsciiLower(p[i]);
    if (ascii_end >= end) break;
    // Non-ASCII segment: from copy_end up to the next ASCII byte (ASCII never combines with what is
    // before it, so the segment normalises independently).
    const unsigned char* segment_end = ascii_end;
    while (segment_end < end && *segment_end >= 0x80) ++segment_end;
    AppendNfkcCasefold(std::string_view(reinterpret_cast<const char*>(copy_end),
                                        static_cast<size_t>(segment_end - copy_end)),
                       out);
    p = segment_end;
  }
}

}  // namespace neardup::text_internal
