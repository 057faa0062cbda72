// The lab's OpenBLAS (lab/blas.hpp): loaded with kernels for an instruction set this CPU has, a
// user's OPENBLAS_CORETYPE respected, and the environment left as it was.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "lab/blas.hpp"

namespace posemb::lab {
namespace {

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512cd");
}

TEST(LabBlas, RunsKernelsForTheInstructionsOfThisCpu) {
  const std::string core = blas().corename();
  const std::string chosen = blas_coretype_override();
  if (!chosen.empty()) {
    // OpenBLAS fell back to its SSE3 kernels: the lab loaded it again with the override.
    EXPECT_EQ(core, chosen);
  }
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr && cpu_has_avx512()) {
    EXPECT_NE(core, "Prescott") << "an AVX-512 CPU left on OpenBLAS's SSE3 kernels";
  }
}

// Run in a child process by the next test: POSEMB_TEST_CHILD says whether the child was started
// with OPENBLAS_CORETYPE=Haswell ("user") or with neither variable set ("none").
TEST(LabBlas, Child) {
  const char* mode = std::getenv("POSEMB_TEST_CHILD");
  if (mode == nullptr) GTEST_SKIP() << "run by the next test";
  (void)blas();
  EXPECT_EQ(std::getenv("OPENBLAS_NUM_THREADS"), nullptr) << "the load's variable was left set";
  if (std::string(mode) == "user") {
    EXPECT_EQ(std::string(blas().corename()), "Haswell");
    EXPECT_EQ(blas_coretype_override(), "");
    EXPECT_STREQ(std::getenv("OPENBLAS_CORETYPE"), "Haswell");
  } else {
    EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr) << "the reload's variable was left set";
  }
}

int run_child(const char* mode) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::setenv("POSEMB_TEST_CHILD", mode, 1);
    ::unsetenv("OPENBLAS_NUM_THREADS");
    if (std::string(mode) == "user") {
      ::setenv("OPENBLAS_CORETYPE", "Haswell", 1);
    } else {
      ::unsetenv("OPENBLAS_CORETYPE");
    }
    ::execl("/proc/self/exe", "/proc/self/exe", "--gtest_filter=LabBlas.Child",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(LabBlas, AUsersOpenblasCoretypeIsRespectedAndTheEnvironmentRestored) {
  if (std::getenv("POSEMB_TEST_CHILD") != nullptr) GTEST_SKIP() << "in the child";
  EXPECT_EQ(run_child("user"), 0);
  EXPECT_EQ(run_child("none"), 0);
}

}  // namespace
}  // namespace posemb::lab
