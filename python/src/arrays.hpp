// The bridge between numpy arrays and posemb's views, shared by every binding file.
//
//   auto wte = matrix_in<float>(wte_arr, "embed_forward", "wte");      // (V, C), no copy
//   auto out = activations_out<float>(out_arr, "embed_forward", "out"); // (B, T, C) as (B*T, C)
//   without_gil([&] { posemb::embed_forward(out.rows, ...); });
//   return array_over(view, owner, /*writeable=*/false);                // numpy over our memory
//
// Nothing here copies: an array whose dtype is not the expected one raises TypeError, one whose
// rows are not contiguous (or whose strides are negative or misaligned) raises ValueError
// naming the operation and the argument. Matrices and activations keep numpy's row stride.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "posemb/half.hpp"
#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"

namespace posemb::python {

namespace py = pybind11;

// The numpy dtype of T (float, double, posemb::float16, std::int32_t, std::int64_t,
// std::uint8_t, bool).
template <class T>
py::dtype dtype_of() {
  if constexpr (std::is_same_v<T, posemb::float16>) {
    return py::dtype("float16");
  } else {
    return py::dtype::of<T>();
  }
}

// True when a's dtype is T's (native byte order).
template <class T>
bool has_dtype(const py::array& a) {
  return a.dtype().equal(dtype_of<T>());
}

// "float32", "int64", ... (for messages).
std::string dtype_name(const py::dtype& d);
std::string dtype_name(const py::array& a);

// A 2-D array, or a 3-D (B, T, C) array seen as (B*T, C), with its first dimensions.
struct RowsLayout {
  void* data = nullptr;
  std::size_t rows = 0, cols = 0, stride = 0;  // stride in elements
  std::size_t batch = 0, seq_len = 0;          // (B, T) of a 3-D array; (rows, 1) for 2-D
};

// The layout of a (ndim == 2 or 3) array of element size itemsize whose last dimension is
// contiguous; throws ValueError naming op and name otherwise.
RowsLayout rows_layout(const py::array& a, int ndim, std::size_t itemsize, const char* op,
                       const char* name);

// Throws TypeError unless a's dtype is T.
template <class T>
void expect_dtype(const py::array& a, const char* op, const char* name) {
  if (!has_dtype<T>(a)) {
    throw py::type_error(std::string(op) + ": " + name + " must be a " + dtype_name(dtype_of<T>()) +
                         " array, got " + dtype_name(a));
  }
}

// Throws ValueError unless a is writeable.
void expect_writeable(const py::array& a, const char* op, const char* name);

// a (rows, cols) as a read-only view, no copy.
template <class T>
MatrixView<const T> matrix_in(const py::array& a, const char* op, const char* name) {
  expect_dtype<T>(a, op, name);
  const RowsLayout l = rows_layout(a, 2, sizeof(T), op, name);
  return MatrixView<const T>(static_cast<const T*>(l.data), l.rows, l.cols, l.stride);
}

// a (rows, cols) as a mutable view (an output: written over or added into), no copy.
template <class T>
MatrixView<T> matrix_out(const py::array& a, const char* op, const char* name) {
  expect_dtype<T>(a, op, name);
  expect_writeable(a, op, name);
  const RowsLayout l = rows_layout(a, 2, sizeof(T), op, name);
  return MatrixView<T>(static_cast<T*>(l.data), l.rows, l.cols, l.stride);
}

// Activations (B, T, C) seen as the library's (B*T, C), with B and T.
template <class T>
struct Activations {
  MatrixView<T> rows;  // (B*T, C)
  std::size_t batch = 0, seq_len = 0;
};

template <class T>
Activations<const T> activations_in(const py::array& a, const char* op, const char* name) {
  expect_dtype<T>(a, op, name);
  const RowsLayout l = rows_layout(a, 3, sizeof(T), op, name);
  return {MatrixView<const T>(static_cast<const T*>(l.data), l.rows, l.cols, l.stride), l.batch,
          l.seq_len};
}

template <class T>
Activations<T> activations_out(const py::array& a, const char* op, const char* name) {
  expect_dtype<T>(a, op, name);
  expect_writeable(a, op, name);
  const RowsLayout l = rows_layout(a, 3, sizeof(T), op, name);
  return {MatrixView<T>(static_cast<T*>(l.data), l.rows, l.cols, l.stride), l.batch, l.seq_len};
}

// Throws ValueError (in the library's words) when activations of batch * seq_len rows split them
// into another (B, T); every other mismatch is left to the library, which reports it.
void expect_batch(const char* op, const char* name, std::size_t got_batch, std::size_t got_seq,
                  std::size_t batch, std::size_t seq_len);

// A numpy array over the elements of view m, owned by `owner` (which the array keeps alive).
// Read-only unless writeable.
template <class T>
py::array array_over(MatrixView<T> m, py::handle owner, bool writeable) {
  using E = std::remove_const_t<T>;
  const auto item = static_cast<py::ssize_t>(sizeof(E));
  py::array a(dtype_of<E>(),
              {static_cast<py::ssize_t>(m.rows()), static_cast<py::ssize_t>(m.cols())},
              {static_cast<py::ssize_t>(m.row_stride()) * item, item}, m.data(), owner);
  if (!writeable) a.attr("setflags")(py::arg("write") = false);
  return a;
}

// A numpy array that owns matrix m (moved to the heap; freed when the array is).
template <class T>
py::array array_owning(Matrix<T>&& m) {
  auto* held = new Matrix<T>(std::move(m));
  py::capsule owner(held, [](void* p) { delete static_cast<Matrix<T>*>(p); });
  return array_over(held->view(), owner, true);
}

// Kernels run with the GIL released, through this one function (which the tests observe).
void note_kernel_without_gil();

template <class F>
decltype(auto) without_gil(F&& f) {
  py::gil_scoped_release release;
  note_kernel_without_gil();
  return std::forward<F>(f)();
}

}  // namespace posemb::python
