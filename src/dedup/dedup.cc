// RunDedup: pass 1 (documents.cc), the decisions (decisions.cc), then the outputs and pass 2, the
// kept lines (writers.cc), all committed together at the end.
#include "neardup/dedup.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "dedup/against_indexes.h"
#include "dedup/boundary.h"
#include "dedup/decisions.h"
#include "dedup/documents.h"
#include "dedup/scratch_dir.h"
#include "dedup/shards.h"
#include "dedup/spill.h"
#include "dedup/writers.h"
#include "neardup/cpu.h"
#include "neardup/format.h"
#include "neardup/id_table.h"
#include "neardup/output.h"

namespace neardup {
namespace {

using dedup_internal::Clusters;
using dedup_internal::DocumentTable;
using dedup_internal::Grouping;
using dedup_internal::IndexMatches;
using dedup_internal::InputFile;
using dedup_internal::JobSettings;
using dedup_internal::OrdinalPair;
using dedup_internal::Selection;
using dedup_internal::Signatures;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Half of the machine's memory.
uint64_t DefaultMemoryLimit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return uint64_t{4} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) / 2;
}

// Whether the default method's signatures go to disk: when the job clusters without every pair and
// needs neither an index to save nor to match (which read the band keys of any document).
bool SpillsSignatures(const JobSettings& settings) {
  const DedupOptions& o = settings.options;
  return settings.accurate() && !o.all_pairs && o.pairs_path.empty() && o.save_index.empty() &&
         o.against_indexes.empty() && o.shard_count == 0 && o.merge_parts.empty();
}

// Calls DedupOptions::on_progress every 100 ms from a thread of its own with the counters of the
// current stage, whatever the job is doing (the stages only store their counters).
class ProgressTicker {
 public:
  explicit ProgressTicker(const std::function<void(const DedupProgress&)>& callback)
      : callback_(callback) {
    if (callback_) thread_ = std::thread([this] { Loop(); });
  }
  ~ProgressTicker() { Stop(); }

  // A new stage: its counters start at zero.
  void Stage(std::string name) {
    std::lock_guard lock(mutex_);
    stage_ = std::move(name);
    start_ = Clock::now();
    documents.store(0);
    bytes.store(0);
  }
  void set_total_bytes(uint64_t total) { total_bytes_.store(total); }
  // Stops the thread after one last call.
  void Stop() {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  std::atomic<uint64_t> documents{0};
  std::atomic<uint64_t> bytes{0};

 private:
  void Loop() {
    std::unique_lock lock(mutex_);
    while (true) {
      const bool stopping =
          wake_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; });
      if (!stage_.empty()) {
        DedupProgress p;
        p.stage = stage_;
        p.documents = documents.load();
        p.bytes = bytes.load();
        p.total_bytes = total_bytes_.load();
        p.seconds = SecondsSince(start_);
        lock.unlock();  // a slow display never holds up a stage change
        callback_(p);
        lock.lock();
      }
      if (stopping) return;
    }
  }

  const std::function<void(const DedupProgress&)>& callback_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string stage_;
  Clock::time_point start_ = Clock::now();
  std::atomic<uint64_t> total_bytes_{0};
  std::thread thread_;
};

