// jieba-identical segmentation and keywords for Python (neardup/_jieba.py and neardup/analyse.py
// build jieba's API on them):
//   _neardup.Tokenizer     a dictionary (jieba's files and user dictionaries) and its cuts;
//   _neardup.KeywordModel  an IDF table and stop words joined with a Tokenizer's dictionary;
//   _neardup.Cutter        cut and cut_for_search as methods of a Python neardup.Tokenizer.
//
// Speed: cutting a short line costs about as much as building its words' str objects, so the
// per-call work is kept small: the hot methods are METH_FASTCALL functions (pybind11's dispatch
// would cost as much as the cut), the str objects of frequent words are reused (WordCache), a str
// is encoded to UTF-8 into a reused buffer, and cut_for_search's n-grams are found here, the
// recent words' remembered (SearchMemo).
//
// Threads: Segmenter and KeywordExtractor keep scratch buffers and are not thread-safe, so each
// object here keeps a small pool of them and any number of Python threads can call it at once.
// Texts of kCutReleaseGilBytes or more are processed with the GIL released; Python objects are only
// touched with it held.
//
// Text arguments: str (the fast path), bytes (UTF-8, rejected with the byte offset of the first
// invalid byte otherwise) or another bytes-like object (copied). A str with lone surrogates, which
// UTF-8 cannot hold, is cut as jieba cuts it: each surrogate is cut as U+FFFD would be (jieba
// treats both alike: a character of no word, its own word) and given back as it was.
#include <Python.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bindings.h"
#include "neardup/keywords.h"
#include "neardup/segment.h"

