// Pass 1's documents found again in the inputs: which input line is which document of the
// DocumentTable. Pass 2 (WriteKept) copies the kept ones, reading the inputs in order
// (DocumentLines); the boundary decision (boundary.h) re-reads the texts of a few, at random where
// pass 1 recorded their places (DocumentLinesAt).
#ifndef NEARDUP_DEDUP_DOCUMENT_LINES_H_
#define NEARDUP_DEDUP_DOCUMENT_LINES_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dedup/documents.h"
#include "neardup/input.h"
#include "neardup/status.h"

namespace neardup::dedup_internal {

// One document's line, read again.
struct DocumentLine {
  uint32_t document = 0;     // its number in the table
  size_t file = 0;           // into the inputs
  uint64_t line_number = 0;  // 1-based, in its file
  std::string_view raw;      // as in the input, line end included; valid until the next Next()

  // The line as pass 1 read it: without its line end, and without a byte order mark on line 1.
  std::string_view text() const;
};

// Reads the inputs again, in order, and returns the lines of the table's documents: the lines pass
// 1 skipped (table.bad_lines) are passed over, and so are the other shards' lines when the table
// lists its documents' lines (table.ordinals). Memory does not grow with the input.
//
// The inputs must still hold pass 1's lines. Each file is checked to have as many lines as pass 1
// read (when it has been read to its end) and a document's line must not have become too long;
// a line whose text changed but not its length goes unnoticed.
class DocumentLines {
 public:
  // `files` and `table` must outlive this object.
  DocumentLines(const std::vector<InputFile>& files, const DocumentTable& table,
                uint64_t max_line_bytes);
  ~DocumentLines();

  // Reads up to the next document's line: true with *line set, false once every document has
  // been returned and every input read to its end. Internal, "path:line: the input changed since
  // pass 1 (...)", when the inputs no longer hold pass 1's lines; errors of opening (naming the
  // input as the user gave it) and reading.
  Result<bool> Next(DocumentLine* line);

  // Documents returned so far, and the bytes of their lines (line ends included).
  uint64_t documents() const { return document_; }
  uint64_t document_bytes() const { return document_bytes_; }

 private:
  Status OpenNextFile();
  Status EndFile();
  bool IsDocument(uint64_t ordinal);
  Status Changed(uint64_t line_number, std::string_view what) const;

  const std::vector<InputFile>& files_;
  const DocumentTable& table_;
  const uint64_t max_line_bytes_;
  size_t file_ = 0;  // the file read (or next to open)
  std::unique_ptr<LineReader> reader_;
  uint64_t file_line_ = 0;  // lines read of the current file
  uint64_t file_end_ = 0;   // input-line ordinal past the current file's last line in pass 1
  uint64_t ordinal_ = 0;    // input lines read, skipped ones included
  uint64_t document_ = 0;
  uint64_t document_bytes_ = 0;
  size_t next_bad_ = 0;  // into table.bad_lines
  std::string scratch_;
  std::string_view raw_;
};

// The lines of chosen documents, read again from near where pass 1 found them: from the offset of
// the nearest document before each that has one (DocumentTable::line_offsets, every 16th), counting
// lines forward; documents near each other are read on from the last. For a few documents of a
// large input, most of the input is not read. Memory: a window of 4 KB, or of the longest line
// read.
//
// The inputs must still hold pass 1's lines. Each file is checked to have the length pass 1 read,
// and each offset used to be a line's start; a line whose text changed but not its length goes
// unnoticed (as with DocumentLines).
class DocumentLinesAt {
 public:
  // Whether the table records where its documents' lines are (every input a plain file).
  static bool Available(const DocumentTable& table, size_t files);

  // `documents`: ascending, each once, all in the table (which must be Available). `files`,
  // `table` and `documents` must outlive this object.
  DocumentLinesAt(const std::vector<InputFile>& files, const DocumentTable& table,
                  uint64_t max_line_bytes, std::span<const uint32_t> documents);
  ~DocumentLinesAt();

  // The next document's line: true with *line set (its raw bytes valid until the next call), false
  // after the last. Internal, "path:line: the input changed since pass 1 (...)", when the input no
  // longer holds pass 1's lines there; errors of opening (naming the input as the user gave it) and
  // reading.
  Result<bool> Next(DocumentLine* line);

 private:
  Status Open(size_t file, uint64_t line_number);
  // Asks the kernel to read in, in the background, where the next documents of the open file are,
  // so that a disk serves many of the reads at once.
  void Prefetch();
  // Makes the window hold the open file's bytes [from, from + at_least), or to the file's end.
  Status Load(uint64_t from, uint64_t at_least);
  Status Changed(size_t file, uint64_t line_number, std::string_view what) const;

  const std::vector<InputFile>& files_;
  const DocumentTable& table_;
  const uint64_t max_line_bytes_;
  const std::span<const uint32_t> documents_;
  size_t next_ = 0;
  size_t file_ = SIZE_MAX;  // the file open, if any
  int fd_ = -1;
  uint64_t file_bytes_ = 0;  // its length
  std::string buffer_;       // its bytes [window_, window_ + buffer_.size())
  uint64_t window_ = 0;
  uint64_t cursor_ = 0;  // where its line cursor_line_ starts
  uint64_t cursor_line_ = 1;
  size_t prefetched_ = 0;       // documents_ before this one are prefetched (or in other files)
  uint64_t prefetched_to_ = 0;  // of the open file, bytes up to here
};

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_DOCUMENT_LINES_H_
