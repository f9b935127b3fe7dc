// The steps of a dedup job spread over many processes (python/neardup/dask): reading and signing a
// range of an input's lines exactly as `neardup dedup` does, verifying the documents of the band
// buckets, clustering the pairs found, and writing the kept lines of a range. The Python layer
// moves the data between the steps (Dask's shuffle); every decision about a document is made here,
// with the library's own rules, so that the job's outputs are the single run's.
#include <fcntl.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "neardup/format.h"
#include "neardup/input.h"
#include "neardup/method.h"
#include "neardup/output.h"

namespace neardup::python {
namespace {

constexpr uint64_t kWholeFile = std::numeric_limits<uint64_t>::max();

// A vector's values as a 1-d array.
template <typename T>
py::array_t<T> ToArray(const std::vector<T>& values) {
  py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * sizeof(T));
  return out;
}

// What the job knows of one input line once it is read and signed.
struct LineRecord {
  uint64_t local = 0;  // 0-based line number in the range
  bool bad = false;
  std::string error;  // bad lines: why (no location: the caller knows where the range is)
  bool has_id = false;
  std::string id;
  bool empty = false;
  bool has_priority = false;
  double priority = -1e308;
  uint32_t length = 0;
  uint64_t fingerprint = 0;
};

// How the lines of an input become documents (DedupOptions' fields of the same names).
struct LineFormat {
  bool jsonl = false;
  std::string id_field;
  std::string text_field;
  std::string priority_field;  // empty unless the job keeps by priority
  uint64_t max_line_bytes = 0;
};

// The lines of a range of a file, one at a time: [start, end) of a plain file owns the lines that
// begin there; a whole file (start 0, end kWholeFile) is read by the library's reader, which also
// decompresses .gz and .zst. `on_line(raw, too_long)` gets each line with its terminator.
class RangeLines {
 public:
  static Result<std::unique_ptr<RangeLines>> Open(const std::string& path, uint64_t start,
                                                  uint64_t end, uint64_t max_line_bytes) {
    auto lines = std::unique_ptr<RangeLines>(new RangeLines(max_line_bytes));
    if (start == 0 && end == kWholeFile) {
      auto reader = LineReader::Open(path);
      if (!reader.ok()) return reader.status();
      lines->reader_ = std::move(*reader);
      return lines;
    }
    NEARDUP_RETURN_IF_ERROR(lines->ReadRange(path, start, end));
    return lines;
  }

  // The next line (terminator included) in *raw, or false at the end. *too_long: the line is longer
  // than the limit (its content is then not given).
  Result<bool> Next(std::string_view* raw, bool* too_long) {
    *too_long = false;
    if (reader_ != nullptr) {
      auto more = reader_->ReadRawLine(raw, &scratch_, max_line_bytes_);
      if (!more.ok()) {
        if (more.status().code() != Status::Code::kResourceExhausted) return more.status();
        *too_long = true;
        *raw = std::string_view();
        return true;
      }
      return *more;
    }
    if (position_ >= data_.size()) return false;
    const size_t newline = data_.find('\n', position_);
    const size_t stop = newline == std::string::npos ? data_.size() : newline + 1;
    *raw = std::string_view(data_).substr(position_, stop - position_);
    position_ = stop;
    if (StripLineEnd(*raw).size() > max_line_bytes_) {
      *too_long = true;
      *raw = std::string_view();
    }
    return true;
  }

 private:
  explicit RangeLines(uint64_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // Reads from the first line that begins in [start, end) to the end of the last one.
  Status ReadRange(const std::string& path, uint64_t start, uint64_t end) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
    Status status = ReadFrom(fd, path, start, end);
    ::close(fd);
    return status;
  }

  // Appends up to `size` bytes at `offset` to data_; *eof when the file ended before.
  Status Append(int fd, const std::string& path, uint64_t offset, uint64_t size, bool* eof) {
    *eof = false;
    while (size > 0) {
      const size_t before = data_.size();
      const size_t want = static_cast<size_t>(std::min<uint64_t>(size, uint64_t{1} << 24));
      data_.resize(before + want);
      ssize_t got;
      do {
        got = ::pread(fd, data_.data() + before, want, static_cast<off_t>(offset));
      } while (got < 0 && errno == EINTR);
      if (got < 0) {
        data_.resize(before);
        return Status::IOError(path + ": cannot read: " + std::strerror(errno));
      }
      data_.resize(before + static_cast<size_t>(got));
      if (got == 0) {
        *eof = true;
        return Status::OK();
      }
      offset += static_cast<uint64_t>(got);
      size -= static_cast<uint64_t>(got);
    }
    return Status::OK();
  }

  Status ReadFrom(int fd, const std::string& path, uint64_t start, uint64_t end) {
    if (end <= start) return Status::OK();
    // A line begins at `start` only if the byte before it ends a line: read from there.
    const uint64_t from = start == 0 ? 0 : start - 1;
    bool eof = false;
    NEARDUP_RETURN_IF_ERROR(Append(fd, path, from, end - from, &eof));
    size_t first = 0;
    if (start > 0) {
      const size_t newline = data_.find('\n');
      // No line begins in the range: the one that began before it runs through it.
      if (newline == std::string::npos || from + newline + 1 >= end) {
        data_.clear();
        return Status::OK();
      }
      first = newline + 1;
    }
    // The last line runs on past the range's end to its own.
    uint64_t at = from + data_.size();
    while (!eof && !data_.empty() && data_.back() != '\n') {
      const size_t before = data_.size();
      NEARDUP_RETURN_IF_ERROR(Append(fd, path, at, uint64_t{1} << 20, &eof));
      at = from + data_.size();
      const size_t newline = data_.find('\n', before);
      if (newline != std::string::npos) {
        data_.resize(newline + 1);
        break;
      }
    }
    position_ = first;
    return Status::OK();
  }

  uint64_t max_line_bytes_;
  std::unique_ptr<LineReader> reader_;
  std::string scratch_;
  std::string data_;  // ranges of plain files
  size_t position_ = 0;
};

// The signer of a job and what it does with lines and band buckets. Created from the settings line
// (SettingsLine of the run's resolved options) and the document size limit, which is all a worker
// needs: the object pickles as those two.
class JobSigner {
 public:
  JobSigner(const std::string& settings, uint64_t max_document_bytes)
      : max_document_bytes_(max_document_bytes) {
    MethodOptions options = ValueOrThrow(ParseSettingsLine(settings));
    if (options.features) options.features->max_document_bytes = max_document_bytes;
    signer_ = ValueOrThrow(DocumentSigner::Create(options));
    settings_ = signer_->settings();
    if (signer_->sketcher() == nullptr) {
      throw py::value_error(
          "the distributed job runs the accurate method (sketches and band keys); got " + settings);
    }
  }

  const std::string& settings() const { return settings_; }
  uint64_t max_document_bytes() const { return max_document_bytes_; }
  size_t sketch_bytes() const { return signer_->sketch_bytes(); }
  size_t bands() const { return signer_->bands(); }
  double threshold() const { return signer_->options().threshold; }
  const Sketcher& sketcher() const { return *signer_->sketcher(); }

