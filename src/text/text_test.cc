#include "neardup/text.h"

#include <gtest/gtest.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/uscript.h>
#include <unicode/ustring.h>
#include <unicode/utf8.h>

#include <random>

#include "testutil.h"
#include "text/normalizer.h"
#include "text/tokenizer.h"

namespace neardup {
namespace {

// ICU's own count of U+FFFD substitutions (it follows the same "maximal subpart" rule).
int32_t IcuSubstitutions(const std::string& bytes) {
  std::vector<UChar> buffer(bytes.size() * 2 + 4);
  int32_t length = 0, substitutions = 0;
  UErrorCode error = U_ZERO_ERROR;
  u_strFromUTF8WithSub(buffer.data(), static_cast<int32_t>(buffer.size()), &length, bytes.data(),
                       static_cast<int32_t>(bytes.size()), 0xFFFD, &substitutions, &error);
  EXPECT_TRUE(U_SUCCESS(error));
  return substitutions;
}

// NFKC_Casefold of the whole string by ICU alone (no ASCII fast path, no pieces).
std::string IcuNormalize(const std::string& valid) {
  UErrorCode error = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFKCCasefoldInstance(error);
  icu::UnicodeString out = n->normalize(icu::UnicodeString::fromUTF8(valid), error);
  EXPECT_TRUE(U_SUCCESS(error));
  std::string result;
  out.toUTF8String(result);
  return result;
}

TEST(Utf8Test, FindsFirstInvalidByte) {
  EXPECT_EQ(FindInvalidUtf8(""), 0u);
  EXPECT_EQ(FindInvalidUtf8("plain ascii"), 11u);
  EXPECT_EQ(FindInvalidUtf8("\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80"), 11u);
  EXPECT_EQ(FindInvalidUtf8("ab\xFF"), 2u);
  EXPECT_EQ(FindInvalidUtf8("ab\xC0\x80"), 2u);        // overlong
  EXPECT_EQ(FindInvalidUtf8("abc\xED\xA0\x80"), 3u);   // surrogate
  EXPECT_EQ(FindInvalidUtf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("12345678\xE4\xB8"), 8u);  // truncated at the end
  EXPECT_EQ(FindInvalidUtf8("\x80"), 0u);              // lone continuation byte
}

TEST(Utf8Test, ReplacementCountMatchesIcu) {
  std::mt19937_64 rng(1);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = testing::RandomUtf8ish(rng, rng() % 40, /*invalid=*/true);
    size_t replaced = 0;
    std::string cleaned = ReplaceInvalidUtf8(bytes, &replaced);
    ASSERT_EQ(static_cast<int32_t>(replaced), IcuSubstitutions(bytes)) << bytes;
    ASSERT_EQ(FindInvalidUtf8(cleaned), cleaned.size());
    ASSERT_EQ(replaced == 0, FindInvalidUtf8(bytes) == bytes.size());
  }
}

TEST(NormalizeTest, KnownForms) {
  EXPECT_EQ(*NormalizeText("\xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3\xEF\xBC\x91\xEF\xBC\x92"),
            "abc12");
  EXPECT_EQ(*NormalizeText("Stra\xC3\x9F"
                           "e"),
            "strasse");  // case folding
  EXPECT_EQ(*NormalizeText("caf"
                           "e\xCC\x81"),
            "caf\xC3\xA9");  // composition
  EXPECT_EQ(*NormalizeText("\xEF\xAC\x81"
                           "ne"),
            "fine");                                                // ligature
  EXPECT_EQ(*NormalizeText("zero\xE2\x80\x8Bwidth"), "zerowidth");  // default ignorable
  EXPECT_EQ(*NormalizeText("\xE3\x80\x80"), " ");                   // ideographic space
  EXPECT_EQ(*NormalizeText("\xE2\x84\xAA"), "k");                   // Kelvin sign
  EXPECT_EQ(*NormalizeText("MiXeD ASCII 123"), "mixed ascii 123");
}

TEST(NormalizeTest, RejectsInvalidUtf8WithOffset) {
  auto result = NormalizeText("abc\xFF");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(result.status().message().find("byte offset 3"), std::string::npos);
}

TEST(NormalizeTest, AsciiFastPathAgreesWithIcu) {
  std::mt19937_64 rng(2);
  for (int round = 0; round < 3000; ++round) {
    std::string text = testing::RandomUtf8ish(rng, rng() % 60, /*invalid=*/false);
    ASSERT_EQ(*NormalizeText(text), IcuNormalize(text)) << text;
  }
}

// Cutting a document into pieces anywhere never changes the result, even inside a UTF-8 sequence or
// between a letter and its combining mark.
TEST(NormalizeTest, PiecesGiveTheSameText) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 2000; ++round) {
    const bool invalid = round % 2 == 1;
    std::string text = testing::RandomUtf8ish(rng, rng() % 80, invalid);
    text_internal::StreamNormalizer whole(true, InvalidUtf8::kReplace);
    std::string expected;
    ASSERT_TRUE(whole.Update(text, &expected).ok());
    ASSERT_TRUE(whole.Finish(&expected).ok());
    text_internal::StreamNormalizer pieces(true, InvalidUtf8::kReplace);
    std::string actual;
    size_t at = 0;
    while (at < text.size()) {
      size_t length = std::min<size_t>(text.size() - at, 1 + rng() % 7);
      ASSERT_TRUE(pieces.Update(std::string_view(text).substr(at, length), &actual).ok());
      at += length;
    }
    ASSERT_TRUE(pieces.Finish(&actual).ok());
    ASSERT_EQ(actual, expected) << text;
    ASSERT_EQ(pieces.replaced(), whole.replaced());
    if (!invalid) {
      ASSERT_EQ(expected, IcuNormalize(text));
    }
  }
}

