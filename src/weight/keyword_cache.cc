#include "weight/keyword_cache.h"

#include <xxhash.h>

#include <cmath>

#include "segment/dictionary_data.h"

namespace neardup::weight_internal {

using util_internal::CacheKey;
using util_internal::CacheReader;
using util_internal::CacheWriter;

std::optional<CacheKey> KeywordModelCache::Key(const Dictionary& dictionary,
                                               const std::string& idf_path) {
  const std::string& dictionary_key = dictionary.data().cache_key;
  if (dictionary_key.empty()) return std::nullopt;
  CacheKey key("jieba-keywords");
  // The loader's rules: tables of non-finite values or of no entries, which earlier builds parsed
  // and cached, are refused since; their cache files must not stand in for the parse.
  key.AddText("idf-rules=2");
  key.AddText(dictionary_key);
  // The values are stored by trie node: the key also covers the trie's layout, which a parse by
  // another build of the library could have laid out differently from the same sources.
  const auto& trie = dictionary.data().trie;
  const uint64_t layout[2] = {
      XXH3_64bits(trie.units().data(), trie.units().size() * sizeof(trie.units()[0])),
      XXH3_64bits(trie.values().data(), trie.values().size() * sizeof(int32_t))};
  key.AddText(std::string_view(reinterpret_cast<const char*>(layout), sizeof layout));
  if (!key.AddFile(idf_path).ok()) return std::nullopt;
  return key;
}

std::shared_ptr<KeywordModel> KeywordModelCache::Read(
    const std::string& directory, const CacheKey& key,
    std::shared_ptr<const Dictionary> dictionary) {
  if (directory.empty()) return nullptr;
  auto reader = CacheReader::Open(directory + "/" + key.FileName(), key);
  if (reader == nullptr) return nullptr;
  std::shared_ptr<KeywordModel> model(new KeywordModel());
  std::vector<std::string> other_words;
  std::vector<double> other_values;
  std::string source;
  if (!reader->ReadVector(&model->node_idf_) ||
      !util_internal::ReadStrings(reader.get(), &other_words) ||
      !reader->ReadVector(&other_values) || !reader->ReadValue(&model->median_idf_) ||
      !reader->ReadBytes(&source) || !reader->Finish()) {
    return nullptr;
  }
  if (model->node_idf_.size() != dictionary->data().trie.units().size() ||
      other_words.size() != other_values.size()) {
    return nullptr;
  }
  std::vector<std::pair<std::string, double>> others;
  others.reserve(other_words.size());
  for (size_t i = 0; i < other_words.size(); ++i)
    others.emplace_back(std::move(other_words[i]), other_values[i]);
  model->other_idf_ = IdfTable::FromEntries(std::move(others), source);
  model->idf_source_ = std::move(source);
  model->dictionary_ = std::move(dictionary);
  return model;
}

void KeywordModelCache::Write(const KeywordModel& model, const std::string& directory,
                              const CacheKey& key) {
  auto writer = CacheWriter::Create(directory, key);
  if (writer == nullptr) return;
  writer->WriteVector(model.node_idf_);
  std::vector<std::string_view> other_words;
  std::vector<double> other_values;
  for (const auto& [word, value] : model.other_idf_->entries()) {
    other_words.push_back(word);
    other_values.push_back(value);
  }
  util_internal::WriteStrings(other_words, writer.get());
  writer->WriteVector(other_values);
  writer->WriteValue(model.median_idf_);
  writer->WriteBytes(model.idf_source_);
  writer->Commit();
}

}  // namespace neardup::weight_internal
