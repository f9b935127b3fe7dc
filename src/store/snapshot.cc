// Store::Snapshot: the in-memory index written to a file of the store's directory by a forked
// child process, at a cut where the index holds exactly what the database holds (doc/store.md,
// "Snapshots").
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>

#include "neardup/output.h"
#include "store/record.h"
#include "store/store_internal.h"

namespace neardup {
namespace {

// In the child: writes the index to dir/name (a temporary file renamed over it, synced with its
// folder) and reports the outcome on `report` (nothing: success). Never returns.
[[noreturn, maybe_unused]] void WriteInChild(const OnlineIndex& index, const std::string& path,
                                             int report, pid_t parent) {
  // The child must not outlive the server (a later server would find its half-written file).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(3);
  OutputFile out;
  out.set_no_threads();  // this process is a child of fork(): it starts no thread
  // Through the page cache: the next start (a restart, often) reads the file back from memory.
  Status status = out.Open(path, /*keep_in_cache=*/true);
  if (status.ok()) status = index.Save(&out);
  if (status.ok()) status = out.Commit();
  if (!status.ok()) {
    out.Discard();
    const std::string message = status.ToString();
    size_t done = 0;
    while (done < message.size()) {
      const ssize_t n = write(report, message.data() + done, message.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }
  // _exit: no destructors or atexit handlers of the parent's objects (the database, threads) run.
  _exit(status.ok() ? 0 : 1);
}

// In the parent: what the child reported, once it has exited.
[[maybe_unused]] Status AwaitChild(pid_t child, int report, const std::string& path) {
  std::string message;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(report, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    message.append(buffer, static_cast<size_t>(n));
  }
  close(report);
  int wstatus = 0;
  while (waitpid(child, &wstatus, 0) < 0) {
    if (errno != EINTR)
      return Status::IOError(path + ": waiting for the snapshot's writer: " + std::strerror(errno));
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return Status::OK();
  if (!message.empty()) return Status::IOError(message);
  if (WIFSIGNALED(wstatus)) {
    return Status::IOError(path + ": the snapshot's writer was killed by signal " +
                           std::to_string(WTERMSIG(wstatus)));
  }
  return Status::IOError(path + ": the snapshot's writer failed (exit status " +
                         std::to_string(WEXITSTATUS(wstatus)) + ")");
}

}  // namespace

namespace store {
void RemoveOtherSnapshots(const std::string& dir, const std::string& keep) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(kSnapshotPrefix) && name != keep)
      std::filesystem::remove(entry.path(), error);
  }
}
}  // namespace store

Status Store::Snapshot() {
  if (disk_resident_) {
    return Status::NotSupported(path_ +
                                ": a disk-resident store keeps no index in memory to snapshot");
  }
  std::lock_guard<std::mutex> hold(snapshot_->mutex);
  const auto start = std::chrono::steady_clock::now();

  // The cut: no group applied or being written, so the index is what the database holds.
  std::unique_lock lock(queue_->mutex);
  queue_->paused = true;
  while (queue_->applying || queue_->written != queue_->tickets) queue_->turn.wait(lock);
  const uint64_t rows = queue_->applied_row;
  const uint64_t removals = queue_->applied_removal;
  auto resume = [&] {
    queue_->paused = false;
    if (!queue_->writers.empty()) queue_->writers.front()->wake.notify_one();
    lock.unlock();
  };
  if (!snapshot_->file.empty() && rows == snapshot_->rows && removals == snapshot_->removals) {
    resume();
    return Status::OK();
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    const int error = errno;
    resume();
    return Status::IOError(path_ + ": snapshot: pipe: " + std::strerror(error));
  }
  const std::string name = store::SnapshotFileName(rows, removals);
  const std::string path = (std::filesystem::path(path_) / name).string();
#if defined(__SANITIZE_ADDRESS__) || defined(NEARDUP_NO_FORK_SNAPSHOTS)
  // AddressSanitizer's runtime (GCC 12's) takes no locks around fork(): a child can wait forever on
  // an allocator lock another thread held at the fork. Sanitized builds write the snapshot here,
  // with the writers held off for the whole write instead of the fork alone.
  {
    close(report[0]);
    close(report[1]);
    OutputFile out;
    Status written = out.Open(path, /*keep_in_cache=*/true);
    if (written.ok()) written = index_->Save(&out);
    if (written.ok()) written = out.Commit();
    resume();
    if (!written.ok()) {
      out.Discard();
      return written;
    }
  }
  const auto resumed = std::chrono::steady_clock::now();
#else
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) {
    close(report[0]);
    WriteInChild(*index_, path, report[1], parent);
  }
  const int fork_error = errno;
  resume();
  const auto resumed = std::chrono::steady_clock::now();
  close(report[1]);
  if (child < 0) {
    close(report[0]);
    return Status::IOError(path + ": snapshot: fork: " + std::strerror(fork_error));
  }
  NEARDUP_RETURN_IF_ERROR(AwaitChild(child, report[0], path));
#endif

  // The database points to the new file and forgets the removals before it, in one synced write;
  // only then is the previous file removed.
  store::Database& rocks = db_->rocks;
  rocksdb::WriteBatch batch;
  rocksdb::Status put =
      batch.Put(rocks.meta, store::kSnapshotKey, store::EncodeSnapshotRef({rows, removals, name}));
  if (put.ok() && removals > 0)
    put = batch.DeleteRange(rocks.removals, store::RowKey(0), store::RowKey(removals));
  rocksdb::WriteOptions options;
  options.sync = true;
  if (put.ok()) put = rocks.db->Write(options, &batch);
  std::error_code error;
  if (!put.ok()) {
    std::filesystem::remove(path, error);
    return store::ToStatus(put, path_, "record the snapshot");
  }
  store::RemoveOtherSnapshots(path_, name);
  snapshot_->file = name;
  snapshot_->rows = rows;
  snapshot_->removals = removals;
  snapshot_->bytes = std::filesystem::file_size(path, error);
  snapshot_->time = static_cast<int64_t>(std::time(nullptr));
  auto nanoseconds = [](auto duration) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count());
  };
  snapshot_->nanoseconds = nanoseconds(std::chrono::steady_clock::now() - start);
  snapshot_->pause_nanoseconds = nanoseconds(resumed - start);
  return Status::OK();
}

}  // namespace neardup
