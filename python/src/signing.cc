// Signing: MethodOptions (every setting of a method, resolved and checked), Signer (a
// DocumentSigner: one text, or batches on all cores into NumPy arrays) and the comparisons of
// signatures. The pure-Python Fingerprinter (neardup/_core.py) is built on these.
//
// Batches: the texts are taken as UTF-8 with the GIL held (str: its UTF-8 buffer, kept alive by a
// reference; bytes likewise; other buffers and strs with lone surrogates copied), then the GIL is
// released and worker threads sign them, each with its own DocumentSigner::Session, straight into
// the arrays allocated beforehand. The first failing document (the lowest index) is the one
// reported, as "texts[i]: <the library's message>".
//
// index.cc and dedup.cc use MethodOptions, ResolveThreads, ParallelFor, SignTexts and
// SignatureTuple from here (declared in bindings.h).
#include <Python.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "bindings.h"
#include "neardup/folding.h"
#include "neardup/keywords.h"
#include "neardup/method.h"
#include "neardup/segment.h"
#include "neardup/simhash.h"
#include "neardup/sketch.h"

namespace neardup::python {

// 0: one thread per core; otherwise 1..1024 (the CLI's --threads). ValueError outside.
int ResolveThreads(int threads) {
  if (threads < 0 || threads > 1024) {
    throw py::value_error("threads must be 0 (one per core) to 1024, not " +
                          std::to_string(threads));
  }
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return threads;
}

// Runs item(i) for every i in [0, n) on up to `threads` threads (the caller's among them); each
// thread calls make_item once for a function of its own state (a Session). Stops soon after the
// first error and returns the error of the lowest index (every item before it was done), as
// "<what>[i]: <message>". Call without the GIL (the functions must not touch Python).
Status ParallelFor(size_t n, int threads, std::string_view what,
                   const std::function<std::function<Status(size_t)>()>& make_item) {
  if (n == 0) return Status::OK();
  constexpr size_t kMinItemsPerThread = 16;
  const size_t workers =
      std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(threads, 1)),
                                           (n + kMinItemsPerThread - 1) / kMinItemsPerThread));
  const size_t chunk = std::clamp<size_t>(n / (workers * 16), 1, 256);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  size_t error_index = std::numeric_limits<size_t>::max();
  Status error;
  auto fail = [&](size_t i, Status status) {
    std::lock_guard lock(mutex);
    if (i < error_index) {
      error_index = i;
      error = std::move(status);
    }
    stop.store(true, std::memory_order_relaxed);
  };
  // A thread finishes the chunk it took before looking at `stop`: every chunk before the one that
  // failed is done, so the lowest failing index is the first one.
  auto run = [&] {
    size_t current = 0;
    try {
      const std::function<Status(size_t)> item = make_item();
      while (!stop.load(std::memory_order_relaxed)) {
        const size_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
        if (begin >= n) break;
        const size_t end = std::min(n, begin + chunk);
        for (current = begin; current < end; ++current) {
          Status status = item(current);
          if (!status.ok()) {
            fail(current, std::move(status));
            break;
          }
        }
      }
    } catch (const std::bad_alloc&) {
      fail(current, Status::ResourceExhausted("out of memory"));
    } catch (const std::exception& e) {
      fail(current, Status::Internal(e.what()));
    }
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) {
    try {
      pool.emplace_back(run);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones started (and this one) do the work
    }
  }
  run();
  for (std::thread& thread : pool) thread.join();
  if (error_index == std::numeric_limits<size_t>::max()) return Status::OK();
  return error.WithContext(std::string(what) + "[" + std::to_string(error_index) + "]");
}

