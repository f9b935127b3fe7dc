#include "neardup/input.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <random>

#include "testutil.h"

namespace neardup {
namespace {

std::vector<std::string> ReadAll(const std::string& path, uint64_t max_bytes = 1 << 20) {
  auto reader = LineReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  std::vector<std::string> lines;
  std::string line;
  while (true) {
    auto more = (*reader)->ReadLine(&line, max_bytes);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    lines.push_back(line);
  }
  return lines;
}

TEST(LineReaderTest, LineEndings) {
  testing::TempDir dir;
  using V = std::vector<std::string>;
  EXPECT_EQ(ReadAll(dir.File("a", "")), V{});
  EXPECT_EQ(ReadAll(dir.File("b", "one\ntwo\n")), (V{"one", "two"}));
  EXPECT_EQ(ReadAll(dir.File("c", "one\r\ntwo")), (V{"one", "two"}));
  EXPECT_EQ(ReadAll(dir.File("d", "\n\nx\n")), (V{"", "", "x"}));
  EXPECT_EQ(ReadAll(dir.File("e", "a\rb\n")), (V{"a\rb"}));
}

TEST(LineReaderTest, LinesLongerThanTheBuffer) {
  testing::TempDir dir;
  std::string big(3 << 20, 'x');
  big[1 << 20] = '\r';  // a carriage return at a buffer boundary inside the line stays
  auto lines = ReadAll(dir.File("big", big + "\r\nshort\n"), 8 << 20);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], big);
  EXPECT_EQ(lines[1], "short");
}

TEST(LineReaderTest, OverLongLineIsAnErrorAndReadingGoesOn) {
  testing::TempDir dir;
  std::string path = dir.File("long", "ok\n" + std::string(5000, 'y') + "\nafter\n");
  auto reader = LineReader::Open(path);
  ASSERT_TRUE(reader.ok());
  std::string line;
  ASSERT_TRUE(*(*reader)->ReadLine(&line, 100));
  auto over = (*reader)->ReadLine(&line, 100);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Status::Code::kResourceExhausted);
  EXPECT_NE(over.status().message().find(path + ":2:"), std::string::npos)
      << over.status().message();
  auto next = (*reader)->ReadLine(&line, 100);
  ASSERT_TRUE(next.ok() && *next);
  EXPECT_EQ(line, "after");
  EXPECT_EQ((*reader)->line_number(), 3u);
}

TEST(LineReaderTest, PiecesNeverHoldNewlines) {
  testing::TempDir dir;
  std::string text = std::string(2500000, 'a') + "\nb\n";
  auto reader = LineReader::Open(dir.File("p", text));
  ASSERT_TRUE(reader.ok());
  size_t total = 0, pieces = 0;
  auto more = (*reader)->ReadLinePieces([&](std::string_view piece) {
    EXPECT_EQ(piece.find('\n'), std::string_view::npos);
    total += piece.size();
    ++pieces;
    return Status::OK();
  });
  ASSERT_TRUE(more.ok() && *more);
  EXPECT_EQ(total, 2500000u);
  EXPECT_GE(pieces, 3u);
}

// Raw lines keep their terminators; concatenated they give back the input exactly.
TEST(LineReaderTest, RawLinesRebuildTheInput) {
  testing::TempDir dir;
  std::mt19937_64 rng(5);
  for (int round = 0; round < 20; ++round) {
    std::string text;
    const int lines = static_cast<int>(rng() % 50);
    for (int i = 0; i < lines; ++i) {
      text += std::string(rng() % 12 == 0 ? rng() % 2500000 : rng() % 100,
                          'a' + static_cast<char>(i % 26));
      text += rng() % 4 == 0 ? "\r\n" : "\n";
    }
    if (rng() % 2) text += "no newline at the end";
    auto reader = LineReader::Open(dir.File("raw" + std::to_string(round), text));
    ASSERT_TRUE(reader.ok());
    std::string rebuilt, scratch;
    std::string_view line;
    uint64_t count = 0;
    while (true) {
      auto more = (*reader)->ReadRawLine(&line, &scratch, 1 << 30);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      if (!*more) break;
      rebuilt.append(line);
      ++count;
      EXPECT_EQ((*reader)->line_number(), count);
    }
    ASSERT_EQ(rebuilt.size(), text.size()) << "round " << round;
    ASSERT_TRUE(rebuilt == text) << "round " << round;
  }
}