TEST(NormalizeTest, RejectReportsOffsetAcrossPieces) {
  text_internal::StreamNormalizer normalizer(true, InvalidUtf8::kReject);
  std::string out;
  ASSERT_TRUE(normalizer.Update("0123456789", &out).ok());
  ASSERT_TRUE(normalizer.Update("ab\xE4\xB8", &out).ok());  // may be completed by the next piece
  Status status = normalizer.Update("x", &out);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("byte offset 12"), std::string::npos) << status.message();
}

TEST(NormalizeTest, TruncatedSequenceAtEndIsInvalid) {
  text_internal::StreamNormalizer normalizer(true, InvalidUtf8::kReplace);
  std::string out;
  ASSERT_TRUE(normalizer.Update("ab\xE4\xB8", &out).ok());
  ASSERT_TRUE(normalizer.Finish(&out).ok());
  EXPECT_EQ(out, "ab\xEF\xBF\xBD");
  EXPECT_EQ(normalizer.replaced(), 1u);
}

TEST(TokenizeTest, MixedScripts) {
  auto tokens = Tokenize(
      "hello, world 42 \xE4\xB8\xAD\xE6\x96\x87\xE3\x80\x82\xE3\x83\x86\xE3\x82\xB9"
      "\xE3\x83\x88 abc123 caf\xC3\xA9 \xD0\xBC\xD0\xB8\xD1\x80");
  std::vector<std::pair<std::string, TokenKind>> got;
  for (const auto& t : tokens) got.emplace_back(std::string(t.text), t.kind);
  std::vector<std::pair<std::string, TokenKind>> want = {
      {"hello", TokenKind::kWord},
      {"world", TokenKind::kWord},
      {"42", TokenKind::kNumber},
      {"\xE4\xB8\xAD\xE6\x96\x87", TokenKind::kCjk},
      {"\xE3\x83\x86\xE3\x82\xB9\xE3\x83\x88", TokenKind::kCjk},
      {"abc123", TokenKind::kWord},
      {"caf\xC3\xA9", TokenKind::kWord},
      {"\xD0\xBC\xD0\xB8\xD1\x80", TokenKind::kWord},
  };
  EXPECT_EQ(got, want);
}

TEST(TokenizeTest, LatinNextToCjkSplits) {
  auto tokens = Tokenize(
      "abc\xE4\xB8\xAD\xE6\x96\x87"
      "def");
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[0].text, "abc");
  EXPECT_EQ(tokens[1].kind, TokenKind::kCjk);
  EXPECT_EQ(tokens[2].text, "def");
}

TEST(TokenizeTest, SeparatorsOnly) {
  EXPECT_TRUE(Tokenize("").empty());
  EXPECT_TRUE(Tokenize(" ,.;!?\t\n\xE3\x80\x82\xEF\xBF\xBD").empty());
}

