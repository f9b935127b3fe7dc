// IdTable: the document ids of a saved index (INDEX.ids beside INDEX), numbered 0, 1, 2...
//
// File format (text, doc/index_ids.md): a header line "neardup-ids<TAB>1<TAB>COUNT", COUNT lines of
// ids (tab, newline, carriage return and backslash escaped as \t \n \r \\), and a trailer line
// "end<TAB>CHECKSUM", CHECKSUM being the XXH3-64 of every id line (with its newline) as 16 hex digits.
#ifndef NEARDUP_DEDUP_ID_TABLE_H_
#define NEARDUP_DEDUP_ID_TABLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/output.h"
#include "neardup/status.h"

namespace neardup::dedup_internal {

class IdTable {
 public:
  void Add(std::string_view id) {
    bytes_.append(id);
    ends_.push_back(bytes_.size());
  }
  size_t size() const { return ends_.size(); }
  bool Has(uint64_t number) const { return number < ends_.size(); }
  std::string_view Get(uint64_t number) const {
    const uint64_t begin = number == 0 ? 0 : ends_[number - 1];
    return std::string_view(bytes_).substr(begin, ends_[number] - begin);
  }

  // Writes the file whole or not at all (neardup/output.h). IOError naming the path.
  Status Save(const std::string& path) const;
  // Writes to an open output that the caller commits.
  Status Save(OutputFile* out) const;
  // NotFound when there is no file; Corruption naming the path and line when it is damaged.
  static Result<IdTable> Load(const std::string& path);

 private:
  std::string bytes_;
  std::vector<uint64_t> ends_;
};

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_ID_TABLE_H_
