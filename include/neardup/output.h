// The one output layer: every file or stream neardup writes goes through OutputFile, and the
// outputs of one job are committed together by OutputSet.
//
// What is guaranteed (doc/output.md):
//   - A regular file (or a new name) is written to a temporary file beside its target
//     ("TARGET.tmp-XXXXXX"), synced, and renamed over the target only by Commit; the folder is
//     synced after the rename. Until then the target keeps its old content; destroyed without
//     Commit, the temporary file is removed.
//   - A symbolic link is followed to its final target, which is written as above: the link stays.
//   - A character device (/dev/null, a terminal) or a FIFO is written in place, as the job goes,
//   and
//     never replaced. "-" is standard output, written in place too. A folder, a block device or a
//     socket is refused.
//   - Every write is checked: a failed write (a full disk, EIO, a closed pipe) is an error naming
//   the
//     output, reported by status(), MaybeDrain() (streams: at once) and Finish()/Commit().
//   - OutputSet refuses, before anything is written, two outputs that name the same file and an
//   output
//     that names one of the job's inputs (compared by device and inode, not by name), and commits
//     all outputs last, in one step, after every one of them was written and synced.
#ifndef NEARDUP_OUTPUT_H_
#define NEARDUP_OUTPUT_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/status.h"

namespace neardup {

// Not thread-safe: one thread writes an OutputFile (a background task of its own writes the
// blocks).
class OutputFile {
 public:
  enum class Kind {
    kClosed,          // not opened yet, or finished
    kFile,            // a regular file or a new name: temporary file, renamed by Commit
    kInPlace,         // a character device or FIFO: written directly
    kStandardOutput,  // "-"
  };
  // Regular files are written in blocks of this size by a background task, bypassing the page cache
  // (O_DIRECT) where the file system allows it; streams are written in pieces of kStreamBytes.
  static constexpr size_t kBlockBytes = size_t{4} << 20;
  static constexpr size_t kStreamBytes = size_t{1} << 16;

  OutputFile() = default;
  ~OutputFile();  // without Commit: closes, and removes the temporary file
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Opens `path` as described at the top of this file. InvalidArgument for a folder, a block device
  // or a socket; IOError naming the path when it cannot be created or opened. keep_in_cache: a
  // regular file is written through the page cache (for a file read back soon, such as a store's
  // snapshot read by the next start) rather than around it.
  Status Open(const std::string& path, bool keep_in_cache = false);
  bool is_open() const { return fd_ >= 0; }
  // Writes every block on the calling thread instead of a background task of its own: for a child
  // process of fork() (a store's snapshot writer), where starting a thread may wait forever on a
  // lock another thread of the parent held at the fork (the sanitizers' runtimes have such locks).
  // Call before the first Write.
  void set_no_threads() { no_threads_ = true; }
  Kind kind() const { return kind_; }
  const std::string& path() const { return path_; }      // as named ("-": standard output)
  const std::string& target() const { return target_; }  // symbolic links followed

  // Appends data (after whatever is staged). Errors are kept: see status().
  void Write(std::string_view data);
  // A staging string for formatted text: append to it, then call MaybeDrain().
  std::string& buffer() { return staging_; }
  // Hands the staged text on when there is enough of it; returns status().
  Status MaybeDrain();
  // Hands the staged text on now (a stream writes it to its descriptor: a reader sees every line
  // so far, as when a program acknowledges records one by one); returns status().
  Status Drain();
  // The first write error so far (a regular file's background writes are seen here a block late).
  Status status() const;

  // Writes everything out, syncs and closes. A kFile output is not visible yet; Commit makes it so.
  Status Finish();
  // Finish (when not done), then renames a kFile output over its target and syncs the folder.
  Status Commit();
  // Closes and removes the temporary file: the target keeps its old content.
  void Discard();

 private:
  friend class OutputSet;
  struct Block {
    void operator()(char* p) const;
  };
  void DrainStaging();
  void Append(std::string_view data);
  void SubmitBlock();
  bool WaitPending();
  bool WriteAll(const char* data, size_t size);
  Status WriteError() const;
  Status Rename();
  void Close();

  std::string path_, target_, temp_path_;
  Kind kind_ = Kind::kClosed;
  int fd_ = -1;
  bool direct_ = false;
  bool no_threads_ = false;
  bool finished_ = false;
  std::string staging_;
  std::unique_ptr<char, Block> current_, spare_;
  size_t fill_ = 0;
  std::future<bool> pending_;
  bool failed_ = false;
  int error_ = 0;
  int temp_slot_ = -1;  // where temp_path_ is registered for RemoveTemporaryOutputs
};

// The outputs of one job. Add every output first (nothing is created), check them against the
// inputs, open them, write, then CommitAll. Destroyed without CommitAll, no output is committed and
// every temporary file is removed.
class OutputSet {
 public:
  OutputSet();
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Declares an output named by option `role` (e.g. "--dups"), for messages. InvalidArgument when
  // it names the same file as an output added before (character devices such as /dev/null
  // excepted), is a folder, or (regular_only) is not a regular file or new name. The pointer stays
  // valid for the set's life.
  Result<OutputFile*> Add(const std::string& path, std::string_view role,
                          bool regular_only = false);
  // InvalidArgument when an output names an existing input: a file of `inputs`, or a file under a
  // folder of `inputs` ("-" and missing inputs are passed over).
  Status CheckNotInputs(const std::vector<std::string>& inputs) const;
  // Opens every output added.
  Status OpenAll();
  // Finishes every output; only when all succeeded, renames the regular files over their targets
  // and syncs their folders. On error nothing is renamed and every temporary file is removed. (A
  // failed rename after an earlier one succeeded, which needs the folder to change under the job,
  // leaves the earlier ones committed: the error names the output that failed.)
  Status CommitAll();

 private:
  struct Entry;
  std::vector<std::unique_ptr<Entry>> entries_;
};

// True when `status` is the write error of an output whose reader went away (a closed pipe, EPIPE):
// a command then ends quietly, as Unix tools do.
bool IsBrokenPipe(const Status& status);

// Removes the temporary files of every OutputFile that is open. Async-signal-safe: for a SIGINT or
// SIGTERM handler that then ends the process.
void RemoveTemporaryOutputs() noexcept;

}  // namespace neardup

#endif  // NEARDUP_OUTPUT_H_