// A shard writes its part and nothing else; a merge reads parts. Neither reads standard input
// (every shard and the merge read the same inputs).
Status CheckShardOptions(const DedupOptions& options) {
  const bool shard = options.shard_count > 0;
  const bool merge = !options.merge_parts.empty();
  if (!shard && !merge) {
    if (!options.store.empty()) {
      return Status::InvalidArgument(
          "--store needs --shard I/N (the dedup job uses a shared index "
          "only to spread its work over several shards)");
    }
    if (!options.shard_output.empty()) {
      return Status::InvalidArgument("--shard-output needs --shard I/N");
    }
    return Status::OK();
  }
  if (std::find(options.inputs.begin(), options.inputs.end(), "-") != options.inputs.end()) {
    return Status::InvalidArgument(
        "a sharded job cannot read standard input ('-'): every shard and the merge read the same "
        "files");
  }
  if (shard && merge)
    return Status::InvalidArgument("--shard and --merge are two steps: one at a time");
  if (merge) return Status::OK();
  if (options.shard_index < 0 || options.shard_index >= options.shard_count) {
    return Status::InvalidArgument("--shard " + std::to_string(options.shard_index) + "/" +
                                   std::to_string(options.shard_count) +
                                   ": the shard must be in 0.." +
                                   std::to_string(options.shard_count - 1));
  }
  if (options.store.empty()) {
    return Status::InvalidArgument(
        "a shard needs --store redis://... or redis-cluster://... (the "
        "index the shards share)");
  }
  auto location = ParseStoreLocation(options.store);
  if (!location.ok()) return location.status();
  if (location->kind == StoreLocation::Kind::kEmbedded) {
    return Status::InvalidArgument(
        "a shard's --store must be a Redis index (redis:// or "
        "redis-cluster://), which every shard can reach; got '" +
        options.store + "'");
  }
  if (options.shard_output.empty()) {
    return Status::InvalidArgument("a shard needs --shard-output FILE (its part, for the merge)");
  }
  for (const std::string* path : {&options.kept_path, &options.dups_path, &options.clusters_path,
                                  &options.pairs_path, &options.save_index}) {
    if (!path->empty()) {
      return Status::InvalidArgument(
          "a shard writes only its part (--shard-output); the merge (--merge PARTS...) writes '" +
          *path + "'");
    }
  }
  if (!options.against_indexes.empty()) {
    return Status::InvalidArgument("--against belongs to the merge (--merge), not to a shard");
  }
  return Status::OK();
}

Status CheckOptions(const DedupOptions& options) {
  if (options.inputs.empty()) return Status::InvalidArgument("no input given");
  int to_standard_output = 0;
  for (const std::string* path : {&options.kept_path, &options.dups_path, &options.clusters_path,
                                  &options.pairs_path, &options.report_path}) {
    to_standard_output += *path == "-";
  }
  if (to_standard_output > 1) {
    return Status::InvalidArgument("only one output can go to standard output ('-')");
  }
  if (options.save_index == "-") {
    return Status::InvalidArgument(
        "the saved index is a file with an id file beside it: it cannot be "
        "standard output ('-')");
  }
  if (options.keep == KeepRule::kPriority && options.priority_field.empty()) {
    return Status::InvalidArgument("keeping by priority needs a priority field");
  }
  NEARDUP_RETURN_IF_ERROR(CheckShardOptions(options));
  if (!(options.boundary_sigmas >= 0 && options.boundary_sigmas <= 10)) {
    return Status::InvalidArgument("the boundary must be 0..10 standard deviations, got " +
                                   std::to_string(options.boundary_sigmas));
  }
  if (options.threads < 0 || options.threads > 1024) {
    return Status::InvalidArgument("threads must be between 1 and 1024 (0: one per core), got " +
                                   std::to_string(options.threads));
  }
  return Status::OK();
}

// The outputs of a job, declared before anything is read (null: not asked for).
struct Outputs {
  OutputSet set;  // committed together, last
  OutputFile* kept = nullptr;
  OutputFile* dups = nullptr;
  OutputFile* clusters = nullptr;
  OutputFile* pairs = nullptr;
  OutputFile* report = nullptr;
  OutputFile* index = nullptr;
  OutputFile* index_ids = nullptr;
  OutputFile* shard = nullptr;  // a shard's part
};

// Declares every output (nothing created yet) and checks it against the others and the inputs.
Status DeclareOutputs(const DedupOptions& options, Outputs* outputs) {
  struct Declared {
    const std::string& path;
    const char* role;
    OutputFile** file;
    bool regular_only;
  };
  const std::string ids_path = options.save_index.empty() ? "" : IdTablePath(options.save_index);
  const Declared declared[] = {
      {options.kept_path, "kept output", &outputs->kept, false},
      {options.dups_path, "dups output", &outputs->dups, false},
      {options.clusters_path, "clusters output", &outputs->clusters, false},
      {options.pairs_path, "pairs output", &outputs->pairs, false},
      {options.report_path, "report output", &outputs->report, false},
      {options.save_index, "saved index", &outputs->index, true},
      {ids_path, "saved index ids", &outputs->index_ids, true},
      {options.shard_output, "shard part", &outputs->shard, true}};
  for (const Declared& o : declared) {
    if (o.path.empty()) continue;
    auto file = outputs->set.Add(o.path, o.role, o.regular_only);
    if (!file.ok()) return file.status();
    *o.file = *file;
  }
  std::vector<std::string> inputs = options.inputs;
  for (const std::string& index : options.against_indexes) {
    inputs.push_back(index);
    inputs.push_back(IdTablePath(index));
  }
  inputs.insert(inputs.end(), options.merge_parts.begin(), options.merge_parts.end());
  return outputs->set.CheckNotInputs(inputs);
}