namespace neardup::python {
namespace {

// Texts at least this long (in UTF-8 bytes) are cut with the GIL released. Shorter ones take a few
// microseconds: releasing the GIL would cost more than it gives, and taking it back can wait for
// another thread's switch interval.
constexpr size_t kCutReleaseGilBytes = 4096;

// Scratch word lists larger than this are not kept between calls.
constexpr size_t kMaxKeptWords = size_t{1} << 20;

// Objects with scratch buffers, reused across calls and threads: Take() one (a new one when none is
// free), use it (without the GIL if need be), and it goes back to the pool when the lease ends.
// Guarded by the GIL: Take() and the end of a lease happen with it held.
template <typename T>
class Pool {
 public:
  class Lease {
   public:
    Lease(Pool* pool, std::unique_ptr<T> item) : pool_(pool), item_(std::move(item)) {}
    ~Lease() { pool_->Put(std::move(item_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    T& operator*() const { return *item_; }
    T* operator->() const { return item_.get(); }

   private:
    Pool* pool_;
    std::unique_ptr<T> item_;
  };

  template <typename Make>
  Lease Take(Make&& make) {
    if (free_.empty()) return Lease(this, make());
    std::unique_ptr<T> item = std::move(free_.back());
    free_.pop_back();
    return Lease(this, std::move(item));
  }

 private:
  // At most this many idle objects are kept (more threads than this at once is unusual).
  static constexpr size_t kMaxFree = 64;

  void Put(std::unique_ptr<T> item) {
    if (free_.size() < kMaxFree) free_.push_back(std::move(item));
  }

  std::vector<std::unique_ptr<T>> free_;
};

// The type name of a Python object, for messages.
std::string TypeName(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

// A word of up to 24 bytes as 3 numbers and its size, for hash tables keyed by words: read with
// loads inside the word only, compared and hashed as numbers.
struct ShortWord {
  static constexpr size_t kMaxBytes = 24;

  uint64_t part[3] = {};
  uint64_t size = 0;  // 0: no word (an empty slot)

  bool operator==(const ShortWord&) const = default;

  // `word` must have 1 to kMaxBytes bytes.
  static ShortWord Of(std::string_view word) {
    const char* p = word.data();
    const size_t n = word.size();
    if (n <= 8) return {{Small(p, n), 0, 0}, n};
    if (n <= 16) return {{Load8(p), Load8(p + n - 8) >> ((16 - n) * 8), 0}, n};
    return {{Load8(p), Load8(p + 8), Load8(p + n - 8) >> ((24 - n) * 8)}, n};
  }

  uint64_t Hash() const {
    uint64_t h = (part[0] ^ (size << 59)) * 0xBF58476D1CE4E5B9ULL;
    h = (h ^ (h >> 31) ^ part[1]) * 0x94D049BB133111EBULL;
    h = (h ^ (h >> 29) ^ part[2]) * 0xBF58476D1CE4E5B9ULL;
    return h >> 32;
  }

 private:
  static uint64_t Load8(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  // The bytes [p, p + n), n <= 8, as a number (one-to-one for a given n).
  static uint64_t Small(const char* p, size_t n) {
    const auto byte = [p](size_t i) { return static_cast<uint64_t>(static_cast<uint8_t>(p[i])); };
    if (n >= 4) {
      uint32_t low, high;
      std::memcpy(&low, p, 4);
      std::memcpy(&high, p + n - 4, 4);
      return low | (static_cast<uint64_t>(high) << ((n - 4) * 8));
    }
    return byte(0) | (byte(n / 2) << 8) | (byte(n - 1) << 16);
  }
};

// Python str objects of words, reused: the words of a text repeat (a vocabulary of thousands
// makes most of any text), and taking a reference to a str made before costs less than making one
// (decoding, allocating, and freeing it when the list dies). Guarded by the GIL; never freed (it
// would outlive the interpreter at exit).
class WordCache {
 public:
  // A new reference to the str of `word` (valid UTF-8); null with a Python error set on failure.
  PyObject* Get(std::string_view word) {
    if (word.empty() || word.size() > ShortWord::kMaxBytes) return Decode(word);
    const ShortWord key = ShortWord::Of(word);
    const uint64_t hash = key.Hash();
    size_t slot = hash & (kSlots - 1);
    for (;; slot = (slot + 1) & (kSlots - 1)) {
      const Slot& s = slots_[slot];
      if (s.str == nullptr) break;
      if (s.key == key) {
        Py_INCREF(s.str);
        return s.str;
      }
    }
    PyObject* str = Decode(word);
    if (str == nullptr) return nullptr;
    if (count_ == kSlots / 2) {  // full: start again (the words of the texts to come come back)
      Clear();
      slot = hash & (kSlots - 1);
    }
    slots_[slot] = {str, key};
    ++count_;
    Py_INCREF(str);
    return str;
  }

 private:
  // Words of up to 8 Han characters are kept, 8K of them (the 1000 most frequent words make 90% of
  // a text), in 640 KiB: lookups stay in the CPU's caches.
  static constexpr size_t kSlots = size_t{1} << 14;

  struct Slot {
    PyObject* str = nullptr;
    ShortWord key;
  };

  static PyObject* Decode(std::string_view word) {
    return PyUnicode_DecodeUTF8(word.data(), static_cast<Py_ssize_t>(word.size()), nullptr);
  }

  void Clear() {
    for (Slot& s : slots_) {
      Py_XDECREF(s.str);
      s = Slot();
    }
    count_ = 0;
  }

  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
  size_t count_ = 0;
};

WordCache& Words() {
  static WordCache* cache = new WordCache();
  return *cache;
}

// A text argument as UTF-8 (see the top of the file), in a caller's buffer when it has to be made.
// Built with the GIL held; text() may then be read without it, as long as the argument lives (the
// caller's reference keeps it).
class TextInput {
 public:
  TextInput(py::handle value, const char* what, std::string* buffer) {
    PyObject* object = value.ptr();
    if (PyUnicode_Check(object)) {
      if (PyUnicode_READY(object) != 0) throw py::error_already_set();
      if (PyUnicode_IS_COMPACT_ASCII(object)) {  // its own bytes, no copy
        text_ = std::string_view(static_cast<const char*>(PyUnicode_DATA(object)),
                                 static_cast<size_t>(PyUnicode_GET_LENGTH(object)));
      } else {
        Encode(object, buffer);
      }
      return;
    }
    if (PyBytes_Check(object)) {  // immutable: its bytes can be read without the GIL
      text_ = std::string_view(PyBytes_AS_STRING(object),
                               static_cast<size_t>(PyBytes_GET_SIZE(object)));
      return;
    }
    if (PyObject_CheckBuffer(object)) {  // may change while the GIL is released: copied
      Py_buffer view;
      if (PyObject_GetBuffer(object, &view, PyBUF_C_CONTIGUOUS) == 0) {
        const bool bytes_like = view.itemsize == 1;
        if (bytes_like)
          buffer->assign(static_cast<const char*>(view.buf), static_cast<size_t>(view.len));
        PyBuffer_Release(&view);
        if (bytes_like) {
          text_ = *buffer;
          return;
        }
      } else {
        PyErr_Clear();
      }
    }
    throw py::type_error(std::string(what) + " must be str or bytes, not " + TypeName(value));
  }
  TextInput(const TextInput&) = delete;
  TextInput& operator=(const TextInput&) = delete;

  std::string_view text() const { return text_; }

  // A new reference to the Python str of a word, a view into text() or into other valid UTF-8;
  // null with a Python error set on failure.
  PyObject* Word(std::string_view word) const {
    if (!surrogates_.empty() && word.data() >= text_.data() &&
        word.data() + word.size() <= text_.data() + text_.size()) {
      const size_t begin = static_cast<size_t>(word.data() - text_.data());
      const size_t end = begin + word.size();
      std::string original;
      auto it = std::lower_bound(surrogates_.begin(), surrogates_.end(),
                                 std::pair<size_t, Py_UCS4>(begin, 0));
      for (; it != surrogates_.end() && it->first < end; ++it) {
        const auto [offset, code] = *it;
        if (original.empty()) original.assign(word);
        // The surrogate's own 3 bytes (what Python's "surrogatepass" reads back).
        original[offset - begin] = static_cast<char>(0xE0 | (code >> 12));
        original[offset - begin + 1] = static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        original[offset - begin + 2] = static_cast<char>(0x80 | (code & 0x3F));
      }
      if (!original.empty()) {
        return PyUnicode_DecodeUTF8(original.data(), static_cast<Py_ssize_t>(original.size()),
                                    "surrogatepass");
      }
    }
    return Words().Get(word);
  }

 private:
  // The UTF-8 of a str that is not ASCII, its lone surrogates (which UTF-8 cannot hold) replaced by
  // U+FFFD (3 bytes too) and remembered.
  void Encode(PyObject* object, std::string* buffer) {
    const size_t length = static_cast<size_t>(PyUnicode_GET_LENGTH(object));
    const void* data = PyUnicode_DATA(object);
    switch (PyUnicode_KIND(object)) {
      case PyUnicode_1BYTE_KIND:
        return EncodeUnits(static_cast<const Py_UCS1*>(data), length, 2, buffer);
      case PyUnicode_2BYTE_KIND:
        return EncodeUnits(static_cast<const Py_UCS2*>(data), length, 3, buffer);
      default:
        return EncodeUnits(static_cast<const Py_UCS4*>(data), length, 4, buffer);
    }
  }

  template <typename Unit>
  void EncodeUnits(const Unit* units, size_t length, size_t max_bytes, std::string* buffer) {
    if (buffer->size() < length * max_bytes) buffer->resize(length * max_bytes);
    auto* out = reinterpret_cast<unsigned char*>(buffer->data());
    unsigned char* p = out;
    for (size_t i = 0; i < length; ++i) {
      const Py_UCS4 c = units[i];
      if (c < 0x80) {
        *p++ = static_cast<unsigned char>(c);
      } else if (c < 0x800) {
        *p++ = static_cast<unsigned char>(0xC0 | (c >> 6));
        *p++ = static_cast<unsigned char>(0x80 | (c & 0x3F));
      } else if (sizeof(Unit) == 1) {
        // Latin-1 stops at U+00FF.
      } else if (c < 0x10000) {
        Py_UCS4 e = c;
        if (c >= 0xD800 && c <= 0xDFFF) [[unlikely]] {
          surrogates_.emplace_back(static_cast<size_t>(p - out), c);
          e = 0xFFFD;
        }
        *p++ = static_cast<unsigned char>(0xE0 | (e >> 12));
        *p++ = static_cast<unsigned char>(0x80 | ((e >> 6) & 0x3F));
        *p++ = static_cast<unsigned char>(0x80 | (e & 0x3F));
      } else {
        *p++ = static_cast<unsigned char>(0xF0 | (c >> 18));
        *p++ = static_cast<unsigned char>(0x80 | ((c >> 12) & 0x3F));
        *p++ = static_cast<unsigned char>(0x80 | ((c >> 6) & 0x3F));
        *p++ = static_cast<unsigned char>(0x80 | (c & 0x3F));
      }
    }
    text_ = std::string_view(buffer->data(), static_cast<size_t>(p - out));
  }

  std::string_view text_;
  std::vector<std::pair<size_t, Py_UCS4>> surrogates_;  // byte offset in text_, code point
};

// A Python list of the words, as str.
py::list WordList(const std::vector<std::string_view>& words, const TextInput& input) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(words.size()));
  if (list == nullptr) throw py::error_already_set();
  py::list result = py::reinterpret_steal<py::list>(list);
  for (size_t i = 0; i < words.size(); ++i) {
    PyObject* word = input.Word(words[i]);
    if (word == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), word);
  }
  return result;
}

// Scratch buffers larger than this are not kept between calls.
constexpr size_t kMaxKeptBytes = size_t{1} << 22;

void TrimBuffer(std::string* buffer) {
  if (buffer->capacity() > kMaxKeptBytes) std::string().swap(*buffer);
}

// Optionally releases the GIL for the scope.
class MaybeReleaseGil {
 public:
  explicit MaybeReleaseGil(bool release) : state_(release ? PyEval_SaveThread() : nullptr) {}
  ~MaybeReleaseGil() {
    if (state_ != nullptr) PyEval_RestoreThread(state_);
  }
  MaybeReleaseGil(const MaybeReleaseGil&) = delete;
  MaybeReleaseGil& operator=(const MaybeReleaseGil&) = delete;

