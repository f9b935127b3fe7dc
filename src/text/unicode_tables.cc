// The Unicode data of the text layer from generated tables (text/unicode.h): NFKC_Casefold as
// decomposition by the full NFKC_Casefold mappings, canonical ordering and canonical composition
// (Unicode Standard Annex #15), segment by segment between the code points that have a boundary
// before them. The tables (unicode_tables_format.h) come from ICU 72 through
// unicode_tables_gen.cc; unicode_tables_test.cc checks the result against ICU on every code point.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "text/unicode.h"
#include "text/unicode_tables_format.h"
#include "text/utf8.h"

namespace neardup::text_internal {
namespace unicode_tables {
namespace {

#include "unicode_tables_data.inc"

constexpr char32_t kCodePoints = 0x110000;
constexpr uint32_t kOutOfRangeRecord = kBoundaryBeforeBit | kInertBit;  // a separator
constexpr char32_t kNoComposite = 0;

inline uint32_t Record(char32_t cp) {
  if (cp >= kCodePoints) return kOutOfRangeRecord;
  const uint32_t middle = kStage1[cp >> (kLowBits + kMiddleBits)];
  const uint32_t low =
      kStage2[(middle << kMiddleBits) | ((cp >> kLowBits) & ((1u << kMiddleBits) - 1))];
  return kRecords[kStage3[(low << kLowBits) | (cp & ((1u << kLowBits) - 1))]];
}

inline uint8_t CombiningClass(uint32_t record) {
  return static_cast<uint8_t>(record >> kCombiningClassShift);
}

// A code point of the segment being normalised, with its canonical combining class.
struct Unit {
  char32_t cp;
  uint8_t ccc;
};

void Decompose(char32_t cp, uint32_t record, std::vector<Unit>* segment) {
  if (IsHangulSyllable(cp)) {
    const char32_t index = cp - kHangulBase;
    const char32_t vowel_trail = kHangulVowelCount * kHangulTrailCount;
    segment->push_back({kHangulLeadBase + index / vowel_trail, 0});
    segment->push_back({kHangulVowelBase + (index % vowel_trail) / kHangulTrailCount, 0});
    if (index % kHangulTrailCount != 0) {
      segment->push_back({kHangulTrailBase + index % kHangulTrailCount, 0});
    }
    return;
  }
  if ((record & kHasMappingBit) == 0) {
    segment->push_back({cp, CombiningClass(record)});
    return;
  }
  const char16_t* unit = kMappings + (record >> kMappingOffsetShift);
  const char16_t* end = unit + ((record >> kMappingLengthShift) & (kMappingLengthLimit - 1));
  while (unit < end) {
    char32_t c = *unit++;
    if (c >= 0xD800 && c < 0xDC00 && unit < end) {
      c = 0x10000 + ((c - 0xD800) << 10) + (*unit++ - 0xDC00);
    }
    segment->push_back({c, CombiningClass(Record(c))});
  }
}

// The primary composite of first + second, or kNoComposite.
char32_t Compose(char32_t first, char32_t second) {
  if (first - kHangulLeadBase < kHangulLeadCount && second - kHangulVowelBase < kHangulVowelCount) {
    return kHangulBase +
           ((first - kHangulLeadBase) * kHangulVowelCount + (second - kHangulVowelBase)) *
               kHangulTrailCount;
  }
  if (IsHangulSyllable(first)) {
    const bool lead_vowel = (first - kHangulBase) % kHangulTrailCount == 0;
    const bool trail = second - (kHangulTrailBase + 1) < kHangulTrailCount - 1;
    return lead_vowel && trail ? first + (second - kHangulTrailBase) : kNoComposite;
  }
  const auto* end = std::end(kCompositions);
  const auto* it =
      std::lower_bound(std::begin(kCompositions), end, CompositionPair{first, second, 0},
                       [](const CompositionPair& a, const CompositionPair& b) {
                         return a.first != b.first ? a.first < b.first : a.second < b.second;
                       });
  return it != end && it->first == first && it->second == second ? it->composite : kNoComposite;
}

// Orders the segment canonically (a stable sort by combining class of each run of non-starters),
// composes it and appends it as UTF-8; empties the segment.
void Flush(std::vector<Unit>* segment, std::string* out) {
  Unit* units = segment->data();
  const size_t size = segment->size();
  for (size_t i = 0; i < size;) {
    if (units[i].ccc == 0) {
      ++i;
      continue;
    }
    size_t run_end = i + 1;
    while (run_end < size && units[run_end].ccc != 0) ++run_end;
    if (run_end - i > 1) {
      std::stable_sort(units + i, units + run_end,
                       [](const Unit& a, const Unit& b) { return a.ccc < b.ccc; });
    }
    i = run_end;
  }
  // Composition: a code point combines with the last starter unless a code point between them
  // (what is left after earlier compositions) is a starter or has a class >= its own.
  size_t kept = 0;
  size_t starter = 0;
  bool have_starter = false;
  uint8_t last_ccc = 0;  // of the last kept code point after the starter
  for (size_t i = 0; i < size; ++i) {
    const Unit unit = units[i];
    if (have_starter && (kept - 1 == starter || last_ccc < unit.ccc)) {
      const char32_t composite = Compose(units[starter].cp, unit.cp);
      if (composite != kNoComposite) {
        units[starter].cp = composite;
        continue;
      }
    }
    if (unit.ccc == 0) {
      have_starter = true;
      starter = kept;
    }
    last_ccc = unit.ccc;
    units[kept++] = unit;
  }
  for (size_t i = 0; i < kept; ++i) AppendUtf8(units[i].cp, out);
  segment->clear();
}

}  // namespace

bool NfkcCasefoldBoundaryBefore(char32_t cp) { return (Record(cp) & kBoundaryBeforeBit) != 0; }

void AppendNfkcCasefold(std::string_view valid_utf8, std::string* out) {
  thread_local std::vector<Unit> segment;
  segment.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(valid_utf8.data());
  const auto* end = p + valid_utf8.size();
  while (p < end) {
    char32_t cp;
    const int length = DecodeUtf8(p, end, &cp);
    if (length <= 0) {  // not expected (the input is valid): the byte is copied unchanged
      Flush(&segment, out);
      out->push_back(static_cast<char>(*p++));
      continue;
    }
    const uint32_t record = Record(cp);
    if (record & kBoundaryBeforeBit) Flush(&segment, out);
    if (record & kInertBit) {
      out->append(reinterpret_cast<const char*>(p), static_cast<size_t>(length));
    } else {
      Decompose(cp, record, &segment);
    }
    p += length;
  }
  Flush(&segment, out);
}

CharClass UnicodeCharClass(char32_t cp) { return static_cast<CharClass>(Record(cp) & kClassMask); }

}  // namespace unicode_tables

#if defined(NEARDUP_NO_ICU)
bool NfkcCasefoldBoundaryBefore(char32_t cp) {
  return unicode_tables::NfkcCasefoldBoundaryBefore(cp);
}

void AppendNfkcCasefold(std::string_view valid_utf8, std::string* out) {
  unicode_tables::AppendNfkcCasefold(valid_utf8, out);
}

CharClass UnicodeCharClass(char32_t cp) { return unicode_tables::UnicodeCharClass(cp); }
#endif

}  // namespace neardup::text_internal
