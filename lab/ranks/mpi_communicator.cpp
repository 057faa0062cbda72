// The MPI world as a lab::Communicator (built only when CMake finds MPI). Collectives are MPI's
// nonblocking ones (MPI_Iallgatherv, MPI_Ialltoallv) completed by polling MPI_Test, so that a
// wait can end at a deadline; errors are returned (MPI_ERRORS_RETURN), never fatal inside MPI.
//
// Polling. A nonblocking collective moves data only while some MPI call runs on the rank, a
// fragment or so per MPI_Test. Waiting for a slower rank to arrive should leave the core to
// others (a rank that sleeps between polls), but a rank that sleeps while megabytes are being
// exchanged slows the exchange to a fragment per sleep (a step's gradients took 8-9 ms instead
// of 5-6 on this machine). So a large collective (an all-gather of kHotBytes or more, and every
// all-to-all) first waits for every rank to arrive (MPI_Ibarrier, polled politely), then polls
// the exchange itself without sleeping.
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "lab/ranks/mpi_communicator.hpp"

namespace posemb::lab::detail {
namespace {

std::string mpi_error_text(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(buf, static_cast<std::size_t>(len));
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_mpi_ = true;
    }
    // Our own communicator, with errors returned to us rather than fatal inside MPI.
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allgatherv(const void* mine, void* all, std::span<const std::size_t> counts,
                  std::size_t elem_size) override {
    const MPI_Datatype t = type(elem_size);
    std::vector<int> cnt, displ;
    ints(counts, cnt, displ, "allgatherv");
    // counts are the same on every rank, and so is this decision.
    std::size_t elems = 0;
    for (const std::size_t c : counts) elems += c;
    const bool hot = arrive(elems * elem_size >= kHotBytes, "allgatherv");
    MPI_Request req = MPI_REQUEST_NULL;
    // MPI's signature takes a non-const send buffer before MPI 3; it only reads it.
    call(MPI_Iallgatherv(const_cast<void*>(mine), cnt[static_cast<std::size_t>(rank_)], t, all,
                         cnt.data(), displ.data(), t, comm_, &req),
         "allgatherv");
    wait(req, "allgatherv", hot);
  }

  void alltoallv(const void* send, std::span<const std::size_t> send_counts, void* recv,
                 std::span<const std::size_t> recv_counts, std::size_t elem_size) override {
    const MPI_Datatype t = type(elem_size);
    std::vector<int> scnt, sdispl, rcnt, rdispl;
    ints(send_counts, scnt, sdispl, "alltoallv");
    ints(recv_counts, rcnt, rdispl, "alltoallv");
    // A rank's sizes here are its own (a rank without micro-batches sends nothing), so the
    // decision cannot depend on them: every all-to-all (the step's gradient exchange) is hot.
    const bool hot = arrive(true, "alltoallv");
    MPI_Request req = MPI_REQUEST_NULL;
    call(MPI_Ialltoallv(const_cast<void*>(send), scnt.data(), sdispl.data(), t, recv, rcnt.data(),
                        rdispl.data(), t, comm_, &req),
         "alltoallv");
    wait(req, "alltoallv", hot);
  }

  void set_timeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }
  void set_broken() override { broken_ = true; }
  bool broken() const override { return broken_; }

  // At exit: a healthy job finalizes MPI; a broken one is aborted, so that no rank is left
  // waiting for this one.
  void finish() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0) return;
    if (broken_) {
      std::fflush(nullptr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_free(&comm_);
    for (auto& [size, t] : types_) MPI_Type_free(&t);
    if (owns_mpi_) MPI_Finalize();
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    broken_ = true;
    throw CommunicationError(what);
  }
  void call(int rc, const char* op) {
    if (rc != MPI_SUCCESS) {
      fail("MPI " + std::string(op) + " failed: " + mpi_error_text(rc));
    }
  }
  // A contiguous datatype of elem_size bytes (counts then fit an int for larger messages).
  MPI_Datatype type(std::size_t elem_size) {
    if (elem_size == 0 || elem_size > INT_MAX) {
      fail("MPI: element size " + std::to_string(elem_size) + " bytes is not supported");
    }
    auto it = types_.find(elem_size);
    if (it != types_.end()) return it->second;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    call(MPI_Type_contiguous(static_cast<int>(elem_size), MPI_BYTE, &t), "type_contiguous");
    call(MPI_Type_commit(&t), "type_commit");
    types_[elem_size] = t;
    return t;
  }
  // Counts and displacements as MPI's ints; a total past INT_MAX elements cannot be sent in one
  // call.
  void ints(std::span<const std::size_t> counts, std::vector<int>& cnt, std::vector<int>& displ,
            const char* op) {
    std::size_t at = 0;
    for (const std::size_t c : counts) {
      if (c > static_cast<std::size_t>(INT_MAX) - at) {
        fail("MPI " + std::string(op) + ": " + std::to_string(at + c) +
             " elements exceed MPI's limit of " + std::to_string(INT_MAX) + " per call");
      }
      cnt.push_back(static_cast<int>(c));
      displ.push_back(static_cast<int>(at));
      at += c;
    }
  }
  // Before a collective: when `big` (which every rank must decide alike, or the ranks' calls
  // would not match), waits politely until every rank has arrived and returns true (poll the
  // exchange hot); otherwise returns false at once.
  bool arrive(bool big, const char* op) {
    if (!big) return false;
    MPI_Request req = MPI_REQUEST_NULL;
    call(MPI_Ibarrier(comm_, &req), op);
    wait(req, op, false);
    return true;
  }
  // Completes req, polling; past the timeout, the job is broken. hot: every rank is known to be
  // in the collective, poll without sleeping.
  void wait(MPI_Request& req, const char* op, bool hot) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    for (unsigned polls = 0;; ++polls) {
      int done = 0;
      call(MPI_Test(&req, &done, MPI_STATUS_IGNORE), op);
      if (done != 0) return;
      if (timeout_.count() > 0 && Clock::now() - start > timeout_) {
        char secs[32];
        std::snprintf(secs, sizeof secs, "%g", static_cast<double>(timeout_.count()) / 1000.0);
        fail("no answer from the other ranks within " + std::string(secs) + " s, waiting in " + op +
             " (a rank was stopped, is stuck, or cannot be reached)");
      }
      // Spin briefly (a step's exchange is usually fast), then poll every 50 microseconds so
      // that a waiting rank leaves the core to the others.
      if (hot || polls < 2000) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  // A collective moving at least this many bytes on a rank is polled hot (see the top).
  static constexpr std::size_t kHotBytes = std::size_t{256} << 10;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool owns_mpi_ = false, broken_ = false;
  std::chrono::milliseconds timeout_{0};
  std::map<std::size_t, MPI_Datatype> types_;
};

MpiCommunicator* the_world = nullptr;

void finish_world() {
  if (the_world != nullptr) the_world->finish();
}

}  // namespace

bool mpi_built() {
  return true;
}

Communicator* mpi_world() {
  if (the_world == nullptr) {
    // Never deleted: it must outlive everything that may communicate, up to finish_world().
    the_world = new MpiCommunicator();
    std::atexit(finish_world);
  }
  return the_world;
}

}  // namespace posemb::lab::detail