// Appends a stage's time to report->stages, with its throughput over `bytes` (0: none).
void AddStage(const std::string& name, Clock::time_point start, uint64_t bytes,
              DedupReport* report) {
  const double seconds = SecondsSince(start);
  report->stages.push_back({name, seconds, bytes > 0 && seconds > 0 ? bytes / 1e6 / seconds : 0});
}

// The method and its parameters as one line for the report.
std::string ReportSettings(const JobSettings& settings) {
  std::string s = settings.signer.settings();
  if (settings.accurate()) {
    s += " k=" + std::to_string(settings.method.k);  // for SimHash --against indexes
  }
  const EmptyPolicy empty = settings.options.empty;
  if (empty == EmptyPolicy::kKeep) return s + " empty=keep";
  return s + (empty == EmptyPolicy::kDrop ? " empty=drop" : " empty=fail");
}

// What pass 1 gives the rest of the job.
struct PassOne {
  DocumentTable table;    // per document: ids, lengths, priorities; the skipped lines
  Signatures signatures;  // per document: what the matching and the join read
  // Signatures on disk (SpillsSignatures): the files, and how they are read back.
  std::unique_ptr<dedup_internal::SpillWriter> spill;
  std::unique_ptr<dedup_internal::SketchFile> sketch_file;
  std::unique_ptr<dedup_internal::BandKeyFiles> band_files;
};

// Pass 1: reads and signs every document of `files` (the default method's signatures to files in
// `scratch` when the job spills them), then checks the fields and ids.
Result<PassOne> ReadAndSign(const std::vector<InputFile>& files, const JobSettings& settings,
                            const std::string& scratch, ProgressTicker* progress,
                            DedupReport* report) {
  const auto start = Clock::now();
  progress->Stage("fingerprint");
  PassOne pass;
  const bool spill = SpillsSignatures(settings);
  if (spill) {
    auto writer = dedup_internal::SpillWriter::Create(scratch, settings.signer.sketch_bytes(),
                                                      settings.signer.bands());
    if (!writer.ok()) return writer.status();
    pass.spill = std::move(*writer);
    pass.signatures.spill = pass.spill.get();
  }
  // The boundary decision reads the lines of a few documents again: where they are, when it can.
  const bool boundary =
      settings.signer.sketcher() != nullptr && settings.options.boundary_sigmas > 0;
  NEARDUP_RETURN_IF_ERROR(
      dedup_internal::ReadDocuments(files, settings.options, settings.signer, settings.threads,
                                    &progress->documents, &progress->bytes, &pass.table,
                                    &pass.signatures, spill ? 0 : settings.memory_limit, boundary));
  if (spill) {
    NEARDUP_RETURN_IF_ERROR(pass.spill->Finish());
    report->spill_bytes = pass.spill->bytes();
    const uint64_t documents = pass.spill->documents();
    auto sketches =
        dedup_internal::SketchFile::Open(scratch, settings.signer.sketch_bytes(), documents);
    if (!sketches.ok()) return sketches.status();
    pass.sketch_file = std::move(*sketches);
    pass.band_files =
        std::make_unique<dedup_internal::BandKeyFiles>(scratch, settings.signer.bands(), documents);
    pass.signatures.sketch_file = pass.sketch_file.get();
    pass.signatures.band_files = pass.band_files.get();
  }
  AddStage("read+fingerprint", start, pass.table.bytes, report);
  NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
  NEARDUP_RETURN_IF_ERROR(dedup_internal::CheckFieldsAndIds(pass.table, settings, report));
  return pass;
}

// The merge's pass 1: the documents, signatures and pairs of the shards' parts.
Result<PassOne> ReadParts(const std::vector<InputFile>& files, const JobSettings& settings,
                          std::vector<OrdinalPair>* pairs, DedupReport* report) {
  const auto start = Clock::now();
  PassOne pass;
  NEARDUP_RETURN_IF_ERROR(
      dedup_internal::ReadShardParts(files, settings, &pass.table, &pass.signatures, pairs));
  AddStage("read-parts", start, 0, report);
  NEARDUP_RETURN_IF_ERROR(dedup_internal::CheckFieldsAndIds(pass.table, settings, report));
  return pass;
}