namespace {

// The texts of a batch as UTF-8 views, valid while the list lives (it holds a reference to every
// str and bytes it points into, and copies of everything else). Built with the GIL held; read
// without it.
class TextList {
 public:
  TextList(py::handle texts, std::string_view what) {
    if (PyUnicode_Check(texts.ptr()) || PyBytes_Check(texts.ptr())) {
      throw py::type_error(std::string(what) +
                           " must be an iterable of str or bytes, not a single " +
                           Py_TYPE(texts.ptr())->tp_name);
    }
    if (PyList_Check(texts.ptr()) || PyTuple_Check(texts.ptr())) {
      // A copy of the list's items: another thread may change the list while we sign.
      const py::tuple items = py::reinterpret_steal<py::tuple>(PySequence_Tuple(texts.ptr()));
      if (!items) throw py::error_already_set();
      const size_t n = items.size();
      refs_.reserve(n);
      views_.reserve(n);
      for (size_t i = 0; i < n; ++i) Add(items[i], what);
      return;
    }
    PyObject* iterator = PyObject_GetIter(texts.ptr());
    if (iterator == nullptr) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
      PyErr_Clear();
      throw py::type_error(std::string(what) + " must be an iterable of str or bytes, not " +
                           Py_TYPE(texts.ptr())->tp_name);
    }
    const py::object it = py::reinterpret_steal<py::object>(iterator);
    const Py_ssize_t hint = PyObject_LengthHint(texts.ptr(), 0);
    if (hint > 0) {
      refs_.reserve(static_cast<size_t>(hint));
      views_.reserve(static_cast<size_t>(hint));
    } else if (hint < 0) {
      PyErr_Clear();
    }
    while (PyObject* item = PyIter_Next(it.ptr())) {
      Add(py::reinterpret_steal<py::object>(item), what);
    }
    if (PyErr_Occurred()) throw py::error_already_set();
  }

  size_t size() const { return views_.size(); }
  std::string_view operator[](size_t i) const { return views_[i]; }
  const std::vector<std::string_view>& views() const { return views_; }

 private:
  void Add(py::handle item, std::string_view what) {
    if (PyUnicode_Check(item.ptr())) {
      Py_ssize_t size = 0;
      const char* data = PyUnicode_AsUTF8AndSize(item.ptr(), &size);
      if (data != nullptr) {
        refs_.push_back(py::reinterpret_borrow<py::object>(item));
        views_.emplace_back(data, static_cast<size_t>(size));
        return;
      }
      PyErr_Clear();  // lone surrogates: TextArgument's bytes of them
    } else if (PyBytes_Check(item.ptr())) {
      refs_.push_back(py::reinterpret_borrow<py::object>(item));
      views_.emplace_back(PyBytes_AS_STRING(item.ptr()),
                          static_cast<size_t>(PyBytes_GET_SIZE(item.ptr())));
      return;
    }
    owned_.push_back(TextArgument(item, std::string(what) + "[" + std::to_string(size()) + "]"));
    views_.emplace_back(owned_.back());
  }

  std::vector<py::object> refs_;
  std::deque<std::string> owned_;  // a deque: its strings never move
  std::vector<std::string_view> views_;
};

}  // namespace

// Every text of the iterable signed, in order (the GIL released while signing). The first bad text
// raises its error as "<what>[i]: ...".
std::vector<Signature> SignTexts(const DocumentSigner& signer, py::handle texts, int threads,
                                 std::string_view what) {
  const int workers = ResolveThreads(threads);
  const TextList list(texts, what);
  std::vector<Signature> signatures(list.size());
  Status status;
  {
    py::gil_scoped_release release;
    status = ParallelFor(list.size(), workers, what, [&]() -> std::function<Status(size_t)> {
      auto session = std::make_shared<DocumentSigner::Session>(signer);
      return [session, &list, &signatures](size_t i) {
        return session->Sign(list[i], &signatures[i]);
      };
    });
  }
  ThrowIfError(status);
  return signatures;
}

// (simhash, sketch bytes, band keys tuple, empty): what neardup.Signature is made of.
py::tuple SignatureTuple(const Signature& signature) {
  py::tuple bands(signature.band_keys.size());
  for (size_t i = 0; i < signature.band_keys.size(); ++i) {
    bands[i] = py::int_(signature.band_keys[i]);
  }
  return py::make_tuple(
      py::int_(signature.simhash),
      py::bytes(reinterpret_cast<const char*>(signature.sketch.data()), signature.sketch.size()),
      std::move(bands), py::bool_(signature.empty));
}

namespace {

Status Invalid(std::string message) { return Status::InvalidArgument(std::move(message)); }

// The files a custom keyword model is loaded from: the dictionary keywords of MethodOptions.
struct ModelSource {
  std::optional<std::string> dictionary;
  std::optional<std::string> hmm_dir;
  std::vector<std::string> user_dictionaries;
  std::optional<std::string> idf;
  std::optional<std::string> stop_words;
  bool use_cache = true;
};

// The source of every custom keyword model loaded here and still alive, by the model: a pickled
// MethodOptions holds the source, and is loaded again from it where it is unpickled (a model
// cannot be written out). Thread-safe.
class ModelSources {
 public:
  static ModelSources& Get() {
    static ModelSources* const sources = new ModelSources();  // never freed: used at exit
    return *sources;
  }

