// A build without MPI: world() is the single process.
#include <stdexcept>

#include "lab/ranks/mpi_communicator.hpp"

namespace posemb::lab::detail {

bool mpi_built() {
  return false;
}

Communicator* mpi_world() {
  throw std::logic_error("mpi_world: this build of posemb has no MPI");
}

}  // namespace posemb::lab::detail
