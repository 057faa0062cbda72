#include "lab/ranks/gradient_exchange.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>

#include "lab/ranks/shared_blocks.hpp"
#include "posemb/parallel.hpp"

namespace posemb::lab {
namespace {

// dst (n) = the sum of srcs (each n), element by element in the order given: s = 0, s += src[k]
// for each src. Deterministic; the one summation of micro-batch gradients, on one rank or many.
void sum_in_order(float* dst, std::size_t n, const std::vector<const float*>& srcs) {
  constexpr std::size_t kGrain = std::size_t{1} << 14;  // elements per chunk
  parallel_for(n, kGrain, n * srcs.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      float s = 0.0f;
      for (const float* src : srcs) s += src[k];
      dst[k] = s;
    }
  });
}

// Copies elements [begin, end) of a gradient made of `segs` into dst.
void copy_out(std::span<const std::span<const float>> segs, std::size_t begin, std::size_t end,
              float* dst) {
  std::size_t at = 0;
  for (const auto& s : segs) {
    const std::size_t lo = std::max(begin, at), hi = std::min(end, at + s.size());
    if (lo < hi) dst = std::copy(s.data() + (lo - at), s.data() + (hi - at), dst);
    at += s.size();
  }
}

// Writes src into elements [begin, end) of a vector made of `segs`.
void copy_in(const float* src, std::size_t begin, std::size_t end,
             std::span<const std::span<float>> segs) {
  std::size_t at = 0;
  for (const auto& s : segs) {
    const std::size_t lo = std::max(begin, at), hi = std::min(end, at + s.size());
    if (lo < hi) {
      std::copy_n(src, hi - lo, s.data() + (lo - at));
      src += hi - lo;
    }
    at += s.size();
  }
}

}  // namespace

int micro_batch_rank(std::size_t i, int ranks) {
  if (ranks < 1)
    throw std::invalid_argument("micro_batch_rank: " + std::to_string(ranks) + " ranks");
  const auto n = static_cast<std::size_t>(ranks);
  const std::size_t p = i % (2 * n);
  return static_cast<int>(p < n ? p : 2 * n - 1 - p);
}

GradientExchange::GradientExchange(Communicator& comm, std::size_t micro_batches,
                                   std::vector<std::size_t> segments, Transport transport)
    : comm_(&comm), segments_(std::move(segments)), transport_(transport) {
  if (micro_batches == 0) {
    throw std::invalid_argument("GradientExchange: a step needs at least one micro-batch");
  }
  total_ = std::accumulate(segments_.begin(), segments_.end(), std::size_t{0});
  const auto n = static_cast<std::size_t>(comm.size());
  owned_.resize(n);
  for (std::size_t i = 0; i < micro_batches; ++i) {
    owner_.push_back(micro_batch_rank(i, comm.size()));
    auto& theirs = owned_[static_cast<std::size_t>(owner_.back())];
    nth_.push_back(theirs.size());
    theirs.push_back(i);
  }
  if (n == 1) return;
  // The exchange's sizes, checked here (the same numbers on every rank) rather than inside MPI.
  const std::size_t most = (total_ + n - 1) / n * micro_batches;
  if (most > static_cast<std::size_t>(INT_MAX)) {
    throw std::invalid_argument(
        "GradientExchange: " + std::to_string(micro_batches) + " micro-batch gradients of " +
        std::to_string(total_) + " elements on " + std::to_string(n) +
        " ranks exceed MPI's limit of " + std::to_string(INT_MAX) +
        " elements per exchange; use fewer, larger micro-batches or more ranks");
  }
}

void GradientExchange::connect() {
  if (connected_) return;
  // Collective (the first reduce() or share(), where every rank is): the constructor is not, so
  // that a rank failing before it does not leave the others in a collective of their own.
  if (transport_ == Transport::automatic) {
    shared_ = SharedBlocks::create(*comm_, block_floats(rank()) * sizeof(float));
  }
  connected_ = true;
  if (shared_) return;
  // Buffers for the parts that travel: this rank's gradients outside its range, the others'
  // inside it.
  const Range me = range();
  const std::size_t mine_len = me.end - me.begin;
  send_.resize(owned_[rank()].size() * (total_ - mine_len));
  recv_.resize((owner_.size() - owned_[rank()].size()) * mine_len);
  chunk_.resize(mine_len);
  full_.resize(total_);
}

GradientExchange::~GradientExchange() = default;
GradientExchange::GradientExchange(GradientExchange&&) noexcept = default;
GradientExchange& GradientExchange::operator=(GradientExchange&&) noexcept = default;

std::size_t GradientExchange::block_floats(std::size_t r) const {
  const Range theirs = range_of(r);
  const std::size_t len = theirs.end - theirs.begin;
  return owned_[r].size() * (total_ - len) + len;
}

