// The locks that tell a job's temporary files from those of a job that is gone: a job holds an
// flock(2) on such a file while it lives, and the kernel releases it when the process ends however
// it ends (kill -9, the out-of-memory killer, a crash).
#ifndef NEARDUP_UTIL_FILE_LOCK_H_
#define NEARDUP_UTIL_FILE_LOCK_H_

#include <string>

namespace neardup::util {

// Takes the lock of `path` if no process holds it: a regular file of this user (not followed
// through a link) that is still the same file once locked (not one removed and made again
// meanwhile). The open descriptor holding the lock, to close once what it guards is removed; -1
// when the file is missing, another's, not regular, or locked.
int LockIfAbandoned(const std::string& path);

}  // namespace neardup::util

#endif  // NEARDUP_UTIL_FILE_LOCK_H_
