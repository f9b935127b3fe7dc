#include "dedup/shards.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <memory>
#include <queue>
#include <string>

#include "neardup/index_store.h"

namespace neardup::dedup_internal {
namespace {

constexpr std::string_view kMagic = "NEARDUP-SHARD\n";
constexpr uint32_t kPartVersion = 2;  // 2: each pair has its estimate
constexpr size_t kInsertBatch = 20000;
constexpr size_t kQueryBatch = 1000;

enum DocumentFlags : uint8_t { kNamedById = 1, kEmpty = 2, kHasPriority = 4 };

// Writes the part through the output layer, hashing every byte for the trailing checksum.
class PartWriter {
 public:
  explicit PartWriter(OutputFile* out) : out_(out) { XXH64_reset(state_.get(), 0); }

  void Bytes(const void* data, size_t n) {
    buffer_.append(static_cast<const char*>(data), n);
    if (buffer_.size() >= (size_t{1} << 20)) Flush();
  }
  void U8(uint8_t v) { Bytes(&v, 1); }
  void U32(uint32_t v) { Bytes(&v, 4); }  // little-endian hosts only (as the index files)
  void U64(uint64_t v) { Bytes(&v, 8); }
  void F64(double v) { Bytes(&v, 8); }
  void String(std::string_view s) {
    U64(s.size());
    Bytes(s.data(), s.size());
  }
  void Finish() {
    Flush();
    const uint64_t checksum = XXH64_digest(state_.get());
    out_->Write(std::string_view(reinterpret_cast<const char*>(&checksum), 8));
  }

 private:
  void Flush() {
    XXH64_update(state_.get(), buffer_.data(), buffer_.size());
    out_->Write(buffer_);
    buffer_.clear();
  }

  struct FreeState {
    void operator()(XXH64_state_t* s) const { XXH64_freeState(s); }
  };
  OutputFile* out_;
  std::string buffer_;
  std::unique_ptr<XXH64_state_t, FreeState> state_{XXH64_createState()};
};

// Reads a part, checking its bounds as it goes; the checksum is checked once the file is read.
class PartReader {
 public:
  static Result<PartReader> Open(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
      return errno == ENOENT ? Status::NotFound(path + ": no such shard part")
                             : Status::IOError(path + ": " + std::strerror(errno));
    }
    std::string data;
    char buffer[1 << 16];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) data.append(buffer, n);
    const bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed) return Status::IOError(path + ": cannot read it");
    if (data.size() < kMagic.size() + 8 || data.compare(0, kMagic.size(), kMagic) != 0) {
      return Status::InvalidArgument(path + ": not a neardup shard part");
    }
    uint64_t stored = 0;
    std::memcpy(&stored, data.data() + data.size() - 8, 8);
    if (XXH64(data.data(), data.size() - 8, 0) != stored) {
      return Status::Corruption(path + ": the shard part is damaged (checksum)");
    }
    data.resize(data.size() - 8);
    return PartReader(path, std::move(data));
  }

  bool ok() const { return ok_; }
  Status status() const {
    return ok_ ? Status::OK() : Status::Corruption(path_ + ": the shard part is cut short");
  }
  void Bytes(void* out, size_t n) {
    if (!ok_ || data_.size() - at_ < n) {
      ok_ = false;
      std::memset(out, 0, n);
      return;
    }
    std::memcpy(out, data_.data() + at_, n);
    at_ += n;
  }
  // A fixed-size value as PartWriter wrote it (0 past the end).
  template <typename T>
  T Get() {
    T v{};
    Bytes(&v, sizeof(T));
    return v;
  }
  uint8_t U8() { return Get<uint8_t>(); }
  uint32_t U32() { return Get<uint32_t>(); }
  uint64_t U64() { return Get<uint64_t>(); }
  double F64() { return Get<double>(); }
  std::string String() {
    const uint64_t n = U64();
    if (!ok_ || n > data_.size() - at_) {
      ok_ = false;
      return {};
    }
    std::string s = data_.substr(at_, n);
    at_ += n;
    return s;
  }
  // A count of items of at least `item_bytes` each, checked against the bytes left.
  uint64_t Count(size_t item_bytes) {
    const uint64_t n = U64();
    if (ok_ && item_bytes > 0 && n > (data_.size() - at_) / item_bytes) ok_ = false;
    return ok_ ? n : 0;
  }
  const std::string& path() const { return path_; }

 private:
  PartReader(std::string path, std::string data)
      : path_(std::move(path)), data_(std::move(data)), at_(kMagic.size()) {}

  std::string path_;
  std::string data_;
  size_t at_;
  bool ok_ = true;
};