// Writes the duplicates, clusters and pairs, and saves the index: the outputs of the decisions.
Status WriteDecisions(const DocumentTable& table, const IndexMatches& index_matches,
                      const Grouping& grouping, const Clusters& clusters,
                      const Selection& selection, const JobSettings& settings,
                      const Outputs& outputs, DedupReport* report) {
  auto start = Clock::now();
  NEARDUP_RETURN_IF_ERROR(dedup_internal::WriteDuplicates(
      table, index_matches, grouping, clusters, selection, settings, outputs.dups, report));
  NEARDUP_RETURN_IF_ERROR(
      dedup_internal::WriteClusters(table, grouping, clusters, selection, outputs.clusters));
  NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
  NEARDUP_RETURN_IF_ERROR(dedup_internal::WritePairs(table, grouping, clusters.pairs,
                                                     clusters.jaccards, settings, outputs.pairs));
  AddStage("write-dups-clusters-pairs", start, 0, report);
  if (outputs.index == nullptr) return Status::OK();
  start = Clock::now();
  NEARDUP_RETURN_IF_ERROR(dedup_internal::SaveIndex(table, grouping, selection.kept, settings,
                                                    outputs.index, outputs.index_ids));
  AddStage("save-index", start, 0, report);
  return Status::OK();
}

// Matches the indexes, groups, joins and clusters the documents, chooses the kept ones and writes
// the outputs of those decisions. Returns document -> kept: everything else made here (the groups,
// pairs and clusters) is released on return, before the kept lines are copied.
Result<std::vector<bool>> DecideAndWrite(Signatures signatures, const DocumentTable& table,
                                         const std::vector<InputFile>& files,
                                         const JobSettings& settings, const Outputs& outputs,
                                         ProgressTicker* progress, DedupReport* report,
                                         const std::vector<OrdinalPair>* shard_pairs) {
  auto start = Clock::now();
  auto index_matches = dedup_internal::MatchIndexes(signatures, table, settings);
  if (!index_matches.ok()) return index_matches.status();
  if (!settings.options.against_indexes.empty()) {
    report->duplicates_of_index = index_matches->matches.size();
    AddStage("against-index", start, 0, report);
  }
  start = Clock::now();
  progress->Stage("join");
  auto grouped =
      dedup_internal::GroupDocuments(std::move(signatures), *index_matches, table, settings);
  if (!grouped.ok()) return grouped.status();
  Grouping grouping = std::move(*grouped);
  // Boundary pairs are decided from the texts, read again, in passes that hold at most
  // BoundaryPassBytes of feature sets.
  const dedup_internal::ExactJaccardFunction exact =
      [&](const std::vector<std::pair<uint32_t, uint32_t>>& pairs) {
        std::vector<dedup_internal::DocumentPair> documents;
        documents.reserve(pairs.size());
        for (const auto& [a, b] : pairs) documents.push_back({a, b});
        return dedup_internal::ExactJaccards(
            files, table, settings, documents,
            static_cast<size_t>(dedup_internal::BoundaryPassBytes(settings)));
      };
  auto clusters = shard_pairs == nullptr
                      ? dedup_internal::JoinAndCluster(settings, exact, &grouping, report)
                      : dedup_internal::ClusterShardPairs(settings, exact, *shard_pairs, table,
                                                          grouping, report);
  if (!clusters.ok()) return clusters.status();
  AddStage("join", start, 0, report);
  dedup_internal::CountPairsAndClusters(grouping, *clusters, report);
  Selection selection = dedup_internal::ChooseKept(grouping, *clusters, table, settings.options);
  NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
  NEARDUP_RETURN_IF_ERROR(WriteDecisions(table, *index_matches, grouping, *clusters, selection,
                                         settings, outputs, report));
  return std::move(selection.kept);
}

// Pass 2, when the kept lines are asked for.
Status CopyKept(const std::vector<InputFile>& files, const DocumentTable& table,
                const std::vector<bool>& kept, const JobSettings& settings, OutputFile* out,
                ProgressTicker* progress, DedupReport* report) {
  if (out == nullptr) return Status::OK();
  const auto start = Clock::now();
  progress->Stage("write");
  NEARDUP_RETURN_IF_ERROR(dedup_internal::WriteKept(files, table, kept, settings,
                                                    &progress->documents, &progress->bytes, out));
  AddStage("write-kept", start, table.bytes, report);
  return Status::OK();
}

