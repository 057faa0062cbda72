// lab/gradient_exchange.hpp: a step's micro-batches shared among the ranks of a job, and their
// gradients summed in micro-batch order, the same bits as one process summing them all.
//
//   lab::GradientExchange ex(comm, 4, {arena_size, table_size});   // 4 micro-batches a step
//   for (std::size_t i : ex.mine()) { ... gradient of micro-batch i into parts[k] ... }
//   ex.sum(parts, out);             // out = g_0 + g_1 + g_2 + g_3, element by element, in order
//   ex.gather(my_losses, losses);   // every micro-batch's loss, in micro-batch order
//
// Who computes what: micro-batch i goes to rank p or 2N-1-p, p = i mod 2N (a zigzag over N
// ranks), so when the batch is sorted by length each rank gets short and long micro-batches.
//
// How the sum stays exact: floating-point addition is not associative, so the only sum that
// equals one process's is the same one, element k = ((0 + g_0[k]) + g_1[k]) + ... in micro-batch
// order. The flat gradient (G elements) is cut into N chunks; each rank sends chunk r of each of
// its gradients to rank r (MPI_Alltoallv), rank r sums its chunk over every micro-batch in that
// order, and the N summed chunks are gathered on every rank (MPI_Allgatherv). A rank with k
// micro-batches sends and receives about k * G * (N-1)/N elements, then G * (N-1)/N: with one
// micro-batch per rank, the volume of a ring all-reduce. MPI only moves the floats.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "lab/distributed.hpp"

namespace posemb::lab {

// The rank that computes micro-batch i when `ranks` ranks share a step.
int micro_batch_rank(std::size_t i, int ranks);

class GradientExchange {
 public:
  // micro_batches per step (>= 1); segments: the sizes of the pieces one gradient is made of
  // (the model's arena, then each encoding tensor), in order.
  GradientExchange(Communicator& comm, std::size_t micro_batches,
                   std::vector<std::size_t> segments);

  // This rank's micro-batches, in increasing order (possibly none: more ranks than
  // micro-batches).
  std::span<const std::size_t> mine() const { return owned_[rank()]; }
  std::size_t micro_batches() const { return owner_.size(); }
  // Elements of one gradient (the sum of the segments).
  std::size_t elements() const { return total_; }

  // out (each segment written over) = the sum over every micro-batch i = 0..n-1, in that order,
  // of its gradient. parts[k][s]: segment s of this rank's k-th gradient (mine()[k]), each of
  // the segment's size. Collective.
  void sum(std::span<const std::vector<std::span<const float>>> parts,
           std::span<const std::span<float>> out);
  // all (micro_batches()) = every micro-batch's value in micro-batch order, from mine (one per
  // mine() entry, in that order). Collective.
  void gather(std::span<const double> mine, std::span<double> all);

 private:
  std::size_t rank() const { return static_cast<std::size_t>(comm_->rank()); }
  std::size_t chunk_begin(std::size_t r) const;

  Communicator* comm_;
  std::vector<std::size_t> segments_;
  std::size_t total_ = 0;
  std::vector<int> owner_;                         // (micro_batches) rank of each
  std::vector<std::vector<std::size_t>> owned_;    // (ranks) micro-batches of each, increasing
  std::vector<float> send_, recv_, chunk_, full_;  // exchange buffers, sized once
};

}  // namespace posemb::lab
