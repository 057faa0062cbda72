// Table analysis (thin): posemb/table_analysis.hpp on numpy arrays. Tables are float32
// (rows, dim) arrays read in place (no copy); results are new arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "posemb/table_analysis.hpp"

namespace posemb::python {

void bind_analysis(py::module_& m) {
  m.def(
      "row_norms",
      [](const py::array& table) {
        const auto t = matrix_in<float>(table, "row_norms", "table");
        std::vector<double> norms = without_gil([&] { return posemb::row_norms(t); });
        py::array_t<double> out(static_cast<py::ssize_t>(norms.size()));
        std::copy(norms.begin(), norms.end(), out.mutable_data());
        return out;
      },
      py::arg("table"),
      "The Euclidean norm of every row of table (float32, (rows, dim)), in float64: (rows,).");

  m.def(
      "row_norm_stats",
      [](const py::array& table) {
        const auto t = matrix_in<float>(table, "row_norm_stats", "table");
        const RowNormStats s = without_gil([&] { return posemb::row_norm_stats(t); });
        py::dict d;
        d["min"] = s.min;
        d["mean"] = s.mean;
        d["max"] = s.max;
        d["stddev"] = s.stddev;
        return d;
      },
      py::arg("table"),
      R"(The row norms' min, mean, max and population standard deviation, as a dict (all 0 for a
table without rows).)");

  m.def(
      "unit_rows",
      [](const py::array& table) {
        const auto t = matrix_in<float>(table, "unit_rows", "table");
        return array_owning(without_gil([&] { return posemb::unit_rows(t); }));
      },
      py::arg("table"),
      "The rows of table scaled to unit length (float32, (rows, dim)); a zero row stays zero.");

  m.def(
      "cosine_similarity",
      [](const py::array& table, std::size_t step) {
        const auto t = matrix_in<float>(table, "cosine_similarity", "table");
        return array_owning(without_gil([&] { return posemb::cosine_similarity(t, step); }));
      },
      py::arg("table"), py::arg("step") = 1,
      R"(The cosine similarity of every pair of rows 0, step, 2 step, ... of table: float32 (n, n),
n = ceil(rows / step), symmetric, in [-1, 1]; a zero row has similarity 0 with everything.
Raises ValueError for step 0.)");

  m.def(
      "distance_profile",
      [](const py::array& table) {
        const auto t = matrix_in<float>(table, "distance_profile", "table");
        const auto p = without_gil([&] { return posemb::distance_profile(t); });
        py::array_t<std::int64_t> offsets(static_cast<py::ssize_t>(p.size()));
        py::array_t<double> means(static_cast<py::ssize_t>(p.size()));
        for (std::size_t i = 0; i < p.size(); ++i) {
          offsets.mutable_at(i) = static_cast<std::int64_t>(p[i].offset);
          means.mutable_at(i) = p[i].mean_cosine;
        }
        return std::make_pair(offsets, means);
      },
      py::arg("table"),
      R"((offsets, means): for offset d = 1, 2, 4, ... < rows, the mean over i of the cosine
similarity of rows i and i + d (int64 and float64 arrays of the same length).)");

  m.def(
      "likely_reserved_rows",
      [](const py::array& table) {
        const auto t = matrix_in<float>(table, "likely_reserved_rows", "table");
        return posemb::likely_reserved_rows(t);
      },
      py::arg("table"),
      R"(How many leading rows of table look reserved rather than positions: 1 + the index of the
last all-zero row among the first 8, provided a later row is not all zeros (RoBERTa: 2); else 0.)");

  m.def(
      "unstated_reserved_rows",
      [](const PositionTable& table, bool caller_gave_them) {
        return posemb::unstated_reserved_rows(table, caller_gave_them);
      },
      py::arg("table"), py::arg("caller_gave_them") = false,
      R"(likely_reserved_rows(table.values) when neither the caller nor the file's metadata gave the
table's reserved rows and that is more than table.reserved_rows; else None.)");
}

}  // namespace posemb::python