// One document of a part, read.
struct PartDocument {
  uint64_t ordinal = 0;
  uint8_t flags = 0;
  std::string id;
  uint32_t length = 0;
  double priority = 0;
  uint64_t fingerprint = 0;
  std::vector<uint8_t> sketch;
  std::vector<uint32_t> band_keys;
};

std::string OrdinalId(uint64_t ordinal) { return std::to_string(ordinal); }

// The first line of the part's job key that differs from the merge's, as ": the part has X, this
// merge Y" (empty when the keys agree: the difference is then in the lines read).
std::string JobKeyDifference(const std::string& part, const std::string& merge) {
  auto lines = [](const std::string& key) {
    std::vector<std::string> out;
    size_t begin = 0;
    while (begin <= key.size()) {
      const size_t end = std::min(key.find('\n', begin), key.size());
      out.push_back(key.substr(begin, end - begin));
      begin = end + 1;
    }
    return out;
  };
  const std::vector<std::string> a = lines(part), b = lines(merge);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "(nothing)";
    const std::string y = i < b.size() ? b[i] : "(nothing)";
    if (x != y) return ": the part has '" + x + "', this merge '" + y + "'";
  }
  return "";
}

}  // namespace

std::string ShardJobKey(const std::vector<InputFile>& files, const JobSettings& settings) {
  const DedupOptions& o = settings.options;
  std::string key = settings.signer.settings();
  key += "\nshards=" + std::to_string(std::max(o.shard_count, 1));
  key += "\nid_field=" + o.id_field + "\ntext_field=" + o.text_field;
  key += "\nkeep=" + std::to_string(static_cast<int>(o.keep)) + " " + o.priority_field;
  key += "\nempty=" + std::to_string(static_cast<int>(o.empty));
  key += "\non_error=" + std::to_string(static_cast<int>(o.on_error));
  key += "\nmax_line_bytes=" + std::to_string(o.max_line_bytes);
  // The shards ask their index down to the margin the merge decides by (ShardQueryFloor).
  if (settings.accurate()) key += "\nboundary_sigmas=" + std::to_string(o.boundary_sigmas);
  for (const InputFile& f : files) {
    key += "\ninput=" + f.name + " " + std::to_string(f.size) + (f.jsonl ? " jsonl" : " text");
  }
  return key;
}

