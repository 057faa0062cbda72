// The watchdog around starting MPI (see mpi_job.hpp: join_world).
#include "mpi_job.hpp"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace posemb::cli {

lab::Communicator& join_world(double peer_timeout) {
  const auto timeout = std::chrono::milliseconds(std::llround(peer_timeout * 1e3));
  lab::Communicator* comm = nullptr;
  if (timeout.count() <= 0) {
    comm = &lab::world();
  } else {
    std::mutex m;
    std::condition_variable cv;
    bool joined = false;
    std::thread watchdog([&] {
      std::unique_lock<std::mutex> lock(m);
      if (cv.wait_for(lock, timeout, [&] { return joined; })) return;
      // MPI_Init is still waiting on the main thread and cannot be interrupted: end the process
      // (the launcher then ends the job). This is the CLI, which alone chooses exit codes.
      std::fprintf(stderr,
                   "posemb: error: the MPI job did not start within --peer-timeout %g s: a "
                   "process of the job has not started MPI (every rank must run a posemb "
                   "command that uses MPI: train or sweep); ending the job\n",
                   peer_timeout);
      std::fflush(stderr);
      std::_Exit(1);
    });
    const auto release = [&] {
      {
        std::lock_guard<std::mutex> lock(m);
        joined = true;
      }
      cv.notify_one();
      watchdog.join();
    };
    try {
      comm = &lab::world();
    } catch (...) {
      release();
      throw;
    }
    release();
  }
  comm->set_timeout(timeout);
  return *comm;
}

}  // namespace posemb::cli
