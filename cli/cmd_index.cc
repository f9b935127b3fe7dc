// neardup index build|query|pairs|info: the exact Hamming index for users who already have
// fingerprints (from `neardup hash` or another SimHash library). `index query|info` of a directory,
// and `index add|remove`, are the durable store's (cmd_store.cc).
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/store_commands.h"
#include "neardup/id_table.h"
#include "neardup/index.h"
#include "neardup/index_file.h"
#include "neardup/input.h"
#include "neardup/join.h"

namespace neardup::cli {
namespace {

struct FingerprintInput {
  std::vector<std::string> files;
  bool decimal = false;
};

struct IndexFlags {
  FingerprintInput input;
  std::string index_path;
  int k = -1;  // -1: the default of the subcommand
  int threads = 0;
  uint64_t memory = 0;
  std::vector<int> blocks;
  int key_blocks = 0;
};

Result<uint64_t> ParseFingerprint(std::string_view text, bool decimal) {
  uint64_t value = 0;
  if (decimal) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
      return Status::InvalidArgument("fingerprint '" + std::string(text.substr(0, 40)) +
                                     "' is not an unsigned 64-bit decimal number");
    }
    return value;
  }
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (text.size() != 16 || error != std::errc() || end != text.data() + text.size()) {
    return Status::InvalidArgument("fingerprint '" + std::string(text.substr(0, 40)) +
                                   "' is not 16 hex digits (use --decimal for decimal numbers)");
  }
  return value;
}

// Where an input line is: its file (an index into the inputs) and 1-based line number.
struct LinePlace {
  uint32_t file = 0;
  uint64_t line = 0;
};

// The id as an unsigned 64-bit integer when it is one written canonically (no leading zeros), so
// that the number prints back as the id was written; nothing otherwise ("007", "00": text ids).
std::optional<uint64_t> NumericId(std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (text.size() > 1 && text.front() == '0') return std::nullopt;
  return value;
}

std::vector<std::string> InputNames(const FingerprintInput& input) {
  return input.files.empty() ? std::vector<std::string>{"-"} : input.files;
}

// The ids of `index build`: numbers while every id is one (stored in the index itself), else text
// (the index numbers the fingerprints 0, 1, 2... and the ids, unescaped, go to INDEX.ids).
class BuildIds {
 public:
  Status Add(std::string_view id, LinePlace place) {
    if (numeric_) {
      if (auto value = NumericId(id)) {
        numbers_.push_back(*value);
      } else {
        numeric_ = false;
        for (uint64_t number : numbers_) text_.Add(std::to_string(number));
        numbers_ = std::vector<uint64_t>();
      }
    }
    if (!numeric_) {
      if (!ParseTsvField(id, &unescaped_)) {
        return Status::InvalidArgument("id '" + std::string(id.substr(0, 40)) +
                                       "' has a malformed escape");
      }
      text_.Add(unescaped_);
    }
    // Where each id came from, compactly: a new run of consecutive lines starts only after a
    // skipped (empty) line or at a new file.
    if (runs_.empty() || runs_.back().place.file != place.file ||
        runs_.back().place.line + (size_ - runs_.back().first) != place.line) {
      runs_.push_back({size_, place});
    }
    ++size_;
    return Status::OK();
  }
  bool numeric() const { return numeric_; }
  // The ids the index stores: the numbers, or 0, 1, 2...
  std::vector<uint64_t> IndexIds() const {
    if (numeric_) return numbers_;
    std::vector<uint64_t> ids(size_);
    for (uint64_t i = 0; i < size_; ++i) ids[i] = i;
    return ids;
  }
  const IdTable& text() const { return text_; }

