// The sinusoidal encoding (Vaswani et al.), computed into new or existing arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>

#include "arrays.hpp"
#include "bindings.hpp"
#include "posemb/matrix.hpp"
#include "posemb/sinusoidal.hpp"

namespace posemb::python {
namespace {

constexpr const char* kOp = "sinusoidal_positional_encoding";

template <class T>
void encode_into(MatrixView<T> out, std::size_t start, double base) {
  without_gil([&] { posemb::sinusoidal_positional_encoding_into(out, start, base); });
}

}  // namespace

void bind_sinusoidal(py::module_& m) {
  m.def(
      "sinusoidal_positional_encoding",
      [](std::size_t seq_len, std::size_t embed_dim, std::size_t start, double base,
         const py::object& dtype) {
        const py::dtype dt = py::dtype::from_args(dtype);
        if (dt.equal(dtype_of<float>())) {
          Matrix<float> m(seq_len, embed_dim);
          encode_into(m.view(), start, base);
          return array_owning(std::move(m));
        }
        if (dt.equal(dtype_of<double>())) {
          Matrix<double> m(seq_len, embed_dim);
          encode_into(m.view(), start, base);
          return array_owning(std::move(m));
        }
        throw py::type_error(std::string(kOp) + ": dtype must be float32 or float64, got " +
                             dtype_name(dt));
      },
      py::arg("seq_len"), py::arg("embed_dim"), py::arg("start") = 0, py::arg("base") = 10000.0,
      py::arg("dtype") = py::str("float32"),
      R"(The (seq_len, embed_dim) sinusoidal encoding of positions [start, start + seq_len).

Column 2i is sin(p / base^(2i/embed_dim)), column 2i+1 the cosine (interleaved). Within 3e-7
of the exact value up to position 2^31 (float32). Raises ValueError for a base that is not
finite and positive, IndexError when start + seq_len overflows. dtype: float32 or float64.)");

  m.def(
      "sinusoidal_positional_encoding_into",
      [](const py::array& out, std::size_t start, double base) {
        constexpr const char* op = "sinusoidal_positional_encoding_into";
        if (has_dtype<double>(out)) {
          encode_into(matrix_out<double>(out, op, "out"), start, base);
        } else {
          encode_into(matrix_out<float>(out, op, "out"), start, base);
        }
      },
      py::arg("out"), py::arg("start") = 0, py::arg("base") = 10000.0,
      R"(Writes the encoding of positions [start, start + out.shape[0]) over out (seq_len,
embed_dim), float32 or float64. Nothing is written when it raises.)");
}

}  // namespace posemb::python
