// Rotary position embedding (RoPE) of queries or keys (B, T, H, D), in place.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <optional>
#include <string>

#include "arrays.hpp"
#include "bindings.hpp"
#include "posemb/memory.hpp"
#include "posemb/rope.hpp"
#include "posemb/rope_config.hpp"
#include "posemb/rope_precision.hpp"
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

Heads heads_of(py::array& x, const char* op, const char* name) {
  expect_dtype<float>(x, op, name);
  expect_writeable(x, op, name);
  if (x.ndim() != 4) {
    throw py::value_error(std::string(op) + ": " + name +
                          " must have 4 dimensions (B, T, H, D), got " + std::to_string(x.ndim()));
  }
  Heads h;
  h.batch = static_cast<std::size_t>(x.shape(0));
  h.seq_len = static_cast<std::size_t>(x.shape(1));
  h.heads = static_cast<std::size_t>(x.shape(2));
  h.head_dim = static_cast<std::size_t>(x.shape(3));
  const auto item = static_cast<py::ssize_t>(sizeof(float));
  const std::size_t cols =
      checked_mul(h.heads, h.head_dim, op, std::string(name) + "'s columns H*D");
  const std::size_t rows = checked_mul(h.batch, h.seq_len, op, std::string(name) + "'s rows B*T");
  if (h.batch == 0 || h.seq_len == 0 || cols == 0) {
    // No token (numpy gives an empty array zero strides) or no column: nothing to place; the
    // library checks the shape (heads 0, D 0) and rotates nothing.
    h.rows = MatrixView<float>(static_cast<float*>(x.mutable_data()), rows, cols, cols);
    return h;
  }
  // The (H, D) of a token must be one contiguous row; (B, T) must collapse into one stride.
  const bool heads_contiguous = (h.head_dim <= 1 || x.strides(3) == item) &&
                                (h.heads <= 1 || x.strides(2) == x.shape(3) * item);
  const py::ssize_t row = x.strides(1);
  const bool rows_even = h.batch <= 1 || h.seq_len <= 1 || x.strides(0) == x.shape(1) * row;
  if (!heads_contiguous || !rows_even || row < 0 || row % item != 0 || x.strides(0) < 0 ||
      x.strides(0) % item != 0) {
    throw py::value_error(std::string(op) + ": " + name +
                          " must hold each token's heads contiguously and the tokens at one "
                          "stride (a C-order array, or a slice of one along T); pass "
                          "np.ascontiguousarray(" +
                          name + ")");
  }
  // The stride between consecutive tokens (any value serves a single token per row of B).
  std::size_t stride = cols;
  if (h.seq_len > 1) {
    stride = static_cast<std::size_t>(row / item);
  } else if (h.batch > 1) {
    stride = static_cast<std::size_t>(x.strides(0) / item);
  }
  h.rows = MatrixView<float>(static_cast<float*>(x.mutable_data()), rows, cols, stride);
  return h;
}

// A Hugging Face config (a dict, or its JSON text) read by posemb's config reader; its
// warnings (keys it did not use) as Python UserWarnings.
RopeConfig config_of(const py::object& config) {
  const std::string text =
      py::isinstance<py::str>(config)
          ? config.cast<std::string>()
          : py::module_::import("json").attr("dumps")(config).cast<std::string>();
  RopeConfig c = parse_rope_config(text, "config");
  for (const std::string& w : c.warnings) py::module_::import("warnings").attr("warn")(w);
  return c;
}

Rope rope_of(const char* op, const Heads& h, const std::string& layout, double base,
             std::size_t rotary_dim, const py::object& config, std::optional<std::size_t> seq_len) {
  if (config.is_none()) {
    return Rope(h.head_dim, layout_of(layout, op),
                RopeOptions{base, rotary_dim, {}, seq_len.value_or(0)});
  }
  if (base != 10000.0 || rotary_dim != 0) {
    throw py::value_error(std::string(op) + ": pass base and rotary_dim, or a config, not both");
  }
  const RopeConfig c = config_of(config);
  if (c.head_dim != h.head_dim) {
    throw py::value_error(std::string(op) + ": x has heads of D = " + std::to_string(h.head_dim) +
                          " columns, the config's head_dim is " + std::to_string(c.head_dim));
  }
  return c.rope(layout_of(layout, op), seq_len.value_or(0));
}

template <bool Forward>
void rotate(py::array x, const std::string& layout, const Positions* positions, double base,
            std::size_t rotary_dim, const py::object& config, std::optional<std::size_t> seq_len) {
  constexpr const char* op = Forward ? "rope_forward" : "rope_backward";
  const Heads h = heads_of(x, op, Forward ? "x" : "dx");
  const Rope rope = rope_of(op, h, layout, base, rotary_dim, config, seq_len);
  const PositionSource& src = source_or_default(positions);
  without_gil([&] {
    if constexpr (Forward) {
      posemb::rope_forward(h.rows, h.heads, h.batch, h.seq_len, src, rope);
    } else {
      posemb::rope_backward(h.rows, h.heads, h.batch, h.seq_len, src, rope);
    }
  });
}

