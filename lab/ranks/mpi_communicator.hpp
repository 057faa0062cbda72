// lab/ranks/mpi_communicator.hpp: the lab's one door to MPI (internal to lab/ranks/world.cpp).
// mpi_communicator.cpp implements it when the build has MPI, no_mpi.cpp otherwise.
#pragma once

#include "lab/ranks/distributed.hpp"

namespace posemb::lab::detail {

// True when this build has MPI.
bool mpi_built();
// The MPI world (initializes MPI, registers its finalization at exit); only when mpi_built().
Communicator* mpi_world();

}  // namespace posemb::lab::detail
