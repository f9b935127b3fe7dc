// Online index files (index_snapshot.h, doc/index_format.md "Online index files").
#include "online/index_snapshot.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string_view>
#include <thread>

#include "index/index_file_io.h"
#include "index/index_format.h"
#include "neardup/output.h"
#include "util/pod_array.h"

namespace neardup::online_internal {
namespace {

using index_internal::GetLittleEndian;
using index_internal::IndexFileReader;
using index_internal::PutLittleEndian;
using index_internal::SectionSink;
using index_internal::SectionToWrite;

// The words of the state section: these, then kBandWords for each band (doc/index_format.md).
enum StateWord : size_t {
  kDocuments,
  kEmptyDocuments,
  kInserts,
  kRemoves,
  kQueries,
  kLookups,
  kCandidates,
  kMatches,
  kIdBytes,
  kIdSlots,
  kRemovedWords,
  kEmptyWords,
  kBufferFirst,
  kBufferStarted,
  kBufferSpan,
  kMainRows,
  kPurgedRemoved,
  kFixedWords,
};
enum BandWord : size_t {
  kEntries,
  kMaxRow,
  kPrefixBits,
  kWidth,
  kDirectoryEntries,
  kBufferSlots,
  kBandWords,
};

// Sections: these, then (kAccurate) kSketches.. kBufferChains, then for each band its entries,
// directory and buffer slots.
enum SectionNumber : uint32_t {
  kStateSection,
  kIdBytesSection,
  kIdOffsetsSection,
  kIdSlotsSection,
  kCodesSection,
  kRemovedSection,
  kEmptySection,
  kSimhashSections,
  kSketchesSection = kSimhashSections,
  kBufferRowsSection,
  kBufferKeysSection,
  kBufferChainsSection,
  kFirstBandSection,
};
constexpr uint32_t kSectionsPerBand = 3;
static_assert(kFirstBandSection + kSectionsPerBand * 64 <= index_internal::kIndexMaxSections);

// The arrays are written as they are in memory: the format's little-endian integers are the
// machine's.
static_assert(std::endian::native == std::endian::little);

// Header bytes 16..39.
constexpr size_t kSketchBytesOffset = 16;
constexpr size_t kBandsOffset = 20;
constexpr size_t kReservedOffset = 24;

// The sketches of rows 0 .. rows - 1, a block at a time; zeros for rows without one.
Status ProduceSketches(const SketchArena& arena, const RowBits& empty, uint64_t rows,
                       size_t sketch_bytes, const SectionSink& sink) {
  std::vector<uint8_t> scratch(SketchArena::kBlockRows * sketch_bytes);
  const std::string zeros(sketch_bytes, '\0');
  for (uint64_t first = 0; first < rows; first += SketchArena::kBlockRows) {
    const auto count =
        static_cast<size_t>(std::min<uint64_t>(SketchArena::kBlockRows, rows - first));
    Status error;
    const uint8_t* block = arena.ReadBlock(first, count, scratch.data(), &error);
    if (block == nullptr) return error;
    size_t run = 0;  // the first row of the run of rows with a sketch that i ends
    for (size_t i = 0; i <= count; ++i) {
      if (i < count && !empty.Contains(static_cast<uint32_t>(first + i))) continue;
      if (i > run) {
        sink(std::string_view(reinterpret_cast<const char*>(block) + run * sketch_bytes,
                              (i - run) * sketch_bytes));
      }
      if (i < count) sink(zeros);
      run = i + 1;
    }
  }
  return Status::OK();
}

template <typename T>
SectionToWrite Section(index_internal::IndexSectionKind kind, uint32_t table,
                       std::span<const T> data) {
  return SectionToWrite{kind, table, data.data(), data.size_bytes()};
}

// count * unit, or a size no section has when that is absurd (a damaged count).
uint64_t BytesOf(uint64_t count, uint64_t unit) {
  return count > (uint64_t{1} << 48) / unit ? ~uint64_t{0} : count * unit;
}

}  // namespace

Status WriteSnapshot(const IndexView& index, OutputFile* out) {
  const DocumentSigner& signer = *index.signer;
  const bool accurate = index.bands != nullptr;
  const size_t bands = accurate ? signer.bands() : 0;
  const size_t sketch_bytes = accurate ? signer.sketch_bytes() : 0;
  const uint64_t rows = index.simhashes->size();
  const IndexCounters& counters = index.counters;
  std::vector<uint64_t> state(kFixedWords + kBandWords * bands, 0);
  state[kDocuments] = counters.live;
  state[kEmptyDocuments] = counters.empty_live;
  state[kInserts] = counters.inserts;
  state[kRemoves] = counters.removes;
  state[kQueries] = counters.queries.queries;
  state[kLookups] = counters.queries.lookups;
  state[kCandidates] = counters.queries.candidates;
  state[kMatches] = counters.queries.matches;
  state[kIdBytes] = index.ids->bytes().size();
  state[kIdSlots] = index.ids->slots().size();
  state[kRemovedWords] = index.removed->words().size();
  state[kEmptyWords] = index.empty->words().size();

  std::vector<SectionToWrite> sections;
  sections.push_back(Section(index_internal::kIndexState, 0, std::span<const uint64_t>(state)));
  sections.push_back(
      Section(index_internal::kIndexIdBytes, 0, std::span<const char>(index.ids->bytes())));
  sections.push_back(
      Section(index_internal::kIndexIdOffsets, 0, std::span<const uint64_t>(index.ids->offsets())));
  sections.push_back(
      Section(index_internal::kIndexIdSlots, 0, std::span<const uint64_t>(index.ids->slots())));
  sections.push_back(
      Section(index_internal::kIndexCodes, 0, std::span<const uint64_t>(*index.simhashes)));
  sections.push_back(Section(index_internal::kIndexRemovedRows, 0,
                             std::span<const uint64_t>(index.removed->words())));
  sections.push_back(
      Section(index_internal::kIndexEmptyRows, 0, std::span<const uint64_t>(index.empty->words())));
  if (accurate) {
    const BandTables& tables = *index.bands;
    const BandTables::BufferLayout buffer = tables.buffer_layout();
    state[kBufferFirst] = buffer.first;
    state[kBufferStarted] = buffer.started ? 1 : 0;
    state[kBufferSpan] = tables.buffer_present().size();
    state[kMainRows] = buffer.main_rows;
    state[kPurgedRemoved] = buffer.purged_removed;
    sections.push_back(SectionToWrite{index_internal::kIndexSketches, 0, nullptr,
                                      rows * sketch_bytes, [&](const SectionSink& sink) {
                                        return ProduceSketches(*index.sketches, *index.empty, rows,
                                                               sketch_bytes, sink);
                                      }});
    sections.push_back(Section(index_internal::kIndexBufferRows, 0, tables.buffer_present()));
    sections.push_back(Section(index_internal::kIndexBufferKeys, 0, tables.buffer_keys()));
    sections.push_back(Section(index_internal::kIndexBufferChains, 0, tables.buffer_chains()));
    for (size_t j = 0; j < bands; ++j) {
      const BandTables::RunLayout layout = tables.run_layout(j);
      uint64_t* words = &state[kFixedWords + kBandWords * j];
      words[kEntries] = layout.count;
      words[kMaxRow] = layout.max_row;
      words[kPrefixBits] = layout.prefix_bits;
      words[kWidth] = layout.width;
      words[kDirectoryEntries] = tables.run_directory(j).size();
      words[kBufferSlots] = tables.buffer_slots(j).size();
      const auto table = static_cast<uint32_t>(j);
      sections.push_back(Section(index_internal::kIndexBandEntries, table, tables.run_entries(j)));
      sections.push_back(Section(index_internal::kIndexDirectory, table, tables.run_directory(j)));
      sections.push_back(Section(index_internal::kIndexBufferSlots, table, tables.buffer_slots(j)));
    }
  }
  auto fields = [&](std::string* header) {
    PutLittleEndian<uint32_t>(header, kSketchBytesOffset, static_cast<uint32_t>(sketch_bytes));
    PutLittleEndian<uint32_t>(header, kBandsOffset, static_cast<uint32_t>(bands));
  };
  return index_internal::WriteIndexFile(index_internal::kIndexOnline, signer.settings(), rows,
                                        fields, sections, out);
}

namespace {

// Reads an online index file section by section, checking each as it comes.
class SnapshotReader {
 public:
  SnapshotReader(const IndexFileReader& file, const DocumentSigner& signer)
      : file_(file),
        path_(file.path()),
        accurate_(signer.method() == DedupMethod::kAccurate),
        bands_(signer.bands()),
        sketch_bytes_(signer.sketch_bytes()),
        rows_(file.header().count) {}

