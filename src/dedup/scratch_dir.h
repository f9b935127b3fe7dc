// The job's temporary folder, `neardup-XXXXXX` in --tmp-dir (else $TMPDIR, else /tmp): spooled
// standard input and the default method's spill files live there, and it is removed with the
// object on every exit path the process sees. A job killed by SIGKILL (the out-of-memory killer's
// signal) or a crash cannot remove it, and at 100M documents it holds 20 GB; so the folder carries
// a file `lock` on which its job holds an flock(2) while it lives, and a later job that makes its
// own folder in the same place first removes every folder of this user whose lock is free: the
// kernel releases a lock when its process ends, however it ends.
#ifndef NEARDUP_DEDUP_SCRATCH_DIR_H_
#define NEARDUP_DEDUP_SCRATCH_DIR_H_

#include <memory>
#include <string>
#include <vector>

#include "neardup/status.h"

namespace neardup::dedup_internal {

class ScratchDir {
 public:
  // Removes the folders left in `parent` (empty: $TMPDIR, else /tmp) by jobs that are gone, each
  // named in `reclaimed` ("PATH (SIZE)"), then makes a new folder there. IOError naming `parent`
  // when it cannot be made.
  static Result<std::unique_ptr<ScratchDir>> Create(const std::string& parent,
                                                    std::vector<std::string>* reclaimed);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  ScratchDir(std::string path, int lock_fd) : path_(std::move(path)), lock_fd_(lock_fd) {}

  std::string path_;
  int lock_fd_;  // holds the folder's lock; -1 where the file system has no flock
};

// Removes every folder `neardup-XXXXXX` in `base` that belongs to this user, has a regular file
// `lock` and whose lock no process holds, and returns what it removed ("PATH (SIZE)"). Folders
// without a lock file (made by a version without one, or by a job killed before it locked) are
// left alone, as is everything else in `base`.
std::vector<std::string> ReclaimStaleScratchDirs(const std::string& base);

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_SCRATCH_DIR_H_
