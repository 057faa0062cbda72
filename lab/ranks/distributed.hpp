// lab/ranks/distributed.hpp: the processes of a job (MPI ranks) as the lab sees them: who am I, how
// many are we, and the few collective operations data-parallel training and sweeps need.
//
//   lab::Communicator& comm = lab::world();     // lab/ranks/world.hpp: the MPI job, else 1
//   comm.set_timeout(std::chrono::seconds(600)); // a peer silent this long is a failure
//   lab::Trainer tr(run, comm);                  // each rank computes its share of a step
//   comm.all_or_none("train: writing the checkpoint", [&] {
//     if (comm.rank() == 0) tr.save(path);        // (Trainer::save does exactly this)
//   });
//
// Every collective must be called by every rank, in the same order. Data only moves (gather,
// all-to-all); MPI never adds, so results are the same bits on any number of ranks.
//
// Failures. An exception on one rank must not leave the others waiting in a collective. Code
// that may throw on some ranks only runs inside all_or_none(), or reports through check(): every
// rank learns that some rank failed and throws JobFailure, whose message names the failed ranks
// and their errors (the same text on every rank). A peer that stops answering (killed, stuck)
// is caught by the timeout: the waiting rank throws CommunicationError and marks the
// communicator broken; when the process ends, a broken MPI job is aborted (MPI_Abort) instead of
// finalized, so no rank hangs. A killed rank usually ends the job sooner: mpirun stops every
// rank when one dies.
//
// MPI is optional at build time (CMake POSEMB_WITH_MPI): without it, world() is the single
// process. With it, world() initializes MPI (MPI_THREAD_FUNNELED: MPI is called from the main
// thread, outside OpenMP regions) on first use when the process was started by an MPI launcher
// (mpirun, mpiexec, srun), and is the single process otherwise (no MPI start-up cost).
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace posemb::lab {

// Some rank failed inside all_or_none() / check(): thrown on every rank with the same message
// (a single failed rank's own message, prefixed with its rank; several ranks' messages joined).
class JobFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The job's communication itself failed: a peer did not answer within the timeout, or MPI
// reported an error. Thrown on the rank that saw it; the communicator is then broken.
class CommunicationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;  // 0 .. size() - 1
  virtual int size() const = 0;  // >= 1

  // Every rank's `mine` (counts[rank()] elements of elem_size bytes), concatenated in rank order
  // into `all` (sum of counts elements); counts are the same on every rank. Collective.
  virtual void allgatherv(const void* mine,                     // (counts[rank()]), read
                          void* all,                            // (sum counts), written over
                          std::span<const std::size_t> counts,  // (size())
                          std::size_t elem_size) = 0;
  // send holds, in rank order, send_counts[r] elements for rank r; recv receives, in rank order,
  // recv_counts[r] elements from rank r (rank r's send_counts[rank()]). Collective.
  virtual void alltoallv(const void* send,                          // (sum send_counts), read
                         std::span<const std::size_t> send_counts,  // (size())
                         void* recv,                                // (sum recv_counts), written
                         std::span<const std::size_t> recv_counts,  // (size())
                         std::size_t elem_size) = 0;

  // How long a collective may wait for the other ranks before throwing CommunicationError;
  // zero waits forever. Default: zero.
  virtual void set_timeout(std::chrono::milliseconds timeout) = 0;
  // Marks the job as failed beyond repair on this rank: when the process ends, an MPI job is
  // aborted rather than finalized (the other ranks may be waiting for this one).
  virtual void set_broken() = 0;
  virtual bool broken() const = 0;

  // Typed forms of the collectives (counts in elements of T).
  template <class T>
  void allgatherv(std::span<const T> mine, std::span<T> all, std::span<const std::size_t> counts) {
    static_assert(std::is_trivially_copyable_v<T>);
    check_counts("allgatherv", mine.size(), all.size(), counts);
    allgatherv(mine.data(), all.data(), counts, sizeof(T));
  }
  template <class T>
  void alltoallv(std::span<const T> send, std::span<const std::size_t> send_counts,
                 std::span<T> recv, std::span<const std::size_t> recv_counts) {
    static_assert(std::is_trivially_copyable_v<T>);
    check_counts("alltoallv", send.size(), recv.size(), send_counts, recv_counts);
    alltoallv(send.data(), send_counts, recv.data(), recv_counts, sizeof(T));
  }
  // Every rank's value, in rank order.
  template <class T>
  std::vector<T> allgather(const T& mine) {
    std::vector<T> all(static_cast<std::size_t>(size()));
    const std::vector<std::size_t> counts(all.size(), 1);
    allgatherv(std::span<const T>(&mine, 1), std::span<T>(all), counts);
    return all;
  }

  // Collective status exchange. local: this rank's failure, or null. When no rank failed,
  // returns. Otherwise throws JobFailure on every rank: "<what>: rank r of N: <message>" (one
  // failed rank, or several with the same message), or the failed ranks' messages joined. On a
  // single process, rethrows local itself (the exception's own type and message).
  void check(std::exception_ptr local, std::string_view what);
  // Runs f on every rank, then check()s: every rank returns, or every rank throws.
  template <class F>
  void all_or_none(std::string_view what, F&& f) {
    std::exception_ptr local;
    try {
      f();
    } catch (...) {
      local = std::current_exception();
    }
    check(local, what);
  }

 private:
  void check_counts(const char* op, std::size_t mine, std::size_t all,
                    std::span<const std::size_t> counts,
                    std::span<const std::size_t> recv_counts = {}) const;
};

// The one process, alone: rank 0 of 1. Collectives copy.
Communicator& single_process();

}  // namespace posemb::lab
