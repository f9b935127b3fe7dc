#include "segment/dictionary_cache.h"

#include <cmath>

namespace neardup::segment_internal {

using util_internal::CacheKey;
using util_internal::CacheReader;
using util_internal::CacheWriter;

std::optional<CacheKey> DictionaryCacheKey(const DictionaryOptions& options) {
  CacheKey key("jieba-dictionary");
  if (!key.AddFile(options.dict_path).ok()) return std::nullopt;
  for (const char* name : {"/prob_start.py", "/prob_trans.py", "/prob_emit.py"}) {
    if (!key.AddFile(options.hmm_dir + name).ok()) return std::nullopt;
  }
  key.AddText(std::to_string(options.user_dict_paths.size()));
  for (const std::string& path : options.user_dict_paths) {
    if (!key.AddFile(path).ok()) return std::nullopt;
  }
  return key;
}

namespace {

// The blobs after the key, in order (doc/segment.md lists them).
bool ReadBlobs(CacheReader* reader, DictionaryData* data) {
  std::vector<DoubleArrayTrie::Unit> units;
  std::vector<int32_t> values;
  std::vector<CharCode> symbols;
  std::vector<std::string> other_words, force_split;
  std::vector<int64_t> other_frequencies;
  if (!reader->ReadVector(&units) || !reader->ReadVector(&values) ||
      !reader->ReadVector(&symbols) || !reader->ReadVector(&data->words) ||
      !util_internal::ReadStrings(reader, &other_words) ||
      !reader->ReadVector(&other_frequencies) ||
      !util_internal::ReadStrings(reader, &force_split) || !reader->ReadValue(&data->total) ||
      !reader->ReadValue(&data->hmm.start) || !reader->ReadValue(&data->hmm.trans) ||
      !reader->ReadVector(&data->hmm.emit) || !reader->Finish()) {
    return false;
  }
  if (other_words.size() != other_frequencies.size() || data->total <= 0 ||
      data->hmm.emit.size() != size_t{kHanCount} * 4) {
    return false;
  }
  auto trie = DoubleArrayTrie::FromParts(std::move(units), std::move(values), std::move(symbols),
                                         data->words.size());
  if (!trie) return false;
  data->trie = std::move(*trie);
  data->log_total = std::log(static_cast<double>(data->total));
  for (size_t i = 0; i < other_words.size(); ++i) {
    data->other_entries.emplace(std::move(other_words[i]), other_frequencies[i]);
  }
  for (std::string& word : force_split) data->force_split.insert(std::move(word));
  return true;
}

}  // namespace

std::unique_ptr<DictionaryData> ReadDictionaryCache(const std::string& directory,
                                                    const CacheKey& key) {
  if (directory.empty()) return nullptr;
  auto reader = CacheReader::Open(directory + "/" + key.FileName(), key);
  if (reader == nullptr) return nullptr;
  auto data = std::make_unique<DictionaryData>();
  if (!ReadBlobs(reader.get(), data.get())) return nullptr;
  data->cache_key = key.material();
  return data;
}

void WriteDictionaryCache(const DictionaryData& data, const std::string& directory,
                          const CacheKey& key) {
  auto writer = CacheWriter::Create(directory, key);
  if (writer == nullptr) return;
  writer->WriteVector(data.trie.units());
  writer->WriteVector(data.trie.values());
  writer->WriteVector(data.trie.symbols());
  writer->WriteVector(data.words);
  std::vector<std::string_view> other_words, force_split;
  std::vector<int64_t> other_frequencies;
  for (const auto& [word, frequency] : data.other_entries) {
    other_words.push_back(word);
    other_frequencies.push_back(frequency);
  }
  for (const std::string& word : data.force_split) force_split.push_back(word);
  util_internal::WriteStrings(other_words, writer.get());
  writer->WriteVector(other_frequencies);
  util_internal::WriteStrings(force_split, writer.get());
  writer->WriteValue(data.total);
  writer->WriteValue(data.hmm.start);
  writer->WriteValue(data.hmm.trans);
  writer->WriteVector(data.hmm.emit);
  writer->Commit();
}

}  // namespace neardup::segment_internal
