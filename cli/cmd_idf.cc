// neardup idf build: an IDF table of the user's own corpus, in jieba's idf.txt format.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "cli/commands.h"
#include "cli/common.h"
#include "neardup/cpu.h"
#include "neardup/keywords.h"
#include "neardup/segment.h"
#include "neardup/text.h"

namespace neardup::cli {
namespace {

struct IdfFlags {
  InputFlags input;
  DictionaryFlags dictionary;
  std::string output;
  uint64_t min_df = 1;
  uint64_t max_words = 20'000'000;
  int threads = 0;
  uint64_t max_document_bytes = 0;
};

using DfMap = std::unordered_map<std::string, uint64_t>;

// Drops words under `threshold` when a map holds more than max_words distinct words. Their document
// frequencies may then come out low: the header of the table says so.
void Prune(DfMap* df, uint64_t threshold) {
  for (auto it = df->begin(); it != df->end();)
    it = it->second < threshold ? df->erase(it) : std::next(it);
}

class Counter {
 public:
  Counter(const IdfFlags& flags, std::shared_ptr<const Dictionary> dictionary)
      : flags_(flags), dictionary_(std::move(dictionary)) {}

  // Queues one document; blocks while the queue is full.
  void Push(std::string text) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return queue_.size() < 4096; });
    queue_.push_back(std::move(text));
    not_empty_.notify_one();
  }

  void Run(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }

  // Waits for the workers and merges their counts.
  DfMap Finish(uint64_t* pruned_below) {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    not_empty_.notify_all();
    for (auto& worker : workers_) worker.join();
    DfMap total;
    for (auto& partial : partials_) {
      for (auto& [word, count] : partial) total[word] += count;
    }
    *pruned_below = pruned_below_;
    return total;
  }

 private:
  void Work() {
    Segmenter segmenter(dictionary_);
    DfMap df;
    std::vector<std::string_view> words;
    std::unordered_set<std::string_view> seen;
    uint64_t threshold = std::max<uint64_t>(2, flags_.min_df);
    while (true) {
      std::string text;
      {
        std::unique_lock lock(mutex_);
        not_empty_.wait(lock, [&] { return done_ || !queue_.empty(); });
        if (queue_.empty()) break;
        text = std::move(queue_.front());
        queue_.pop_front();
        not_full_.notify_one();
      }
      words.clear();
      seen.clear();
      if (!segmenter.CutInto(text, {}, &words).ok()) continue;  // text was cleaned before queueing
      for (std::string_view w : words) {
        if (IdfTable::CanHold(w) && seen.insert(w).second) ++df[std::string(w)];
      }
      if (df.size() > flags_.max_words) {
        Prune(&df, threshold);
        std::lock_guard lock(mutex_);
        pruned_below_ = std::max(pruned_below_, threshold);
        if (df.size() > flags_.max_words / 2) threshold *= 2;
      }
    }
    std::lock_guard lock(mutex_);
    partials_.push_back(std::move(df));
  }

  const IdfFlags& flags_;
  std::shared_ptr<const Dictionary> dictionary_;
  std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  std::deque<std::string> queue_;
  bool done_ = false;
  std::vector<std::thread> workers_;
  std::vector<DfMap> partials_;
  uint64_t pruned_below_ = 0;
};

