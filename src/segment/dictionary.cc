#include <sys/stat.h>

#include <cstdlib>
#include <mutex>

#include "neardup/segment.h"
#include "segment/dictionary_cache.h"
#include "segment/dictionary_data.h"
#include "text/utf8.h"

namespace neardup {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::vector<std::string> CandidateDirectories() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("NEARDUP_JIEBA_DIR"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
    return candidates;
  }
  candidates.emplace_back("/usr/lib/python3/dist-packages/jieba");
  for (int minor = 13; minor >= 7; --minor) {
    candidates.push_back("/usr/local/lib/python3." + std::to_string(minor) +
                         "/dist-packages/jieba");
  }
  return candidates;
}

}  // namespace

Result<std::string> FindJiebaDirectory() {
  std::string looked;
  for (const std::string& dir : CandidateDirectories()) {
    struct stat info;
    if (::stat((dir + "/dict.txt").c_str(), &info) == 0) return dir;
    looked += (looked.empty() ? "" : ", ") + dir;
  }
  return Status::NotFound("jieba's dictionary (dict.txt) not found in " + looked +
                          "; install python3-jieba, set NEARDUP_JIEBA_DIR or give the paths");
}

Dictionary::Dictionary(std::unique_ptr<segment_internal::DictionaryData> data)
    : data_(std::move(data)) {}
Dictionary::~Dictionary() = default;

Result<std::shared_ptr<const Dictionary>> Dictionary::Load(const DictionaryOptions& options) {
  DictionaryOptions resolved = options;
  if (resolved.dict_path.empty() || resolved.hmm_dir.empty()) {
    auto dir = FindJiebaDirectory();
    if (!dir.ok()) return dir.status();
    if (resolved.dict_path.empty()) resolved.dict_path = *dir + "/dict.txt";
    if (resolved.hmm_dir.empty()) resolved.hmm_dir = *dir + "/finalseg";
  }
  if (!IsDirectory(resolved.hmm_dir)) {
    return Status::NotFound("jieba HMM model directory " + resolved.hmm_dir + " does not exist");
  }
  std::optional<util_internal::CacheKey> key;
  const std::string cache_directory =
      resolved.use_cache ? util_internal::CacheDirectory() : std::string();
  if (!cache_directory.empty()) key = segment_internal::DictionaryCacheKey(resolved);
  if (key) {
    if (auto cached = segment_internal::ReadDictionaryCache(cache_directory, *key)) {
      cached->sources = resolved;
      return std::shared_ptr<const Dictionary>(new Dictionary(std::move(cached)));
    }
  }
  auto data = segment_internal::LoadDictionaryData(resolved);
  if (!data.ok()) return data.status();
  if (key) {
    segment_internal::WriteDictionaryCache(**data, cache_directory, *key);
    (*data)->cache_key = key->material();
  }
  return std::shared_ptr<const Dictionary>(new Dictionary(std::move(*data)));
}

Result<std::shared_ptr<const Dictionary>> Dictionary::Default() {
  static std::once_flag once;
  static Result<std::shared_ptr<const Dictionary>>* loaded = nullptr;
  std::call_once(once, [] {
    loaded = new Result<std::shared_ptr<const Dictionary>>(Load(DictionaryOptions{}));
  });
  return *loaded;
}

std::optional<int64_t> Dictionary::Frequency(std::string_view word) const {
  return data_->Frequency(word);
}
int64_t Dictionary::total_frequency() const { return data_->total; }
size_t Dictionary::word_count() const { return data_->words.size(); }
size_t Dictionary::MemoryBytes() const { return data_->MemoryBytes(); }
const DictionaryOptions& Dictionary::sources() const { return data_->sources; }

namespace segment_internal {

bool ToCodes(std::string_view utf8, std::u16string* codes) {
  codes->clear();
  const auto* p = reinterpret_cast<const unsigned char*>(utf8.data());
  const auto* end = p + utf8.size();
  while (p < end) {
    char32_t cp;
    const int n = text_internal::DecodeUtf8(p, end, &cp);
    if (n <= 0) return false;
    const CharCode code = CodeOf(cp);
    if (code == 0) return false;
    codes->push_back(static_cast<char16_t>(code));
    p += n;
  }
  return true;
}

std::optional<int64_t> DictionaryData::Frequency(std::string_view word) const {
  std::u16string codes;
  if (ToCodes(word, &codes)) {
    if (codes.empty()) return std::nullopt;
    return FrequencyOfCodes(codes);
  }
  auto it = other_entries.find(std::string(word));
  if (it == other_entries.end()) return std::nullopt;
  return it->second;
}

size_t DictionaryData::MemoryBytes() const {
  size_t bytes = trie.MemoryBytes() + words.capacity() * sizeof(DictionaryWord) +
                 hmm.emit.capacity() * sizeof(double);
  for (const auto& [key, value] : other_entries) bytes += key.capacity() + 48;
  for (const auto& word : force_split) bytes += word.capacity() + 48;
  return bytes;
}

}  // namespace segment_internal
}  // namespace neardup
