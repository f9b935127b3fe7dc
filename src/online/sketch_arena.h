// SketchArena: the accurate method's sketches by row, for the online index, in memory or in a file.
//
// In memory, the sketches sit in chunks of 65,536 rows (no reallocation as the arena grows; each
// chunk's pages are mapped in one call). In a file (OnlineIndexOptions::sketch_directory), they sit
// in an unlinked temporary file of that directory at row * sketch_bytes, written through a buffer
// of the newest 4,096 rows and read back with pread(): the index then keeps about 132 bytes a
// document less in memory and reads one sketch for each candidate a query verifies (0.6 a query
// on the benchmark's corpus), from the page cache while it holds them. The file is scratch: the
// durable copy of a store's sketches is in its database, and the file goes with the process.
//
// Rows without a sketch (documents without features) leave holes, never read.
//
// Thread safety: Append() needs exclusive access; Read() may run concurrently with other Read()s.
#ifndef NEARDUP_ONLINE_SKETCH_ARENA_H_
#define NEARDUP_ONLINE_SKETCH_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "neardup/status.h"

namespace neardup::online_internal {

class SketchArena {
 public:
  // An arena of sketches of sketch_bytes each: in memory when `directory` is empty, else in a
  // temporary file there (IOError naming the directory when it cannot be made).
  static Result<std::unique_ptr<SketchArena>> Create(size_t sketch_bytes,
                                                     const std::string& directory);
  ~SketchArena();
  SketchArena(const SketchArena&) = delete;
  SketchArena& operator=(const SketchArena&) = delete;

  // Stores row's sketch (sketch_bytes bytes). Rows come in increasing order. IOError when the file
  // cannot be written (a full disk): the arena is then as it was, and the row is not stored.
  Status Append(uint32_t row, const uint8_t* sketch);

  // Row's sketch: a pointer into the arena, or into `scratch` (sketch_bytes bytes) where it was
  // read from the file; null with *error set when the read failed.
  const uint8_t* Read(uint32_t row, uint8_t* scratch, Status* error) const;

  // Snapshots (online/index_snapshot.h). The sketches of rows first .. first + count - 1, which
  // lie in one block of kBlockRows (first a multiple of it): a pointer into the arena, or into
  // `scratch` (count * sketch_bytes bytes) where they were read from the file. Rows without a
  // sketch read as anything. Null with *error set when a read failed. Reads the file with
  // pread() only: it may be called in a child process of a fork(), on the parent's file.
  static constexpr size_t kBlockRows = 4096;
  const uint8_t* ReadBlock(uint64_t first, size_t count, uint8_t* scratch, Status* error) const;
  // Restoring an empty arena in memory: room for the sketches of rows 0 .. rows - 1, as spans that
  // follow one another (rows * sketch_bytes bytes in all), to be filled by the caller.
  std::vector<std::span<uint8_t>> AllocateRows(uint64_t rows);
  // Restoring an empty arena in a file: writes bytes of the sketches of rows 0, 1, ... laid end to
  // end, at `offset` of them. IOError as Append.
  Status WriteRestored(uint64_t offset, std::span<const uint8_t> bytes);

  bool in_file() const { return fd_ >= 0; }
  // Bytes held in memory, and in the file.
  size_t memory_bytes() const;
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  SketchArena(size_t sketch_bytes, int fd, std::string directory);

  // Writes the buffer's rows to the file.
  Status Flush();
  // pwrite() of all the bytes at offset; IOError naming the directory.
  Status WriteAt(const uint8_t* data, size_t size, uint64_t offset);

  static constexpr size_t kChunkRows = 65536;
  static_assert(kChunkRows % kBlockRows == 0);
  static constexpr size_t kBufferRows = 4096;

  const size_t sketch_bytes_;
  const int fd_;                                    // the file, or -1 in memory
  const std::string directory_;                     // for messages
  std::vector<std::unique_ptr<uint8_t[]>> chunks_;  // in memory: kChunkRows sketches each
  // In a file: rows buffer_first_ .. buffer_end_ - 1 are in buffer_, not yet written.
  std::unique_ptr<uint8_t[]> buffer_;
  uint64_t buffer_first_ = 0, buffer_end_ = 0;
  uint64_t file_bytes_ = 0;
};

}  // namespace neardup::online_internal

#endif  // NEARDUP_ONLINE_SKETCH_ARENA_H_
