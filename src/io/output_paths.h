// Path helpers of the output layer: symbolic links, folders, file identities.
#ifndef NEARDUP_IO_OUTPUT_PATHS_H_
#define NEARDUP_IO_OUTPUT_PATHS_H_

#include <sys/types.h>

#include <string>

#include "neardup/status.h"

namespace neardup::output_internal {

// The path a chain of symbolic links ends at (the path itself when it is not a link, or does not
// exist). InvalidArgument for a loop of links.
Result<std::string> FollowLinks(const std::string& path);

// The file that replacing `path` replaces: an existing regular file's real path (every link
// followed), or for a new name the end of its chain of links (a dangling link's target is created).
Result<std::string> ReplacedPath(const std::string& path, bool exists);

// Opens a character device, FIFO or socket for writing where it is. A socket is reachable only as
// an open descriptor (/dev/stdout, /dev/fd/N, /proc/self/fd/N), which is duplicated.
Result<int> OpenInPlace(const std::string& path, mode_t mode);

// The open descriptor of this process that `path` names, through its chain of links:
// /dev/stdout (1), /dev/stderr (2), /dev/fd/N or /proc/self/fd/N (or /proc/PID/fd/N of this
// process) give N when N is open; -1 for any other path. Such an output is written in place through
// a copy of the descriptor, as `-` is: a shell redirection (`> file`, `>> file`) then gets what it
// asked for, instead of a new file renamed over the one the shell opened.
int DescriptorOf(const std::string& path);

// The folder holding `path` ("." for a bare name).
std::string FolderOf(const std::string& path);

// OK for regular files and the kinds written in place (character devices, FIFOs, sockets);
// InvalidArgument naming the path and its kind for the others (folders, block devices).
Status CheckWritableKind(const std::string& path, mode_t mode);

// What a path names, compared by device and inode: an existing file, or for a new name the folder
// it would be created in and its name there.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  std::string new_name;  // empty for an existing file
  bool character_device = false;

  bool SameAs(const FileIdentity& other) const {
    return device == other.device && inode == other.inode && new_name == other.new_name;
  }
};

// The identity of an output path (symbolic links followed; "-": standard output). NotFound when the
// folder of a new name does not exist.
Result<FileIdentity> IdentifyOutput(const std::string& path, mode_t* mode, bool* exists);

}  // namespace neardup::output_internal

#endif  // NEARDUP_IO_OUTPUT_PATHS_H_
