// The communicator's shared parts (status exchange, count checks) and the single process
// (lab/ranks/distributed.hpp). The choice of world() is world.cpp's; the MPI communicator is in
// mpi_communicator.cpp (built with MPI only).
#include "lab/ranks/distributed.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>

namespace posemb::lab {
namespace {

// A failure's text, bounded: messages travel to every rank and end up on one line.
constexpr std::size_t kMaxMessage = 2000;

std::string message_of(const std::exception_ptr& e) {
  std::string msg;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    msg = x.what();
  } catch (...) {
    msg = "an exception not derived from std::exception";
  }
  if (msg.empty()) msg = "(an exception without a message)";
  if (msg.size() > kMaxMessage) msg = msg.substr(0, kMaxMessage) + "...";
  return msg;
}

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allgatherv(const void* mine, void* all, std::span<const std::size_t> counts,
                  std::size_t elem_size) override {
    if (counts[0] != 0) std::memmove(all, mine, counts[0] * elem_size);
  }
  void alltoallv(const void* send, std::span<const std::size_t> send_counts, void* recv,
                 std::span<const std::size_t>, std::size_t elem_size) override {
    if (send_counts[0] != 0) std::memmove(recv, send, send_counts[0] * elem_size);
  }
  void set_timeout(std::chrono::milliseconds) override {}
  void set_broken() override { broken_ = true; }
  bool broken() const override { return broken_; }

 private:
  bool broken_ = false;
};

}  // namespace

void Communicator::check_counts(const char* op, std::size_t mine, std::size_t all,
                                std::span<const std::size_t> counts,
                                std::span<const std::size_t> recv_counts) const {
  const auto n = static_cast<std::size_t>(size());
  const bool to_all = !recv_counts.empty() || std::string_view(op) == "alltoallv";
  if (counts.size() != n || (to_all && recv_counts.size() != n)) {
    throw std::invalid_argument(std::string("Communicator::") + op + ": " +
                                std::to_string(counts.size()) + " counts for " + std::to_string(n) +
                                " ranks");
  }
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  if (to_all) {
    const std::size_t rtotal =
        std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});
    if (mine != total || all != rtotal) {
      throw std::invalid_argument(std::string("Communicator::") + op + ": buffers of " +
                                  std::to_string(mine) + " and " + std::to_string(all) +
                                  " elements for counts summing to " + std::to_string(total) +
                                  " and " + std::to_string(rtotal));
    }
    return;
  }
  if (mine != counts[static_cast<std::size_t>(rank())] || all != total) {
    throw std::invalid_argument(std::string("Communicator::") + op + ": " + std::to_string(mine) +
                                " elements from rank " + std::to_string(rank()) + " (count " +
                                std::to_string(counts[static_cast<std::size_t>(rank())]) +
                                "), room for " + std::to_string(all) + " of " +
                                std::to_string(total));
  }
}

void Communicator::check(std::exception_ptr local, std::string_view what) {
  if (size() == 1) {
    if (local) std::rethrow_exception(local);
    return;
  }
  const std::string mine = local ? message_of(local) : std::string();
  // Status first (0: fine, else 1 + the message's length), messages only when some rank failed.
  const std::uint64_t status = local ? mine.size() + 1 : 0;
  const auto statuses = allgather(status);
  for (std::size_t r = 0; r < statuses.size(); ++r) {
    // A status is at most a bounded message's length + 1: anything else comes from a rank in
    // another collective (another command, other settings); never allocate for it.
    if (statuses[r] > kMaxMessage + 4) {
      set_broken();
      throw CommunicationError(std::string(what) + ": rank " + std::to_string(r) + " of " +
                               std::to_string(size()) +
                               " answered out of step (it is running another command, or with "
                               "other settings); every rank must run the same command");
    }
  }
  if (std::all_of(statuses.begin(), statuses.end(), [](std::uint64_t s) { return s == 0; })) {
    return;
  }
  std::vector<std::size_t> counts(statuses.size());
  for (std::size_t r = 0; r < counts.size(); ++r) counts[r] = statuses[r] ? statuses[r] - 1 : 0;
  std::string text(std::accumulate(counts.begin(), counts.end(), std::size_t{0}), '\0');
  allgatherv(std::span<const char>(mine.data(), mine.size()), std::span<char>(text), counts);
  // The failures, by rank.
  std::vector<std::pair<int, std::string>> failed;
  std::size_t at = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (statuses[r] != 0) failed.emplace_back(static_cast<int>(r), text.substr(at, counts[r]));
    at += counts[r];
  }
  const bool same = std::all_of(failed.begin(), failed.end(),
                                [&](const auto& f) { return f.second == failed[0].second; });
  const std::string of = " of " + std::to_string(size());
  if (same && failed.size() == static_cast<std::size_t>(size())) {
    throw JobFailure(failed[0].second);  // every rank failed the same way: as one process would
  }
  std::string msg(what);
  if (same) {
    msg += failed.size() == 1 ? ": rank " : ": ranks ";
    for (std::size_t i = 0; i < failed.size(); ++i) {
      msg += (i ? ", " : "") + std::to_string(failed[i].first);
    }
    msg += of + " failed: " + failed[0].second;
  } else {
    for (std::size_t i = 0; i < failed.size(); ++i) {
      msg += (i ? "; rank " : ": rank ") + std::to_string(failed[i].first) + of +
             " failed: " + failed[i].second;
    }
  }
  throw JobFailure(msg);
}

Communicator& single_process() {
  static SingleProcess one;
  return one;
}

}  // namespace posemb::lab
