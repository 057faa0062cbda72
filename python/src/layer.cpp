// The trainable layer (posemb.LearnedPositionalEmbedding, the library's own, owning its table
// and gradient) and the seeded initializers.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "posemb/initializers.hpp"
#include "posemb/layer.hpp"
#include "positions.hpp"

namespace posemb::python {
namespace {

using Layer = posemb::LearnedPositionalEmbedding;

}  // namespace

void bind_layer(py::module_& m) {
  m.def(
      "initialize_table",
      [](const py::array& table, const std::string& init, double stddev, std::uint64_t seed) {
        const MatrixView<float> t = matrix_out<float>(table, "initialize_table", "table");
        const Initializer i = Initializer::parse(init, stddev, seed);
        without_gil([&] { posemb::initialize_table(t, i); });
      },
      py::arg("table"), py::arg("init") = "normal", py::arg("stddev") = 0.02, py::arg("seed") = 0,
      R"(Fills table (rows, cols) float32 in place from a seeded, thread-count-independent
generator. init: "normal" (N(0, stddev), GPT-2's 0.02), "scaled-normal" (N(0, cols^-1/2),
fairseq), "glorot-uniform" (keras), "zeros", "sinusoidal". The same seed and shape give the
same table on every machine.)");

  py::class_<Layer>(m, "LearnedPositionalEmbedding", R"(posemb's trainable position table.

Owns a (max_seq_len, embed_dim) float32 table and its gradient; `table` and `grad` are writable
numpy views of them (no copy; they keep the layer alive). For PyTorch, use
posemb.torch.LearnedPositionalEmbedding.)")
      .def(py::init([](std::size_t max_seq_len, std::size_t embed_dim, const std::string& init,
                       double stddev, std::uint64_t seed) {
             return Layer(max_seq_len, embed_dim, Initializer::parse(init, stddev, seed));
           }),
           py::arg("max_seq_len"), py::arg("embed_dim"), py::arg("init") = "normal",
           py::arg("stddev") = 0.02, py::arg("seed") = 0)
      .def_static(
          "from_table",
          [](const py::array& table) {
            return Layer(
                Matrix<float>(matrix_in<float>(table, "LearnedPositionalEmbedding", "table")));
          },
          py::arg("table"),
          "A layer around a copy of table (a pretrained one); the gradient is zero. Raises "
          "ValueError for an empty table or one holding NaN or infinity.")
      .def_property_readonly("max_seq_len", &Layer::max_seq_len)
      .def_property_readonly("embed_dim", &Layer::embed_dim)
      .def_property_readonly(
          "table",
          [](py::object self) { return array_over(self.cast<Layer&>().table(), self, true); },
          "The (max_seq_len, embed_dim) table, a writable view.")
      .def_property_readonly(
          "grad",
          [](py::object self) { return array_over(self.cast<Layer&>().grad(), self, true); },
          "The gradient, a writable view of the same shape.")
      .def(
          "forward",
          [](py::object self, std::size_t seq_len, std::size_t start) {
            return array_over(self.cast<const Layer&>().forward(seq_len, start), self, false);
          },
          py::arg("seq_len"), py::arg("start") = 0,
          "Rows [start, start + seq_len) of the table, a read-only view. Raises SequenceTooLong "
          "past the table.")
      .def(
          "forward_add",
          [](const Layer& layer, const py::array& x, const Positions* positions) {
            constexpr const char* op = "LearnedPositionalEmbedding.forward_add";
            const Activations<float> xa = activations_out<float>(x, op, "x");
            const PositionSource& src = source_or_default(positions);
            without_gil([&] { layer.forward_add(xa.rows, xa.batch, xa.seq_len, src); });
          },
          py::arg("x"), py::arg("positions") = py::none(),
          "x[b, t] += table[pos[b, t]] in place; x (B, T, C) float32.")
      .def(
          "backward_add",
          [](Layer& layer, const py::array& dx, const Positions* positions) {
            constexpr const char* op = "LearnedPositionalEmbedding.backward_add";
            const Activations<const float> d = activations_in<float>(dx, op, "dx");
            const PositionSource& src = source_or_default(positions);
            without_gil([&] { layer.backward_add(d.rows, d.batch, d.seq_len, src); });
          },
          py::arg("dx"), py::arg("positions") = py::none(),
          "grad[pos[b, t]] += dx[b, t] (ADDS into grad); dx (B, T, C) float32.")
      .def("zero_grad", &Layer::zero_grad,
           "Sets grad to zero, recording the rows whose gradient was non-zero as trained.")
      .def("untrained_rows", &Layer::untrained_rows,
           "Rows that have never received a non-zero gradient, ascending.")
      .def("row_trained", &Layer::row_trained, py::arg("row"));
}

}  // namespace posemb::python
