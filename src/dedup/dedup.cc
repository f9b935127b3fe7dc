// RunDedup: pass 1 (documents.cc), the join and clusters, then the outputs and pass 2 (the kept lines).
#include "neardup/dedup.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <thread>

#include "dedup/against_indexes.h"
#include "dedup/documents.h"
#include "dedup/duplicate_ids.h"
#include "dedup/fingerprint_groups.h"
#include "dedup/id_table.h"
#include "dedup/signature_groups.h"
#include "neardup/cpu.h"
#include "neardup/format.h"
#include "neardup/index.h"
#include "neardup/index_file.h"
#include "neardup/input.h"
#include "neardup/join.h"
#include "neardup/output.h"

namespace neardup {
namespace {

using dedup_internal::DocumentTable;
using dedup_internal::IndexMatch;
using dedup_internal::InputFile;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kNone = UINT32_MAX;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A temporary folder removed with the object (spooled standard input lives there).
class ScratchDir {
 public:
  ScratchDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "neardup-XXXXXX").string();
    if (::mkdtemp(templ.data()) != nullptr) path_ = templ;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Calls DedupOptions::on_progress every 100 ms from a thread of its own with the counters of the
// current stage, whatever the job is doing (the stages only store their counters).
class ProgressTicker {
 public:
  explicit ProgressTicker(const std::function<void(const DedupProgress&)>& callback) : callback_(callback) {
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
      const bool stopping = wake_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; });
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
    return Status::InvalidArgument("the saved index is a file with an id file beside it: it cannot be "
                                   "standard output ('-')");
  }
  if (options.keep == KeepRule::kPriority && options.priority_field.empty()) {
    return Status::InvalidArgument("keeping by priority needs a priority field");
  }
  if (options.threads < 0 || options.threads > 1024) {
    return Status::InvalidArgument("threads must be between 1 and 1024 (0: one per core), got " +
                                   std::to_string(options.threads));
  }
  return Status::OK();
}

// Appends "<TAB>distance<NEWLINE>".
void AppendDistance(int distance, std::string* out) {
  out->push_back('\t');
  out->append(std::to_string(distance));
  out->push_back('\n');
}

// Appends "<TAB>jaccard<NEWLINE>" with 4 decimals.
void AppendJaccard(double jaccard, std::string* out) {
  char text[32];
  std::snprintf(text, sizeof(text), "\t%.4f\n", jaccard);
  out->append(text);
}

// Whether document a should be kept over document b (a < b in input order) by the rule.
bool Better(KeepRule rule, const DocumentTable& t, uint32_t a, uint32_t b) {
  switch (rule) {
    case KeepRule::kFirst: return a < b;
    case KeepRule::kLast: return a > b;
    case KeepRule::kLongest: return t.lengths[a] != t.lengths[b] ? t.lengths[a] > t.lengths[b] : a < b;
    case KeepRule::kShortest: return t.lengths[a] != t.lengths[b] ? t.lengths[a] < t.lengths[b] : a < b;
    case KeepRule::kPriority:
      return t.priorities[a] != t.priorities[b] ? t.priorities[a] > t.priorities[b] : a < b;
  }
  return a < b;
}

class Job {
 public:
  explicit Job(const DedupOptions& options) : options_(options) {}

  Result<DedupReport> Run();

 private:
  Status DeclareOutputs();
  Status Fingerprint();
  Status CheckFieldsAndIds();
  Status MatchIndexes();
  Status JoinAndCluster();
  void GroupByFingerprint();
  Status GroupAndJoinSketches();
  // Estimated Jaccard of two groups' sketches (kAccurate).
  double GroupJaccard(uint32_t a, uint32_t b) const {
    const size_t bytes = sketcher_->sketch_bytes();
    return sketcher_->Estimate(&table_.sketches[a * bytes], &table_.sketches[b * bytes]);
  }
  Status WriteDuplicatesAndClusters();
  Status WritePairs();
  Status WriteKept();
  Status SaveIndex();
  std::string Settings() const;
  Status Cancelled() const {
    return options_.cancel != nullptr && options_.cancel->load() ? Status::Cancelled("interrupted")
                                                                 : Status::OK();
  }
  void AddStage(const std::string& name, Clock::time_point start, bool with_bytes) {
    const double seconds = SecondsSince(start);
    report_.stages.push_back({name, seconds, with_bytes && seconds > 0 ? table_.bytes / 1e6 / seconds : 0});
  }

