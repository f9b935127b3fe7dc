// neardup dedup: near-duplicate removal for whole corpora.
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/redis_flags.h"
#include "neardup/dedup.h"
#include "neardup/method.h"

namespace neardup::cli {
namespace {

std::atomic<bool> interrupted{false};
std::atomic<int> interrupting_signal{0};

void OnSignal(int signal) {
  interrupting_signal.store(signal);
  interrupted.store(true);
}

struct DedupFlags {
  std::vector<std::string> inputs;
  std::string format = "auto";
  bool jsonl = false;
  std::string id_field = "id", text_field = "text";
  uint64_t max_line_bytes = uint64_t{64} << 20;
  FingerprintFlags fingerprint;
  std::string method = "accurate";
  double threshold = 0.8;
  int k = 3;
  std::string keep = "first";
  std::string priority_field;
  bool id_field_given = false;
  bool unique_ids = false;
  std::string on_error = "fail";
  std::string empty = "keep";
  int threads = 0;
  uint64_t memory = 0;
  std::string tmp_dir;
  double boundary_sigmas = 3;
  bool all_pairs = false;
  std::string kept, dups, clusters, pairs, report;
  std::vector<std::string> against;
  bool against_settings = false;
  std::string save_index;
  bool quiet = false;
  std::string store;
  std::string shard;  // "I/N"
  std::string shard_output;
  std::vector<std::string> merge;
  RedisFlags redis;
};

// "1 pair", "2 pairs": n and the noun, plural unless n is 1.
std::string Counted(uint64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) {
    bytes /= 1000;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof(text), u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return text;
}

std::string HumanCount(uint64_t n) {
  char text[32];
  if (n >= 10'000'000)
    std::snprintf(text, sizeof(text), "%.1fM", static_cast<double>(n) / 1e6);
  else if (n >= 10'000)
    std::snprintf(text, sizeof(text), "%.1fk", static_cast<double>(n) / 1e3);
  else
    std::snprintf(text, sizeof(text), "%llu", static_cast<unsigned long long>(n));
  return text;
}

// One line, redrawn in place ten times a second: [#####.....] 45%  1.2M docs  150.3 MB/s  ETA 12s
// (the join, which has no input position, shows its documents and how long it has run).
void DrawProgress(const DedupProgress& p) {
  const double rate = p.seconds > 0 ? static_cast<double>(p.bytes) / p.seconds : 0;
  std::string line = "\r" + p.stage + " ";
  if (p.stage == "join") {
    char elapsed[32];
    std::snprintf(elapsed, sizeof(elapsed), "  %.1fs", p.seconds);
    line += HumanCount(p.documents) + " docs" + elapsed;
  } else if (p.total_bytes > 0) {
    const double fraction =
        std::min(1.0, static_cast<double>(p.bytes) / static_cast<double>(p.total_bytes));
    const int filled = static_cast<int>(fraction * 30);
    line += "[" + std::string(filled, '#') + std::string(30 - filled, '.') + "] ";
    char percent[16];
    std::snprintf(percent, sizeof(percent), "%3.0f%% ", fraction * 100);
    line += percent;
    if (rate > 0 && fraction < 1) {
      char eta[32];
      std::snprintf(eta, sizeof(eta), " ETA %.0fs",
                    (static_cast<double>(p.total_bytes - p.bytes)) / rate);
      line += HumanCount(p.documents) + " docs  " + HumanBytes(rate) + "/s" + eta;
    } else {
      line += HumanCount(p.documents) + " docs  " + HumanBytes(rate) + "/s";
    }
  } else {
    line += HumanCount(p.documents) + " docs  " + HumanBytes(rate) + "/s";
  }
  line += "\x1b[K";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void PrintSummary(const DedupReport& r, const DedupFlags& flags) {
  std::string s;
  auto line = [&](const std::string& text) { s += text + "\n"; };
  const double mb_per_s = r.seconds > 0 ? static_cast<double>(r.bytes) / 1e6 / r.seconds : 0;
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer), "documents   %llu (%s) in %.2f s, %.1f MB/s on %d threads",
                static_cast<unsigned long long>(r.documents),
                HumanBytes(static_cast<double>(r.bytes)).c_str(), r.seconds, mb_per_s, r.threads);
  line(buffer);
  std::snprintf(buffer, sizeof(buffer), "kept        %llu",
                static_cast<unsigned long long>(r.kept));
  line(buffer);
  std::snprintf(
      buffer, sizeof(buffer), "duplicates  %llu (%.1f%%)%s",
      static_cast<unsigned long long>(r.duplicates),
      r.documents ? 100.0 * static_cast<double>(r.duplicates) / static_cast<double>(r.documents)
                  : 0.0,
      r.duplicates_of_index
          ? (", " + std::to_string(r.duplicates_of_index) + " of them of the earlier index").c_str()
          : "");
  line(buffer);
  // The method and threshold the run used: with --against-settings they are the index's, not the
  // flags'.
  MethodOptions used;
  used.method = flags.method == "accurate" ? DedupMethod::kAccurate : DedupMethod::kSimhash;
  used.threshold = flags.threshold;
  used.k = flags.k;
  if (auto parsed = ParseSettingsLine(r.settings); parsed.ok()) used = *parsed;
  const std::string clusters =
      "clusters    " + std::to_string(r.clusters) + " of 2 or more documents";
  if (used.method == DedupMethod::kAccurate) {
    // Candidates already in one cluster may not have been verified: then the pairs found are not
    // all the pairs.
    std::snprintf(buffer, sizeof(buffer),
                  r.pairs_complete ? "%s; %s with estimated Jaccard >= %g (%s verified)"
                                   : "%s, joined by %s with estimated Jaccard >= %g (%s verified; "
                                     "--pairs finds every pair)",
                  clusters.c_str(), Counted(r.pairs, "pair").c_str(), used.threshold,
                  Counted(r.candidates, "candidate").c_str());
  } else {
    std::snprintf(buffer, sizeof(buffer), "%s; %s within k=%d", clusters.c_str(),
                  Counted(r.pairs, "pair").c_str(), used.k);
  }
  line(buffer);
  if (r.empty_documents) {
    std::snprintf(
        buffer, sizeof(buffer), "no features %llu (blank or symbols only: %s, never matched)",
        static_cast<unsigned long long>(r.empty_documents), r.empty_dropped ? "dropped" : "kept");
    line(buffer);
  }
  if (r.skipped) {
    std::snprintf(buffer, sizeof(buffer), "skipped     %llu bad document%s, first: %s",
                  static_cast<unsigned long long>(r.skipped), r.skipped == 1 ? "" : "s",
                  r.first_errors.empty() ? "" : r.first_errors[0].c_str());
    line(buffer);
  }
  if (r.cluster_size_histogram.size() > 1) {
    std::string h = "cluster sizes";
    for (size_t i = 1; i < r.cluster_size_histogram.size(); ++i) {
      if (r.cluster_size_histogram[i] == 0) continue;
      const uint64_t low = uint64_t{1} << i, high = (uint64_t{2} << i) - 1;
      h += "  " + std::to_string(low) + (high > low ? "-" + std::to_string(high) : "") + ": " +
           std::to_string(r.cluster_size_histogram[i]);
    }
    line(h);
  }
  std::string stages = "stages     ";
  for (const auto& st : r.stages) {
    std::snprintf(buffer, sizeof(buffer), " %s %.2f s", st.stage.c_str(), st.seconds);
    stages += buffer;
    if (st.megabytes_per_second > 0) {
      std::snprintf(buffer, sizeof(buffer), " (%.1f MB/s)", st.megabytes_per_second);
      stages += buffer;
    }
    stages += ";";
  }
  stages.pop_back();
  line(stages);
  std::fputs(s.c_str(), stderr);
}

// The feature flags of a method's default features (neardup/method.h: DefaultFeatures).
FingerprintFlags MethodFeatureFlags(DedupMethod method) {
  const FingerprintOptions features = DefaultFeatures(method);
  FingerprintFlags f;
  f.mode = std::string(FeatureModeName(features.mode));
  f.shingle_unit = std::string(ShingleUnitName(features.shingle_unit));
  f.shingle_size = features.shingle_size;
  f.weighting = std::string(FeatureWeightingName(features.weighting));
  f.fold = features.fold_traditional ? "t2s" : "none";
  return f;
}

// The feature flags start at the accurate method's (so that --help shows them); with --method
// simhash the flags the user did not give take the classic method's values instead.
void ApplyMethodDefaults(const CLI::App& command, DedupFlags* flags) {
  if (flags->method != "simhash") return;
  const FingerprintFlags classic = MethodFeatureFlags(DedupMethod::kSimhash);
  FingerprintFlags& f = flags->fingerprint;
  if (command.count("--mode") == 0) f.mode = classic.mode;
  if (command.count("--shingle-unit") == 0) f.shingle_unit = classic.shingle_unit;
  if (command.count("--shingle-size") == 0) f.shingle_size = classic.shingle_size;
  if (command.count("--weighting") == 0) f.weighting = classic.weighting;
  if (command.count("--fold") == 0) f.fold = classic.fold;
}

int RunDedupCommand(const DedupFlags& flags) {
  DedupOptions options;
  options.inputs = flags.inputs;
  auto format = ParseInputFormat(flags.jsonl ? "jsonl" : flags.format);
  if (!format.ok()) return ReportError("dedup", format.status());
  options.format = *format;
  options.id_field = flags.id_field == "none" ? "" : flags.id_field;
  options.require_id_field = flags.id_field_given && !options.id_field.empty();
  options.unique_ids = flags.unique_ids;
  options.text_field = flags.text_field;
  options.max_line_bytes = flags.max_line_bytes;
  options.memory_limit = flags.memory;
  options.tmp_dir = flags.tmp_dir;
  options.boundary_sigmas = flags.boundary_sigmas;
  auto fingerprint = ToOptions(flags.fingerprint);
  if (!fingerprint.ok()) return ReportError("dedup", fingerprint.status());
  options.similarity.features = *fingerprint;
  auto method = ParseDedupMethod(flags.method);
  if (!method.ok()) return ReportError("dedup", method.status());
  options.similarity.method = *method;
  options.similarity.threshold = flags.threshold;
  options.similarity.k = flags.k;
  if (!flags.priority_field.empty()) {
    options.keep = KeepRule::kPriority;
    options.priority_field = flags.priority_field;
  } else {
    auto keep = ParseKeepRule(flags.keep);
    if (!keep.ok()) return ReportError("dedup", keep.status());
    options.keep = *keep;
  }
  options.on_error = flags.on_error == "skip" ? ErrorPolicy::kSkip : ErrorPolicy::kFail;
  options.empty = flags.empty == "drop"   ? EmptyPolicy::kDrop
                  : flags.empty == "fail" ? EmptyPolicy::kFail
                                          : EmptyPolicy::kKeep;
  options.threads = flags.threads;
  options.kept_path = flags.kept;
  options.dups_path = flags.dups;
  options.clusters_path = flags.clusters;
  options.pairs_path = flags.pairs;
  options.all_pairs = flags.all_pairs;
  options.report_path = flags.report;
  options.against_indexes = flags.against;
  options.against_settings = flags.against_settings;
  options.save_index = flags.save_index;
  options.store = flags.store;
  options.shard_output = flags.shard_output;
  options.merge_parts = flags.merge;
  if (!flags.shard.empty()) {
    // Decimal digits only on both sides (no sign, space or leading zero), N at most 100000.
    auto number = [](std::string_view digits, int* value) {
      if (digits.empty() || digits.size() > 6 || (digits.size() > 1 && digits[0] == '0'))
        return false;
      const auto [end, error] =
          std::from_chars(digits.data(), digits.data() + digits.size(), *value);
      return error == std::errc() && end == digits.data() + digits.size();
    };
    const std::string_view shard = flags.shard;
    const size_t slash = shard.find('/');
    int index = -1, count = 0;
    if (slash == std::string_view::npos || !number(shard.substr(0, slash), &index) ||
        !number(shard.substr(slash + 1), &count) || count < 1 || count > 100000 || index >= count) {
      return ReportError("dedup", UsageError("--shard " + flags.shard +
                                             ": expected I/N with 0 <= I < N <= 100000, e.g. "
                                             "--shard 0/4"));
    }
    options.shard_index = index;
    options.shard_count = count;
  }
  auto redis = ToRedisOptions(flags.redis);
  if (!redis.ok()) return ReportError("dedup", redis.status());
  options.redis = *redis;
  options.cancel = &interrupted;
  const bool bar = !flags.quiet && ::isatty(2);
  if (bar) options.on_progress = DrawProgress;

  // Without SA_RESTART, so that a read blocked on a pipe returns and the job sees the flag.
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  struct sigaction previous_int, previous_term, previous_hup;
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
  sigaction(SIGHUP, &action, &previous_hup);
  auto report = RunDedup(options);
  if (bar) std::fputs("\r\x1b[K", stderr);
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
  sigaction(SIGHUP, &previous_hup, nullptr);
  if (!report.ok()) {
    if (report.status().code() == Status::Code::kCancelled) {
      // Every temporary file and folder is gone; the exit status is the shell's for the signal.
      const int signal = interrupting_signal.load() != 0 ? interrupting_signal.load() : SIGINT;
      std::fprintf(stderr, "neardup dedup: interrupted by %s; no output was written%s\n",
                   signal == SIGTERM  ? "SIGTERM"
                   : signal == SIGHUP ? "SIGHUP"
                                      : "SIGINT",
                   flags.kept == "-" || flags.dups == "-" || flags.clusters == "-" ||
                           flags.pairs == "-" || flags.report == "-"
                       ? " (but for what standard output had already received)"
                       : "");
      return 128 + signal;
    }
    return ReportError("dedup", report.status());
  }
  for (const std::string& warning : report->warnings) {
    std::fprintf(stderr, "neardup dedup: warning: %s\n", warning.c_str());
  }
  if (!flags.quiet) PrintSummary(*report, flags);
  return kExitSuccess;
}

}  // namespace

void AddDedupCommand(CLI::App* app, int* exit_code) {
  auto flags = std::make_shared<DedupFlags>();
  CLI::App* command = app->add_subcommand("dedup", "Remove near-duplicates from whole corpora");
  command->footer(
      "Reads every document, sketches them on all cores, finds the near-duplicate pairs, keeps "
      "one\n"
      "document per cluster and writes the outputs asked for. Outputs appear only when the job "
      "succeeds.\n"
      "Method accurate (default): pairs whose character 5-gram sets have estimated Jaccard "
      "similarity\n"
      ">= --threshold (LSH band candidates verified by a 132-byte sketch; Traditional Chinese "
      "folded to\n"
      "Simplified). Method simhash: pairs whose fingerprints are within -k bits (its features "
      "default to\n"
      "word 3-grams, each occurrence counted, no folding). The score column of\n"
      "--dups and --pairs is the estimated Jaccard (accurate) or the Hamming distance (simhash).\n"
      "Ids: strings, or numbers as written; ids that repeat are counted with a warning "
      "(--unique-ids:\n"
      "an error). A .json name is read as plain text unless --format jsonl is given.\n"
      "Index files (--save-index, --against) hold the kept documents' signatures under the run's "
      "method\n"
      "(accurate: sketches and band keys; simhash: fingerprints) and record its settings; "
      "--against\n"
      "refuses an index built with other settings, naming the difference, unless "
      "--against-settings\n"
      "takes the index's settings for the run. Ids are kept in INDEX.ids beside the index.\n"
      "Examples:\n"
      "  neardup dedup crawl/ -o kept.jsonl --dups dups.tsv --report report.json\n"
      "  neardup dedup posts.txt.zst -o kept.txt --keep longest --threshold 0.7 --on-error skip\n"
      "  neardup dedup posts.txt --method simhash -k 3 -o kept.txt\n"
      "  neardup dedup today.jsonl --against yesterday.idx --save-index today.idx -o new.jsonl\n"
      "  neardup dedup crawl/ --store redis-cluster://10.0.0.5:7000/crawl1 --shard 0/4 "
      "--shard-output part0\n"
      "  neardup dedup crawl/ --merge part0,part1,part2,part3 -o kept.jsonl   (doc/dedup.md)");
  command->add_option("inputs", flags->inputs, "Files, folders (recursive) or '-' for stdin")
      ->required();
  command->add_option(
      "-o,--output", flags->kept,
      "KEPT: the kept documents' lines, in input order ('-': standard output, one output at most)");
  command->add_option("--dups", flags->dups,
                      "DUPS.tsv: dup_id<TAB>kept_id<TAB>score, the similarity of the duplicate "
                      "to the document kept for its cluster (which it may reach through others: "
                      "then below the threshold)");
  command->add_option("--clusters", flags->clusters,
                      "CLUSTERS.jsonl: one cluster of 2+ documents a line");
  command->add_option("--pairs", flags->pairs,
                      "PAIRS.tsv: id_a<TAB>id_b<TAB>score, every near-duplicate pair");
  command->add_option("--report", flags->report, "REPORT.json: the summary and timings");
  command
      ->add_option(
          "--format", flags->format,
          "Input format: auto (.jsonl/.ndjson names, any case, are JSONL; .json is plain text), "
          "plain, jsonl")
      ->check(CLI::IsMember({"auto", "plain", "jsonl"}))
      ->capture_default_str();
  command->add_flag("--jsonl", flags->jsonl, "Same as --format jsonl");
  command
      ->add_option(
          "--id-field", flags->id_field,
          "JSONL id field (dotted path; when given, some document must have it); a document "
          "without one is named by its line (FILE:LINE with several inputs); none: every "
          "document by its line")
      ->capture_default_str();
  command->add_flag(
      "--unique-ids", flags->unique_ids,
      "Refuse ids that repeat, naming both places (default: count them with a warning)");
  command->add_option("--text-field", flags->text_field, "JSONL text field (dotted path)")
      ->capture_default_str();
  command
      ->add_option("--max-line-bytes", flags->max_line_bytes,
                   "Longer lines are bad documents (e.g. 64M)")
      ->transform(SizeValidator())
      ->capture_default_str();
  flags->fingerprint = MethodFeatureFlags(DedupMethod::kAccurate);
  AddFingerprintFlags(command, &flags->fingerprint);
  command
      ->add_option("--method", flags->method,
                   "accurate (Jaccard sketch) or simhash (Hamming distance)")
      ->check(CLI::IsMember({"accurate", "simhash"}))
      ->capture_default_str();
  command
      ->add_option("--threshold", flags->threshold,
                   "accurate: least estimated Jaccard similarity of a pair")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  command
      ->add_option("-k", flags->k,
                   "simhash: near-duplicates differ in at most k bits; both: --against distance")
      ->check(CLI::Range(0, 7))
      ->capture_default_str();
  command
      ->add_option("--keep", flags->keep,
                   "Which document of a cluster is kept: first, last, longest, shortest")
      ->check(CLI::IsMember({"first", "last", "longest", "shortest"}))
      ->capture_default_str();
  command->add_option(
      "--priority-field", flags->priority_field,
      "Keep the document with the highest value of this JSONL number field (not with --keep)");
  command
      ->add_option("--on-error", flags->on_error,
                   "Bad documents: fail (stop, naming file and line) or skip")
      ->check(CLI::IsMember({"fail", "skip"}))
      ->capture_default_str();
  command
      ->add_option(
          "--empty", flags->empty,
          "Documents without features (blank lines, symbols only): keep (kept, never matched), "
          "drop (left out), fail (stop at the first)")
      ->check(CLI::IsMember({"keep", "drop", "fail"}))
      ->capture_default_str();
  command->add_option("--threads", flags->threads, "Worker threads, 1..1024 (0: one per core)")
      ->check(ThreadsRange())
      ->capture_default_str();
  command
      ->add_option(
          "--memory", flags->memory,
          "Memory the job may use, e.g. 4G (default, or 0: half of the machine's RAM); the "
          "default method's signatures wait in temporary files")
      ->transform(SizeValidator());
  command->add_option("--tmp-dir", flags->tmp_dir,
                      "Folder for temporary files (default: $TMPDIR, else /tmp); removed at exit");
  command
      ->add_option("--boundary-sigmas", flags->boundary_sigmas,
                   "accurate: pairs estimated within this many standard deviations of "
                   "--threshold are decided by their exact Jaccard, from the texts read again "
                   "(0: never)")
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            // CLI::Range lets "nan" through (no comparison holds for it).
            return text.find_first_of("nN") != std::string::npos
                       ? "Value " + text + " is not a number"
                       : "";
          },
          "", "not NaN"))
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  command->add_flag("--all-pairs", flags->all_pairs,
                    "accurate: verify every candidate pair, as --pairs does, without writing "
                    "them: the clusters of all pairs over --threshold, whatever the input order "
                    "(those of neardup.dask); slower on large clusters");
  command
      ->add_option(
          "--against", flags->against,
          "Index of an earlier corpus (repeat the option for several): its near-duplicates are "
          "duplicates")
      ->allow_extra_args(false);
  command->add_flag("--against-settings", flags->against_settings,
                    "Run with the method and settings the --against indexes record (not with "
                    "--method, --threshold or feature flags)");
  command->add_option("--save-index", flags->save_index,
                      "Save an index of the kept documents (and INDEX.ids) for --against");
  command->add_flag("-q,--quiet", flags->quiet, "No progress bar and no summary");
  command->add_option("--shard", flags->shard,
                      "I/N: this process is shard I of N of a job over a shared --store "
                      "(doc/dedup.md, \"Across machines\"); it writes only --shard-output");
  command->add_option("--store", flags->store,
                      "The shards' shared index: redis://HOST:PORT/PREFIX or "
                      "redis-cluster://HOST:PORT,.../PREFIX (a prefix of its own)");
  command->add_option("--shard-output", flags->shard_output,
                      "PART: this shard's part, for --merge");
  command
      ->add_option("--merge", flags->merge,
                   "PART... (every shard's): write the outputs of the whole job from the parts, "
                   "the same files as one run; repeat it or separate the parts by commas")
      ->delimiter(',')
      ->allow_extra_args(false);
  AddRedisFlags(command, &flags->redis);
  command->callback([flags, exit_code, command] {
    if (flags->text_field.empty()) {
      *exit_code = ReportError(
          "dedup", UsageError("--text-field is empty: name the JSONL field that holds the text"));
      return;
    }
    if (flags->id_field.empty()) {
      *exit_code = ReportError(
          "dedup", UsageError("--id-field is empty: name the JSONL field that holds the id, or "
                              "give none to name every document by its line"));
      return;
    }
    if (!flags->priority_field.empty() && command->count("--keep") > 0) {
      *exit_code =
          ReportError("dedup", UsageError("--priority-field keeps the document with the "
                                          "highest value of the field; it cannot be combined "
                                          "with --keep"));
      return;
    }
    if (flags->against_settings) {
      for (const char* name :
           {"--method", "--threshold", "--mode", "--shingle-unit", "--shingle-size", "--weighting",
            "--fold", "--lang", "--keywords", "--no-normalize"}) {
        if (command->count(name) == 0) continue;
        *exit_code =
            ReportError("dedup", UsageError(std::string("--against-settings takes the method "
                                                        "and its settings from the index: "
                                                        "leave out ") +
                                            name));
        return;
      }
    }
    flags->id_field_given = command->count("--id-field") > 0;
    ApplyMethodDefaults(*command, flags.get());
    *exit_code = RunDedupCommand(*flags);
  });
}

}  // namespace neardup::cli