GradientExchange::Range GradientExchange::range_of(std::size_t r) const {
  const auto n = static_cast<std::size_t>(comm_->size());
  // r * total / n without overflow for any realistic total.
  auto at = [&](std::size_t q) { return total_ / n * q + total_ % n * q / n; };
  return {at(r), at(r + 1)};
}

void GradientExchange::check_segments(const char* op,
                                      std::span<const std::span<float>> segs) const {
  bool ok = segs.size() == segments_.size();
  for (std::size_t s = 0; ok && s < segs.size(); ++s) ok = segs[s].size() == segments_[s];
  if (!ok) {
    throw std::invalid_argument(std::string("GradientExchange::") + op + ": " +
                                std::to_string(segs.size()) + " segments for " +
                                std::to_string(segments_.size()) +
                                ", or a segment whose size is not the layout's");
  }
}

std::vector<GradientExchange::Piece> GradientExchange::pieces(
    std::span<const std::span<float>> segs) const {
  check_segments("pieces", segs);
  const Range me = range();
  std::vector<Piece> out;
  std::size_t at = 0;
  for (std::size_t s = 0; s < segs.size(); ++s) {
    const std::size_t lo = std::max(me.begin, at), hi = std::min(me.end, at + segs[s].size());
    if (lo < hi) out.push_back({s, lo - at, segs[s].subspan(lo - at, hi - lo)});
    at += segs[s].size();
  }
  return out;
}

void GradientExchange::reduce(std::span<const std::vector<std::span<const float>>> parts,
                              std::span<const std::span<float>> out) {
  const auto& mine = owned_[rank()];
  if (parts.size() != mine.size()) {
    throw std::invalid_argument("GradientExchange::reduce: " + std::to_string(parts.size()) +
                                " gradients for " + std::to_string(mine.size()) + " micro-batches");
  }
  check_segments("reduce", out);
  for (const auto& p : parts) {
    for (std::size_t s = 0; s < segments_.size(); ++s) {
      if (p.size() != segments_.size() || p[s].size() != segments_[s]) {
        throw std::invalid_argument(
            "GradientExchange::reduce: a gradient's segment size is not the layout's");
      }
    }
  }
  const auto n = static_cast<std::size_t>(comm_->size());
  std::vector<const float*> srcs(owner_.size());
  if (n == 1) {
    // One process: sum each segment straight from the micro-batch gradients.
    for (std::size_t s = 0; s < segments_.size(); ++s) {
      for (std::size_t i = 0; i < srcs.size(); ++i) srcs[i] = parts[i][s].data();
      sum_in_order(out[s].data(), segments_[s], srcs);
    }
    return;
  }
  connect();
  if (shared_) {
    reduce_shared(parts, out);
    return;
  }
  // The part of each of this rank's gradients in rank r's range goes to rank r; the part in its
  // own range stays where it is.
  const std::size_t me = rank();
  std::vector<std::size_t> send_counts(n), recv_counts(n);
  float* dst = send_.data();
  for (std::size_t r = 0; r < n; ++r) {
    if (r == me) continue;
    const Range theirs = range_of(r);
    send_counts[r] = mine.size() * (theirs.end - theirs.begin);
    recv_counts[r] = owned_[r].size() * chunk_.size();
    for (const auto& p : parts) {
      copy_out(p, theirs.begin, theirs.end, dst);
      dst += theirs.end - theirs.begin;
    }
  }
  comm_->alltoallv(std::span<const float>(send_.data(), dst - send_.data()), send_counts,
                   std::span<float>(recv_), recv_counts);
  // Micro-batch i's part of this rank's range: in parts when this rank computed it, else in
  // recv_, where rank r's arrive in r's own (increasing) order. Summed in micro-batch order,
  // piece by piece (the range's part of each segment), straight into out.
  std::vector<std::size_t> from(n);
  for (std::size_t r = 1; r < n; ++r) from[r] = from[r - 1] + recv_counts[r - 1];
  const Range range_me = range();
  std::size_t at = 0;
  for (std::size_t s = 0; s < segments_.size(); at += segments_[s], ++s) {
    const std::size_t lo = std::max(range_me.begin, at);
    const std::size_t hi = std::min(range_me.end, at + segments_[s]);
    if (lo >= hi) continue;
    for (std::size_t i = 0; i < owner_.size(); ++i) {
      const auto r = static_cast<std::size_t>(owner_[i]);
      srcs[i] = r == me ? parts[nth_[i]][s].data() + (lo - at)
                        : recv_.data() + from[r] + nth_[i] * chunk_.size() + (lo - range_me.begin);
    }
    sum_in_order(out[s].data() + (lo - at), hi - lo, srcs);
  }
}

