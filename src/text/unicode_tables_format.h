// The layout of the generated Unicode tables (unicode_tables_data.inc), shared by their generator
// (unicode_tables_gen.cc) and their reader (unicode_tables.cc).
//
// Per code point, a 32-bit record:
//   bits  0-1   CharClass (tokenizer.h)
//   bit   2     NFKC_Casefold has a boundary before the code point (ICU's hasBoundaryBefore)
//   bit   3     the code point is inert (ICU's isInert: unchanged, boundaries before and after)
//   bits  4-11  canonical combining class
//   bit   12    the code point has an NFKC_Casefold decomposition mapping (possibly empty)
//   bits 13-17  length of the mapping in UTF-16 code units
//   bits 18-31  offset of the mapping in kMappings (UTF-16; mappings overlap where they can)
// Hangul syllables have no mapping in the table: they decompose algorithmically.
//
// The records are found through three stages: kStage1[cp >> (kMiddleBits + kLowBits)] is a block
// of kStage2, whose entry for the middle bits of cp is a block of kStage3, whose entry for the low
// bits of cp is an index in kRecords. Identical blocks are stored once.
//
// kCompositions: the primary composites other than Hangul, as (first, second, composite) sorted by
// (first, second).
#ifndef NEARDUP_TEXT_UNICODE_TABLES_FORMAT_H_
#define NEARDUP_TEXT_UNICODE_TABLES_FORMAT_H_

#include <cstdint>

namespace neardup::text_internal::unicode_tables {

inline constexpr uint32_t kClassMask = 0x3;
inline constexpr uint32_t kBoundaryBeforeBit = 1u << 2;
inline constexpr uint32_t kInertBit = 1u << 3;
inline constexpr int kCombiningClassShift = 4;
inline constexpr uint32_t kHasMappingBit = 1u << 12;
inline constexpr int kMappingLengthShift = 13;
inline constexpr uint32_t kMappingLengthLimit = 1u << 5;
inline constexpr int kMappingOffsetShift = 18;
inline constexpr uint32_t kMappingOffsetLimit = 1u << 14;

struct CompositionPair {
  char32_t first;
  char32_t second;
  char32_t composite;
};

// Hangul syllables (Unicode 15.0, section 3.12).
inline constexpr char32_t kHangulBase = 0xAC00;
inline constexpr char32_t kHangulLeadBase = 0x1100;
inline constexpr char32_t kHangulVowelBase = 0x1161;
inline constexpr char32_t kHangulTrailBase = 0x11A7;
inline constexpr char32_t kHangulLeadCount = 19;
inline constexpr char32_t kHangulVowelCount = 21;
inline constexpr char32_t kHangulTrailCount = 28;
inline constexpr char32_t kHangulSyllableCount =
    kHangulLeadCount * kHangulVowelCount * kHangulTrailCount;

inline constexpr bool IsHangulSyllable(char32_t cp) {
  return cp - kHangulBase < kHangulSyllableCount;
}

}  // namespace neardup::text_internal::unicode_tables

#endif  // NEARDUP_TEXT_UNICODE_TABLES_FORMAT_H_
