// The fused token + position embedding and the position-only add, forward and backward, on
// numpy arrays: activations are (B, T, C), tables (rows, C), tokens (B, T).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "arrays.hpp"
#include "bindings.hpp"
#include "posemb/embedding.hpp"
#include "posemb/parallel.hpp"
#include "positions.hpp"

namespace posemb::python {
namespace {

using OptArray = std::optional<py::array>;

// A table of bfloat16 bits: numpy has no bfloat16, so an int16 or uint16 array holding them
// (torch: t.view(torch.int16).numpy()), read as the library's bfloat16, no copy.
MatrixView<const bfloat16> bfloat16_in(const py::array& a, const char* op, const char* name) {
  static_assert(sizeof(bfloat16) == sizeof(std::uint16_t));
  if (!has_dtype<std::int16_t>(a) && !has_dtype<std::uint16_t>(a)) {
    throw py::type_error(std::string(op) + ": " + name +
                         " must be an int16 or uint16 array of bfloat16 bits (bfloat16=True), "
                         "got " +
                         dtype_name(a));
  }
  const RowsLayout l = rows_layout(a, 2, sizeof(bfloat16), op, name);
  return MatrixView<const bfloat16>(static_cast<const bfloat16*>(l.data), l.rows, l.cols, l.stride);
}

template <class E>
MatrixView<const E> table_in(const py::array& a, const char* op, const char* name) {
  if constexpr (std::is_same_v<E, bfloat16>) {
    return bfloat16_in(a, op, name);
  } else {
    return matrix_in<E>(a, op, name);
  }
}

// The forward from tables of element type E (float32, or float16 / bfloat16: widened exactly).
template <class E>
py::array embed_forward_from(const py::array& tokens, const py::array& wte, const OptArray& wpe,
                             const Positions* positions, const OptArray& out) {
  constexpr const char* op = "embed_forward";
  const MatrixView<const E> wte_v = table_in<E>(wte, op, "wte");
  const Tokens tk = tokens_in(tokens, op, wte_v.rows());
  const std::size_t B = tk.view.rows(), T = tk.view.cols();
  py::array result =
      out ? *out
          : py::array_t<float>({static_cast<py::ssize_t>(B), static_cast<py::ssize_t>(T),
                                static_cast<py::ssize_t>(wte_v.cols())});
  const Activations<float> o = activations_out<float>(result, op, "out");
  expect_batch(op, "out", o.batch, o.seq_len, B, T);
  if (wpe) {
    const MatrixView<const E> wpe_v = table_in<E>(*wpe, op, "wpe");
    const PositionSource& src = source_or_default(positions);
    without_gil([&] { posemb::embed_forward(o.rows, tk.view, src, wte_v, wpe_v); });
  } else {
    if (positions != nullptr) {
      throw py::value_error(std::string(op) + ": positions given without wpe");
    }
    without_gil([&] { posemb::embed_forward(o.rows, tk.view, wte_v); });
  }
  return result;
}

py::array embed_forward(const py::array& tokens, const py::array& wte, const OptArray& wpe,
                        const Positions* positions, const OptArray& out, bool bfloat16_bits) {
  if (bfloat16_bits) return embed_forward_from<bfloat16>(tokens, wte, wpe, positions, out);
  if (has_dtype<float16>(wte)) return embed_forward_from<float16>(tokens, wte, wpe, positions, out);
  return embed_forward_from<float>(tokens, wte, wpe, positions, out);
}

void embed_backward(const py::array& dwte, const OptArray& dwpe, const py::array& dout,
                    const py::array& tokens, const Positions* positions) {
  constexpr const char* op = "embed_backward";
  const MatrixView<float> dwte_v = matrix_out<float>(dwte, op, "dwte");
  const Tokens tk = tokens_in(tokens, op, dwte_v.rows());
  const Activations<const float> d = activations_in<float>(dout, op, "dout");
  expect_batch(op, "dout", d.batch, d.seq_len, tk.view.rows(), tk.view.cols());
  if (dwpe) {
    const MatrixView<float> dwpe_v = matrix_out<float>(*dwpe, op, "dwpe");
    const PositionSource& src = source_or_default(positions);
    without_gil([&] { posemb::embed_backward(dwte_v, dwpe_v, d.rows, tk.view, src); });
  } else {
    if (positions != nullptr) {
      throw py::value_error(std::string(op) + ": positions given without dwpe");
    }
    without_gil([&] { posemb::embed_backward(dwte_v, d.rows, tk.view); });
  }
}

void add_positions_forward(const py::array& x, const py::array& wpe, const Positions* positions) {
  constexpr const char* op = "add_positions_forward";
  const Activations<float> xa = activations_out<float>(x, op, "x");
  const MatrixView<const float> wpe_v = matrix_in<float>(wpe, op, "wpe");
  const PositionSource& src = source_or_default(positions);
  without_gil([&] { posemb::add_positions_forward(xa.rows, xa.batch, xa.seq_len, src, wpe_v); });
}

void add_positions_backward(const py::array& dwpe, const py::array& dx,
                            const Positions* positions) {
  constexpr const char* op = "add_positions_backward";
  const MatrixView<float> dwpe_v = matrix_out<float>(dwpe, op, "dwpe");
  const Activations<const float> d = activations_in<float>(dx, op, "dx");
  const PositionSource& src = source_or_default(positions);
  without_gil([&] { posemb::add_positions_backward(dwpe_v, d.rows, d.batch, d.seq_len, src); });
}

// Writes zeros over the rows of g that tokens name (g freshly mapped: each page faults once,
// on the calling thread and posemb's helpers at once, before the backward adds into them).
// The ids are copied and every one checked against g's rows before anything is written: the
// loop reads only the checked copy.
void zero_rows(const py::array& g, const py::array& tokens) {
  constexpr const char* op = "_zero_rows";
  const MatrixView<float> gv = matrix_out<float>(g, op, "g");
  const Tokens tk = tokens_in(tokens, op, gv.rows());
  Matrix<TokenId> ids(tk.view.rows(), tk.view.cols());
  for (std::size_t b = 0; b < ids.rows(); ++b) {
    for (std::size_t t = 0; t < ids.cols(); ++t) {
      const TokenId id = tk.view(b, t);
      if (id < 0 || static_cast<std::size_t>(id) >= gv.rows()) {
        throw std::out_of_range(std::string(op) + ": token id " + std::to_string(id) +
                                " at batch row " + std::to_string(b) + ", token " +
                                std::to_string(t) + " is outside the " + std::to_string(gv.rows()) +
                                " rows of g");
      }
      ids(b, t) = id;
    }
  }
  const std::size_t n = ids.size(), cols = gv.cols();
  without_gil([&] {
    posemb::parallel_for(n, 64, n * cols, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const auto id = static_cast<std::size_t>(ids.flat()[i]);
        std::fill_n(gv.row(id).data(), cols, 0.0f);
      }
    });
  });
}

}  // namespace

