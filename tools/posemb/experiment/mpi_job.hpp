// tools/posemb/experiment/mpi_job.hpp: how a command runs as one rank of an MPI job (`mpirun -np
// N posemb train ...`): who reports a failure, and what happens to the others.
//
//   lab::Communicator& comm = join_world(o.peer_timeout);   // before anything may fail
//   run_job(comm, [&] { ... the command ... });
//
// A failure every rank knows of (lab::JobFailure from the lab's status exchange; a usage error,
// which every rank finds in the same arguments) is reported by rank 0 alone: the other ranks
// throw ReportedByRankZero, which main() turns into exit code 1 without a message. Any other
// failure is this rank's alone, while the others may be waiting for it in a collective: it is
// reported with the rank's number, and the communicator is marked broken, so that the job is
// aborted (MPI_Abort) when this process exits instead of hanging.
#pragma once

#include <stdexcept>
#include <string>

#include "cli.hpp"
#include "lab/ranks/distributed.hpp"
#include "lab/ranks/world.hpp"

namespace posemb::cli {

template <class F>
void run_job(lab::Communicator& comm, F&& body) {
  if (comm.size() == 1) {
    body();
    return;
  }
  try {
    body();
  } catch (const lab::JobFailure&) {
    if (comm.rank() != 0) throw ReportedByRankZero();
    throw;
  } catch (const UsageError&) {
    if (comm.rank() != 0) throw ReportedByRankZero();
    throw;
  } catch (const std::exception& e) {
    comm.set_broken();
    throw std::runtime_error("rank " + std::to_string(comm.rank()) + " of " +
                             std::to_string(comm.size()) + ": " + e.what() +
                             " (ending the MPI job)");
  }
}

// The job (lab::world()), with the communicator's timeout set from a --peer-timeout value in
// seconds (0: none). Starting MPI waits for every process of the job, and MPI_Init has no
// timeout of its own: when it has not returned within `peer_timeout` seconds (a process of the
// job never starts MPI: another program, or a posemb command that does not use MPI), this
// process prints one error line and ends with exit status 1, which makes the launcher end the
// job. Nothing has been written at that point.
lab::Communicator& join_world(double peer_timeout);

}  // namespace posemb::cli
