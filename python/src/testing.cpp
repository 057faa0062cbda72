// What the tests observe of the bindings (posemb._posemb._testing): every kernel runs through
// without_gil(), which counts the calls made without the GIL and, when a test arms the gate,
// waits inside the GIL-free region until the test opens it. A kernel that reached the gate
// holding the GIL is reported (arrived_with_gil) and does not wait, so a failing test cannot
// hang.
#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "arrays.hpp"
#include "bindings.hpp"

namespace posemb::python {
namespace {

std::atomic<std::uint64_t> kernels_without_gil{0};
std::atomic<std::uint64_t> kernels_with_gil{0};

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false;
  bool arrived = false;
  bool open = false;
  bool arrived_with_gil = false;
};
Gate gate;

}  // namespace

void note_kernel_without_gil() {
  const bool held = PyGILState_Check() != 0;
  (held ? kernels_with_gil : kernels_without_gil).fetch_add(1);
  std::unique_lock lock(gate.mu);
  if (!gate.armed) return;
  gate.armed = false;
  gate.arrived = true;
  gate.arrived_with_gil = held;
  gate.cv.notify_all();
  // Holding the GIL, waiting would stop the thread that is to open the gate.
  if (!held) gate.cv.wait(lock, [] { return gate.open; });
}

void bind_testing(py::module_& m) {
  py::module_ t = m.def_submodule("_testing", "Hooks for posemb's tests; not an API.");
  t.def("kernel_counts",
        [] { return py::make_tuple(kernels_without_gil.load(), kernels_with_gil.load()); });
  t.def("arm_gate", [] {
    std::lock_guard lock(gate.mu);
    gate.armed = true;
    gate.arrived = false;
    gate.open = false;
    gate.arrived_with_gil = false;
  });
  // Waits (without the GIL) until a kernel has reached the gate; False after timeout_s.
  t.def("wait_at_gate", [](double timeout_s) {
    py::gil_scoped_release release;
    std::unique_lock lock(gate.mu);
    return gate.cv.wait_for(lock, std::chrono::duration<double>(timeout_s),
                            [] { return gate.arrived; });
  });
  // True when the kernel that reached the gate held the GIL there.
  t.def("arrived_with_gil", [] {
    std::lock_guard lock(gate.mu);
    return gate.arrived_with_gil;
  });
  t.def("open_gate", [] {
    std::lock_guard lock(gate.mu);
    gate.open = true;
    gate.armed = false;
    gate.cv.notify_all();
  });
}

}  // namespace posemb::python
