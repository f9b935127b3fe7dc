// OutputFile: a file that appears under its name only when Commit() succeeds.
#ifndef NEARDUP_DEDUP_OUTPUT_FILE_H_
#define NEARDUP_DEDUP_OUTPUT_FILE_H_

#include <cstdio>
#include <string>
#include <string_view>

#include "neardup/status.h"

namespace neardup::dedup_internal {

// Writes to a temporary file beside `path` ("path.tmp-XXXXXX"); Commit() flushes, syncs and renames it
// over `path`. Destroyed without Commit(), it removes the temporary file: a failed or interrupted job
// leaves nothing that looks like a finished output. Not thread-safe.
class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Creates the temporary file. IOError naming the path.
  Status Open(const std::string& path);
  bool is_open() const { return file_ != nullptr; }

  // Buffered writes; errors are reported by Commit().
  void Write(std::string_view data) {
    buffer_.append(data);
    if (buffer_.size() >= (1 << 20)) Drain();
  }
  std::string& buffer() { return buffer_; }
  void MaybeDrain() {
    if (buffer_.size() >= (1 << 20)) Drain();
  }

  Status Commit();

 private:
  void Drain();

  std::string path_, temp_path_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
  bool failed_ = false;
};

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_OUTPUT_FILE_H_
