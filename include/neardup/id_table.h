// IdTable: the document ids of an index whose numeric ids are 0, 1, 2... (INDEX.ids beside INDEX),
// written by `neardup dedup --save-index` and by `neardup index build` when the ids are not
// numbers.
//
// File format (text): a header line "neardup-ids<TAB>1<TAB>COUNT", COUNT lines of ids (tab,
// newline, carriage return and backslash escaped as \t \n \r \\), and a trailer line
// "end<TAB>CHECKSUM", CHECKSUM being the XXH3-64 of every id line (with its newline) as 16 hex
// digits.
//
// Thread safety: const methods may be called from several threads at once.
#ifndef NEARDUP_ID_TABLE_H_
#define NEARDUP_ID_TABLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/output.h"
#include "neardup/status.h"

namespace neardup {

class IdTable {
 public:
  // Appends the id of the next number (size() before the call).
  void Add(std::string_view id) {
    bytes_.append(id);
    ends_.push_back(bytes_.size());
  }
  size_t size() const { return ends_.size(); }
  bool Has(uint64_t number) const { return number < ends_.size(); }
  // The id of `number`; Has(number) must hold.
  std::string_view Get(uint64_t number) const {
    const uint64_t begin = number == 0 ? 0 : ends_[number - 1];
    return std::string_view(bytes_).substr(begin, ends_[number] - begin);
  }

  // Writes the file whole or not at all (neardup/output.h). IOError naming the path.
  Status Save(const std::string& path) const;
  // Writes to an open output that the caller commits (e.g. with its index).
  Status Save(OutputFile* out) const;
  // NotFound when there is no file; Corruption naming the path and line when it is damaged.
  static Result<IdTable> Load(const std::string& path);

 private:
  std::string bytes_;
  std::vector<uint64_t> ends_;
};

// The path of the id file of the index at index_path: index_path + ".ids".
inline std::string IdTablePath(const std::string& index_path) { return index_path + ".ids"; }

}  // namespace neardup

#endif  // NEARDUP_ID_TABLE_H_
