// The known-answer vectors are written by the code they guard (`make kat`), so here every vector of
// data/fingerprint_vectors.tsv is recomputed by a plain reference of doc/fingerprint.md: UTF-8
// replacement and NFKC_Casefold straight from ICU, the Traditional-to-Simplified table applied code
// point by code point, the tokeniser's classes from ICU's properties, the features of each mode,
// XXH3 from libxxhash, and the fold of section 5 written out. Only the jieba-compatible segmenter,
// the keyword extractor and the IDF table come from the library: they have their own jieba oracles.
#include <gtest/gtest.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/uscript.h>
#include <unicode/ustring.h>
#include <xxhash.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kat_modes.h"
#include "neardup/folding.h"
#include "neardup/keywords.h"
#include "neardup/segment.h"

namespace neardup {
namespace {

struct Feature {
  std::string text;
  double weight = 1;
};

std::string Utf8(const std::u32string& code_points) {
  std::string out;
  for (char32_t c : code_points) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

std::u32string CodePoints(const icu::UnicodeString& text) {
  std::u32string out;
  for (int32_t i = 0; i < text.length(); i = text.moveIndex32(i, 1))
    out.push_back(static_cast<char32_t>(text.char32At(i)));
  return out;
}

// Section 1 and 2: ICU replaces each maximal subpart of an ill-formed sequence by one U+FFFD; then
// NFKC_Casefold (unless off) and the folding table (when given), one code point at a time.
std::u32string Normalised(const std::string& bytes, bool normalize,
                          const CharacterFolding* folding) {
  UErrorCode error = U_ZERO_ERROR;
  int32_t length = 0;
  int32_t substitutions = 0;
  u_strFromUTF8WithSub(nullptr, 0, &length, bytes.data(), static_cast<int32_t>(bytes.size()),
                       0xFFFD, &substitutions, &error);
  std::u16string utf16(static_cast<size_t>(length), u'\0');
  error = U_ZERO_ERROR;
  u_strFromUTF8WithSub(utf16.data(), length, &length, bytes.data(),
                       static_cast<int32_t>(bytes.size()), 0xFFFD, &substitutions, &error);
  EXPECT_TRUE(U_SUCCESS(error));
  icu::UnicodeString text(utf16.data(), length);
  if (normalize) {
    const icu::Normalizer2* nfkc_casefold = icu::Normalizer2::getNFKCCasefoldInstance(error);
    text = nfkc_casefold->normalize(text, error);
    EXPECT_TRUE(U_SUCCESS(error));
  }
  std::u32string out = CodePoints(text);
  if (folding != nullptr) {
    for (char32_t& c : out) c = folding->Fold(c);
  }
  return out;
}

enum class CharClass { kCjk, kLetter, kDigit, kSeparator };

bool IsCjkScript(UScriptCode script) {
  return script == USCRIPT_HAN || script == USCRIPT_HIRAGANA || script == USCRIPT_KATAKANA;
}

// Section 3's table.
CharClass Classify(char32_t c) {
  const auto cp = static_cast<UChar32>(c);
  const bool lmn = (U_GET_GC_MASK(cp) & (U_GC_L_MASK | U_GC_M_MASK | U_GC_N_MASK)) != 0;
  if (!lmn) return CharClass::kSeparator;
  UErrorCode error = U_ZERO_ERROR;
  const UScriptCode script = uscript_getScript(cp, &error);
  bool cjk = IsCjkScript(script);
  if (!cjk && (script == USCRIPT_COMMON || script == USCRIPT_INHERITED)) {
    UScriptCode extensions[32];
    const int32_t count = uscript_getScriptExtensions(cp, extensions, 32, &error);
    for (int32_t i = 0; i < count; ++i) cjk = cjk || IsCjkScript(extensions[i]);
  }
  if (cjk) return CharClass::kCjk;
  return u_charType(cp) == U_DECIMAL_DIGIT_NUMBER ? CharClass::kDigit : CharClass::kLetter;
}

struct ReferenceToken {
  std::string text;
  bool cjk = false;
};

// Words (runs of letters and digits) and CJK runs; separators end tokens. (No KAT text has a token
// near the 65,536-byte cut.)
std::vector<ReferenceToken> Tokens(const std::u32string& text) {
  std::vector<ReferenceToken> tokens;
  std::u32string current;
  bool current_cjk = false;
  auto flush = [&] {
    if (!current.empty()) tokens.push_back({Utf8(current), current_cjk});
    current.clear();
  };
  for (char32_t c : text) {
    const CharClass kind = Classify(c);
    if (kind == CharClass::kSeparator) {
      flush();
      continue;
    }
    const bool cjk = kind == CharClass::kCjk;
    if (!current.empty() && cjk != current_cjk) flush();
    current_cjk = cjk;
    current.push_back(c);
  }
  flush();
  return tokens;
}

class Reference {
 public:
  Reference() {
    auto dictionary = Dictionary::Default();
    EXPECT_TRUE(dictionary.ok()) << dictionary.status().ToString();
    segmenter_ = std::make_unique<Segmenter>(*dictionary);
    auto idf = IdfTable::Default();
    EXPECT_TRUE(idf.ok()) << idf.status().ToString();
    idf_ = *idf;
    auto model = KeywordModel::Default();
    EXPECT_TRUE(model.ok()) << model.status().ToString();
    extractor_ = std::make_unique<KeywordExtractor>(*model);
    auto folding = CharacterFolding::Load(std::string(kDefaultTraditionalToSimplifiedTable));
    EXPECT_TRUE(folding.ok()) << folding.status().ToString();
    folding_ = std::move(folding).value();
  }

  // Section 4: the features of `bytes` in order, with their weights.
  std::vector<Feature> Features(const std::string& bytes, const FingerprintOptions& options) {
    const std::u32string text =
        Normalised(bytes, options.normalize, options.fold_traditional ? folding_.get() : nullptr);
    std::vector<Feature> features;
    if (options.mode == FeatureMode::kKeywords) {
      const size_t count = options.keyword_count > 0
                               ? static_cast<size_t>(options.keyword_count)
                               : std::max<size_t>(5, std::min<size_t>(200, bytes.size() / 120));
      auto keywords = extractor_->Extract(Utf8(text), count);
      EXPECT_TRUE(keywords.ok());
      for (const Keyword& keyword : *keywords) features.push_back({keyword.word, keyword.weight});
      return features;
    }
    // Units: words and numbers as they are, CJK runs cut into jieba words.
    std::vector<Feature> units;
    const StopWords stop_words = StopWords::JiebaDefault();
    for (const ReferenceToken& token : Tokens(text)) {
      if (!token.cjk) {
        units.push_back({token.text, 1});
        continue;
      }
      auto words = segmenter_->Cut(token.text);
      EXPECT_TRUE(words.ok());
      for (std::string_view word : *words) {
        if (options.mode == FeatureMode::kTerms) {
          if (stop_words.Contains(word)) continue;
          const auto idf = idf_->Find(word);
          units.push_back({std::string(word), idf ? *idf : idf_->median()});
        } else {
          units.push_back({std::string(word), 1});
        }
      }
    }
    if (options.mode == FeatureMode::kTerms) return units;
    std::vector<std::string> pieces;
    std::string separator = " ";
    if (options.shingle_unit == ShingleUnit::kWord) {
      for (const Feature& unit : units) pieces.push_back(unit.text);
    } else {
      std::u32string stream;
      for (const ReferenceToken& token : Tokens(text)) {
        if (!stream.empty()) stream += U' ';
        icu::UnicodeString utf16 = icu::UnicodeString::fromUTF8(token.text);
        stream += CodePoints(utf16);
      }
      for (char32_t c : stream) pieces.push_back(Utf8(std::u32string(1, c)));
      separator = "";
    }
    const auto n = static_cast<size_t>(options.shingle_size);
    auto join = [&](size_t first, size_t end) {
      std::string out;
      for (size_t i = first; i < end; ++i) out += (i > first ? separator : "") + pieces[i];
      return out;
    };
    if (!pieces.empty() && pieces.size() < n) features.push_back({join(0, pieces.size()), 1});
    for (size_t i = 0; i + n <= pieces.size(); ++i) features.push_back({join(i, i + n), 1});
    return features;
  }

  uint64_t Fingerprint(const std::string& bytes, const FingerprintOptions& options) {
    std::vector<Feature> features = Features(bytes, options);
    std::vector<uint64_t> hashes;
    std::vector<double> weights;
    std::set<uint64_t> seen;
    for (const Feature& feature : features) {
      const uint64_t hash = XXH3_64bits(feature.text.data(), feature.text.size());
      if (options.weighting == FeatureWeighting::kDistinct) {
        // Each distinct feature (by its hash) once, weight 1.
        if (!seen.insert(hash).second) continue;
        hashes.push_back(hash);
        weights.push_back(1);
      } else {
        hashes.push_back(hash);
        weights.push_back(feature.weight);
      }
    }
    return Fold(hashes, weights);
  }

  // Section 5: weights of exactly 1 counted in integers (U_j), the others summed in doubles in
  // feature order (W_j); bit j is set iff W_j + U_j > 0.
  static uint64_t Fold(const std::vector<uint64_t>& hashes, const std::vector<double>& weights) {
    int64_t units[64] = {};
    double sums[64] = {};
    for (size_t i = 0; i < hashes.size(); ++i) {
      for (int j = 0; j < 64; ++j) {
        const bool set = (hashes[i] >> j) & 1;
        if (weights[i] == 1.0) {
          units[j] += set ? 1 : -1;
        } else {
          sums[j] += set ? weights[i] : -weights[i];
        }
      }
    }
    uint64_t out = 0;
    for (int j = 0; j < 64; ++j) out |= uint64_t{sums[j] + static_cast<double>(units[j]) > 0} << j;
    return out;
  }

 private:
  std::unique_ptr<Segmenter> segmenter_;
  std::shared_ptr<const IdfTable> idf_;
  std::unique_ptr<KeywordExtractor> extractor_;
  std::unique_ptr<CharacterFolding> folding_;
};

std::map<int, std::string> LoadTexts() {
  std::string path = NEARDUP_SOURCE_DIR;
  path.append("/tests/data/kat_texts.txt");
  std::ifstream in(path);
  std::map<int, std::string> texts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] != '#') texts[number] = testing::Unescape(line);
  }
  return texts;
}