  // InvalidArgument naming the first id that repeats and the file and line of both occurrences.
  Status CheckUnique(const std::vector<std::string>& files) const {
    std::vector<uint64_t> keys(size_);
    for (uint64_t i = 0; i < size_; ++i) {
      keys[i] = numeric_ ? numbers_[i] : std::hash<std::string_view>()(text_.Get(i));
    }
    std::vector<uint32_t> order(size_);
    for (uint64_t i = 0; i < size_; ++i) order[i] = static_cast<uint32_t>(i);
    auto same = [&](uint32_t a, uint32_t b) {
      return keys[a] == keys[b] && (numeric_ || text_.Get(a) == text_.Get(b));
    };
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      if (keys[a] != keys[b]) return keys[a] < keys[b];
      if (!numeric_ && text_.Get(a) != text_.Get(b)) return text_.Get(a) < text_.Get(b);
      return a < b;
    });
    uint64_t first = size_, earlier = 0;
    for (size_t i = 1; i < order.size(); ++i) {
      if (same(order[i - 1], order[i]) && order[i] < first) {
        first = order[i];
        earlier = order[i - 1];
      }
    }
    if (first == size_) return Status::OK();
    const std::string id =
        numeric_ ? std::to_string(numbers_[first]) : std::string(text_.Get(first));
    return Status::InvalidArgument("id " + id + " appears twice: " + Where(earlier, files) +
                                   " and " + Where(first, files));
  }

 private:
  struct Run {
    uint64_t first;   // the first id of the run
    LinePlace place;  // where it is; the run's next ids are on the next lines
  };

  std::string Where(uint64_t i, const std::vector<std::string>& files) const {
    const auto run =
        std::prev(std::upper_bound(runs_.begin(), runs_.end(), i,
                                   [](uint64_t value, const Run& r) { return value < r.first; }));
    return files[run->place.file] + ":" + std::to_string(run->place.line + (i - run->first));
  }

  bool numeric_ = true;
  uint64_t size_ = 0;
  std::vector<uint64_t> numbers_;
  IdTable text_;
  std::string unescaped_;
  std::vector<Run> runs_;
};

// Calls on_line(id, fingerprint, place) for every "id<TAB>fingerprint" line of the inputs (empty
// lines are skipped). Errors name the file and line.
Status ForEachFingerprint(
    const FingerprintInput& input,
    const std::function<Status(std::string_view, uint64_t, LinePlace)>& on_line) {
  const std::vector<std::string> files = InputNames(input);
  std::string line;
  for (uint32_t f = 0; f < files.size(); ++f) {
    const std::string& path = files[f];
    auto reader = LineReader::Open(path);
    if (!reader.ok()) return reader.status();
    while (true) {
      auto more = (*reader)->ReadLine(&line, uint64_t{1} << 20);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if ((*reader)->line_number() == 1 && StripByteOrderMark(line).size() != line.size())
        line.erase(0, 3);
      if (line.empty()) continue;
      const size_t tab = line.find('\t');
      const size_t columns = static_cast<size_t>(std::count(line.begin(), line.end(), '\t')) + 1;
      if (columns != 2) {
        return InputError(Status::InvalidArgument("expected 2 tab-separated columns (id, "
                                                  "fingerprint), found " +
                                                  std::to_string(columns)),
                          path, (*reader)->line_number());
      }
      auto fingerprint = ParseFingerprint(std::string_view(line).substr(tab + 1), input.decimal);
      Status status = fingerprint.ok()
                          ? on_line(std::string_view(line).substr(0, tab), *fingerprint,
                                    LinePlace{f, (*reader)->line_number()})
                          : fingerprint.status();
      if (!status.ok()) return InputError(status, path, (*reader)->line_number());
    }
  }
  return Status::OK();
}

void AddFingerprintInput(CLI::App* command, FingerprintInput* input) {
  command->add_option("files", input->files, "Inputs of id<TAB>fingerprint lines (default: stdin)");
  command->add_flag("--decimal", input->decimal,
                    "Fingerprints are unsigned decimal numbers instead of 16 hex digits");
}

std::string JoinBlocks(const TableDesign& design) {
  std::string out;
  for (size_t i = 0; i < design.block_bits.size(); ++i) {
    if (i) out.push_back(',');
    out += std::to_string(design.block_bits[i]);
  }
  return out;
}