  const DedupOptions& options_;
  // The method of the run: options_.similarity, or the --against indexes' own (against_settings).
  MethodOptions method_;
  bool accurate_ = false;
  std::unique_ptr<DocumentSigner> signer_;
  const Sketcher* sketcher_ = nullptr;  // kAccurate
  int threads_ = 1;
  ScratchDir scratch_;
  std::vector<InputFile> files_;
  DocumentTable table_;
  DedupReport report_;
  ProgressTicker progress_{options_.on_progress};
  OutputSet outputs_;  // committed together, last
  OutputFile *kept_out_ = nullptr, *dups_out_ = nullptr, *clusters_out_ = nullptr, *pairs_out_ = nullptr,
             *report_out_ = nullptr, *index_out_ = nullptr, *index_ids_out_ = nullptr;

  std::vector<IndexMatch> index_matches_;             // by document, ascending
  std::vector<dedup_internal::IdTable> index_ids_;   // per against index (may be empty)
  // Groups of documents joined as one: identical fingerprints (kSimhash) or identical signatures
  // (kAccurate, table_.sketches then holds one sketch per group).
  // Groups are numbered in order of their first document; once grouped, table_.fingerprints is gone.
  std::vector<uint64_t> distinct_;                    // fingerprint of each group
  std::vector<uint32_t> group_of_;                    // document -> group (kNone: index dup)
  std::vector<Pair> pairs_;                           // between distinct fingerprints
  std::vector<uint32_t> component_;                   // distinct fingerprint -> component root
  std::vector<uint32_t> kept_of_;                     // component root -> kept document
  std::vector<bool> kept_;                            // document -> kept

  uint64_t FingerprintOf(uint32_t d) const { return distinct_[group_of_[d]]; }
  // Whether document d has no features (EmptyPolicy): never joined, never matched.
  bool IsEmpty(uint32_t d) const {
    return std::binary_search(table_.empty_documents.begin(), table_.empty_documents.end(), d);
  }
  // The documents left out of the join, ascending: near-duplicates of an index, and documents
  // without features.
  std::vector<uint32_t> LeftOut() const {
    std::vector<uint32_t> left_out;
    left_out.reserve(index_matches_.size() + table_.empty_documents.size());
    for (const IndexMatch& m : index_matches_) left_out.push_back(m.document);
    const auto middle = static_cast<std::ptrdiff_t>(left_out.size());
    left_out.insert(left_out.end(), table_.empty_documents.begin(), table_.empty_documents.end());
    std::inplace_merge(left_out.begin(), left_out.begin() + middle, left_out.end());
    return left_out;
  }
  // Documents of each group.
  std::vector<uint32_t> GroupSizes() const {
    std::vector<uint32_t> sizes(distinct_.size(), 0);
    for (uint32_t g : group_of_) {
      if (g != kNone) ++sizes[g];
    }
    return sizes;
  }
  // What only the kept lines' copy and the report need is left: the rest goes.
  void ReleaseGroups() {
    for (auto* v : {&group_of_, &component_, &kept_of_}) std::vector<uint32_t>().swap(*v);
    std::vector<uint64_t>().swap(distinct_);
    std::vector<Pair>().swap(pairs_);
  }
};

// Every output is declared (nothing created yet) and checked against the others and the inputs.
Status Job::DeclareOutputs() {
  struct Declared {
    const std::string& path;
    const char* role;
    OutputFile** file;
    bool regular_only;
  };
  const std::string ids_path = options_.save_index.empty() ? "" : IdTablePath(options_.save_index);
  const Declared outputs[] = {{options_.kept_path, "kept output", &kept_out_, false},
                              {options_.dups_path, "dups output", &dups_out_, false},
                              {options_.clusters_path, "clusters output", &clusters_out_, false},
                              {options_.pairs_path, "pairs output", &pairs_out_, false},
                              {options_.report_path, "report output", &report_out_, false},
                              {options_.save_index, "saved index", &index_out_, true},
                              {ids_path, "saved index ids", &index_ids_out_, true}};
  for (const Declared& o : outputs) {
    if (o.path.empty()) continue;
    auto file = outputs_.Add(o.path, o.role, o.regular_only);
    if (!file.ok()) return file.status();
    *o.file = *file;
  }
  std::vector<std::string> inputs = options_.inputs;
  for (const std::string& index : options_.against_indexes) {
    inputs.push_back(index);
    inputs.push_back(IdTablePath(index));
  }
  return outputs_.CheckNotInputs(inputs);
}

