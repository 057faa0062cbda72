// Rotary position embedding (RoPE) of queries or keys (B, T, H, D), in place.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>

#include "arrays.hpp"
#include "bindings.hpp"
#include "posemb/rope.hpp"
#include "positions.hpp"

namespace posemb::python {
namespace {

RopeLayout layout_of(const std::string& name, const char* op) {
  if (name == "interleaved") return RopeLayout::interleaved;
  if (name == "half") return RopeLayout::half;
  throw py::value_error(std::string(op) +
                        ": layout must be 'interleaved' (pairs (2i, 2i+1): "
                        "RoFormer, GPT-J) or 'half' (pairs (i, i + D/2): "
                        "GPT-NeoX, HF Llama), got " +
                        py::repr(py::str(name)).cast<std::string>());
}

// x (B, T, H, D) float32 as the library's (B*T, H*D) rows: each token's heads contiguous.
struct Heads {
  MatrixView<float> rows;
  std::size_t batch = 0, seq_len = 0, heads = 0, head_dim = 0;
};

Heads heads_of(py::array& x, const char* op) {
  expect_dtype<float>(x, op, "x");
  expect_writeable(x, op, "x");
  if (x.ndim() != 4) {
    throw py::value_error(std::string(op) + ": x must have 4 dimensions (B, T, H, D), got " +
                          std::to_string(x.ndim()));
  }
  Heads h;
  h.batch = static_cast<std::size_t>(x.shape(0));
  h.seq_len = static_cast<std::size_t>(x.shape(1));
  h.heads = static_cast<std::size_t>(x.shape(2));
  h.head_dim = static_cast<std::size_t>(x.shape(3));
  const auto item = static_cast<py::ssize_t>(sizeof(float));
  // The (H, D) of a token must be one contiguous row; (B, T) must collapse into one stride.
  const bool heads_contiguous = (h.head_dim <= 1 || x.strides(3) == item) &&
                                (h.heads <= 1 || x.strides(2) == x.shape(3) * item);
  const py::ssize_t row = x.strides(1);
  const bool rows_even = h.batch <= 1 || h.seq_len <= 1 || x.strides(0) == x.shape(1) * row;
  if (!heads_contiguous || !rows_even || row < 0 || row % item != 0 || x.strides(0) < 0 ||
      x.strides(0) % item != 0) {
    throw py::value_error(std::string(op) +
                          ": x must hold each token's heads contiguously and the tokens at one "
                          "stride (a C-order array, or a slice of one along T); pass "
                          "np.ascontiguousarray(x)");
  }
  const std::size_t cols = h.heads * h.head_dim;
  // The stride between consecutive tokens (any value serves a single token per row of B).
  std::size_t stride = cols;
  if (h.seq_len > 1) {
    stride = static_cast<std::size_t>(row / item);
  } else if (h.batch > 1) {
    stride = static_cast<std::size_t>(x.strides(0) / item);
  }
  h.rows =
      MatrixView<float>(static_cast<float*>(x.mutable_data()), h.batch * h.seq_len, cols, stride);
  return h;
}

template <bool Forward>
void rotate(py::array x, const std::string& layout, const Positions* positions, double base,
            std::size_t rotary_dim) {
  constexpr const char* op = Forward ? "rope_forward" : "rope_backward";
  const Heads h = heads_of(x, op);
  const Rope rope(h.head_dim, layout_of(layout, op), RopeOptions{base, rotary_dim});
  const PositionSource& src = source_or_default(positions);
  without_gil([&] {
    if constexpr (Forward) {
      posemb::rope_forward(h.rows, h.heads, h.batch, h.seq_len, src, rope);
    } else {
      posemb::rope_backward(h.rows, h.heads, h.batch, h.seq_len, src, rope);
    }
  });
}

}  // namespace

void bind_rope(py::module_& m) {
  m.def("rope_forward", &rotate<true>, py::arg("x"), py::arg("layout"),
        py::arg("positions") = py::none(), py::kw_only(), py::arg("base") = 10000.0,
        py::arg("rotary_dim") = 0,
        R"(Rotates queries or keys x (B, T, H, D) float32 in place by their positions' angles.

Pair i of each head (the first rotary_dim columns; 0: all D) turns by p * base^(-2i/rotary_dim),
p the token's position from positions (a PositionSource; None: contiguous from 0). layout
'interleaved' pairs columns (2i, 2i+1) (RoFormer, GPT-J); 'half' pairs (i, i + D/2) (GPT-NeoX,
HF Llama): a checkpoint trained with one is wrong with the other, so there is no default. Pads
of a padding mask are left as they are. Angles are formed in double (long double past 2^24):
within 3e-7 of the exact rotation at any position. Raises ValueError for an odd D or
rotary_dim, a bad base or layout; IndexError for a negative explicit id. Nothing is written
when it raises. Runs with the GIL released.)");
  m.def("rope_backward", &rotate<false>, py::arg("dx"), py::arg("layout"),
        py::arg("positions") = py::none(), py::kw_only(), py::arg("base") = 10000.0,
        py::arg("rotary_dim") = 0,
        R"(The backward of rope_forward, in place: dx (B, T, H, D) holds dL/d(rotated x) and is
written over with dL/dx (the inverse rotation). Same arguments and errors as rope_forward.)");
}

}  // namespace posemb::python