 private:
  PyThreadState* state_;
};

bool Truth(py::handle value) {
  const int truth = PyObject_IsTrue(value.ptr());
  if (truth < 0) throw py::error_already_set();
  return truth != 0;
}

std::string PathArgument(py::handle value, const char* what) {
  if (PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr()) ||
      PyObject_HasAttrString(value.ptr(), "__fspath__")) {
    PyObject* path = PyOS_FSPath(value.ptr());
    if (path == nullptr) throw py::error_already_set();
    py::object owned = py::reinterpret_steal<py::object>(path);
    if (PyBytes_Check(path)) {
      return std::string(PyBytes_AS_STRING(path), static_cast<size_t>(PyBytes_GET_SIZE(path)));
    }
    PyObject* encoded = PyUnicode_EncodeFSDefault(path);
    if (encoded == nullptr) throw py::error_already_set();
    std::string result(PyBytes_AS_STRING(encoded), static_cast<size_t>(PyBytes_GET_SIZE(encoded)));
    Py_DECREF(encoded);
    return result;
  }
  throw py::type_error(std::string(what) + " must be a path (str or os.PathLike), not " +
                       TypeName(value));
}

std::optional<std::string> OptionalPath(py::handle value, const char* what) {
  if (value.is_none()) return std::nullopt;
  return PathArgument(value, what);
}

std::vector<std::string> PathList(py::handle value, const char* what) {
  if (PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr())) {
    throw py::type_error(std::string(what) + " must be a sequence of paths, not a single " +
                         TypeName(value));
  }
  std::vector<std::string> paths;
  for (py::handle item : py::iter(value)) paths.push_back(PathArgument(item, what));
  return paths;
}

// The n-grams cut_for_search adds before a word, remembered for the words seen last: finding them
// takes a dictionary lookup for each (cache misses in a large trie), and a text's words repeat.
// Per segmenter: no locking.
class SearchMemo {
 public:
  // The longest word remembered, in bytes.
  static constexpr size_t kMaxWordBytes = 255;

