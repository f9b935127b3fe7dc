// Pass 1: one thread reads lines in batches, worker threads parse and fingerprint them, and the
// calling thread appends the results to the table in input order.
#include "dedup/documents.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "dedup/spill.h"
#include "neardup/format.h"
#include "neardup/input.h"
#include "neardup/simhash.h"

namespace neardup::dedup_internal {
namespace {

constexpr size_t kBatchBytes = 1 << 20;
constexpr size_t kBatchLines = 4096;

struct Line {
  uint32_t file;
  uint64_t number;  // 1-based line number in its file
  uint64_t offset;  // into Batch::text
  uint64_t length;
  std::string error;  // set when the reader already found the line bad (too long)
  // Where the line starts in the inputs taken one after another (LineOffsets), or
  // LineReader::kNoOffset (a decompressed input).
  uint64_t at = LineReader::kNoOffset;
};

struct Result1 {
  uint64_t fingerprint = 0;
  uint64_t signature_hash = 0;  // when the signatures are spilled
  uint32_t length = 0;
  double priority = 0;
  bool has_id = false;
  bool empty = false;  // no features
  bool has_priority = false;
  bool foreign = false;  // another shard's line (DedupOptions::shard_count): not read here
  std::string id;        // the id field's value
  std::string error;     // non-empty: a bad document
};

struct Batch {
  uint64_t sequence = 0;
  std::string text;
  std::vector<Line> lines;
  std::vector<Result1> results;
  std::vector<uint8_t> sketches;    // sketch of line i at i * sketch_bytes (with a sketcher)
  std::vector<uint32_t> band_keys;  // band keys of line i at i * bands
};

// The hand-off between the reader, the workers and the collector.
class Pipeline {
 public:
  explicit Pipeline(size_t max_in_flight) : max_in_flight_(max_in_flight) {}

  // Reader: waits while too many batches are in flight. Returns false when the pipeline stopped.
  bool Submit(std::unique_ptr<Batch> batch) {
    std::unique_lock lock(mutex_);
    space_.wait(lock, [&] { return stopped_ || in_flight_ < max_in_flight_; });
    if (stopped_) return false;
    ++in_flight_;
    todo_.push_back(std::move(batch));
    work_.notify_one();
    return true;
  }
  void FinishReading(Status status) {
    std::lock_guard lock(mutex_);
    reading_done_ = true;
    read_status_ = std::move(status);
    work_.notify_all();
    done_.notify_all();
  }

  // Worker: the next batch to process, or null when there is no more work.
  std::unique_ptr<Batch> Take() {
    std::unique_lock lock(mutex_);
    work_.wait(lock, [&] { return stopped_ || !todo_.empty() || reading_done_; });
    if (stopped_ || todo_.empty()) return nullptr;
    auto batch = std::move(todo_.front());
    todo_.pop_front();
    return batch;
  }
  void Done(std::unique_ptr<Batch> batch) {
    std::lock_guard lock(mutex_);
    finished_[batch->sequence] = std::move(batch);
    done_.notify_all();
  }

  // Collector: the batch with the given sequence number, null when reading ended before it (then
  // *status holds the reader's status), waiting at most `timeout`.
  enum class Next { kBatch, kEnd, kTimeout };
  Next Collect(uint64_t sequence, std::chrono::milliseconds timeout, std::unique_ptr<Batch>* out,
               Status* status) {
    std::unique_lock lock(mutex_);
    auto ready = [&] { return finished_.count(sequence) || (reading_done_ && in_flight_ == 0); };
    if (!done_.wait_for(lock, timeout, ready)) return Next::kTimeout;
    auto it = finished_.find(sequence);
    if (it == finished_.end()) {
      *status = read_status_;
      return Next::kEnd;
    }
    *out = std::move(it->second);
    finished_.erase(it);
    --in_flight_;
    space_.notify_one();
    return Next::kBatch;
  }

  void Stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    work_.notify_all();
    space_.notify_all();
    done_.notify_all();
  }