  Result<RestoredIndex> Read(const std::string& sketch_directory) {
    NEARDUP_RETURN_IF_ERROR(ReadHeaderFields());
    if (!accurate_) {
      NEARDUP_RETURN_IF_ERROR(ReadRows());
      return std::move(index_);
    }
    // Two halves of about the same size side by side: the rows and sketches on a second thread,
    // the band tables' sections here; then the tables are checked against the rows.
    Status rows;
    std::thread reader([&] {
      rows = ReadRows();
      if (rows.ok()) rows = ReadSketches(sketch_directory);
    });
    const Status bands = ReadBandSections();
    reader.join();
    NEARDUP_RETURN_IF_ERROR(rows);
    NEARDUP_RETURN_IF_ERROR(bands);
    NEARDUP_RETURN_IF_ERROR(RestoreBands());
    return std::move(index_);
  }

 private:
  Status Corrupt(const std::string& what) const { return Status::Corruption(path_ + ": " + what); }

  // Reads section s into a vector of `count` elements, checked before the room is made.
  template <typename T>
  Result<std::vector<T>> ReadVector(uint32_t s, index_internal::IndexSectionKind kind,
                                    uint32_t table, uint64_t count) const {
    const uint64_t bytes = BytesOf(count, sizeof(T));
    NEARDUP_RETURN_IF_ERROR(file_.Expect(s, kind, table, bytes));
    // The pages are mapped in one call before they are cleared and read into.
    std::vector<T> out;
    out.reserve(static_cast<size_t>(count));
    util_internal::PrefaultForWrite(out.data(), static_cast<size_t>(bytes));
    out.resize(static_cast<size_t>(count));
    NEARDUP_RETURN_IF_ERROR(file_.Read(s, kind, table, bytes, out.data()));
    return out;
  }

