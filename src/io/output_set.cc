// OutputSet: the outputs of one job, checked against each other and the inputs, committed together.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "io/output_paths.h"
#include "neardup/output.h"

namespace neardup {
namespace output_internal {

Result<std::string> FollowLinks(const std::string& path) {
  std::string current = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current;
    std::string link(static_cast<size_t>(st.st_size > 0 ? st.st_size : 4096) + 1, '\0');
    const ssize_t n = ::readlink(current.c_str(), link.data(), link.size());
    if (n < 0) return Status::IOError(path + ": cannot read the link: " + std::strerror(errno));
    link.resize(static_cast<size_t>(n));
    current = link.empty() || link[0] == '/' ? link : FolderOf(current) + "/" + link;
  }
  return Status::InvalidArgument(path + ": too many levels of symbolic links");
}

namespace {

// N for /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N and /proc/PID/fd/N of this process.
int DescriptorName(const std::string& path) {
  if (path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  const std::string own = "/proc/" + std::to_string(::getpid()) + "/fd/";
  for (const std::string& prefix : {std::string("/dev/fd/"), std::string("/proc/self/fd/"), own}) {
    if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = path.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::atoi(digits.c_str());
  }
  return -1;
}

}  // namespace

int DescriptorOf(const std::string& path) {
  std::string current = path;
  for (int hops = 0; hops < 40; ++hops) {
    const int fd = DescriptorName(current);
    if (fd >= 0) return ::fcntl(fd, F_GETFD) >= 0 ? fd : -1;
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return -1;
    std::string link(static_cast<size_t>(st.st_size > 0 ? st.st_size : 4096) + 1, '\0');
    const ssize_t n = ::readlink(current.c_str(), link.data(), link.size());
    if (n <= 0) return -1;
    link.resize(static_cast<size_t>(n));
    current = link[0] == '/' ? link : FolderOf(current) + "/" + link;
  }
  return -1;
}

Result<std::string> ReplacedPath(const std::string& path, bool exists) {
  if (!exists) return FollowLinks(path);
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return Status::IOError(path + ": " + std::strerror(errno));
  std::string result(real);
  std::free(real);
  return result;
}

Result<int> OpenInPlace(const std::string& path, mode_t mode) {
  if (S_ISSOCK(mode)) {
    int fd = -1;
    for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
      if (path.rfind(prefix, 0) == 0) fd = std::atoi(path.c_str() + std::strlen(prefix));
    }
    if (path == "/dev/stdout") fd = STDOUT_FILENO;
    if (path == "/dev/stderr") fd = STDERR_FILENO;
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
      return Status::InvalidArgument(
          path + ": is a socket (writable only as an open descriptor such as /dev/stdout)");
    }
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (copy < 0) return Status::IOError(path + ": " + std::strerror(errno));
    return copy;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  return fd;
}

std::string FolderOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

Status CheckWritableKind(const std::string& path, mode_t mode) {
  if (S_ISCHR(mode) || S_ISFIFO(mode) || S_ISREG(mode) || S_ISSOCK(mode)) return Status::OK();
  const char* kind = S_ISDIR(mode) ? "a folder" : S_ISBLK(mode) ? "a block device" : "not a file";
  return Status::InvalidArgument(
      path + ": is " + kind +
      " (outputs are regular files, character devices such as /dev/null, FIFOs or "
      "standard output)");
}

Result<FileIdentity> IdentifyOutput(const std::string& path, mode_t* mode, bool* exists) {
  FileIdentity identity;
  struct stat st;
  if (path == "-") {
    if (::fstat(STDOUT_FILENO, &st) != 0)
      return Status::IOError(std::string("standard output: ") + std::strerror(errno));
    *exists = true;
  } else {
    *exists = ::stat(path.c_str(), &st) == 0;
    if (!*exists) {
      if (errno != ENOENT) return Status::IOError(path + ": " + std::strerror(errno));
      auto target = FollowLinks(path);
      if (!target.ok()) return target.status();
      const std::string folder = FolderOf(*target);
      if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        return Status::NotFound(path + ": no folder " + folder + " to create it in");
      }
      const size_t slash = target->find_last_of('/');
      identity.new_name = slash == std::string::npos ? *target : target->substr(slash + 1);
    }
  }
  identity.device = st.st_dev;
  identity.inode = st.st_ino;
  identity.character_device = *exists && S_ISCHR(st.st_mode);
  *mode = *exists ? st.st_mode : S_IFREG;
  return identity;
}

}  // namespace output_internal

