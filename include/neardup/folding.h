// Character folding: a table that maps single code points to single code points, applied to the
// normalised text before tokenisation (doc/fingerprint.md, "Traditional-to-Simplified folding").
//
// Its use here is Traditional Chinese to Simplified by OpenCC's character table (TSCharacters: 4113
// characters, one lookup per character; phrase-level conversion is not done), so that the same text
// printed in either script gives the same features.
//
// Thread safety: a CharacterFolding is immutable after loading and may be shared by threads.
#ifndef NEARDUP_FOLDING_H_
#define NEARDUP_FOLDING_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/status.h"

namespace neardup {

// Where Debian's libopencc-data (package of OpenCC) installs the Traditional-to-Simplified table.
inline constexpr std::string_view kDefaultTraditionalToSimplifiedTable =
    "/usr/share/opencc/TSCharacters.ocd2";

class CharacterFolding {
 public:
  // Loads a table from `path`: an OpenCC binary dictionary (a name ending in .ocd2), or a text
  // table (one entry a line: "from<TAB>to[ alternatives...]", the first alternative is used; empty
  // lines and lines starting with '#' are skipped). Entries whose key or first value is not exactly
  // one code point are ignored (counted by ignored_entries()). Errors: NotFound for a missing file
  // (the message says which package provides it), InvalidArgument naming the line of a malformed
  // text table, Corruption for a .ocd2 that OpenCC cannot read or a table with no usable entry.
  static Result<std::unique_ptr<CharacterFolding>> Load(const std::string& path);

  // Like Load, but loads each path once per process and shares the table.
  static Result<std::shared_ptr<const CharacterFolding>> LoadShared(const std::string& path);

  // The folded code point (cp itself when the table has no entry for it).
  char32_t Fold(char32_t cp) const {
    if (cp >= kCodePoints) return cp;
    const int page = page_of_[cp >> kPageBits];
    return page < 0 ? cp : pages_[static_cast<size_t>(page)][cp & kPageMask];
  }

  // Appends the folded copy of `text` (valid UTF-8) to *out.
  void FoldUtf8(std::string_view text, std::string* out) const;

  size_t entries() const { return entries_; }
  size_t ignored_entries() const { return ignored_; }

 private:
  static constexpr char32_t kCodePoints = 0x110000;
  static constexpr int kPageBits = 8;
  static constexpr char32_t kPageMask = (1u << kPageBits) - 1;

  CharacterFolding();
  // Adds from -> to (both single code points as UTF-8); false when either is not one code point.
  bool Add(std::string_view from, std::string_view to);
  static Status LoadText(const std::string& path, CharacterFolding* folding);
  static Status LoadOpenccBinary(const std::string& path, CharacterFolding* folding);

  std::vector<int> page_of_;                  // page of 256 code points -> index in pages_, or -1
  std::vector<std::vector<char32_t>> pages_;  // each 256 entries, identity where not mapped
  size_t entries_ = 0;
  size_t ignored_ = 0;
};

}  // namespace neardup

#endif  // NEARDUP_FOLDING_H_
