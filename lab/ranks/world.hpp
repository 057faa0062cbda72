// lab/ranks/world.hpp: the job this process belongs to: the MPI world when it was started by an
// MPI launcher (and the build has MPI), else the single process.
//
//   lab::Communicator& comm = lab::world();   // under mpirun -np 4: rank 0..3 of 4
#pragma once

#include "lab/ranks/distributed.hpp"

namespace posemb::lab {

// The job: the MPI world when built with MPI and started by an MPI launcher, else
// single_process(). The first call initializes MPI; MPI is finalized when the process exits (or
// aborted when the communicator is broken). Call it from the main thread. Throws
// std::runtime_error in a build without MPI started by a launcher as one of several processes
// (each would work alone).
Communicator& world();

// True when this build has MPI (CMake found it and POSEMB_WITH_MPI is on).
bool mpi_available();
// True when the environment says an MPI launcher started this process (Open MPI's
// OMPI_COMM_WORLD_SIZE, PMI_SIZE of MPICH and Slurm, PMIX_RANK of PMIx launchers).
bool launched_by_mpi();

}  // namespace posemb::lab
