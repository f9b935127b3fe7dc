// The default method's signatures on disk: pass 1 writes every document's sketch and band keys to
// files in the job's temporary folder instead of memory, and the clustering join reads them back (a
// band at a time, and the sketches through a mapping whose resident pages are bounded), so that
// memory holds a few bytes per document instead of 212 (doc/candidates.md, "Memory").
//
// Files (none is kept: the job's temporary folder is removed on every exit path):
//   sketches   document d's sketch at d * sketch_bytes, written through the page cache (the join
//              reads them once per pass in order, and the writers at random);
//   band-J     band J's key of document d at 4 * d (little-endian uint32), written and read with
//              O_DIRECT where the file system allows it (read sequentially, once per pass of the
//              join, so the page cache is not filled with them).
// A write error (a full disk) is an IOError naming the folder and saying that --tmp-dir moves it.
#ifndef NEARDUP_DEDUP_SPILL_H_
#define NEARDUP_DEDUP_SPILL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "neardup/status.h"

namespace neardup::dedup_internal {

// Appends documents' signatures to the spill files. Used by one thread.
class SpillWriter {
 public:
  // Creates the files in `dir` (an existing folder). IOError naming it.
  static Result<std::unique_ptr<SpillWriter>> Create(const std::string& dir, size_t sketch_bytes,
                                                     size_t bands);
  ~SpillWriter();
  SpillWriter(const SpillWriter&) = delete;
  SpillWriter& operator=(const SpillWriter&) = delete;

  // Appends one document: sketch_bytes bytes of sketch and `bands` band keys.
  Status Append(const uint8_t* sketch, const uint32_t* band_keys);
  // Writes what is buffered and closes the files. No Append after it.
  Status Finish();

  const std::string& dir() const { return dir_; }
  uint64_t documents() const { return documents_; }
  uint64_t bytes() const;  // written so far, in all files

 private:
  SpillWriter() = default;
  Status WriteError(const std::string& file, int error) const;
  Status FlushBand(size_t band, bool last);
  Status FlushSketches();

  std::string dir_;
  size_t sketch_bytes_ = 0;
  size_t bands_ = 0;
  uint64_t documents_ = 0;
  int sketch_fd_ = -1;
  std::vector<uint8_t> sketch_buffer_;
  uint64_t sketch_file_bytes_ = 0;
  struct BandFile {
    int fd = -1;
    bool direct = false;
    uint32_t* buffer = nullptr;  // aligned, kBandBufferKeys keys
    size_t used = 0;
    uint64_t written = 0;  // bytes
  };
  std::vector<BandFile> band_files_;
};

// Reads of a band's keys start at a multiple of this many documents (whole O_DIRECT blocks).
inline constexpr uint64_t kBandKeyAlignment = 1024;

// Band J's keys, read back in order by any number of threads at once (each call reads on its own).
class BandKeyFiles {
 public:
  BandKeyFiles(std::string dir, size_t bands, uint64_t documents)
      : dir_(std::move(dir)), bands_(bands), documents_(documents) {}
  // Calls fn(first, keys) for consecutive chunks of band `band`'s keys of documents [begin, end)
  // (begin a multiple of kBandKeyAlignment): keys of documents first, first + 1, ... Stops at fn's
  // first error. IOError naming the file, or when it is shorter than the documents written.
  Status ForEachChunk(size_t band, uint64_t begin, uint64_t end,
                      const std::function<Status(uint64_t, std::span<const uint32_t>)>& fn) const;

 private:
  std::string dir_;
  size_t bands_;
  uint64_t documents_;
};

// The sketches file mapped read-only: At(d) is document d's sketch (Read(d) copies it). Its pages
// are the page cache's, clean: the kernel reads them in on demand and may drop them at any time.
// They count in the process's resident set while mapped (as file pages, not its own memory): the
// join reads the mapping in order and releases it behind; readers at random use Read. Thread-safe.
class SketchFile {
 public:
  static Result<std::unique_ptr<SketchFile>> Open(const std::string& dir, size_t sketch_bytes,
                                                  uint64_t documents);
  ~SketchFile();
  SketchFile(const SketchFile&) = delete;
  SketchFile& operator=(const SketchFile&) = delete;

  const uint8_t* At(uint64_t document) const { return base_ + document * sketch_bytes_; }
  // Copies document's sketch to out (sketch_bytes), for a reader at random: read, not mapped. A
  // page read through the mapping brings in the cached pages around it (fault-around maps up to a
  // whole folio of the page cache), so a few thousand reads at random make hundreds of megabytes
  // resident.
  void Read(uint64_t document, uint8_t* out) const { ReadRange(document, 1, out); }
  // The sketches of documents [first, first + count) to out (count * sketch_bytes), read likewise.
  void ReadRange(uint64_t first, uint64_t count, uint8_t* out) const;
  // Unmaps the pages of documents [begin, end) from the process (MADV_DONTNEED; the page cache
  // keeps them, and a later At() maps them again). Pages shared with the neighbouring documents
  // go too: releasing is never wrong, only a cost.
  void Release(uint64_t begin, uint64_t end) const;

 private:
  SketchFile() = default;
  const uint8_t* base_ = nullptr;
  size_t mapped_bytes_ = 0;
  size_t sketch_bytes_ = 0;
  int fd_ = -1;
};

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_SPILL_H_
