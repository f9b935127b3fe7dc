// dedup of an in-memory collection: the batch job itself (RunDedup), run on a temporary JSON Lines
// file of the texts, so that every decision is the CLI's.
//
// The texts are written (with the GIL held: they are Python objects) as
//   {"id":"<n>","p":<priority>,"text":<the text, JSON-escaped>}
// where n is the document's place among the lines written (its record is record_numbers[n], the
// caller's numbering), to records.jsonl in a folder "neardup-py-XXXXXX" of $TMPDIR (else /tmp),
// removed with everything in it when the call ends, on success or error. The job runs with the GIL
// released. Its outputs (kept lines, duplicates, clusters, pairs) are FIFOs of that folder, read as
// the job writes them by a thread of ours: nothing is written to disk or synced but the input, and
// of the kept lines (the whole input again) only their ids are kept.
//
// Messages that name a line of the file ("PATH:LINE: message") name the record instead
// ("records[i]: message"). Under invalid_utf8="reject" a text of invalid UTF-8 is refused here,
// with its byte offset, before the job (a JSON line cannot carry it): an error (on_error="fail") or
// a skipped document (on_error="skip", counted in the report as the job counts its own).
#include "neardup/dedup.h"

#include <Python.h>
#include <fcntl.h>
#include <poll.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "bindings.h"
#include "neardup/format.h"
#include "neardup/method.h"
#include "neardup/text.h"

namespace neardup::python {

namespace {

constexpr size_t kMaxErrorsKept = 10;  // the job's own limit of DedupReport::first_errors

// A folder of $TMPDIR (else /tmp), removed with everything in it when this goes.
class TemporaryFolder {
 public:
  TemporaryFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
    pattern += "/neardup-py-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      ThrowStatus(Status::IOError("cannot create a temporary folder " + pattern + ": " +
                                  std::strerror(errno)));
    }
    path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;

  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// A status of the same code with another message.
Status WithMessage(const Status& status, std::string message) {
  switch (status.code()) {
    case Status::Code::kOk:
      return Status::OK();
    case Status::Code::kInvalidArgument:
      return Status::InvalidArgument(std::move(message));
    case Status::Code::kNotFound:
      return Status::NotFound(std::move(message));
    case Status::Code::kCorruption:
      return Status::Corruption(std::move(message));
    case Status::Code::kIOError:
      return Status::IOError(std::move(message));
    case Status::Code::kResourceExhausted:
      return Status::ResourceExhausted(std::move(message));
    case Status::Code::kFailedPrecondition:
      return Status::FailedPrecondition(std::move(message));
    case Status::Code::kCancelled:
      return Status::Cancelled(std::move(message));
    case Status::Code::kNotSupported:
      return Status::NotSupported(std::move(message));
    case Status::Code::kUnavailable:
      return Status::Unavailable(std::move(message));
    case Status::Code::kPermissionDenied:
      return Status::PermissionDenied(std::move(message));
    case Status::Code::kInternal:
      break;
  }
  return Status::Internal(std::move(message));
}

void ReplaceAll(std::string* text, std::string_view from, std::string_view to) {
  for (size_t at = text->find(from); at != std::string::npos; at = text->find(from, at)) {
    text->replace(at, from.size(), to);
    at += to.size();
  }
}

// The job's words for the file and the command line, in the words of the Python call: "PATH:LINE:"
// becomes "records[i]:", the CLI's flags its keywords.
std::string Translate(std::string message, const std::string& path,
                      const std::vector<int64_t>& record_numbers) {
  const std::string prefix = path + ":";
  for (size_t at = message.find(prefix); at != std::string::npos; at = message.find(prefix, at)) {
    const size_t digits = at + prefix.size();
    uint64_t line = 0;
    const auto [end, error] =
        std::from_chars(message.data() + digits, message.data() + message.size(), line);
    if (error != std::errc() || line == 0 || line > record_numbers.size()) {
      message.replace(at, path.size(), "records");
      at += 7;
      continue;
    }
    const size_t length = static_cast<size_t>(end - message.data()) - at;
    const std::string name = "records[" + std::to_string(record_numbers[line - 1]) + "]";
    message.replace(at, length, name);
    at += name.size();
  }
  ReplaceAll(&message, path, "records");
  ReplaceAll(&message, "--empty keep or drop", "empty='keep' or 'drop'");
  ReplaceAll(&message, "--on-error skip", "on_error='skip'");
  ReplaceAll(&message, "--max-line-bytes", "the longest record");
  return message;
}

