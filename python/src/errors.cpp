// posemb's exceptions as Python exceptions. The library's standard ones map as pybind11 maps
// them (std::invalid_argument -> ValueError, std::out_of_range -> IndexError, ...); posemb's own
// types get Python classes that keep the numbers as attributes and the library's message:
//
//   SequenceTooLong      (IndexError)   seq_len, start, max_seq_len
//   MemoryLimitExceeded  (MemoryError)  bytes, limit
//   FileFormatError      (ValueError)   path
//   std::system_error    -> OSError(errno, message), hence FileNotFoundError and the like.
#include <pybind11/pybind11.h>

#include <exception>
#include <string>
#include <system_error>

#include "bindings.hpp"
#include "posemb/errors.hpp"
#include "posemb/memory.hpp"
#include "posemb/tensor_file.hpp"  // FileFormatError (moves to posemb/errors.hpp with the io work)

namespace posemb::python {
namespace {

// The classes live as long as the process (the interpreter may still raise them at exit).
PyObject* sequence_too_long = nullptr;
PyObject* memory_limit_exceeded = nullptr;
PyObject* file_format_error = nullptr;

PyObject* new_class(py::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string qualified = std::string("posemb.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (cls == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(cls));  // the module holds one reference, we keep ours
  return cls;
}

// Raises an instance of cls with message what and the given attributes.
template <class... Attrs>
void raise(PyObject* cls, const char* what, Attrs&&... attrs) {
  py::object e = py::reinterpret_borrow<py::object>(cls)(what);
  ((e.attr(attrs.first) = attrs.second), ...);
  PyErr_SetObject(cls, e.ptr());
}

}  // namespace

void bind_errors(py::module_& m) {
  sequence_too_long =
      new_class(m, "SequenceTooLong", PyExc_IndexError,
                "A sequence needs positions the position table does not have (start + seq_len > "
                "max_seq_len). Attributes: seq_len, start, max_seq_len.");
  memory_limit_exceeded =
      new_class(m, "MemoryLimitExceeded", PyExc_MemoryError,
                "An allocation would exceed posemb's memory budget. Attributes: bytes, limit.");
  file_format_error = new_class(
      m, "FileFormatError", PyExc_ValueError,
      "A file that is not what its format promises; the message names the file. Attribute: path.");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const posemb::SequenceTooLong& e) {
      raise(sequence_too_long, e.what(), std::pair("seq_len", e.seq_len()),
            std::pair("start", e.start()), std::pair("max_seq_len", e.max_seq_len()));
    } catch (const posemb::MemoryLimitExceeded& e) {
      raise(memory_limit_exceeded, e.what(), std::pair("bytes", e.bytes()),
            std::pair("limit", e.limit()));
    } catch (const posemb::FileFormatError& e) {
      raise(file_format_error, e.what(), std::pair("path", e.path()));
    } catch (const std::system_error& e) {
      py::object err =
          py::reinterpret_borrow<py::object>(PyExc_OSError)(e.code().value(), e.what());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
    }
  });
}

}  // namespace posemb::python