  void Add(const std::shared_ptr<const KeywordModel>& model, ModelSource source) {
    std::lock_guard lock(mutex_);
    std::erase_if(entries_, [](const Entry& e) { return e.model.expired(); });
    entries_.push_back({model, model.get(), std::move(source)});
  }

  std::optional<ModelSource> Find(const KeywordModel* model) {
    std::lock_guard lock(mutex_);
    for (const Entry& e : entries_) {
      if (e.key == model && !e.model.expired()) return e.source;
    }
    return std::nullopt;
  }

 private:
  struct Entry {
    std::weak_ptr<const KeywordModel> model;
    const KeywordModel* key;
    ModelSource source;
  };

  std::mutex mutex_;
  std::vector<Entry> entries_;
};

// Loads a custom keyword model (the CLI's --dict, --hmm-dir, --user-dict, --idf, --stop-words)
// and remembers its source.
std::shared_ptr<const KeywordModel> LoadKeywordModel(const ModelSource& source) {
  const bool custom_dictionary =
      source.dictionary || source.hmm_dir || !source.user_dictionaries.empty() || !source.use_cache;
  std::shared_ptr<const Dictionary> dict;
  if (custom_dictionary) {
    DictionaryOptions d;
    d.dict_path = source.dictionary.value_or("");
    d.hmm_dir = source.hmm_dir.value_or("");
    d.user_dict_paths = source.user_dictionaries;
    d.use_cache = source.use_cache;
    dict = ValueOrThrow(Dictionary::Load(d));
  } else {
    dict = ValueOrThrow(Dictionary::Default());
  }
  KeywordModelOptions model;
  model.idf_path = source.idf.value_or("");
  model.stop_words_path = source.stop_words.value_or("");
  model.use_cache = source.use_cache;
  std::shared_ptr<const KeywordModel> loaded = ValueOrThrow(KeywordModel::Load(dict, model));
  ModelSources::Get().Add(loaded, source);
  return loaded;
}

// The options of a method from the Python keywords (None: the method's default, DefaultFeatures),
// resolved and checked: InvalidArgumentError naming the bad one. The dictionary keywords load a
// custom keyword model (as the CLI's --dict, --hmm-dir, --user-dict, --idf, --stop-words do).
MethodOptions MakeMethodOptions(
    const std::string& method, std::optional<double> threshold, std::optional<int> k,
    const std::optional<std::string>& mode, const std::optional<std::string>& shingle_unit,
    std::optional<int> shingle_size, const std::optional<std::string>& weighting, bool normalize,
    const std::string& invalid_utf8, std::optional<bool> fold_traditional,
    const std::optional<std::string>& folding_table, const std::string& language,
    int64_t max_document_bytes, int keyword_count, const std::optional<std::string>& dictionary,
    const std::optional<std::string>& hmm_dir, const std::vector<std::string>& user_dictionaries,
    const std::optional<std::string>& idf, const std::optional<std::string>& stop_words,
    bool use_cache) {
  MethodOptions options;
  options.method = ValueOrThrow(ParseDedupMethod(method));
  FingerprintOptions f = DefaultFeatures(options.method);
  if (threshold) options.threshold = *threshold;
  if (k) options.k = *k;
  if (mode) f.mode = ValueOrThrow(ParseFeatureMode(*mode));
  if (shingle_unit) f.shingle_unit = ValueOrThrow(ParseShingleUnit(*shingle_unit));
  if (shingle_size) f.shingle_size = *shingle_size;
  if (weighting) f.weighting = ValueOrThrow(ParseFeatureWeighting(*weighting));
  f.normalize = normalize;
  if (invalid_utf8 == "replace") {
    f.invalid_utf8 = InvalidUtf8::kReplace;
  } else if (invalid_utf8 == "reject") {
    f.invalid_utf8 = InvalidUtf8::kReject;
  } else {
    ThrowStatus(
        Invalid("unknown invalid_utf8 policy '" + invalid_utf8 + "' (expected replace or reject)"));
  }
  if (fold_traditional) f.fold_traditional = *fold_traditional;
  if (folding_table) f.folding_table = *folding_table;
  f.language = ValueOrThrow(ParseLanguage(language));
  if (max_document_bytes < 0) {
    ThrowStatus(Invalid("max_document_bytes must be >= 0 (0: no limit), not " +
                        std::to_string(max_document_bytes)));
  }
  f.max_document_bytes = static_cast<uint64_t>(max_document_bytes);
  f.keyword_count = keyword_count;
  const ModelSource source{dictionary, hmm_dir, user_dictionaries, idf, stop_words, use_cache};
  if (dictionary || hmm_dir || !user_dictionaries.empty() || !use_cache || idf || stop_words) {
    f.keyword_model = LoadKeywordModel(source);
  }
  options.features = f;
  return ValueOrThrow(ResolveMethodOptions(options));
}

// Pickling: the resolved options as values (format version 1), the custom keyword model as the
// files it was loaded from (loaded again when unpickled). A model this module did not load (none
// can be had otherwise) cannot be pickled: TypeError.
constexpr int kPickleVersion = 1;

py::tuple OptionsState(const MethodOptions& o) {
  const FingerprintOptions& f = *o.features;
  py::object model = py::none();
  if (f.keyword_model != nullptr) {
    const std::optional<ModelSource> source = ModelSources::Get().Find(f.keyword_model.get());
    if (!source) {
      throw py::type_error(
          "these MethodOptions hold a keyword model of unknown files and cannot be pickled");
    }
    model = py::make_tuple(source->dictionary, source->hmm_dir, source->user_dictionaries,
                           source->idf, source->stop_words, source->use_cache);
  }
  return py::make_tuple(
      kPickleVersion, std::string(DedupMethodName(o.method)), o.threshold, o.k,
      std::string(FeatureModeName(f.mode)), std::string(ShingleUnitName(f.shingle_unit)),
      f.shingle_size, std::string(FeatureWeightingName(f.weighting)), f.normalize,
      f.invalid_utf8 == InvalidUtf8::kReject, f.fold_traditional, f.folding_table,
      std::string(LanguageName(f.language)), f.max_document_bytes, f.keyword_count, o.sketch.bins,
      o.sketch.bits_per_bin, o.sketch.bands, o.sketch.rows, model);
}

MethodOptions OptionsFromState(const py::tuple& state) {
  if (state.size() != 20 || state[0].cast<int>() != kPickleVersion) {
    throw py::value_error("MethodOptions: not a pickled state of this version");
  }
  MethodOptions o;
  o.method = ValueOrThrow(ParseDedupMethod(state[1].cast<std::string>()));
  o.threshold = state[2].cast<double>();
  o.k = state[3].cast<int>();
  FingerprintOptions f = DefaultFeatures(o.method);
  f.mode = ValueOrThrow(ParseFeatureMode(state[4].cast<std::string>()));
  f.shingle_unit = ValueOrThrow(ParseShingleUnit(state[5].cast<std::string>()));
  f.shingle_size = state[6].cast<int>();
  f.weighting = ValueOrThrow(ParseFeatureWeighting(state[7].cast<std::string>()));
  f.normalize = state[8].cast<bool>();
  f.invalid_utf8 = state[9].cast<bool>() ? InvalidUtf8::kReject : InvalidUtf8::kReplace;
  f.fold_traditional = state[10].cast<bool>();
  f.folding_table = state[11].cast<std::string>();
  f.language = ValueOrThrow(ParseLanguage(state[12].cast<std::string>()));
  f.max_document_bytes = state[13].cast<uint64_t>();
  f.keyword_count = state[14].cast<int>();
  o.sketch.bins = state[15].cast<decltype(o.sketch.bins)>();
  o.sketch.bits_per_bin = state[16].cast<decltype(o.sketch.bits_per_bin)>();
  o.sketch.bands = state[17].cast<decltype(o.sketch.bands)>();
  o.sketch.rows = state[18].cast<decltype(o.sketch.rows)>();
  if (!state[19].is_none()) {
    const py::tuple m = state[19].cast<py::tuple>();
    f.keyword_model = LoadKeywordModel(
        {m[0].cast<std::optional<std::string>>(), m[1].cast<std::optional<std::string>>(),
         m[2].cast<std::vector<std::string>>(), m[3].cast<std::optional<std::string>>(),
         m[4].cast<std::optional<std::string>>(), m[5].cast<bool>()});
  }
  o.features = f;
  return ValueOrThrow(ResolveMethodOptions(o));
}

// The options a settings line records (an index file's), with the settings no line records.
MethodOptions OptionsFromSettings(const std::string& line, const std::string& invalid_utf8,
                                  int64_t max_document_bytes,
                                  const std::optional<std::string>& folding_table) {
  MethodOptions options = ValueOrThrow(ParseSettingsLine(line));
  FingerprintOptions f = options.features.value_or(DefaultFeatures(options.method));
  if (invalid_utf8 == "reject") {
    f.invalid_utf8 = InvalidUtf8::kReject;
  } else if (invalid_utf8 != "replace") {
    ThrowStatus(
        Invalid("unknown invalid_utf8 policy '" + invalid_utf8 + "' (expected replace or reject)"));
  }
  if (max_document_bytes < 0) {
    ThrowStatus(Invalid("max_document_bytes must be >= 0 (0: no limit), not " +
                        std::to_string(max_document_bytes)));
  }
  f.max_document_bytes = static_cast<uint64_t>(max_document_bytes);
  if (folding_table) f.folding_table = *folding_table;
  options.features = f;
  return ValueOrThrow(ResolveMethodOptions(options));
}

const FingerprintOptions& Features(const MethodOptions& options) { return *options.features; }

// A byte string argument (bytes, bytearray, memoryview, a uint8 NumPy array).
std::span<const uint8_t> BytesArgument(py::handle value, std::string_view what,
                                       py::buffer_info* info) {
  if (PyUnicode_Check(value.ptr()) || !PyObject_CheckBuffer(value.ptr())) {
    throw py::type_error(std::string(what) + " must be bytes-like (bytes or a uint8 array), not " +
                         Py_TYPE(value.ptr())->tp_name);
  }
  *info = py::reinterpret_borrow<py::buffer>(value).request();
  if (info->itemsize != 1 || info->ndim > 1 ||
      (info->ndim == 1 && info->strides[0] != 1 && info->size > 1)) {
    throw py::type_error(std::string(what) +
                         " must be a contiguous buffer of bytes (uint8), one dimension");
  }
  return {static_cast<const uint8_t*>(info->ptr), static_cast<size_t>(info->size)};
}

// A DocumentSigner with a pool of sessions for single texts (any thread may take one).
class Signer {
 public:
  explicit Signer(const MethodOptions& options) {
    Result<std::unique_ptr<DocumentSigner>> created = Status::Internal("not created");
    {
      py::gil_scoped_release release;  // may load a dictionary or a folding table
      created = DocumentSigner::Create(options);
    }
    signer_ = std::shared_ptr<const DocumentSigner>(ValueOrThrow(std::move(created)));
  }

