// ALiBi: the slopes of Press et al. and the bias added into attention scores (B, H, Tq, Tk), in
// place.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "posemb/alibi.hpp"
#include "posemb/matrix.hpp"
#include "posemb/memory.hpp"

namespace posemb::python {
namespace {

AlibiOptions options_of(const std::string& form, std::size_t start, const char* op) {
  if (form == "causal") return {AlibiForm::causal, start};
  if (form == "symmetric") return {AlibiForm::symmetric, start};
  throw py::value_error(std::string(op) +
                        ": form must be 'causal' (decoders: keys after the query masked) or "
                        "'symmetric' (encoders: -m |i - j|), got " +
                        py::repr(py::str(form)).cast<std::string>());
}

// scores (B, H, Tq, Tk) float32 as the library's (B*H*Tq, Tk) rows.
struct Scores {
  MatrixView<float> rows;
  std::size_t batch = 0, heads = 0, queries = 0;
};

// B*H*Tq, formed checked (the shape comes from the caller).
std::size_t rows_of(const Scores& s, const char* op, const char* name) {
  const std::string what = std::string(name) + "'s rows B*H*Tq";
  return checked_mul(checked_mul(s.batch, s.heads, op, what), s.queries, op, what);
}

Scores scores_of(py::array& a, const char* op, const char* name) {
  expect_dtype<float>(a, op, name);
  expect_writeable(a, op, name);
  if (a.ndim() != 4) {
    throw py::value_error(std::string(op) + ": " + name +
                          " must have 4 dimensions (B, H, Tq, Tk), got " +
                          std::to_string(a.ndim()));
  }
  Scores s;
  s.batch = static_cast<std::size_t>(a.shape(0));
  s.heads = static_cast<std::size_t>(a.shape(1));
  s.queries = static_cast<std::size_t>(a.shape(2));
  const auto keys = static_cast<std::size_t>(a.shape(3));
  const auto item = static_cast<py::ssize_t>(sizeof(float));
  if (a.size() == 0) {  // numpy gives an empty array zero strides: the library checks the shape
    s.rows =
        MatrixView<float>(static_cast<float*>(a.mutable_data()), rows_of(s, op, name), keys, keys);
    return s;
  }
  // Each row (Tk) contiguous, and (B, H, Tq) collapsing into one row stride.
  const py::ssize_t row = a.strides(2);
  const bool ok = (keys <= 1 || a.strides(3) == item) && row >= 0 && row % item == 0 &&
                  (s.heads <= 1 || a.strides(1) == a.shape(2) * row) &&
                  (s.batch <= 1 || a.strides(0) == a.shape(1) * a.shape(2) * row);
  if (!ok) {
    throw py::value_error(std::string(op) + ": " + name +
                          " must be a C-order array (or a slice of one along Tk); pass "
                          "np.ascontiguousarray(" +
                          name + ")");
  }
  std::size_t stride = keys;
  if (s.queries > 1) stride = static_cast<std::size_t>(row / item);
  s.rows =
      MatrixView<float>(static_cast<float*>(a.mutable_data()), rows_of(s, op, name), keys, stride);
  return s;
}

// A (H,) float32 array as a span (a copy: H values).
std::vector<float> slopes_of(const py::array& a, std::size_t heads, const char* op) {
  expect_dtype<float>(a, op, "slopes");
  if (a.ndim() != 1 || static_cast<std::size_t>(a.shape(0)) != heads) {
    throw py::value_error(std::string(op) + ": slopes must have shape (H,) = (" +
                          std::to_string(heads) + ",), one per head of scores");
  }
  const auto u = py::array_t<float, py::array::forcecast>(a);
  return std::vector<float>(u.data(), u.data() + heads);
}

py::array slopes(std::size_t heads) {
  const std::vector<float> s = alibi_slopes(heads);
  Matrix<float> m(1, s.size());
  std::copy(s.begin(), s.end(), m.data());
  py::array out = array_owning(std::move(m));
  return out.attr("reshape")(py::make_tuple(static_cast<py::ssize_t>(heads)));
}

void forward(py::array scores, std::optional<py::array> slopes, const std::string& form,
             std::size_t start) {
  constexpr const char* op = "alibi_forward";
  const Scores s = scores_of(scores, op, "scores");
  const AlibiOptions o = options_of(form, start, op);
  const std::vector<float> m = slopes         ? slopes_of(*slopes, s.heads, op)
                               : s.heads == 0 ? std::vector<float>{}
                                              : alibi_slopes(s.heads);
  without_gil([&] { alibi_forward(s.rows, m, s.batch, s.queries, o); });
}

void backward(py::array dscores, std::optional<py::array> dslopes, const std::string& form,
              std::size_t start) {
  constexpr const char* op = "alibi_backward";
  const Scores s = scores_of(dscores, op, "dscores");
  const AlibiOptions o = options_of(form, start, op);
  std::span<float> d;
  if (dslopes) {
    expect_dtype<float>(*dslopes, op, "dslopes");
    expect_writeable(*dslopes, op, "dslopes");
    if (dslopes->ndim() != 1 || static_cast<std::size_t>(dslopes->shape(0)) != s.heads ||
        (s.heads > 1 && dslopes->strides(0) != static_cast<py::ssize_t>(sizeof(float)))) {
      throw py::value_error(std::string(op) + ": dslopes must be a contiguous (H,) = (" +
                            std::to_string(s.heads) + ",) array, one per head of dscores");
    }
    d = {static_cast<float*>(dslopes->mutable_data()), s.heads};
  }
  without_gil([&] { alibi_backward(s.rows, d, s.heads, s.batch, s.queries, o); });
}

}  // namespace

void bind_alibi(py::module_& m) {
  m.def("alibi_slopes", &slopes, py::arg("n_heads"),
        R"(The ALiBi slopes of Press et al. for n_heads heads: a float32 array (n_heads,).

For a power of two n, 2^(-8h/n) for h = 1..n; otherwise the slopes of the largest power of two
n' below n_heads, then the slopes 1, 3, 5, ... of 2n' (the paper's get_slopes, BLOOM's
build_alibi_tensor). Each is the float32 nearest to its exact value. Raises ValueError for 0.)");
  m.def("alibi_forward", &forward, py::arg("scores"), py::arg("slopes") = py::none(), py::kw_only(),
        py::arg("form") = "causal", py::arg("start") = 0,
        R"(Adds the ALiBi bias into attention scores (B, H, Tq, Tk) float32, in place.

Query i is at position start + i, key j at j, d = start + i - j; head h's slope m (slopes, a
float32 (H,) array; None: alibi_slopes(H)). form 'causal': scores += -m*d for j <= start + i,
-inf for later keys (the causal mask); 'symmetric': scores += -m*|d| for every key. Raises
ValueError for a bad shape, slope or form; nothing is written then. Runs without the GIL.)");
  m.def("alibi_backward", &backward, py::arg("dscores"), py::arg("dslopes") = py::none(),
        py::kw_only(), py::arg("form") = "causal", py::arg("start") = 0,
        R"(The backward of alibi_forward, in place: dscores (B, H, Tq, Tk) is left as it is
but for the masked keys of the causal form (set to 0); dslopes (a float32 (H,) array), when
given, gets dL/dslopes added into it. Same arguments and errors as alibi_forward.)");
}

}  // namespace posemb::python