// The report's totals, once the job is done.
void FinishReport(const DocumentTable& table, const JobSettings& settings, Clock::time_point start,
                  DedupReport* report) {
  report->documents = table.size();
  report->empty_documents = table.empty_documents.size();
  report->empty_dropped = settings.options.empty == EmptyPolicy::kDrop;
  report->bytes = table.bytes;
  report->skipped = table.skipped;
  report->first_errors = table.first_errors;
  report->threads = settings.threads;
  report->seconds = SecondsSince(start);
  report->settings = ReportSettings(settings);
}

// Everything after the method is settled: the two passes and the outputs, committed last.
Result<DedupReport> RunPasses(const JobSettings& settings,
                              const std::vector<std::string>& index_warnings,
                              Clock::time_point start, Outputs* outputs, ProgressTicker* progress) {
  std::vector<std::string> reclaimed;
  auto scratch_dir = dedup_internal::ScratchDir::Create(settings.options.tmp_dir, &reclaimed);
  if (!scratch_dir.ok()) return scratch_dir.status();
  const dedup_internal::ScratchDir& scratch = **scratch_dir;
  progress->Stage("read");
  auto files = dedup_internal::ExpandInputs(settings.options, scratch.path() + "/stdin");
  if (!files.ok()) return files.status();
  DedupReport report;
  for (const std::string& folder : reclaimed) {
    report.warnings.push_back("removed the temporary folder " + folder +
                              ", left by an earlier job that was killed or crashed");
  }
  const std::vector<std::string> input_warnings =
      dedup_internal::InputWarnings(*files, settings.options);
  report.warnings.insert(report.warnings.end(), input_warnings.begin(), input_warnings.end());
  report.warnings.insert(report.warnings.end(), index_warnings.begin(), index_warnings.end());
  uint64_t total_bytes = 0;
  for (const InputFile& f : *files) total_bytes += f.size;
  progress->set_total_bytes(total_bytes);
  NEARDUP_RETURN_IF_ERROR(outputs->set.OpenAll());
  std::vector<OrdinalPair> shard_pairs;
  Result<PassOne> pass = settings.options.merge_parts.empty()
                             ? ReadAndSign(*files, settings, scratch.path(), progress, &report)
                             : ReadParts(*files, settings, &shard_pairs, &report);
  if (!pass.ok()) return pass.status();
  const DocumentTable& table = pass->table;
  if (settings.options.shard_count > 0) {
    const auto shard_start = Clock::now();
    progress->Stage("shard");
    NEARDUP_RETURN_IF_ERROR(dedup_internal::RunShard(*files, table, pass->signatures, settings,
                                                     outputs->shard, &report));
    AddStage("shard-insert-query", shard_start, 0, &report);
    FinishReport(table, settings, start, &report);
    if (outputs->report != nullptr) outputs->report->Write(report.ToJson());
    NEARDUP_RETURN_IF_ERROR(outputs->set.CommitAll());
    progress->Stop();
    return report;
  }
  auto kept =
      DecideAndWrite(std::move(pass->signatures), table, *files, settings, *outputs, progress,
                     &report, settings.options.merge_parts.empty() ? nullptr : &shard_pairs);
  if (!kept.ok()) return kept.status();
  NEARDUP_RETURN_IF_ERROR(
      CopyKept(*files, table, *kept, settings, outputs->kept, progress, &report));
  FinishReport(table, settings, start, &report);
  if (outputs->report != nullptr) outputs->report->Write(report.ToJson());
  NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
  // Every output is complete: make them appear, together.
  NEARDUP_RETURN_IF_ERROR(outputs->set.CommitAll());
  progress->Stop();
  return report;
}

}  // namespace

// Checks the options, declares the outputs and settles the method, then runs the passes.
Result<DedupReport> RunDedup(const DedupOptions& options) {
  const auto start = Clock::now();
  ProgressTicker progress(options.on_progress);
  NEARDUP_RETURN_IF_ERROR(CheckOptions(options));
  const int threads = ResolveThreads(options.threads);
  Outputs outputs;
  NEARDUP_RETURN_IF_ERROR(DeclareOutputs(options, &outputs));
  std::vector<std::string> index_warnings;
  auto method = dedup_internal::SettleMethod(options, &index_warnings);
  if (!method.ok()) return method.status();
  auto signer = DocumentSigner::Create(*method);
  if (!signer.ok()) return signer.status();
  const uint64_t memory_limit =
      options.memory_limit > 0 ? options.memory_limit : DefaultMemoryLimit();
  const JobSettings settings{options, std::move(*method), **signer, threads, memory_limit};
  return RunPasses(settings, index_warnings, start, &outputs, &progress);
}

