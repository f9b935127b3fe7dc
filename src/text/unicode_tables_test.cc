// The generated Unicode tables (unicode_tables.cc) against ICU (unicode_icu.cc, the library's): on
// every code point, every composition pair, Hangul, random strings and real text; and the built-in
// Traditional-to-Simplified table against OpenCC's.
#include <gtest/gtest.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "neardup/folding.h"
#include "neardup/text.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace neardup::text_internal {
namespace {

#include "t2s_table_data.inc"

constexpr char32_t kCodePoints = 0x110000;

bool IsSurrogate(char32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

std::string Utf8(const std::u32string& text) {
  std::string out;
  for (char32_t cp : text) AppendUtf8(cp, &out);
  return out;
}

std::string WithIcu(std::string_view text) {
  std::string out;
  AppendNfkcCasefold(text, &out);
  return out;
}

std::string WithTables(std::string_view text) {
  std::string out;
  unicode_tables::AppendNfkcCasefold(text, &out);
  return out;
}

std::string Hex(const std::u32string& text) {
  std::ostringstream out;
  for (char32_t cp : text) out << std::hex << static_cast<uint32_t>(cp) << ' ';
  return out.str();
}

// Checks one string; returns false (after one failure message) when the two differ.
bool SameNormalization(const std::u32string& text) {
  const std::string utf8 = Utf8(text);
  const std::string icu = WithIcu(utf8), tables = WithTables(utf8);
  EXPECT_EQ(icu, tables) << "code points: " << Hex(text);
  return icu == tables;
}

const icu::Normalizer2* Nfc() {
  UErrorCode error = U_ZERO_ERROR;
  return icu::Normalizer2::getNFCInstance(error);
}

const icu::Normalizer2* NfkcCasefold() {
  UErrorCode error = U_ZERO_ERROR;
  return icu::Normalizer2::getNFKCCasefoldInstance(error);
}

// The code points of ICU's decomposition of cp by `normalizer` (raw: one step of NFC's).
std::u32string Decomposition(const icu::Normalizer2* normalizer, char32_t cp, bool raw) {
  icu::UnicodeString text;
  const bool found = raw ? normalizer->getRawDecomposition(static_cast<UChar32>(cp), text)
                         : normalizer->getDecomposition(static_cast<UChar32>(cp), text);
  std::u32string out;
  if (!found) return out;
  for (int32_t i = 0; i < text.length(); i += U16_LENGTH(text.char32At(i))) {
    out.push_back(static_cast<char32_t>(text.char32At(i)));
  }
  return out;
}

// The pairs of NFC's two-code-point decompositions (the candidates of canonical composition).
std::vector<std::u32string> CompositionPairs() {
  std::vector<std::u32string> pairs;
  for (char32_t cp = 0; cp < kCodePoints; ++cp) {
    if (IsSurrogate(cp)) continue;
    std::u32string raw = Decomposition(Nfc(), cp, /*raw=*/true);
    if (raw.size() == 2) pairs.push_back(raw);
  }
  return pairs;
}

// One combining mark of each non-zero canonical combining class.
std::vector<char32_t> MarkOfEachClass() {
  std::vector<char32_t> marks;
  std::set<uint8_t> seen;
  for (char32_t cp = 0; cp < kCodePoints; ++cp) {
    if (IsSurrogate(cp)) continue;
    const uint8_t ccc = NfkcCasefold()->getCombiningClass(static_cast<UChar32>(cp));
    if (ccc != 0 && seen.insert(ccc).second) marks.push_back(cp);
  }
  return marks;
}

TEST(UnicodeTablesTest, EveryCodePoint) {
  int failures = 0;
  for (char32_t cp = 0; cp < kCodePoints && failures < 10; ++cp) {
    if (IsSurrogate(cp)) continue;
    const bool same_class = UnicodeCharClass(cp) == unicode_tables::UnicodeCharClass(cp);
    const bool same_boundary =
        NfkcCasefoldBoundaryBefore(cp) == unicode_tables::NfkcCasefoldBoundaryBefore(cp);
    EXPECT_TRUE(same_class) << "class of " << std::hex << static_cast<uint32_t>(cp);
    EXPECT_TRUE(same_boundary) << "boundary of " << std::hex << static_cast<uint32_t>(cp);
    if (!same_class || !same_boundary || !SameNormalization(std::u32string(1, cp))) ++failures;
  }
}

TEST(UnicodeTablesTest, CompositionPairsWithAndWithoutMarks) {
  const std::vector<char32_t> marks = MarkOfEachClass();
  const std::vector<std::u32string> pairs = CompositionPairs();
  ASSERT_GT(marks.size(), 50u);
  ASSERT_GT(pairs.size(), 900u);
  int failures = 0;
  for (const std::u32string& pair : pairs) {
    if (failures >= 10) break;
    if (!SameNormalization(pair)) ++failures;
    for (char32_t mark : marks) {
      // The mark after the pair, between its two halves (blocking), and before it.
      for (const std::u32string& text : {pair + mark, std::u32string{pair[0], mark, pair[1]},
                                         std::u32string{mark, pair[0], pair[1]}}) {
        if (!SameNormalization(text)) ++failures;
      }
    }
  }
}

TEST(UnicodeTablesTest, CanonicalOrdering) {
  const std::vector<char32_t> marks = MarkOfEachClass();
  int failures = 0;
  for (char32_t base : {U'a', U'e', U'ω', U'ア', U'ᄀ', U'\u0300'}) {
    for (char32_t first : marks) {
      for (char32_t second : marks) {
        if (failures >= 10) return;
        if (!SameNormalization({base, first, second})) ++failures;
        if (!SameNormalization({base, first, second, U'\u0301', first})) ++failures;
      }
    }
  }
}

// Long runs of marks, several of each class: the ordering must be stable beyond short runs too.
TEST(UnicodeTablesTest, LongRunsOfMarks) {
  std::vector<char32_t> marks;
  for (char32_t cp = 0x300; cp <= 0x36F; ++cp) marks.push_back(cp);  // classes 220, 230, 232...
  for (char32_t cp = 0x1DC0; cp <= 0x1DFF; ++cp) marks.push_back(cp);
  for (char32_t cp : {0x334, 0x335, 0x20D2, 0x20D3}) marks.push_back(cp);  // class 1
  std::mt19937 random(7);
  std::uniform_int_distribution<size_t> pick_mark(0, marks.size() - 1);
  std::uniform_int_distribution<size_t> pick_length(17, 80);
  int failures = 0;
  for (int i = 0; i < 3000 && failures < 10; ++i) {
    std::u32string text(1, i % 2 ? U'a' : U'\u0300');
    for (size_t length = pick_length(random); text.size() < length;) {
      text.push_back(marks[pick_mark(random)]);
    }
    if (!SameNormalization(text)) ++failures;
  }
}

TEST(UnicodeTablesTest, HangulSyllablesAndJamo) {
  int failures = 0;
  auto check = [&](const std::u32string& text) {
    if (failures < 10 && !SameNormalization(text)) ++failures;
  };
  // Leading consonants and vowels, modern and old (only the modern ones compose).
  for (char32_t lead = 0x1100; lead <= 0x115F; ++lead) {
    for (char32_t vowel = 0x1160; vowel <= 0x11A7; ++vowel) check({lead, vowel});
  }
  for (char32_t lead = 0x1100; lead <= 0x1112; ++lead) {
    for (char32_t vowel = 0x1161; vowel <= 0x1175; ++vowel) {
      for (char32_t trail = 0x11A7; trail <= 0x11FF; ++trail) check({lead, vowel, trail});
    }
  }
  // Syllables followed by a trailing consonant: LV + T composes, LVT + T does not.
  for (char32_t syllable = 0xAC00; syllable <= 0xD7A3; ++syllable) {
    const bool lead_vowel = (syllable - 0xAC00) % 28 == 0;
    for (char32_t trail = 0x11A7; trail <= 0x11FF; trail += lead_vowel ? 1 : 13) {
      check({syllable, trail});
    }
  }
  // Compatibility jamo map to conjoining jamo, which then compose.
  for (char32_t first = 0x3131; first <= 0x318E; ++first) {
    for (char32_t second = 0x3131; second <= 0x318E; ++second) check({first, second});
  }
}

// Random strings of code points from the sets where normalisation does something.
TEST(UnicodeTablesTest, RandomStrings) {
  std::vector<std::vector<char32_t>> sets(8);
  auto range = [](std::vector<char32_t>* set, char32_t from, char32_t to) {
    for (char32_t cp = from; cp <= to; ++cp) set->push_back(cp);
  };
  for (char32_t cp = 0; cp < kCodePoints; ++cp) {
    if (IsSurrogate(cp)) continue;
    const auto c = static_cast<UChar32>(cp);
    if (NfkcCasefold()->getCombiningClass(c) != 0) sets[0].push_back(cp);  // combining marks
    icu::UnicodeString mapping;
    if (NfkcCasefold()->getDecomposition(c, mapping)) {
      if (mapping.isEmpty()) {
        sets[1].push_back(cp);  // default ignorables
      } else if (Decomposition(Nfc(), cp, /*raw=*/false) !=
                 Decomposition(NfkcCasefold(), cp, /*raw=*/false)) {
        sets[2].push_back(cp);  // compatibility and case mappings
      }
    }
  }
  for (const std::u32string& pair : CompositionPairs()) {  // starters and marks that compose
    sets[3].push_back(pair[0]);
    sets[3].push_back(pair[1]);
  }
  range(&sets[4], 0x4E00, 0x4FFF);  // CJK, kana (also half-width, with its voiced sound marks)
  range(&sets[4], 0x3040, 0x30FF);
  range(&sets[4], 0xFF61, 0xFF9F);
  range(&sets[4], 0xF900, 0xFAFF);
  range(&sets[5], 0x00C0, 0x024F);  // Latin and Greek with diacritics
  range(&sets[5], 0x1E00, 0x1FFF);
  range(&sets[6], 0x1100, 0x11FF);  // Hangul jamo and syllables
  range(&sets[6], 0xAC00, 0xAC40);
  range(&sets[7], 0x20, 0x7E);  // ASCII
  for (const auto& set : sets) ASSERT_FALSE(set.empty());

  std::mt19937 random(20240601);
  std::uniform_int_distribution<size_t> pick_set(0, sets.size() - 1);
  std::uniform_int_distribution<size_t> pick_length(1, 40);
  int failures = 0;
  for (int i = 0; i < 200000 && failures < 10; ++i) {
    std::u32string text(pick_length(random), U' ');
    for (char32_t& cp : text) {
      const auto& set = sets[pick_set(random)];
      cp = set[std::uniform_int_distribution<size_t>(0, set.size() - 1)(random)];
    }
    if (!SameNormalization(text)) ++failures;
  }
}

TEST(UnicodeTablesTest, RealText) {
  const std::filesystem::path data = std::filesystem::path(NEARDUP_SOURCE_DIR) / "tests" / "data";
  for (const char* name : {"kat_texts.txt", "quality/short.jsonl", "quality/long.jsonl"}) {
    std::ifstream in(data / name, std::ios::binary);
    ASSERT_TRUE(in) << (data / name);
    std::ostringstream text;
    text << in.rdbuf();
    const std::string valid = ReplaceInvalidUtf8(text.str(), nullptr);
    EXPECT_EQ(WithIcu(valid), WithTables(valid)) << name;
  }
  EXPECT_EQ(WithTables(""), "");
  EXPECT_EQ(WithTables("Ｓtraße ＣＡＦÉ cafe\u0301 ﬁ \u200B한\u1100\u1161"),
            "strasse café café fi 한가");
}

TEST(UnicodeTablesTest, BuiltInTraditionalToSimplifiedIsOpenccs) {
  const std::string path(kDefaultTraditionalToSimplifiedTable);
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing (libopencc-data)";
  auto folding = CharacterFolding::Load(path);
  ASSERT_TRUE(folding.ok()) << folding.status().ToString();
  const auto* begin = std::begin(kTraditionalToSimplified);
  const auto* end = std::end(kTraditionalToSimplified);
  ASSERT_TRUE(std::is_sorted(begin, end, [](const auto& a, const auto& b) { return a[0] < b[0]; }));
  EXPECT_GT(end - begin, 4000);
  for (char32_t cp = 0; cp < kCodePoints; ++cp) {
    const auto* it = std::lower_bound(begin, end, cp,
                                      [](const auto& pair, char32_t key) { return pair[0] < key; });
    const char32_t built_in = it != end && (*it)[0] == cp ? (*it)[1] : cp;
    ASSERT_EQ(built_in, (*folding)->Fold(cp)) << std::hex << static_cast<uint32_t>(cp);
  }
}

}  // namespace
}  // namespace neardup::text_internal