py::tuple frequencies(const py::object& config, std::optional<std::size_t> seq_len) {
  const RopeConfig c = config_of(config);
  const RopeFrequencies f = rope_frequencies(c.base, c.rotary_dim, c.scaling, seq_len.value_or(0));
  py::array_t<double> inv(static_cast<py::ssize_t>(f.inv_freq.size()));
  for (std::size_t i = 0; i < f.inv_freq.size(); ++i) {
    inv.mutable_at(static_cast<py::ssize_t>(i)) = static_cast<double>(f.inv_freq[i]);
  }
  return py::make_tuple(inv, f.attention_factor);
}

py::dict precision(const py::object& config, std::optional<std::size_t> positions,
                   double threshold) {
  const RopeConfig c = config_of(config);
  const Rope rope = c.rope(RopeLayout::half);
  const std::size_t n = positions.value_or(c.extended_length());
  const auto report = without_gil([&] { return rope_angle_precision(rope, n, threshold); });
  py::dict out;
  for (const AnglePrecision& a : report) {
    py::dict d;
    d["max_error"] = a.max_error;
    d["worst_position"] = a.worst_position;
    d["worst_pair"] = a.worst_pair;
    d["first_over"] = a.first_over < n ? py::object(py::int_(a.first_over)) : py::none();
    d["first_overflow"] =
        a.first_overflow < n ? py::object(py::int_(a.first_overflow)) : py::none();
    py::list by_length;
    for (const AngleErrorUpTo& u : a.by_length)
      by_length.append(py::make_tuple(u.upto, u.max_error));
    d["by_length"] = by_length;
    out[py::str(std::string(angle_format_name(a.format)))] = d;
  }
  return out;
}

}  // namespace

void bind_rope(py::module_& m) {
  m.def("rope_forward", &rotate<true>, py::arg("x"), py::arg("layout"),
        py::arg("positions") = py::none(), py::kw_only(), py::arg("base") = 10000.0,
        py::arg("rotary_dim") = 0, py::arg("config") = py::none(), py::arg("seq_len") = py::none(),
        R"(Rotates queries or keys x (B, T, H, D) float32 in place by their positions' angles.

Pair i of each head (the first rotary_dim columns; 0: all D) turns by p * base^(-2i/rotary_dim),
p the token's position from positions (a PositionSource; None: contiguous from 0). layout
'interleaved' pairs columns (2i, 2i+1) (RoFormer, GPT-J); 'half' pairs (i, i + D/2) (GPT-NeoX,
HF Llama): a checkpoint trained with one is wrong with the other, so there is no default. Pads
of a padding mask are left as they are. Angles are formed in double (long double past 2^24):
within 3e-7 of the exact rotation at any position. Raises ValueError for an odd D or
rotary_dim, a bad base or layout; IndexError for a negative explicit id. Nothing is written
when it raises. Runs with the GIL released.

config: a Hugging Face config.json as a dict (or its JSON text) instead of base and rotary_dim:
its rope_theta, head_dim (checked against D), partial_rotary_factor and rope_scaling (linear,
dynamic, yarn, llama3, longrope; its attention factor multiplies cos and sin). seq_len: the
sequence length the frequencies are for (dynamic, longrope; None: the trained length). A bad
config raises posemb.FileFormatError naming the key; keys it does not use are UserWarnings.)");
  m.def("rope_backward", &rotate<false>, py::arg("dx"), py::arg("layout"),
        py::arg("positions") = py::none(), py::kw_only(), py::arg("base") = 10000.0,
        py::arg("rotary_dim") = 0, py::arg("config") = py::none(), py::arg("seq_len") = py::none(),
        R"(The backward of rope_forward, in place: dx (B, T, H, D) holds dL/d(rotated x) and is
written over with dL/dx (the inverse rotation). Same arguments and errors as rope_forward.)");
  m.def("rope_frequencies", &frequencies, py::arg("config"), py::arg("seq_len") = py::none(),
        R"((inv_freq, attention_factor) of a Hugging Face config.json (a dict or its JSON text):
inv_freq a float64 array of rotary_dim / 2 inverse frequencies (computed in long double,
rounded once), attention_factor the float that multiplies cos and sin. seq_len: the sequence
length (dynamic, longrope; None: the trained length, as transformers computes at start).
transformers' ROPE_INIT_FUNCTIONS[rope_type](config, device, seq_len), in float64. Raises
posemb.FileFormatError naming the key of a bad config; keys it does not use are UserWarnings.)");
  m.def("rope_angle_precision", &precision, py::arg("config"), py::arg("positions") = py::none(),
        py::arg("threshold") = 1e-3,
        R"(How far angles formed in float32, bfloat16 and float16 drift from posemb's (long
double) at positions [0, positions) (None: the config's extended length): a dict from format
name to max_error (radians, up to pi), worst_position, worst_pair, first_over (the first
position with an error over threshold, or None), first_overflow (None unless float16 overflows)
and by_length [(upto, max_error), ...].)");
}

}  // namespace posemb::python
