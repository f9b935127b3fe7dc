// Internal: the cache file of a loaded dictionary (doc/segment.md, "Cache files"): the trie, the
// word weights, the other FREQ entries, the forced splits and the HMM tables, keyed on dict.txt,
// the user dictionaries and the three HMM files.
#ifndef NEARDUP_SEGMENT_DICTIONARY_CACHE_H_
#define NEARDUP_SEGMENT_DICTIONARY_CACHE_H_

#include <memory>
#include <optional>
#include <string>

#include "segment/dictionary_data.h"
#include "util/cache_file.h"

namespace neardup::segment_internal {

// The key of the dictionary built from `options` (all paths filled in); nullopt when a source file
// cannot be read (parsing then reports the error).
std::optional<util_internal::CacheKey> DictionaryCacheKey(const DictionaryOptions& options);

// The dictionary stored in `directory` under `key`, or nullptr when there is none or it is
// unusable.
std::unique_ptr<DictionaryData> ReadDictionaryCache(const std::string& directory,
                                                    const util_internal::CacheKey& key);

// Stores `data` under `key`; silently does nothing when the directory is not writable.
void WriteDictionaryCache(const DictionaryData& data, const std::string& directory,
                          const util_internal::CacheKey& key);

}  // namespace neardup::segment_internal

#endif  // NEARDUP_SEGMENT_DICTIONARY_CACHE_H_
