#include "online/band_tables.h"

#include <algorithm>
#include <bit>

namespace neardup::online_internal {

BandTables::BandTables(size_t bands) : bands_(bands), tables_(bands) {}

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
  return buffer_rows_ >= std::max<size_t>(65536, main_rows_ / 16);
}

void BandTables::BuildDirectory(Band* band) {
  const size_t n = band->entries.size();
  band->prefix_bits = n < 16 ? 0 : std::clamp(static_cast<int>(std::bit_width(n)) - 2, 1, 26);
  const int bits = band->prefix_bits;
  band->directory.assign((size_t{1} << bits) + 1, 0);
  // directory[b] = first entry whose bucket is >= b.
  size_t i = 0;
  for (size_t b = 0; b < (size_t{1} << bits); ++b) {
    band->directory[b] = static_cast<uint32_t>(i);
    const uint64_t next_bucket = b + 1;
    while (i < n && (bits == 0 ? 0 : (band->entries[i] >> (64 - bits))) < next_bucket) ++i;
  }
  band->directory[size_t{1} << bits] = static_cast<uint32_t>(n);
}

void BandTables::Merge(const RowBits& removed) {
  const size_t buffered = buffer_present_.size();
  std::vector<uint64_t> fresh;
  fresh.reserve(buffer_rows_);
  size_t kept_rows = 0;
  for (size_t j = 0; j < bands_; ++j) {
    Band& band = tables_[j];
    fresh.clear();
    for (size_t index = 0; index < buffered; ++index) {
      const auto row = static_cast<uint32_t>(buffer_first_ + index);
      if (buffer_present_[index] == 0 || removed.Contains(row)) continue;
      fresh.push_back(uint64_t{buffer_keys_[index * bands_ + j]} << 32 | row);
    }
    std::sort(fresh.begin(), fresh.end());
    // In place: drop removed rows (forward), then merge from the back, so that a merge allocates
    // nothing beyond the vector's growth (a fresh copy of every band would fault in new pages).
    auto& entries = band.entries;
    if (removed.count() > 0) {
      entries.erase(
          std::remove_if(entries.begin(), entries.end(),
                         [&](uint64_t e) { return removed.Contains(static_cast<uint32_t>(e)); }),
          entries.end());
    }
    size_t a = entries.size(), b = fresh.size();
    if (entries.capacity() < a + b)
      entries.reserve((a + b) * 9 / 8);  // growth by 1/8, not doubling
    entries.resize(a + b);
    for (size_t out = a + b; b > 0;) {
      if (a > 0 && entries[a - 1] > fresh[b - 1]) {
        entries[--out] = entries[--a];
      } else {
        entries[--out] = fresh[--b];
      }
    }
    BuildDirectory(&band);
    std::fill(band.slots.begin(), band.slots.end(),
              uint64_t{kNone});  // keeps its size for the next buffer
    band.used = 0;
    kept_rows = band.entries.size();
  }
  main_rows_ = kept_rows;
  buffer_keys_.clear();
  next_.clear();
  buffer_present_.clear();
  buffer_rows_ = 0;
  buffer_started_ = false;
}

void BandTables::KeysOfAll(std::span<uint32_t> keys) const {
  for (size_t j = 0; j < bands_; ++j) {
    for (uint64_t e : tables_[j].entries)
      keys[static_cast<uint32_t>(e) * bands_ + j] = static_cast<uint32_t>(e >> 32);
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
    bool found = false;
    for (uint64_t e : tables_[j].entries) {
      if (static_cast<uint32_t>(e) == row) {
        keys[j] = static_cast<uint32_t>(e >> 32);
        found = true;
        break;
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
    bytes += b.entries.capacity() * sizeof(uint64_t) + b.directory.capacity() * sizeof(uint32_t) +
             b.slots.capacity() * sizeof(uint64_t);
  }
  return bytes;
}

}  // namespace neardup::online_internal
