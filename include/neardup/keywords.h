// TF-IDF keywords identical to jieba.analyse.extract_tags (jieba 0.42.1), and the IDF tables and
// stop words they use (doc/segment.md).
//
// KeywordExtractor::Extract(text, top) returns what
//   jieba.analyse.extract_tags(text, topK=top, withWeight=True)
// returns: the words of jieba.cut(text) with at least two characters that are not stop words
// (compared in lower case), each weighted count / total * idf, where total counts all such
// occurrences and idf comes from the IDF table (its median for words not in it); sorted by
// decreasing weight, ties in order of first occurrence; the first `top` of them (all when top is
// 0). Weights are computed with jieba's floating-point operations in jieba's order, so they are
// bit-identical.
//
// Thread safety: IdfTable, StopWords and KeywordModel are immutable once built and may be shared by
// any number of threads. A KeywordExtractor keeps scratch buffers: use one per thread.
#ifndef NEARDUP_KEYWORDS_H_
#define NEARDUP_KEYWORDS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "neardup/segment.h"
#include "neardup/status.h"

namespace neardup {

namespace weight_internal {
class KeywordCounter;
class KeywordModelCache;

// Lets string-keyed maps be searched with a std::string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
}  // namespace weight_internal

// Inverse document frequencies: "word idf" per line (jieba/analyse/idf.txt, or one written by
// `neardup idf build`). Lines starting with '#' are comments (jieba's own files have none).
class IdfTable {
 public:
  // Errors: NotFound for a missing file; InvalidArgument "<path>:<line>: <what>" for a line that is
  // not "word idf" or not UTF-8, or whose idf is not finite (inf, nan: Python's float() takes them,
  // but no weight could be written); InvalidArgument "<path>: no entries" for a table without one.
  // Lines are cut as Python's str.splitlines() cuts them, <line> counts newlines. Blank lines and
  // lines starting with '#' that are not entries are skipped. A word listed twice keeps its last
  // value.
  static Result<std::shared_ptr<const IdfTable>> Load(const std::string& path);

  // Whether `word` can be an entry of a table file: non-empty UTF-8 without white space as Python's
  // str.isspace() sees it (the U+001C..U+001F separators, U+0085, U+2028, U+3000... included),
  // which str.strip() and str.split(' ') of the loader (and jieba's) would cut off or split at.
  static bool CanHold(std::string_view word);

  // jieba's own table: analyse/idf.txt next to the dictionary found by FindJiebaDirectory().
  static Result<std::shared_ptr<const IdfTable>> Default();

  // Builds a table from words and values (later duplicates win).
  static std::shared_ptr<const IdfTable> FromEntries(
      std::vector<std::pair<std::string, double>> entries, std::string source);

  std::optional<double> Find(std::string_view word) const;

  // jieba's median_idf: sorted(values)[count / 2]; 0 for an empty table.
  double median() const { return median_; }
  size_t size() const { return entries_.size(); }
  const std::string& source() const { return source_; }

  // Every word once with its value, in order of first appearance.
  const std::vector<std::pair<std::string_view, double>>& entries() const { return entries_; }

 private:
  IdfTable() = default;
  // Adds or replaces an entry; `word` must stay valid (it points into words_).
  void Put(std::string_view word, double value);
  void Finalize();

  std::string words_;  // the bytes the entries point into
  std::vector<std::pair<std::string_view, double>> entries_;
  std::vector<uint32_t> index_;  // open addressing: entry number + 1, 0 when free
  double median_ = 0;
  std::string source_;
};

// Words left out of keywords, compared with the candidate word in lower case.
class StopWords {
 public:
  // jieba's built-in list ("the", "of", "is", ... 31 English words).
  static StopWords JiebaDefault();
  // No stop words.
  StopWords() = default;

  // Adds every line of a UTF-8 file, as jieba.analyse.set_stop_words does (lines are taken whole,
  // including any spaces). Errors: NotFound, InvalidArgument naming the line with invalid UTF-8.
  Status AddFile(const std::string& path);
  void Add(std::string_view word) { Insert(word); }

