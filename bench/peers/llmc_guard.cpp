// Whether this CPU runs the -march=native peer (llmc_encoder.cpp). Built for the baseline. The
// list of extensions -march=native enabled comes from the build: bench/CMakeLists.txt asks the
// compiler for its predefined macros and defines POSEMB_LLMC_NATIVE_FEATURES as
// X("avx2") X("fma") ...
#include <string>

#include "llmc_encoder.hpp"

#ifndef POSEMB_LLMC_NATIVE_FEATURES
#define POSEMB_LLMC_NATIVE_FEATURES
#endif

namespace posemb::bench {

bool llmc_peer_available(std::string& why) {
  why.clear();
  __builtin_cpu_init();
#define X(feature) \
  if (!__builtin_cpu_supports(feature)) why += std::string(why.empty() ? "" : ", ") + feature;
  POSEMB_LLMC_NATIVE_FEATURES
#undef X
  if (why.empty()) return true;
  why = "this CPU lacks " + why + " (the peer was built with -march=native elsewhere)";
  return false;
}

}  // namespace posemb::bench