  Status ReadHeaderFields() {
    const uint8_t* header = file_.header_bytes();
    if (GetLittleEndian<uint32_t>(header, kSketchBytesOffset) != sketch_bytes_ ||
        GetLittleEndian<uint32_t>(header, kBandsOffset) != bands_) {
      return Corrupt("header fields inconsistent with the settings");
    }
    for (size_t b = kReservedOffset; b < index_internal::kIndexCountOffset; ++b) {
      if (header[b] != 0) return Corrupt("non-zero reserved header byte " + std::to_string(b));
    }
    const uint32_t sections =
        accurate_ ? kFirstBandSection + kSectionsPerBand * static_cast<uint32_t>(bands_)
                  : kSimhashSections;
    if (file_.header().sections != sections) {
      return Corrupt(std::to_string(file_.header().sections) + " sections, not " +
                     std::to_string(sections));
    }
    auto state = ReadVector<uint64_t>(kStateSection, index_internal::kIndexState, 0,
                                      kFixedWords + kBandWords * bands_);
    if (!state.ok()) return state.status();
    state_ = std::move(*state);
    return Status::OK();
  }

  // A set of rows: no bit at or past rows_.
  Result<RowBits> ReadRowBits(uint32_t s, index_internal::IndexSectionKind kind, uint64_t words,
                              const char* name) const {
    if (words > (rows_ + 63) / 64) return Corrupt(std::string(name) + ": rows past the rows");
    auto read = ReadVector<uint64_t>(s, kind, 0, words);
    if (!read.ok()) return read.status();
    if (rows_ % 64 != 0 && words == (rows_ + 63) / 64 && (read->back() >> (rows_ % 64)) != 0)
      return Corrupt(std::string(name) + ": rows past the rows");
    return RowBits::FromWords(std::move(*read));
  }