  bool Contains(std::string_view lower_case_word) const {
    if (ascii_only_ && !lower_case_word.empty() &&
        static_cast<unsigned char>(lower_case_word[0]) >= 0x80) {
      return false;  // no stop word starts with a non-ASCII byte
    }
    return words_.find(lower_case_word) != words_.end();
  }
  size_t size() const { return words_.size(); }

 private:
  void Insert(std::string_view word);

  std::unordered_set<std::string, weight_internal::StringHash, std::equal_to<>> words_;
  bool ascii_only_ = true;  // every stop word starts with an ASCII byte (or is empty)
};

// Where a KeywordModel's IDF table and stop words come from.
struct KeywordModelOptions {
  std::string idf_path;         // empty: jieba's analyse/idf.txt (IdfTable::Default())
  std::string stop_words_path;  // empty: jieba's English stop words only
  // Use the cache file of the IDF table joined with the dictionary (doc/segment.md, "Cache files"),
  // as DictionaryOptions::use_cache does. Needs a dictionary loaded with its cache key.
  bool use_cache = true;
};

// A dictionary, an IDF table and stop words, joined for fast lookups (the IDF of each dictionary
// word is found by its trie node). It keeps what it needs of the table, not the table. Immutable;
// share it.
class KeywordModel {
 public:
  static std::shared_ptr<const KeywordModel> Create(std::shared_ptr<const Dictionary> dictionary,
                                                    const IdfTable& idf, StopWords stop_words);

  // Loads the IDF table and stop words named by `options` and joins them with `dictionary`, through
  // the cache when it matches. Errors: those of IdfTable::Load and StopWords::AddFile.
  static Result<std::shared_ptr<const KeywordModel>> Load(
      std::shared_ptr<const Dictionary> dictionary, const KeywordModelOptions& options);

  // jieba's dictionary, IDF table and stop words, loaded once per process (through the cache).
  static Result<std::shared_ptr<const KeywordModel>> Default();

  const std::shared_ptr<const Dictionary>& dictionary() const { return dictionary_; }
  const StopWords& stop_words() const { return stop_words_; }
  double median_idf() const { return median_idf_; }
  const std::string& idf_source() const { return idf_source_; }

  // The IDF of a word (the median when it has none). `node` is the word's trie node, -1 when the
  // word is known not to be in the trie, or any other negative value when that is not known.
  double IdfOf(std::string_view word, int32_t node) const;

  // The IDF of the word ending at a trie node, or NaN when the table has none.
  double IdfOfNode(int32_t node) const { return node_idf_[static_cast<size_t>(node)]; }

 private:
  friend class weight_internal::KeywordModelCache;
  KeywordModel() = default;
  std::shared_ptr<const Dictionary> dictionary_;
  double median_idf_ = 0;
  std::string idf_source_;
  StopWords stop_words_;
  std::vector<double> node_idf_;               // by trie node; NaN where the table has no entry
  std::shared_ptr<const IdfTable> other_idf_;  // the entries whose word is not a trie node
};

struct Keyword {
  std::string word;
  double weight = 0;
};

class KeywordExtractor {
 public:
  explicit KeywordExtractor(std::shared_ptr<const KeywordModel> model);
  ~KeywordExtractor();
  KeywordExtractor(KeywordExtractor&&) noexcept;
  KeywordExtractor& operator=(KeywordExtractor&&) noexcept;

  // jieba.analyse.extract_tags(text, topK=top, withWeight=True); top 0 means all. `text` must be
  // valid UTF-8 (InvalidArgument with the byte offset otherwise).
  Result<std::vector<Keyword>> Extract(std::string_view text, size_t top);

  // The same in pieces, for documents that arrive in parts (any cut, even inside a character):
  // Reset(), Add() each piece, Finish(). Memory holds the distinct words and the longest run of
  // block characters, not the text.
  void Reset();
  Status Add(std::string_view piece);
  Result<std::vector<Keyword>> Finish(size_t top);

  const KeywordModel& model() const { return *model_; }

 private:
  std::shared_ptr<const KeywordModel> model_;
  std::unique_ptr<weight_internal::KeywordCounter> counter_;
};

}  // namespace neardup

#endif  // NEARDUP_KEYWORDS_H_