struct OutputSet::Entry {
  OutputFile file;
  std::string path, role;
  output_internal::FileIdentity identity;
};

OutputSet::OutputSet() = default;
OutputSet::~OutputSet() = default;

Result<OutputFile*> OutputSet::Add(const std::string& path, std::string_view role,
                                   bool regular_only) {
  mode_t mode = 0;
  bool exists = false;
  auto identity = output_internal::IdentifyOutput(path, &mode, &exists);
  if (!identity.ok()) return identity.status().WithContext(role);
  if (path != "-")
    NEARDUP_RETURN_IF_ERROR(output_internal::CheckWritableKind(path, mode).WithContext(role));
  if (regular_only && (path == "-" || !S_ISREG(mode) || output_internal::DescriptorOf(path) >= 0)) {
    return Status::InvalidArgument(std::string(role) + ": " + path +
                                   " is not a regular file: this output is replaced as a whole");
  }
  for (const auto& entry : entries_) {
    if (!entry->identity.SameAs(*identity)) continue;
    if (identity->character_device) continue;  // /dev/null may take several outputs
    return Status::InvalidArgument(std::string(role) + " " + path + " and " + entry->role + " " +
                                   entry->path +
                                   " name the same file: give each output its own file");
  }
  auto entry = std::make_unique<Entry>();
  entry->path = path;
  entry->role = role;
  entry->identity = std::move(*identity);
  entries_.push_back(std::move(entry));
  return &entries_.back()->file;
}

Status OutputSet::CheckNotInputs(const std::vector<std::string>& inputs) const {
  namespace fs = std::filesystem;
  auto check = [&](const std::string& input, const struct stat& st) -> Status {
    for (const auto& entry : entries_) {
      const auto& id = entry->identity;
      if (!id.new_name.empty() || id.character_device) continue;
      if (id.device == st.st_dev && id.inode == st.st_ino) {
        return Status::InvalidArgument(entry->role + " " + entry->path + " is also an input (" +
                                       input + "): refusing to overwrite an input");
      }
    }
    return Status::OK();
  };
  for (const std::string& input : inputs) {
    struct stat st;
    if (input == "-" || ::stat(input.c_str(), &st) != 0) continue;
    if (!S_ISDIR(st.st_mode)) {
      NEARDUP_RETURN_IF_ERROR(check(input, st));
      continue;
    }
    std::error_code error;
    for (auto it = fs::recursive_directory_iterator(
             input, fs::directory_options::skip_permission_denied, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      const std::string file = it->path().string();
      if (::stat(file.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
        NEARDUP_RETURN_IF_ERROR(check(file, st));
    }
  }
  return Status::OK();
}

Status OutputSet::OpenAll() {
  for (auto& entry : entries_) {
    if (!entry->file.is_open()) NEARDUP_RETURN_IF_ERROR(entry->file.Open(entry->path));
  }
  return Status::OK();
}

Status OutputSet::CommitAll() {
  Status status;
  for (auto& entry : entries_) {
    if (status.ok()) status = entry->file.Finish();
  }
  if (!status.ok()) {
    for (auto& entry : entries_) entry->file.Discard();
    return status;
  }
  for (auto& entry : entries_) NEARDUP_RETURN_IF_ERROR(entry->file.Commit());
  return Status::OK();
}

}  // namespace neardup