 private:
  const size_t max_in_flight_;
  std::mutex mutex_;
  std::condition_variable space_, work_, done_;
  std::deque<std::unique_ptr<Batch>> todo_;
  std::map<uint64_t, std::unique_ptr<Batch>> finished_;
  size_t in_flight_ = 0;
  bool reading_done_ = false;
  bool stopped_ = false;
  Status read_status_;
};

// file_bytes: each file's length as read (LineReader::kNoOffset for a decompressed one), set
// before the pipeline hears the end of reading.
void ReadAll(const std::vector<InputFile>& files, uint64_t max_line_bytes,
             std::atomic<uint64_t>* bytes_read, std::vector<uint64_t>* file_bytes,
             Pipeline* pipeline) {
  uint64_t sequence = 0, position = 0;
  // Where the current file starts in the inputs taken one after another (kNoOffset once a file
  // without offsets came).
  uint64_t file_start = 0;
  file_bytes->assign(files.size(), LineReader::kNoOffset);
  auto batch = std::make_unique<Batch>();
  std::string scratch;
  std::string_view raw;
  for (uint32_t f = 0; f < files.size(); ++f) {
    auto reader = LineReader::Open(files[f].read_path);
    if (!reader.ok()) {
      // The reader's message names the path it read; a spooled input is named as the user gave it.
      const bool spooled = files[f].read_path != files[f].name;
      pipeline->FinishReading(spooled ? reader.status().WithContext(files[f].name)
                                      : reader.status());
      return;
    }
    while (true) {
      const uint64_t offset = (*reader)->offset();
      const uint64_t at = offset == LineReader::kNoOffset || file_start == LineReader::kNoOffset
                              ? LineReader::kNoOffset
                              : file_start + offset;
      auto more = (*reader)->ReadRawLine(&raw, &scratch, max_line_bytes);
      std::string error;
      std::string_view line;
      if (!more.ok()) {
        if (more.status().code() != Status::Code::kResourceExhausted) {
          pipeline->FinishReading(Status::IOError(more.status().message()));
          return;
        }
        error = "line longer than the limit of " + std::to_string(max_line_bytes) +
                " bytes (--max-line-bytes)";
      } else if (!*more) {
        (*file_bytes)[f] = offset;
        file_start = at == LineReader::kNoOffset ? LineReader::kNoOffset : file_start + offset;
        break;
      } else {
        line = StripLineEnd(raw);
        position += raw.size();
        bytes_read->store(position, std::memory_order_relaxed);
        if ((*reader)->line_number() == 1) line = StripByteOrderMark(line);
      }
      batch->lines.push_back(
          {f, (*reader)->line_number(), batch->text.size(), line.size(), error, at});
      batch->text.append(line);
      if (batch->text.size() >= kBatchBytes || batch->lines.size() >= kBatchLines) {
        batch->sequence = sequence++;
        if (!pipeline->Submit(std::move(batch))) return;
        batch = std::make_unique<Batch>();
      }
    }
  }
  if (!batch->lines.empty()) {
    batch->sequence = sequence++;
    if (!pipeline->Submit(std::move(batch))) return;
  }
  pipeline->FinishReading(Status::OK());
}

void Work(const std::vector<InputFile>& files, const DedupOptions& options,
          const DocumentSigner& signer, bool hash_signatures, Pipeline* pipeline) {
  DocumentSigner::Session session(signer);
  const std::string number_field =
      options.keep == KeepRule::kPriority ? options.priority_field : "";
  JsonlParser parser(options.id_field, options.text_field, number_field);
  parser.set_replace_invalid_utf8(signer.options().features->invalid_utf8 == InvalidUtf8::kReplace);
  JsonlParser::Fields fields;
  const size_t sketch_bytes = signer.sketch_bytes();
  const size_t bands = signer.bands();
  while (auto batch = pipeline->Take()) {
    batch->results.resize(batch->lines.size());
    batch->sketches.assign(batch->lines.size() * sketch_bytes, 0);
    batch->band_keys.assign(batch->lines.size() * bands, 0);
    for (size_t i = 0; i < batch->lines.size(); ++i) {
      const Line& line = batch->lines[i];
      Result1& r = batch->results[i];
      if (options.shard_count > 0 &&
          ShardOfLine(line.file, line.number, options.shard_count) != options.shard_index) {
        r.foreign = true;
        continue;
      }
      if (!line.error.empty()) {
        r.error = line.error;
        continue;
      }
      std::string_view text(batch->text.data() + line.offset, line.length);
      if (files[line.file].jsonl && text.find_first_not_of(" \t\r") == std::string_view::npos) {
        // A blank line of JSON Lines holds no record: a document without features, as a blank
        // line of text is (EmptyPolicy decides), named by its line.
        text = {};
      } else if (files[line.file].jsonl) {
        Status parsed = parser.Parse(text, &fields);
        if (!parsed.ok()) {
          r.error = parsed.message();
          continue;
        }
        text = fields.text;
        r.has_id = fields.has_id;
        if (r.has_id) r.id = fields.id;
        r.priority = fields.has_number ? fields.number : -1e308;
        r.has_priority = fields.has_number;
      }
      r.length = static_cast<uint32_t>(std::min<uint64_t>(text.size(), UINT32_MAX));
      // An empty document gets fingerprint 0, an all-zero sketch and band keys: never joined.
      Status signed_ok = session.Sign(
          text, SignatureSlot{&r.fingerprint, &r.empty,
                              std::span(batch->sketches).subspan(i * sketch_bytes, sketch_bytes),
                              std::span(batch->band_keys).subspan(i * bands, bands)});
      if (!signed_ok.ok()) {
        r.error = signed_ok.message();
      } else if (hash_signatures) {
        r.signature_hash = SignatureHash(
            r.fingerprint, std::span(batch->sketches).subspan(i * sketch_bytes, sketch_bytes),
            std::span(batch->band_keys).subspan(i * bands, bands));
      }
    }
    pipeline->Done(std::move(batch));
  }
}

}  // namespace