  // Reads and signs the lines of [start, end) of `path` (see RangeLines).
  py::dict SignRange(const std::string& path, uint64_t start, uint64_t end,
                     const LineFormat& format) const {
    std::vector<LineRecord> records;
    std::vector<uint8_t> sketches;
    std::vector<uint32_t> band_keys;
    uint64_t lines = 0, bytes = 0;
    Status status;
    {
      py::gil_scoped_release release;
      status = [&]() -> Status {
        auto range = RangeLines::Open(path, start, end, format.max_line_bytes);
        if (!range.ok()) return range.status();
        DocumentSigner::Session session(*signer_);
        JsonlParser parser(format.id_field, format.text_field, format.priority_field);
        parser.set_replace_invalid_utf8(signer_->options().features->invalid_utf8 ==
                                        InvalidUtf8::kReplace);
        JsonlParser::Fields fields;
        std::string_view raw;
        bool too_long = false;
        while (true) {
          auto more = (*range)->Next(&raw, &too_long);
          if (!more.ok()) return more.status();
          if (!*more) return Status::OK();
          std::string_view line = StripLineEnd(raw);
          if (start == 0 && lines == 0) line = StripByteOrderMark(line);
          LineRecord r;
          r.local = lines++;
          bytes += line.size();
          SignLine(line, too_long, format, &session, &parser, &fields, &r, &sketches, &band_keys);
          records.push_back(std::move(r));
        }
      }();
    }
    ThrowIfError(status);
    return Pack(records, sketches, band_keys, lines, bytes);
  }

  // Signs in-memory documents: texts (str or bytes), ids (None: named by position), priorities
  // (None: none). The same records as SignRange, one line a document.
  py::dict SignTexts(const py::list& texts, const py::object& ids,
                     const py::object& priorities) const {
    const size_t n = texts.size();
    std::vector<std::string> owned(n);
    std::vector<LineRecord> records(n);
    for (size_t i = 0; i < n; ++i) {
      const py::handle text = texts[i];
      records[i].local = i;
      if (text.is_none()) {
        records[i].bad = true;
        records[i].error = "no text (None)";
        continue;
      }
      owned[i] = TextArgument(text, "a document's text");
    }
    if (!ids.is_none()) {
      const py::list id_list = ids;
      if (id_list.size() != n) throw py::value_error("ids and texts differ in length");
      for (size_t i = 0; i < n; ++i) {
        if (id_list[i].is_none()) continue;
        records[i].has_id = true;
        records[i].id = py::isinstance<py::str>(id_list[i]) || py::isinstance<py::bytes>(id_list[i])
                            ? TextArgument(id_list[i], "an id")
                            : py::str(id_list[i]).cast<std::string>();
      }
    }
    if (!priorities.is_none()) {
      const py::list priority_list = priorities;
      if (priority_list.size() != n) throw py::value_error("priorities and texts differ in length");
      for (size_t i = 0; i < n; ++i) {
        if (priority_list[i].is_none()) continue;
        records[i].has_priority = true;
        records[i].priority = priority_list[i].cast<double>();
      }
    }
    std::vector<uint8_t> sketches(n * sketch_bytes());
    std::vector<uint32_t> band_keys(n * bands());
    uint64_t bytes = 0;
    {
      py::gil_scoped_release release;
      DocumentSigner::Session session(*signer_);
      for (size_t i = 0; i < n; ++i) {
        LineRecord& r = records[i];
        bytes += owned[i].size();
        if (r.bad) continue;
        r.length = static_cast<uint32_t>(std::min<size_t>(owned[i].size(), UINT32_MAX));
        Status signed_ok = session.Sign(owned[i], SlotOf(i, &r, &sketches, &band_keys));
        if (!signed_ok.ok()) {
          r.bad = true;
          r.error = signed_ok.message();
        }
      }
    }
    // Pack drops the records' sketches by position: here every record has one.
    return Pack(records, sketches, band_keys, n, bytes);
  }

  // Whether row i of `a` and row i of `b` are near-duplicates by the join's test (the sketches
  // estimate Jaccard >= threshold).
  py::array_t<bool> Passes(
      py::array_t<uint8_t, py::array::c_style | py::array::forcecast> a,
      py::array_t<uint8_t, py::array::c_style | py::array::forcecast> b) const {
    const size_t width = sketch_bytes();
    if (a.size() != b.size() || static_cast<size_t>(a.size()) % width != 0) {
      throw py::value_error("passes: two arrays of n x " + std::to_string(width) +
                            " bytes expected");
    }
    const size_t n = static_cast<size_t>(a.size()) / width;
    py::array_t<bool> out(static_cast<py::ssize_t>(n));
    bool* pass = out.mutable_data();
    const uint8_t* pa = a.data();
    const uint8_t* pb = b.data();
    const Sketcher& sketcher = *signer_->sketcher();
    const double threshold = signer_->options().threshold;
    {
      py::gil_scoped_release release;
      for (size_t i = 0; i < n; ++i) {
        pass[i] =
            sketcher.EstimateIfAtLeast(pa + i * width, pb + i * width, threshold) >= threshold;
      }
    }
    return out;
  }

  // The estimated Jaccard of row i of `a` and row i of `b` (the dups output's score).
  py::array_t<double> Estimate(
      py::array_t<uint8_t, py::array::c_style | py::array::forcecast> a,
      py::array_t<uint8_t, py::array::c_style | py::array::forcecast> b) const {
    const size_t width = sketch_bytes();
    if (a.size() != b.size() || static_cast<size_t>(a.size()) % width != 0) {
      throw py::value_error("estimate: two arrays of n x " + std::to_string(width) +
                            " bytes expected");
    }
    const size_t n = static_cast<size_t>(a.size()) / width;
    py::array_t<double> out(static_cast<py::ssize_t>(n));
    double* scores = out.mutable_data();
    const uint8_t* pa = a.data();
    const uint8_t* pb = b.data();
    const Sketcher& sketcher = *signer_->sketcher();
    for (size_t i = 0; i < n; ++i) scores[i] = sketcher.Estimate(pa + i * width, pb + i * width);
    return out;
  }

 private:
  SignatureSlot SlotOf(size_t i, LineRecord* r, std::vector<uint8_t>* sketches,
                       std::vector<uint32_t>* band_keys) const {
    return SignatureSlot{&r->fingerprint, &r->empty,
                         std::span(*sketches).subspan(i * sketch_bytes(), sketch_bytes()),
                         std::span(*band_keys).subspan(i * bands(), bands())};
  }

  // One line as the dedup job's workers take it (src/dedup/documents.cc).
  void SignLine(std::string_view line, bool too_long, const LineFormat& format,
                DocumentSigner::Session* session, JsonlParser* parser, JsonlParser::Fields* fields,
                LineRecord* r, std::vector<uint8_t>* sketches,
                std::vector<uint32_t>* band_keys) const {
    const size_t slot = sketches->size() / sketch_bytes();
    if (too_long) {
      r->bad = true;
      r->error = "line longer than the limit of " + std::to_string(format.max_line_bytes) +
                 " bytes (--max-line-bytes)";
      return;
    }
    std::string_view text = line;
    if (format.jsonl) {
      Status parsed = parser->Parse(line, fields);
      if (!parsed.ok()) {
        r->bad = true;
        r->error = parsed.message();
        return;
      }
      text = fields->text;
      r->has_id = fields->has_id;
      if (r->has_id) r->id = fields->id;
      r->priority = fields->has_number ? fields->number : -1e308;
      r->has_priority = fields->has_number;
    }
    r->length = static_cast<uint32_t>(std::min<uint64_t>(text.size(), UINT32_MAX));
    sketches->resize(sketches->size() + sketch_bytes());
    band_keys->resize(band_keys->size() + bands());
    Status signed_ok = session->Sign(text, SlotOf(slot, r, sketches, band_keys));
    if (!signed_ok.ok()) {
      r->bad = true;
      r->error = signed_ok.message();
      sketches->resize(slot * sketch_bytes());
      band_keys->resize(slot * bands());
    }
  }