Status Job::Fingerprint() {
  const auto start = Clock::now();
  progress_.Stage("fingerprint");
  NEARDUP_RETURN_IF_ERROR(dedup_internal::ReadDocuments(files_, options_, *signer_,
                                                        threads_, &progress_.documents, &progress_.bytes,
                                                        &table_));
  AddStage("read+fingerprint", start, true);
  return Cancelled();
}

// A field named in the options that no document has is a mistake the user should hear of; so are
// ids that repeat (outputs name documents by id).
Status Job::CheckFieldsAndIds() {
  if (options_.require_id_field && table_.jsonl_documents > 0 && !options_.id_field.empty() &&
      !table_.has_id_field()) {
    return Status::InvalidArgument("no document has the id field '" + options_.id_field + "'");
  }
  if (options_.keep == KeepRule::kPriority && table_.size() > 0 && table_.documents_with_priority == 0) {
    return Status::InvalidArgument("no document has the priority field '" + options_.priority_field +
                                   "' (a JSONL number field)");
  }
  const dedup_internal::DuplicateIds duplicates = dedup_internal::FindDuplicateIds(table_);
  report_.duplicate_ids = duplicates.count;
  if (duplicates.count > 0) {
    const std::string id = table_.id(duplicates.first);
    const std::string where =
        table_.Location(duplicates.earlier) + " and " + table_.Location(duplicates.first);
    if (options_.unique_ids) {
      return Status::InvalidArgument("id " + id + " appears twice: " + where);
    }
    report_.warnings.push_back(std::to_string(duplicates.count) +
                               (duplicates.count == 1 ? " document has" : " documents have") +
                               " the id of an earlier document (first: '" + id + "' at " + where +
                               "); outputs name them alike (--unique-ids refuses them)");
  }
  return Cancelled();
}

Status Job::MatchIndexes() {
  if (options_.against_indexes.empty()) return Status::OK();
  const auto start = Clock::now();
  std::vector<IndexMatch> best(table_.size());
  dedup_internal::DocumentSignatures documents;
  documents.fingerprints = table_.fingerprints;
  documents.sketches = table_.sketches;
  documents.band_keys = table_.band_keys;
  documents.sketch_bytes = signer_->sketch_bytes();
  documents.bands = signer_->bands();
  documents.is_empty = [this](uint32_t d) { return IsEmpty(d); };
  for (uint32_t i = 0; i < options_.against_indexes.size(); ++i) {
    index_ids_.emplace_back();
    NEARDUP_RETURN_IF_ERROR(dedup_internal::MatchIndex(options_.against_indexes[i], i, *signer_,
                                                       documents, threads_, &best,
                                                       &index_ids_.back()));
    NEARDUP_RETURN_IF_ERROR(Cancelled());
  }
  for (const IndexMatch& m : best) {
    if (m.document != kNone) index_matches_.push_back(m);
  }
  report_.duplicates_of_index = index_matches_.size();
  AddStage("against-index", start, false);
  return Status::OK();
}

// Identical fingerprints are joined once: the documents are grouped by fingerprint first.
void Job::GroupByFingerprint() {
  group_of_.assign(table_.size(), 0);
  for (uint32_t d : LeftOut()) group_of_[d] = kNone;
  dedup_internal::GroupIdenticalFingerprints(&table_.fingerprints, &group_of_, threads_);
  distinct_ = std::move(table_.fingerprints);
  table_.fingerprints = {};
}

