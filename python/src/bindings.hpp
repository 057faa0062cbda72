// The binding files of posemb._posemb, one per area of the public API; module.cpp calls each.
//
//   core   lookup.cpp (learned_positional_embedding), sinusoidal.cpp, rope.cpp, alibi.cpp,
//          relative_bias.cpp (T5's buckets and bias)
//   nn     positions.cpp (PositionSource, resolve_positions), embedding.cpp (embed_*,
//          add_positions_*), layer.cpp (LearnedPositionalEmbedding, initialize_table)
//   io     files.cpp (position tables as files, resize, tensor files)
//          analysis.cpp (row norms, cosine similarity, distance profile, reserved rows)
//          vision.cpp (vision tables as 2-D grids, checkpoint folders)
//   errors.cpp (posemb's exceptions as Python classes), testing.cpp (hooks the tests observe)
#pragma once

#include <pybind11/pybind11.h>

namespace posemb::python {

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_lookup(py::module_& m);
void bind_sinusoidal(py::module_& m);
void bind_rope(py::module_& m);
void bind_alibi(py::module_& m);
void bind_relative_bias(py::module_& m);
void bind_positions(py::module_& m);
void bind_embedding(py::module_& m);
void bind_layer(py::module_& m);
void bind_files(py::module_& m);
void bind_analysis(py::module_& m);
void bind_testing(py::module_& m);
void bind_vision(py::module_& m);

}  // namespace posemb::python