  const DocumentSigner& signer() const { return *signer_; }
  const MethodOptions& options() const { return signer_->options(); }

  // One text; the GIL released for long ones.
  Signature Sign(py::handle text, std::string_view what) {
    const std::string bytes = TextArgument(text, what);
    Signature signature;
    Status status;
    auto session = Take();
    if (bytes.size() >= kReleaseGilBytes) {
      py::gil_scoped_release release;
      status = session->Sign(bytes, &signature);
    } else {
      status = session->Sign(bytes, &signature);
    }
    Give(std::move(session));
    ThrowIfError(status);
    return signature;
  }

  py::array_t<uint64_t> SimhashBatch(py::handle texts, int threads) {
    const int workers = ResolveThreads(threads);
    const TextList list(texts, "texts");
    const size_t n = list.size();
    py::array_t<uint64_t> simhashes(static_cast<py::ssize_t>(n));
    uint64_t* out = simhashes.mutable_data();
    const size_t sketch_bytes = signer_->sketch_bytes(), bands = signer_->bands();
    Status status;
    {
      py::gil_scoped_release release;
      status = ParallelFor(n, workers, "texts", [&]() -> std::function<Status(size_t)> {
        struct State {
          explicit State(const DocumentSigner& s) : session(s) {}
          DocumentSigner::Session session;
          bool empty = false;
          std::vector<uint8_t> sketch;
          std::vector<uint32_t> band_keys;
        };
        auto state = std::make_shared<State>(*signer_);
        state->sketch.resize(sketch_bytes);
        state->band_keys.resize(bands);
        return [state, &list, out](size_t i) {
          return state->session.Sign(
              list[i], SignatureSlot{&out[i], &state->empty, state->sketch, state->band_keys});
        };
      });
    }
    ThrowIfError(status);
    return simhashes;
  }