// The tokeniser's 64-byte block scanning against a plain code-point-by-code-point reference that
// asks ICU for every character.
std::vector<std::pair<std::string, TokenKind>> ReferenceTokens(const std::string& text) {
  auto classify = [](UChar32 c) {
    const int32_t mask = U_GET_GC_MASK(c);
    if ((mask & (U_GC_L_MASK | U_GC_M_MASK | U_GC_N_MASK)) == 0) return 0;  // separator
    UErrorCode error = U_ZERO_ERROR;
    const UScriptCode script = uscript_getScript(c, &error);
    const bool cjk =
        script == USCRIPT_HAN || script == USCRIPT_HIRAGANA || script == USCRIPT_KATAKANA ||
        ((script == USCRIPT_COMMON || script == USCRIPT_INHERITED) &&
         (uscript_hasScript(c, USCRIPT_HAN) || uscript_hasScript(c, USCRIPT_HIRAGANA) ||
          uscript_hasScript(c, USCRIPT_KATAKANA)));
    if (cjk) return 3;
    return (mask & U_GC_ND_MASK) ? 2 : 1;  // digit : letter
  };
  std::vector<std::pair<std::string, TokenKind>> tokens;
  int32_t i = 0;
  const auto length = static_cast<int32_t>(text.size());
  std::string current;
  int current_class = 0;
  bool letters = false;
  auto flush = [&] {
    if (!current.empty()) {
      tokens.emplace_back(current, current_class == 3 ? TokenKind::kCjk
                                   : letters          ? TokenKind::kWord
                                                      : TokenKind::kNumber);
    }
    current.clear();
    letters = false;
  };
  while (i < length) {
    const int32_t start = i;
    UChar32 c;
    U8_NEXT(reinterpret_cast<const uint8_t*>(text.data()), i, length, c);
    const int cls = c < 0 ? 0 : classify(c);
    const bool joins = cls != 0 && !current.empty() && ((cls == 3) == (current_class == 3));
    if (!joins) flush();
    if (cls == 0) continue;
    current_class = cls == 3 ? 3 : 1;
    letters |= cls == 1;
    current.append(text, static_cast<size_t>(start), static_cast<size_t>(i - start));
  }
  flush();
  return tokens;
}

TEST(TokenizeTest, AgreesWithReference) {
  std::mt19937_64 rng(4);
  for (int round = 0; round < 3000; ++round) {
    std::string text = testing::RandomUtf8ish(rng, rng() % 200, /*invalid=*/false);
    if (round % 3 == 0) text = testing::Join(testing::RandomWords(rng, rng() % 50)) + text;
    std::vector<std::pair<std::string, TokenKind>> got;
    for (const auto& t : Tokenize(text)) got.emplace_back(std::string(t.text), t.kind);
    ASSERT_EQ(got, ReferenceTokens(text)) << text;
  }
}

TEST(TokenizeTest, LongTokensAreCut) {
  std::string long_word(kMaxTokenBytes * 2 + 10, 'a');
  auto tokens = Tokenize(long_word);
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[0].text.size(), kMaxTokenBytes);
  EXPECT_EQ(tokens[2].text.size(), 10u);
}

// The block classifier's two paths (SSE2 on x86-64, eight bytes a word elsewhere: WebAssembly)
// against one byte at a time, on every length of block and bytes of every kind.
TEST(TokenizeTest, BlockClassifierPathsAgree) {
  std::mt19937 rng(7);
  const std::string alphabet = "09azAZ@[`{/:_ -\x7f\x80\xbf\xc3\xe4\xff";
  for (int round = 0; round < 20000; ++round) {
    unsigned char block[64];
    const size_t n = rng() % 65;
    for (size_t i = 0; i < n; ++i) {
      block[i] = (rng() % 2) ? static_cast<unsigned char>(alphabet[rng() % alphabet.size()])
                             : static_cast<unsigned char>(rng());
    }
    text_internal::AsciiMasks expected;
    for (size_t i = 0; i < n; ++i) {
      const unsigned char c = block[i];
      const bool digit = c >= '0' && c <= '9';
      const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      if (c >= 0x80) expected.non_ascii |= uint64_t{1} << i;
      if (letter) expected.letter |= uint64_t{1} << i;
      if (letter || digit) expected.word |= uint64_t{1} << i;
    }
    for (const auto& got :
         {text_internal::ClassifyBlock(block, n), text_internal::ClassifyBlockPortable(block, n)}) {
      ASSERT_EQ(got.word, expected.word) << "n = " << n;
      ASSERT_EQ(got.letter, expected.letter) << "n = " << n;
      ASSERT_EQ(got.non_ascii, expected.non_ascii) << "n = " << n;
    }
  }
}

}  // namespace
}  // namespace neardup
