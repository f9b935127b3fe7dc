// What the files of the Python extension share: each registers its part of the module, and every
// one turns a neardup::Status into a Python exception the same way.
#ifndef NEARDUP_PYTHON_BINDINGS_H_
#define NEARDUP_PYTHON_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/method.h"
#include "neardup/status.h"

namespace neardup::python {

namespace py = pybind11;

// The module's exceptions (errors.cc): neardup.Error (a subclass of Exception) is the base of
// them all; InvalidArgument is also a ValueError, NotFound a FileNotFoundError, IOError an OSError,
// Unavailable a ConnectionError.
void RegisterErrors(py::module_& m);
// Throws the Python exception of a non-OK status, with the library's message.
[[noreturn]] void ThrowStatus(const Status& status);
inline void ThrowIfError(const Status& status) {
  if (!status.ok()) ThrowStatus(status);
}
template <typename T>
T ValueOrThrow(Result<T> result) {
  if (!result.ok()) ThrowStatus(result.status());
  return std::move(result).value();
}

// A Python text argument as UTF-8 bytes: a str (lone surrogates, which UTF-8 cannot hold, become
// the bytes of their code points, invalid UTF-8 that the invalid_utf8 policy then replaces or
// rejects, as it would in a file), or bytes-like (taken as they are). TypeError naming `what`
// otherwise. Call with the GIL held.
std::string TextArgument(py::handle value, std::string_view what);

// Single texts at least this long are signed, inserted or queried with the GIL released (shorter
// ones would pay more for taking the GIL back than they gain).
inline constexpr size_t kReleaseGilBytes = size_t{32} << 10;

// Shared by the batch calls (signing.cc). The worker threads of a batch: `threads`, or one per core
// for 0 (ValueError out of range).
int ResolveThreads(int threads);
// Runs item(i) for every i in [0, n) on up to `threads` threads, each with the item function its
// make_item() call returned (its own state); the error of the lowest failing index, as
// "<what>[i]: <message>". Call without the GIL.
Status ParallelFor(size_t n, int threads, std::string_view what,
                   const std::function<std::function<Status(size_t)>()>& make_item);
// Signs every text of an iterable on `threads` threads with the GIL released (errors name
// "<what>[i]").
std::vector<Signature> SignTexts(const DocumentSigner& signer, py::handle texts, int threads,
                                 std::string_view what);
// A Signature as the tuple neardup._core.Signature is made from.
py::tuple SignatureTuple(const Signature& signature);

void RegisterSigning(py::module_& m);      // signing.cc: Fingerprinter, estimate/hamming helpers
void RegisterIndex(py::module_& m);        // index.cc: Index (the online index)
void RegisterDedup(py::module_& m);        // dedup.cc: dedup() of in-memory collections
void RegisterJieba(py::module_& m);        // jieba.cc: cut, cut_for_search, extract_tags...
void RegisterDistributed(py::module_& m);  // distributed.cc: the steps of neardup.dask

}  // namespace neardup::python

#endif  // NEARDUP_PYTHON_BINDINGS_H_
