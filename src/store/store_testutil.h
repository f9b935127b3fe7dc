// Helpers of the store's tests: a corpus with near-duplicates, the contents of a directory, opening
// that must succeed, and running this test program as a child process.
#ifndef NEARDUP_SRC_STORE_STORE_TESTUTIL_H_
#define NEARDUP_SRC_STORE_STORE_TESTUTIL_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "neardup/store.h"
#include "testutil.h"

namespace neardup::store::testing {

// Documents "d0", "d1"...: every third a fresh text of 30 random words, the next its exact copy,
// the next the same with its last word changed.
class Corpus {
 public:
  Corpus(size_t size, uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < size; ++i) {
      std::vector<std::string> words;
      if (i % 3 == 0) {
        words = neardup::testing::RandomWords(rng, 30);
      } else {
        words = words_.back();
        if (i % 3 == 2) words.back() = "changed" + std::to_string(i);
      }
      words_.push_back(words);
      texts_.push_back(neardup::testing::Join(words));
    }
  }
  size_t size() const { return texts_.size(); }
  std::string id(size_t i) const {
    // Not "d" + std::to_string(i): GCC 12 sees a memcpy of an impossible size in that once
    // inlined (-Wstringop-overflow, a false positive).
    std::string id = std::to_string(i);
    id.insert(id.begin(), 'd');
    return id;
  }
  const std::string& text(size_t i) const { return texts_[i]; }

 private:
  std::vector<std::vector<std::string>> words_;
  std::vector<std::string> texts_;
};

// Every file under `dir` (relative path -> bytes).
inline std::map<std::string, std::string> FileContents(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    files[std::filesystem::relative(entry.path(), dir).string()] = bytes.str();
  }
  return files;
}

inline std::unique_ptr<Store> MustOpen(const std::string& dir, const StoreOptions& options) {
  auto store = Store::Open(dir, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

// Starts this test program running only `test` with the environment variable `name`=`value`; the
// child's standard output is read from the returned pipe and its pid given in *pid.
// Everything the child needs is prepared before fork: the parent has threads (RocksDB's), so the
// child calls only async-signal-safe functions before exec.
inline FILE* StartSelf(const std::string& test, const std::string& name, const std::string& value,
                       pid_t* pid) {
  const std::string filter = "--gtest_filter=" + test;
  const std::string brief = "--gtest_brief=1";
  const std::string program = "store_test_child";
  std::vector<char*> argv = {const_cast<char*>(program.c_str()), const_cast<char*>(filter.c_str()),
                             const_cast<char*>(brief.c_str()), nullptr};
  const std::string variable = name + "=" + value;
  std::vector<char*> envp = {const_cast<char*>(variable.c_str())};
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!std::string_view(*entry).starts_with(name + "=")) envp.push_back(*entry);
  }
  envp.push_back(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) return nullptr;
  *pid = ::fork();
  if (*pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execve("/proc/self/exe", argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  return ::fdopen(fds[0], "r");
}

// Runs the test as a child to its end; its standard output.
inline std::string RunSelf(const std::string& test, const std::string& name,
                           const std::string& value) {
  pid_t pid = 0;
  FILE* out = StartSelf(test, name, value, &pid);
  if (out == nullptr) return "";
  std::string output;
  char buffer[4096];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, out)) > 0) output.append(buffer, got);
  std::fclose(out);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return output;
}

// Two threads QueryAndInsert(kIfNew) the whole corpus at once, under ids ID-0 and ID-1: returns how
// many documents they stored.
inline int InsertTwoCopiesConcurrently(Store* store, const Corpus& corpus) {
  std::atomic<int> inserted{0};
  std::vector<std::thread> threads;
  for (int copy = 0; copy < 2; ++copy) {
    threads.emplace_back([&, copy] {
      for (size_t i = 0; i < corpus.size(); ++i) {
        auto result = store->QueryAndInsert(corpus.id(i) + "-" + std::to_string(copy),
                                            corpus.text(i), InsertPolicy::kIfNew);
        ASSERT_TRUE(result.ok()) << result.status().ToString();
        inserted += result->inserted;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return inserted.load();
}

}  // namespace neardup::store::testing

#endif  // NEARDUP_SRC_STORE_STORE_TESTUTIL_H_
