// OutputFile: a file that appears under its name only when Commit() succeeds.
#ifndef NEARDUP_DEDUP_OUTPUT_FILE_H_
#define NEARDUP_DEDUP_OUTPUT_FILE_H_

#include <cstddef>
#include <future>
#include <memory>
#include <string>
#include <string_view>

#include "neardup/status.h"

namespace neardup::dedup_internal {

// Writes to a temporary file beside `path` ("path.tmp-XXXXXX"); Commit() flushes, syncs and renames it
// over `path`. Destroyed without Commit(), it removes the temporary file: a failed or interrupted job
// leaves nothing that looks like a finished output. Not thread-safe.
//
// The path "-" is standard output: written as the job goes (in the same blocks, never O_DIRECT), so
// there a failed or interrupted job leaves what was already written.
//
// Data goes out in blocks of kBlockBytes written by a background task while the caller fills the next
// block. Where the file system allows it the blocks bypass the page cache (O_DIRECT): a large output
// (the kept documents of a corpus) is then written at device speed instead of being copied into the
// cache and written back by fsync later; the tail that is not a whole block is written through the
// cache. Without O_DIRECT (tmpfs, some network file systems) the same blocks are written normally.
class OutputFile {
 public:
  static constexpr size_t kBlockBytes = size_t{4} << 20;

  OutputFile() = default;
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Creates the temporary file. IOError naming the path.
  Status Open(const std::string& path);
  bool is_open() const { return fd_ >= 0; }

  // Buffered writes (after whatever is staged); errors are reported by Commit().
  void Write(std::string_view data);

  // A staging string for formatted text: append to it, then call MaybeDrain().
  std::string& buffer() { return staging_; }
  void MaybeDrain() {
    if (staging_.size() >= (size_t{1} << 16)) DrainStaging();
  }

  Status Commit();

 private:
  struct Block {
    void operator()(char* p) const;
  };
  void DrainStaging();
  void Append(std::string_view data);  // into the blocks
  void SubmitBlock();   // hands the full current block to the background writer
  bool WaitPending();   // false when the last background write failed
  bool WriteAll(const char* data, size_t size);

  std::string path_, temp_path_;
  int fd_ = -1;
  bool direct_ = false;
  bool standard_output_ = false;
  std::string staging_;
  std::unique_ptr<char, Block> current_, spare_;
  size_t fill_ = 0;
  std::future<bool> pending_;
  bool failed_ = false;
  int error_ = 0;
};

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_OUTPUT_FILE_H_