uint64_t SignatureHash(uint64_t fingerprint, std::span<const uint8_t> sketch,
                       std::span<const uint32_t> band_keys) {
  const std::string_view sketch_bytes(reinterpret_cast<const char*>(sketch.data()), sketch.size());
  const std::string_view key_bytes(reinterpret_cast<const char*>(band_keys.data()),
                                   band_keys.size() * sizeof(uint32_t));
  return HashFeature(sketch_bytes) ^ (HashFeature(key_bytes) * 0x9E3779B97F4A7C15ULL) ^ fingerprint;
}

int ShardOfLine(uint32_t file, uint64_t line, int shard_count) {
  // The line's place (file, line number) mixed, so that every shard gets a share of every file.
  uint64_t h = (uint64_t{file} << 40) ^ line;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return static_cast<int>(h % static_cast<uint64_t>(shard_count));
}

bool DocumentTable::NamedByLine(size_t d) const { return id_lengths_.empty() || named_by_line_[d]; }

void DocumentTable::AddId(const std::string* explicit_id) {
  if (explicit_id == nullptr && id_lengths_.empty()) return;  // every id so far is a line
  if (id_lengths_
          .empty()) {  // the first id field: the documents before it are named by their lines
    id_lengths_.assign(size() - 1, 0);
    named_by_line_.assign(size() - 1, true);
    id_run_starts_.assign((size() - 1 + kIdRun - 1) / kIdRun, 0);
  }
  if (id_lengths_.size() % kIdRun == 0) id_run_starts_.push_back(id_bytes_.size());
  if (explicit_id != nullptr) id_bytes_.append(*explicit_id);
  // Ids come from lines of at most max_line_bytes; longer than 4 GB is cut (never reached in
  // practice).
  id_lengths_.push_back(explicit_id != nullptr ? static_cast<uint32_t>(std::min<size_t>(
                                                     explicit_id->size(), UINT32_MAX))
                                               : 0);
  named_by_line_.push_back(explicit_id == nullptr);
}

void DocumentTable::ReserveIds(size_t expected) {
  if (id_lengths_.empty() || expected <= id_lengths_.size()) return;
  const double per_document =
      static_cast<double>(id_bytes_.size()) / static_cast<double>(id_lengths_.size());
  id_bytes_.reserve(static_cast<size_t>(per_document * static_cast<double>(expected)));
  id_lengths_.reserve(expected);
  named_by_line_.reserve(expected);
  id_run_starts_.reserve(expected / kIdRun + 1);
}