// The ids this file writes are decimal numbers only, so a quoted or TSV id is just its digits: the
// document's line (from 0), as its record number.
int64_t RecordOf(std::string_view id, const std::vector<int64_t>& record_numbers) {
  size_t line = 0;
  const auto [end, error] = std::from_chars(id.data(), id.data() + id.size(), line);
  if (error != std::errc() || end != id.data() + id.size() || line >= record_numbers.size()) {
    ThrowStatus(
        Status::Internal("dedup: an output names an unknown document '" + std::string(id) + "'"));
  }
  return record_numbers[line];
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

// The ids of the kept lines (this job's own lines, {"id":"<n>",...}), taken as they stream by.
class KeptIds {
 public:
  void Feed(std::string_view data) {
    while (!data.empty()) {
      if (skipping_) {
        const size_t end = data.find('\n');
        if (end == std::string_view::npos) return;
        data.remove_prefix(end + 1);
        skipping_ = false;
        head_.clear();
        continue;
      }
      const char c = data.front();
      data.remove_prefix(1);
      head_.push_back(c);
      if (head_.size() > kPrefix.size() && c == '"') {
        if (head_.compare(0, kPrefix.size(), kPrefix) != 0) malformed_ = true;
        ids_.push_back(head_.substr(kPrefix.size(), head_.size() - kPrefix.size() - 1));
        skipping_ = true;
      } else if (head_.size() > 64) {
        malformed_ = true;
        skipping_ = true;
      }
    }
  }
  bool malformed() const { return malformed_; }
  const std::vector<std::string>& ids() const { return ids_; }

 private:
  static constexpr std::string_view kPrefix = "{\"id\":\"";
  std::string head_;
  bool skipping_ = false;
  bool malformed_ = false;
  std::vector<std::string> ids_;
};

// FIFOs for the job's outputs, read by a thread of ours as the job writes them. Each is opened for
// reading at once (non-blocking), so the job's open for writing never waits; the thread polls them
// until Finish(), then reads what is left. An output the job never opened reads as empty.
class OutputPipes {
 public:
  using Sink = std::function<void(std::string_view)>;

  OutputPipes() = default;
  ~OutputPipes() {
    Finish();
    for (const Pipe& pipe : pipes_) {
      if (pipe.fd >= 0) ::close(pipe.fd);
    }
    if (wake_[0] >= 0) ::close(wake_[0]);
    if (wake_[1] >= 0) ::close(wake_[1]);
  }
  OutputPipes(const OutputPipes&) = delete;
  OutputPipes& operator=(const OutputPipes&) = delete;

  // A FIFO at path whose data goes to sink (called on the reading thread).
  void Add(const std::string& path, Sink sink) {
    if (::mkfifo(path.c_str(), 0600) != 0) {
      ThrowStatus(Status::IOError("cannot create the FIFO " + path + ": " + std::strerror(errno)));
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      ThrowStatus(Status::IOError("cannot open the FIFO " + path + ": " + std::strerror(errno)));
    }
    pipes_.push_back({fd, std::move(sink)});
  }

  void Start() {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
      ThrowStatus(Status::IOError(std::string("cannot create a pipe: ") + std::strerror(errno)));
    }
    thread_ = std::thread([this] { Run(); });
  }

  // Reads what is left (the job has closed every output) and stops the thread.
  void Finish() {
    if (!thread_.joinable()) return;
    done_.store(true);
    const char byte = 1;
    [[maybe_unused]] const ssize_t written = ::write(wake_[1], &byte, 1);
    thread_.join();
  }

 private:
  struct Pipe {
    int fd;
    Sink sink;
  };

  // Reads the pipe until it is empty; false once its writer has come and gone (end of file).
  bool Drain(Pipe& pipe, std::vector<char>& buffer) {
    while (true) {
      const ssize_t got = ::read(pipe.fd, buffer.data(), buffer.size());
      if (got > 0) {
        pipe.sink(std::string_view(buffer.data(), static_cast<size_t>(got)));
        continue;
      }
      if (got == 0) return false;
      if (errno == EINTR) continue;
      return true;  // EAGAIN: nothing more now
    }
  }

  void Run() {
    std::vector<char> buffer(size_t{1} << 16);
    std::vector<size_t> open(pipes_.size());
    for (size_t i = 0; i < pipes_.size(); ++i) open[i] = i;
    std::vector<pollfd> polled;
    while (!open.empty()) {
      if (done_.load()) {
        for (size_t i : open) Drain(pipes_[i], buffer);
        return;
      }
      polled.clear();
      for (size_t i : open) polled.push_back({pipes_[i].fd, POLLIN, 0});
      polled.push_back({wake_[0], POLLIN, 0});
      // Linux reports POLLHUP on a FIFO only once a writer has come and gone: before the job opens
      // an output, its FIFO stays quiet.
      if (::poll(polled.data(), polled.size(), -1) < 0 && errno != EINTR) return;
      std::vector<size_t> still;
      for (size_t j = 0; j < open.size(); ++j) {
        const short events = polled[j].revents;
        if ((events & (POLLIN | POLLHUP | POLLERR)) == 0 || Drain(pipes_[open[j]], buffer)) {
          still.push_back(open[j]);
        }
      }
      open.swap(still);
    }
  }

  std::vector<Pipe> pipes_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// A TSV output of id<TAB>id<TAB>score lines as (records a, records b, scores).
py::tuple ParsePairs(const std::string& content, const std::vector<int64_t>& record_numbers) {
  const std::vector<std::string_view> lines = Lines(content);
  const auto n = static_cast<py::ssize_t>(lines.size());
  py::array_t<int64_t> a(n), b(n);
  py::array_t<double> scores(n);
  int64_t* pa = a.mutable_data();
  int64_t* pb = b.mutable_data();
  double* ps = scores.mutable_data();
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const size_t tab1 = line.find('\t');
    const size_t tab2 = tab1 == std::string_view::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab2 == std::string_view::npos) {
      ThrowStatus(Status::Internal("dedup: a malformed output line '" + std::string(line) + "'"));
    }
    pa[i] = RecordOf(line.substr(0, tab1), record_numbers);
    pb[i] = RecordOf(line.substr(tab1 + 1, tab2 - tab1 - 1), record_numbers);
    const std::string score(line.substr(tab2 + 1));
    ps[i] = std::strtod(score.c_str(), nullptr);
  }
  return py::make_tuple(a, b, scores);
}