// offset() is where each line starts in the file, whichever way lines are read, over-long ones
// included; after the last line it is the file's length.
TEST(LineReaderTest, OffsetsOfPlainFilesAreWhereLinesStart) {
  testing::TempDir dir;
  std::mt19937_64 rng(9);
  for (int round = 0; round < 20; ++round) {
    std::string text;
    std::vector<uint64_t> starts;
    const int lines = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < lines; ++i) {
      starts.push_back(text.size());
      text += std::string(rng() % 10 == 0 ? rng() % 2500000 : rng() % 300, 'q');
      text += rng() % 4 == 0 ? "\r\n" : "\n";
    }
    if (rng() % 2) {
      starts.push_back(text.size());
      text += "last, without a line end";
    }
    const std::string path = dir.File("o" + std::to_string(round), text);
    for (int way = 0; way < 3; ++way) {
      auto reader = LineReader::Open(path);
      ASSERT_TRUE(reader.ok());
      std::string line, scratch;
      std::string_view raw;
      for (size_t i = 0;; ++i) {
        EXPECT_EQ((*reader)->offset(), i < starts.size() ? starts[i] : text.size())
            << "round " << round << " way " << way << " line " << i;
        // Lines over 1000 bytes are over the limit (ReadLine, ReadRawLine) and still passed.
        Result<bool> more =
            way == 0   ? (*reader)->ReadLine(&line, 1000)
            : way == 1 ? (*reader)->ReadRawLine(&raw, &scratch, 1000)
                       : (*reader)->ReadLinePieces([](std::string_view) { return Status::OK(); });
        if (!more.ok()) {
          ASSERT_EQ(more.status().code(), Status::Code::kResourceExhausted);
          continue;
        }
        if (!*more) {
          EXPECT_EQ(i, starts.size());
          break;
        }
      }
    }
  }
}

TEST(LineReaderTest, NoOffsetsInDecompressedFiles) {
  testing::TempDir dir;
  const std::string plain = dir.File("n.txt", "alpha\nbeta\n");
  ASSERT_EQ(std::system(("gzip -c " + plain + " > " + dir.Path("n.txt.gz")).c_str()), 0);
  ASSERT_EQ(std::system(("zstd -q -c " + plain + " > " + dir.Path("n.txt.zst")).c_str()), 0);
  for (const std::string name : {"n.txt.gz", "n.txt.zst"}) {
    auto reader = LineReader::Open(dir.Path(name));
    ASSERT_TRUE(reader.ok());
    std::string line;
    EXPECT_EQ((*reader)->offset(), LineReader::kNoOffset) << name;
    ASSERT_TRUE(*(*reader)->ReadLine(&line, 100));
    EXPECT_EQ((*reader)->offset(), LineReader::kNoOffset) << name;
  }
  auto input = LineReader::Open("-");
  ASSERT_TRUE(input.ok());
  EXPECT_EQ((*input)->offset(), LineReader::kNoOffset);
}

TEST(LineReaderTest, RawLineOverTheLimit) {
  testing::TempDir dir;
  std::string path = dir.File("l", "short\r\n" + std::string(3000000, 'x') + "\nafter\n");
  auto reader = LineReader::Open(path);
  ASSERT_TRUE(reader.ok());
  std::string scratch;
  std::string_view line;
  ASSERT_TRUE(*(*reader)->ReadRawLine(&line, &scratch, 100));
  EXPECT_EQ(line, "short\r\n");
  EXPECT_EQ(StripLineEnd(line), "short");
  auto over = (*reader)->ReadRawLine(&line, &scratch, 100);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find(path + ":2: line longer than the limit of 100 bytes"),
            std::string::npos);
  ASSERT_TRUE(*(*reader)->ReadRawLine(&line, &scratch, 100));
  EXPECT_EQ(line, "after\n");
  EXPECT_FALSE(*(*reader)->ReadRawLine(&line, &scratch, 100));
}