void GradientExchange::reduce_shared(std::span<const std::vector<std::span<const float>>> parts,
                                     std::span<const std::span<float>> out) {
  const std::size_t me = rank();
  const Range mine = range();
  const std::size_t len = mine.end - mine.begin;
  auto* block = static_cast<float*>(shared_->mine());
  // Every rank is done reading this block's last contents; then each of this rank's gradients
  // goes in without its own range (which stays where it is).
  shared_->fence();
  for (std::size_t k = 0; k < parts.size(); ++k) {
    float* dst = block + k * (total_ - len);
    copy_out(parts[k], 0, mine.begin, dst);
    copy_out(parts[k], mine.end, total_, dst + mine.begin);
  }
  shared_->fence();
  // Element e of this rank's range, micro-batch i: in parts when this rank computed it, else in
  // its owner r's block, as r's nth_[i]-th gradient, at e less r's range when r's range is before.
  std::vector<const float*> srcs(owner_.size());
  std::size_t at = 0;
  for (std::size_t s = 0; s < segments_.size(); at += segments_[s], ++s) {
    const std::size_t lo = std::max(mine.begin, at), hi = std::min(mine.end, at + segments_[s]);
    if (lo >= hi) continue;
    for (std::size_t i = 0; i < owner_.size(); ++i) {
      const auto r = static_cast<std::size_t>(owner_[i]);
      if (r == me) {
        srcs[i] = parts[nth_[i]][s].data() + (lo - at);
        continue;
      }
      const Range theirs = range_of(r);
      const std::size_t theirs_len = theirs.end - theirs.begin;
      srcs[i] = static_cast<const float*>(shared_->of(static_cast<int>(r))) +
                nth_[i] * (total_ - theirs_len) + (lo - (r < me ? theirs_len : 0));
    }
    sum_in_order(out[s].data() + (lo - at), hi - lo, srcs);
  }
}

void GradientExchange::share_shared(std::span<const std::span<float>> segs) {
  const auto n = static_cast<std::size_t>(comm_->size());
  const Range mine = range();
  auto* area =
      static_cast<float*>(shared_->mine()) + (block_floats(rank()) - (mine.end - mine.begin));
  shared_->fence();  // every rank is done reading this rank's last values
  std::vector<std::span<const float>> read(segs.begin(), segs.end());
  copy_out(read, mine.begin, mine.end, area);
  shared_->fence();
  for (std::size_t r = 0; r < n; ++r) {
    if (r == rank()) continue;
    const Range theirs = range_of(r);
    const float* src = static_cast<const float*>(shared_->of(static_cast<int>(r))) +
                       (block_floats(r) - (theirs.end - theirs.begin));
    copy_in(src, theirs.begin, theirs.end, segs);
  }
}

void GradientExchange::share(std::span<const std::span<float>> segs) {
  check_segments("share", segs);
  const auto n = static_cast<std::size_t>(comm_->size());
  if (n == 1) return;
  connect();
  if (shared_) {
    share_shared(segs);
    return;
  }
  const Range me = range();
  std::vector<std::span<const float>> read(segs.begin(), segs.end());
  copy_out(read, me.begin, me.end, chunk_.data());
  std::vector<std::size_t> counts(n);
  for (std::size_t r = 0; r < n; ++r) counts[r] = range_of(r).end - range_of(r).begin;
  comm_->allgatherv(std::span<const float>(chunk_), std::span<float>(full_), counts);
  for (std::size_t r = 0; r < n; ++r) {
    if (r == rank()) continue;
    const Range theirs = range_of(r);
    copy_in(full_.data() + theirs.begin, theirs.begin, theirs.end, segs);
  }
}

void GradientExchange::sum(std::span<const std::vector<std::span<const float>>> parts,
                           std::span<const std::span<float>> out) {
  reduce(parts, out);
  share(out);
}

namespace {

constexpr std::size_t kLanes = GradientExchange::kSquareLanes;

// A run of the flat vector's elements held in memory: elements [at, at + data.size()).
struct Run {
  std::size_t at;
  std::span<const float> data;
};

// lanes[k mod kLanes] += double(x) * x for the elements x of `data`, k its flat index (from at).
void add_squares(double* lanes, std::span<const float> data, std::size_t at) {
  const float* x = data.data();
  const std::size_t n = data.size();
  std::size_t i = 0;
  for (; i < n && (at + i) % kLanes != 0; ++i) lanes[(at + i) % kLanes] += double(x[i]) * x[i];
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) lanes[j] += double(x[i + j]) * x[i + j];
  }
  for (; i < n; ++i) lanes[(at + i) % kLanes] += double(x[i]) * x[i];
}