// The clusters' JSON lines {"representative":"<n>","size":N,"members":["<n>",...]} as
// [(representative, [members])], record numbers.
py::list ParseClusters(const std::string& content, const std::vector<int64_t>& record_numbers) {
  py::list clusters;
  for (std::string_view line : Lines(content)) {
    // Every quoted string of digits, in order: the representative, then the members.
    std::vector<int64_t> ids;
    size_t at = line.find("\"representative\":");
    if (at == std::string_view::npos) continue;
    for (at = line.find('"', at + 17); at != std::string_view::npos; at = line.find('"', at + 1)) {
      const size_t close = line.find('"', at + 1);
      if (close == std::string_view::npos) break;
      const std::string_view word = line.substr(at + 1, close - at - 1);
      if (!word.empty() &&
          std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        ids.push_back(RecordOf(word, record_numbers));
      }
      at = close;
    }
    if (ids.empty()) continue;
    py::list members;
    for (size_t i = 1; i < ids.size(); ++i) members.append(py::int_(ids[i]));
    clusters.append(py::make_tuple(py::int_(ids[0]), std::move(members)));
  }
  return clusters;
}

py::array_t<int64_t> KeptRecords(const KeptIds& kept, const std::vector<int64_t>& record_numbers) {
  if (kept.malformed()) ThrowStatus(Status::Internal("dedup: a kept line not of this job"));
  py::array_t<int64_t> out(static_cast<py::ssize_t>(kept.ids().size()));
  int64_t* p = out.mutable_data();
  for (size_t i = 0; i < kept.ids().size(); ++i) p[i] = RecordOf(kept.ids()[i], record_numbers);
  return out;
}

