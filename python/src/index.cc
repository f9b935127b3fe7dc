// Index: the online index (neardup/online_index.h) of either method, for Python.
//
// The index is held by a shared pointer that every call copies with the GIL held before it
// releases the GIL (batches, long texts, save, load), so close() (which drops it) never pulls the
// index from under a call in flight: the index goes when the last call using it ends. Every call
// after close() raises ValueError("index is closed"), as a closed file does.
#include <Python.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bindings.h"
#include "neardup/index_file.h"
#include "neardup/method.h"
#include "neardup/online_index.h"
#include "neardup/output.h"

namespace neardup::python {

namespace {

constexpr size_t kMaxIdBytes = 65535;

// An id: a str, as UTF-8 (lone surrogates as surrogateescape gives them back: ids read from files
// that are not UTF-8 round-trip).
std::string IdArgument(py::handle value, std::string_view what) {
  if (!PyUnicode_Check(value.ptr())) {
    throw py::type_error(std::string(what) + " must be str, not " + Py_TYPE(value.ptr())->tp_name);
  }
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
  if (data != nullptr) return std::string(data, static_cast<size_t>(size));
  PyErr_Clear();
  PyObject* bytes = PyUnicode_AsEncodedString(value.ptr(), "utf-8", "surrogateescape");
  if (bytes == nullptr) throw py::error_already_set();
  std::string id(PyBytes_AS_STRING(bytes), static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
  Py_DECREF(bytes);
  return id;
}

py::str IdObject(std::string_view id) {
  PyObject* text =
      PyUnicode_DecodeUTF8(id.data(), static_cast<Py_ssize_t>(id.size()), "surrogateescape");
  if (text == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(text);
}

// The library's check of an id (its words too), before anything of a batch is stored.
Status CheckId(std::string_view id) {
  if (id.empty()) return Status::InvalidArgument("a document id must not be empty");
  if (id.size() > kMaxIdBytes) {
    return Status::InvalidArgument("a document id is " + std::to_string(id.size()) +
                                   " bytes long; the limit is " + std::to_string(kMaxIdBytes));
  }
  return Status::OK();
}

py::dict QueryStatsDict(const OnlineQueryStats& q) {
  py::dict d;
  d["queries"] = q.queries;
  d["lookups"] = q.lookups;
  d["candidates"] = q.candidates;
  d["matches"] = q.matches;
  return d;
}

class IndexObject {
 public:
  IndexObject(const MethodOptions& options, uint64_t expected_documents,
              const std::string& sketch_directory) {
    OnlineIndexOptions o;
    o.method = options;
    o.expected_documents = expected_documents;
    o.sketch_directory = sketch_directory;
    Result<std::unique_ptr<OnlineIndex>> created = Status::Internal("not created");
    {
      py::gil_scoped_release release;
      created = OnlineIndex::Create(o);
    }
    Set(ValueOrThrow(std::move(created)));
  }

  static IndexObject Load(const std::string& path, const MethodOptions& options,
                          uint64_t expected_documents, const std::string& sketch_directory) {
    OnlineIndexOptions o;
    o.method = options;
    o.expected_documents = expected_documents;
    o.sketch_directory = sketch_directory;
    Result<std::unique_ptr<OnlineIndex>> loaded = Status::Internal("not loaded");
    {
      py::gil_scoped_release release;
      loaded = OnlineIndex::Load(path, o);
    }
    return IndexObject(ValueOrThrow(std::move(loaded)));
  }

  void Insert(py::handle id, py::handle text) {
    const auto index = Get();
    const std::string key = IdArgument(id, "id");
    const std::string bytes = TextArgument(text, "text");
    Status status;
    if (bytes.size() >= kReleaseGilBytes) {
      py::gil_scoped_release release;
      status = index->Insert(key, bytes);
    } else {
      status = index->Insert(key, bytes);
    }
    ThrowIfError(status);
  }

  // Every text signed on all cores, then stored in one load. The ids are checked first (none
  // stored, none repeated, none empty) and the texts signed before anything is stored: a bad id or
  // text leaves the index as it was.
  void InsertMany(py::handle ids, py::handle texts, int threads) {
    const auto index = Get();
    std::vector<std::string> keys;
    if (PyUnicode_Check(ids.ptr()) || PyBytes_Check(ids.ptr())) {
      throw py::type_error("ids must be an iterable of str, not a single " +
                           std::string(Py_TYPE(ids.ptr())->tp_name));
    }
    PyObject* iterator = PyObject_GetIter(ids.ptr());
    if (iterator == nullptr) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
      PyErr_Clear();
      throw py::type_error("ids must be an iterable of str, not " +
                           std::string(Py_TYPE(ids.ptr())->tp_name));
    }
    const py::object it = py::reinterpret_steal<py::object>(iterator);
    while (PyObject* item = PyIter_Next(it.ptr())) {
      const py::object id = py::reinterpret_steal<py::object>(item);
      keys.push_back(IdArgument(id, "ids[" + std::to_string(keys.size()) + "]"));
    }
    if (PyErr_Occurred()) throw py::error_already_set();
    std::unordered_map<std::string_view, size_t> seen;
    seen.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      const std::string where = "ids[" + std::to_string(i) + "]";
      ThrowIfError(CheckId(keys[i]).WithContext(where));
      const auto [place, added] = seen.emplace(keys[i], i);
      if (!added) {
        ThrowStatus(Status::FailedPrecondition(where + ": id '" + keys[i] + "' repeats ids[" +
                                               std::to_string(place->second) + "]"));
      }
      if (index->Contains(keys[i])) {
        ThrowStatus(Status::FailedPrecondition(where + ": id '" + keys[i] + "' is already stored"));
      }
    }
    std::vector<Signature> signatures = SignTexts(index->signer(), texts, threads, "texts");
    if (signatures.size() != keys.size()) {
      throw py::value_error("ids and texts differ in length (" + std::to_string(keys.size()) +
                            " and " + std::to_string(signatures.size()) + ")");
    }
    Status status;
    {
      py::gil_scoped_release release;
      size_t next = 0;
      status = index->InsertAll(
          [&](std::string* id, Signature* signature) -> Result<bool> {
            if (next == keys.size()) return false;
            *id = std::move(keys[next]);
            *signature = std::move(signatures[next]);
            ++next;
            return true;
          },
          keys.size());
    }
    ThrowIfError(status);
  }

  py::list Query(py::handle text) const {
    const auto index = Get();
    const std::string bytes = TextArgument(text, "text");
    Result<std::vector<OnlineMatch>> matches = Status::Internal("not queried");
    if (bytes.size() >= kReleaseGilBytes) {
      py::gil_scoped_release release;
      matches = index->Query(bytes);
    } else {
      matches = index->Query(bytes);
    }
    return MatchList(ValueOrThrow(std::move(matches)));
  }

  // The matches of every text: signed and queried on all cores.
  py::list QueryMany(py::handle texts, int threads) const {
    const auto index = Get();
    const int workers = ResolveThreads(threads);
    const std::vector<Signature> signatures = SignTexts(index->signer(), texts, threads, "texts");
    std::vector<std::vector<OnlineMatch>> results(signatures.size());
    Status status;
    {
      py::gil_scoped_release release;
      status =
          ParallelFor(signatures.size(), workers, "texts", [&]() -> std::function<Status(size_t)> {
            return [&](size_t i) -> Status {
              auto matches = index->QuerySigned(signatures[i]);
              if (!matches.ok()) return matches.status();
              results[i] = std::move(*matches);
              return Status::OK();
            };
          });
    }
    ThrowIfError(status);
    py::list out(results.size());
    for (size_t i = 0; i < results.size(); ++i) out[i] = MatchList(results[i]);
    return out;
  }

  py::tuple QueryAndInsert(py::handle id, py::handle text, bool if_new) {
    const auto index = Get();
    const std::string key = IdArgument(id, "id");
    const std::string bytes = TextArgument(text, "text");
    const InsertPolicy policy = if_new ? InsertPolicy::kIfNew : InsertPolicy::kAlways;
    Result<QueryAndInsertResult> result = Status::Internal("not queried");
    if (bytes.size() >= kReleaseGilBytes) {
      py::gil_scoped_release release;
      result = index->QueryAndInsert(key, bytes, policy);
    } else {
      result = index->QueryAndInsert(key, bytes, policy);
    }
    const QueryAndInsertResult r = ValueOrThrow(std::move(result));
    return py::make_tuple(MatchList(r.matches), py::bool_(r.inserted));
  }

  void Remove(py::handle id) { ThrowIfError(Get()->Remove(IdArgument(id, "id"))); }

  bool Contains(py::handle id) const {
    if (!PyUnicode_Check(id.ptr())) {
      Get();  // closed first
      return false;
    }
    return Get()->Contains(IdArgument(id, "id"));
  }

  py::tuple GetSignature(py::handle id) const {
    return SignatureTuple(ValueOrThrow(Get()->Get(IdArgument(id, "id"))));
  }

  size_t Size() const { return Get()->Stats().documents; }

  py::list Ids() const {
    const auto index = Get();
    std::vector<std::string> ids;
    ThrowIfError(
        index->ForEach([&](std::string_view id, const Signature&) { ids.emplace_back(id); }));
    py::list out(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) out[i] = IdObject(ids[i]);
    return out;
  }

  py::dict Stats() const {
    const OnlineIndexStats s = Get()->Stats();
    py::dict d;
    d["documents"] = s.documents;
    d["empty_documents"] = s.empty_documents;
    d["inserts"] = s.inserts;
    d["removes"] = s.removes;
    d["memory_bytes"] = s.memory_bytes;
    d["settings"] = s.settings;
    d["queries"] = QueryStatsDict(s.queries);
    return d;
  }

  // Through the output layer: the file appears whole, or not at all (the old one stays).
  void Save(const std::string& path) const {
    const auto index = Get();
    Status status;
    {
      py::gil_scoped_release release;
      OutputFile out;
      status = out.Open(path);
      if (status.ok()) status = index->Save(&out);
      if (status.ok()) status = out.Commit();
    }
    ThrowIfError(status);
  }

  void Close() { index_.reset(); }
  bool closed() const { return index_ == nullptr; }

  MethodOptions options() const { return Get()->signer().options(); }
  std::string settings() const { return Get()->signer().settings(); }
  std::string method() const { return std::string(DedupMethodName(Get()->signer().method())); }

 private:
  explicit IndexObject(std::unique_ptr<OnlineIndex> index) { Set(std::move(index)); }

  void Set(std::unique_ptr<OnlineIndex> index) {
    simhash_ = index->signer().method() == DedupMethod::kSimhash;
    index_ = std::shared_ptr<OnlineIndex>(std::move(index));
  }

  std::shared_ptr<OnlineIndex> Get() const {
    if (index_ == nullptr) throw py::value_error("index is closed");
    return index_;
  }

  // [(id, score)]: the score a float Jaccard estimate, or (simhash) an int distance.
  py::list MatchList(const std::vector<OnlineMatch>& matches) const {
    py::list out(matches.size());
    for (size_t i = 0; i < matches.size(); ++i) {
      py::object score = simhash_ ? py::object(py::int_(static_cast<int>(matches[i].score)))
                                  : py::object(py::float_(matches[i].score));
      out[i] = py::make_tuple(IdObject(matches[i].id), std::move(score));
    }
    return out;
  }

  std::shared_ptr<OnlineIndex> index_;
  bool simhash_ = false;
};

}  // namespace

void RegisterIndex(py::module_& m) {
  py::class_<IndexObject>(m, "Index",
                          "The online index of either method (neardup.Index is built on it). "
                          "Thread-safe.")
      .def(py::init<const MethodOptions&, uint64_t, const std::string&>(), py::arg("options"),
           py::kw_only(), py::arg("expected_documents") = 0, py::arg("sketch_directory") = "")
      .def_static("load", &IndexObject::Load, py::arg("path"), py::arg("options"), py::kw_only(),
                  py::arg("expected_documents") = 0, py::arg("sketch_directory") = "")
      .def("insert", &IndexObject::Insert, py::arg("id"), py::arg("text"))
      .def("insert_many", &IndexObject::InsertMany, py::arg("ids"), py::arg("texts"), py::kw_only(),
           py::arg("threads") = 0)
      .def("query", &IndexObject::Query, py::arg("text"))
      .def("query_many", &IndexObject::QueryMany, py::arg("texts"), py::kw_only(),
           py::arg("threads") = 0)
      .def("query_and_insert", &IndexObject::QueryAndInsert, py::arg("id"), py::arg("text"),
           py::kw_only(), py::arg("if_new") = true)
      .def("remove", &IndexObject::Remove, py::arg("id"))
      .def("contains", &IndexObject::Contains, py::arg("id"))
      .def("get", &IndexObject::GetSignature, py::arg("id"))
      .def("size", &IndexObject::Size)
      .def("ids", &IndexObject::Ids)
      .def("stats", &IndexObject::Stats)
      .def("save", &IndexObject::Save, py::arg("path"))
      .def("close", &IndexObject::Close)
      .def_property_readonly("closed", &IndexObject::closed)
      .def_property_readonly("options", &IndexObject::options)
      .def_property_readonly("settings", &IndexObject::settings)
      .def_property_readonly("method", &IndexObject::method);

  m.def(
      "index_file_settings",
      [](const std::string& path) {
        Result<IndexFileInfo> info = Status::Internal("not read");
        {
          py::gil_scoped_release release;
          info = ReadIndexFileInfo(path);
        }
        return ValueOrThrow(std::move(info)).settings;
      },
      py::arg("path"), "The settings line an index file records (\"\" when it records none).");
}

}  // namespace neardup::python