  // (simhash uint64 [n], sketches uint8 [n, sketch_bytes], band keys uint32 [n, bands],
  // empty bool [n]).
  py::tuple SignBatch(py::handle texts, int threads) {
    const int workers = ResolveThreads(threads);
    const TextList list(texts, "texts");
    const size_t n = list.size();
    const size_t sketch_bytes = signer_->sketch_bytes(), bands = signer_->bands();
    const auto rows = static_cast<py::ssize_t>(n);
    py::array_t<uint64_t> simhashes(rows);
    py::array_t<uint8_t> sketches({rows, static_cast<py::ssize_t>(sketch_bytes)});
    py::array_t<uint32_t> band_keys({rows, static_cast<py::ssize_t>(bands)});
    py::array_t<bool> empty(rows);
    uint64_t* simhash_out = simhashes.mutable_data();
    uint8_t* sketch_out = sketches.mutable_data();
    uint32_t* band_out = band_keys.mutable_data();
    bool* empty_out = empty.mutable_data();
    Status status;
    {
      py::gil_scoped_release release;
      status = ParallelFor(n, workers, "texts", [&]() -> std::function<Status(size_t)> {
        auto session = std::make_shared<DocumentSigner::Session>(*signer_);
        return [=, &list](size_t i) {
          return session->Sign(
              list[i],
              SignatureSlot{&simhash_out[i], &empty_out[i],
                            std::span<uint8_t>(sketch_out + i * sketch_bytes, sketch_bytes),
                            std::span<uint32_t>(band_out + i * bands, bands)});
        };
      });
    }
    ThrowIfError(status);
    return py::make_tuple(simhashes, sketches, band_keys, empty);
  }