  // The grams of `word` (1 to kMaxWordBytes bytes) as (byte offset, size) pairs in the order
  // cut_for_search gives them, found by `find` (which appends such pairs) if not remembered.
  template <typename Find>
  std::span<const std::pair<uint32_t, uint32_t>> Get(std::string_view word, Find&& find) {
    const uint64_t hash = Hash(word);
    size_t slot = hash & (kSlots - 1);
    for (;; slot = (slot + 1) & (kSlots - 1)) {
      const Slot& s = slots_[slot];
      if (s.size == 0) break;
      if (s.hash == hash && s.size == word.size() &&
          std::memcmp(keys_.data() + s.key, word.data(), word.size()) == 0) {
        return {grams_.data() + s.grams, s.count};
      }
    }
    if (count_ == kSlots / 2 || keys_.size() > kMaxKeyBytes) {  // full: start again
      std::fill(slots_.begin(), slots_.end(), Slot());
      keys_.clear();
      grams_.clear();
      count_ = 0;
      slot = hash & (kSlots - 1);
    }
    const size_t first = grams_.size();
    find(&grams_);
    slots_[slot] = {hash, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(word.size()),
                    static_cast<uint32_t>(first), static_cast<uint32_t>(grams_.size() - first)};
    keys_.append(word);
    ++count_;
    return {grams_.data() + first, grams_.size() - first};
  }

 private:
  static constexpr size_t kSlots = size_t{1} << 13;
  static constexpr size_t kMaxKeyBytes = size_t{1} << 20;

  struct Slot {
    uint64_t hash = 0;
    uint32_t key = 0;   // the word's offset in keys_
    uint32_t size = 0;  // its size; 0: a free slot
    uint32_t grams = 0;
    uint32_t count = 0;
  };

  static uint64_t Hash(std::string_view word) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ word.size();
    size_t i = 0;
    for (; i + 8 <= word.size(); i += 8) {
      uint64_t v;
      std::memcpy(&v, word.data() + i, 8);
      h = (h ^ v) * 0xBF58476D1CE4E5B9ULL;
      h ^= h >> 31;
    }
    uint64_t v = 0;
    std::memcpy(&v, word.data() + i, word.size() - i);
    h = (h ^ v) * 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
  }

  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
  std::string keys_;
  std::vector<std::pair<uint32_t, uint32_t>> grams_;
  size_t count_ = 0;
};

struct SegmenterScratch {
  explicit SegmenterScratch(std::shared_ptr<const Dictionary> dictionary)
      : segmenter(std::move(dictionary)) {}
  Segmenter segmenter;
  std::string utf8;
  std::vector<std::string_view> words;
  std::vector<std::string_view> default_words;  // the default cut, for kSearch
  SearchMemo search_memo;
};

struct ExtractorScratch {
  explicit ExtractorScratch(std::shared_ptr<const KeywordModel> model)
      : extractor(std::move(model)) {}
  KeywordExtractor extractor;
  std::string utf8;
};

// _neardup.Tokenizer: a dictionary (immutable, shared) and a pool of segmenters.
class Tokenizer {
 public:
  Tokenizer(std::shared_ptr<const Dictionary> dictionary, bool jieba_default)
      : dictionary_(std::move(dictionary)), jieba_default_(jieba_default) {}

  const std::shared_ptr<const Dictionary>& dictionary() const { return dictionary_; }
  // Dictionary::Default(): jieba's own files, with no user dictionary.
  bool jieba_default() const { return jieba_default_; }

  py::list Cut(py::handle sentence, const CutOptions& options) {
    auto scratch = pool_.Take([this] { return std::make_unique<SegmenterScratch>(dictionary_); });
    TextInput input(sentence, "sentence", &scratch->utf8);
    std::vector<std::string_view>& words = scratch->words;
    words.clear();
    Status status;
    {
      MaybeReleaseGil release(input.text().size() >= kCutReleaseGilBytes);
      if (options.mode == CutMode::kSearch) {
        // The default cut, expanded here: the library's kSearch allocates for every word.
        std::vector<std::string_view>& cut = scratch->default_words;
        cut.clear();
        status = scratch->segmenter.CutInto(input.text(), {CutMode::kDefault, options.hmm}, &cut);
        for (std::string_view word : cut) AppendSearchWords(word, &scratch->search_memo, &words);
      } else {
        status = scratch->segmenter.CutInto(input.text(), options, &words);
      }
    }
    ThrowIfError(status);
    py::list list = WordList(words, input);
    for (auto* kept : {&scratch->words, &scratch->default_words}) {
      if (kept->capacity() > kMaxKeptWords) std::vector<std::string_view>().swap(*kept);
    }
    TrimBuffer(&scratch->utf8);
    return list;
  }

 private:
  // jieba's cut_for_search for one word of the default cut: its 2-grams that are dictionary words
  // (a positive frequency) when it has more than 2 characters, then its 3-grams when it has more
  // than 3, then the word.
  void AppendSearchWords(std::string_view word, SearchMemo* memo,
                         std::vector<std::string_view>* words) const {
    if (word.size() <= 6) {  // maybe 2 characters or fewer (2 of Han take 6 bytes)
      size_t characters = 0;
      for (char c : word) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      if (characters <= 2) {
        words->push_back(word);
        return;
      }
    }
    if (word.size() > SearchMemo::kMaxWordBytes) {
      std::vector<std::pair<uint32_t, uint32_t>> grams;
      FindGrams(word, &grams);
      for (const auto& [begin, size] : grams) words->push_back(word.substr(begin, size));
    } else {
      for (const auto& [begin, size] :
           memo->Get(word, [&](auto* grams) { FindGrams(word, grams); })) {
        words->push_back(word.substr(begin, size));
      }
    }
    words->push_back(word);
  }

