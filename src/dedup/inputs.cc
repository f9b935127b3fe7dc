#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "dedup/documents.h"
#include "neardup/input.h"

namespace neardup::dedup_internal {
namespace {

namespace fs = std::filesystem;

// Copies a stream that cannot be read twice (standard input, a pipe) to a file that can.
Status Spool(std::FILE* in, const std::string& name, const std::string& spool_path,
             const std::atomic<bool>* cancel, uint64_t* size) {
  std::FILE* out = std::fopen(spool_path.c_str(), "wb");
  if (out == nullptr)
    return Status::IOError(spool_path + ": cannot create: " + std::strerror(errno));
  std::vector<char> buffer(1 << 20);
  *size = 0;
  int read_error = 0, write_error = 0;  // the first errno of each side
  while (true) {
    const size_t n = std::fread(buffer.data(), 1, buffer.size(), in);
    if (n < buffer.size() && std::ferror(in) && read_error == 0) read_error = errno;
    if (cancel != nullptr && cancel->load()) {
      std::fclose(out);
      return Status::Cancelled("interrupted");
    }
    if (n == 0) break;
    if (write_error == 0 && std::fwrite(buffer.data(), 1, n, out) != n) write_error = errno;
    *size += n;
  }
  if (std::fclose(out) != 0 && write_error == 0) write_error = errno;
  if (read_error != 0) {
    return Status::IOError(name + ": read failed: " + std::strerror(read_error));
  }
  if (write_error != 0) {
    return Status::IOError(name + ": cannot copy to " + spool_path + ": " +
                           std::strerror(write_error) + " (--tmp-dir chooses where)");
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<InputFile>> ExpandInputs(const DedupOptions& options,
                                            const std::string& spool_path) {
  std::vector<InputFile> files;
  bool stdin_seen = false;
  auto format_of = [&](const std::string& name) {
    return options.format == InputFormat::kAuto ? HasJsonLinesName(name)
                                                : options.format == InputFormat::kJsonl;
  };
  // A file named twice (the same path, ./path, a link, or a folder and a file in it) would be read
  // twice, every document a duplicate of itself: refused, naming both.
  std::map<std::pair<dev_t, ino_t>, std::string> seen;
  auto add_file = [&](const std::string& path, bool jsonl, uint64_t size) -> Status {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) {
      auto [it, inserted] = seen.emplace(std::make_pair(st.st_dev, st.st_ino), path);
      if (!inserted) {
        return Status::InvalidArgument((it->second == path
                                            ? path + " is given twice"
                                            : it->second + " and " + path + " are the same file") +
                                       ": give each input once");
      }
    }
    files.push_back({path, path, jsonl, size});
    return Status::OK();
  };
  for (const auto& input : options.inputs) {
    if (input == "-") {
      if (stdin_seen) return Status::InvalidArgument("standard input ('-') given twice");
      stdin_seen = true;
      InputFile file{"-", spool_path + "." + std::to_string(files.size()),
                     options.format == InputFormat::kJsonl, 0};
      NEARDUP_RETURN_IF_ERROR(
          Spool(stdin, "standard input", file.read_path, options.cancel, &file.size));
      files.push_back(std::move(file));
      continue;
    }
    std::error_code error;
    const fs::file_status status = fs::status(input, error);
    if (error || !fs::exists(status)) {
      return Status::NotFound(input + ": cannot open: No such file or directory");
    }
    if (fs::is_directory(status)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(
               input, fs::directory_options::skip_permission_denied, error);
           !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
        if (it->is_regular_file(error)) found.push_back(it->path().string());
      }
      if (error) return Status::IOError(input + ": cannot list: " + error.message());
      if (found.empty()) {
        // An empty or unreadable folder is a mistake (a wrong path, missing permissions), not an
        // empty corpus.
        if (::access(input.c_str(), R_OK | X_OK) != 0) {
          return Status::IOError(input + ": cannot list: " + std::strerror(errno));
        }
        return Status::InvalidArgument(input + ": the folder holds no files");
      }
      std::sort(found.begin(), found.end());
      for (auto& path : found) {
        const uint64_t size = fs::file_size(path, error);
        NEARDUP_RETURN_IF_ERROR(add_file(path, format_of(path), error ? 0 : size));
      }
    } else if (fs::is_regular_file(status)) {
      const uint64_t size = fs::file_size(input, error);
      NEARDUP_RETURN_IF_ERROR(add_file(input, format_of(input), error ? 0 : size));
    } else if (fs::is_fifo(status) || fs::is_character_file(status)) {
      InputFile file{input, spool_path + "." + std::to_string(files.size()), format_of(input), 0};
      std::FILE* in = std::fopen(input.c_str(), "rb");
      if (in == nullptr) return Status::IOError(input + ": cannot open: " + std::strerror(errno));
      Status spooled = Spool(in, input, file.read_path, options.cancel, &file.size);
      std::fclose(in);
      NEARDUP_RETURN_IF_ERROR(spooled);
      files.push_back(std::move(file));
    } else {
      return Status::InvalidArgument(input + ": not a file or folder");
    }
  }
  return files;
}

std::vector<std::string> InputWarnings(const std::vector<InputFile>& files,
                                       const DedupOptions& options) {
  std::vector<std::string> warnings;
  if (options.format != InputFormat::kAuto) return warnings;
  std::vector<const InputFile*> json;
  for (const auto& file : files) {
    if (!file.jsonl && InputExtension(file.name) == "json") json.push_back(&file);
  }
  if (!json.empty()) {
    std::string names = json[0]->name;
    if (json.size() > 1) names += " and " + std::to_string(json.size() - 1) + " more .json files";
    warnings.push_back(names +
                       ": read as plain text, one document per line (only .jsonl and .ndjson names "
                       "are taken for JSON Lines; --format jsonl reads them as JSON Lines)");
  }
  // Other plain inputs whose first line looks like a JSON object (JSON Lines on standard input, or
  // under another name): the first few files are looked at, a line of at most 1 MB each.
  constexpr size_t kFilesLookedAt = 16;
  constexpr uint64_t kLineBytes = uint64_t{1} << 20;
  size_t looked = 0;
  for (const auto& file : files) {
    if (file.jsonl || InputExtension(file.name) == "json") continue;
    if (looked++ == kFilesLookedAt) break;
    auto reader = LineReader::Open(file.read_path);
    if (!reader.ok()) continue;  // pass 1 reports it
    std::string_view line;
    std::string scratch;
    auto more = (*reader)->ReadRawLine(&line, &scratch, kLineBytes);
    if (!more.ok() || !*more || !LooksLikeJsonObject(StripByteOrderMark(StripLineEnd(line)))) {
      continue;
    }
    warnings.push_back((file.name == "-" ? std::string("standard input") : file.name) +
                       ": its first line looks like a JSON object, but it is read as plain text, "
                       "one document per line (--format jsonl reads JSON Lines; .jsonl and "
                       ".ndjson names are taken for them)");
  }
  return warnings;
}

}  // namespace neardup::dedup_internal