// Identical signatures are joined once; the groups' band keys are joined and verified by the sketch.
Status Job::GroupAndJoinSketches() {
  const std::vector<uint32_t> left_out = LeftOut();
  const auto bands = static_cast<size_t>(sketcher_->options().bands);
  auto groups = dedup_internal::GroupIdenticalSignatures(left_out, sketcher_->sketch_bytes(), bands, &table_);
  group_of_ = std::move(groups.group_of);
  // One fingerprint per group, compacted in place (first members ascend, group g's is >= g).
  const size_t count = groups.first_member.size();
  for (size_t g = 0; g < count; ++g) table_.fingerprints[g] = table_.fingerprints[groups.first_member[g]];
  table_.fingerprints.resize(count);
  distinct_ = std::move(table_.fingerprints);
  table_.fingerprints = {};
  BandJoinOptions join;
  join.threshold = method_.threshold;
  join.threads = threads_;
  join.all_pairs = options_.all_pairs || !options_.pairs_path.empty();
  report_.pairs_complete = join.all_pairs;
  BandJoinStats stats;
  auto similar = FindSimilarPairs(*sketcher_, table_.band_keys, table_.sketches, join, &stats);
  if (!similar.ok()) return similar.status();
  report_.candidates = stats.candidates;
  // Not needed any more, but by an accurate index to save.
  if (index_out_ == nullptr) std::vector<uint32_t>().swap(table_.band_keys);
  pairs_.reserve(similar->size());
  for (const SimilarPair& p : *similar) {
    pairs_.push_back({p.first, p.second, std::popcount(distinct_[p.first] ^ distinct_[p.second])});
  }
  return Status::OK();
}

Status Job::JoinAndCluster() {
  const auto start = Clock::now();
  progress_.Stage("join");
  const auto n = static_cast<uint32_t>(table_.size());
  if (accurate_) {
    NEARDUP_RETURN_IF_ERROR(GroupAndJoinSketches());
  } else {
    GroupByFingerprint();
    JoinOptions join;
    join.threads = threads_;
    auto pairs = FindAllPairs(distinct_, method_.k, join);
    if (!pairs.ok()) return pairs.status();
    pairs_ = std::move(*pairs);
  }
  auto roots = ClusterPairs(static_cast<uint32_t>(distinct_.size()), pairs_);
  if (!roots.ok()) return roots.status();
  component_ = std::move(*roots);
  AddStage("join", start, false);
  // Pairs among documents: across groups, and within groups of identical fingerprints.
  {
    const std::vector<uint32_t> sizes = GroupSizes();
    for (const Pair& p : pairs_) report_.pairs += uint64_t{sizes[p.first]} * sizes[p.second];
    for (uint64_t size : sizes) report_.pairs += size * (size - 1) / 2;
  }

  // The sizes of the clusters (freed before the kept documents are chosen: one array fewer at the
  // peak), then the kept document of every component by the keep rule.
  {
    std::vector<uint32_t> sizes(distinct_.size(), 0);  // component root -> documents
    for (uint32_t g : group_of_) {
      if (g != kNone) ++sizes[component_[g]];
    }
    report_.cluster_size_histogram.assign(33, 0);
    for (uint32_t size : sizes) {
      if (size < 2) continue;
      ++report_.clusters;
      ++report_.cluster_size_histogram[std::bit_width(size) - 1];
    }
    while (!report_.cluster_size_histogram.empty() && report_.cluster_size_histogram.back() == 0) {
      report_.cluster_size_histogram.pop_back();
    }
  }
  kept_of_.assign(distinct_.size(), kNone);
  for (uint32_t d = 0; d < n; ++d) {
    if (group_of_[d] == kNone) continue;
    const uint32_t c = component_[group_of_[d]];
    if (kept_of_[c] == kNone || Better(options_.keep, table_, d, kept_of_[c])) kept_of_[c] = d;
  }
  kept_.assign(n, false);
  for (uint32_t kept : kept_of_) {
    if (kept != kNone) kept_[kept] = true;
  }
  if (options_.empty == EmptyPolicy::kKeep) {
    for (uint32_t d : table_.empty_documents) kept_[d] = true;
  }
  return Cancelled();
}