// The block sum of elements [begin, end) of the flat vector, read from `runs` (sorted by at,
// covering [begin, end)): the lanes, then folded in halves (lane j += lane j + w, j < w).
double block_sum(std::span<const Run> runs, std::size_t begin, std::size_t end) {
  double lanes[kLanes] = {};
  auto r = std::upper_bound(runs.begin(), runs.end(), begin,
                            [](std::size_t k, const Run& run) { return k < run.at; });
  if (r != runs.begin()) --r;
  for (; r != runs.end() && r->at < end; ++r) {
    const std::size_t lo = std::max(begin, r->at), hi = std::min(end, r->at + r->data.size());
    if (lo < hi) add_squares(lanes, r->data.subspan(lo - r->at, hi - lo), lo);
  }
  for (std::size_t w = kLanes / 2; w >= 1; w /= 2) {
    for (std::size_t j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  }
  return lanes[0];
}

// The first block start at or after k.
std::size_t block_start_from(std::size_t k) {
  constexpr std::size_t K = GradientExchange::kSquareBlock;
  return k / K * K + (k % K != 0 ? K : 0);
}

}  // namespace

double GradientExchange::sum_of_squares(std::span<const std::span<float>> segs) {
  constexpr std::size_t K = kSquareBlock;
  const auto n = static_cast<std::size_t>(comm_->size());
  const Range me = range();
  // This rank's elements as runs of the flat vector.
  std::vector<Run> runs;
  std::vector<std::size_t> seg_at(segments_.size() + 1, 0);
  for (std::size_t s = 0; s < segments_.size(); ++s) seg_at[s + 1] = seg_at[s] + segments_[s];
  for (const Piece& p : pieces(segs)) runs.push_back({seg_at[p.segment] + p.offset, p.data});
  // The blocks that start in a rank's range are its to add. The elements of a rank's range
  // before its first block start belong to a block that starts in an earlier range: every rank
  // hands them to every rank (small: fewer than kSquareBlock each).
  std::vector<float> heads;
  if (n > 1) {
    std::vector<std::size_t> counts(n), at(n + 1, 0);
    for (std::size_t r = 0; r < n; ++r) {
      const Range q = range_of(r);
      counts[r] = std::min(q.end, block_start_from(q.begin)) - q.begin;
      at[r + 1] = at[r] + counts[r];
    }
    std::vector<float> mine(counts[rank()]);
    std::vector<std::span<const float>> read(segs.begin(), segs.end());
    copy_out(read, me.begin, me.begin + mine.size(), mine.data());
    heads.resize(at[n]);
    comm_->allgatherv(std::span<const float>(mine), std::span<float>(heads), counts);
    for (std::size_t r = rank() + 1; r < n; ++r) {
      if (counts[r] > 0) runs.push_back({range_of(r).begin, {heads.data() + at[r], counts[r]}});
    }
  }
  const std::size_t first = block_start_from(me.begin);
  const std::size_t blocks = (block_start_from(me.end) - first) / K;
  std::vector<double> sums(blocks);
  parallel_for(blocks, 16, blocks * K, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t b = b0; b < b1; ++b) {
      const std::size_t begin = first + b * K;
      sums[b] = block_sum(runs, begin, std::min(begin + K, total_));
    }
  });
  std::vector<double> all;
  if (n > 1) {
    std::vector<std::size_t> counts(n);
    for (std::size_t r = 0; r < n; ++r) {
      const Range q = range_of(r);
      counts[r] = (block_start_from(q.end) - block_start_from(q.begin)) / K;
    }
    all.resize(block_start_from(total_) / K);
    comm_->allgatherv(std::span<const double>(sums), std::span<double>(all), counts);
  } else {
    all = std::move(sums);
  }
  double sq = 0.0;
  for (const double s : all) sq += s;
  return sq;
}

void GradientExchange::gather(std::span<const double> mine, std::span<double> all) {
  const auto n = static_cast<std::size_t>(comm_->size());
  if (mine.size() != owned_[rank()].size() || all.size() != owner_.size()) {
    throw std::invalid_argument("GradientExchange::gather: " + std::to_string(mine.size()) +
                                " values for " + std::to_string(owned_[rank()].size()) +
                                " micro-batches, room for " + std::to_string(all.size()) + " of " +
                                std::to_string(owner_.size()));
  }
  std::vector<std::size_t> counts(n);
  for (std::size_t r = 0; r < n; ++r) counts[r] = owned_[r].size();
  std::vector<double> by_rank(owner_.size());
  comm_->allgatherv(mine, std::span<double>(by_rank), counts);
  std::size_t at = 0;
  for (std::size_t r = 0; r < n; ++r) {
    for (const std::size_t i : owned_[r]) all[i] = by_rank[at++];
  }
}

}  // namespace posemb::lab