TEST(LineReaderTest, CompressedFiles) {
  testing::TempDir dir;
  std::string plain = dir.File("c.txt", "alpha\nbeta\ngamma\n");
  ASSERT_EQ(std::system(("gzip -c " + plain + " > " + dir.Path("c.txt.gz")).c_str()), 0);
  ASSERT_EQ(std::system(("zstd -q -c " + plain + " > " + dir.Path("c.txt.zst")).c_str()), 0);
  std::vector<std::string> want = {"alpha", "beta", "gamma"};
  EXPECT_EQ(ReadAll(dir.Path("c.txt.gz")), want);
  EXPECT_EQ(ReadAll(dir.Path("c.txt.zst")), want);
}

// A file named without its suffix is read by its first bytes (gzip 1f 8b, zstd 28 b5 2f fd, which
// cannot start UTF-8 text), decompressed and without offsets; text that merely starts with 0x1f or
// '(' stays plain, as do files shorter than the magic.
TEST(LineReaderTest, CompressedFilesAreKnownByTheirFirstBytes) {
  testing::TempDir dir;
  const std::string plain = dir.File("c.txt", "alpha\nbeta\ngamma\n");
  ASSERT_EQ(std::system(("gzip -c " + plain + " > " + dir.Path("gzipped.txt")).c_str()), 0);
  ASSERT_EQ(std::system(("zstd -q -c " + plain + " > " + dir.Path("zstd.data")).c_str()), 0);
  const std::vector<std::string> want = {"alpha", "beta", "gamma"};
  for (const std::string name : {"gzipped.txt", "zstd.data"}) {
    EXPECT_EQ(ReadAll(dir.Path(name)), want) << name;
    auto reader = LineReader::Open(dir.Path(name));
    ASSERT_TRUE(reader.ok());
    EXPECT_EQ((*reader)->offset(), LineReader::kNoOffset) << name;
  }
  const std::string near = dir.File("near.txt", "\x1f not gzip\n(\xb5 not zstd\n");
  EXPECT_EQ(ReadAll(near), (std::vector<std::string>{"\x1f not gzip", "(\xb5 not zstd"}));
  auto reader = LineReader::Open(near);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->offset(), 0u);
  EXPECT_EQ(ReadAll(dir.File("one.txt", "x")), std::vector<std::string>{"x"});
  EXPECT_EQ(ReadAll(dir.File("empty.txt", "")), std::vector<std::string>{});
  EXPECT_EQ(ReadAll(dir.File("two.txt", "\x1f\n")), std::vector<std::string>{"\x1f"});
  // Standard input, looked at on its first read.
  const int saved = ::dup(0);
  for (const std::string name : {"gzipped.txt", "zstd.data", "c.txt"}) {
    const int fd = ::open(dir.Path(name).c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::dup2(fd, 0), 0);
    ::close(fd);
    EXPECT_EQ(ReadAll("-"), want) << name;
  }
  ::dup2(saved, 0);
  ::close(saved);
}

TEST(LineReaderTest, CorruptCompressedFilesAreErrors) {
  testing::TempDir dir;
  for (const char* name : {"bad.gz", "bad.zst"}) {
    auto reader = LineReader::Open(dir.File(name, "this is not compressed data at all\n"));
    ASSERT_TRUE(reader.ok());
    std::string line;
    auto result = (*reader)->ReadLine(&line, 1000);
    EXPECT_FALSE(result.ok()) << name;
    if (!result.ok()) {
      EXPECT_NE(result.status().message().find(name), std::string::npos);
    }
  }
}

