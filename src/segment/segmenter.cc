#include "neardup/text.h"
#include "segment/cut_engine.h"
#include "text/utf8.h"

namespace neardup {

using segment_internal::CutEngine;

Segmenter::Segmenter(std::shared_ptr<const Dictionary> dictionary)
    : dictionary_(std::move(dictionary)),
      engine_(std::make_unique<CutEngine>(dictionary_->data())) {}
Segmenter::~Segmenter() = default;
Segmenter::Segmenter(Segmenter&&) noexcept = default;
Segmenter& Segmenter::operator=(Segmenter&&) noexcept = default;

Result<std::vector<std::string_view>> Segmenter::Cut(std::string_view text,
                                                     const CutOptions& options) {
  std::vector<std::string_view> words;
  NEARDUP_RETURN_IF_ERROR(CutInto(text, options, &words));
  return words;
}

namespace {

// jieba's cut_for_search: before each word of more than 2 (3) characters, its 2-grams (3-grams)
// that are dictionary words.
void AppendSearchWords(const segment_internal::DictionaryData& dict, std::string_view word,
                       std::vector<std::string_view>* words) {
  const auto* p = reinterpret_cast<const unsigned char*>(word.data());
  std::vector<size_t> starts;  // byte offset of each character, then word.size()
  for (size_t i = 0; i < word.size();) {
    char32_t cp;
    starts.push_back(i);
    i += static_cast<size_t>(segment_internal::DecodeCharacter(p + i, p + word.size(), &cp));
  }
  const size_t length = starts.size();
  starts.push_back(word.size());
  std::u16string codes;
  for (size_t n : {size_t{2}, size_t{3}}) {
    if (length <= n) continue;
    for (size_t i = 0; i + n <= length; ++i) {
      const std::string_view gram = word.substr(starts[i], starts[i + n] - starts[i]);
      if (!segment_internal::ToCodes(gram, &codes)) continue;
      const auto frequency = dict.FrequencyOfCodes(codes);
      if (frequency && *frequency > 0) words->push_back(gram);
    }
  }
  words->push_back(word);
}

}  // namespace

Status Segmenter::CutInto(std::string_view text, const CutOptions& options,
                          std::vector<std::string_view>* words) {
  if (uint64_t{text.size()} >= (uint64_t{1} << 32)) {
    return Status::ResourceExhausted("text of 4 GiB or more cannot be segmented in one call");
  }
  const size_t first_word = words->size();
  switch (options.mode) {
    case CutMode::kDefault:
      if (options.hmm) {
        engine_->CutDefault<true>(text,
                                  [words](std::string_view w, int32_t) { words->push_back(w); });
      } else {
        engine_->CutDefault<false>(text,
                                   [words](std::string_view w, int32_t) { words->push_back(w); });
      }
      break;
    case CutMode::kSearch: {
      const auto& dict = dictionary_->data();
      auto emit = [&](std::string_view w, int32_t) { AppendSearchWords(dict, w, words); };
      if (options.hmm) {
        engine_->CutDefault<true>(text, emit);
      } else {
        engine_->CutDefault<false>(text, emit);
      }
      break;
    }
    case CutMode::kAll: {
      built_words_.clear();
      const char* begin = text.data();
      const char* end = begin + text.size();
      engine_->CutAll(text, [&](std::string_view w, int32_t) {
        if (!w.empty() && (w.data() < begin || w.data() + w.size() > end)) {
          w = built_words_.emplace_back(w);
        }
        words->push_back(w);
      });
      break;
    }
  }
  if (auto bad = engine_->TakeFirstInvalid()) {
    words->resize(first_word);
    return Status::InvalidArgument(text_internal::InvalidUtf8Message(*bad));
  }
  return Status::OK();
}

}  // namespace neardup