Result<KeepRule> ParseKeepRule(std::string_view name) {
  if (name == "first") return KeepRule::kFirst;
  if (name == "last") return KeepRule::kLast;
  if (name == "longest") return KeepRule::kLongest;
  if (name == "shortest") return KeepRule::kShortest;
  return Status::InvalidArgument("unknown keep rule '" + std::string(name) +
                                 "' (expected first, last, longest or shortest)");
}

Result<InputFormat> ParseInputFormat(std::string_view name) {
  if (name == "auto") return InputFormat::kAuto;
  if (name == "plain" || name == "text") return InputFormat::kPlain;
  if (name == "jsonl") return InputFormat::kJsonl;
  return Status::InvalidArgument("unknown input format '" + std::string(name) +
                                 "' (expected auto, plain or jsonl)");
}

std::vector<std::string> DedupReport::RunDependentFields() const { return {"stages", "seconds"}; }

std::string DedupReport::ToJson() const {
  std::string out = "{";
  auto field = [&](const char* name, const std::string& value) {
    if (out.size() > 1) out.push_back(',');
    out.push_back('"');
    out.append(name);
    out.append("\":");
    out.append(value);
  };
  field("documents", std::to_string(documents));
  field("bytes", std::to_string(bytes));
  field("kept", std::to_string(kept));
  field("duplicates", std::to_string(duplicates));
  field("duplicates_of_index", std::to_string(duplicates_of_index));
  field("clusters", std::to_string(clusters));
  field("pairs", std::to_string(pairs));
  field("pairs_complete", pairs_complete ? "true" : "false");
  field("candidates", std::to_string(candidates));
  field("boundary_pairs", std::to_string(boundary_pairs));
  field("boundary_accepted", std::to_string(boundary_accepted));
  field("boundary_left", std::to_string(boundary_left));
  field("spill_bytes", std::to_string(spill_bytes));
  field("skipped", std::to_string(skipped));
  field("empty_documents", std::to_string(empty_documents));
  field("empty_documents_kept", empty_dropped ? "false" : "true");
  std::string errors = "[";
  for (size_t i = 0; i < first_errors.size(); ++i) {
    if (i) errors.push_back(',');
    AppendJsonString(first_errors[i], &errors);
  }
  field("first_errors", errors + "]");
  field("duplicate_ids", std::to_string(duplicate_ids));
  std::string warning_list = "[";
  for (size_t i = 0; i < warnings.size(); ++i) {
    if (i) warning_list.push_back(',');
    AppendJsonString(warnings[i], &warning_list);
  }
  field("warnings", warning_list + "]");
  std::string histogram = "{";
  for (size_t i = 1; i < cluster_size_histogram.size(); ++i) {
    if (histogram.size() > 1) histogram.push_back(',');
    histogram.push_back('"');
    histogram.append(std::to_string(uint64_t{1} << i));
    histogram.push_back('-');
    histogram.append(std::to_string((uint64_t{2} << i) - 1));
    histogram.append("\":");
    histogram.append(std::to_string(cluster_size_histogram[i]));
  }
  field("cluster_sizes", histogram + "}");
  std::string stage_list = "[";
  for (size_t i = 0; i < stages.size(); ++i) {
    if (i) stage_list.push_back(',');
    std::string name;
    AppendJsonString(stages[i].stage, &name);
    char numbers[96];
    std::snprintf(numbers, sizeof(numbers), ",\"seconds\":%.3f,\"mb_per_second\":%.1f}",
                  stages[i].seconds, stages[i].megabytes_per_second);
    stage_list.append("{\"stage\":" + name + numbers);
  }
  field("stages", stage_list + "]");
  char seconds_text[32];
  std::snprintf(seconds_text, sizeof(seconds_text), "%.3f", seconds);
  field("seconds", seconds_text);
  field("threads", std::to_string(threads));
  std::string s;
  AppendJsonString(settings, &s);
  field("settings", s);
  std::string varying = "[";
  for (const std::string& name : RunDependentFields()) {
    if (varying.size() > 1) varying.push_back(',');
    AppendJsonString(name, &varying);
  }
  field("run_dependent", varying + "]");
  out.append("}\n");
  return out;
}

}  // namespace neardup
