// The core operation: learned_positional_embedding as a read-only numpy view into the table.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>

#include "arrays.hpp"
#include "bindings.hpp"
#include "posemb/half.hpp"
#include "posemb/learned_positional_embedding.hpp"

namespace posemb::python {
namespace {

constexpr const char* kOp = "learned_positional_embedding";

template <class T>
py::array lookup(std::size_t seq_len, const py::array& table, std::size_t start) {
  const MatrixView<const T> rows =
      posemb::learned_positional_embedding(seq_len, matrix_in<T>(table, kOp, "table"), start);
  return array_over(rows, table, /*writeable=*/false);
}

}  // namespace

void bind_lookup(py::module_& m) {
  m.def(
      "learned_positional_embedding",
      [](std::size_t seq_len, const py::array& table, std::size_t start) {
        if (has_dtype<float>(table)) return lookup<float>(seq_len, table, start);
        if (has_dtype<double>(table)) return lookup<double>(seq_len, table, start);
        if (has_dtype<posemb::float16>(table))
          return lookup<posemb::float16>(seq_len, table, start);
        throw py::type_error(std::string(kOp) +
                             ": table must be a float32, float64 or float16 array, got " +
                             dtype_name(table));
      },
      py::arg("seq_len"), py::arg("table"), py::arg("start") = 0,
      R"(Rows [start, start + seq_len) of table (max_seq_len, embed_dim) as a read-only view.

No element is read or copied: the result shares table's memory (np.shares_memory is True) and
keeps table alive; writes to the table after the call are visible through it. Raises
SequenceTooLong (an IndexError with seq_len, start and max_seq_len) when start + seq_len >
max_seq_len. table: float32, float64 or float16, rows contiguous (any row stride).)");
}

}  // namespace posemb::python