  // A signature of this signer from a text or a (simhash, sketch, band_keys, empty) tuple.
  Signature SignatureOf(py::handle value, std::string_view what) {
    if (!PyTuple_Check(value.ptr())) return Sign(value, what);
    const py::tuple tuple = py::reinterpret_borrow<py::tuple>(value);
    if (tuple.size() != 4) {
      throw py::type_error(std::string(what) +
                           " must be a text or a Signature (simhash, sketch, band_keys, empty)");
    }
    Signature signature;
    signature.simhash = tuple[0].cast<uint64_t>();
    py::buffer_info info;
    const std::span<const uint8_t> sketch = BytesArgument(tuple[1], what, &info);
    signature.sketch.assign(sketch.begin(), sketch.end());
    for (py::handle key : py::reinterpret_borrow<py::iterable>(tuple[2])) {
      signature.band_keys.push_back(key.cast<uint32_t>());
    }
    signature.empty = tuple[3].cast<bool>();
    if (signature.sketch.size() != signer_->sketch_bytes() ||
        signature.band_keys.size() != signer_->bands()) {
      ThrowStatus(Invalid(
          std::string(what) + ": a signature of " + std::to_string(signature.sketch.size()) +
          " sketch bytes and " + std::to_string(signature.band_keys.size()) +
          " band keys; this method's have " + std::to_string(signer_->sketch_bytes()) + " and " +
          std::to_string(signer_->bands())));
    }
    return signature;
  }

  // The method's score when the two are near-duplicates (Jaccard estimate, or Hamming distance as
  // an int), else None.
  py::object Compare(py::handle a, py::handle b) {
    const Signature x = SignatureOf(a, "a"), y = SignatureOf(b, "b");
    const std::optional<double> score = signer_->Compare(x, y);
    if (!score) return py::none();
    if (signer_->method() == DedupMethod::kSimhash) return py::int_(static_cast<int>(*score));
    return py::float_(*score);
  }

 private:
  std::unique_ptr<DocumentSigner::Session> Take() {
    {
      std::lock_guard lock(mutex_);
      if (!sessions_.empty()) {
        auto session = std::move(sessions_.back());
        sessions_.pop_back();
        return session;
      }
    }
    return std::make_unique<DocumentSigner::Session>(*signer_);
  }
  void Give(std::unique_ptr<DocumentSigner::Session> session) {
    std::lock_guard lock(mutex_);
    if (sessions_.size() < 64) sessions_.push_back(std::move(session));
  }

