#include <cmath>
#include <mutex>

#include "neardup/keywords.h"
#include "neardup/text.h"
#include "segment/dictionary_data.h"
#include "weight/keyword_counter.h"

namespace neardup {

using weight_internal::KeywordCounter;

std::shared_ptr<const KeywordModel> KeywordModel::Create(std::shared_ptr<const Dictionary> dictionary,
                                                         std::shared_ptr<const IdfTable> idf,
                                                         StopWords stop_words) {
  std::shared_ptr<KeywordModel> model(new KeywordModel());
  const auto& trie = dictionary->data().trie;
  model->node_idf_.assign(trie.units().size(), std::nan(""));
  std::u16string codes;
  for (const auto& [word, value] : idf->entries()) {
    if (!segment_internal::ToCodes(word, &codes) || codes.empty()) continue;
    const int32_t node = trie.Find(codes);
    if (node >= 0) model->node_idf_[static_cast<size_t>(node)] = value;
  }
  model->dictionary_ = std::move(dictionary);
  model->idf_ = std::move(idf);
  model->stop_words_ = std::move(stop_words);
  return model;
}

Result<std::shared_ptr<const KeywordModel>> KeywordModel::Default() {
  static std::once_flag once;
  static Result<std::shared_ptr<const KeywordModel>>* loaded = nullptr;
  std::call_once(once, [] {
    auto dictionary = Dictionary::Default();
    auto idf = IdfTable::Default();
    if (!dictionary.ok()) {
      loaded = new Result<std::shared_ptr<const KeywordModel>>(dictionary.status());
    } else if (!idf.ok()) {
      loaded = new Result<std::shared_ptr<const KeywordModel>>(idf.status());
    } else {
      loaded = new Result<std::shared_ptr<const KeywordModel>>(
          Create(*dictionary, *idf, StopWords::JiebaDefault()));
    }
  });
  return *loaded;
}

double KeywordModel::IdfOf(std::string_view word, int32_t node) const {
  if (node < 0) {
    std::u16string codes;
    if (segment_internal::ToCodes(word, &codes) && !codes.empty()) {
      node = dictionary_->data().trie.Find(codes);
    }
  }
  if (node >= 0) {
    // A trie word's IDF, if the table has it, was joined by node.
    const double idf = node_idf_[static_cast<size_t>(node)];
    return std::isnan(idf) ? idf_->median() : idf;
  }
  return idf_->Find(word).value_or(idf_->median());
}

KeywordExtractor::KeywordExtractor(std::shared_ptr<const KeywordModel> model)
    : model_(std::move(model)), counter_(std::make_unique<KeywordCounter>(*model_)) {}
KeywordExtractor::~KeywordExtractor() = default;
KeywordExtractor::KeywordExtractor(KeywordExtractor&&) noexcept = default;
KeywordExtractor& KeywordExtractor::operator=(KeywordExtractor&&) noexcept = default;

Result<std::vector<Keyword>> KeywordExtractor::Extract(std::string_view text, size_t top) {
  if (const size_t bad = FindInvalidUtf8(text); bad != text.size()) {
    return Status::InvalidArgument("invalid UTF-8 at byte offset " + std::to_string(bad));
  }
  counter_->Reset();
  counter_->AddBlocks(text);
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
  const std::string_view ready(pending.data(), cut);
  if (const size_t bad = FindInvalidUtf8(ready); bad != ready.size()) {
    return Status::InvalidArgument("invalid UTF-8 at byte offset " + std::to_string(counter_->consumed + bad));
  }
  counter_->AddBlocks(ready);
  counter_->consumed += cut;
  pending.erase(0, cut);
  return Status::OK();
}

Result<std::vector<Keyword>> KeywordExtractor::Finish(size_t top) {
  const std::string& pending = counter_->pending;
  if (const size_t bad = FindInvalidUtf8(pending); bad != pending.size()) {
    return Status::InvalidArgument("invalid UTF-8 at byte offset " + std::to_string(counter_->consumed + bad));
  }
  counter_->AddBlocks(pending);
  auto keywords = counter_->Finish(top);
  counter_->Reset();
  return keywords;
}

}  // namespace neardup
