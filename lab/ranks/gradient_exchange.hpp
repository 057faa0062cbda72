// lab/ranks/gradient_exchange.hpp: a step's micro-batches shared among the ranks of a job, their
// gradients summed in micro-batch order (the same bits as one process summing them all), each
// rank's share of the sum, and the exchange of what each rank computes from its share.
//
//   lab::GradientExchange ex(comm, 4, sizes);   // 4 micro-batches a step; one size per tensor
//   for (std::size_t i : ex.mine()) { ... gradient of micro-batch i into parts[k] ... }
//   ex.reduce(parts, grads);        // grads in ex.range() = g_0 + g_1 + g_2 + g_3, in order
//   double sq = ex.sum_of_squares(grads);   // of the whole sum, the same bits on any ranks
//   ... update the parameters in ex.range() (posemb::AdamW::step over a range) ...
//   ex.share(values);               // every rank's range of the parameters to every rank
//   ex.gather(my_losses, losses);   // every micro-batch's loss, in micro-batch order
//
// Who computes what: micro-batch i goes to rank p or 2N-1-p, p = i mod 2N (a zigzag over N
// ranks), so when the batch is sorted by length each rank gets short and long micro-batches.
//
// The flat vector is the segments (one per tensor) one after another, G elements; rank r owns
// elements [r G / N, (r + 1) G / N), its range().
//
// How the sum stays exact: floating-point addition is not associative, so the only sum that
// equals one process's is the same one, element k = ((0 + g_0[k]) + g_1[k]) + ... in micro-batch
// order. Each rank sends the part of each of its gradients in rank r's range to rank r
// (MPI_Alltoallv), and rank r sums its range over every micro-batch in that order (reduce: a
// reduce-scatter that keeps the order). What a rank then computes from its range (the optimizer
// step of those elements) is gathered on every rank by share() (MPI_Allgatherv). A rank with k
// micro-batches sends and receives about k * G * (N-1)/N elements, then G * (N-1)/N: with one
// micro-batch per rank, the volume of a ring all-reduce. MPI only moves the floats.
//
// Ranks on one machine skip the messages: each rank writes the parts the others need into its
// own block of shared memory (lab/ranks/shared_blocks.hpp) and reads theirs in place, so a part is
// copied once instead of through MPI's buffers. The sums are the same, in the same order, either
// way. Transport::messages keeps the messages (what ranks on several machines use).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "lab/ranks/distributed.hpp"

namespace posemb::lab {

// The rank that computes micro-batch i when `ranks` ranks share a step.
int micro_batch_rank(std::size_t i, int ranks);

class SharedBlocks;

class GradientExchange {
 public:
  // automatic: shared memory when every rank is on one machine and can map it (decided alike on
  // every rank), messages otherwise; messages: always messages.
  enum class Transport { automatic, messages };

  // micro_batches per step (>= 1); segments: the sizes of the pieces one gradient is made of,
  // in order (the trainer's: one per tensor, in the order of the optimizer's parameter list).
  // Not collective.
  GradientExchange(Communicator& comm, std::size_t micro_batches, std::vector<std::size_t> segments,
                   Transport transport = Transport::automatic);
  ~GradientExchange();
  GradientExchange(GradientExchange&&) noexcept;
  GradientExchange& operator=(GradientExchange&&) noexcept;

  // True when the ranks exchange through shared memory (always false on one process). Decided
  // by the first reduce() or share() (false before).
  bool shares_memory() const { return shared_ != nullptr; }

  // This rank's micro-batches, in increasing order (possibly none: more ranks than
  // micro-batches).
  std::span<const std::size_t> mine() const { return owned_[rank()]; }
  std::size_t micro_batches() const { return owner_.size(); }
  // Elements of one gradient (the sum of the segments).
  std::size_t elements() const { return total_; }

  // Elements [begin, end) of the flat vector.
  struct Range {
    std::size_t begin = 0, end = 0;
  };
  // This rank's range; the ranks' ranges, in rank order, tile the flat vector.
  Range range() const { return range_of(rank()); }
  // The part of segs (laid out as the segments) inside range(): per segment that meets it, the
  // segment's index, the offset of the part in it and the part itself.
  struct Piece {
    std::size_t segment, offset;
    std::span<float> data;
  };
  std::vector<Piece> pieces(std::span<const std::span<float>> segs) const;

  // out (each segment of its size): the elements in range() are written over with the sum over
  // every micro-batch i = 0..n-1, in that order, of its gradient; the others are left as they
  // are. parts[k][s]: segment s of this rank's k-th gradient (mine()[k]), of the segment's size.
  // Collective.
  void reduce(std::span<const std::vector<std::span<const float>>> parts,
              std::span<const std::span<float>> out);
  // segs (each segment of its size): every element outside range() is written over with the
  // value the rank whose range holds it has; the elements in range() are read. Collective.
  void share(std::span<const std::span<float>> segs);
  // reduce() then share(): out (each segment written over) = the whole sum, on every rank.
  void sum(std::span<const std::vector<std::span<const float>>> parts,
           std::span<const std::span<float>> out);
  // The sum of squares of the flat vector, the same bits on any number of ranks and threads and
  // on any CPU: the vector is cut into blocks of kSquareBlock elements (the last may be
  // shorter); in a block, lane j adds double(x) * x of the elements whose flat index is j modulo
  // kSquareLanes, in increasing order, from 0.0; the lanes are then folded in halves (for w =
  // kSquareLanes / 2, ..., 2, 1: lane j += lane j + w for every j < w), and the block sums
  // (lane 0) are added in block order, from 0.0. Each rank adds the blocks that start in its range
  // (their tails in the next ranges come to it in one small exchange), in parallel; one exchange of
  // the block sums. Reads the elements in range() only. Collective.
  static constexpr std::size_t kSquareBlock = 2048, kSquareLanes = 16;
  double sum_of_squares(std::span<const std::span<float>> segs);
  // all (micro_batches()) = every micro-batch's value in micro-batch order, from mine (one per
  // mine() entry, in that order). Collective.
  void gather(std::span<const double> mine, std::span<double> all);

 private:
  std::size_t rank() const { return static_cast<std::size_t>(comm_->rank()); }
  Range range_of(std::size_t r) const;
  void check_segments(const char* op, std::span<const std::span<float>> segs) const;
  // The first reduce() or share() (collective): shared memory, or else the message buffers.
  void connect();
  // Floats of rank r's block of shared memory: the parts of its micro-batch gradients outside its
  // range (for each of its micro-batches in order, the flat vector without its range), then its
  // range of the values share() hands out.
  std::size_t block_floats(std::size_t r) const;
  void reduce_shared(std::span<const std::vector<std::span<const float>>> parts,
                     std::span<const std::span<float>> out);
  void share_shared(std::span<const std::span<float>> segs);

  Communicator* comm_;
  std::vector<std::size_t> segments_;
  std::size_t total_ = 0;
  std::vector<int> owner_;                       // (micro_batches) rank of each
  std::vector<std::vector<std::size_t>> owned_;  // (ranks) micro-batches of each, increasing
  std::vector<std::size_t> nth_;  // (micro_batches) its place in its owner's owned_ list
  Transport transport_ = Transport::automatic;
  bool connected_ = false;
  std::vector<float> send_, recv_, chunk_, full_;  // message buffers, sized once
  std::unique_ptr<SharedBlocks> shared_;           // or null: messages
};

}  // namespace posemb::lab