// Names read as JSON Lines by every command: .jsonl or .ndjson, any case, before .gz or .zst.
TEST(InputNamesTest, JsonLinesByName) {
  for (const char* yes : {"a.jsonl", "dir/A.JSONL.GZ", "x.ndjson.zst", "b.NdJson"}) {
    EXPECT_TRUE(HasJsonLinesName(yes)) << yes;
  }
  for (const char* no : {".jsonl", "dir.jsonl/file.txt", "a.json", "a.jsonl.txt", "jsonl", "a.gz",
                         "a.jsonl.gz.bak"}) {
    EXPECT_FALSE(HasJsonLinesName(no)) << no;
  }
  EXPECT_EQ(InputExtension("dir/A.JSON.ZST"), "json");
  EXPECT_EQ(InputExtension("a.gz"), "");
  EXPECT_EQ(InputExtension(".gz"), "");  // a name that is only an extension
  EXPECT_EQ(InputExtension("noext"), "");
}

TEST(LineReaderTest, MissingFile) {
  auto reader = LineReader::Open("/nonexistent/neardup/file.txt");
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), Status::Code::kNotFound);
  EXPECT_NE(reader.status().message().find("/nonexistent/neardup/file.txt"), std::string::npos);
}

TEST(JsonlParserTest, Fields) {
  JsonlParser parser("id", "text");
  JsonlParser::Fields f;
  ASSERT_TRUE(parser.Parse(R"({"id":"a1","text":"hello \"world\"\n"})", &f).ok());
  EXPECT_EQ(f.id, "a1");
  EXPECT_TRUE(f.has_id);
  EXPECT_EQ(f.text, "hello \"world\"\n");
  ASSERT_TRUE(parser.Parse(R"({"text":"x","id":42})", &f).ok());
  EXPECT_EQ(f.id, "42");
  ASSERT_TRUE(parser.Parse(R"({"text":"no id"})", &f).ok());
  EXPECT_FALSE(f.has_id);
}

TEST(JsonlParserTest, IdsOnlyWithoutTextField) {
  JsonlParser parser("id", "");
  JsonlParser::Fields f;
  ASSERT_TRUE(parser.Parse(R"({"id":12})", &f).ok());
  EXPECT_EQ(f.id, "12");
  EXPECT_TRUE(f.text.empty());
  ASSERT_TRUE(parser.Parse(R"({"id":"x","text":"ignored"})", &f).ok());
  EXPECT_EQ(f.id, "x");
  EXPECT_TRUE(f.text.empty());
  EXPECT_FALSE(parser.Parse("[1]", &f).ok());
}

TEST(JsonlParserTest, NestedFields) {
  JsonlParser parser("meta.id", "body.text");
  JsonlParser::Fields f;
  ASSERT_TRUE(parser.Parse(R"({"meta":{"id":7},"body":{"text":"deep"}})", &f).ok());
  EXPECT_EQ(f.id, "7");
  EXPECT_EQ(f.text, "deep");
}

TEST(JsonlParserTest, InvalidUtf8ReplacedOnRequest) {
  JsonlParser parser("id", "text");
  JsonlParser::Fields f;
  EXPECT_FALSE(parser.Parse("{\"text\":\"a\xFF b\"}", &f).ok());
  parser.set_replace_invalid_utf8(true);
  ASSERT_TRUE(parser.Parse("{\"text\":\"a\xFF b\"}", &f).ok());
  EXPECT_EQ(f.text, "a\xEF\xBF\xBD b");
}

TEST(JsonlParserTest, NumberField) {
  JsonlParser parser("id", "text", "meta.score");
  JsonlParser::Fields f;
  ASSERT_TRUE(parser.Parse(R"({"text":"x","meta":{"score":2.5}})", &f).ok());
  EXPECT_TRUE(f.has_number);
  EXPECT_EQ(f.number, 2.5);
  ASSERT_TRUE(parser.Parse(R"({"text":"x","meta":{"score":-7}})", &f).ok());
  EXPECT_EQ(f.number, -7);
  ASSERT_TRUE(parser.Parse(R"({"text":"x"})", &f).ok());
  EXPECT_FALSE(f.has_number);
  Status bad = parser.Parse(R"({"text":"x","meta":{"score":"high"}})", &f);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("field 'meta.score' is a string, expected a number"),
            std::string::npos);
}

