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

// The options from the Python keywords; an unknown name is a ValueError naming the choices.
SinusoidalOptions options_of(double base, const std::string& layout,
                             const std::string& frequencies) {
  SinusoidalOptions o;
  o.base = base;
  if (layout == "interleaved") {
    o.layout = SinusoidalLayout::interleaved;
  } else if (layout == "concatenated") {
    o.layout = SinusoidalLayout::concatenated;
  } else {
    throw py::value_error(std::string(kOp) +
                          ": layout must be 'interleaved' or 'concatenated', got " +
                          py::repr(py::str(layout)).cast<std::string>());
  }
  if (frequencies == "vaswani") {
    o.frequencies = SinusoidalFrequencies::vaswani;
  } else if (frequencies == "tensor2tensor") {
    o.frequencies = SinusoidalFrequencies::tensor2tensor;
  } else {
    throw py::value_error(std::string(kOp) +
                          ": frequencies must be 'vaswani' or 'tensor2tensor', got " +
                          py::repr(py::str(frequencies)).cast<std::string>());
  }
  return o;
}

template <class T>
void encode_into(MatrixView<T> out, std::size_t start, const SinusoidalOptions& o) {
  without_gil([&] { posemb::sinusoidal_positional_encoding_into(out, start, o); });
}

}  // namespace

void bind_sinusoidal(py::module_& m) {
  m.def(
      "sinusoidal_positional_encoding",
      [](std::size_t seq_len, std::size_t embed_dim, std::size_t start, double base,
         const py::object& dtype, const std::string& layout, const std::string& frequencies) {
        const SinusoidalOptions o = options_of(base, layout, frequencies);
        const py::dtype dt = py::dtype::from_args(dtype);
        if (dt.equal(dtype_of<float>())) {
          Matrix<float> m(seq_len, embed_dim);
          encode_into(m.view(), start, o);
          return array_owning(std::move(m));
        }
        if (dt.equal(dtype_of<double>())) {
          Matrix<double> m(seq_len, embed_dim);
          encode_into(m.view(), start, o);
          return array_owning(std::move(m));
        }
        throw py::type_error(std::string(kOp) + ": dtype must be float32 or float64, got " +
                             dtype_name(dt));
      },
      py::arg("seq_len"), py::arg("embed_dim"), py::arg("start") = 0, py::arg("base") = 10000.0,
      py::arg("dtype") = py::str("float32"), py::arg("layout") = "interleaved",
      py::arg("frequencies") = "vaswani",
      R"(The (seq_len, embed_dim) sinusoidal encoding of positions [start, start + seq_len).

layout 'interleaved' (Vaswani et al.): column 2i is sin(p * f_i), column 2i+1 its cosine;
'concatenated' (fairseq, HF Marian, tensor2tensor): every sine, then every cosine. frequencies
'vaswani': f_i = base^(-2i/embed_dim); 'tensor2tensor': f_i = base^(-i/(embed_dim/2 - 1)), as
fairseq. Within 3e-7 of the exact value up to position 2^31 (float32). Raises ValueError for a
base that is not finite and positive or an unknown layout or frequencies, IndexError when
start + seq_len overflows. dtype: float32 or float64.)");

  m.def(
      "sinusoidal_positional_encoding_into",
      [](const py::array& out, std::size_t start, double base, const std::string& layout,
         const std::string& frequencies) {
        constexpr const char* op = "sinusoidal_positional_encoding_into";
        const SinusoidalOptions o = options_of(base, layout, frequencies);
        if (has_dtype<double>(out)) {
          encode_into(matrix_out<double>(out, op, "out"), start, o);
        } else {
          encode_into(matrix_out<float>(out, op, "out"), start, o);
        }
      },
      py::arg("out"), py::arg("start") = 0, py::arg("base") = 10000.0,
      py::arg("layout") = "interleaved", py::arg("frequencies") = "vaswani",
      R"(Writes the encoding of positions [start, start + out.shape[0]) over out (seq_len,
embed_dim), float32 or float64. Nothing is written when it raises.)");
}

}  // namespace posemb::python