Status Job::WriteDuplicatesAndClusters() {
  const auto n = static_cast<uint32_t>(table_.size());
  size_t next_match = 0;
  for (uint32_t d = 0; d < n; ++d) {
    if (kept_[d]) {
      ++report_.kept;
      continue;
    }
    if (IsEmpty(d)) continue;  // dropped (EmptyPolicy::kDrop): not a duplicate of anything
    ++report_.duplicates;
    if (dups_out_ == nullptr) continue;
    std::string& out = dups_out_->buffer();
    AppendTsvField(table_.id(d), &out);
    out.push_back('\t');
    if (group_of_[d] == kNone) {
      const IndexMatch& m = index_matches_[next_match++];
      const auto& ids = index_ids_[m.index];
      const std::string number = std::to_string(m.id);
      AppendTsvField(ids.Has(m.id) ? ids.Get(m.id) : std::string_view(number), &out);
      if (m.jaccard) {
        AppendJaccard(m.score, &out);
      } else {
        AppendDistance(static_cast<int>(m.score), &out);
      }
    } else {
      const uint32_t kept = kept_of_[component_[group_of_[d]]];
      AppendTsvField(table_.id(kept), &out);
      if (accurate_) {
        AppendJaccard(GroupJaccard(group_of_[d], group_of_[kept]), &out);
      } else {
        AppendDistance(std::popcount(FingerprintOf(d) ^ FingerprintOf(kept)), &out);
      }
    }
    NEARDUP_RETURN_IF_ERROR(dups_out_->MaybeDrain());
  }
  if (clusters_out_ == nullptr) return Cancelled();
  // Members of each component in input order, components in order of their first member.
  std::vector<uint32_t> starts(distinct_.size() + 1, 0);
  for (uint32_t d = 0; d < n; ++d) {
    if (group_of_[d] != kNone) ++starts[component_[group_of_[d]] + 1];
  }
  std::partial_sum(starts.begin(), starts.end(), starts.begin());
  std::vector<uint32_t> members(starts.back());
  std::vector<uint32_t> fill(starts.begin(), starts.end() - 1);
  for (uint32_t d = 0; d < n; ++d) {
    if (group_of_[d] != kNone) members[fill[component_[group_of_[d]]]++] = d;
  }
  std::vector<bool> written(distinct_.size(), false);
  for (uint32_t d = 0; d < n; ++d) {
    if (group_of_[d] == kNone) continue;
    const uint32_t c = component_[group_of_[d]];
    const uint32_t size = starts[c + 1] - starts[c];
    if (written[c] || size < 2) continue;
    written[c] = true;
    std::string& out = clusters_out_->buffer();
    out.append("{\"representative\":");
    AppendJsonString(table_.id(kept_of_[c]), &out);
    out.append(",\"size\":");
    out.append(std::to_string(size));
    out.append(",\"members\":[");
    for (uint32_t i = starts[c]; i < starts[c + 1]; ++i) {
      if (i != starts[c]) out.push_back(',');
      AppendJsonString(table_.id(members[i]), &out);
    }
    out.append("]}\n");
    NEARDUP_RETURN_IF_ERROR(clusters_out_->MaybeDrain());
  }
  return Cancelled();
}

Status Job::WritePairs() {
  if (pairs_out_ == nullptr) return Status::OK();
  // The score column: the Hamming distance (kSimhash) or the estimated Jaccard (kAccurate).
  auto write = [&](uint32_t a, uint32_t b, int distance, double jaccard) {
    if (a > b) std::swap(a, b);
    std::string& out = pairs_out_->buffer();
    AppendTsvField(table_.id(a), &out);
    out.push_back('\t');
    AppendTsvField(table_.id(b), &out);
    if (accurate_) {
      AppendJaccard(jaccard, &out);
    } else {
      AppendDistance(distance, &out);
    }
    return pairs_out_->MaybeDrain();
  };
  // Members of each group in document order (counting sort by group).
  std::vector<uint32_t> starts(distinct_.size() + 1, 0);
  {
    const std::vector<uint32_t> sizes = GroupSizes();
    for (uint32_t u = 0; u < distinct_.size(); ++u) starts[u + 1] = starts[u] + sizes[u];
  }
  std::vector<uint32_t> members(starts.back());
  {
    std::vector<uint32_t> fill(starts.begin(), starts.end() - 1);
    for (uint32_t d = 0; d < group_of_.size(); ++d) {
      if (group_of_[d] != kNone) members[fill[group_of_[d]]++] = d;
    }
  }
  for (uint32_t u = 0; u < distinct_.size(); ++u) {
    for (uint32_t i = starts[u]; i < starts[u + 1]; ++i) {
      for (uint32_t j = i + 1; j < starts[u + 1]; ++j) NEARDUP_RETURN_IF_ERROR(write(members[i], members[j], 0, 1.0));
    }
  }
  for (size_t k = 0; k < pairs_.size(); ++k) {
    const Pair& p = pairs_[k];
    const double jaccard = accurate_ ? GroupJaccard(p.first, p.second) : 0;
    for (uint32_t i = starts[p.first]; i < starts[p.first + 1]; ++i) {
      for (uint32_t j = starts[p.second]; j < starts[p.second + 1]; ++j) {
        NEARDUP_RETURN_IF_ERROR(write(members[i], members[j], p.distance, jaccard));
      }
    }
    NEARDUP_RETURN_IF_ERROR(Cancelled());
  }
  return Status::OK();
}

