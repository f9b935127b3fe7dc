#include "online/band_tables.h"

#include <algorithm>
#include <bit>
#include <string>
#include <thread>
#include <utility>

namespace neardup::online_internal {

BandTables::BandTables(size_t bands, size_t min_merge_rows)
    : bands_(bands), min_merge_rows_(std::max<size_t>(1, min_merge_rows)), tables_(bands) {}

void BandTables::GrowSlots(Band* band) {
  std::vector<uint64_t> old = std::move(band->slots);
  band->slots.assign(std::max<size_t>(1024, old.size() * 2), uint64_t{kNone});
  for (uint64_t slot : old) {
    if (static_cast<uint32_t>(slot) == kNone) continue;
    size_t s = Home(static_cast<uint32_t>(slot >> 32), band->slots.size());
    while (static_cast<uint32_t>(band->slots[s]) != kNone)
      s = s + 1 == band->slots.size() ? 0 : s + 1;
    band->slots[s] = slot;
  }
}

void BandTables::Add(uint32_t row, std::span<const uint32_t> keys) {
  if (!buffer_started_) {
    buffer_first_ = row;
    buffer_started_ = true;
  }
  const size_t index = row - buffer_first_;
  if ((index + 1) * bands_ > buffer_keys_.size()) {
    buffer_keys_.resize((index + 1) * bands_, kNone);
    next_.resize((index + 1) * bands_, kNone);
    buffer_present_.resize(index + 1, 0);
  }
  buffer_present_[index] = 1;
  ++buffer_rows_;
  for (size_t j = 0; j < bands_; ++j) {
    Band& band = tables_[j];
    const uint32_t key = keys[j];
    buffer_keys_[index * bands_ + j] = key;
    if ((band.used + 1) * 4 > band.slots.size() * 3) GrowSlots(&band);
    size_t s = Home(key, band.slots.size());
    while (true) {
      const uint64_t slot = band.slots[s];
      if (static_cast<uint32_t>(slot) == kNone) {
        band.slots[s] = uint64_t{key} << 32 | row;
        ++band.used;
        break;
      }
      if (static_cast<uint32_t>(slot >> 32) == key) {
        next_[index * bands_ + j] = static_cast<uint32_t>(slot);
        band.slots[s] = uint64_t{key} << 32 | row;
        break;
      }
      s = s + 1 == band.slots.size() ? 0 : s + 1;
    }
  }
}

bool BandTables::ShouldMerge() const {
  return buffer_rows_ >= std::max(min_merge_rows_, main_rows_ / 16);
}

void BandTables::Run::Layout(size_t entries, uint32_t top_row) {
  const int prefix =
      entries < 16 ? 0 : std::clamp(static_cast<int>(std::bit_width(entries)) - 3, 1, 26);
  const int low = 32 - prefix;
  const int needed = low + std::max(1, static_cast<int>(std::bit_width(top_row)));
  const auto new_width = static_cast<size_t>((needed + 7) / 8);
  if (!directory.empty() && prefix == prefix_bits && new_width == width) return;
  std::vector<uint64_t> all;
  if (!directory.empty()) Decode(&all);
  prefix_bits = prefix;
  low_bits = low;
  width = new_width;
  row_bits = static_cast<int>(width) * 8 - low;
  mask = width == 8 ? ~uint64_t{0} : (uint64_t{1} << (width * 8)) - 1;
  bytes.resize(all.size() * width + 8);
  directory.assign((size_t{1} << prefix_bits) + 1, 0);
  uint32_t* dir = directory.data();
  for (size_t i = 0; i < all.size(); ++i) {
    const auto key = static_cast<uint32_t>(all[i] >> 32);
    Store(i, Encode(key, static_cast<uint32_t>(all[i])));
    ++dir[Bucket(key) + 1];
  }
  for (size_t b = 1; b < directory.size(); ++b) dir[b] += dir[b - 1];
}

void BandTables::Run::Decode(std::vector<uint64_t>* out) const {
  out->clear();
  out->reserve(count);
  for (size_t b = 0; b + 1 < directory.size(); ++b) {
    for (size_t i = directory[b]; i < directory[b + 1]; ++i) {
      const uint64_t v = Load(i);
      out->push_back(uint64_t{KeyOf(b, v)} << 32 | RowOf(v));
    }
  }
}

void BandTables::Run::Purge(const RowBits& removed) {
  if (directory.empty()) return;
  size_t kept = 0, begin = 0;
  const size_t buckets = directory.size() - 1;
  for (size_t b = 0; b < buckets; ++b) {
    const size_t end = directory[b + 1];
    directory[b] = static_cast<uint32_t>(kept);
    for (size_t i = begin; i < end; ++i) {
      const uint64_t v = Load(i);
      if (!removed.Contains(RowOf(v))) Store(kept++, v);
    }
    begin = end;
  }
  directory[buckets] = static_cast<uint32_t>(kept);
  count = kept;
}

void BandTables::Run::MergeIn(std::span<const uint64_t> fresh, const RowBits* removed) {
  if (removed != nullptr) Purge(*removed);
  uint32_t top = max_row;
  for (uint64_t e : fresh) top = std::max(top, static_cast<uint32_t>(e));
  Layout(count + fresh.size(), top);
  max_row = top;
  if (fresh.empty()) return;
  // In place, from the back, a bucket at a time: the run grows by the fresh entries and nothing
  // else is allocated. directory[b + 1] becomes bucket b's new end; the buckets below the lowest
  // fresh entry's do not move.
  const size_t total = count + fresh.size();
  bytes.resize(total * width + 8);
  uint8_t* data = bytes.data();
  size_t out = total, f = fresh.size();
  for (size_t b = directory.size() - 1; b-- > 0 && f > 0;) {
    const size_t begin = directory[b];
    size_t a = directory[b + 1];
    directory[b + 1] = static_cast<uint32_t>(out);
    while (f > 0 && Bucket(static_cast<uint32_t>(fresh[f - 1] >> 32)) == b) {
      const uint64_t v =
          Encode(static_cast<uint32_t>(fresh[f - 1] >> 32), static_cast<uint32_t>(fresh[f - 1]));
      while (a > begin && Load(a - 1) > v) Store(--out, Load(--a));
      Store(--out, v);
      --f;
    }
    const size_t rest = a - begin;
    if (out != a) std::memmove(data + (out - rest) * width, data + begin * width, rest * width);
    out -= rest;
  }
  count = total;
}

size_t BandTables::Run::memory_bytes() const {
  return bytes.capacity() + directory.capacity() * sizeof(uint32_t);
}

void BandTables::SortByKey(std::vector<uint64_t>* values, std::vector<uint64_t>* scratch) {
  // LSD radix sort on bits 32..63 in passes of 11, 11 and 10 bits; stable, so rows (added in
  // increasing order) stay ascending within a key.
  const size_t n = values->size();
  scratch->resize(n);
  uint64_t* from = values->data();
  uint64_t* to = scratch->data();
  constexpr int kShifts[3] = {32, 43, 54};
  for (int shift : kShifts) {
    uint32_t counts[2048] = {};
    const uint64_t mask = shift == 54 ? 1023 : 2047;
    for (size_t i = 0; i < n; ++i) ++counts[(from[i] >> shift) & mask];
    uint32_t sum = 0;
    for (uint32_t& c : counts) c = std::exchange(sum, sum + c);
    for (size_t i = 0; i < n; ++i) to[counts[(from[i] >> shift) & mask]++] = from[i];
    std::swap(from, to);
  }
  // Three passes: the sorted values are in *scratch.
  values->swap(*scratch);
}

void BandTables::Merge(const RowBits& removed) {
  const size_t buffered = buffer_present_.size();
  // Removed rows are dropped from the main tables once they are 1/16 of them.
  const bool purge = removed.count() - purged_removed_ >= std::max<size_t>(1, main_rows_ / 16);
  size_t main_rows = 0;
  for (size_t j = 0; j < bands_; ++j) {
    Band& band = tables_[j];
    fresh_.clear();
    for (size_t index = 0; index < buffered; ++index) {
      const auto row = static_cast<uint32_t>(buffer_first_ + index);
      if (buffer_present_[index] == 0 || removed.Contains(row)) continue;
      fresh_.push_back(uint64_t{buffer_keys_[index * bands_ + j]} << 32 | row);
    }
    SortByKey(&fresh_, &scratch_);
    band.main.MergeIn(fresh_, purge ? &removed : nullptr);
    std::fill(band.slots.begin(), band.slots.end(),
              uint64_t{kNone});  // keeps its size for the next buffer
    band.used = 0;
    main_rows = band.main.count;
  }
  if (purge) purged_removed_ = removed.count();
  main_rows_ = main_rows;
  buffer_keys_.clear();
  next_.clear();
  buffer_present_.clear();
  buffer_rows_ = 0;
  buffer_started_ = false;
}

void BandTables::AddAll(uint32_t first_row, std::span<const uint32_t> keys,
                        std::span<const uint8_t> present, const RowBits& removed) {
  if (buffer_started_) Merge(removed);
  // The bands are independent: a large load sorts and merges half of them on a second thread.
  // Each thread has its own scratch, as large as the load, and frees it at the end (not kept for
  // the merges of single inserts).
  auto load_bands = [&](size_t first_band, size_t step) {
    std::vector<uint64_t> fresh, scratch;
    for (size_t j = first_band; j < bands_; j += step) {
      fresh.clear();
      for (size_t i = 0; i < present.size(); ++i) {
        if (present[i] == 0) continue;
        fresh.push_back(uint64_t{keys[i * bands_ + j]} << 32 | (first_row + i));
      }
      SortByKey(&fresh, &scratch);
      tables_[j].main.MergeIn(fresh, nullptr);
    }
  };
  if (present.size() >= 65536 && bands_ > 1) {
    std::thread helper(load_bands, 1, 2);
    load_bands(0, 2);
    helper.join();
  } else {
    load_bands(0, 1);
  }
  if (bands_ > 0) main_rows_ = tables_[0].main.count;
}

void BandTables::KeysOfAll(std::span<uint32_t> keys) const {
  for (size_t j = 0; j < bands_; ++j) {
    const Run& run = tables_[j].main;
    for (size_t b = 0; b + 1 < run.directory.size(); ++b) {
      for (size_t i = run.directory[b]; i < run.directory[b + 1]; ++i) {
        const uint64_t v = run.Load(i);
        keys[size_t{run.RowOf(v)} * bands_ + j] = run.KeyOf(b, v);
      }
    }
  }
  for (size_t index = 0; index < buffer_present_.size(); ++index) {
    if (buffer_present_[index] == 0) continue;
    const size_t row = buffer_first_ + index;
    for (size_t j = 0; j < bands_; ++j) keys[row * bands_ + j] = buffer_keys_[index * bands_ + j];
  }
}

bool BandTables::KeysOf(uint32_t row, std::span<uint32_t> keys) const {
  if (buffer_started_ && row >= buffer_first_ && row - buffer_first_ < buffer_present_.size() &&
      buffer_present_[row - buffer_first_] != 0) {
    const size_t index = row - buffer_first_;
    std::copy_n(buffer_keys_.begin() + static_cast<std::ptrdiff_t>(index * bands_), bands_,
                keys.begin());
    return true;
  }
  for (size_t j = 0; j < bands_; ++j) {
    const Run& run = tables_[j].main;
    bool found = false;
    for (size_t b = 0; b + 1 < run.directory.size() && !found; ++b) {
      for (size_t i = run.directory[b]; i < run.directory[b + 1]; ++i) {
        const uint64_t v = run.Load(i);
        if (run.RowOf(v) == row) {
          keys[j] = run.KeyOf(b, v);
          found = true;
          break;
        }
      }
    }
    if (!found) return false;
  }
  return true;
}

size_t BandTables::memory_bytes() const {
  size_t bytes =
      (buffer_keys_.capacity() + next_.capacity()) * sizeof(uint32_t) + buffer_present_.capacity();
  for (const Band& b : tables_) {
    bytes += b.main.memory_bytes() + b.slots.capacity() * sizeof(uint64_t);
  }
  bytes += (fresh_.capacity() + scratch_.capacity()) * sizeof(uint64_t);
  return bytes;
}

BandTables::RunLayout BandTables::run_layout(size_t band) const {
  const Run& run = tables_[band].main;
  return {run.count, run.max_row, static_cast<uint32_t>(run.prefix_bits),
          static_cast<uint32_t>(run.width)};
}

std::span<const uint8_t> BandTables::run_entries(size_t band) const {
  const Run& run = tables_[band].main;
  return {run.bytes.data(), run.count * run.width};
}

std::span<const uint32_t> BandTables::run_directory(size_t band) const {
  return tables_[band].main.directory;
}

std::span<const uint64_t> BandTables::buffer_slots(size_t band) const {
  return tables_[band].slots;
}

BandTables::BufferLayout BandTables::buffer_layout() const {
  return {buffer_first_, buffer_started_, main_rows_, purged_removed_};
}

namespace {

Status Corrupt(const std::string& what) { return Status::Corruption("band tables: " + what); }

}  // namespace

Status BandTables::RestoreBand(size_t j, RestoredBand* in, uint32_t rows,
                               std::vector<uint8_t>* reached) {
  const std::string band = "band " + std::to_string(j) + ": ";
  const RunLayout& layout = in->layout;
  Run& run = tables_[j].main;
  if (in->directory.empty()) {
    // Never laid out: no entries yet.
    if (layout.count != 0 || layout.max_row != 0 || layout.prefix_bits != 0 || layout.width != 8)
      return Corrupt(band + "a layout without a directory");
  } else {
    if (layout.prefix_bits > 26 || layout.width < 1 || layout.width > 8 ||
        layout.width * 8 <= 32 - layout.prefix_bits ||
        in->directory.size() != (size_t{1} << layout.prefix_bits) + 1) {
      return Corrupt(band + "a layout of " + std::to_string(layout.prefix_bits) +
                     " directory bits and " + std::to_string(layout.width) + "-byte entries");
    }
    if (rows == 0 ? layout.max_row != 0 : layout.max_row >= rows)
      return Corrupt(band + "highest row " + std::to_string(layout.max_row));
    run.count = layout.count;
    run.max_row = layout.max_row;
    run.prefix_bits = static_cast<int>(layout.prefix_bits);
    run.low_bits = 32 - run.prefix_bits;
    run.width = layout.width;
    run.row_bits = static_cast<int>(run.width) * 8 - run.low_bits;
    run.mask = run.width == 8 ? ~uint64_t{0} : (uint64_t{1} << (run.width * 8)) - 1;
    run.bytes = std::move(in->entries);
    std::memset(run.bytes.data() + run.count * run.width, 0, 8);
    run.directory = std::move(in->directory);
    const std::vector<uint32_t>& dir = run.directory;
    if (dir[0] != 0 || dir.back() != run.count)
      return Corrupt(band + "the directory does not span the " + std::to_string(run.count) +
                     " entries");
    const uint64_t row_mask = (uint64_t{1} << run.row_bits) - 1;
    for (size_t b = 0; b + 1 < dir.size(); ++b) {
      if (dir[b + 1] < dir[b]) return Corrupt(band + "directory entry " + std::to_string(b + 1));
      uint64_t previous = 0;
      for (size_t i = dir[b]; i < dir[b + 1]; ++i) {
        const uint64_t v = run.Load(i);
        if ((v & row_mask) >= rows || v < previous) {
          return Corrupt(band + "entry " + std::to_string(i) +
                         (v < previous ? " is out of order" : " has a row past the rows"));
        }
        previous = v;
      }
    }
  }
  // The buffer: each slot heads the chain of its key's rows, found by a lookup of the key; each
  // row of the buffer is reached once, from its key's slot or from a later row of that key.
  Band& table = tables_[j];
  table.slots = std::move(in->slots);
  const std::vector<uint64_t>& slots = table.slots;
  reached->assign(buffer_present_.size(), 0);
  table.used = 0;
  for (size_t s = 0; s < slots.size(); ++s) {
    const auto head = static_cast<uint32_t>(slots[s]);
    if (head == kNone) continue;
    ++table.used;
    const auto key = static_cast<uint32_t>(slots[s] >> 32);
    const size_t index = head - buffer_first_;
    if (head < buffer_first_ || index >= buffer_present_.size() || buffer_present_[index] == 0 ||
        buffer_keys_[index * bands_ + j] != key || (*reached)[index]++ != 0) {
      return Corrupt(band + "buffer slot " + std::to_string(s) + " holds row " +
                     std::to_string(head) + ", not a buffer row of its key");
    }
  }
  if (table.used >= slots.size() && !slots.empty())
    return Corrupt(band + "a buffer without a free slot");
  for (size_t s = 0; s < slots.size(); ++s) {
    if (static_cast<uint32_t>(slots[s]) == kNone) continue;
    const auto key = static_cast<uint32_t>(slots[s] >> 32);
    size_t at = Home(key, slots.size());
    while (static_cast<uint32_t>(slots[at]) != kNone &&
           static_cast<uint32_t>(slots[at] >> 32) != key)
      at = at + 1 == slots.size() ? 0 : at + 1;
    if (at != s) return Corrupt(band + "buffer slot " + std::to_string(s) + " is out of reach");
  }
  for (size_t index = 0; index < buffer_present_.size(); ++index) {
    const uint32_t next = next_[index * bands_ + j];
    if (next != kNone && (*reached)[next - buffer_first_]++ != 0)
      return Corrupt(band + "buffer row " + std::to_string(next) + " is chained twice");
  }
  for (size_t index = 0; index < buffer_present_.size(); ++index) {
    if ((*reached)[index] != buffer_present_[index])
      return Corrupt(band + "buffer row " + std::to_string(buffer_first_ + index) +
                     " is not reached");
  }
  return Status::OK();
}

Result<std::unique_ptr<BandTables>> BandTables::Restore(
    size_t bands, std::vector<RestoredBand> tables, const BufferLayout& buffer,
    std::vector<uint8_t> present, std::vector<uint32_t> keys, std::vector<uint32_t> chains,
    uint32_t rows, const RowBits& removed) {
  if (tables.size() != bands) return Status::Internal("band tables: the bands disagree");
  auto restored = std::make_unique<BandTables>(bands);
  BandTables& t = *restored;
  const size_t span = present.size();
  if (buffer.started ? span == 0 || buffer.first > rows || span > rows - buffer.first : span != 0) {
    return Corrupt("buffer rows " + std::to_string(buffer.first) + " and " + std::to_string(span) +
                   " after, of " + std::to_string(rows));
  }
  if (keys.size() != span * bands || chains.size() != span * bands)
    return Status::Internal("band tables: buffer arrays of other sizes");
  for (size_t index = 0; index < span; ++index) {
    if (present[index] > 1) return Corrupt("buffer row flag " + std::to_string(present[index]));
    t.buffer_rows_ += present[index];
    for (size_t j = 0; j < bands; ++j) {
      const uint32_t next = chains[index * bands + j];
      if (next == kNone) continue;
      const size_t to = next - buffer.first;
      if (present[index] == 0 || next < buffer.first || to >= index || present[to] == 0 ||
          keys[to * bands + j] != keys[index * bands + j]) {
        return Corrupt("band " + std::to_string(j) + ": the chain of buffer row " +
                       std::to_string(buffer.first + index) + " leads to row " +
                       std::to_string(next) + ", not an earlier row of its key");
      }
    }
  }
  if (buffer.purged_removed > removed.count()) return Corrupt("more rows purged than removed");
  t.buffer_first_ = buffer.first;
  t.buffer_started_ = buffer.started;
  t.main_rows_ = buffer.main_rows;
  t.purged_removed_ = buffer.purged_removed;
  t.buffer_present_ = std::move(present);
  t.buffer_keys_ = std::move(keys);
  t.next_ = std::move(chains);

  // The bands are independent: large tables are checked on two threads.
  std::vector<Status> results(bands);
  auto restore_bands = [&](size_t first_band, size_t step) {
    std::vector<uint8_t> reached;
    for (size_t j = first_band; j < bands; j += step)
      results[j] = t.RestoreBand(j, &tables[j], rows, &reached);
  };
  if (rows >= 65536 && bands > 1) {
    std::thread helper(restore_bands, 1, 2);
    restore_bands(0, 2);
    helper.join();
  } else {
    restore_bands(0, 1);
  }
  for (const Status& status : results) NEARDUP_RETURN_IF_ERROR(status);
  return restored;
}

}  // namespace neardup::online_internal