// An index answers exactly up to the k its design allows and refuses larger k: a design given by
// hand must be exact at the k asked for (there are no approximate indexes).
Status CheckExact(const TableDesign& design, int k) {
  if (Status valid = design.Validate(); !valid.ok()) {
    return UsageError("--blocks " + JoinBlocks(design) + " --key-blocks " +
                      std::to_string(design.key_blocks) + ": " + valid.message());
  }
  if (design.max_exact_k() >= k) return Status::OK();
  const int blocks = static_cast<int>(design.block_bits.size());
  std::string message = std::to_string(blocks) + " blocks keyed on " +
                        std::to_string(design.key_blocks) +
                        " are exact for k<=" + std::to_string(design.max_exact_k()) +
                        " only, not k=" + std::to_string(k) + ": ";
  if (blocks - k >= 1) {
    message += "use --key-blocks " + std::to_string(blocks - k) + " or fewer, ";
  } else {
    message += "use at least " + std::to_string(k + 1) + " blocks, ";
  }
  return UsageError(message + "or leave --blocks out to let the planner choose");
}

int RunBuild(const IndexFlags& flags) {
  // The index file is checked before anything is read; the index and its ids are written whole or
  // not at all, together.
  OutputSet outputs;
  auto index_file = outputs.Add(flags.index_path, "-o", /*regular_only=*/true);
  if (!index_file.ok()) return ReportError("index build", index_file.status());
  Status checked = outputs.CheckNotInputs(flags.input.files);
  if (!checked.ok()) return ReportError("index build", checked);
  if (!flags.blocks.empty()) {
    Status exact =
        CheckExact(TableDesign{flags.blocks, flags.key_blocks}, flags.k < 0 ? 3 : flags.k);
    if (!exact.ok()) return ReportError("index build", exact);
  }
  BuildIds build_ids;
  std::vector<uint64_t> fingerprints;
  Status status = ForEachFingerprint(
      flags.input, [&](std::string_view id, uint64_t fingerprint, LinePlace place) {
        fingerprints.push_back(fingerprint);
        return build_ids.Add(id, place);
      });
  if (status.ok()) status = build_ids.CheckUnique(InputNames(flags.input));
  if (!status.ok()) return ReportError("index build", status);
  const std::vector<uint64_t> ids = build_ids.IndexIds();
  IndexOptions options;
  options.max_k = flags.k < 0 ? 3 : flags.k;
  options.memory_budget_bytes = flags.memory;
  options.build_threads = flags.threads;
  if (!flags.blocks.empty()) options.design = TableDesign{flags.blocks, flags.key_blocks};
  auto index = BuildPermutedTableIndex(ids, fingerprints, options);
  if (!index.ok()) return ReportError("index build", index.status());
  const std::string ids_path = IdTablePath(flags.index_path);
  OutputFile* ids_file = nullptr;
  if (!build_ids.numeric()) {  // ids that are not numbers go to INDEX.ids, committed with the index
    auto added = outputs.Add(ids_path, "-o", /*regular_only=*/true);
    if (!added.ok()) return ReportError("index build", added.status());
    ids_file = *added;
    status = outputs.CheckNotInputs(flags.input.files);
  }
  if (status.ok()) status = outputs.OpenAll();
  IndexFileOptions file_options;
  file_options.id_names = build_ids.numeric() ? IndexIdNames::kInIndex : IndexIdNames::kIdTable;
  file_options.query_k = static_cast<int>(options.max_k);
  if (status.ok()) status = SaveIndex(**index, *index_file, file_options);
  if (status.ok() && ids_file != nullptr) status = build_ids.text().Save(ids_file);
  if (status.ok()) status = outputs.CommitAll();
  // An older INDEX.ids beside a numeric index would misname it.
  std::error_code removed;
  if (status.ok() && build_ids.numeric()) std::filesystem::remove(ids_path, removed);
  if (!status.ok()) return ReportError("index build", status);
  const IndexStats stats = (*index)->Stats();
  std::fprintf(stderr, "neardup index build: %llu fingerprints, %s -> %s%s\n",
               static_cast<unsigned long long>(stats.size), stats.design.c_str(),
               flags.index_path.c_str(),
               build_ids.numeric() ? "" : (" (ids in " + ids_path + ")").c_str());
  return kExitSuccess;
}

