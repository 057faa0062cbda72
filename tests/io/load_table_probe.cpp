// A child process for test_lazy_load: loads the position table of argv[1] with
// load_position_table and prints "ROWS COLS SUM MAXRSS_KIB" (ru_maxrss of this process), so
// that the test can measure the peak memory of a load on its own.
#include <sys/resource.h>

#include <cstdio>
#include <exception>

#include "posemb/position_table_file.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  try {
    const posemb::PositionTable t = posemb::load_position_table(argv[1]);
    double sum = 0;
    for (float v : t.values.flat()) sum += v;
    struct rusage ru {};
    ::getrusage(RUSAGE_SELF, &ru);
    std::printf("%zu %zu %.17g %ld\n", t.values.rows(), t.values.cols(), sum, ru.ru_maxrss);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
