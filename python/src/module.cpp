// posemb._posemb: the C++ library as a Python extension (pybind11). The package posemb
// (python/posemb/__init__.py) re-exports it; posemb.torch builds PyTorch modules on it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "posemb/memory.hpp"
#include "posemb/simd.hpp"
#include "posemb/version.hpp"

PYBIND11_MODULE(_posemb, m) {
  namespace pyb = posemb::python;
  m.doc() = "posemb: learned positional embeddings (C++ kernels, numpy views without copies)";
  m.attr("__version__") = posemb::version();
  pyb::bind_errors(m);
  m.def("memory_limit", &posemb::memory_limit,
        "posemb's memory budget in bytes (its allocations are checked against it).");
  m.def("set_memory_limit", &posemb::set_memory_limit, pybind11::arg("bytes"),
        "Sets the budget (0: the default, 3/4 of physical memory); an allocation beyond it raises "
        "MemoryLimitExceeded.");
  m.def("simd_target", &posemb::simd_target,
        "The SIMD instruction set the kernels run with (chosen at run time; the environment "
        "variable POSEMB_SIMD forces one).");
  m.def("simd_targets", &posemb::simd_targets,
        "The SIMD instruction sets this CPU can run, best first.");
  pyb::bind_lookup(m);
  pyb::bind_sinusoidal(m);
  pyb::bind_rope(m);
  pyb::bind_positions(m);
  pyb::bind_embedding(m);
  pyb::bind_layer(m);
  pyb::bind_files(m);
  pyb::bind_analysis(m);
  pyb::bind_testing(m);
  pyb::bind_alibi(m);
  pyb::bind_relative_bias(m);
  pyb::bind_vision(m);
}