  // The records as arrays of the good documents (in line order) and a list of the bad lines.
  // SignRange keeps signatures for good lines only; SignTexts one per record (dense == false).
  py::dict Pack(const std::vector<LineRecord>& records, const std::vector<uint8_t>& sketches,
                const std::vector<uint32_t>& band_keys, uint64_t lines, uint64_t bytes) const {
    const bool dense = sketches.size() == records.size() * sketch_bytes();
    size_t good = 0;
    for (const LineRecord& r : records) good += r.bad ? 0 : 1;
    py::array_t<uint64_t> local(static_cast<py::ssize_t>(good));
    py::array_t<uint8_t> flags(static_cast<py::ssize_t>(good));
    py::array_t<uint32_t> lengths(static_cast<py::ssize_t>(good));
    py::array_t<double> priorities(static_cast<py::ssize_t>(good));
    py::array_t<uint64_t> fingerprints(static_cast<py::ssize_t>(good));
    py::array_t<uint8_t> sketch_out(
        {static_cast<py::ssize_t>(good), static_cast<py::ssize_t>(sketch_bytes())});
    py::array_t<uint32_t> band_out(
        {static_cast<py::ssize_t>(good), static_cast<py::ssize_t>(bands())});
    py::list ids;
    py::list bad_lines;
    size_t k = 0, slot = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      const LineRecord& r = records[i];
      const size_t source = dense ? i : slot;
      if (r.bad) {
        bad_lines.append(py::make_tuple(r.local, py::str(r.error)));
        continue;
      }
      local.mutable_at(k) = r.local;
      flags.mutable_at(k) =
          static_cast<uint8_t>((r.has_id ? 1 : 0) | (r.empty ? 2 : 0) | (r.has_priority ? 4 : 0));
      lengths.mutable_at(k) = r.length;
      priorities.mutable_at(k) = r.priority;
      fingerprints.mutable_at(k) = r.fingerprint;
      std::memcpy(sketch_out.mutable_data(k, 0), &sketches[source * sketch_bytes()],
                  sketch_bytes());
      std::memcpy(band_out.mutable_data(k, 0), &band_keys[source * bands()],
                  bands() * sizeof(uint32_t));
      ids.append(r.has_id ? py::object(py::bytes(r.id)) : py::object(py::none()));
      ++k;
      ++slot;
    }
    py::dict out;
    out["lines"] = lines;
    out["bytes"] = bytes;
    out["local"] = local;
    out["flags"] = flags;
    out["lengths"] = lengths;
    out["priorities"] = priorities;
    out["fingerprints"] = fingerprints;
    out["sketches"] = sketch_out;
    out["band_keys"] = band_out;
    out["ids"] = ids;
    out["bad"] = bad_lines;
    return out;
  }

  std::string settings_;
  uint64_t max_document_bytes_ = 0;
  std::unique_ptr<DocumentSigner> signer_;
};

// Connected components of the graph of pairs (a[i], b[i]): the nodes (sorted) and, for each, the
// smallest node of its component.
py::tuple Components(py::array_t<uint64_t, py::array::c_style | py::array::forcecast> a,
                     py::array_t<uint64_t, py::array::c_style | py::array::forcecast> b) {
  if (a.size() != b.size()) throw py::value_error("components: a and b differ in length");
  const auto n = static_cast<size_t>(a.size());
  std::vector<uint64_t> nodes;
  std::vector<uint64_t> roots;
  {
    const uint64_t* pa = a.data();
    const uint64_t* pb = b.data();
    py::gil_scoped_release release;
    nodes.reserve(2 * n);
    nodes.insert(nodes.end(), pa, pa + n);
    nodes.insert(nodes.end(), pb, pb + n);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    auto index = [&](uint64_t node) {
      return static_cast<uint32_t>(std::lower_bound(nodes.begin(), nodes.end(), node) -
                                   nodes.begin());
    };
    std::vector<uint32_t> parent(nodes.size());
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](uint32_t x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    for (size_t i = 0; i < n; ++i) {
      const uint32_t x = find(index(pa[i])), y = find(index(pb[i]));
      if (x != y) parent[std::max(x, y)] = std::min(x, y);  // the root is the smallest node
    }
    roots.resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) roots[i] = nodes[find(static_cast<uint32_t>(i))];
  }
  py::array_t<uint64_t> node_out(static_cast<py::ssize_t>(nodes.size()));
  py::array_t<uint64_t> root_out(static_cast<py::ssize_t>(roots.size()));
  if (!nodes.empty()) {
    std::memcpy(node_out.mutable_data(), nodes.data(), nodes.size() * 8);
    std::memcpy(root_out.mutable_data(), roots.data(), roots.size() * 8);
  }
  return py::make_tuple(node_out, root_out);
}

// The target partition of a band row of the job's shuffle: key = band number << 32 | band key, the
// band key's bits mixed with the band number's so that every band spreads evenly over the targets.
uint64_t TargetOf(uint64_t key, uint64_t partitions) {
  return ((key & 0xFFFFFFFFu) ^ ((key >> 32) * uint64_t{0x9E3779B1})) % partitions;
}

using RowArray = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>;

// One (key, ordinal) row of the band shuffle.
struct BandRow {
  uint64_t key;
  uint64_t ordinal;
  friend bool operator<(const BandRow& x, const BandRow& y) {
    return x.key != y.key ? x.key < y.key : x.ordinal < y.ordinal;
  }
  friend bool operator==(const BandRow& x, const BandRow& y) = default;
};
static_assert(sizeof(BandRow) == 2 * sizeof(uint64_t), "rows are copied from n x 2 arrays");

