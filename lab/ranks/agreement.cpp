// The ranks agreeing before they exchange anything (lab/ranks/agreement.hpp).
#include "lab/ranks/agreement.hpp"

#include <string>

namespace posemb::lab {
namespace {

// FNV-1a, 64 bits: enough to tell settings apart.
std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

void check_same_on_every_rank(Communicator& comm, std::string_view what,
                              std::string_view settings) {
  if (comm.size() == 1) return;
  // The command's name is hashed too: a rank running another command differs.
  const std::uint64_t mine = fnv1a(std::string(what) + '\n' + std::string(settings));
  const auto all = comm.allgather(mine);
  std::string differ;
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  }
  if (differ.empty()) return;
  throw JobFailure(std::string(what) + ": the ranks were not given the same settings: rank(s) " +
                   differ + " of " + std::to_string(comm.size()) +
                   " differ from rank 0; every rank must run the same command with the same "
                   "flags");
}

std::vector<std::uint64_t> gather_sizes(Communicator& comm, std::uint64_t mine, std::uint64_t max,
                                        std::string_view what) {
  const auto all = comm.allgather(mine);
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r] > max) {
      comm.set_broken();
      throw CommunicationError(std::string(what) + ": rank " + std::to_string(r) + " of " +
                               std::to_string(all.size()) + " announced " + std::to_string(all[r]) +
                               " bytes, more than the " + std::to_string(max) +
                               " expected (the ranks are not running the same command)");
    }
  }
  return all;
}

}  // namespace posemb::lab
