#include "arrays.hpp"

#include <cstdint>
#include <string>

#include "posemb/memory.hpp"

namespace posemb::python {
namespace {

std::string prefix(const char* op, const char* name) {
  return std::string(op) + ": " + name + " ";
}

std::string shape_text(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(a.shape(i));
  }
  return s + (a.ndim() == 1 ? ",)" : ")");
}

std::string shape_text(std::size_t r, std::size_t c) {
  return "(" + std::to_string(r) + ", " + std::to_string(c) + ")";
}

}  // namespace

std::string dtype_name(const py::dtype& d) {
  std::string name = d.attr("name").cast<std::string>();
  // A non-native byte order is named, or '>f4' would read as the float32 that was asked for.
  if (!d.attr("isnative").cast<bool>()) {
    const bool big = d.attr("byteorder").cast<std::string>() == ">";
    name = std::string(big ? "big-endian " : "little-endian ") + name +
           " (posemb reads native byte order: pass a.astype(a.dtype.newbyteorder('=')))";
  }
  return name;
}
std::string dtype_name(const py::array& a) {
  return dtype_name(a.dtype());
}

RowsLayout rows_layout(const py::array& a, int ndim, std::size_t itemsize, const char* op,
                       const char* name) {
  if (a.ndim() != ndim) {
    throw py::value_error(prefix(op, name) + "must have " + std::to_string(ndim) + " dimensions " +
                          (ndim == 2 ? "(rows, cols)" : "(B, T, C)") + ", got shape " +
                          shape_text(a));
  }
  const auto item = static_cast<py::ssize_t>(itemsize);
  if (a.size() == 0) {
    // No element: numpy gives such arrays zero strides, and there is nothing to view. The shape
    // goes on to the caller and the library, which say what is missing (an empty batch, ...).
    RowsLayout l;
    l.data = const_cast<void*>(a.data());
    l.cols = static_cast<std::size_t>(a.shape(ndim - 1));
    l.batch = static_cast<std::size_t>(a.shape(0));
    l.seq_len = ndim == 2 ? 1 : static_cast<std::size_t>(a.shape(1));
    l.rows = checked_mul(l.batch, l.seq_len, op, std::string(name) + "'s rows B*T");
    l.stride = l.cols;
    return l;
  }
  for (int i = 0; i < ndim; ++i) {
    // A dimension of extent 1 may carry any stride: it is never stepped over.
    if (a.shape(i) > 1 && (a.strides(i) < 0 || a.strides(i) % item != 0)) {
      throw py::value_error(prefix(op, name) +
                            "has strides that posemb cannot view (negative or "
                            "not a multiple of the element size); pass "
                            "np.ascontiguousarray(" +
                            name + ")");
    }
  }
  const std::size_t cols = static_cast<std::size_t>(a.shape(ndim - 1));
  if (cols > 1 && a.strides(ndim - 1) != item) {
    throw py::value_error(prefix(op, name) +
                          "must have contiguous rows (the last dimension's stride equal to the "
                          "element size); pass np.ascontiguousarray(" +
                          name + ")");
  }
  const void* data = a.data();
  if (reinterpret_cast<std::uintptr_t>(data) % itemsize != 0) {
    throw py::value_error(prefix(op, name) + "is not aligned to its element size; pass a copy");
  }
  RowsLayout l;
  l.data = const_cast<void*>(data);
  l.cols = cols;
  // The stride between consecutive rows, in elements: any value serves a single row.
  auto stride_of = [&](int dim) { return static_cast<std::size_t>(a.strides(dim) / item); };
  l.batch = static_cast<std::size_t>(a.shape(0));
  l.seq_len = ndim == 2 ? 1 : static_cast<std::size_t>(a.shape(1));
  l.rows = checked_mul(l.batch, l.seq_len, op, std::string(name) + "'s rows B*T");
  if (l.seq_len > 1) {
    l.stride = stride_of(1);
    // (B, T) must collapse into B*T rows of one stride.
    if (l.batch > 1 && a.strides(0) != static_cast<py::ssize_t>(l.seq_len * l.stride) * item) {
      throw py::value_error(prefix(op, name) +
                            "cannot be seen as (B*T, C) rows of one stride; pass "
                            "np.ascontiguousarray(" +
                            name + ")");
    }
  } else {
    l.stride = l.batch > 1 ? stride_of(0) : cols;
  }
  if (l.rows > 1 && l.stride < cols) {
    throw py::value_error(prefix(op, name) +
                          "has overlapping rows (a broadcast array?); pass "
                          "np.ascontiguousarray(" +
                          name + ")");
  }
  return l;
}

void expect_writeable(const py::array& a, const char* op, const char* name) {
  if (!a.writeable()) {
    throw py::value_error(prefix(op, name) + "is read-only, but " + op + " writes into it");
  }
}

void expect_batch(const char* op, const char* name, std::size_t got_batch, std::size_t got_seq,
                  std::size_t batch, std::size_t seq_len) {
  // Other mismatches (a different number of rows, an empty batch) are the library's to report.
  const std::size_t got = saturating_mul(got_batch, got_seq), rows = saturating_mul(batch, seq_len);
  const bool same_rows = got == rows && rows != 0 && rows != SIZE_MAX;
  if (same_rows && (got_batch != batch || got_seq != seq_len)) {
    throw py::value_error(std::string(op) + ": " + name + " has batch shape " +
                          shape_text(got_batch, got_seq) + " but the batch is " +
                          shape_text(batch, seq_len) + " (B, T)");
  }
}

}  // namespace posemb::python