  // The ids, fingerprints, removed and empty rows, and the counters.
  Status ReadRows() {
    IndexCounters& counters = index_.counters;
    counters.live = state_[kDocuments];
    counters.empty_live = state_[kEmptyDocuments];
    counters.inserts = state_[kInserts];
    counters.removes = state_[kRemoves];
    counters.queries.queries = state_[kQueries];
    counters.queries.lookups = state_[kLookups];
    counters.queries.candidates = state_[kCandidates];
    counters.queries.matches = state_[kMatches];

    const uint64_t id_bytes = state_[kIdBytes];
    NEARDUP_RETURN_IF_ERROR(
        file_.Expect(kIdBytesSection, index_internal::kIndexIdBytes, 0, id_bytes));
    std::string bytes;
    bytes.reserve(static_cast<size_t>(id_bytes));
    util_internal::PrefaultForWrite(bytes.data(), static_cast<size_t>(id_bytes));
    bytes.resize(static_cast<size_t>(id_bytes));
    NEARDUP_RETURN_IF_ERROR(
        file_.Read(kIdBytesSection, index_internal::kIndexIdBytes, 0, id_bytes, bytes.data()));
    auto offsets =
        ReadVector<uint64_t>(kIdOffsetsSection, index_internal::kIndexIdOffsets, 0, rows_ + 1);
    if (!offsets.ok()) return offsets.status();
    auto slots =
        ReadVector<uint64_t>(kIdSlotsSection, index_internal::kIndexIdSlots, 0, state_[kIdSlots]);
    if (!slots.ok()) return slots.status();
    auto codes = ReadVector<uint64_t>(kCodesSection, index_internal::kIndexCodes, 0, rows_);
    if (!codes.ok()) return codes.status();
    index_.simhashes = std::move(*codes);
    auto removed = ReadRowBits(kRemovedSection, index_internal::kIndexRemovedRows,
                               state_[kRemovedWords], "removed rows");
    if (!removed.ok()) return removed.status();
    index_.removed = std::move(*removed);
    auto empty = ReadRowBits(kEmptySection, index_internal::kIndexEmptyRows, state_[kEmptyWords],
                             "empty rows");
    if (!empty.ok()) return empty.status();
    index_.empty = std::move(*empty);

    const std::vector<uint64_t>& removed_words = index_.removed.words();
    const std::vector<uint64_t>& empty_words = index_.empty.words();
    uint64_t empty_live = 0;
    for (size_t w = 0; w < empty_words.size(); ++w) {
      const uint64_t gone = w < removed_words.size() ? removed_words[w] : 0;
      empty_live += static_cast<uint64_t>(std::popcount(empty_words[w] & ~gone));
    }
    const uint64_t removed_rows = index_.removed.count();
    if (counters.inserts != rows_ || counters.removes != removed_rows ||
        counters.live != rows_ - removed_rows || counters.empty_live != empty_live) {
      return Corrupt("the counters disagree with the rows");
    }
    auto ids =
        IdIndex::Restore(std::move(bytes), std::move(*offsets), std::move(*slots), index_.removed);
    if (!ids.ok()) return ids.status().WithContext(path_);
    index_.ids = std::move(*ids);
    return Status::OK();
  }

  // Into memory, or through a buffer into the new sketch file.
  Status ReadSketches(const std::string& sketch_directory) {
    auto arena = SketchArena::Create(sketch_bytes_, sketch_directory);
    if (!arena.ok()) return arena.status();
    SketchArena& sketches = **arena;
    const uint64_t bytes = rows_ * sketch_bytes_;
    NEARDUP_RETURN_IF_ERROR(
        file_.Expect(kSketchesSection, index_internal::kIndexSketches, 0, bytes));
    if (sketches.in_file()) {
      uint64_t offset = 0;
      NEARDUP_RETURN_IF_ERROR(file_.ReadInPieces(kSketchesSection, index_internal::kIndexSketches,
                                                 0, bytes, [&](std::span<const uint8_t> piece) {
                                                   const Status written =
                                                       sketches.WriteRestored(offset, piece);
                                                   offset += piece.size();
                                                   return written;
                                                 }));
    } else {
      const std::vector<std::span<uint8_t>> spans = sketches.AllocateRows(rows_);
      NEARDUP_RETURN_IF_ERROR(
          file_.Read(kSketchesSection, index_internal::kIndexSketches, 0, bytes, spans));
    }
    index_.sketches = std::move(*arena);
    return Status::OK();
  }

