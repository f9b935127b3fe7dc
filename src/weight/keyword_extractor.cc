#include <cmath>
#include <mutex>

#include "neardup/keywords.h"
#include "neardup/text.h"
#include "segment/dictionary_data.h"
#include "text/utf8.h"
#include "weight/keyword_cache.h"
#include "weight/keyword_counter.h"

namespace neardup {

using weight_internal::KeywordCounter;

std::shared_ptr<const KeywordModel> KeywordModel::Create(
    std::shared_ptr<const Dictionary> dictionary, const IdfTable& idf, StopWords stop_words) {
  std::shared_ptr<KeywordModel> model(new KeywordModel());
  const auto& trie = dictionary->data().trie;
  model->node_idf_.assign(trie.units().size(), std::nan(""));
  std::u16string codes;
  std::vector<std::pair<std::string, double>> others;
  for (const auto& [word, value] : idf.entries()) {
    const int32_t node =
        segment_internal::ToCodes(word, &codes) && !codes.empty() ? trie.Find(codes) : -1;
    if (node >= 0) {
      model->node_idf_[static_cast<size_t>(node)] = value;
    } else {
      others.emplace_back(word, value);
    }
  }
  model->other_idf_ = IdfTable::FromEntries(std::move(others), idf.source());
  model->dictionary_ = std::move(dictionary);
  model->median_idf_ = idf.median();
  model->idf_source_ = idf.source();
  model->stop_words_ = std::move(stop_words);
  return model;
}

Result<std::shared_ptr<const KeywordModel>> KeywordModel::Load(
    std::shared_ptr<const Dictionary> dictionary, const KeywordModelOptions& options) {
  StopWords stop_words = StopWords::JiebaDefault();
  if (!options.stop_words_path.empty())
    NEARDUP_RETURN_IF_ERROR(stop_words.AddFile(options.stop_words_path));
  std::string idf_path = options.idf_path;
  if (idf_path.empty()) {
    auto dir = FindJiebaDirectory();
    if (!dir.ok()) return dir.status();
    idf_path = *dir + "/analyse/idf.txt";
  }
  const std::string cache_directory =
      options.use_cache ? util_internal::CacheDirectory() : std::string();
  std::optional<util_internal::CacheKey> key;
  if (!cache_directory.empty())
    key = weight_internal::KeywordModelCache::Key(*dictionary, idf_path);
  if (key) {
    if (auto cached = weight_internal::KeywordModelCache::Read(cache_directory, *key, dictionary)) {
      cached->stop_words_ = std::move(stop_words);
      return std::shared_ptr<const KeywordModel>(std::move(cached));
    }
  }
  auto idf = IdfTable::Load(idf_path);
  if (!idf.ok()) return idf.status();
  auto model = Create(std::move(dictionary), **idf, std::move(stop_words));
  if (key) weight_internal::KeywordModelCache::Write(*model, cache_directory, *key);
  return model;
}

Result<std::shared_ptr<const KeywordModel>> KeywordModel::Default() {
#if defined(__EMSCRIPTEN__)
  // The WebAssembly module has no file system and does not carry jieba's dictionaries
  // (doc/wasm.md).
  return Status::Unavailable(
      "jieba's dictionary is not in the WebAssembly build, so Chinese word segmentation is not "
      "available here (modes terms and keywords, and word shingles of Chinese text): use lang en "
      "(each Han character a word) or the default method, which needs no dictionary");
#endif
  static std::once_flag once;
  static Result<std::shared_ptr<const KeywordModel>>* loaded = nullptr;
  std::call_once(once, [] {
    auto dictionary = Dictionary::Default();
    loaded = new Result<std::shared_ptr<const KeywordModel>>(
        dictionary.ok() ? Load(*dictionary, KeywordModelOptions{})
                        : Result<std::shared_ptr<const KeywordModel>>(dictionary.status()));
  });
  return *loaded;
}

double KeywordModel::IdfOf(std::string_view word, int32_t node) const {
  if (node < -1) {
    std::u16string codes;
    if (segment_internal::ToCodes(word, &codes) && !codes.empty()) {
      node = dictionary_->data().trie.Find(codes);
    }
  }
  if (node >= 0) {
    // A trie word's IDF, if the table has it, was joined by node.
    const double idf = node_idf_[static_cast<size_t>(node)];
    return std::isnan(idf) ? median_idf_ : idf;
  }
  return other_idf_->Find(word).value_or(median_idf_);
}

KeywordExtractor::KeywordExtractor(std::shared_ptr<const KeywordModel> model)
    : model_(std::move(model)), counter_(std::make_unique<KeywordCounter>(*model_)) {}
KeywordExtractor::~KeywordExtractor() = default;
KeywordExtractor::KeywordExtractor(KeywordExtractor&&) noexcept = default;
KeywordExtractor& KeywordExtractor::operator=(KeywordExtractor&&) noexcept = default;

Result<std::vector<Keyword>> KeywordExtractor::Extract(std::string_view text, size_t top) {
  counter_->Reset();
  if (auto bad = counter_->AddBlocks(text)) {
    return Status::InvalidArgument(text_internal::InvalidUtf8Message(*bad));
  }
  return counter_->Finish(top);
}

void KeywordExtractor::Reset() { counter_->Reset(); }

namespace {

// End of the longest prefix of `text` that ends just after a complete character outside the blocks
// (where jieba cuts blocks anyway); 0 when there is none.
size_t LastBlockBoundary(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t end = text.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && end - start < 4 && (p[start] & 0xC0) == 0x80) --start;
    char32_t cp = 0;
    const int n = text_internal::DecodeUtf8(p + start, p + end, &cp);
    if (n == 0 && end == text.size()) {  // a character cut by the end of the piece
      end = start;
      continue;
    }
    if (n != static_cast<int>(end - start) || segment_internal::CodeOf(cp) == 0) return end;
    end = start;
  }
  return 0;
}

}  // namespace

Status KeywordExtractor::Add(std::string_view piece) {
  std::string& pending = counter_->pending;
  pending.append(piece);
  const size_t cut = LastBlockBoundary(pending);
  if (cut == 0) return Status::OK();
  if (auto bad = counter_->AddBlocks(std::string_view(pending.data(), cut))) {
    return Status::InvalidArgument(text_internal::InvalidUtf8Message(counter_->consumed + *bad));
  }
  counter_->consumed += cut;
  pending.erase(0, cut);
  return Status::OK();
}

Result<std::vector<Keyword>> KeywordExtractor::Finish(size_t top) {
  if (auto bad = counter_->AddBlocks(counter_->pending)) {
    const uint64_t offset = counter_->consumed + *bad;
    counter_->Reset();
    return Status::InvalidArgument(text_internal::InvalidUtf8Message(offset));
  }
  auto keywords = counter_->Finish(top);
  counter_->Reset();
  return keywords;
}

}  // namespace neardup
