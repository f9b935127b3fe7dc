// neardup index build|query|pairs|info: the exact Hamming index for users who already have
// fingerprints (from `neardup hash` or another SimHash library).
#include <charconv>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "neardup/index.h"
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

Result<uint64_t> ParseId(std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return Status::InvalidArgument(
        "id '" + std::string(text.substr(0, 40)) +
        "' is not an unsigned 64-bit integer (an index stores numeric ids; "
        "`neardup hash` numbers lines when the input has no ids)");
  }
  return value;
}

// Calls on_line(id, fingerprint) for every "id<TAB>fingerprint" line of the inputs (empty lines are
// skipped). Errors name the file and line.
Status ForEachFingerprint(const FingerprintInput& input,
                          const std::function<Status(std::string_view, uint64_t)>& on_line) {
  std::vector<std::string> files = input.files;
  if (files.empty()) files.push_back("-");
  std::string line;
  for (const std::string& path : files) {
    auto reader = LineReader::Open(path);
    if (!reader.ok()) return reader.status();
    while (true) {
      auto more = (*reader)->ReadLine(&line, uint64_t{1} << 20);
      if (!more.ok()) return more.status();
      if (!*more) break;
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
                          ? on_line(std::string_view(line).substr(0, tab), *fingerprint)
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

int RunBuild(const IndexFlags& flags) {
  // The index file is checked before anything is read, written whole or not at all.
  OutputSet outputs;
  auto index_file = outputs.Add(flags.index_path, "-o", /*regular_only=*/true);
  if (!index_file.ok()) return ReportError("index build", index_file.status());
  Status checked = outputs.CheckNotInputs(flags.input.files);
  if (!checked.ok()) return ReportError("index build", checked);
  std::vector<uint64_t> ids, fingerprints;
  Status status = ForEachFingerprint(flags.input, [&](std::string_view id, uint64_t fingerprint) {
    auto parsed = ParseId(id);
    if (!parsed.ok()) return parsed.status();
    ids.push_back(*parsed);
    fingerprints.push_back(fingerprint);
    return Status::OK();
  });
  if (!status.ok()) return ReportError("index build", status);
  IndexOptions options;
  options.max_k = flags.k < 0 ? 3 : flags.k;
  options.memory_budget_bytes = flags.memory;
  options.build_threads = flags.threads;
  if (!flags.blocks.empty()) options.design = TableDesign{flags.blocks, flags.key_blocks};
  auto index = BuildPermutedTableIndex(ids, fingerprints, options);
  if (!index.ok()) return ReportError("index build", index.status());
  status = outputs.OpenAll();
  if (status.ok()) status = SaveIndex(**index, *index_file);
  if (status.ok()) status = outputs.CommitAll();
  if (!status.ok()) return ReportError("index build", status);
  const IndexStats stats = (*index)->Stats();
  std::fprintf(stderr, "neardup index build: %llu fingerprints, %s -> %s\n",
               static_cast<unsigned long long>(stats.size), stats.design.c_str(),
               flags.index_path.c_str());
  return kExitSuccess;
}

int RunQuery(const IndexFlags& flags) {
  auto index = LoadIndex(flags.index_path);
  if (!index.ok()) return ReportError("index query", index.status());
  const int k = flags.k < 0 ? (*index)->Stats().max_exact_k : flags.k;
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
        out.append(std::to_string(match.id));
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
  Status status = ForEachFingerprint(flags.input, [&](std::string_view id, uint64_t fingerprint) {
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
  Status status = ForEachFingerprint(flags.input, [&](std::string_view id, uint64_t fingerprint) {
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

int RunInfo(const IndexFlags& flags) {
  LoadOptions load;
  load.map_file = true;
  auto index = LoadIndex(flags.index_path, load);
  if (!index.ok()) return ReportError("index info", index.status());
  const IndexStats stats = (*index)->Stats();
  Output output;
  output.buffer() += Format(
      "design: %s\nfingerprints: %llu\nmemory: %llu bytes (%.1f per fingerprint)\n",
      stats.design.c_str(), static_cast<unsigned long long>(stats.size),
      static_cast<unsigned long long>(stats.memory_bytes),
      stats.size ? static_cast<double>(stats.memory_bytes) / static_cast<double>(stats.size) : 0.0);
  return FinishCommand("index info", &output);
}

void AddK(CLI::App* command, IndexFlags* flags, const std::string& default_text) {
  command->add_option("-k", flags->k, "Largest Hamming distance reported (" + default_text + ")")
      ->check(CLI::Range(0, 7));
}

void AddThreads(CLI::App* command, IndexFlags* flags) {
  command->add_option("--threads", flags->threads, "Threads (0: one per core)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
}

}  // namespace

void AddIndexCommand(CLI::App* app, int* exit_code) {
  auto flags = std::make_shared<IndexFlags>();
  CLI::App* index =
      app->add_subcommand("index", "Exact index of 64-bit fingerprints: build, query, pairs, info");
  index->require_subcommand(1);
  index->footer(
      "Input lines are id<TAB>fingerprint, fingerprints as 16 hex digits (as `neardup hash` "
      "writes\n"
      "them) or unsigned decimal numbers with --decimal. Index ids are unsigned 64-bit integers.\n"
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
  build->add_option("--blocks", flags->blocks, "Explicit design: block sizes, e.g. 13,13,13,13,12")
      ->delimiter(',');
  build->add_option("--key-blocks", flags->key_blocks, "Explicit design: key blocks per table")
      ->needs("--blocks");
  AddThreads(build, flags.get());
  build->callback([flags, exit_code] { *exit_code = RunBuild(*flags); });

  CLI::App* query =
      index->add_subcommand("query", "Find every indexed fingerprint within k of each query");
  query->footer(
      "Output: query_id<TAB>match_id<TAB>distance, matches of a query by distance then id.\n"
      "Example:\n  neardup index query docs.ndx queries.tsv -k 3");
  query->add_option("index", flags->index_path, "Index file")->required();
  AddFingerprintInput(query, &flags->input);
  AddK(query, flags.get(), "default: the largest the index answers exactly");
  AddThreads(query, flags.get());
  query->callback([flags, exit_code] { *exit_code = RunQuery(*flags); });

  CLI::App* pairs =
      index->add_subcommand("pairs", "Every pair of input fingerprints within k, once");
  pairs->footer(
      "Output: id_a<TAB>id_b<TAB>distance, id_a from the earlier line; pairs in input order.\n"
      "Example:\n  neardup index pairs docs.tsv -k 3");
  AddFingerprintInput(pairs, &flags->input);
  AddK(pairs, flags.get(), "default 3");
  AddThreads(pairs, flags.get());
  pairs->callback([flags, exit_code] { *exit_code = RunPairs(*flags); });

  CLI::App* info = index->add_subcommand("info", "Print an index file's design, size and memory");
  info->footer("Example:\n  neardup index info docs.ndx");
  info->add_option("index", flags->index_path, "Index file")->required();
  info->callback([flags, exit_code] { *exit_code = RunInfo(*flags); });
}

}  // namespace neardup::cli
