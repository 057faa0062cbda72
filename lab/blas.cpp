#include "lab/blas.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

namespace posemb::lab {
namespace {

struct Loaded {
  Blas fns;
  std::string error;  // empty when loaded
};

template <class F>
bool find(void* handle, const char* name, F& out, std::string& error) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  if (out == nullptr && error.empty()) error = std::string("symbol ") + name + " not found";
  return out != nullptr;
}

Loaded load() {
  constexpr const char* kVar = "OPENBLAS_NUM_THREADS";
  const char* old = std::getenv(kVar);
  const std::optional<std::string> saved =
      old != nullptr ? std::optional<std::string>(old) : std::nullopt;
  ::setenv(kVar, "1", 1);
  void* handle = ::dlopen(POSEMB_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  const char* dl_error = handle == nullptr ? ::dlerror() : nullptr;
  if (saved) {
    ::setenv(kVar, saved->c_str(), 1);
  } else {
    ::unsetenv(kVar);
  }
  Loaded l;
  if (handle == nullptr) {
    l.error = dl_error != nullptr ? dl_error : "dlopen failed";
  } else {
    find(handle, "cblas_sgemm", l.fns.sgemm, l.error);
    find(handle, "openblas_set_num_threads", l.fns.set_num_threads, l.error);
    find(handle, "blas_memory_alloc", l.fns.memory_alloc, l.error);
    find(handle, "blas_memory_free", l.fns.memory_free, l.error);
  }
  if (!l.error.empty()) {
    l.error = std::string("lab: cannot load OpenBLAS (") + POSEMB_OPENBLAS_LIBRARY +
              "): " + l.error + " (Debian package libopenblas0-pthread; run scripts/setup.sh)";
  } else {
    l.fns.set_num_threads(1);
  }
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

// Loaded before main, while the process has a single thread: setenv is not thread-safe.
[[maybe_unused]] const Loaded& kLoadedAtStartup = loaded();

}  // namespace

const Blas& blas() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw std::runtime_error(l.error);
  return l.fns;
}

}  // namespace posemb::lab