  std::shared_ptr<const DocumentSigner> signer_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<DocumentSigner::Session>> sessions_;
};

// The default sketch's estimator (the only sketch shape the options offer: 1024 1-bit bins).
const Sketcher& DefaultSketcher() {
  static const Sketcher* const sketcher = [] {
    SketchOptions options;
    options.rows = ValueOrThrow(ChooseRows(0.8, options.bands));
    return ValueOrThrow(Sketcher::Create(options)).release();
  }();
  return *sketcher;
}

double EstimateJaccard(const Sketcher& sketcher, py::handle a, py::handle b) {
  py::buffer_info info_a, info_b;
  const std::span<const uint8_t> x = BytesArgument(a, "sketch_a", &info_a);
  const std::span<const uint8_t> y = BytesArgument(b, "sketch_b", &info_b);
  return ValueOrThrow(sketcher.EstimateJaccard(x, y));
}

std::string FoldName(const FingerprintOptions& f) { return f.fold_traditional ? "t2s" : "none"; }

}  // namespace

void RegisterSigning(py::module_& m) {
  py::class_<MethodOptions>(m, "MethodOptions",
                            "A method and every setting of it, resolved (defaults filled in) and "
                            "checked. neardup.Fingerprinter's keywords.")
      .def(py::init(&MakeMethodOptions), py::arg("method") = "accurate", py::kw_only(),
           py::arg("threshold") = py::none(), py::arg("k") = py::none(),
           py::arg("mode") = py::none(), py::arg("shingle_unit") = py::none(),
           py::arg("shingle_size") = py::none(), py::arg("weighting") = py::none(),
           py::arg("normalize") = true, py::arg("invalid_utf8") = "replace",
           py::arg("fold_traditional") = py::none(), py::arg("folding_table") = py::none(),
           py::arg("language") = "auto", py::arg("max_document_bytes") = 0,
           py::arg("keyword_count") = 0, py::arg("dictionary") = py::none(),
           py::arg("hmm_dir") = py::none(),
           py::arg("user_dictionaries") = std::vector<std::string>(), py::arg("idf") = py::none(),
           py::arg("stop_words") = py::none(), py::arg("use_cache") = true)
      .def_static("from_settings", &OptionsFromSettings, py::arg("settings"), py::kw_only(),
                  py::arg("invalid_utf8") = "replace", py::arg("max_document_bytes") = 0,
                  py::arg("folding_table") = py::none(),
                  "The options a settings line records (an index file's), with the settings that "
                  "no line records (they change no signature).")
      .def_property_readonly(
          "method", [](const MethodOptions& o) { return std::string(DedupMethodName(o.method)); })
      .def_property_readonly("settings", [](const MethodOptions& o) { return SettingsLine(o); })
      .def_readonly("threshold", &MethodOptions::threshold)
      .def_readonly("k", &MethodOptions::k)
      .def_property_readonly(
          "mode",
          [](const MethodOptions& o) { return std::string(FeatureModeName(Features(o).mode)); })
      .def_property_readonly("shingle_unit",
                             [](const MethodOptions& o) {
                               return std::string(ShingleUnitName(Features(o).shingle_unit));
                             })
      .def_property_readonly("shingle_size",
                             [](const MethodOptions& o) { return Features(o).shingle_size; })
      .def_property_readonly("weighting",
                             [](const MethodOptions& o) {
                               return std::string(FeatureWeightingName(Features(o).weighting));
                             })
      .def_property_readonly("normalize",
                             [](const MethodOptions& o) { return Features(o).normalize; })
      .def_property_readonly("invalid_utf8",
                             [](const MethodOptions& o) {
                               return Features(o).invalid_utf8 == InvalidUtf8::kReject ? "reject"
                                                                                       : "replace";
                             })
      .def_property_readonly("fold_traditional",
                             [](const MethodOptions& o) { return Features(o).fold_traditional; })
      .def_property_readonly("fold", [](const MethodOptions& o) { return FoldName(Features(o)); })
      .def_property_readonly(
          "language",
          [](const MethodOptions& o) { return std::string(LanguageName(Features(o).language)); })
      .def_property_readonly("max_document_bytes",
                             [](const MethodOptions& o) { return Features(o).max_document_bytes; })
      .def_property_readonly("keyword_count",
                             [](const MethodOptions& o) { return Features(o).keyword_count; })
      .def_property_readonly("bands",
                             [](const MethodOptions& o) {
                               return o.method == DedupMethod::kAccurate ? o.sketch.bands : 0;
                             })
      .def_property_readonly("rows",
                             [](const MethodOptions& o) {
                               return o.method == DedupMethod::kAccurate ? o.sketch.rows : 0;
                             })
      .def("__repr__",
           [](const MethodOptions& o) { return "MethodOptions('" + SettingsLine(o) + "')"; })
      // Immutable: a copy may share the keyword model.
      .def("__copy__", [](const MethodOptions& o) { return o; })
      .def(
          "__deepcopy__", [](const MethodOptions& o, py::handle) { return o; }, py::arg("memo"))
      .def(py::pickle(&OptionsState, &OptionsFromState));

  py::class_<Signer>(m, "Signer",
                     "Signs texts under a MethodOptions (neardup.Fingerprinter is built on it). "
                     "Thread-safe.")
      .def(py::init<const MethodOptions&>(), py::arg("options"))
      .def_property_readonly("options", &Signer::options)
      .def_property_readonly("settings", [](const Signer& s) { return s.signer().settings(); })
      .def_property_readonly(
          "method",
          [](const Signer& s) { return std::string(DedupMethodName(s.signer().method())); })
      .def_property_readonly("sketch_bytes",
                             [](const Signer& s) { return s.signer().sketch_bytes(); })
      .def_property_readonly("bands", [](const Signer& s) { return s.signer().bands(); })
      .def(
          "simhash",
          [](Signer& s, py::handle text) { return py::int_(s.Sign(text, "text").simhash); },
          py::arg("text"), "The 64-bit SimHash fingerprint of the text under the method.")
      .def(
          "sign", [](Signer& s, py::handle text) { return SignatureTuple(s.Sign(text, "text")); },
          py::arg("text"), "(simhash, sketch bytes, band keys tuple, empty) of the text.")
      .def("simhash_batch", &Signer::SimhashBatch, py::arg("texts"), py::kw_only(),
           py::arg("threads") = 0, "uint64 [n]: the fingerprints, signed on `threads` threads.")
      .def("sign_batch", &Signer::SignBatch, py::arg("texts"), py::kw_only(),
           py::arg("threads") = 0,
           "(simhash uint64 [n], sketch uint8 [n, sketch_bytes], band_keys uint32 [n, bands], "
           "empty bool [n]).")
      .def("compare", &Signer::Compare, py::arg("a"), py::arg("b"),
           "The score of two texts or signatures when they are near-duplicates, else None.")
      .def(
          "estimate",
          [](const Signer& s, py::handle a, py::handle b) {
            if (s.signer().sketcher() == nullptr) {
              ThrowStatus(Status::NotSupported("the simhash method has no sketches"));
            }
            return EstimateJaccard(*s.signer().sketcher(), a, b);
          },
          py::arg("sketch_a"), py::arg("sketch_b"),
          "The estimated Jaccard similarity of two sketches of this method.")
      .def(py::pickle([](const Signer& s) { return py::make_tuple(s.options()); },
                      [](const py::tuple& state) {
                        if (state.size() != 1) throw py::value_error("Signer: not a pickled state");
                        return std::make_unique<Signer>(state[0].cast<MethodOptions>());
                      }));

  m.def(
      "estimate_jaccard",
      [](py::handle a, py::handle b) { return EstimateJaccard(DefaultSketcher(), a, b); },
      py::arg("sketch_a"), py::arg("sketch_b"),
      "Estimated Jaccard similarity of two sketches (132 bytes each), in [-1, 1].");
  m.def(
      "hamming_distances",
      [](const py::array_t<uint64_t, py::array::c_style | py::array::forcecast>& a,
         const py::array_t<uint64_t, py::array::c_style | py::array::forcecast>& b) {
        if (a.size() != b.size()) throw py::value_error("the arrays must have the same size");
        py::array_t<uint8_t> out(a.size());
        const uint64_t* x = a.data();
        const uint64_t* y = b.data();
        uint8_t* d = out.mutable_data();
        for (py::ssize_t i = 0; i < a.size(); ++i) {
          d[i] = static_cast<uint8_t>(std::popcount(x[i] ^ y[i]));
        }
        return out;
      },
      py::arg("a"), py::arg("b"), "Element-wise Hamming distances of two uint64 arrays (flat).");
}

}  // namespace neardup::python
