// T5's relative position bias: the bucket function on ints and integer arrays, the bias
// (H, Tq, Tk) from a (num_buckets, H) table and its gradient back into the table.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include "arrays.hpp"
#include "bindings.hpp"
#include "posemb/matrix.hpp"
#include "posemb/memory.hpp"
#include "posemb/relative_bias.hpp"

namespace posemb::python {
namespace {

RelativeBuckets buckets_of(bool bidirectional, std::size_t num_buckets, std::size_t max_distance) {
  return {.num_buckets = num_buckets, .max_distance = max_distance, .bidirectional = bidirectional};
}

// relative_position as int64 values: a Python int gives an int back, an integer array (or a
// numpy integer scalar) an int64 array of its shape.
py::object bucket(const py::object& relative_position, bool bidirectional, std::size_t num_buckets,
                  std::size_t max_distance) {
  constexpr const char* op = "t5_relative_bucket";
  const RelativeBuckets b = buckets_of(bidirectional, num_buckets, max_distance);
  const bool is_bool = py::isinstance<py::bool_>(relative_position);
  if (py::isinstance<py::int_>(relative_position) && !is_bool) {
    std::int64_t value = 0;
    try {
      value = relative_position.cast<std::int64_t>();
    } catch (const py::cast_error&) {
      throw py::value_error(std::string(op) + ": relative position " +
                            py::str(relative_position).cast<std::string>() +
                            " is beyond int64 (relative positions are int64, as in torch)");
    }
    return py::int_(t5_relative_bucket(value, b));
  }
  const py::array given = is_bool ? py::array() : py::array::ensure(relative_position);
  if (is_bool || !given || (given.dtype().kind() != 'i' && given.dtype().kind() != 'u')) {
    const std::string type =
        py::str(py::type::of(relative_position).attr("__name__")).cast<std::string>();
    throw py::type_error(
        std::string(op) +
        ": relative_position must be an int or an array of integers (key - "
        "query), got " +
        (py::isinstance<py::array>(relative_position) ? "an array of " + dtype_name(given) : type));
  }
  if (given.dtype().kind() == 'u' && given.dtype().itemsize() == 8 && given.size() != 0) {
    const auto big = py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>(given);
    const std::uint64_t* v = big.data();
    for (py::ssize_t k = 0; k < big.size(); ++k) {
      if (v[k] > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        throw py::value_error(std::string(op) + ": relative position " + std::to_string(v[k]) +
                              " is beyond int64 (relative positions are int64, as in torch)");
      }
    }
  }
  const auto in = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>(given);
  py::array_t<std::int64_t> out(std::vector<py::ssize_t>(in.shape(), in.shape() + in.ndim()));
  const std::span<const std::int64_t> rel(in.data(), static_cast<std::size_t>(in.size()));
  const std::span<std::int64_t> dst(out.mutable_data(), static_cast<std::size_t>(out.size()));
  without_gil([&] { t5_relative_buckets(dst, rel, b); });
  return out;
}

py::array forward(const py::array& table, std::size_t query_length, std::size_t key_length,
                  bool bidirectional, std::size_t max_distance, std::size_t query_start,
                  std::size_t key_start, std::optional<py::array> out) {
  constexpr const char* op = "relative_bias_forward";
  const MatrixView<const float> t = matrix_in<float>(table, op, "table");
  const RelativeBuckets b = buckets_of(bidirectional, t.rows(), max_distance);
  const std::size_t heads = t.cols();
  const RelativeBiasOptions options{.query_start = query_start, .key_start = key_start};
  // Every argument but the output checked before one is allocated: an empty bias (no query)
  // with the table and the options.
  relative_bias_forward(MatrixView<float>(nullptr, 0, key_length), t, b, 0, options);
  py::array result;
  MatrixView<float> bias;
  if (out) {
    const Activations<float> o = activations_out<float>(*out, op, "out");
    if (o.batch != heads || o.seq_len != query_length || o.rows.cols() != key_length) {
      throw py::value_error(std::string(op) + ": out must have shape (H, Tq, Tk) = (" +
                            std::to_string(heads) + ", " + std::to_string(query_length) + ", " +
                            std::to_string(key_length) + ")");
    }
    bias = o.rows;
    result = *out;
  } else {
    // H x Tq checked where it is formed: a wrapped product would allocate a small buffer (the
    // library then refuses it, but only after the allocation).
    Matrix<float> m(checked_mul(heads, query_length, op, "the bias rows (H x Tq)"), key_length);
    result = array_owning(std::move(m));
    bias = matrix_out<float>(result, op, "out");  // (H*Tq, Tk)
    result = result.attr("reshape")(py::make_tuple(heads, query_length, key_length));
  }
  without_gil([&] { relative_bias_forward(bias, t, b, query_length, options); });
  return result;
}

py::array backward(const py::array& dbias, std::size_t num_buckets, bool bidirectional,
                   std::size_t max_distance, std::size_t query_start, std::size_t key_start,
                   std::optional<py::array> dtable) {
  constexpr const char* op = "relative_bias_backward";
  const Activations<const float> d = activations_in<float>(dbias, op, "dbias");
  const RelativeBuckets b = buckets_of(bidirectional, num_buckets, max_distance);
  const std::size_t heads = d.batch, queries = d.seq_len;
  const RelativeBiasOptions options{.query_start = query_start, .key_start = key_start};
  // The bucketing and the options checked before dtable is allocated: a table of no heads
  // against no gradient.
  relative_bias_backward(MatrixView<float>(nullptr, num_buckets, 0),
                         MatrixView<const float>(nullptr, 0, d.rows.cols()), b, queries, options);
  py::array result;
  MatrixView<float> g;
  if (dtable) {
    g = matrix_out<float>(*dtable, op, "dtable");
    if (g.rows() != num_buckets || g.cols() != heads) {
      throw py::value_error(std::string(op) + ": dtable must have shape (num_buckets, H) = (" +
                            std::to_string(num_buckets) + ", " + std::to_string(heads) +
                            "), got (" + std::to_string(g.rows()) + ", " +
                            std::to_string(g.cols()) + ")");
    }
    result = *dtable;
  } else {
    result = array_owning(Matrix<float>(num_buckets, heads));
    g = matrix_out<float>(result, op, "dtable");
  }
  without_gil([&] { relative_bias_backward(g, d.rows, b, queries, options); });
  return result;
}

}  // namespace

void bind_relative_bias(py::module_& m) {
  m.def("t5_relative_bucket", &bucket, py::arg("relative_position"),
        py::arg("bidirectional") = true, py::arg("num_buckets") = 32, py::arg("max_distance") = 128,
        R"(T5's bucket of a relative position (key - query): Hugging Face's
T5Attention._relative_position_bucket, with the same arguments, exactly.

relative_position: an int (gives an int) or an array of integers (gives an int64 array of its
shape). bidirectional (T5's encoder): num_buckets // 2 buckets a direction, keys after the query
in the upper half; causal (decoder): a key after its query falls in bucket 0. Below max_exact =
half // 2 a bucket per distance, then log-spaced buckets up to max_distance, in float32 as HF
computes them, capped at the last. Raises ValueError for a bucketing T5's formula cannot compute
(num_buckets < 2 causal or < 4 bidirectional, max_distance <= max_exact). Runs without the GIL.)");
  m.def("relative_bias_forward", &forward, py::arg("table"), py::arg("query_length"),
        py::arg("key_length"), py::kw_only(), py::arg("bidirectional") = true,
        py::arg("max_distance") = 128, py::arg("query_start") = 0, py::arg("key_start") = 0,
        py::arg("out") = py::none(),
        R"(T5's relative position bias: bias[h, i, j] = table[bucket(key - query), h], a float32
array (H, Tq, Tk) from table, a float32 (num_buckets, H) array (num_buckets its rows).

Query i is at position query_start + i and key j at key_start + j (cached decoding: one query at
query_start = past length against key_length = past length + 1 keys). out: a float32 (H, Tq, Tk)
array to write into (returned); None allocates one. Raises ValueError (nothing written) for a bad
bucketing, shape or start. Runs without the GIL.)");
  m.def("relative_bias_backward", &backward, py::arg("dbias"), py::arg("num_buckets"),
        py::kw_only(), py::arg("bidirectional") = true, py::arg("max_distance") = 128,
        py::arg("query_start") = 0, py::arg("key_start") = 0, py::arg("dtable") = py::none(),
        R"(The backward of relative_bias_forward: dtable[b, h] += the sum of dbias[h, i, j] over
the (i, j) in bucket b, from dbias, a float32 (H, Tq, Tk) array, with the same bucketing and
starts. dtable: a float32 (num_buckets, H) array added into (and returned); None returns a new
one. Summed in double in a fixed order: the same bits on any thread count. Raises like
relative_bias_forward; runs without the GIL.)");
}

}  // namespace posemb::python
