#include "online/band_tables.h"

#include <algorithm>
#include <bit>
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

}  // namespace neardup::online_internal
