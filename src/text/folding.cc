#include "neardup/folding.h"

#include <Lexicon.hpp>
#include <MarisaDict.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "text/utf8.h"

namespace neardup {
namespace {

// The single code point of `s`, or -1 when s is not exactly one valid code point.
long SingleCodePoint(std::string_view s) {
  if (s.empty()) return -1;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  char32_t cp = 0;
  const int length = text_internal::DecodeUtf8(p, p + s.size(), &cp);
  return length > 0 && static_cast<size_t>(length) == s.size() ? static_cast<long>(cp) : -1;
}

}  // namespace

CharacterFolding::CharacterFolding() : page_of_(kCodePoints >> kPageBits, -1) {}

bool CharacterFolding::Add(std::string_view from, std::string_view to) {
  const long key = SingleCodePoint(from), value = SingleCodePoint(to);
  if (key < 0 || value < 0) {
    ++ignored_;
    return false;
  }
  const auto cp = static_cast<char32_t>(key);
  int& page = page_of_[cp >> kPageBits];
  if (page < 0) {
    page = static_cast<int>(pages_.size());
    std::vector<char32_t> identity(size_t{1} << kPageBits);
    for (char32_t i = 0; i < identity.size(); ++i) identity[i] = (cp & ~kPageMask) | i;
    pages_.push_back(std::move(identity));
  }
  pages_[static_cast<size_t>(page)][cp & kPageMask] = static_cast<char32_t>(value);
  ++entries_;
  return true;
}

Status CharacterFolding::LoadText(const std::string& path, CharacterFolding* folding) {
  std::ifstream in(path);
  if (!in) return Status::IOError(path + ": cannot open");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 == line.size()) {
      return Status::InvalidArgument(path + ":" + std::to_string(number) +
                                     ": expected from<TAB>to");
    }
    std::string_view values = std::string_view(line).substr(tab + 1);
    folding->Add(std::string_view(line).substr(0, tab), values.substr(0, values.find(' ')));
  }
  return Status::OK();
}

Status CharacterFolding::LoadOpenccBinary(const std::string& path, CharacterFolding* folding) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return Status::IOError(path + ": cannot open");
  // OpenCC's reader leaks its buffers when it throws on a malformed file: the magic is checked here
  // first, so that the common bad input (not an .ocd2 at all) never gets there.
  static constexpr std::string_view kMagic = "OPENCC_MARISA_0.2.5";
  char magic[kMagic.size()] = {};
  const size_t read = std::fread(magic, 1, sizeof(magic), file);
  if (read != sizeof(magic) || std::string_view(magic, sizeof(magic)) != kMagic) {
    std::fclose(file);
    return Status::Corruption(path + ": not an OpenCC dictionary (no " + std::string(kMagic) +
                              " header)");
  }
  std::rewind(file);
  try {
    opencc::MarisaDictPtr dict = opencc::MarisaDict::NewFromFile(file);
    std::fclose(file);
    file = nullptr;
    for (const auto& entry : *dict->GetLexicon()) {
      if (entry->NumValues() == 0) continue;
      folding->Add(entry->Key(), entry->GetDefault());
    }
  } catch (const std::exception& e) {
    if (file != nullptr) std::fclose(file);
    return Status::Corruption(path + ": not a readable OpenCC dictionary: " + e.what());
  } catch (...) {
    if (file != nullptr) std::fclose(file);
    return Status::Corruption(path + ": not a readable OpenCC dictionary");
  }
  return Status::OK();
}

Result<std::unique_ptr<CharacterFolding>> CharacterFolding::Load(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return Status::NotFound(path +
                            ": character folding table not found (Traditional-to-Simplified "
                            "folding reads OpenCC's TSCharacters.ocd2: install Debian package "
                            "libopencc-data, name another table, or turn folding off)");
  }
  std::unique_ptr<CharacterFolding> folding(new CharacterFolding());
  NEARDUP_RETURN_IF_ERROR(path.ends_with(".ocd2") ? LoadOpenccBinary(path, folding.get())
                                                  : LoadText(path, folding.get()));
  if (folding->entries_ == 0) return Status::Corruption(path + ": no single-character entries");
  return folding;
}

Result<std::shared_ptr<const CharacterFolding>> CharacterFolding::LoadShared(
    const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const CharacterFolding>> loaded;
  std::lock_guard lock(mutex);
  auto it = loaded.find(path);
  if (it != loaded.end()) return it->second;
  auto folding = Load(path);
  if (!folding.ok()) return folding.status();
  std::shared_ptr<const CharacterFolding> shared = std::move(*folding);
  loaded.emplace(path, shared);
  return shared;
}

void CharacterFolding::FoldUtf8(std::string_view text, std::string* out) const {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  out->reserve(out->size() + text.size());
  while (p < end) {
    const unsigned char* ascii = p;
    while (ascii < end && *ascii < 0x80) ++ascii;
    out->append(reinterpret_cast<const char*>(p), static_cast<size_t>(ascii - p));
    p = ascii;
    if (p >= end) break;
    char32_t cp = 0;
    const int length = text_internal::DecodeUtf8(p, end, &cp);
    if (length <= 0) {  // not expected (the text is checked); copied unchanged
      out->push_back(static_cast<char>(*p++));
      continue;
    }
    const char32_t folded = Fold(cp);
    if (folded == cp) {
      out->append(reinterpret_cast<const char*>(p), static_cast<size_t>(length));
    } else {
      text_internal::AppendUtf8(folded, out);
    }
    p += length;
  }
}

}  // namespace neardup