// Every vector, the keyword, Chinese-word (terms, word shingles) and Traditional-folding modes
// among them, equals the reference's fingerprint.
TEST(KnownAnswerReference, EveryFingerprintVectorFollowsTheSpecification) {
  const auto texts = LoadTexts();
  std::ifstream in(std::string(NEARDUP_SOURCE_DIR) + "/tests/data/fingerprint_vectors.tsv");
  ASSERT_TRUE(in.good());
  Reference reference;
  std::map<std::string, size_t> checked;
  size_t nonzero_chinese = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string spec, hex;
    int number = 0;
    fields >> spec >> number >> hex;
    auto options = testing::ParseModeSpec(spec);
    ASSERT_TRUE(options.ok()) << spec;
    ASSERT_TRUE(texts.count(number)) << "no text on line " << number;
    const uint64_t expected = std::stoull(hex, nullptr, 16);
    EXPECT_EQ(reference.Fingerprint(texts.at(number), *options), expected)
        << "mode " << spec << ", text line " << number;
    ++checked[spec];
    nonzero_chinese +=
        expected != 0 && texts.at(number).find("\xe7\x9a\x84") != std::string::npos;  // 的
  }
  for (const std::string& spec : testing::KnownAnswerModes()) {
    EXPECT_EQ(checked[spec], texts.size()) << "mode " << spec;
  }
  EXPECT_GT(nonzero_chinese, 10u);
}

}  // namespace
}  // namespace neardup
