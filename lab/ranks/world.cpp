// The job this process belongs to (lab/ranks/world.hpp): MPI's world through
// lab/ranks/mpi_communicator.hpp (mpi_communicator.cpp, or no_mpi.cpp in a build without MPI).
#include "lab/ranks/world.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "lab/ranks/mpi_communicator.hpp"

namespace posemb::lab {

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

bool mpi_available() {
  return detail::mpi_built();
}

Communicator& world() {
  static Communicator* const w = [] {
    if (detail::mpi_built() && launched_by_mpi()) return detail::mpi_world();
    // Started as one of several processes of a job this build cannot join: each would work
    // alone (and write the same outputs).
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
      const char* n = std::getenv(var);
      if (!detail::mpi_built() && n != nullptr && std::string_view(n) != "1") {
        throw std::runtime_error(std::string("world: started by an MPI launcher as one of ") + n +
                                 " processes, but this build of posemb has no MPI (build it "
                                 "where CMake finds MPI, with POSEMB_WITH_MPI on)");
      }
    }
    return &single_process();
  }();
  return *w;
}

}  // namespace posemb::lab
