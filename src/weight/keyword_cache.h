// Internal: the cache file of a KeywordModel's joined IDF values (doc/segment.md, "Cache files"):
// the IDF by trie node, the entries of words outside the trie and the median, keyed on the
// dictionary's own cache key and the IDF file. Stop words are not in it (they are read from their
// file each time).
#ifndef NEARDUP_WEIGHT_KEYWORD_CACHE_H_
#define NEARDUP_WEIGHT_KEYWORD_CACHE_H_

#include <memory>
#include <optional>
#include <string>

#include "neardup/keywords.h"
#include "util/cache_file.h"

namespace neardup::weight_internal {

class KeywordModelCache {
 public:
  // The key of `dictionary` joined with the IDF table at `idf_path`; nullopt when the dictionary
  // has no cache key or the file cannot be read.
  static std::optional<util_internal::CacheKey> Key(const Dictionary& dictionary,
                                                    const std::string& idf_path);

  // The model stored under `key` (without stop words), or nullptr when there is none or it is
  // unusable.
  static std::shared_ptr<KeywordModel> Read(const std::string& directory,
                                            const util_internal::CacheKey& key,
                                            std::shared_ptr<const Dictionary> dictionary);

  // Stores the joined IDF values of `model`; silently does nothing when the directory is not
  // writable.
  static void Write(const KeywordModel& model, const std::string& directory,
                    const util_internal::CacheKey& key);
};

}  // namespace neardup::weight_internal

#endif  // NEARDUP_WEIGHT_KEYWORD_CACHE_H_