int RunQuery(const IndexFlags& flags) {
  auto info = ReadIndexFileInfo(flags.index_path);
  if (!info.ok()) return ReportError("index query", info.status());
  if (info->kind == IndexFileKind::kSignatures) {
    return ReportError("index query",
                       Status::InvalidArgument(flags.index_path +
                                               ": an index of the accurate method "
                                               "(sketches, not fingerprints): query it with texts, "
                                               "`neardup dedup NEW --against " +
                                               flags.index_path + "`"));
  }
  auto index = LoadIndex(flags.index_path);
  if (!index.ok()) return ReportError("index query", index.status());
  // The default k: the one the index was built for, else (files of earlier builds) the largest its
  // design answers exactly.
  const int k = flags.k >= 0         ? flags.k
                : info->query_k >= 0 ? info->query_k
                                     : (*index)->Stats().max_exact_k;
  // The rows of an index with INDEX.ids (dedup --save-index, or index build of ids that are not
  // canonical numbers) are named by it: without it the rows' numbers would pass for ids. Files of
  // earlier builds of `index build` do not say: their INDEX.ids is read when it is there.
  const std::string ids_path = IdTablePath(flags.index_path);
  const bool ids_required =
      info->id_names == IndexIdNames::kIdTable ||
      (info->id_names == IndexIdNames::kUnrecorded && !info->settings.empty());
  Result<IdTable> names = Status::NotFound(ids_path);
  if (info->id_names != IndexIdNames::kInIndex) names = IdTable::Load(ids_path);
  if (!names.ok() && (ids_required || names.status().code() != Status::Code::kNotFound)) {
    if (names.status().code() == Status::Code::kNotFound) {
      return ReportError("index query",
                         Status::NotFound(ids_path + ": missing: " + flags.index_path +
                                          " names its documents in this ids file (moved or "
                                          "deleted? keep it beside the index)"));
    }
    return ReportError("index query", names.status());
  }
  if (names.ok() && names->size() != (*index)->Stats().size && ids_required) {
    return ReportError("index query",
                       Status::Corruption(ids_path + ": " + std::to_string(names->size()) +
                                          " ids for the " + std::to_string((*index)->Stats().size) +
                                          " fingerprints of " + flags.index_path));
  }
  Output output;
  std::vector<std::string> query_ids;
  std::vector<uint64_t> queries;
  auto flush = [&]() -> Status {
    auto result = (*index)->QueryBatch(queries, k, flags.threads);
    if (!result.ok()) return result.status();
    std::string& out = output.buffer();
    for (size_t q = 0; q < queries.size(); ++q) {
      for (const Match& match : result->MatchesOf(q)) {
        out.append(query_ids[q]);
        out.push_back('\t');
        if (names.ok() && names->Has(match.id)) {
          AppendTsvField(names->Get(match.id), &out);
        } else {
          out.append(std::to_string(match.id));
        }
        out.push_back('\t');
        out.append(std::to_string(match.distance));
        out.push_back('\n');
        NEARDUP_RETURN_IF_ERROR(output.MaybeFlush());
      }
    }
    query_ids.clear();
    queries.clear();
    return Status::OK();
  };
  Status status =
      ForEachFingerprint(flags.input, [&](std::string_view id, uint64_t fingerprint, LinePlace) {
        query_ids.emplace_back(id);
        queries.push_back(fingerprint);
        return queries.size() >= (1 << 16) ? flush() : Status::OK();
      });
  if (status.ok()) status = flush();
  return FinishCommand("index query", &output, status);
}

int RunPairs(const IndexFlags& flags) {
  std::vector<std::string> ids;
  std::vector<uint64_t> fingerprints;
  Status status =
      ForEachFingerprint(flags.input, [&](std::string_view id, uint64_t fingerprint, LinePlace) {
        ids.emplace_back(id);
        fingerprints.push_back(fingerprint);
        return Status::OK();
      });
  if (!status.ok()) return ReportError("index pairs", status);
  JoinOptions options;
  options.threads = flags.threads;
  Output output;
  status = ForEachPair(fingerprints, flags.k < 0 ? 3 : flags.k, options, [&](const Pair& pair) {
    std::string& out = output.buffer();
    out.append(ids[pair.first]);
    out.push_back('\t');
    out.append(ids[pair.second]);
    out.push_back('\t');
    out.append(std::to_string(pair.distance));
    out.push_back('\n');
    return output.MaybeFlush();
  });
  return FinishCommand("index pairs", &output, status);
}