void bind_embedding(py::module_& m) {
  m.def("_zero_rows", &zero_rows, py::arg("g"), py::arg("tokens"),
        "Internal (posemb.torch): zeros over the rows of g that tokens name, on posemb's threads.");
  m.def("embed_forward", &embed_forward, py::arg("tokens"), py::arg("wte"),
        py::arg("wpe") = py::none(), py::arg("positions") = py::none(), py::kw_only(),
        py::arg("out") = py::none(), py::arg("bfloat16") = false,
        R"(out[b, t] = wte[tokens[b, t]] + wpe[pos[b, t]] (GPT-2's input layer); returns out.

tokens (B, T) int32 (or int64, narrowed); wte (V, C) and wpe (max_seq_len, C) float32, or both
float16 (widened exactly: the same bits as the float32 forward on the widened tables);
with bfloat16=True, both int16 or uint16 arrays holding bfloat16 bits (numpy has no bfloat16;
torch: t.view(torch.int16).numpy()), widened exactly;
positions a PositionSource (None: contiguous from 0); pads of a padding mask get the wte row
only. Without wpe (and positions), out[b, t] = wte[tokens[b, t]]. out (B, T, C) float32 is
written over (allocated when None). Everything is validated before anything is written:
IndexError for a token id outside the vocabulary, SequenceTooLong for a position past wpe,
ValueError for shape mismatches or an empty batch. Runs with the GIL released.)");

  m.def("embed_backward", &embed_backward, py::arg("dwte"), py::arg("dwpe"), py::arg("dout"),
        py::arg("tokens"), py::arg("positions") = py::none(),
        R"(dwte[tokens[b, t]] += dout[b, t]; dwpe[pos[b, t]] += dout[b, t] (pads: dwte only).

ADDS into dwte (V, C) and dwpe (max_seq_len, C) (dwpe None: the token-only backward); dout
(B, T, C) float32. Bitwise identical for any thread count. Raises like embed_forward and
writes nothing when it raises. Runs with the GIL released.)");

  m.def("add_positions_forward", &add_positions_forward, py::arg("x"), py::arg("wpe"),
        py::arg("positions") = py::none(),
        R"(x[b, t] += wpe[pos[b, t]], in place. x (B, T, C) float32, added into; wpe
(max_seq_len, C).)");

  m.def("add_positions_backward", &add_positions_backward, py::arg("dwpe"), py::arg("dx"),
        py::arg("positions") = py::none(),
        R"(dwpe[pos[b, t]] += dx[b, t]. ADDS into dwpe (max_seq_len, C); dx (B, T, C) float32.
Bitwise identical for any thread count.)");
}

}  // namespace posemb::python