// Pass 2: copies the kept documents' lines from the inputs, byte for byte (line ends included), in
// input order.
Status Job::WriteKept() {
  if (kept_out_ == nullptr) return Status::OK();
  const auto start = Clock::now();
  progress_.Stage("write");
  uint64_t ordinal = 0, document = 0, bytes = 0;
  size_t next_bad = 0;
  std::string scratch;
  std::string_view raw;
  for (const auto& file : files_) {
    auto reader = LineReader::Open(file.read_path);
    if (!reader.ok()) return reader.status();
    while (true) {
      auto more = (*reader)->ReadRawLine(&raw, &scratch, options_.max_line_bytes);
      if (!more.ok() && more.status().code() != Status::Code::kResourceExhausted) return more.status();
      if (more.ok() && !*more) break;
      const uint64_t this_line = ordinal++;
      if (next_bad < table_.bad_lines.size() && table_.bad_lines[next_bad] == this_line) {
        ++next_bad;
        continue;
      }
      if (!more.ok()) return Status::Internal(file.name + ": input changed during the job");
      bytes += raw.size();
      const auto d = static_cast<uint32_t>(document++);
      if (d >= table_.size()) return Status::Internal(file.name + ": input changed during the job");
      if (kept_[d]) {
        kept_out_->Write(raw);
        if (raw.empty() || raw.back() != '\n') kept_out_->Write("\n");  // the last line of a file
      }
      progress_.bytes.store(bytes, std::memory_order_relaxed);
      if ((document & 0xFFFF) == 0) {
        NEARDUP_RETURN_IF_ERROR(Cancelled());
        NEARDUP_RETURN_IF_ERROR(kept_out_->status());
        progress_.documents.store(document, std::memory_order_relaxed);
      }
    }
  }
  if (document != table_.size()) return Status::Internal("inputs changed during the job");
  AddStage("write-kept", start, true);
  return Status::OK();
}

// The kept documents with features, numbered 0, 1, 2... in input order, and their ids in INDEX.ids:
// the accurate method's signatures, or the SimHash method's fingerprints in permuted tables.
Status Job::SaveIndex() {
  if (index_out_ == nullptr) return Status::OK();
  const auto start = Clock::now();
  std::vector<uint64_t> ids, fingerprints;
  SignatureSet signatures;
  signatures.settings = signer_->settings();
  signatures.sketch_bytes = signer_->sketch_bytes();
  signatures.bands = signer_->bands();
  dedup_internal::IdTable names;
  for (uint32_t d = 0; d < table_.size(); ++d) {
    if (!kept_[d] || IsEmpty(d)) continue;  // a document without features is never matched
    ids.push_back(ids.size());
    fingerprints.push_back(FingerprintOf(d));
    names.Add(table_.id(d));
    if (!accurate_) continue;
    const size_t g = group_of_[d];
    const auto sketch = table_.sketches.begin() + static_cast<std::ptrdiff_t>(g * signatures.sketch_bytes);
    signatures.sketches.insert(signatures.sketches.end(), sketch,
                               sketch + static_cast<std::ptrdiff_t>(signatures.sketch_bytes));
    const auto keys = table_.band_keys.begin() + static_cast<std::ptrdiff_t>(g * signatures.bands);
    signatures.band_keys.insert(signatures.band_keys.end(), keys,
                                keys + static_cast<std::ptrdiff_t>(signatures.bands));
  }
  // Committed with the other outputs, last.
  if (accurate_) {
    signatures.ids = std::move(ids);
    signatures.simhashes = std::move(fingerprints);
    NEARDUP_RETURN_IF_ERROR(SaveSignatureIndex(signatures, index_out_));
  } else {
    IndexOptions index_options;
    index_options.max_k = std::max(method_.k, 3);
    index_options.build_threads = threads_;
    auto index = BuildPermutedTableIndex(ids, fingerprints, index_options);
    if (!index.ok()) return index.status();
    NEARDUP_RETURN_IF_ERROR(neardup::SaveIndex(**index, index_out_, signer_->settings()));
  }
  NEARDUP_RETURN_IF_ERROR(names.Save(index_ids_out_));
  AddStage("save-index", start, false);
  return Status::OK();
}

