#include "dedup/document_lines.h"

namespace neardup::dedup_internal {

std::string_view DocumentLine::text() const {
  const std::string_view line = StripLineEnd(raw);
  return line_number == 1 ? StripByteOrderMark(line) : line;
}

DocumentLines::DocumentLines(const std::vector<InputFile>& files, const DocumentTable& table,
                             uint64_t max_line_bytes)
    : files_(files), table_(table), max_line_bytes_(max_line_bytes) {}

DocumentLines::~DocumentLines() = default;

Status DocumentLines::Changed(uint64_t line_number, std::string_view what) const {
  return Status::Internal(files_[file_].name + ":" + std::to_string(line_number) +
                          ": the input changed since pass 1 (" + std::string(what) + ")");
}

Status DocumentLines::OpenNextFile() {
  const InputFile& file = files_[file_];
  auto reader = LineReader::Open(file.read_path);
  if (!reader.ok()) {
    // The reader's message names the path it read; a spooled input is named as the user gave it.
    return file.read_path != file.name ? reader.status().WithContext(file.name) : reader.status();
  }
  reader_ = std::move(*reader);
  file_line_ = 0;
  // Pass 1 records where each file starts; without that record, only the total is checked.
  const std::vector<uint64_t>& starts = table_.file_starts;
  file_end_ = starts.size() == files_.size() && file_ + 1 < starts.size() ? starts[file_ + 1]
                                                                          : table_.lines;
  return Status::OK();
}

Status DocumentLines::EndFile() {
  const std::vector<uint64_t>& starts = table_.file_starts;
  if (ordinal_ != file_end_ && starts.size() == files_.size()) {
    return Changed(file_line_ + 1, "it now ends after " + std::to_string(file_line_) +
                                       " lines; pass 1 read " +
                                       std::to_string(file_end_ - starts[file_]));
  }
  reader_.reset();
  ++file_;
  return Status::OK();
}

bool DocumentLines::IsDocument(uint64_t ordinal) {
  if (!table_.ordinals.empty()) {  // a shard's lines, or a merge's
    return document_ < table_.ordinals.size() && table_.ordinals[document_] == ordinal;
  }
  if (next_bad_ < table_.bad_lines.size() && table_.bad_lines[next_bad_] == ordinal) {
    ++next_bad_;
    return false;
  }
  return true;
}

Result<bool> DocumentLines::Next(DocumentLine* line) {
  while (true) {
    if (reader_ == nullptr) {
      if (file_ == files_.size()) break;
      NEARDUP_RETURN_IF_ERROR(OpenNextFile());
    }
    auto more = reader_->ReadRawLine(&raw_, &scratch_, max_line_bytes_);
    const bool too_long = !more.ok() && more.status().code() == Status::Code::kResourceExhausted;
    if (!more.ok() && !too_long) return more.status();
    if (more.ok() && !*more) {
      NEARDUP_RETURN_IF_ERROR(EndFile());
      continue;
    }
    ++file_line_;
    const uint64_t ordinal = ordinal_++;
    if (ordinal >= file_end_) {
      return Changed(file_line_, "pass 1 read " + std::to_string(file_line_ - 1) + " lines");
    }
    if (!IsDocument(ordinal)) continue;
    if (too_long) return Changed(file_line_, "a document's line is now longer than the limit");
    if (document_ >= table_.size()) return Changed(file_line_, "more documents than in pass 1");
    *line = DocumentLine{static_cast<uint32_t>(document_++), file_, file_line_, raw_};
    document_bytes_ += raw_.size();
    return true;
  }
  if (document_ != table_.size()) {
    return Status::Internal(table_.Location(document_) +
                            ": the input changed since pass 1 (this document is missing)");
  }
  return false;
}

}  // namespace neardup::dedup_internal
