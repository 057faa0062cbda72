// tests/lab/thread_group.hpp: N ranks as N threads of one process, for testing the lab's
// data-parallel code without MPI (and under the sanitizers). The collectives copy between the
// threads' buffers between two barriers, as MPI would move them between processes.
//
//   ThreadGroup group(3);
//   auto errors = group.run([&](lab::Communicator& comm) { ... comm.rank() ... });
//
// No timeouts: a rank that leaves the protocol (throws outside all_or_none) deadlocks the others,
// so tests only fail ranks inside the protocol.
#pragma once

#include <barrier>
#include <cstring>
#include <exception>
#include <functional>
#include <numeric>
#include <thread>
#include <vector>

#include "lab/ranks/distributed.hpp"

namespace posemb::lab::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int ranks) : n_(ranks), barrier_(ranks), slots_(ranks) {
    for (int r = 0; r < ranks; ++r) members_.emplace_back(*this, r);
  }

  // Runs f(comm) on every rank, each on its own thread; returns each rank's exception (or null).
  std::vector<std::exception_ptr> run(const std::function<void(Communicator&)>& f) {
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n_));
    std::vector<std::thread> threads;
    for (int r = 0; r < n_; ++r) {
      threads.emplace_back([&, r] {
        try {
          f(members_[static_cast<std::size_t>(r)]);
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    return errors;
  }

 private:
  struct Slot {
    const void* data = nullptr;
    std::span<const std::size_t> counts;
  };

  class Member final : public Communicator {
   public:
    Member(ThreadGroup& g, int rank) : g_(&g), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return g_->n_; }
    void allgatherv(const void* mine, void* all, std::span<const std::size_t> counts,
                    std::size_t elem_size) override {
      g_->slots_[static_cast<std::size_t>(rank_)] = {mine, counts};
      g_->barrier_.arrive_and_wait();
      auto* dst = static_cast<unsigned char*>(all);
      for (std::size_t r = 0; r < counts.size(); ++r) {
        if (counts[r] != 0) std::memcpy(dst, g_->slots_[r].data, counts[r] * elem_size);
        dst += counts[r] * elem_size;
      }
      g_->barrier_.arrive_and_wait();  // the sources stay valid until every rank has copied
    }
    void alltoallv(const void* send, std::span<const std::size_t> send_counts, void* recv,
                   std::span<const std::size_t> recv_counts, std::size_t elem_size) override {
      g_->slots_[static_cast<std::size_t>(rank_)] = {send, send_counts};
      g_->barrier_.arrive_and_wait();
      auto* dst = static_cast<unsigned char*>(recv);
      const auto me = static_cast<std::size_t>(rank_);
      for (std::size_t s = 0; s < recv_counts.size(); ++s) {
        const auto& from = g_->slots_[s];
        const std::size_t skip = std::accumulate(
            from.counts.begin(), from.counts.begin() + static_cast<long>(me), std::size_t{0});
        if (from.counts[me] != recv_counts[s]) std::terminate();  // a test's own mistake
        const auto* src = static_cast<const unsigned char*>(from.data) + skip * elem_size;
        if (recv_counts[s] != 0) std::memcpy(dst, src, recv_counts[s] * elem_size);
        dst += recv_counts[s] * elem_size;
      }
      g_->barrier_.arrive_and_wait();
    }
    void set_timeout(std::chrono::milliseconds) override {}
    void set_broken() override { broken_ = true; }
    bool broken() const override { return broken_; }

   private:
    ThreadGroup* g_;
    int rank_;
    bool broken_ = false;
  };

  int n_;
  std::barrier<> barrier_;
  std::vector<Slot> slots_;
  std::vector<Member> members_;
};

}  // namespace posemb::lab::testing