  // The (byte offset, size) of the 2-grams, then 3-grams, of `word` that are dictionary words.
  void FindGrams(std::string_view word, std::vector<std::pair<uint32_t, uint32_t>>* grams) const {
    auto next = [word](size_t i) {  // the start of the character after the one at i
      ++i;
      while (i < word.size() && (static_cast<unsigned char>(word[i]) & 0xC0) == 0x80) ++i;
      return i;
    };
    size_t characters = 0;
    for (char c : word) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    for (size_t n : {size_t{2}, size_t{3}}) {
      if (characters <= n) break;
      size_t end = 0;
      for (size_t i = 0; i < n; ++i) end = next(end);
      for (size_t begin = 0;; begin = next(begin), end = next(end)) {
        const std::optional<int64_t> frequency =
            dictionary_->Frequency(word.substr(begin, end - begin));
        if (frequency && *frequency > 0) {
          grams->emplace_back(static_cast<uint32_t>(begin), static_cast<uint32_t>(end - begin));
        }
        if (end == word.size()) break;
      }
    }
  }

  std::shared_ptr<const Dictionary> dictionary_;
  bool jieba_default_;
  Pool<SegmenterScratch> pool_;
};

std::shared_ptr<Tokenizer> LoadTokenizer(py::handle dict_path, py::handle user_dict_paths,
                                         bool use_cache) {
  DictionaryOptions options;
  options.dict_path = OptionalPath(dict_path, "dict_path").value_or("");
  options.user_dict_paths = PathList(user_dict_paths, "user_dict_paths");
  options.use_cache = use_cache;
  const bool jieba_default =
      options.dict_path.empty() && options.user_dict_paths.empty() && use_cache;
  auto dictionary = [&] {
    py::gil_scoped_release release;
    return jieba_default ? Dictionary::Default() : Dictionary::Load(options);
  }();
  return std::make_shared<Tokenizer>(ValueOrThrow(std::move(dictionary)), jieba_default);
}

// _neardup.KeywordModel: a KeywordModel and a pool of extractors.
class Keywords {
 public:
  explicit Keywords(std::shared_ptr<const KeywordModel> model) : model_(std::move(model)) {}

  const KeywordModel& model() const { return *model_; }

  py::list Extract(py::handle sentence, size_t top, bool with_weight) {
    auto scratch = pool_.Take([this] { return std::make_unique<ExtractorScratch>(model_); });
    TextInput input(sentence, "sentence", &scratch->utf8);
    auto keywords = [&] {
      MaybeReleaseGil release(input.text().size() >= kCutReleaseGilBytes);
      return scratch->extractor.Extract(input.text(), top);
    }();
    TrimBuffer(&scratch->utf8);
    const std::vector<Keyword> found = ValueOrThrow(std::move(keywords));
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(found.size()));
    if (list == nullptr) throw py::error_already_set();
    py::list result = py::reinterpret_steal<py::list>(list);
    for (size_t i = 0; i < found.size(); ++i) {
      // Keywords have two characters or more: never a lone surrogate's U+FFFD.
      PyObject* word = Words().Get(found[i].word);
      if (word == nullptr) throw py::error_already_set();
      PyObject* item = word;
      if (with_weight) {
        PyObject* weight = PyFloat_FromDouble(found[i].weight);
        if (weight == nullptr) {
          Py_DECREF(word);
          throw py::error_already_set();
        }
        item = PyTuple_Pack(2, word, weight);
        Py_DECREF(word);
        Py_DECREF(weight);
        if (item == nullptr) throw py::error_already_set();
      }
      PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), item);
    }
    return result;
  }

 private:
  std::shared_ptr<const KeywordModel> model_;
  Pool<ExtractorScratch> pool_;
};

std::shared_ptr<Keywords> LoadKeywords(const Tokenizer& tokenizer, py::handle idf_path,
                                       py::handle stop_words_paths, bool use_cache) {
  const std::optional<std::string> idf = OptionalPath(idf_path, "idf_path");
  const std::vector<std::string> stop_words = PathList(stop_words_paths, "stop_words_paths");
  const std::shared_ptr<const Dictionary>& dictionary = tokenizer.dictionary();
  auto model = [&]() -> Result<std::shared_ptr<const KeywordModel>> {
    py::gil_scoped_release release;
    if (!idf && stop_words.empty() && use_cache && tokenizer.jieba_default()) {
      return KeywordModel::Default();
    }
    if (stop_words.size() <= 1) {
      KeywordModelOptions options;
      options.idf_path = idf.value_or("");
      if (!stop_words.empty()) options.stop_words_path = stop_words[0];
      options.use_cache = use_cache;
      return KeywordModel::Load(dictionary, options);
    }
    // Several stop word files (jieba's set_stop_words called more than once): their union.
    StopWords words = StopWords::JiebaDefault();
    for (const std::string& path : stop_words) NEARDUP_RETURN_IF_ERROR(words.AddFile(path));
    auto table = idf ? IdfTable::Load(*idf) : IdfTable::Default();
    if (!table.ok()) return table.status();
    return KeywordModel::Create(dictionary, **table, std::move(words));
  }();
  return std::make_shared<Keywords>(ValueOrThrow(std::move(model)));
}