// A file written whole, without syncing (a scratch input, read back at once).
class ScratchFile {
 public:
  explicit ScratchFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd_ < 0) Fail();
  }
  ~ScratchFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  std::string& buffer() { return buffer_; }
  void MaybeFlush() {
    if (buffer_.size() >= (size_t{1} << 20)) Flush();
  }
  void Close() {
    Flush();
    if (::close(fd_) != 0) {
      fd_ = -1;
      Fail();
    }
    fd_ = -1;
  }

 private:
  void Flush() {
    std::string_view data = buffer_;
    while (!data.empty()) {
      const ssize_t wrote = ::write(fd_, data.data(), data.size());
      if (wrote < 0) {
        if (errno == EINTR) continue;
        Fail();
      }
      data.remove_prefix(static_cast<size_t>(wrote));
    }
    buffer_.clear();
  }
  [[noreturn]] void Fail() {
    ThrowStatus(
        Status::IOError("cannot write the temporary file " + path_ + ": " + std::strerror(errno)));
  }

  std::string path_;
  int fd_ = -1;
  std::string buffer_;
};

void AppendNumber(double value, std::string* out) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out->append(buffer, result.ptr);
}

struct Skipped {
  int64_t record;
  std::string message;
};

// The job over the texts. texts[i] is the text of record record_numbers[i]; priorities (keep
// "priority") the number of each, None for none.
py::dict Dedup(py::handle texts, const std::vector<int64_t>& record_numbers,
               const MethodOptions& method,
               const std::optional<std::vector<std::optional<double>>>& priorities,
               const std::string& keep, const std::string& empty, const std::string& on_error,
               int threads, bool want_pairs, bool all_pairs, double boundary_sigmas) {
  ResolveThreads(threads);  // checks the range; the job resolves 0 itself
  DedupOptions options;
  options.similarity = method;
  if (keep == "priority") {
    options.keep = KeepRule::kPriority;
    options.priority_field = "p";
  } else {
    options.keep = ValueOrThrow(ParseKeepRule(keep));
  }
  if (empty == "keep") {
    options.empty = EmptyPolicy::kKeep;
  } else if (empty == "drop") {
    options.empty = EmptyPolicy::kDrop;
  } else if (empty == "fail") {
    options.empty = EmptyPolicy::kFail;
  } else {
    ThrowStatus(Status::InvalidArgument("unknown empty policy '" + empty +
                                        "' (expected keep, drop or fail)"));
  }
  if (on_error == "fail") {
    options.on_error = ErrorPolicy::kFail;
  } else if (on_error == "skip") {
    options.on_error = ErrorPolicy::kSkip;
  } else {
    ThrowStatus(
        Status::InvalidArgument("unknown error policy '" + on_error + "' (expected fail or skip)"));
  }
  options.threads = threads;
  options.all_pairs = all_pairs;
  options.boundary_sigmas = boundary_sigmas;  // the job checks its range
  const bool reject = method.features && method.features->invalid_utf8 == InvalidUtf8::kReject;

  const py::sequence items = py::reinterpret_borrow<py::sequence>(texts);
  const size_t n = items.size();
  if (record_numbers.size() != n || (priorities && priorities->size() != n)) {
    throw py::value_error("dedup: texts, record numbers and priorities differ in length");
  }

  TemporaryFolder folder;
  const std::string input = folder.File("records.jsonl");
  std::vector<int64_t> written;  // line n of the file: record written[n]
  written.reserve(n);
  std::vector<Skipped> skipped;
  uint64_t text_bytes = 0;
  size_t longest = 0;
  {
    ScratchFile out(input);
    for (size_t i = 0; i < n; ++i) {
      const int64_t record = record_numbers[i];
      const std::string text = TextArgument(items[i], "records[" + std::to_string(record) + "]");
      if (reject) {
        const size_t bad = FindInvalidUtf8(text);
        if (bad != text.size()) {
          const std::string message = "invalid UTF-8 at byte offset " + std::to_string(bad);
          if (options.on_error == ErrorPolicy::kFail) {
            ThrowStatus(
                Status::InvalidArgument("records[" + std::to_string(record) + "]: " + message));
          }
          skipped.push_back({record, message});
          continue;
        }
      }
      std::string& line = out.buffer();
      const size_t start = line.size();
      line.append("{\"id\":\"");
      line.append(std::to_string(written.size()));
      line.push_back('"');
      if (priorities && (*priorities)[i]) {
        line.append(",\"p\":");
        AppendNumber(*(*priorities)[i], &line);
      }
      line.append(",\"text\":");
      AppendJsonString(text, &line);
      line.append("}\n");
      longest = std::max(longest, line.size() - start);
      text_bytes += text.size();
      written.push_back(record);
      out.MaybeFlush();
    }
    out.Close();
  }

  options.inputs = {input};
  options.format = InputFormat::kJsonl;
  options.id_field = "id";
  options.text_field = "text";
  options.max_line_bytes = std::max<uint64_t>(options.max_line_bytes, longest + 1);
  KeptIds kept;
  std::string dups, clusters, pairs;
  OutputPipes pipes;
  options.kept_path = folder.File("kept.jsonl");
  pipes.Add(options.kept_path, [&kept](std::string_view data) { kept.Feed(data); });
  options.dups_path = folder.File("dups.tsv");
  pipes.Add(options.dups_path, [&dups](std::string_view data) { dups.append(data); });
  options.clusters_path = folder.File("clusters.jsonl");
  pipes.Add(options.clusters_path, [&clusters](std::string_view data) { clusters.append(data); });
  if (want_pairs) {
    options.pairs_path = folder.File("pairs.tsv");
    pipes.Add(options.pairs_path, [&pairs](std::string_view data) { pairs.append(data); });
  }
  Result<DedupReport> result = Status::Internal("not run");
  pipes.Start();
  {
    py::gil_scoped_release release;
    result = RunDedup(options);
    pipes.Finish();
  }
  if (!result.ok()) {
    const Status& status = result.status();
    ThrowStatus(WithMessage(status, Translate(status.message(), input, written)));
  }
  DedupReport report = std::move(*result);

  // The report, with the documents refused here and the texts' bytes (not the file's).
  std::vector<std::pair<int64_t, std::string>> errors;
  for (const std::string& error : report.first_errors) {
    std::string message = Translate(error, input, written);
    int64_t record = INT64_MAX;
    if (message.rfind("records[", 0) == 0) record = std::atoll(message.c_str() + 8);
    errors.emplace_back(record, std::move(message));
  }
  for (const Skipped& s : skipped) {
    errors.emplace_back(s.record, "records[" + std::to_string(s.record) + "]: " + s.message);
  }
  std::stable_sort(errors.begin(), errors.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  report.first_errors.clear();
  for (size_t i = 0; i < errors.size() && i < kMaxErrorsKept; ++i) {
    report.first_errors.push_back(std::move(errors[i].second));
  }
  report.skipped += skipped.size();
  report.documents += skipped.size();
  report.bytes = text_bytes;
  for (std::string& warning : report.warnings) warning = Translate(warning, input, written);

  py::dict out;
  out["kept"] = KeptRecords(kept, written);
  out["duplicates"] = ParsePairs(dups, written);
  out["clusters"] = ParseClusters(clusters, written);
  if (want_pairs) out["pairs"] = ParsePairs(pairs, written);
  out["report"] = report.ToJson();
  return out;
}

}  // namespace

void RegisterDedup(py::module_& m) {
  m.def("dedup", &Dedup, py::arg("texts"), py::arg("record_numbers"), py::arg("options"),
        py::kw_only(), py::arg("priorities") = py::none(), py::arg("keep") = "first",
        py::arg("empty") = "keep", py::arg("on_error") = "fail", py::arg("threads") = 0,
        py::arg("pairs") = false, py::arg("all_pairs") = false,
        py::arg("boundary_sigmas") = DedupOptions().boundary_sigmas,
        "The batch job over in-memory texts (neardup.dedup is built on it): a dict of kept "
        "(record numbers), duplicates and pairs ((records, records, scores) arrays), clusters "
        "([(representative, [members])]) and report (the --report JSON).");
}

}  // namespace neardup::python
