#include "store/simhash_tables.h"

#include <bit>
#include <cstdlib>
#include <memory>

namespace neardup::store {
namespace {

void PutBig64(uint64_t value, char* out) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(value & 0xFF);
    value >>= 8;
  }
}

uint64_t GetBig64(const char* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = value << 8 | static_cast<unsigned char>(in[i]);
  return value;
}

}  // namespace

std::string DesignText(const TableDesign& design) {
  std::string text;
  for (int bits : design.block_bits) {
    if (!text.empty()) text.push_back(',');
    text.append(std::to_string(bits));
  }
  text.push_back('/');
  text.append(std::to_string(design.key_blocks));
  return text;
}

Result<TableDesign> ParseDesign(const std::string& text) {
  TableDesign design;
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return Status::Corruption("bad table design '" + text + "'");
  size_t i = 0;
  while (i < slash) {
    size_t end = text.find(',', i);
    if (end == std::string::npos || end > slash) end = slash;
    design.block_bits.push_back(std::atoi(text.substr(i, end - i).c_str()));
    i = end + 1;
  }
  design.key_blocks = std::atoi(text.substr(slash + 1).c_str());
  const Status valid = design.Validate();
  if (!valid.ok()) return Status::Corruption("bad table design '" + text + "': " + valid.message());
  return design;
}

TableDesign DiskDesignFor(int k) { return TableDesign::Even(k + 1 < 2 ? 2 : k + 1, 1); }

SimhashTables::SimhashTables(const TableDesign& design) : layout_(design) {
  original_bit_.resize(static_cast<size_t>(layout_.tables()));
  for (int t = 0; t < layout_.tables(); ++t) {
    for (int j = 0; j < 64; ++j) {
      const int p = std::countr_zero(layout_.Permute(t, uint64_t{1} << j));
      original_bit_[static_cast<size_t>(t)][static_cast<size_t>(p)] = static_cast<uint8_t>(j);
    }
  }
}

std::string SimhashTables::PermutedKey(int table, uint64_t permuted, uint64_t id) {
  std::string key(17, '\0');
  key[0] = static_cast<char>(table);
  PutBig64(permuted, key.data() + 1);
  PutBig64(id, key.data() + 9);
  return key;
}

std::string SimhashTables::Key(int table, uint64_t fingerprint, uint64_t id) const {
  return PermutedKey(table, layout_.Permute(table, fingerprint), id);
}

rocksdb::Status SimhashTables::Put(rocksdb::WriteBatch* batch, rocksdb::ColumnFamilyHandle* family,
                                   uint64_t id, uint64_t fingerprint) const {
  rocksdb::Status status;
  for (int t = 0; t < layout_.tables() && status.ok(); ++t)
    status = batch->Put(family, Key(t, fingerprint, id), rocksdb::Slice());
  return status;
}

rocksdb::Status SimhashTables::Delete(rocksdb::WriteBatch* batch,
                                      rocksdb::ColumnFamilyHandle* family, uint64_t id,
                                      uint64_t fingerprint) const {
  rocksdb::Status status;
  for (int t = 0; t < layout_.tables() && status.ok(); ++t)
    status = batch->Delete(family, Key(t, fingerprint, id));
  return status;
}

bool SimhashTables::OwnedBy(int t, uint64_t permuted_difference) const {
  uint64_t difference = 0;
  for (uint64_t d = permuted_difference; d != 0; d &= d - 1) {
    difference |=
        uint64_t{1}
        << original_bit_[static_cast<size_t>(t)][static_cast<size_t>(std::countr_zero(d))];
  }
  return layout_.OwnerTable(layout_.AgreeingBlocks(difference)) == t;
}

rocksdb::Status SimhashTables::Query(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
                                     const rocksdb::ReadOptions& read, uint64_t fingerprint, int k,
                                     std::vector<Match>* out, DiskQueryStats* stats) const {
  ++stats->queries;
  const size_t first = out->size();
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, family));
  for (int t = 0; t < layout_.tables(); ++t) {
    const uint64_t permuted = layout_.Permute(t, fingerprint);
    const int key_bits = layout_.key_bits(t);
    const uint64_t key_mask = key_bits == 0 ? 0 : ~uint64_t{0} << (64 - key_bits);
    const std::string start = PermutedKey(t, permuted & key_mask, 0);
    ++stats->seeks;
    for (it->Seek(rocksdb::Slice(start.data(), 9)); it->Valid(); it->Next()) {
      const rocksdb::Slice key = it->key();
      if (key.size() != 17 || static_cast<unsigned char>(key[0]) != t) break;
      const uint64_t stored = GetBig64(key.data() + 1);
      if ((stored & key_mask) != (permuted & key_mask)) break;
      ++stats->entries_read;
      const int distance = std::popcount(stored ^ permuted);
      if (distance > k || !OwnedBy(t, stored ^ permuted)) continue;
      out->push_back({GetBig64(key.data() + 9), distance});
    }
    if (!it->status().ok()) return it->status();
  }
  stats->matches += out->size() - first;
  return rocksdb::Status::OK();
}

}  // namespace neardup::store
