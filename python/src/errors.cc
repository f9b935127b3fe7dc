// The module's exceptions and the one mapping from a Status code to them.
#include <Python.h>

#include "bindings.h"

namespace neardup::python {
namespace {

// Created once by RegisterErrors and kept for the life of the interpreter (the module holds them
// too).
PyObject* g_error = nullptr;
PyObject* g_invalid_argument = nullptr;
PyObject* g_not_found = nullptr;
PyObject* g_corruption = nullptr;
PyObject* g_io_error = nullptr;
PyObject* g_resource_exhausted = nullptr;
PyObject* g_failed_precondition = nullptr;
PyObject* g_cancelled = nullptr;
PyObject* g_not_supported = nullptr;
PyObject* g_unavailable = nullptr;
PyObject* g_permission_denied = nullptr;

// A new exception class neardup.<name> with the given bases, added to the module.
PyObject* AddException(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  const std::string qualified = std::string("neardup.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), /*dict=*/nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));  // the module keeps a reference; so does g_*
  return type;
}

}  // namespace

void RegisterErrors(py::module_& m) {
  g_error = AddException(m, "Error", py::make_tuple(py::handle(PyExc_Exception)),
                         "Base class of every error neardup raises.");
  const py::handle error(g_error);
  g_invalid_argument = AddException(
      m, "InvalidArgumentError", py::make_tuple(error, py::handle(PyExc_ValueError)),
      "Bad input or option: invalid UTF-8 under invalid_utf8='reject', malformed JSON, an unknown "
      "setting.");
  g_not_found =
      AddException(m, "NotFoundError", py::make_tuple(error, py::handle(PyExc_FileNotFoundError)),
                   "A file, id or key that should exist does not.");
  g_corruption = AddException(m, "CorruptionError", py::make_tuple(error),
                              "Stored data failed a magic, version or checksum check.");
  g_io_error = AddException(m, "IOError", py::make_tuple(error, py::handle(PyExc_OSError)),
                            "The operating system refused a read or write.");
  g_resource_exhausted =
      AddException(m, "ResourceExhaustedError", py::make_tuple(error),
                   "A configured limit was exceeded (document size, number of documents).");
  g_failed_precondition =
      AddException(m, "FailedPreconditionError", py::make_tuple(error),
                   "The call is not valid in the object's state (an id already stored, an index "
                   "built with other settings).");
  g_cancelled =
      AddException(m, "CancelledError", py::make_tuple(error), "The operation was interrupted.");
  g_not_supported = AddException(m, "NotSupportedError",
                                 py::make_tuple(error, py::handle(PyExc_NotImplementedError)),
                                 "This object does not offer the call.");
  g_unavailable =
      AddException(m, "UnavailableError", py::make_tuple(error, py::handle(PyExc_ConnectionError)),
                   "A server could not be reached or did not answer in time.");
  g_permission_denied = AddException(m, "PermissionDeniedError", py::make_tuple(error),
                                     "A server refused the credentials given.");
}

void ThrowStatus(const Status& status) {
  PyObject* type = g_error;
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
      type = g_invalid_argument;
      break;
    case Status::Code::kNotFound:
      type = g_not_found;
      break;
    case Status::Code::kCorruption:
      type = g_corruption;
      break;
    case Status::Code::kIOError:
      type = g_io_error;
      break;
    case Status::Code::kResourceExhausted:
      type = g_resource_exhausted;
      break;
    case Status::Code::kFailedPrecondition:
      type = g_failed_precondition;
      break;
    case Status::Code::kCancelled:
      type = g_cancelled;
      break;
    case Status::Code::kNotSupported:
      type = g_not_supported;
      break;
    case Status::Code::kUnavailable:
      type = g_unavailable;
      break;
    case Status::Code::kPermissionDenied:
      type = g_permission_denied;
      break;
    default:
      break;
  }
  // The message alone: the exception's class already says what the code said.
  PyErr_SetString(type, status.message().c_str());
  throw py::error_already_set();
}

std::string TextArgument(py::handle value, std::string_view what) {
  if (PyUnicode_Check(value.ptr())) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
    if (data != nullptr) return std::string(data, static_cast<size_t>(size));
    // Lone surrogates: their code points' bytes (what a file holding them would hold).
    PyErr_Clear();
    PyObject* bytes = PyUnicode_AsEncodedString(value.ptr(), "utf-8", "surrogatepass");
    if (bytes == nullptr) throw py::error_already_set();
    std::string text(PyBytes_AS_STRING(bytes), static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
    Py_DECREF(bytes);
    return text;
  }
  if (PyBytes_Check(value.ptr())) {
    return std::string(PyBytes_AS_STRING(value.ptr()),
                       static_cast<size_t>(PyBytes_GET_SIZE(value.ptr())));
  }
  if (PyObject_CheckBuffer(value.ptr())) {
    const py::buffer_info info = py::reinterpret_borrow<py::buffer>(value).request();
    if (info.itemsize == 1 && info.ndim <= 1) {
      return std::string(static_cast<const char*>(info.ptr), static_cast<size_t>(info.size));
    }
  }
  std::string message(what);
  message += " must be str or bytes, not ";
  message += Py_TYPE(value.ptr())->tp_name;
  throw py::type_error(message);
}

}  // namespace neardup::python