uint64_t DocumentTable::LineOrdinal(size_t d) const {
  if (!ordinals.empty()) return ordinals[d];  // a shard's lines
  // Document d is the (d+1)-th line that is not bad: find the line ordinal L = d + (bad lines <=
  // L).
  uint64_t skipped_before = 0;
  while (true) {
    const auto bad = static_cast<uint64_t>(
        std::upper_bound(bad_lines.begin(), bad_lines.end(), d + skipped_before) -
        bad_lines.begin());
    if (bad == skipped_before) return d + skipped_before;
    skipped_before = bad;
  }
}

std::pair<size_t, uint64_t> DocumentTable::FileAndLine(size_t d) const {
  const uint64_t ordinal = LineOrdinal(d);
  const auto file = static_cast<size_t>(
      std::upper_bound(file_starts.begin(), file_starts.end(), ordinal) - file_starts.begin() - 1);
  return {file, ordinal - file_starts[file] + 1};
}

std::string DocumentTable::id(size_t d) const {
  if (!id_lengths_.empty() && !named_by_line_[d]) {
    uint64_t begin = id_run_starts_[d / kIdRun];
    for (size_t i = d / kIdRun * kIdRun; i < d; ++i) begin += id_lengths_[i];
    return id_bytes_.substr(begin, id_lengths_[d]);
  }
  const auto [file, line] = FileAndLine(d);
  return file_names.size() > 1 ? file_names[file] + ":" + std::to_string(line)
                               : std::to_string(line);
}

void DocumentTable::ForEachId(const std::function<void(size_t, std::string_view)>& on_id) const {
  uint64_t begin = 0;
  for (size_t d = 0; d < size(); ++d) {
    if (id_lengths_.empty() || named_by_line_[d]) {
      on_id(d, id(d));
    } else {
      on_id(d, std::string_view(id_bytes_).substr(begin, id_lengths_[d]));
    }
    if (!id_lengths_.empty()) begin += id_lengths_[d];
  }
}

std::string DocumentTable::Location(size_t d) const {
  const auto [file, line] = FileAndLine(d);
  return file_names[file] + ":" + std::to_string(line);
}