TEST(JsonlParserTest, BadLinesNameTheProblem) {
  JsonlParser parser("id", "text");
  JsonlParser::Fields f;
  struct Case {
    const char* line;
    const char* message;
  } cases[] = {
      {R"({"id":1,"text":)", "malformed JSON"},
      {"", "malformed JSON"},
      {"[1,2]", "expected a JSON object, got an array"},
      {R"({"id":1})", "no text field 'text'"},
      {R"({"text":5})", "text field 'text' is a number"},
      {R"({"text":null})", "text field 'text' is null"},
      {R"({"text":"x","id":[1]})", "id field 'id' is an array"},
      {"{\"text\":\"\xFF\"}", "malformed JSON"},
  };
  for (const auto& c : cases) {
    Status status = parser.Parse(c.line, &f);
    ASSERT_FALSE(status.ok()) << c.line;
    EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
    EXPECT_NE(status.message().find(c.message), std::string::npos) << status.message();
  }
}

TEST(JsonlParserTest, NumericIdsKeepTheirText) {
  JsonlParser parser("meta.id", "text", "score");
  JsonlParser::Fields f;
  for (const char* id : {"123456789012345678901234567890", "-123456789012345678901234567890",
                         "1.50", "-0", "-12", "1E5", "0", "18446744073709551615", "2.5e-3"}) {
    const std::string line = std::string(R"({"text":"x","meta":{"id":)") + id + R"( },"score":3})";
    Status status = parser.Parse(line, &f);
    ASSERT_TRUE(status.ok()) << line << ": " << status.ToString();
    EXPECT_TRUE(f.has_id);
    EXPECT_EQ(f.id, id);
    EXPECT_EQ(f.number, 3);
  }
  // A big integer elsewhere in the line does not make it malformed; a big priority is read as a
  // double.
  ASSERT_TRUE(
      parser
          .Parse(
              R"({"text":"a \"1234567890123456789012\" b","meta":{"id":"s"},"score":123456789012345678901234567890})",
              &f)
          .ok());
  EXPECT_EQ(f.id, "s");
  EXPECT_EQ(f.text, "a \"1234567890123456789012\" b");
  EXPECT_DOUBLE_EQ(f.number, 1.2345678901234568e29);
  // A key written with escapes is found too.
  ASSERT_TRUE(parser.Parse(R"({"text":"x","meta":{"i\u0064":1.50}})", &f).ok());
  EXPECT_TRUE(f.has_id);
  // Still malformed: a big integer does not hide other damage.
  EXPECT_FALSE(
      parser.Parse(R"({"text":"x","meta":{"id":123456789012345678901234567890},)", &f).ok());
  EXPECT_FALSE(
      parser.Parse(R"({"text":"x","meta":{"id":123456789012345678901234567890}} x)", &f).ok());
}

TEST(JsonlParserTest, BooleanAndNullIdsAreRefused) {
  JsonlParser parser("id", "text");
  JsonlParser::Fields f;
  for (const auto& [value, kind] : {std::pair{"true", "a boolean"}, std::pair{"false", "a boolean"},
                                    std::pair{"null", "null"}, std::pair{"{}", "an object"}}) {
    Status status = parser.Parse(std::string(R"({"text":"x","id":)") + value + "}", &f);
    ASSERT_FALSE(status.ok()) << value;
    EXPECT_EQ(status.message(),
              std::string("id field 'id' is ") + kind + ", expected a string or number");
  }
}

TEST(LineReaderTest, ByteOrderMarkAndUpperCaseExtensions) {
  EXPECT_EQ(StripByteOrderMark("\xEF\xBB\xBF"
                               "abc"),
            "abc");
  EXPECT_EQ(StripByteOrderMark("abc"), "abc");
  EXPECT_EQ(StripByteOrderMark("\xEF\xBB"), "\xEF\xBB");
  testing::TempDir dir;
  const std::string path = dir.File("LINES.TXT", "first\nsecond\n");
  ASSERT_EQ(std::system(("gzip -S .GZ " + path).c_str()), 0);
  auto reader = LineReader::Open(path + ".GZ");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string line;
  ASSERT_TRUE(*(*reader)->ReadLine(&line, 100));
  EXPECT_EQ(line, "first");
}

}  // namespace
}  // namespace neardup
