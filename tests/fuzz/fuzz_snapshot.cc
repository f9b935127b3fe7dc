// Fuzz target: an online index file (OnlineIndex::Save, a store's snapshot) given bytes that may be
// damaged anywhere. Loading must fail cleanly (an error that says why) or give an index that works:
// it answers queries, takes an insert and a remove, and saved and loaded again it holds the same
// documents and answers the same. A violation aborts, which libFuzzer and the replay both report.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "neardup/index_file.h"
#include "neardup/method.h"
#include "neardup/online_index.h"
#include "neardup/output.h"

namespace {

const std::string& Base() {
  static const std::string base = "/tmp/neardup-fuzz-snapshot-" + std::to_string(::getpid());
  return base;
}

std::string WriteTemp(const uint8_t* data, size_t size) {
  const std::string path = Base() + ".ndx";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return "";
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

// Every stored document's answers to its own signature, as text.
std::string Answers(const neardup::OnlineIndex& index) {
  std::vector<neardup::Signature> signatures;
  std::string out;
  if (!index
           .ForEach([&](std::string_view id, const neardup::Signature& signature) {
             out.append(id).push_back('\n');
             signatures.push_back(signature);
           })
           .ok())
    std::abort();
  for (const neardup::Signature& signature : signatures) {
    auto matches = index.QuerySigned(signature);
    if (!matches.ok()) std::abort();
    for (const neardup::OnlineMatch& match : *matches)
      out += match.id + "=" + std::to_string(match.score) + " ";
    out.push_back('\n');
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = WriteTemp(data, size);
  if (path.empty()) return 0;
  // The settings the file names (a file that names none, or bad ones, is tried with the defaults).
  neardup::OnlineIndexOptions options;
  if (auto info = neardup::ReadIndexFileInfo(path); info.ok()) {
    if (auto method = neardup::ParseSettingsLine(info->settings); method.ok())
      options.method = *method;
  }
  for (const bool sketch_file : {false, true}) {
    options.sketch_directory = sketch_file ? "/tmp" : "";
    auto loaded = neardup::OnlineIndex::Load(path, options);
    if (!loaded.ok()) {
      if (loaded.status().message().empty()) std::abort();
      continue;
    }
    neardup::OnlineIndex& index = **loaded;
    const std::string before = Answers(index);
    // It takes writes: a document inserted and removed again leaves the answers as they were.
    (void)index.Query("a query text of a few words");
    if (!index.Contains("fuzz-new-document")) {
      const auto inserted = index.QueryAndInsert(
          "fuzz-new-document", "a new document of the fuzzer", neardup::InsertPolicy::kAlways);
      if (inserted.ok()) {
        if (!index.Remove("fuzz-new-document").ok()) std::abort();
        if (Answers(index) != before) std::abort();
      }
    }
    // Saved and loaded again: the same documents, the same answers.
    const std::string again = Base() + ".again.ndx";
    {
      neardup::OutputFile out;
      if (!out.Open(again).ok() || !index.Save(&out).ok() || !out.Commit().ok()) std::abort();
    }
    auto reloaded = neardup::OnlineIndex::Load(again, options);
    if (!reloaded.ok()) std::abort();
    if ((*reloaded)->Stats().documents != index.Stats().documents) std::abort();
    if (Answers(**reloaded) != before) std::abort();
    std::remove(again.c_str());
  }
  std::remove(path.c_str());
  return 0;
}