// The method of an index file and its settings line ("unknown" when the file records none).
std::string DescribeMethod(const IndexFileInfo& info) {
  std::string out = "format: version " + std::to_string(info.version) + "\n";
  if (info.kind == IndexFileKind::kOnlineIndex) {
    // The settings line starts with the method's name ("method=accurate ...").
    const size_t start = info.settings.find("method=");
    const std::string method =
        start == std::string::npos
            ? std::string("?")
            : info.settings.substr(start + 7, info.settings.find(' ', start) - start - 7);
    return out +
           "kind: online index (a store's snapshot, or OnlineIndex::Save)\nmethod: " + method +
           "\nsettings: " + info.settings + "\n";
  }
  if (info.kind == IndexFileKind::kSignatures)
    return out + "method: accurate\nsettings: " + info.settings + "\n";
  out += "method: simhash\nsettings: ";
  return out +
         (info.settings.empty() ? "unknown (made from fingerprints, or of format version 1)"
                                : info.settings) +
         "\n";
}

int RunInfo(const IndexFlags& flags) {
  auto info = ReadIndexFileInfo(flags.index_path);
  if (!info.ok()) return ReportError("index info", info.status());
  Output output;
  output.buffer() += DescribeMethod(*info);
  if (info->kind == IndexFileKind::kOnlineIndex) {
    output.buffer() +=
        Format("rows: %llu (inserts, removed documents included)\nfile: %llu bytes\n",
               static_cast<unsigned long long>(info->documents),
               static_cast<unsigned long long>(info->file_bytes));
    return FinishCommand("index info", &output);
  }
  if (info->kind == IndexFileKind::kSignatures) {
    auto set = LoadSignatureIndex(flags.index_path);
    if (!set.ok()) return ReportError("index info", set.status());
    output.buffer() +=
        Format("documents: %llu\nsignature: %zu-byte sketch, %zu band keys\nfile: %llu bytes\n",
               static_cast<unsigned long long>(set->size()), set->sketch_bytes, set->bands,
               static_cast<unsigned long long>(info->file_bytes));
    return FinishCommand("index info", &output);
  }
  LoadOptions load;
  load.map_file = true;
  auto index = LoadIndex(flags.index_path, load);
  if (!index.ok()) return ReportError("index info", index.status());
  const IndexStats stats = (*index)->Stats();
  const std::string ids_path = IdTablePath(flags.index_path);
  std::string& out = output.buffer();
  switch (info->id_names) {
    case IndexIdNames::kInIndex:
      out += "ids: in the index (numbers)\n";
      break;
    case IndexIdNames::kIdTable:
      out += "ids: in the ids file " + ids_path + " (required by queries)\n";
      break;
    case IndexIdNames::kUnrecorded:
      out += info->settings.empty()
                 ? "ids: not recorded (an older file): the ids file " + ids_path +
                       " when it is there, else the numbers in the index\n"
                 : "ids: in the ids file " + ids_path + " (required by queries)\n";
      break;
  }
  if (info->query_k >= 0) {
    out += Format("built for k: %d (the default of index query)\n", info->query_k);
  } else {
    out += Format("built for k: not recorded (index query defaults to %d, the design's largest)\n",
                  stats.max_exact_k);
  }
  out += Format("design: %s\nfingerprints: %llu\n", stats.design.c_str(),
                static_cast<unsigned long long>(stats.size));
  // Small indexes are mostly fixed overhead (the id map's first allocation, the directories): a
  // figure per fingerprint would mislead there.
  constexpr uint64_t kPerFingerprintFrom = 100000;
  if (stats.size >= kPerFingerprintFrom) {
    out += Format("memory: %llu bytes (%.1f per fingerprint)\n",
                  static_cast<unsigned long long>(stats.memory_bytes),
                  static_cast<double>(stats.memory_bytes) / static_cast<double>(stats.size));
  } else {
    out += Format("memory: %llu bytes (mostly fixed overhead under %llu fingerprints)\n",
                  static_cast<unsigned long long>(stats.memory_bytes),
                  static_cast<unsigned long long>(kPerFingerprintFrom));
  }
  return FinishCommand("index info", &output);
}