Status RunShard(const std::vector<InputFile>& files, const DocumentTable& table,
                const Signatures& signatures, const JobSettings& settings, OutputFile* out,
                DedupReport* report) {
  const DedupOptions& o = settings.options;
  IndexStoreOptions store_options;
  store_options.store.method = settings.method;
  store_options.store.expected_documents = table.lines;
  store_options.redis = o.redis;
  auto store = IndexStore::Open(o.store, store_options);
  if (!store.ok()) return store.status();
  const uint64_t held = (*store)->Stats().index.documents;
  if (held != 0) {
    return Status::FailedPrecondition(
        o.store + " already holds " + std::to_string(held) +
        " documents: a sharded job needs an index of its own, and a job whose shard failed (or "
        "was started again) must start again, every shard, on a new prefix");
  }
  // "I@N-JOB": the barriers refuse a shard of another job, or given another N, on this index
  // (IndexStore::Arrive) instead of waiting for shards that will never come.
  char job[17];
  const std::string job_key = ShardJobKey(files, settings);
  std::snprintf(job, sizeof(job), "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(job_key.data(), job_key.size())));
  const std::string me =
      std::to_string(o.shard_index) + "@" + std::to_string(o.shard_count) + "-" + job;
  const auto parties = static_cast<size_t>(o.shard_count);
  NEARDUP_RETURN_IF_ERROR((*store)->Arrive("start", me, parties, o.shard_wait_seconds, o.cancel));
  // Insert this shard's documents with features, named by their line ordinals.
  const size_t n = table.size();
  const size_t sketch_bytes = settings.signer.sketch_bytes(), bands = settings.signer.bands();
  auto signature_of = [&](size_t d) {
    Signature s;
    s.simhash = signatures.fingerprints[d];
    s.empty = table.IsEmpty(static_cast<uint32_t>(d));
    if (settings.accurate()) {
      s.sketch.assign(
          signatures.sketches.begin() + static_cast<std::ptrdiff_t>(d * sketch_bytes),
          signatures.sketches.begin() + static_cast<std::ptrdiff_t>((d + 1) * sketch_bytes));
      s.band_keys.assign(
          signatures.band_keys.begin() + static_cast<std::ptrdiff_t>(d * bands),
          signatures.band_keys.begin() + static_cast<std::ptrdiff_t>((d + 1) * bands));
    }
    return s;
  };
  for (size_t d = 0; d < n;) {
    std::vector<SignedDocument> batch;
    for (; d < n && batch.size() < kInsertBatch; ++d) {
      if (table.IsEmpty(static_cast<uint32_t>(d))) continue;
      batch.push_back({OrdinalId(table.ordinals[d]), signature_of(d), ""});
    }
    auto inserted = (*store)->InsertBatch(batch);
    if (!inserted.ok()) return inserted.status();
    for (const StoreInsertResult& r : *inserted) NEARDUP_RETURN_IF_ERROR(r.status);
    NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
  }
  NEARDUP_RETURN_IF_ERROR(
      (*store)->Arrive("inserted", me, parties, o.shard_wait_seconds, o.cancel));
  // Every document's near-duplicates in the whole index.
  const double floor = ShardQueryFloor(settings);
  std::vector<OrdinalPair> pairs;
  for (size_t d = 0; d < n;) {
    std::vector<Signature> batch;
    std::vector<uint64_t> ordinals;
    for (; d < n && batch.size() < kQueryBatch; ++d) {
      if (table.IsEmpty(static_cast<uint32_t>(d))) continue;
      batch.push_back(signature_of(d));
      ordinals.push_back(table.ordinals[d]);
    }
    // Below the threshold by the widest boundary margin: the merge decides those pairs as the
    // single run's join does (ClusterShardPairs).
    auto matches = settings.accurate() ? (*store)->QueryBatchAtLeast(batch, floor)
                                       : (*store)->QueryBatch(batch);
    if (!matches.ok()) return matches.status();
    for (size_t i = 0; i < batch.size(); ++i) {
      for (const OnlineMatch& m : (*matches)[i]) {
        const uint64_t other = std::stoull(m.id);
        if (other == ordinals[i]) continue;
        pairs.push_back({std::min(other, ordinals[i]), std::max(other, ordinals[i]),
                         settings.accurate() ? m.score : 0.0});
      }
    }
    NEARDUP_RETURN_IF_ERROR(settings.Cancelled());
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  report->pairs = pairs.size();
  // The part.
  PartWriter w(out);
  w.Bytes(kMagic.data(), kMagic.size());
  w.U32(kPartVersion);
  w.U32(static_cast<uint32_t>(o.shard_index));
  w.U32(static_cast<uint32_t>(o.shard_count));
  w.String(ShardJobKey(files, settings));
  w.U64(table.lines);
  w.U64(table.bytes);
  w.U64(table.file_starts.size());
  for (uint64_t s : table.file_starts) w.U64(s);
  w.U64(n);
  for (size_t d = 0; d < n; ++d) {
    uint8_t flags = 0;
    if (!table.NamedByLine(d)) flags |= kNamedById;
    if (table.IsEmpty(static_cast<uint32_t>(d))) flags |= kEmpty;
    const bool has_priority = !table.priorities.empty() && table.priorities[d] > -1e308;
    if (has_priority) flags |= kHasPriority;
    w.U64(table.ordinals[d]);
    w.U8(flags);
    if ((flags & kNamedById) != 0) w.String(table.id(d));
    w.U32(table.lengths.empty() ? 0 : table.lengths[d]);
    w.F64(table.priorities.empty() ? -1e308 : table.priorities[d]);
    w.U64(signatures.fingerprints[d]);
    if (settings.accurate()) {
      w.Bytes(signatures.sketches.data() + d * sketch_bytes, sketch_bytes);
      w.Bytes(signatures.band_keys.data() + d * bands, bands * 4);
    }
  }
  // Bad lines with their messages ("path:line: message"), from the table's first errors: a shard
  // keeps every message of its own lines.
  w.U64(table.bad_lines.size());
  for (size_t b = 0; b < table.bad_lines.size(); ++b) {
    w.U64(table.bad_lines[b]);
    w.String(b < table.first_errors.size() ? table.first_errors[b] : std::string());
  }
  w.U64(pairs.size());
  for (const OrdinalPair& p : pairs) {
    w.U64(p.first);
    w.U64(p.second);
    w.F64(p.score);
  }
  w.Finish();
  return out->status();
}

Status ReadShardParts(const std::vector<InputFile>& files, const JobSettings& settings,
                      DocumentTable* table, Signatures* signatures,
                      std::vector<OrdinalPair>* pairs) {
  const DedupOptions& o = settings.options;
  const size_t sketch_bytes = settings.signer.sketch_bytes(), bands = settings.signer.bands();
  std::vector<PartReader> parts;
  std::vector<std::string> seen_by_shard;
  uint32_t shard_count = 0;
  uint64_t lines = 0, bytes = 0;
  std::vector<uint64_t> file_starts;
  for (const std::string& path : o.merge_parts) {
    auto part = PartReader::Open(path);
    if (!part.ok()) return part.status();
    const uint32_t version = part->U32();
    const uint32_t index = part->U32();
    const uint32_t count = part->U32();
    std::string key = part->String();
    const uint64_t part_lines = part->U64();
    const uint64_t part_bytes = part->U64();
    std::vector<uint64_t> starts(part->Count(8));
    for (uint64_t& s : starts) s = part->U64();
    NEARDUP_RETURN_IF_ERROR(part->status());
    if (version != kPartVersion) {
      return Status::InvalidArgument(path + ": shard part version " + std::to_string(version) +
                                     "; this neardup reads version " +
                                     std::to_string(kPartVersion));
    }
    if (shard_count == 0) {
      shard_count = count;
      seen_by_shard.assign(count, "");
      lines = part_lines;
      bytes = part_bytes;
      file_starts = starts;
    }
    // The merge's own key, with the parts' shard count.
    DedupOptions with_count = o;
    with_count.shard_count = static_cast<int>(count);
    const std::string expected = ShardJobKey(
        files, JobSettings{with_count, settings.method, settings.signer, settings.threads});
    if (count != shard_count || key != expected || part_lines != lines || part_bytes != bytes ||
        starts != file_starts) {
      return Status::InvalidArgument(
          path +
          ": this part was made by another job: its inputs, settings, options or shard "
          "count differ from this merge's" +
          (count != shard_count ? " (and from " + o.merge_parts[0] + "'s)" : std::string()) +
          JobKeyDifference(key, expected));
    }
    if (index >= count) return Status::Corruption(path + ": shard index out of range");
    if (!seen_by_shard[index].empty()) {
      return Status::InvalidArgument(path + ": shard " + std::to_string(index) + "/" +
                                     std::to_string(count) + " is given twice (also " +
                                     seen_by_shard[index] + ")");
    }
    seen_by_shard[index] = path;
    parts.push_back(std::move(*part));
  }
  for (uint32_t i = 0; i < shard_count; ++i) {
    if (seen_by_shard[i].empty()) {
      return Status::InvalidArgument("the part of shard " + std::to_string(i) + "/" +
                                     std::to_string(shard_count) + " is missing");
    }
  }
  // Merges the parts' documents in input order.
  const bool want_lengths = o.keep == KeepRule::kLongest || o.keep == KeepRule::kShortest;
  const bool want_priorities = o.keep == KeepRule::kPriority;
  std::vector<uint64_t> remaining(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) remaining[p] = parts[p].Count(13);
  auto read_document = [&](size_t p) {
    PartDocument doc;
    PartReader& r = parts[p];
    doc.ordinal = r.U64();
    doc.flags = r.U8();
    if ((doc.flags & kNamedById) != 0) doc.id = r.String();
    doc.length = r.U32();
    doc.priority = r.F64();
    doc.fingerprint = r.U64();
    if (settings.accurate()) {
      doc.sketch.resize(sketch_bytes);
      doc.band_keys.resize(bands);
      r.Bytes(doc.sketch.data(), sketch_bytes);
      r.Bytes(doc.band_keys.data(), bands * 4);
    }
    return doc;
  };
  using Head = std::pair<uint64_t, size_t>;  // (ordinal, part)
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
  std::vector<PartDocument> current(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    if (remaining[p] == 0) continue;
    current[p] = read_document(p);
    --remaining[p];
    heads.push({current[p].ordinal, p});
  }
  table->lines = lines;
  table->bytes = bytes;
  table->file_starts = file_starts;
  for (const InputFile& f : files) table->file_names.push_back(f.name);
  uint64_t previous = 0;
  bool first = true;
  while (!heads.empty()) {
    const size_t p = heads.top().second;
    heads.pop();
    PartDocument& doc = current[p];
    NEARDUP_RETURN_IF_ERROR(parts[p].status());
    if (!first && doc.ordinal <= previous) {
      return Status::Corruption(parts[p].path() + ": documents out of order or repeated");
    }
    first = false;
    previous = doc.ordinal;
    const auto d = static_cast<uint32_t>(table->documents);
    table->ordinals.push_back(doc.ordinal);
    if ((doc.flags & kEmpty) != 0) table->empty_documents.push_back(d);
    signatures->fingerprints.push_back(doc.fingerprint);
    if (settings.accurate()) {
      signatures->sketches.insert(signatures->sketches.end(), doc.sketch.begin(), doc.sketch.end());
      signatures->band_keys.insert(signatures->band_keys.end(), doc.band_keys.begin(),
                                   doc.band_keys.end());
    }
    ++table->documents;
    if (want_lengths) table->lengths.push_back(doc.length);
    if (want_priorities) table->priorities.push_back(doc.priority);
    if ((doc.flags & kHasPriority) != 0) ++table->documents_with_priority;
    const auto file =
        static_cast<size_t>(std::upper_bound(file_starts.begin(), file_starts.end(), doc.ordinal) -
                            file_starts.begin() - 1);
    if (file < files.size() && files[file].jsonl) ++table->jsonl_documents;
    table->AddId((doc.flags & kNamedById) != 0 ? &doc.id : nullptr);
    if (remaining[p] > 0) {
      current[p] = read_document(p);
      --remaining[p];
      heads.push({current[p].ordinal, p});
    }
  }
  // Bad lines and pairs.
  std::vector<std::pair<uint64_t, std::string>> bad;
  for (PartReader& r : parts) {
    const uint64_t count = r.Count(16);
    for (uint64_t b = 0; b < count; ++b) {
      const uint64_t ordinal = r.U64();
      bad.push_back({ordinal, r.String()});
    }
    const uint64_t pair_count = r.Count(16);
    for (uint64_t x = 0; x < pair_count; ++x) {
      const uint64_t a = r.U64();
      const uint64_t b = r.U64();
      pairs->push_back({a, b, r.F64()});
    }
    NEARDUP_RETURN_IF_ERROR(r.status());
  }
  std::sort(bad.begin(), bad.end());
  for (auto& [ordinal, message] : bad) {
    table->bad_lines.push_back(ordinal);
    ++table->skipped;
    if (table->first_errors.size() < kMaxErrorsKept && !message.empty()) {
      table->first_errors.push_back(std::move(message));
    }
  }
  std::sort(pairs->begin(), pairs->end());
  pairs->erase(std::unique(pairs->begin(), pairs->end()), pairs->end());
  return Status::OK();
}

std::vector<GroupPair> GroupPairsOf(const std::vector<OrdinalPair>& pairs,
                                    const DocumentTable& table, const Grouping& grouping) {
  std::vector<GroupPair> out;
  auto document_of = [&](uint64_t ordinal) -> int64_t {
    auto it = std::lower_bound(table.ordinals.begin(), table.ordinals.end(), ordinal);
    if (it == table.ordinals.end() || *it != ordinal) return -1;
    return it - table.ordinals.begin();
  };
  for (const OrdinalPair& p : pairs) {
    const int64_t a = document_of(p.first), b = document_of(p.second);
    if (a < 0 || b < 0) continue;
    uint32_t ga = grouping.group_of[static_cast<size_t>(a)];
    uint32_t gb = grouping.group_of[static_cast<size_t>(b)];
    if (ga == kNoGroup || gb == kNoGroup || ga == gb) continue;
    if (ga > gb) std::swap(ga, gb);
    out.push_back({ga, gb, p.score});
  }
  // Members of two groups are pairs of the same two signatures: the same estimate.
  std::sort(out.begin(), out.end(), [](const GroupPair& x, const GroupPair& y) {
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const GroupPair& x, const GroupPair& y) {
                          return x.first == y.first && x.second == y.second;
                        }),
            out.end());
  return out;
}

}  // namespace neardup::dedup_internal