int RunIdfBuild(const IdfFlags& flags) {
  // The table is checked before anything is read, written whole or not at all.
  OutputSet outputs;
  auto table = outputs.Add(flags.output, "-o");
  if (!table.ok()) return ReportError("idf build", table.status());
  Status checked = outputs.CheckNotInputs(flags.input.files);
  if (!checked.ok()) return ReportError("idf build", checked);
  auto dictionary = LoadDictionary(flags.dictionary);
  if (!dictionary.ok()) return ReportError("idf build", dictionary.status());
  const int threads = ResolveThreads(flags.threads);
  Counter counter(flags, *dictionary);
  counter.Run(threads);
  uint64_t documents = 0;
  Status status = ForEachWholeDocument(flags.input, flags.max_document_bytes,
                                       [&](std::string_view, std::string_view text) {
                                         ++documents;
                                         counter.Push(ReplaceInvalidUtf8(text));
                                         return Status::OK();
                                       });
  uint64_t pruned_below = 0;
  DfMap df = counter.Finish(&pruned_below);
  if (!status.ok()) return ReportError("idf build", status);
  if (documents == 0)
    return ReportError("idf build", Status::InvalidArgument("no documents in the input"));

  std::vector<std::pair<std::string_view, uint64_t>> rows;
  for (const auto& [word, count] : df) {
    if (count >= flags.min_df) rows.emplace_back(word, count);
  }
  std::sort(rows.begin(), rows.end());
  if (rows.empty()) {
    return ReportError(
        "idf build",
        Status::InvalidArgument(
            flags.output + ": no entries: the " + std::to_string(documents) +
            " documents have no words" +
            (flags.min_df > 1 ? " found in --min-df " + std::to_string(flags.min_df) + " of them"
                              : std::string()) +
            " (nothing written)"));
  }
  Status opened = outputs.OpenAll();
  if (!opened.ok()) return ReportError("idf build", opened);
  std::string& out = (*table)->buffer();
  out += "# neardup idf build: documents=" + std::to_string(documents) +
         " words=" + std::to_string(rows.size()) + " min_df=" + std::to_string(flags.min_df) +
         " idf=ln(documents/df) dictionary=" + (*dictionary)->sources().dict_path;
  if (pruned_below != 0) {
    out += " pruned: over " + std::to_string(flags.max_words) +
           " distinct words some counts under " + std::to_string(pruned_below) + " were dropped";
  }
  out += "\n";
  for (const auto& [word, count] : rows) {
    out.append(word);
    out.push_back(' ');
    AppendDouble(std::log(static_cast<double>(documents) / static_cast<double>(count)), &out);
    out.push_back('\n');
    Status written = (*table)->MaybeDrain();
    if (!written.ok()) return ReportError("idf build", written);
  }
  Status committed = outputs.CommitAll();
  if (!committed.ok()) return ReportError("idf build", committed);
  std::fprintf(stderr, "neardup idf build: %llu documents, %zu words written to %s\n",
               static_cast<unsigned long long>(documents), rows.size(), flags.output.c_str());
  return kExitSuccess;
}

}  // namespace

void AddIdfCommand(CLI::App* app, int* exit_code) {
  CLI::App* idf = app->add_subcommand("idf", "IDF tables for TF-IDF weights");
  idf->require_subcommand(1);
  auto flags = std::make_shared<IdfFlags>();
  CLI::App* build =
      idf->add_subcommand("build", "Build an IDF table (jieba's format) from a corpus");
  build->footer(
      "Segments every document with jieba's cut on all cores and writes 'word idf' lines,\n"
      "idf = ln(documents / document frequency), after a '#' header naming the document count and\n"
      "options (remove it before loading the file into Python's jieba). Use it with --idf FILE.\n"
      "Example:\n"
      "  neardup idf build --jsonl pages.jsonl -o my_idf.txt --min-df 2\n"
      "  neardup keywords --idf my_idf.txt --top 10 pages.txt");
  AddInputFlags(build, &flags->input);
  AddDictionaryFlags(build, &flags->dictionary);
  build->add_option("-o,--output", flags->output, "IDF table to write")->required();
  build->add_option("--min-df", flags->min_df, "Leave out words found in fewer documents")
      ->check(UnsignedValidator())
      ->check(CLI::Range(uint64_t{1}, ~uint64_t{0}))
      ->capture_default_str();
  build
      ->add_option("--max-words", flags->max_words,
                   "Distinct words kept in memory per thread before rare ones are pruned")
      ->check(UnsignedValidator())
      ->check(CLI::Range(uint64_t{1000}, ~uint64_t{0}))
      ->capture_default_str();
  build->add_option("--threads", flags->threads, "Worker threads, 1..1024 (0: one per core)")
      ->check(ThreadsRange())
      ->capture_default_str();
  build
      ->add_option("--max-doc-bytes", flags->max_document_bytes,
                   "Longest document accepted, e.g. 100M (0: no limit)")
      ->transform(SizeValidator());
  build->callback([flags, exit_code] { *exit_code = RunIdfBuild(*flags); });
}

}  // namespace neardup::cli
