// lab/ranks/agreement.hpp: the ranks of a job agreeing before they exchange anything: the same
// settings, and sizes each rank announces within what the others expect.
//
//   lab::check_same_on_every_rank(comm, "sweep", settings_text);   // JobFailure otherwise
//   auto sizes = lab::gather_sizes(comm, my_bytes, limit, "sweep: results");
//
// Each throws on every rank alike, with one line naming the ranks that differ.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "lab/ranks/distributed.hpp"

namespace posemb::lab {

// Collective. Throws JobFailure on every rank when the ranks were not given the same settings
// (compared by a 64-bit hash of `settings`; `what` names the command). A single process
// returns at once.
void check_same_on_every_rank(Communicator& comm, std::string_view what, std::string_view settings);

// Collective: every rank's `mine`, in rank order, each checked to be at most `max` (a size a
// peer sends is checked before anything is allocated for it); throws CommunicationError naming
// the rank otherwise (a rank running another command, or another collective).
std::vector<std::uint64_t> gather_sizes(Communicator& comm, std::uint64_t mine, std::uint64_t max,
                                        std::string_view what);

}  // namespace posemb::lab