  // The band tables' sections, into bands_in_.
  Status ReadBandSections() {
    if (state_[kBufferStarted] > 1 || state_[kBufferFirst] > rows_ || state_[kBufferSpan] > rows_) {
      return Corrupt("band tables: buffer state out of range");
    }
    BandTables::BufferLayout& buffer = bands_in_.buffer;
    buffer.first = static_cast<uint32_t>(state_[kBufferFirst]);
    buffer.started = state_[kBufferStarted] == 1;
    buffer.main_rows = state_[kMainRows];
    buffer.purged_removed = state_[kPurgedRemoved];
    const uint64_t span = state_[kBufferSpan];
    auto present =
        ReadVector<uint8_t>(kBufferRowsSection, index_internal::kIndexBufferRows, 0, span);
    if (!present.ok()) return present.status();
    auto keys = ReadVector<uint32_t>(kBufferKeysSection, index_internal::kIndexBufferKeys, 0,
                                     span * bands_);
    if (!keys.ok()) return keys.status();
    auto chains = ReadVector<uint32_t>(kBufferChainsSection, index_internal::kIndexBufferChains, 0,
                                       span * bands_);
    if (!chains.ok()) return chains.status();
    bands_in_.present = std::move(*present);
    bands_in_.keys = std::move(*keys);
    bands_in_.chains = std::move(*chains);
    std::vector<BandTables::RestoredBand>& tables = bands_in_.tables;
    tables.resize(bands_);
    for (size_t j = 0; j < bands_; ++j) {
      const uint64_t* words = &state_[kFixedWords + kBandWords * j];
      const uint32_t s = kFirstBandSection + kSectionsPerBand * static_cast<uint32_t>(j);
      const auto table = static_cast<uint32_t>(j);
      if (words[kEntries] > rows_ || words[kMaxRow] > 0xFFFFFFFFu || words[kPrefixBits] > 26 ||
          words[kWidth] > 8) {
        return Corrupt("band tables: band " + std::to_string(j) + ": layout out of range");
      }
      BandTables::RestoredBand& band = tables[j];
      band.layout.count = words[kEntries];
      band.layout.max_row = static_cast<uint32_t>(words[kMaxRow]);
      band.layout.prefix_bits = static_cast<uint32_t>(words[kPrefixBits]);
      band.layout.width = static_cast<uint32_t>(words[kWidth]);
      const uint64_t bytes = band.layout.count * band.layout.width;
      NEARDUP_RETURN_IF_ERROR(file_.Expect(s, index_internal::kIndexBandEntries, table, bytes));
      if (words[kDirectoryEntries] == 0 && bytes != 0)
        return Corrupt("band tables: band " + std::to_string(j) + ": entries without a directory");
      // The run's 8 bytes of padding follow its entries (BandTables::Restore clears them).
      if (words[kDirectoryEntries] > 0) {
        band.entries.resize(static_cast<size_t>(bytes) + 8);
        util_internal::PrefaultForWrite(band.entries.data(), static_cast<size_t>(bytes));
      }
      NEARDUP_RETURN_IF_ERROR(
          file_.Read(s, index_internal::kIndexBandEntries, table, bytes, band.entries.data()));
      auto directory = ReadVector<uint32_t>(s + 1, index_internal::kIndexDirectory, table,
                                            words[kDirectoryEntries]);
      if (!directory.ok()) return directory.status();
      band.directory = std::move(*directory);
      auto slots = ReadVector<uint64_t>(s + 2, index_internal::kIndexBufferSlots, table,
                                        words[kBufferSlots]);
      if (!slots.ok()) return slots.status();
      band.slots = std::move(*slots);
    }
    return Status::OK();
  }

  // The band tables of bands_in_, checked against the rows.
  Status RestoreBands() {
    auto restored = BandTables::Restore(bands_, std::move(bands_in_.tables), bands_in_.buffer,
                                        std::move(bands_in_.present), std::move(bands_in_.keys),
                                        std::move(bands_in_.chains), static_cast<uint32_t>(rows_),
                                        index_.removed);
    if (!restored.ok()) return restored.status().WithContext(path_);
    index_.bands = std::move(*restored);
    return Status::OK();
  }

  const IndexFileReader& file_;
  const std::string& path_;
  const bool accurate_;
  const size_t bands_;
  const size_t sketch_bytes_;
  const uint64_t rows_;
  std::vector<uint64_t> state_;
  // The band tables as read, for RestoreBands.
  struct {
    BandTables::BufferLayout buffer;
    std::vector<uint8_t> present;
    std::vector<uint32_t> keys, chains;
    std::vector<BandTables::RestoredBand> tables;
  } bands_in_;
  RestoredIndex index_;
};

}  // namespace

Result<RestoredIndex> ReadSnapshot(const std::string& path, const DocumentSigner& signer,
                                   const std::string& sketch_directory) {
  auto opened = IndexFileReader::Open(path);
  if (!opened.ok()) return opened.status();
  const IndexFileReader& file = **opened;
  const index_internal::CommonHeader& header = file.header();
  if (header.kind != index_internal::kIndexOnline) {
    return Status::InvalidArgument(path + ": an index file of " +
                                   (header.kind == index_internal::kIndexSignatures
                                        ? "signatures (LoadSignatureIndex reads it)"
                                        : "fingerprints (LoadIndex reads it)") +
                                   ", not of an online index");
  }
  if (header.settings != signer.settings()) {
    const std::string difference =
        DescribeSettingsDifference(signer.settings(), header.settings, "here", "in the file");
    if (!difference.empty()) {
      return Status::FailedPrecondition(path + ": written under other settings (" + difference +
                                        "): the file's are '" + header.settings +
                                        "', the options' '" + signer.settings() + "'");
    }
  }
  return SnapshotReader(file, signer).Read(sketch_directory);
}

}  // namespace neardup::online_internal
