#include "util/cache_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "segment/test_files.h"

namespace neardup::util_internal {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class CacheFileTest : public ::testing::Test {
 protected:
  void SetUp() override { source_ = files_.Write("source.txt", "甲乙 5\n甲 1\n"); }

  CacheKey Key() const {
    CacheKey key("test-object");
    EXPECT_TRUE(key.AddFile(source_).ok());
    key.AddText("options");
    return key;
  }
  std::string CacheDir() const { return files_.dir() + "/cache"; }
  std::string CachePath() const { return CacheDir() + "/" + Key().FileName(); }

  bool Write(const std::vector<int32_t>& numbers, std::string_view text) const {
    auto writer = CacheWriter::Create(CacheDir(), Key());
    if (writer == nullptr) return false;
    writer->WriteVector(numbers);
    writer->WriteBytes(text);
    writer->WriteValue(3.25);
    WriteStrings({"中文", "", "words"}, writer.get());
    return writer->Commit();
  }
  // Reads the file written by Write(); false when any step refuses it.
  bool Read(std::vector<int32_t>* numbers, std::string* text) const {
    const CacheKey key = Key();
    auto reader = CacheReader::Open(CacheDir() + "/" + key.FileName(), key);
    double value = 0;
    std::vector<std::string> strings;
    return reader != nullptr && reader->ReadVector(numbers) && reader->ReadBytes(text) &&
           reader->ReadValue(&value) && ReadStrings(reader.get(), &strings) && reader->Finish() &&
           value == 3.25 && strings == std::vector<std::string>{"中文", "", "words"};
  }

  testing::TempFiles files_;
  std::string source_;
};

TEST_F(CacheFileTest, RoundTrip) {
  const std::vector<int32_t> numbers = {1, -2, 3, 1 << 30};
  ASSERT_TRUE(Write(numbers, "text"));
  std::vector<int32_t> got;
  std::string text;
  ASSERT_TRUE(Read(&got, &text));
  EXPECT_EQ(got, numbers);
  EXPECT_EQ(text, "text");
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(CacheDir()), {}), 1);
}

TEST_F(CacheFileTest, EveryTruncationIsRefused) {
  ASSERT_TRUE(Write({1, 2, 3}, "some text"));
  const std::string whole = ReadFile(CachePath());
  for (size_t size = 0; size < whole.size(); ++size) {
    files_.Write("cache/" + Key().FileName(), whole.substr(0, size));
    std::vector<int32_t> numbers;
    std::string text;
    EXPECT_FALSE(Read(&numbers, &text)) << "truncated to " << size << " of " << whole.size();
  }
  files_.Write("cache/" + Key().FileName(), whole + "x");
  std::vector<int32_t> numbers;
  std::string text;
  EXPECT_FALSE(Read(&numbers, &text)) << "trailing byte";
}

TEST_F(CacheFileTest, EveryBitFlipIsRefused) {
  ASSERT_TRUE(Write({1, 2, 3}, "some text"));
  const std::string whole = ReadFile(CachePath());
  // One bit in every byte, each bit position in turn (all bits would take seconds on a slow disk).
  for (size_t bit = 0; bit < whole.size() * 8; bit += 9) {
    std::string damaged = whole;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    files_.Write("cache/" + Key().FileName(), damaged);
    std::vector<int32_t> numbers;
    std::string text;
    EXPECT_FALSE(Read(&numbers, &text)) << "bit " << bit;
  }
}

TEST_F(CacheFileTest, OtherVersionIsRefusedEvenWithAValidChecksum) {
  ASSERT_TRUE(Write({1}, "x"));
  std::string file = ReadFile(CachePath());
  const uint32_t other_version = kCacheFormatVersion + 1;
  std::memcpy(file.data() + 8, &other_version, 4);
  const uint64_t checksum = XXH3_64bits(file.data(), file.size() - 8);
  std::memcpy(file.data() + file.size() - 8, &checksum, 8);
  files_.Write("cache/" + Key().FileName(), file);
  EXPECT_EQ(CacheReader::Open(CachePath(), Key()), nullptr);
}

TEST_F(CacheFileTest, KeyCoversTheSourceBytes) {
  ASSERT_TRUE(Write({1}, "x"));
  const std::string name = Key().FileName();
  const std::string material = Key().material();
  files_.Write("source.txt", "甲乙 6\n甲 1\n");  // same size, one byte changed
  EXPECT_EQ(Key().FileName(), name);             // the same file is replaced, not a new one added
  EXPECT_NE(Key().material(), material);
  EXPECT_EQ(CacheReader::Open(CachePath(), Key()), nullptr);
  CacheKey missing("test-object");
  EXPECT_FALSE(missing.AddFile(files_.dir() + "/none.txt").ok());
}

TEST_F(CacheFileTest, UnwritableDirectoryGivesNoWriter) {
  const std::string not_a_directory = files_.Write("plain-file", "x");
  EXPECT_EQ(CacheWriter::Create(not_a_directory + "/cache", Key()), nullptr);
  EXPECT_EQ(CacheWriter::Create("", Key()), nullptr);
}

TEST_F(CacheFileTest, ConcurrentWritersLeaveOneValidFile) {
  std::vector<int32_t> numbers(100000);
  for (size_t i = 0; i < numbers.size(); ++i) numbers[i] = static_cast<int32_t>(i * 7);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 5; ++round) {
        Write(numbers, "text");
        std::vector<int32_t> got;
        std::string text;
        if (Read(&got, &text)) {
          EXPECT_EQ(got, numbers);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<int32_t> got;
  std::string text;
  ASSERT_TRUE(Read(&got, &text));
  EXPECT_EQ(got, numbers);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(CacheDir()), {}), 1);
}

TEST(CacheDirectoryTest, FollowsTheEnvironment) {
  const char* saved[3] = {std::getenv("NEARDUP_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"),
                          std::getenv("HOME")};
  const std::string saved_values[3] = {saved[0] ? saved[0] : "", saved[1] ? saved[1] : "",
                                       saved[2] ? saved[2] : ""};
  ::setenv("NEARDUP_CACHE_DIR", "/a", 1);
  ::setenv("XDG_CACHE_HOME", "/b", 1);
  ::setenv("HOME", "/c", 1);
  EXPECT_EQ(CacheDirectory(), "/a");
  ::setenv("NEARDUP_CACHE_DIR", "", 1);
  EXPECT_EQ(CacheDirectory(), "/b/neardup");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(CacheDirectory(), "/c/.cache/neardup");
  ::unsetenv("HOME");
  EXPECT_EQ(CacheDirectory(), "");
  const char* names[3] = {"NEARDUP_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  for (int i = 0; i < 3; ++i) {
    if (saved[i] != nullptr) {
      ::setenv(names[i], saved_values[i].c_str(), 1);
    } else {
      ::unsetenv(names[i]);
    }
  }
}

}  // namespace
}  // namespace neardup::util_internal
