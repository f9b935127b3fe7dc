// Chinese word segmentation identical to jieba 0.42.1 (doc/segment.md).
//
// A Dictionary holds jieba's word frequencies (dict.txt, plus user dictionaries) in a double-array
// trie and jieba's hidden Markov model for unknown words (finalseg/prob_*.py). A Segmenter cuts
// text with it exactly as Python's jieba does:
//   Segmenter::Cut(text)                    == jieba.lcut(text)                 (HMM on, default
//   mode) Segmenter::Cut(text, {.hmm = false})    == jieba.lcut(text, HMM=False)
//   Segmenter::Cut(text, {.mode = kAll})    == jieba.lcut(text, cut_all=True)
//   Segmenter::Cut(text, {.mode = kSearch}) == jieba.lcut_for_search(text)
// Words are compared as Python str, i.e. by code point: the same words, in the same order,
// including white space and punctuation, each a word of its own.
//
// Thread safety: a Dictionary is immutable after Load() and may be shared by any number of threads
// (hold it in a std::shared_ptr<const Dictionary>). A Segmenter keeps scratch buffers: use one per
// thread; creating one is cheap.
#ifndef NEARDUP_SEGMENT_H_
#define NEARDUP_SEGMENT_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/status.h"

namespace neardup {

namespace segment_internal {
class DictionaryData;
class CutEngine;
}  // namespace segment_internal

// Where jieba's files are. Empty paths are found automatically: in $NEARDUP_JIEBA_DIR when set,
// otherwise in the directory of Debian's python3-jieba (/usr/lib/python3/dist-packages/jieba) or of
// a jieba installed by pip under /usr/local.
struct DictionaryOptions {
  // jieba's main dictionary: one "word frequency [tag]" per line (jieba/dict.txt).
  std::string dict_path;
  // The directory holding prob_start.py, prob_trans.py and prob_emit.py (jieba/finalseg).
  std::string hmm_dir;
  // User dictionaries, applied in order as jieba.load_userdict() does: "word [frequency] [tag]" per
  // line; a missing frequency is jieba's suggest_freq(word), a frequency of 0 deletes the word.
  std::vector<std::string> user_dict_paths;
  // Use the cache file of the parsed dictionary (doc/segment.md, "Cache files"): load it when it
  // matches the files above byte for byte, otherwise parse them and write it. It lives in
  // $NEARDUP_CACHE_DIR, else $XDG_CACHE_HOME/neardup, else ~/.cache/neardup; a missing, damaged or
  // unwritable cache only costs the parsing time.
  bool use_cache = true;
};

// The directory of jieba's data files found by the rule above, or NotFound listing where it looked.
Result<std::string> FindJiebaDirectory();

class Dictionary {
 public:
  // Loads the dictionary. Errors: NotFound for a missing file (naming its path), InvalidArgument
  // "<path>:<line>: <what>" for a malformed line or invalid UTF-8. Never aborts.
  static Result<std::shared_ptr<const Dictionary>> Load(const DictionaryOptions& options);

  // The dictionary of jieba's own files found automatically, loaded once per process and shared.
  static Result<std::shared_ptr<const Dictionary>> Default();

  ~Dictionary();
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;

  // jieba's FREQ.get(word): the frequency of a dictionary word, 0 for a prefix of a word or a
  // deleted word, nullopt when `word` is neither.
  std::optional<int64_t> Frequency(std::string_view word) const;

  // The sum of all frequencies (jieba's Tokenizer.total).
  int64_t total_frequency() const;

  // Number of words with a positive frequency.
  size_t word_count() const;

  // Heap bytes held.
  size_t MemoryBytes() const;

  // The files it was loaded from, for messages and headers.
  const DictionaryOptions& sources() const;

  const segment_internal::DictionaryData& data() const { return *data_; }

 private:
  explicit Dictionary(std::unique_ptr<segment_internal::DictionaryData> data);
  std::unique_ptr<segment_internal::DictionaryData> data_;
};

enum class CutMode {
  kDefault,  // jieba.cut: the most probable cut (the "accurate" mode)
  kAll,      // jieba.cut(cut_all=True): every dictionary word found in the text
  kSearch,   // jieba.cut_for_search: the default cut, each long word preceded by its 2- and 3-grams
             // that are dictionary words
};

struct CutOptions {
  CutMode mode = CutMode::kDefault;
  bool hmm = true;  // recognise unknown words with the HMM (jieba's HMM=True); ignored by kAll
};

class Segmenter {
 public:
  explicit Segmenter(std::shared_ptr<const Dictionary> dictionary);
  ~Segmenter();
  Segmenter(Segmenter&&) noexcept;
  Segmenter& operator=(Segmenter&&) noexcept;

  // The words of `text`, which must be valid UTF-8 (InvalidArgument with the byte offset of the
  // first invalid byte otherwise; see ReplaceInvalidUtf8 in neardup/text.h). The views point into
  // `text` or, for the rare words kAll builds by joining pieces, into storage of this Segmenter;
  // they stay valid until the next call and as long as `text` does.
  Result<std::vector<std::string_view>> Cut(std::string_view text, const CutOptions& options = {});

  // As Cut, appending to *words (which keeps its capacity between calls).
  Status CutInto(std::string_view text, const CutOptions& options,
                 std::vector<std::string_view>* words);

  const std::shared_ptr<const Dictionary>& dictionary() const { return dictionary_; }

 private:
  std::shared_ptr<const Dictionary> dictionary_;
  std::unique_ptr<segment_internal::CutEngine> engine_;
  std::deque<std::string> built_words_;  // words of kAll that are not one piece of the text
};

}  // namespace neardup

#endif  // NEARDUP_SEGMENT_H_
