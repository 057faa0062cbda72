// lab/blas.hpp: OpenBLAS, loaded at run time and kept to one thread.
//
// The lab's OpenMP loops do the parallel work, one BLAS call per chunk, several at once. Of
// Debian's three OpenBLAS builds only the pthread one is safe to call from several threads at
// once (the serial build shares its work buffers without a lock: concurrent products give wrong,
// run-dependent results), but it starts a thread per core when it is loaded, each taking a
// 128 MiB work buffer and retrying forever when it cannot (under ulimit -v, every program linked
// to it hung). So the lab does not link OpenBLAS: it loads the pthread build itself, before
// main, with OPENBLAS_NUM_THREADS=1 set for the load alone (the environment is restored), so
// that no OpenBLAS thread ever starts. When OpenBLAS does not recognise the CPU (Debian 12's
// 0.3.21 falls back to its SSE3 "Prescott" kernels on newer Xeons), the lab loads it again with
// OPENBLAS_CORETYPE naming the kernels for the CPU's instructions (SkylakeX for AVX-512, Haswell
// for AVX2 + FMA); an OPENBLAS_CORETYPE the user set is respected.
//
//   lab::blas().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, ...);
#pragma once

#include <cblas.h>

#include <string>

namespace posemb::lab {

struct Blas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  void (*set_num_threads)(int) = nullptr;
  // OpenBLAS's pool of work buffers (exported by libopenblas, declared in its internal common.h).
  void* (*memory_alloc)(int procpos) = nullptr;
  void (*memory_free)(void* buffer) = nullptr;
  // The kernels OpenBLAS runs ("SkylakeX", "Haswell", ...).
  char* (*corename)() = nullptr;
};

// The loaded library. Throws std::runtime_error naming the file when it could not be loaded.
const Blas& blas();

// The OPENBLAS_CORETYPE the lab set to load OpenBLAS (it did not recognise the CPU), or "" when
// OpenBLAS chose its kernels itself or the user set the variable.
const std::string& blas_coretype_override();

}  // namespace posemb::lab