// The arguments of a METH_FASTCALL | METH_KEYWORDS method, by position or by name: parameter i is
// args[i] when given, null otherwise. TypeError as Python's for unknown, repeated or missing ones.
template <size_t N>
class Arguments {
 public:
  Arguments(const char* function, const std::array<const char*, N>& names, size_t required,
            PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    const auto positional = static_cast<size_t>(nargs);
    if (positional > N) {
      throw py::type_error(std::string(function) + "() takes at most " + std::to_string(N) +
                           " arguments (" + std::to_string(positional) + " given)");
    }
    for (size_t i = 0; i < positional; ++i) values_[i] = args[i];
    const Py_ssize_t keywords = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < keywords; ++k) {
      PyObject* name = PyTuple_GET_ITEM(kwnames, k);
      size_t i = 0;
      while (i < N && PyUnicode_CompareWithASCIIString(name, names[i]) != 0) ++i;
      if (i == N) {
        throw py::type_error(std::string(function) + "() got an unexpected keyword argument '" +
                             py::str(name).cast<std::string>() + "'");
      }
      if (values_[i] != nullptr) {
        throw py::type_error(std::string(function) + "() got multiple values for argument '" +
                             names[i] + "'");
      }
      values_[i] = args[positional + static_cast<size_t>(k)];
    }
    for (size_t i = 0; i < required; ++i) {
      if (values_[i] == nullptr) {
        throw py::type_error(std::string(function) + "() missing required argument '" + names[i] +
                             "'");
      }
    }
  }
  PyObject* operator[](size_t i) const { return values_[i]; }
  bool Truth(size_t i, bool absent) const {
    return values_[i] == nullptr ? absent : python::Truth(values_[i]);
  }

 private:
  std::array<PyObject*, N> values_{};
};

// Runs the body of a raw method: C++ exceptions become the Python error they carry.
template <typename Body>
PyObject* RawMethod(Body&& body) {
  try {
    return body().release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyObject* TokenizerCut(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return RawMethod([&] {
    Tokenizer& tokenizer = py::cast<Tokenizer&>(py::handle(self));
    const Arguments<3> a("cut", {"sentence", "cut_all", "hmm"}, 1, args, nargs, kwnames);
    CutOptions options;
    options.mode = a.Truth(1, false) ? CutMode::kAll : CutMode::kDefault;
    options.hmm = a.Truth(2, true);
    return tokenizer.Cut(a[0], options);
  });
}

PyObject* TokenizerCutForSearch(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kwnames) {
  return RawMethod([&] {
    Tokenizer& tokenizer = py::cast<Tokenizer&>(py::handle(self));
    const Arguments<2> a("cut_for_search", {"sentence", "hmm"}, 1, args, nargs, kwnames);
    CutOptions options;
    options.mode = CutMode::kSearch;
    options.hmm = a.Truth(1, true);
    return tokenizer.Cut(a[0], options);
  });
}

PyObject* KeywordModelExtractTags(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                  PyObject* kwnames) {
  return RawMethod([&] {
    Keywords& keywords = py::cast<Keywords&>(py::handle(self));
    const Arguments<3> a("extract_tags", {"sentence", "top", "with_weight"}, 1, args, nargs,
                         kwnames);
    size_t top = 20;
    if (a[1] != nullptr) {
      if (!PyLong_Check(a[1])) {
        throw py::type_error(std::string("top must be int, not ") + TypeName(a[1]));
      }
      top = PyLong_AsSize_t(a[1]);
      if (top == static_cast<size_t>(-1) && PyErr_Occurred()) throw py::error_already_set();
    }
    return keywords.Extract(a[0], top, a.Truth(2, false));
  });
}

// _neardup.Cutter: jieba's cut and cut_for_search for one Python Tokenizer (neardup/_jieba.py),
// which makes them its methods: the common call (a str, the dictionary loaded) runs no Python code.
// It cuts with its `tokenizer` (the dictionary with the Python Tokenizer's changes), or, when that
// is None, with the one its loader returns (a weakref.WeakMethod of the Python Tokenizer's loader,
// which also sets `tokenizer`: the Cutter holds no reference to the Python Tokenizer); arguments
// that are not str go through `decode` first (jieba's strdecode). A plain CPython type: its methods
// reach their state without a pybind11 type lookup.
struct CutterObject {
  PyObject_HEAD PyObject* tokenizer;  // a _neardup.Tokenizer, or None
  Tokenizer* raw;                     // tokenizer's, or null
  PyObject* loader;
  PyObject* decode;
};

CutterObject* AsCutter(PyObject* self) { return reinterpret_cast<CutterObject*>(self); }

int CutterInit(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* names[] = {"loader", "decode", nullptr};
  PyObject* loader = nullptr;
  PyObject* decode = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:Cutter", const_cast<char**>(names), &loader,
                                   &decode)) {
    return -1;
  }
  CutterObject* cutter = AsCutter(self);
  Py_INCREF(loader);
  Py_XSETREF(cutter->loader, loader);
  Py_INCREF(decode);
  Py_XSETREF(cutter->decode, decode);
  if (cutter->tokenizer == nullptr) cutter->tokenizer = Py_NewRef(Py_None);
  return 0;
}

int CutterTraverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(AsCutter(self)->tokenizer);
  Py_VISIT(AsCutter(self)->loader);
  Py_VISIT(AsCutter(self)->decode);
  return 0;
}

int CutterClear(PyObject* self) {
  CutterObject* cutter = AsCutter(self);
  cutter->raw = nullptr;
  Py_CLEAR(cutter->tokenizer);
  Py_CLEAR(cutter->loader);
  Py_CLEAR(cutter->decode);
  return 0;
}

void CutterDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  CutterClear(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyObject* CutterGetTokenizer(PyObject* self, void*) {
  PyObject* tokenizer = AsCutter(self)->tokenizer;
  return Py_NewRef(tokenizer != nullptr ? tokenizer : Py_None);
}

int CutterSetTokenizer(PyObject* self, PyObject* value, void*) {
  try {
    if (value == nullptr) throw py::type_error("tokenizer cannot be deleted (set it to None)");
    Tokenizer* raw = value == Py_None ? nullptr : &py::cast<Tokenizer&>(py::handle(value));
    CutterObject* cutter = AsCutter(self);
    Py_INCREF(value);
    Py_XSETREF(cutter->tokenizer, value);
    cutter->raw = raw;
    return 0;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::cast_error&) {
    PyErr_Format(PyExc_TypeError, "tokenizer must be a Tokenizer or None, not %s",
                 Py_TYPE(value)->tp_name);
  } catch (const py::builtin_exception& e) {
    e.set_error();
  }
  return -1;
}

py::list CutterCutText(PyObject* self, PyObject* sentence, const CutOptions& options) {
  CutterObject* cutter = AsCutter(self);
  if (cutter->loader == nullptr) throw py::type_error("Cutter.__init__ was not called");
  // A reference for the call: another thread may replace the tokenizer meanwhile.
  py::object holder = py::reinterpret_borrow<py::object>(cutter->tokenizer);
  Tokenizer* tokenizer = cutter->raw;
  if (tokenizer == nullptr) {
    py::object load = py::reinterpret_borrow<py::object>(cutter->loader)();
    if (load.is_none()) {
      PyErr_SetString(PyExc_ReferenceError, "the Tokenizer of this Cutter is gone");
      throw py::error_already_set();
    }
    holder = load();
    tokenizer = &holder.cast<Tokenizer&>();
  }
  if (PyUnicode_CheckExact(sentence)) return tokenizer->Cut(sentence, options);
  const py::object text = py::reinterpret_borrow<py::object>(cutter->decode)(py::handle(sentence));
  return tokenizer->Cut(text, options);
}

PyObject* CutterCut(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return RawMethod([&] {
    const Arguments<4> a("cut", {"sentence", "cut_all", "HMM", "use_paddle"}, 1, args, nargs,
                         kwnames);
    CutOptions options;
    options.mode = a.Truth(1, false) ? CutMode::kAll : CutMode::kDefault;
    options.hmm = a.Truth(2, true);
    return CutterCutText(self, a[0], options);
  });
}

PyObject* CutterCutForSearch(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                             PyObject* kwnames) {
  return RawMethod([&] {
    const Arguments<2> a("cut_for_search", {"sentence", "HMM"}, 1, args, nargs, kwnames);
    CutOptions options;
    options.mode = CutMode::kSearch;
    options.hmm = a.Truth(1, true);
    return CutterCutText(self, a[0], options);
  });
}

// The methods above. Those of Tokenizer and KeywordModel are added to pybind11's classes: called
// for every text, they skip pybind11's argument dispatch, which costs as much as cutting a line.
PyMethodDef g_tokenizer_methods[] = {
    {"cut", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&TokenizerCut)),
     METH_FASTCALL | METH_KEYWORDS,
     "cut($self, sentence, cut_all=False, hmm=True)\n--\n\n"
     "jieba.lcut(sentence, cut_all, HMM): the words of a str (or UTF-8 bytes), a list of str."},
    {"cut_for_search",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&TokenizerCutForSearch)),
     METH_FASTCALL | METH_KEYWORDS,
     "cut_for_search($self, sentence, hmm=True)\n--\n\n"
     "jieba.lcut_for_search(sentence, HMM): the words of cut(), each long one preceded by its "
     "2- and 3-grams that are dictionary words."},
};
PyMethodDef g_cutter_methods[] = {
    {"cut", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&CutterCut)),
     METH_FASTCALL | METH_KEYWORDS,
     "cut($self, sentence, cut_all=False, HMM=True, use_paddle=False)\n--\n\n"
     "jieba.lcut: the words of a str (bytes: decoded as jieba does), a list of str. use_paddle "
     "is ignored."},
    {"cut_for_search",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&CutterCutForSearch)),
     METH_FASTCALL | METH_KEYWORDS,
     "cut_for_search($self, sentence, HMM=True)\n--\n\n"
     "jieba.lcut_for_search: the words of cut(), each long one preceded by its 2- and 3-grams "
     "that are dictionary words."},
    {nullptr, nullptr, 0, nullptr},
};
PyGetSetDef g_cutter_getset[] = {
    {"tokenizer", &CutterGetTokenizer, &CutterSetTokenizer,
     "The Tokenizer cut with, None until the loader gives one.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef g_keyword_methods[] = {
    {"extract_tags",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&KeywordModelExtractTags)),
     METH_FASTCALL | METH_KEYWORDS,
     "extract_tags($self, sentence, top=20, with_weight=False)\n--\n\n"
     "jieba.analyse.extract_tags(sentence, topK=top, withWeight=with_weight); top 0 means all. "
     "A list of str, or of (str, float) with weights."},
};