void AddK(CLI::App* command, IndexFlags* flags, const std::string& default_text) {
  command->add_option("-k", flags->k, "Largest Hamming distance reported (" + default_text + ")")
      ->check(CLI::Range(0, 7));
}

void AddThreads(CLI::App* command, IndexFlags* flags) {
  command->add_option("--threads", flags->threads, "Threads, 1..1024 (0: one per core)")
      ->check(ThreadsRange())
      ->capture_default_str();
}

}  // namespace

void AddIndexCommand(CLI::App* app, int* exit_code) {
  auto flags = std::make_shared<IndexFlags>();
  auto store_flags = std::make_shared<StoreFlags>();
  CLI::App* index = app->add_subcommand(
      "index",
      "Index files of 64-bit fingerprints (build, query, pairs, info) and durable stores of "
      "documents (add, remove, query, info)");
  index->require_subcommand(1);
  index->footer(
      "Input lines are id<TAB>fingerprint, fingerprints as 16 hex digits (as `neardup hash` "
      "writes\n"
      "them) or unsigned decimal numbers with --decimal. Ids that are all unsigned 64-bit integers "
      "are\n"
      "stored in the index when written canonically (no leading zeros); other ids (`neardup hash a "
      "b`\n"
      "names lines path:line; 007 stays 007) are kept in INDEX.ids beside it, which the index "
      "records:\n"
      "`index query` prints them, and refuses to answer without the file.\n"
      "An id may appear once (a repeat is an error naming both lines).\n"
      "These index files hold SimHash fingerprints; index files of the accurate method (sketches, "
      "the\n"
      "default of dedup) come from `neardup dedup --save-index` and are read by `dedup "
      "--against`;\n"
      "`index info` shows the method and settings of both.\n"
      "A store is a directory: `index add DIR` creates it and adds documents (texts), `index query "
      "DIR`\n"
      "and `index info DIR` read it, `index remove DIR` takes documents out (doc/store.md).\n"
      "Example:\n"
      "  neardup hash docs.txt > docs.tsv && neardup index build docs.tsv -o docs.ndx\n"
      "  neardup index query docs.ndx new.tsv");

  CLI::App* build = index->add_subcommand("build", "Build an index file from fingerprints");
  build->footer("Example:\n  neardup index build docs.tsv -o docs.ndx -k 3 --memory 8G");
  AddFingerprintInput(build, &flags->input);
  build->add_option("-o,--output", flags->index_path, "Index file to write")->required();
  AddK(build, flags.get(), "the planner designs for it; default 3");
  build
      ->add_option("--memory", flags->memory,
                   "Memory budget for the planner, e.g. 8G (default: none)")
      ->transform(SizeValidator());
  build
      ->add_option(
          "--blocks", flags->blocks,
          "Explicit design: block sizes, e.g. 13,13,13,13,12; exact only when blocks - key blocks "
          ">= k (others are refused)")
      ->delimiter(',')
      ->allow_extra_args(false);
  build->add_option("--key-blocks", flags->key_blocks, "Explicit design: key blocks per table")
      ->needs("--blocks");
  AddThreads(build, flags.get());
  build->callback([flags, exit_code] { *exit_code = RunBuild(*flags); });

  CLI::App* query =
      index->add_subcommand("query", "Find every indexed fingerprint within k of each query");
  query->footer(
      "Index file: inputs of id<TAB>fingerprint; output query_id<TAB>match_id<TAB>distance, "
      "matches of\n"
      "a query by distance then id.\n"
      "Store directory: inputs of documents (plain text lines, or JSONL with --jsonl); output one "
      "JSON\n"
      "line per document, {\"id\":..,\"matches\":[{\"id\":..,\"score\":..}]}; nothing is stored.\n"
      "Example:\n  neardup index query docs.ndx queries.tsv -k 3\n"
      "  neardup index query posts.store new.jsonl --jsonl");
  query->add_option("index", flags->index_path, "Index file, or store directory")->required();
  AddFingerprintInput(query, &flags->input);
  AddK(query, flags.get(),
       "default: the k the index was built for (files of earlier builds: the largest it answers "
       "exactly); a store's own");
  AddThreads(query, flags.get());
  const size_t before_store = query->get_options().size();
  AddStoreQueryFlags(query, store_flags.get());
  const std::vector<CLI::Option*> all_options = query->get_options();
  const std::vector<CLI::Option*> store_options(
      all_options.begin() + static_cast<std::ptrdiff_t>(before_store), all_options.end());
  query->callback([flags, store_flags, store_options, exit_code] {
    if (flags->index_path.find("://") != std::string::npos) {
      // A Redis index's location: answered by neardup serve --store, not here.
      *exit_code = ReportError(
          "index query", UsageError(flags->index_path + ": index query takes an index file or a "
                                                        "store folder; a Redis index is queried "
                                                        "through neardup serve --store"));
      return;
    }
    if (!IsDirectory(flags->index_path)) {
      // The options of store queries mean nothing to an index file: refused, not ignored.
      std::string given;
      for (const CLI::Option* option : store_options) {
        if (option->count() == 0) continue;
        given += (given.empty() ? "" : ", ") + option->get_name();
      }
      if (!given.empty()) {
        *exit_code =
            ReportError("index query", UsageError(given +
                                                  (given.find(',') == std::string::npos
                                                       ? " is for stores (a directory), not "
                                                       : " are for stores (a directory), not ") +
                                                  "index files such as " + flags->index_path));
        return;
      }
      *exit_code = RunQuery(*flags);
      return;
    }
    if (flags->input.decimal) {
      *exit_code =
          ReportError("index query", UsageError("--decimal is for index files, not stores"));
      return;
    }
    store_flags->input.files = flags->input.files;
    if (flags->k >= 0) store_flags->k = flags->k;
    *exit_code = RunStoreQuery(flags->index_path, *store_flags);
  });

  CLI::App* pairs =
      index->add_subcommand("pairs", "Every pair of input fingerprints within k, once");
  pairs->footer(
      "Output: id_a<TAB>id_b<TAB>distance, id_a from the earlier line; pairs in input order.\n"
      "Example:\n  neardup index pairs docs.tsv -k 3");
  AddFingerprintInput(pairs, &flags->input);
  AddK(pairs, flags.get(), "default 3");
  AddThreads(pairs, flags.get());
  pairs->callback([flags, exit_code] { *exit_code = RunPairs(*flags); });

  CLI::App* info = index->add_subcommand(
      "info", "Print an index file's method, settings, design, size and memory, or a store's");
  info->footer(
      "A store's info: its settings, documents, rows handed out, memory of its index and size on "
      "disk. A Redis index's (redis://HOST:PORT/PREFIX, redis-cluster://HOST:PORT,.../PREFIX): "
      "its layout, settings, documents and the servers' used_memory.\n"
      "Example:\n  neardup index info docs.ndx\n  neardup index info posts.store\n"
      "  neardup index info redis-cluster://127.0.0.1:7000/posts");
  info->add_option("index", flags->index_path, "Index file, store directory or Redis index")
      ->required();
  auto redis = std::make_shared<RedisFlags>();
  AddRedisFlags(info, redis.get());
  info->callback([info, flags, redis, exit_code] {
    const std::string& path = flags->index_path;
    if (path.starts_with("redis://") || path.starts_with("redis-cluster://")) {
      *exit_code = RunRedisInfo(path, *redis);
    } else if (RedisFlagsGiven(*info)) {
      *exit_code = ReportError(
          "index info",
          UsageError("the --redis-* options go with redis://... or redis-cluster://..."));
    } else {
      *exit_code = IsDirectory(path) ? RunStoreInfo(path) : RunInfo(*flags);
    }
  });

  AddStoreCommands(index, exit_code);
}

}  // namespace neardup::cli