// Sorts rows by key then ordinal: a stable radix sort on the key's bits (11 a pass, passes over
// bits that every row has alike skipped), then each run of one key sorted by ordinal if it is
// not already (the pieces of a target come in partition order, so runs usually are).
void SortRows(std::vector<BandRow>* rows) {
  constexpr int kDigitBits = 11;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  const size_t n = rows->size();
  if (n < 2) return;
  uint64_t all_or = 0, all_and = ~uint64_t{0};
  for (const BandRow& row : *rows) {
    all_or |= row.key;
    all_and &= row.key;
  }
  const uint64_t varying = all_or & ~all_and;
  std::vector<BandRow> scratch(n);
  std::vector<size_t> count(kBuckets);
  for (int shift = 0; shift < 64; shift += kDigitBits) {
    if (((varying >> shift) & (kBuckets - 1)) == 0) continue;
    std::fill(count.begin(), count.end(), 0);
    for (const BandRow& row : *rows) ++count[(row.key >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (size_t& c : count) {
      const size_t here = c;
      c = sum;
      sum += here;
    }
    for (const BandRow& row : *rows) scratch[count[(row.key >> shift) & (kBuckets - 1)]++] = row;
    rows->swap(scratch);
  }
  for (size_t begin = 0; begin < n;) {
    size_t end = begin + 1;
    bool sorted = true;
    for (; end < n && (*rows)[end].key == (*rows)[begin].key; ++end) {
      sorted = sorted && (*rows)[end - 1].ordinal <= (*rows)[end].ordinal;
    }
    if (!sorted) std::sort(rows->begin() + begin, rows->begin() + end);
    begin = end;
  }
}

// The rows of n x `width` uint64 arrays, checked. Rows of width 2 are BandRows.
std::vector<RowArray> RowArrays(const py::list& pieces, py::ssize_t width, const char* what) {
  std::vector<RowArray> arrays;
  for (const py::handle piece : pieces) {
    auto array = RowArray::ensure(piece);
    if (!array || (array.size() > 0 && (array.ndim() != 2 || array.shape(1) != width))) {
      throw py::value_error(std::string(what) + ": pieces must be n x " + std::to_string(width) +
                            " arrays of uint64");
    }
    arrays.push_back(std::move(array));
  }
  return arrays;
}

std::vector<BandRow> ConcatRows(const std::vector<RowArray>& arrays) {
  size_t total = 0;
  for (const RowArray& array : arrays) total += static_cast<size_t>(array.size()) / 2;
  std::vector<BandRow> rows(total);
  size_t at = 0;
  for (const RowArray& array : arrays) {
    const size_t count = static_cast<size_t>(array.size()) / 2;
    if (count > 0) std::memcpy(&rows[at], array.data(), count * sizeof(BandRow));
    at += count;
  }
  return rows;
}

// The rows of a 2-d array `buckets` (n x 2: key, ordinal, sorted by key then ordinal).
const BandRow* BucketRows(const RowArray& buckets, size_t* n) {
  if (buckets.size() > 0 && (buckets.ndim() != 2 || buckets.shape(1) != 2)) {
    throw py::value_error("buckets must be an n x 2 array of (key, ordinal)");
  }
  *n = static_cast<size_t>(buckets.size()) / 2;
  return reinterpret_cast<const BandRow*>(buckets.data());
}

// Calls visit(begin, end) for each run of one key of sorted rows.
template <typename Visit>
void ForEachKeyRun(const BandRow* rows, size_t n, Visit&& visit) {
  for (size_t begin = 0; begin < n;) {
    size_t end = begin + 1;
    while (end < n && rows[end].key == rows[begin].key) ++end;
    visit(begin, end);
    begin = end;
  }
}

// Rows of `width` uint64 each, split by the partition of their ordinal (in column `by`, its high
// 32 bits), in order: one n x width array a partition.
py::list SplitByOwner(const std::vector<uint64_t>& values, size_t width, size_t by,
                      uint64_t partitions) {
  const size_t n = values.size() / width;
  std::vector<size_t> count(partitions, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t owner = values[i * width + by] >> 32;
    if (owner >= partitions) {
      throw py::value_error("an ordinal's partition " + std::to_string(owner) +
                            " is not below partitions = " + std::to_string(partitions));
    }
    ++count[owner];
  }
  py::list pieces;
  std::vector<uint64_t*> out(partitions);
  for (uint64_t t = 0; t < partitions; ++t) {
    py::array_t<uint64_t> piece(
        {static_cast<py::ssize_t>(count[t]), static_cast<py::ssize_t>(width)});
    out[t] = piece.mutable_data();
    pieces.append(piece);
  }
  for (size_t i = 0; i < n; ++i) {
    uint64_t*& at = out[values[i * width + by] >> 32];
    std::memcpy(at, &values[i * width], width * sizeof(uint64_t));
    at += width;
  }
  return pieces;
}

// The band shuffle's pieces. A piece holds the band rows one source partition sends to one target,
// 8 bytes a row: a 1-d uint32 array [partition, bands, count of band 0, ..., count of band
// bands - 1], then for each band in turn its rows (band key, local line number), in the source's
// document order. The band number and the partition, half of a 16-byte (key, ordinal) row, are
// implied by the piece; the targets rebuild the rows of the keys they find shared.
constexpr size_t kPieceHeader = 2;

// The band rows of one partition's documents, one piece a target partition: every band of every
// usable document (local line number below 2^32).
py::list BandPieces(py::array_t<uint32_t, py::array::c_style | py::array::forcecast> band_keys,
                    RowArray locals,
                    py::array_t<bool, py::array::c_style | py::array::forcecast> usable,
                    uint64_t partition, uint64_t partitions) {
  const auto n = static_cast<size_t>(locals.size());
  if (partitions == 0 || partition > 0xFFFFFFFFu) {
    throw py::value_error("band_pieces: a partition below 2^32 and at least one target expected");
  }
  if (static_cast<size_t>(usable.size()) != n) {
    throw py::value_error("band_pieces: locals and usable differ in length");
  }
  size_t bands = 0;
  if (n > 0) {
    if (band_keys.ndim() != 2 || static_cast<size_t>(band_keys.shape(0)) != n) {
      throw py::value_error("band_pieces: band_keys must be an n x bands array, n = len(locals)");
    }
    bands = static_cast<size_t>(band_keys.shape(1));
  }
  const uint32_t* keys = band_keys.data();
  const uint64_t* local = locals.data();
  const bool* use = usable.data();
  for (size_t i = 0; i < n; ++i) {
    if (use[i] && local[i] > 0xFFFFFFFFu) {
      throw py::value_error("band_pieces: a local line number is not below 2^32");
    }
  }
  auto target_of = [&](size_t i, size_t b) {
    return TargetOf((static_cast<uint64_t>(b) << 32) | keys[i * bands + b], partitions);
  };
  // count[t * bands + b]: the rows of band b for target t.
  std::vector<size_t> count(partitions * bands, 0);
  {
    py::gil_scoped_release release;
    for (size_t i = 0; i < n; ++i) {
      if (!use[i]) continue;
      for (size_t b = 0; b < bands; ++b) ++count[target_of(i, b) * bands + b];
    }
  }
  py::list pieces;
  std::vector<uint32_t*> at(partitions * bands);
  for (uint64_t t = 0; t < partitions; ++t) {
    size_t rows = 0;
    for (size_t b = 0; b < bands; ++b) rows += count[t * bands + b];
    py::array_t<uint32_t> piece(static_cast<py::ssize_t>(kPieceHeader + bands + 2 * rows));
    uint32_t* out = piece.mutable_data();
    out[0] = static_cast<uint32_t>(partition);
    out[1] = static_cast<uint32_t>(bands);
    uint32_t* next = out + kPieceHeader + bands;
    for (size_t b = 0; b < bands; ++b) {
      if (count[t * bands + b] > 0xFFFFFFFFu) {
        throw py::value_error("band_pieces: over 2^32 rows of one band for one target");
      }
      out[kPieceHeader + b] = static_cast<uint32_t>(count[t * bands + b]);
      at[t * bands + b] = next;
      next += 2 * count[t * bands + b];
    }
    pieces.append(piece);
  }
  {
    py::gil_scoped_release release;
    for (size_t i = 0; i < n; ++i) {
      if (!use[i]) continue;
      for (size_t b = 0; b < bands; ++b) {
        uint32_t*& row = at[target_of(i, b) * bands + b];
        row[0] = keys[i * bands + b];
        row[1] = static_cast<uint32_t>(local[i]);
        row += 2;
      }
    }
  }
  return pieces;
}

// A piece checked: its partition, bands, and where each band's rows begin.
struct Piece {
  uint64_t partition;
  size_t bands;
  const uint32_t* counts;
  std::vector<const uint32_t*> rows;  // of each band
};

std::vector<Piece> ParsePieces(
    const std::vector<py::array_t<uint32_t, py::array::c_style>>& arrays) {
  std::vector<Piece> pieces;
  for (const auto& array : arrays) {
    const auto size = static_cast<size_t>(array.size());
    const uint32_t* data = array.data();
    if (array.ndim() != 1 || size < kPieceHeader || size < kPieceHeader + data[1]) {
      throw py::value_error("shared_rows: a piece is not a 1-d uint32 array of band_pieces");
    }
    Piece piece{data[0], data[1], data + kPieceHeader, {}};
    size_t rows = 0;
    for (size_t b = 0; b < piece.bands; ++b) rows += piece.counts[b];
    const size_t row_words = size - kPieceHeader - piece.bands;
    if (row_words % 2 != 0 || rows != row_words / 2) {
      throw py::value_error("shared_rows: a piece's length is not that of its counts");
    }
    if (piece.bands == 0) continue;  // a partition without documents
    if (!pieces.empty() && piece.bands != pieces.front().bands) {
      throw py::value_error("shared_rows: pieces of " + std::to_string(pieces.front().bands) +
                            " and " + std::to_string(piece.bands) + " bands");
    }
    const uint32_t* next = data + kPieceHeader + piece.bands;
    for (size_t b = 0; b < piece.bands; ++b) {
      piece.rows.push_back(next);
      next += 2 * piece.counts[b];
    }
    pieces.push_back(std::move(piece));
  }
  // In partition order, so that each key's rows come in ordinal order.
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const Piece& x, const Piece& y) { return x.partition < y.partition; });
  return pieces;
}