template <size_t N>
void AddMethods(py::handle type, PyMethodDef (&methods)[N]) {
  for (PyMethodDef& method : methods) {
    PyObject* descriptor = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(type.ptr()), &method);
    if (descriptor == nullptr) throw py::error_already_set();
    const int failed = PyObject_SetAttrString(type.ptr(), method.ml_name, descriptor);
    Py_DECREF(descriptor);
    if (failed != 0) throw py::error_already_set();
  }
}

}  // namespace

void RegisterJieba(py::module_& m) {
  py::class_<Tokenizer, std::shared_ptr<Tokenizer>> tokenizer(
      m, "Tokenizer",
      "A jieba dictionary (main dictionary, HMM model, user dictionaries) and the segmenters "
      "cutting with it, as jieba 0.42.1 does. Immutable; thread-safe.");
  tokenizer
      .def(py::init(&LoadTokenizer), py::arg("dict_path") = py::none(),
           py::arg("user_dict_paths") = py::tuple(), py::arg("use_cache") = true,
           "Loads jieba's dictionary (dict_path, default: jieba's own dict.txt) and the user "
           "dictionaries, applied in order as jieba.load_userdict does. NotFoundError for a "
           "missing file, InvalidArgumentError for a malformed line.")
      .def(
          "frequency",
          [](const Tokenizer& self, py::handle word) -> std::optional<int64_t> {
            std::string buffer;
            TextInput input(word, "word", &buffer);
            return self.dictionary()->Frequency(input.text());
          },
          py::arg("word"),
          "jieba's FREQ.get(word): the frequency of a word, 0 for a prefix of one or a deleted "
          "word, None otherwise.")
      .def_property_readonly(
          "total", [](const Tokenizer& self) { return self.dictionary()->total_frequency(); },
          "The sum of all frequencies (jieba's Tokenizer.total).")
      .def_property_readonly(
          "word_count", [](const Tokenizer& self) { return self.dictionary()->word_count(); },
          "The number of words with a positive frequency.")
      .def_property_readonly(
          "memory_bytes", [](const Tokenizer& self) { return self.dictionary()->MemoryBytes(); },
          "Heap bytes held by the dictionary.")
      .def_property_readonly(
          "dict_path", [](const Tokenizer& self) { return self.dictionary()->sources().dict_path; },
          "The main dictionary's path.")
      .def_property_readonly(
          "user_dict_paths",
          [](const Tokenizer& self) { return self.dictionary()->sources().user_dict_paths; },
          "The user dictionaries' paths, in the order applied.");

  AddMethods(tokenizer, g_tokenizer_methods);

  py::class_<Keywords, std::shared_ptr<Keywords>> keywords(
      m, "KeywordModel",
      "An IDF table and stop words joined with a Tokenizer's dictionary, extracting TF-IDF "
      "keywords as jieba.analyse.extract_tags does. Immutable; thread-safe.");
  keywords
      .def(py::init(&LoadKeywords), py::arg("tokenizer"), py::arg("idf_path") = py::none(),
           py::arg("stop_words_paths") = py::tuple(), py::arg("use_cache") = true,
           "idf_path: 'word idf' per line (default: jieba's analyse/idf.txt); stop_words_paths: "
           "files of stop words added to jieba's English ones, one per line (jieba's "
           "set_stop_words, each call a file). NotFoundError for a missing file.")
      .def_property_readonly(
          "median_idf", [](const Keywords& self) { return self.model().median_idf(); },
          "The IDF of words the table lacks (jieba's median_idf).")
      .def_property_readonly(
          "idf_path", [](const Keywords& self) { return self.model().idf_source(); },
          "Where the IDF table came from.")
      .def_property_readonly(
          "stop_word_count", [](const Keywords& self) { return self.model().stop_words().size(); },
          "The number of stop words.");
  AddMethods(keywords, g_keyword_methods);

  PyType_Slot cutter_slots[] = {
      {Py_tp_doc,
       const_cast<char*>(
           "Cutter(loader, decode)\n--\n\n"
           "jieba's cut and cut_for_search for one neardup.Tokenizer (its methods), running no "
           "Python code for a str once the dictionary is loaded. loader: a callable returning a "
           "callable that loads the dictionary and returns it (a weakref.WeakMethod); decode: "
           "jieba's strdecode, for arguments that are not str.")},
      {Py_tp_new, reinterpret_cast<void*>(&PyType_GenericNew)},
      {Py_tp_init, reinterpret_cast<void*>(&CutterInit)},
      {Py_tp_dealloc, reinterpret_cast<void*>(&CutterDealloc)},
      {Py_tp_traverse, reinterpret_cast<void*>(&CutterTraverse)},
      {Py_tp_clear, reinterpret_cast<void*>(&CutterClear)},
      {Py_tp_methods, g_cutter_methods},
      {Py_tp_getset, g_cutter_getset},
      {0, nullptr},
  };
  PyType_Spec cutter_spec = {"neardup._neardup.Cutter", sizeof(CutterObject), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, cutter_slots};
  PyObject* cutter = PyType_FromSpec(&cutter_spec);
  if (cutter == nullptr) throw py::error_already_set();
  m.add_object("Cutter", py::reinterpret_steal<py::object>(cutter));
}

}  // namespace neardup::python