// The method and its parameters as one line for the report.
std::string Job::Settings() const {
  std::string s = signer_->settings();
  if (accurate_) s += " k=" + std::to_string(method_.k);  // for SimHash --against indexes
  return s + (options_.empty == EmptyPolicy::kKeep ? " empty=keep"
              : options_.empty == EmptyPolicy::kDrop ? " empty=drop" : " empty=fail");
}

Result<DedupReport> Job::Run() {
  const auto start = Clock::now();
  NEARDUP_RETURN_IF_ERROR(CheckOptions(options_));
  threads_ = ResolveThreads(options_.threads);
  NEARDUP_RETURN_IF_ERROR(DeclareOutputs());
  std::vector<std::string> index_warnings;
  auto method = dedup_internal::SettleMethod(options_, &index_warnings);
  if (!method.ok()) return method.status();
  method_ = std::move(*method);
  accurate_ = method_.method == DedupMethod::kAccurate;
  auto signer = DocumentSigner::Create(method_);
  if (!signer.ok()) return signer.status();
  signer_ = std::move(*signer);
  sketcher_ = signer_->sketcher();
  if (scratch_.path().empty()) return Status::IOError("cannot create a temporary folder");
  progress_.Stage("read");
  auto files = dedup_internal::ExpandInputs(options_, scratch_.path() + "/stdin");
  if (!files.ok()) return files.status();
  files_ = std::move(*files);
  report_.warnings = dedup_internal::InputWarnings(files_, options_);
  report_.warnings.insert(report_.warnings.end(), index_warnings.begin(), index_warnings.end());
  uint64_t total_bytes = 0;
  for (const auto& f : files_) total_bytes += f.size;
  progress_.set_total_bytes(total_bytes);
  NEARDUP_RETURN_IF_ERROR(outputs_.OpenAll());
  NEARDUP_RETURN_IF_ERROR(Fingerprint());
  NEARDUP_RETURN_IF_ERROR(CheckFieldsAndIds());
  NEARDUP_RETURN_IF_ERROR(MatchIndexes());
  NEARDUP_RETURN_IF_ERROR(JoinAndCluster());
  const auto write_start = Clock::now();
  NEARDUP_RETURN_IF_ERROR(WriteDuplicatesAndClusters());
  NEARDUP_RETURN_IF_ERROR(WritePairs());
  AddStage("write-dups-clusters-pairs", write_start, false);
  NEARDUP_RETURN_IF_ERROR(SaveIndex());
  ReleaseGroups();
  NEARDUP_RETURN_IF_ERROR(WriteKept());

  report_.documents = table_.size();
  report_.empty_documents = table_.empty_documents.size();
  report_.empty_dropped = options_.empty == EmptyPolicy::kDrop;
  report_.bytes = table_.bytes;
  report_.skipped = table_.skipped;
  report_.first_errors = table_.first_errors;
  report_.threads = threads_;
  report_.seconds = SecondsSince(start);
  report_.settings = Settings();
  if (report_out_ != nullptr) report_out_->Write(report_.ToJson());
  NEARDUP_RETURN_IF_ERROR(Cancelled());
  // Every output is complete: make them appear, together.
  NEARDUP_RETURN_IF_ERROR(outputs_.CommitAll());
  progress_.Stop();
  return report_;
}

}  // namespace

Result<DedupReport> RunDedup(const DedupOptions& options) {
  Job job(options);
  return job.Run();
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
  return Status::InvalidArgument("unknown input format '" + std::string(name) + "' (expected auto, plain or jsonl)");
}

std::vector<std::string> DedupReport::RunDependentFields() const {
  std::vector<std::string> fields = {"stages", "seconds"};
  if (!pairs_complete) {
    fields.push_back("pairs");
    fields.push_back("candidates");
  }
  return fields;
}

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
    std::snprintf(numbers, sizeof(numbers), ",\"seconds\":%.3f,\"mb_per_second\":%.1f}", stages[i].seconds,
                  stages[i].megabytes_per_second);
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
