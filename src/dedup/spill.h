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

// The sketches of documents asked for in ascending order, read from a SketchFile in blocks that
// start at the document asked for: one read a block instead of one a document (the duplicates'
// own sketches: at 100M documents, 35.8M reads at random into a 13 GB file before).
class ForwardSketches {
 public:
  ForwardSketches(const SketchFile& file, size_t sketch_bytes, uint64_t documents);
  // Document d's sketch, valid until the next call. Asked out of order, it is still right (a block
  // read again).
  const uint8_t* Of(uint64_t d);

 private:
  static constexpr uint64_t kBlock = 8192;  // documents: about 1 MB of sketches

  const SketchFile& file_;
  const size_t bytes_;
  const uint64_t documents_;
  std::vector<uint8_t> buffer_;
  uint64_t begin_ = 0, end_ = 0;
};

// The sketches of chosen groups (the duplicates' kept documents), group g's being document
// first_member[g]'s. When they fit in `budget` bytes they are read first, in one forward pass over
// the file (first_member ascending: the groups are numbered in document order), and held: at 100M
// documents, 12.9M kept documents' sketches read one at a time at random from a 13 GB file were
// most of the duplicates file's time. Otherwise they are read at random, through a direct-mapped
// cache of the last 8,192 read (a cluster's duplicates share its kept document).
class KeptSketches {
 public:
  // `needed`: a bit per group (bit g % 64 of word g / 64), set for the groups asked for. Reads
  // nothing: Load does.
  KeptSketches(const SketchFile& file, const std::vector<uint32_t>& first_member,
               size_t sketch_bytes, std::vector<uint64_t> needed);

  // Reads and holds the needed sketches when they fit in `budget` bytes, else sets up the cache.
  // `check` is called every 65,536 sketches read; its error (Cancelled) stops the reading and is
  // returned.
  Status Load(uint64_t budget, const std::function<Status()>& check);

  // Whether the sketches were read first and are held.
  bool held() const { return !held_.empty(); }
  // Group g's sketch (g among the needed ones), valid until the next call.
  const uint8_t* Of(uint32_t group);

 private:
  static constexpr size_t kSlots = 8192;  // about 1 MB of sketches

  const SketchFile& file_;
  const std::vector<uint32_t>& first_member_;
  const size_t bytes_;
  // Held: the needed groups' bits, the rank of each word's first bit, their sketches by rank.
  std::vector<uint64_t> needed_;
  std::vector<uint64_t> ranks_;
  std::vector<uint8_t> held_;
  // Cached: the group in each slot (UINT32_MAX: none), and its sketch.
  std::vector<uint32_t> groups_;
  std::vector<uint8_t> sketches_;
};

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_SPILL_H_
