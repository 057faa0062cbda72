#include "lab/blas.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

namespace posemb::lab {
namespace {

struct Loaded {
  Blas fns;
  std::string coretype;  // the OPENBLAS_CORETYPE of the reload, or ""
  std::string error;     // empty when loaded
};

template <class F>
bool find(void* handle, const char* name, F& out, std::string& error) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  if (out == nullptr && error.empty()) error = std::string("symbol ") + name + " not found";
  return out != nullptr;
}

// Sets variable `name` to `value` for the lifetime of the object, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (saved_) {
      ::setenv(name_, saved_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

// The OpenBLAS kernels for a CPU that OpenBLAS did not recognise, or null. OpenBLAS (0.3.21 in
// Debian 12) picks its kernels by CPU model and falls back to "Prescott" (SSE3) for a model it
// does not know: on a newer Xeon with AVX-512 (e.g. family 6 model 207) matrix products then
// run at a fraction of the speed the CPU has. The kernels named here are the ones OpenBLAS uses
// for its known CPUs with the same instructions (its Cooperlake and Sapphire Rapids cores use
// SkylakeX's single-precision kernels, Zen uses Haswell's).
const char* core_for_unrecognised_cpu(const char* detected) {
  if (detected == nullptr || std::strcmp(detected, "Prescott") != 0) return nullptr;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512cd")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
  return nullptr;
}

void* open_library() {
  return ::dlopen(POSEMB_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
}

Loaded load() {
  // For the load alone (the environment is restored): no OpenBLAS thread ever starts.
  const ScopedEnv one_thread("OPENBLAS_NUM_THREADS", "1");
  void* handle = open_library();
  const char* dl_error = handle == nullptr ? ::dlerror() : nullptr;
  Loaded l;
  if (handle != nullptr && std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    // OpenBLAS chooses its kernels when it is loaded: when it did not recognise this CPU, load
    // it again with the kernels for the CPU's instructions (OPENBLAS_CORETYPE, set for the
    // reload alone; a user's own OPENBLAS_CORETYPE is always respected).
    using CoreName = char* (*)();
    const auto corename = reinterpret_cast<CoreName>(::dlsym(handle, "openblas_get_corename"));
    const char* core = core_for_unrecognised_cpu(corename != nullptr ? corename() : nullptr);
    if (core != nullptr && ::dlclose(handle) == 0) {
      const ScopedEnv coretype("OPENBLAS_CORETYPE", core);
      handle = open_library();
      l.coretype = core;
      dl_error = handle == nullptr ? ::dlerror() : nullptr;
    }
  }
  if (handle == nullptr) {
    l.error = dl_error != nullptr ? dl_error : "dlopen failed";
  } else {
    find(handle, "cblas_sgemm", l.fns.sgemm, l.error);
    find(handle, "openblas_set_num_threads", l.fns.set_num_threads, l.error);
    find(handle, "blas_memory_alloc", l.fns.memory_alloc, l.error);
    find(handle, "blas_memory_free", l.fns.memory_free, l.error);
    find(handle, "openblas_get_corename", l.fns.corename, l.error);
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

const std::string& blas_coretype_override() {
  return loaded().coretype;
}

}  // namespace posemb::lab