Status ReadDocuments(const std::vector<InputFile>& files, const DedupOptions& options,
                     const DocumentSigner& signer, int threads,
                     std::atomic<uint64_t>* documents_done, std::atomic<uint64_t>* bytes_read,
                     DocumentTable* table, Signatures* signatures, uint64_t memory_limit,
                     bool record_offsets) {
  Pipeline pipeline(static_cast<size_t>(2 * threads + 2));
  uint64_t total_bytes = 0;
  for (const auto& file : files) total_bytes += file.size;
  bool reserved = false;
  std::vector<uint64_t> file_bytes;
  std::thread reader(
      [&] { ReadAll(files, options.max_line_bytes, bytes_read, &file_bytes, &pipeline); });
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back(
        [&] { Work(files, options, signer, signatures->spill != nullptr, &pipeline); });
  }
  const bool want_lengths =
      options.keep == KeepRule::kLongest || options.keep == KeepRule::kShortest;
  const bool want_priorities = options.keep == KeepRule::kPriority;
  Status status;
  uint64_t sequence = 0;
  while (status.ok()) {
    if (options.cancel != nullptr && options.cancel->load()) {
      status = Status::Cancelled("interrupted");
      break;
    }
    std::unique_ptr<Batch> batch;
    Status read_status;
    auto next = pipeline.Collect(sequence, std::chrono::milliseconds(100), &batch, &read_status);
    if (next == Pipeline::Next::kTimeout) continue;
    if (next == Pipeline::Next::kEnd) {
      status = read_status;
      break;
    }
    ++sequence;
    if (!reserved && table->bytes >= kBatchBytes) {
      // The per-document arrays are sized once from the input size and the documents seen so far,
      // so that they do not double (and briefly need three times their size) while growing.
      reserved = true;
      const double estimate = 1.1 * static_cast<double>(total_bytes) *
                              static_cast<double>(table->documents) /
                              static_cast<double>(table->bytes);
      const auto expected = static_cast<size_t>(std::min(estimate, 4.3e9)) + 4096;
      signatures->fingerprints.reserve(expected);
      table->ReserveIds(expected);
      if (record_offsets) table->line_offsets.Reserve(expected);
      if (signatures->spill != nullptr) {
        signatures->signature_hashes.reserve(expected);
      } else {
        signatures->sketches.reserve(expected * signer.sketch_bytes());
        signatures->band_keys.reserve(expected * signer.bands());
      }
    }
    for (size_t i = 0; i < batch->lines.size() && status.ok(); ++i) {
      const Line& line = batch->lines[i];
      Result1& r = batch->results[i];
      table->bytes += line.length;
      while (table->file_starts.size() <= line.file) table->file_starts.push_back(table->lines);
      const uint64_t ordinal = table->lines++;
      if (r.foreign) continue;
      if (r.empty && options.empty == EmptyPolicy::kFail) {
        r.error =
            "no features: a blank line or text of symbols only (--empty keep or drop lets it "
            "through)";
      }
      if (!r.error.empty()) {
        std::string message =
            files[line.file].name + ":" + std::to_string(line.number) + ": " + r.error;
        if (options.on_error == ErrorPolicy::kFail) {
          status =
              Status::InvalidArgument(message + " (--on-error skip leaves such documents out)");
          break;
        }
        table->bad_lines.push_back(ordinal);
        ++table->skipped;
        if (table->first_errors.size() < kMaxErrorsKept)
          table->first_errors.push_back(std::move(message));
        continue;
      }
      if (options.shard_count > 0) table->ordinals.push_back(ordinal);
      if (record_offsets) {
        if (line.at == LineReader::kNoOffset) {
          record_offsets = false;
          table->line_offsets.Clear();
        } else {
          table->line_offsets.Add(line.at);
        }
      }
      if (r.empty) table->empty_documents.push_back(static_cast<uint32_t>(table->documents));
      signatures->fingerprints.push_back(r.fingerprint);
      ++table->documents;
      if (signatures->spill != nullptr) {
        const size_t bytes = signer.sketch_bytes(), bands = signer.bands();
        status =
            signatures->spill->Append(&batch->sketches[i * bytes], &batch->band_keys[i * bands]);
        signatures->signature_hashes.push_back(r.signature_hash);
      } else if (signer.sketcher() != nullptr) {
        const size_t bytes = signer.sketch_bytes(), bands = signer.bands();
        signatures->sketches.insert(
            signatures->sketches.end(),
            batch->sketches.begin() + static_cast<std::ptrdiff_t>(i * bytes),
            batch->sketches.begin() + static_cast<std::ptrdiff_t>((i + 1) * bytes));
        signatures->band_keys.insert(
            signatures->band_keys.end(),
            batch->band_keys.begin() + static_cast<std::ptrdiff_t>(i * bands),
            batch->band_keys.begin() + static_cast<std::ptrdiff_t>((i + 1) * bands));
      }
      if (want_lengths) table->lengths.push_back(r.length);
      if (want_priorities) table->priorities.push_back(r.priority);
      if (r.has_priority) ++table->documents_with_priority;
      if (files[line.file].jsonl) ++table->jsonl_documents;
      table->AddId(r.has_id ? &r.id : nullptr);
    }
    documents_done->store(table->documents, std::memory_order_relaxed);
    const uint64_t held = signatures->sketches.size() + signatures->band_keys.size() * 4 +
                          signatures->fingerprints.size() * 8;
    if (status.ok() && memory_limit > 0 && held > memory_limit) {
      status = Status::ResourceExhausted(
          "the signatures of " + std::to_string(table->documents) + " documents take " +
          ByteSize(held) + ", over the memory limit of " + ByteSize(memory_limit) +
          ": every pair, a saved index and --against keep them in memory (--memory raises "
          "the limit; without those options the signatures go to temporary files)");
    }
  }
  pipeline.Stop();
  while (table->file_starts.size() < files.size()) table->file_starts.push_back(table->lines);
  for (const auto& file : files) table->file_names.push_back(file.name);
  reader.join();
  for (auto& w : workers) w.join();
  if (record_offsets && status.ok()) {
    table->file_byte_starts = {0};
    for (uint64_t bytes : file_bytes) {
      if (bytes == LineReader::kNoOffset) break;
      table->file_byte_starts.push_back(table->file_byte_starts.back() + bytes);
    }
    if (table->file_byte_starts.size() != files.size() + 1) {
      table->line_offsets.Clear();
      table->file_byte_starts.clear();
    }
  } else {
    table->line_offsets.Clear();
  }
  return status;
}

}  // namespace neardup::dedup_internal