// Sorts items (band key << 32 | index) by their high 32 bits, stably: a radix sort of 11 bits a
// pass, skipping the digits every item has alike.
void SortByHighWord(std::vector<uint64_t>* items, std::vector<uint64_t>* scratch) {
  constexpr int kDigitBits = 11;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  const size_t n = items->size();
  if (n < 2) return;
  uint64_t all_or = 0, all_and = ~uint64_t{0};
  for (const uint64_t item : *items) {
    all_or |= item;
    all_and &= item;
  }
  const uint64_t varying = all_or & ~all_and;
  scratch->resize(n);
  std::vector<size_t> count(kBuckets);
  for (int shift = 32; shift < 64; shift += kDigitBits) {
    if (((varying >> shift) & (kBuckets - 1)) == 0) continue;
    std::fill(count.begin(), count.end(), 0);
    for (const uint64_t item : *items) ++count[(item >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (size_t& c : count) {
      const size_t here = c;
      c = sum;
      sum += here;
    }
    for (const uint64_t item : *items) (*scratch)[count[(item >> shift) & (kBuckets - 1)]++] = item;
    items->swap(*scratch);
  }
}

// The rows (key = band << 32 | band key, ordinal = partition << 32 | local) of the keys that two or
// more rows have, from the pieces of every partition for one target (band_pieces), sorted by key
// then ordinal: the target's band buckets, an n x 2 uint64 array.
py::array_t<uint64_t> SharedRows(const py::list& list) {
  using PieceArray = py::array_t<uint32_t, py::array::c_style>;
  std::vector<PieceArray> arrays;
  for (const py::handle item : list) {
    if (!py::isinstance<PieceArray>(item)) {
      throw py::value_error("shared_rows: pieces must be the uint32 arrays of band_pieces");
    }
    arrays.push_back(py::reinterpret_borrow<PieceArray>(item));
  }
  const std::vector<Piece> pieces = ParsePieces(arrays);
  std::vector<BandRow> shared;
  {
    py::gil_scoped_release release;
    const size_t bands = pieces.empty() ? 0 : pieces.front().bands;
    std::vector<uint64_t> items, scratch, ordinals;
    for (size_t b = 0; b < bands; ++b) {
      items.clear();
      ordinals.clear();
      for (const Piece& piece : pieces) {
        const uint32_t* row = piece.rows[b];
        for (size_t i = 0; i < piece.counts[b]; ++i, row += 2) {
          items.push_back((static_cast<uint64_t>(row[0]) << 32) | ordinals.size());
          ordinals.push_back((piece.partition << 32) | row[1]);
        }
      }
      if (ordinals.size() > 0xFFFFFFFFu) {
        throw std::length_error("shared_rows: over 2^32 rows of one band for one target");
      }
      SortByHighWord(&items, &scratch);
      const size_t first = shared.size();
      for (size_t begin = 0; begin < items.size();) {
        size_t end = begin + 1;
        while (end < items.size() && (items[end] >> 32) == (items[begin] >> 32)) ++end;
        if (end - begin >= 2) {
          const uint64_t key = (static_cast<uint64_t>(b) << 32) | (items[begin] >> 32);
          for (size_t i = begin; i < end; ++i) {
            shared.push_back({key, ordinals[items[i] & 0xFFFFFFFFu]});
          }
        }
        begin = end;
      }
      // A piece whose rows were not in document order leaves runs out of ordinal order.
      ForEachKeyRun(shared.data() + first, shared.size() - first, [&](size_t begin, size_t end) {
        BandRow* run = shared.data() + first;
        if (!std::is_sorted(run + begin, run + end)) std::sort(run + begin, run + end);
      });
    }
  }
  py::array_t<uint64_t> out({static_cast<py::ssize_t>(shared.size()), py::ssize_t{2}});
  if (!shared.empty())
    std::memcpy(out.mutable_data(), shared.data(), shared.size() * sizeof(BandRow));
  return out;
}

// Pass 1 of the job: in the buckets of at least `min_size` documents, each member paired with the
// bucket's first document (its center): (center, member) rows, each pair once, sorted, one piece
// a partition of the member.
py::list StarPieces(RowArray buckets, uint64_t partitions, uint64_t min_size) {
  if (partitions == 0) throw py::value_error("star_pieces: partitions must be at least 1");
  size_t n = 0;
  const BandRow* rows = BucketRows(buckets, &n);
  std::vector<BandRow> stars;
  {
    py::gil_scoped_release release;
    ForEachKeyRun(rows, n, [&](size_t begin, size_t end) {
      if (end - begin < std::max<uint64_t>(min_size, 2)) return;
      for (size_t i = begin + 1; i < end; ++i)
        stars.push_back({rows[begin].ordinal, rows[i].ordinal});
    });
    SortRows(&stars);
    stars.erase(std::unique(stars.begin(), stars.end()), stars.end());
  }
  std::vector<uint64_t> values(stars.size() * 2);
  if (!stars.empty()) std::memcpy(values.data(), stars.data(), values.size() * sizeof(uint64_t));
  return SplitByOwner(values, 2, 1, partitions);
}

using ByteArray = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

// Where the document of local line number `local` is in a partition's arrays (`locals` sorted), or
// `count` when it is not there.
size_t PositionOf(const uint64_t* locals, size_t count, uint64_t local) {
  if (count > 0 && locals[count - 1] == count - 1) return local < count ? local : count;
  const uint64_t* at = std::lower_bound(locals, locals + count, local);
  return at != locals + count && *at == local ? static_cast<size_t>(at - locals) : count;
}

// The check of pass 1 in one partition: of the (center, member) rows of the pieces (each pair
// once), those whose sketches estimate Jaccard >= the threshold, sorted. The member is a document
// of this partition (`locals`, `sketches`); the center is in the table (`center_ordinals`, sorted,
// and `center_sketches`).
py::array_t<uint64_t> VerifyStars(const JobSigner& signer, const py::list& pieces, RowArray locals,
                                  ByteArray sketches, RowArray center_ordinals,
                                  ByteArray center_sketches) {
  const size_t width = signer.sketch_bytes();
  const auto documents = static_cast<size_t>(locals.size());
  const auto centers = static_cast<size_t>(center_ordinals.size());
  if (static_cast<size_t>(sketches.size()) != documents * width ||
      static_cast<size_t>(center_sketches.size()) != centers * width) {
    throw py::value_error("verify_stars: the sketches (n x " + std::to_string(width) +
                          " bytes) must be those of the locals and of the centers");
  }
  const std::vector<RowArray> arrays = RowArrays(pieces, 2, "verify_stars");
  std::vector<BandRow> rows;
  size_t kept = 0;
  bool missing = false;
  {
    py::gil_scoped_release release;
    rows = ConcatRows(arrays);
    SortRows(&rows);
    const uint64_t* local = locals.data();
    const uint64_t* center = center_ordinals.data();
    const uint8_t* sketch = sketches.data();
    const uint8_t* center_sketch = center_sketches.data();
    const Sketcher& sketcher = signer.sketcher();
    const double threshold = signer.threshold();
    for (size_t i = 0; i < rows.size(); ++i) {
      // The pair again, from another band (rows below i are written only below `kept`, which
      // is at most i, so rows[i - 1] is still the row read).
      if (i > 0 && rows[i - 1] == rows[i]) continue;
      const uint64_t* c = std::lower_bound(center, center + centers, rows[i].key);
      const size_t m = PositionOf(local, documents, rows[i].ordinal & 0xFFFFFFFFu);
      if (c == center + centers || *c != rows[i].key || m == documents) {
        missing = true;
        break;
      }
      const size_t at = static_cast<size_t>(c - center);
      if (sketcher.EstimateIfAtLeast(&center_sketch[at * width], &sketch[m * width], threshold) >=
          threshold) {
        rows[kept++] = rows[i];
      }
    }
  }
  if (missing) throw py::value_error("verify_stars: a row's center or member is not in the tables");
  py::array_t<uint64_t> out({static_cast<py::ssize_t>(kept), py::ssize_t{2}});
  if (kept > 0) std::memcpy(out.mutable_data(), rows.data(), kept * sizeof(BandRow));
  return out;
}

// Pass 2's pieces: (rows, sketches) pairs, rows n x 4 (key, ordinal, label, sketch) and sketches
// m x width, each document's sketch once a piece (`sketch` is the row's in `sketches`, below m).
struct SketchPieces {
  std::vector<RowArray> rows;
  std::vector<ByteArray> sketches;
  size_t total = 0;
};
constexpr py::ssize_t kSketchRowWidth = 4;

SketchPieces ReadSketchPieces(const py::list& pieces, size_t width, const char* what) {
  SketchPieces out;
  for (const py::handle piece : pieces) {
    const auto pair = py::reinterpret_borrow<py::tuple>(piece);
    if (!py::isinstance<py::tuple>(piece) || pair.size() != 2) {
      throw py::value_error(std::string(what) + ": pieces must be (rows, sketches) tuples");
    }
    auto rows = RowArray::ensure(pair[0]);
    auto sketches = ByteArray::ensure(pair[1]);
    bool fits = rows && sketches &&
                (rows.size() == 0 || (rows.ndim() == 2 && rows.shape(1) == kSketchRowWidth)) &&
                static_cast<size_t>(sketches.size()) % width == 0;
    if (fits) {
      const size_t count = static_cast<size_t>(sketches.size()) / width;
      const uint64_t* row = rows.data();
      for (size_t i = 0; i < static_cast<size_t>(rows.size()); i += kSketchRowWidth) {
        fits = fits && row[i + 3] < count;
      }
    }
    if (!fits) {
      throw py::value_error(std::string(what) +
                            ": a piece must be rows n x 4 (key, ordinal, label, sketch) of uint64 "
                            "and sketches m x " +
                            std::to_string(width) + " bytes, each row's sketch below m");
    }
    out.total += static_cast<size_t>(rows.size()) / kSketchRowWidth;
    out.rows.push_back(std::move(rows));
    out.sketches.push_back(std::move(sketches));
  }
  return out;
}

// Pass 2 of the job, after the shuffle: the rows (key, ordinal, label) of this partition's
// documents in `pieces` (from every bucket partition), one (rows, sketches) piece a target
// partition of the key. A document in several buckets of one target has its sketch sent there
// once (at 1M documents, 469k sketches for 781k rows a target).
py::list AttachSketches(const JobSigner& signer, const py::list& pieces, RowArray locals,
                        ByteArray sketches, uint64_t partitions) {
  if (partitions == 0) throw py::value_error("attach_sketches: partitions must be at least 1");
  const size_t width = signer.sketch_bytes();
  const auto documents = static_cast<size_t>(locals.size());
  if (static_cast<size_t>(sketches.size()) != documents * width) {
    throw py::value_error("attach_sketches: the sketches (n x " + std::to_string(width) +
                          " bytes) must be those of the locals");
  }
  const std::vector<RowArray> arrays = RowArrays(pieces, 3, "attach_sketches");
  // Each row's target, its document (the place in the partition) and the place of the document's
  // sketch in the target's piece.
  struct Placed {
    const uint64_t* row;
    uint32_t target;
    uint32_t document;
    uint32_t sketch = 0;
  };
  if (partitions > 0xFFFFFFFFu || documents > 0xFFFFFFFFu) {
    throw py::value_error("attach_sketches: over 2^32 partitions or documents");
  }
  std::vector<Placed> placed;
  std::vector<size_t> rows_of(partitions, 0), sketches_of(partitions, 0);
  bool missing = false;
  {
    py::gil_scoped_release release;
    for (const RowArray& array : arrays) {
      const uint64_t* row = array.data();
      for (size_t i = 0; i < static_cast<size_t>(array.size()) / 3; ++i, row += 3) {
        const size_t at = PositionOf(locals.data(), documents, row[1] & 0xFFFFFFFFu);
        if (at == documents) {
          missing = true;
          break;
        }
        const auto t = static_cast<uint32_t>(TargetOf(row[0], partitions));
        placed.push_back({row, t, static_cast<uint32_t>(at), 0});
        ++rows_of[t];
      }
      if (missing) break;
    }
    if (!missing) {
      // Grouped by target, in order.
      std::vector<size_t> start(partitions + 1, 0);
      for (uint64_t t = 0; t < partitions; ++t) start[t + 1] = start[t] + rows_of[t];
      std::vector<Placed> grouped(placed.size());
      for (const Placed& p : placed) grouped[start[p.target]++] = p;
      placed.swap(grouped);
      // Each document's sketch index in its target's piece: seen[d] == t + 1 when it has one.
      std::vector<uint32_t> seen(documents, 0), index(documents, 0);
      for (Placed& p : placed) {
        if (seen[p.document] != p.target + 1) {
          seen[p.document] = p.target + 1;
          index[p.document] = static_cast<uint32_t>(sketches_of[p.target]++);
        }
        p.sketch = index[p.document];
      }
    }
  }
  if (missing) throw py::value_error("attach_sketches: a row's document is not in the partition");
  py::list out;
  std::vector<uint64_t*> rows_at(partitions);
  std::vector<uint8_t*> sketches_at(partitions);
  for (uint64_t t = 0; t < partitions; ++t) {
    py::array_t<uint64_t> rows({static_cast<py::ssize_t>(rows_of[t]), kSketchRowWidth});
    py::array_t<uint8_t> piece_sketches(
        {static_cast<py::ssize_t>(sketches_of[t]), static_cast<py::ssize_t>(width)});
    rows_at[t] = rows.mutable_data();
    sketches_at[t] = piece_sketches.mutable_data();
    out.append(py::make_tuple(rows, piece_sketches));
  }
  {
    py::gil_scoped_release release;
    const uint8_t* sketch = sketches.data();
    std::vector<size_t> written(partitions, 0);
    for (const Placed& p : placed) {
      uint64_t*& row = rows_at[p.target];
      row[0] = p.row[0];
      row[1] = p.row[1];
      row[2] = p.row[2];
      row[3] = p.sketch;
      if (p.sketch == written[p.target]) {  // the document's first row in this target
        std::memcpy(sketches_at[p.target] + size_t{p.sketch} * width,
                    &sketch[size_t{p.document} * width], width);
        ++written[p.target];
      }
      row += kSketchRowWidth;
    }
  }
  return out;
}

// Pass 2's check, where the buckets land: the near-duplicate pairs of the buckets of the pieces
// ((rows, sketches) of AttachSketches, from every partition). Documents of one label are known to
// be joined already (by pairs found before). Inside each bucket (equal keys) the documents are
// taken in ordinal order and a pair is verified (the sketches estimate Jaccard >= threshold)
// unless the two are already joined, by their labels or by pairs found in the bucket: the pairs
// returned, with the labels, connect what every pair would. Returns (a, b) arrays of ordinals,
// a < b.
py::tuple VerifyBuckets(const JobSigner& signer, const py::list& pieces) {
  const size_t width = signer.sketch_bytes();
  const SketchPieces read = ReadSketchPieces(pieces, width, "verify_buckets");
  struct Member {
    uint64_t key;
    uint64_t ordinal;
    uint64_t label;
    const uint8_t* sketch;
  };
  std::vector<uint64_t> a, b;
  {
    py::gil_scoped_release release;
    std::vector<Member> members;
    members.reserve(read.total);
    for (size_t p = 0; p < read.rows.size(); ++p) {
      const uint64_t* row = read.rows[p].data();
      const uint8_t* sketch = read.sketches[p].data();
      for (size_t i = 0; i < static_cast<size_t>(read.rows[p].size()) / kSketchRowWidth; ++i) {
        const uint64_t* r = row + i * kSketchRowWidth;
        members.push_back({r[0], r[1], r[2], sketch + r[3] * width});
      }
    }
    std::sort(members.begin(), members.end(), [](const Member& x, const Member& y) {
      return x.key != y.key ? x.key < y.key : x.ordinal < y.ordinal;
    });
    const Sketcher& sketcher = signer.sketcher();
    const double threshold = signer.threshold();
    std::vector<uint32_t> parent;
    std::vector<std::pair<uint64_t, uint32_t>> by_label;
    for (size_t begin = 0; begin < members.size();) {
      size_t end = begin + 1;
      while (end < members.size() && members[end].key == members[begin].key) ++end;
      const size_t m = end - begin;
      const Member* bucket = &members[begin];
      parent.resize(m);
      std::iota(parent.begin(), parent.end(), 0);
      auto find = [&](uint32_t x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
      };
      // Members of one label start joined (to the first of them).
      by_label.clear();
      for (size_t i = 0; i < m; ++i)
        by_label.emplace_back(bucket[i].label, static_cast<uint32_t>(i));
      std::sort(by_label.begin(), by_label.end());
      for (size_t i = 1; i < m; ++i) {
        if (by_label[i].first == by_label[i - 1].first) {
          const uint32_t x = find(by_label[i - 1].second), y = find(by_label[i].second);
          if (x != y) parent[std::max(x, y)] = std::min(x, y);
        }
      }
      for (size_t i = 0; i < m; ++i) {
        for (size_t j = i + 1; j < m; ++j) {
          const uint32_t root_i = find(static_cast<uint32_t>(i));
          const uint32_t root_j = find(static_cast<uint32_t>(j));
          if (root_i == root_j) continue;
          const double jaccard =
              sketcher.EstimateIfAtLeast(bucket[i].sketch, bucket[j].sketch, threshold);
          if (jaccard < threshold) continue;
          parent[std::max(root_i, root_j)] = std::min(root_i, root_j);
          a.push_back(std::min(bucket[i].ordinal, bucket[j].ordinal));
          b.push_back(std::max(bucket[i].ordinal, bucket[j].ordinal));
        }
      }
      begin = end;
    }
  }
  return py::make_tuple(ToArray(a), ToArray(b));
}

// Pass 2 of the job: the rows (key, ordinal, label) of the buckets whose members do not all have
// one label, one piece a partition of the row's document. A document's label is its root in
// (nodes, roots) (sorted nodes, as `components` returns them), or itself when it is not a node.
// A bucket of `min_size` documents or more went through pass 1 (StarPieces), which verified every
// pair of its center (first document): its center is left out, and the bucket is mixed only if
// the other members do not all have one label.
py::list MixedPieces(RowArray buckets, RowArray nodes, RowArray roots, uint64_t partitions,
                     uint64_t min_size) {
  if (partitions == 0) throw py::value_error("mixed_pieces: partitions must be at least 1");
  if (nodes.size() != roots.size()) throw py::value_error("mixed_pieces: nodes and roots differ");
  size_t n = 0;
  const BandRow* rows = BucketRows(buckets, &n);
  const uint64_t* node = nodes.data();
  const uint64_t* root = roots.data();
  const auto count = static_cast<size_t>(nodes.size());
  std::vector<uint64_t> values;
  {
    py::gil_scoped_release release;
    // Every row's label, by a merge of the rows sorted by ordinal with the sorted nodes (one
    // pass over each, where a search a row would miss the cache at every step).
    std::vector<BandRow> by_ordinal(n);
    for (size_t i = 0; i < n; ++i) by_ordinal[i] = {rows[i].ordinal, i};
    SortRows(&by_ordinal);
    std::vector<uint64_t> label(n);
    size_t at = 0;
    for (const BandRow& r : by_ordinal) {
      while (at < count && node[at] < r.key) ++at;
      label[r.ordinal] = at < count && node[at] == r.key ? root[at] : r.key;
    }
    const uint64_t star_size = std::max<uint64_t>(min_size, 2);
    ForEachKeyRun(rows, n, [&](size_t begin, size_t end) {
      if (end - begin >= star_size) ++begin;  // the center's pairs are decided
      if (end - begin < 2) return;
      const auto [low, high] = std::minmax_element(&label[begin], &label[end]);
      if (*low == *high) return;
      for (size_t i = begin; i < end; ++i) {
        values.insert(values.end(), {rows[i].key, rows[i].ordinal, label[i]});
      }
    });
  }
  return SplitByOwner(values, 3, 1, partitions);
}

// Writes the lines of a range that are not dropped (0-based line numbers in the range, sorted) to
// `out_path` through the output layer: each line as it is in the input, with a newline added to a
// last line without one. Returns (lines written, bytes written).
py::tuple WriteKeptRange(const std::string& path, uint64_t start, uint64_t end,
                         uint64_t max_line_bytes,
                         py::array_t<uint64_t, py::array::c_style | py::array::forcecast> drop,
                         const std::string& out_path) {
  const uint64_t* dropped = drop.data();
  const auto drops = static_cast<size_t>(drop.size());
  uint64_t written = 0, written_bytes = 0;
  Status status;
  {
    py::gil_scoped_release release;
    status = [&]() -> Status {
      auto range = RangeLines::Open(path, start, end, max_line_bytes);
      if (!range.ok()) return range.status();
      OutputFile out;
      NEARDUP_RETURN_IF_ERROR(out.Open(out_path));
      std::string_view raw;
      bool too_long = false;
      size_t next_drop = 0;
      for (uint64_t line = 0;; ++line) {
        auto more = (*range)->Next(&raw, &too_long);
        if (!more.ok()) return more.status();
        if (!*more) break;
        if (next_drop < drops && dropped[next_drop] == line) {
          ++next_drop;
          continue;
        }
        if (too_long) return Status::Internal(path + ": input changed during the job");
        out.Write(raw);
        if (raw.empty() || raw.back() != '\n') out.Write("\n");
        ++written;
        written_bytes += raw.size();
        NEARDUP_RETURN_IF_ERROR(out.MaybeDrain());
      }
      if (next_drop != drops) return Status::Internal(path + ": input changed during the job");
      return out.Commit();
    }();
  }
  ThrowIfError(status);
  return py::make_tuple(written, written_bytes);
}

// The dups output's lines: dup_id<TAB>kept_id<TAB>score (4 decimals), ids escaped as TSV fields.
py::bytes FormatDuplicates(const std::vector<std::string>& dups,
                           const std::vector<std::string>& kept,
                           py::array_t<double, py::array::c_style | py::array::forcecast> scores) {
  if (dups.size() != kept.size() || static_cast<size_t>(scores.size()) != dups.size()) {
    throw py::value_error("format_duplicates: dups, kept and scores differ in length");
  }
  std::string out;
  char score[32];
  for (size_t i = 0; i < dups.size(); ++i) {
    AppendTsvField(dups[i], &out);
    out.push_back('\t');
    AppendTsvField(kept[i], &out);
    std::snprintf(score, sizeof(score), "\t%.4f\n", scores.at(static_cast<py::ssize_t>(i)));
    out.append(score);
  }
  return py::bytes(out);
}

// The clusters output, one line a cluster: {"representative":ID,"size":N,"members":[ID,...]}.
// Cluster c is members order[starts[c]..starts[c + 1]) (the last to
// the end) of `ids`, with ids[representatives[c]] its representative.
py::bytes FormatClusters(
    const std::vector<std::string>& ids,
    py::array_t<int64_t, py::array::c_style | py::array::forcecast> order,
    py::array_t<int64_t, py::array::c_style | py::array::forcecast> starts,
    py::array_t<int64_t, py::array::c_style | py::array::forcecast> representatives) {
  const auto clusters = static_cast<size_t>(starts.size());
  const auto members = static_cast<size_t>(order.size());
  if (static_cast<size_t>(representatives.size()) != clusters) {
    throw py::value_error("format_clusters: starts and representatives differ in length");
  }
  auto id = [&](int64_t i) -> const std::string& {
    if (i < 0 || static_cast<size_t>(i) >= ids.size()) {
      throw py::index_error("format_clusters: member " + std::to_string(i) + " out of range");
    }
    return ids[static_cast<size_t>(i)];
  };
  std::string out;
  for (size_t c = 0; c < clusters; ++c) {
    const auto begin = static_cast<size_t>(starts.at(static_cast<py::ssize_t>(c)));
    const size_t end = c + 1 < clusters
                           ? static_cast<size_t>(starts.at(static_cast<py::ssize_t>(c + 1)))
                           : members;
    if (begin > end || end > members) throw py::value_error("format_clusters: bad starts");
    out.append("{\"representative\":");
    AppendJsonString(id(representatives.at(static_cast<py::ssize_t>(c))), &out);
    out.append(",\"size\":");
    out.append(std::to_string(end - begin));
    out.append(",\"members\":[");
    for (size_t k = begin; k < end; ++k) {
      if (k != begin) out.push_back(',');
      AppendJsonString(id(order.at(static_cast<py::ssize_t>(k))), &out);
    }
    out.append("]}\n");
  }
  return py::bytes(out);
}

}  // namespace

void RegisterDistributed(py::module_& m) {
  py::class_<LineFormat>(m, "LineFormat", "How the lines of an input become documents.")
      .def(py::init([](bool jsonl, std::string id_field, std::string text_field,
                       std::string priority_field, uint64_t max_line_bytes) {
             return LineFormat{jsonl, std::move(id_field), std::move(text_field),
                               std::move(priority_field), max_line_bytes};
           }),
           py::arg("jsonl"), py::arg("id_field") = "id", py::arg("text_field") = "text",
           py::arg("priority_field") = "", py::arg("max_line_bytes") = uint64_t{64} << 20)
      .def_readonly("jsonl", &LineFormat::jsonl)
      .def_readonly("id_field", &LineFormat::id_field)
      .def_readonly("text_field", &LineFormat::text_field)
      .def_readonly("priority_field", &LineFormat::priority_field)
      .def_readonly("max_line_bytes", &LineFormat::max_line_bytes)
      .def(py::pickle(
          [](const LineFormat& f) {
            return py::make_tuple(f.jsonl, f.id_field, f.text_field, f.priority_field,
                                  f.max_line_bytes);
          },
          [](const py::tuple& t) {
            return LineFormat{t[0].cast<bool>(), t[1].cast<std::string>(), t[2].cast<std::string>(),
                              t[3].cast<std::string>(), t[4].cast<uint64_t>()};
          }));

  py::class_<JobSigner>(m, "JobSigner",
                        "The signer of a distributed dedup job (accurate method) and its steps.")
      .def(py::init<const std::string&, uint64_t>(), py::arg("settings"),
           py::arg("max_document_bytes") = 0)
      .def_property_readonly("settings", &JobSigner::settings)
      .def_property_readonly("sketch_bytes", &JobSigner::sketch_bytes)
      .def_property_readonly("bands", &JobSigner::bands)
      .def_property_readonly("threshold", &JobSigner::threshold)
      .def("sign_range", &JobSigner::SignRange, py::arg("path"), py::arg("start"), py::arg("end"),
           py::arg("format"))
      .def("sign_texts", &JobSigner::SignTexts, py::arg("texts"), py::arg("ids") = py::none(),
           py::arg("priorities") = py::none())
      .def("verify_buckets", &VerifyBuckets, py::arg("pieces"))
      .def("attach_sketches", &AttachSketches, py::arg("pieces"), py::arg("locals"),
           py::arg("sketches"), py::arg("partitions"))
      .def("passes", &JobSigner::Passes, py::arg("a"), py::arg("b"))
      .def("verify_stars", &VerifyStars, py::arg("pieces"), py::arg("locals"), py::arg("sketches"),
           py::arg("center_ordinals"), py::arg("center_sketches"))
      .def("estimate", &JobSigner::Estimate, py::arg("a"), py::arg("b"))
      .def(py::pickle(
          [](const JobSigner& s) { return py::make_tuple(s.settings(), s.max_document_bytes()); },
          [](const py::tuple& t) {
            return std::make_unique<JobSigner>(t[0].cast<std::string>(), t[1].cast<uint64_t>());
          }));
  m.attr("WHOLE_FILE") = kWholeFile;
  m.def("components", &Components, py::arg("a"), py::arg("b"));
  m.def("band_pieces", &BandPieces, py::arg("band_keys"), py::arg("locals"), py::arg("usable"),
        py::arg("partition"), py::arg("partitions"));
  m.def("shared_rows", &SharedRows, py::arg("pieces"));
  m.def("star_pieces", &StarPieces, py::arg("buckets"), py::arg("partitions"), py::arg("min_size"));
  m.def("mixed_pieces", &MixedPieces, py::arg("buckets"), py::arg("nodes"), py::arg("roots"),
        py::arg("partitions"), py::arg("min_size"));
  m.def("write_kept_range", &WriteKeptRange, py::arg("path"), py::arg("start"), py::arg("end"),
        py::arg("max_line_bytes"), py::arg("drop"), py::arg("out_path"));
  m.def("format_duplicates", &FormatDuplicates, py::arg("dups"), py::arg("kept"),
        py::arg("scores"));
  m.def("format_clusters", &FormatClusters, py::arg("ids"), py::arg("order"), py::arg("starts"),
        py::arg("representatives"));
}

}  // namespace neardup::python
