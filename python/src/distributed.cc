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

  // The near-duplicate pairs of band buckets: rows (key, ordinal, label, sketch) of the documents
  // of buckets of two or more. Documents of one label are known to be joined already (by pairs
  // found before). Inside each bucket (equal keys) the documents are taken in ordinal order and a
  // pair is verified (the sketches estimate Jaccard >= threshold) unless the two are already
  // joined, by their labels or by pairs found in the bucket: the pairs returned, with the labels,
  // connect what every pair would. Returns (a, b) arrays of ordinals, a < b.
  py::tuple VerifyBuckets(
      py::array_t<uint64_t, py::array::c_style | py::array::forcecast> keys,
      py::array_t<uint64_t, py::array::c_style | py::array::forcecast> ordinals,
      py::array_t<uint64_t, py::array::c_style | py::array::forcecast> labels,
      py::array_t<uint8_t, py::array::c_style | py::array::forcecast> sketches) const {
    const auto n = static_cast<size_t>(keys.size());
    const size_t width = sketch_bytes();
    if (static_cast<size_t>(ordinals.size()) != n || static_cast<size_t>(labels.size()) != n ||
        static_cast<size_t>(sketches.size()) != n * width) {
      throw py::value_error("verify_buckets: keys, ordinals, labels and sketches (n x " +
                            std::to_string(width) + " bytes) must describe the same rows");
    }
    const uint64_t* key = keys.data();
    const uint64_t* ordinal = ordinals.data();
    const uint64_t* label = labels.data();
    const uint8_t* sketch = sketches.data();
    std::vector<uint64_t> a, b;
    {
      py::gil_scoped_release release;
      std::vector<uint32_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
        return key[x] != key[y] ? key[x] < key[y] : ordinal[x] < ordinal[y];
      });
      const Sketcher& sketcher = *signer_->sketcher();
      const double threshold = signer_->options().threshold;
      std::vector<uint32_t> parent;
      std::vector<std::pair<uint64_t, uint32_t>> by_label;
      for (size_t begin = 0; begin < n;) {
        size_t end = begin + 1;
        while (end < n && key[order[end]] == key[order[begin]]) ++end;
        const size_t m = end - begin;
        parent.resize(m);
        std::iota(parent.begin(), parent.end(), 0);
        auto find = [&](uint32_t x) {
          while (parent[x] != x) x = parent[x] = parent[parent[x]];
          return x;
        };
        // Members of one label start joined (to the first of them).
        by_label.clear();
        for (size_t i = 0; i < m; ++i) {
          by_label.emplace_back(label[order[begin + i]], static_cast<uint32_t>(i));
        }
        std::sort(by_label.begin(), by_label.end());
        for (size_t i = 1; i < m; ++i) {
          if (by_label[i].first == by_label[i - 1].first) {
            const uint32_t x = find(by_label[i - 1].second), y = find(by_label[i].second);
            if (x != y) parent[std::max(x, y)] = std::min(x, y);
          }
        }
        for (size_t i = 0; i < m; ++i) {
          const uint32_t row_i = order[begin + i];
          for (size_t j = i + 1; j < m; ++j) {
            const uint32_t row_j = order[begin + j];
            const uint32_t root_i = find(static_cast<uint32_t>(i));
            const uint32_t root_j = find(static_cast<uint32_t>(j));
            if (root_i == root_j) continue;
            const double jaccard = sketcher.EstimateIfAtLeast(&sketch[row_i * width],
                                                              &sketch[row_j * width], threshold);
            if (jaccard < threshold) continue;
            parent[std::max(root_i, root_j)] = std::min(root_i, root_j);
            a.push_back(std::min(ordinal[row_i], ordinal[row_j]));
            b.push_back(std::max(ordinal[row_i], ordinal[row_j]));
          }
        }
        begin = end;
      }
    }
    return py::make_tuple(ToArray(a), ToArray(b));
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

  template <typename T>
  static py::array_t<T> ToArray(const std::vector<T>& values) {
    py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
    if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * sizeof(T));
    return out;
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
      .def("verify_buckets", &JobSigner::VerifyBuckets, py::arg("keys"), py::arg("ordinals"),
           py::arg("labels"), py::arg("sketches"))
      .def("passes", &JobSigner::Passes, py::arg("a"), py::arg("b"))
      .def("estimate", &JobSigner::Estimate, py::arg("a"), py::arg("b"))
      .def(py::pickle(
          [](const JobSigner& s) { return py::make_tuple(s.settings(), s.max_document_bytes()); },
          [](const py::tuple& t) {
            return std::make_unique<JobSigner>(t[0].cast<std::string>(), t[1].cast<uint64_t>());
          }));
  m.attr("WHOLE_FILE") = kWholeFile;
  m.def("components", &Components, py::arg("a"), py::arg("b"));
  m.def("write_kept_range", &WriteKeptRange, py::arg("path"), py::arg("start"), py::arg("end"),
        py::arg("max_line_bytes"), py::arg("drop"), py::arg("out_path"));
  m.def("format_duplicates", &FormatDuplicates, py::arg("dups"), py::arg("kept"),
        py::arg("scores"));
  m.def("format_clusters", &FormatClusters, py::arg("ids"), py::arg("order"), py::arg("starts"),
        py::arg("representatives"));
}

}  // namespace neardup::python
