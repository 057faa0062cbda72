// posemb/rope.hpp: rotary position embedding (RoPE, Su et al. 2021) of queries and keys,
// forward and backward, in both pairings in use.
//
//   // q and k: column blocks of a fused qkv buffer (B*T, 3C), C = H*D.
//   posemb::Rope rope(64, posemb::RopeLayout::half);          // D = 64, base 10000 (HF Llama)
//   posemb::RopeCache cache(rope, 2048);                       // cos/sin of positions [0, 2048)
//   auto q = qkv.view().subcols(0, C), k = qkv.view().subcols(C, C);
//   auto src = posemb::PositionSource::contiguous();
//   posemb::rope_forward(q, H, B, T, src, cache);              // q rotated in place
//   posemb::rope_forward(k, H, B, T, src, cache);
//   // ... attention, its backward gives dq, dk (column blocks of dqkv) ...
//   posemb::rope_backward(dq, H, B, T, src, cache);            // dq: dL/dq_rot in, dL/dq out
//   posemb::rope_backward(dk, H, B, T, src, cache);
//   cache.reserve(4096);                                       // growing is explicit
//   posemb::rope_forward(q1, H, 1, 1, posemb::PositionSource::contiguous(3000), rope);  // any p
//
//   // Past the trained length (posemb/rope_scaling.hpp; from a config.json: rope_config.hpp):
//   posemb::Rope yarn(128, posemb::RopeLayout::half,
//                     {.base = 1e6, .scaling = posemb::YarnScaling{
//                                      .factor = 4, .original_max_position_embeddings = 32768}});
//
// Each head of D columns rotates its first R = rotary_dim columns (all D by default) in R/2
// planes; pair i turns by the angle p * theta_i, theta_i = base^(-2i / R), p the token's
// position:  a' = a cos - b sin,  b' = a sin + b cos. The layout says which columns pair up:
//   RopeLayout::interleaved  (2i, 2i+1)    RoFormer, GPT-J (rotate_every_two), Su et al. 2021
//   RopeLayout::half         (i, i + R/2)  GPT-NeoX, HF Llama / Mistral / Qwen (rotate_half)
// The two are not interchangeable: a checkpoint trained with one gives wrong attention with the
// other, so the layout has no default. Columns [R, D) of each head pass unchanged (GPT-J's
// rotary_dim, GPT-NeoX's rotary_pct * D). A scaling (RopeOptions::scaling, rope_scaling.hpp)
// changes theta_i and may multiply cos and sin by an attention factor m (YaRN, LongRoPE):
// a' = m (a cos - b sin),  b' = m (a sin + b cos).
//
// Positions come from a PositionSource (posemb/positions.hpp): contiguous from a start (cached
// decoding), explicit ids, a padding mask (pads are left unrotated), packed documents
// (positions restart after each separator).
//
// The backward is the rotation's transpose (the inverse rotation, by -p * theta_i, times the
// attention factor): given dL/dx' it writes dL/dx over the same memory. Forward and backward work
// in place on any view, strided (column blocks of a fused buffer) or not.
//
// Accuracy: angles are formed in double (cos and sin by posemb's own double precision kernel,
// the same bits on every SIMD target), and in long double once they exceed 2^24, then cos and
// sin (times m, in double) are rounded to float. Every rotated value is within
// 3e-7 * m * (|a| + |b|) of the exact rotation of its pair (a, b), at every position up to
// 2^31 (tested there against long double; float32 angles are off by whole radians at such
// positions; posemb/rope_precision.hpp measures by how much).
//
// Threads: rope_forward and rope_backward only read a RopeCache, so any number of threads may
// rotate with one cache at once (one cache for every layer of a model). reserve() changes the
// cache: call it when no other thread uses it; it invalidates views from cos() and sin().
// Results are the same for any thread count (each element is computed alone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "posemb/errors.hpp"
#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/positions.hpp"
#include "posemb/rope_scaling.hpp"

namespace posemb {

// Which columns of a head rotate together. There is no default: the values start at 1, so a
// value-initialized layout (`Rope r(8, {})`) is 0, no listed value, and refused.
enum class RopeLayout : std::uint8_t {
  interleaved = 1,  // (2i, 2i+1): RoFormer, GPT-J, Su et al. 2021
  half = 2,         // (i, i + R/2): GPT-NeoX, HF Llama
};

struct RopeOptions {
  double base = 10000.0;              // theta: in [1e-300, 1e300] (Llama 3: 500000)
  std::size_t rotary_dim = 0;         // R, the leading columns of each head that rotate; 0: all D
  RopeScaling scaling = NoScaling{};  // past the trained length (posemb/rope_scaling.hpp)
  // The length of the sequences rotated, for the scalings that depend on it (dynamic: NTK from
  // max(seq_len, L0); longrope: long factors past L0); 0: the trained length. The others
  // ignore it. See rope_scaling.hpp on cached keys.
  std::size_t seq_len = 0;
};

// The rotation: head dimension, layout, base, rotated columns. A small value type.
class Rope {
 public:
  // Throws std::invalid_argument when head_dim is 0, odd or larger than kMaxRopeHeadDim,
  // rotary_dim is odd or larger than head_dim, the base is outside [1e-300, 1e300] (its
  // inverse frequencies would not be normal doubles), or layout holds no listed value (naming
  // it: RopeLayout{} is 0, refused, since the layout has no default); RopeScalingError (a
  // std::invalid_argument) for a scaling out of range or whose frequencies would be
  // (rope_frequencies).
  Rope(std::size_t head_dim, RopeLayout layout, const RopeOptions& options = {});

  // The same rotation for sequences of seq_len positions (dynamic, longrope: other
  // frequencies; the other scalings: the same ones).
  Rope with_seq_len(std::size_t seq_len) const;

  std::size_t head_dim() const noexcept { return head_dim_; }      // D
  std::size_t rotary_dim() const noexcept { return rotary_dim_; }  // R (resolved: never 0)
  std::size_t pairs() const noexcept { return rotary_dim_ / 2; }   // R/2 rotation planes
  RopeLayout layout() const noexcept { return layout_; }
  double base() const noexcept { return base_; }  // as given (the base in effect: frequencies())
  const RopeScaling& scaling() const& noexcept { return scaling_; }
  RopeScaling scaling() const&& { return scaling_; }  // a copy: the Rope is a temporary
  std::size_t seq_len() const noexcept { return seq_len_; }
  double attention_factor() const noexcept { return freq_.attention_factor; }
  // theta_i as used (long double), per pair what the scaling did, the base in effect.
  const RopeFrequencies& frequencies() const& noexcept { return freq_; }
  RopeFrequencies frequencies() const&& { return freq_; }  // a copy: the Rope is a temporary

  // a * cos(p * theta_i) and a * sin(p * theta_i) for i < pairs() (a: the attention factor,
  // 1 unless the scaling sets it), written over. Throws std::invalid_argument when either span
  // does not hold pairs() values, or when they share memory.
  void angles(std::size_t position, std::span<float> cos, std::span<float> sin) const;

 private:
  std::size_t head_dim_;
  std::size_t rotary_dim_;
  RopeLayout layout_;
  double base_;
  RopeScaling scaling_;
  std::size_t seq_len_;
  RopeFrequencies freq_;            // theta_i in long double, the attention factor
  std::vector<double> inv_freq_d_;  // theta_i rounded to double
};

// cos and sin of a Rope's angles for positions [0, positions()), precomputed once and shared by
// every layer (and thread) that rotates with it. Grows only when told to (reserve).
class RopeCache {
 public:
  // Precomputes positions [0, positions). Throws like Matrix for a size that does not fit.
  explicit RopeCache(const Rope& rope, std::size_t positions = 0);

  // Makes positions [0, positions) available: computes the missing rows (existing rows keep
  // their values bit for bit); never shrinks. Not thread-safe (see the header comment).
  void reserve(std::size_t positions);

  std::size_t positions() const noexcept { return cos_.rows(); }
  const Rope& rope() const& noexcept { return rope_; }
  MatrixView<const float> cos() const& noexcept { return cos_.cview(); }  // (positions, R/2)
  MatrixView<const float> sin() const& noexcept { return sin_.cview(); }  // (positions, R/2)
  // A view into a temporary cache (const or not) would dangle at the end of the statement.
  void rope() const&& = delete;
  void cos() const&& = delete;
  void sin() const&& = delete;

 private:
  Rope rope_;
  Matrix<float> cos_;
  Matrix<float> sin_;
};

// Rotates every head of every token of x in place by its position's angles:
//   x[b*T + t, h*D + i] for h < heads, in the pairs of cache.rope().layout().
// Pads of a padding mask are left as they are. Throws std::invalid_argument when x is not
// (batch * seq_len, heads * D) (naming the columns, heads and D), for an empty batch or a bad
// position source; SequenceTooLong for a position at or past cache.positions() (reserve more);
// std::out_of_range for a negative explicit id. Nothing is written when it throws.
void rope_forward(MatrixView<float> x,  // (B*T, H*D), written over (rotated in place)
                  std::size_t heads, std::size_t batch, std::size_t seq_len,
                  const PositionSource& positions, const RopeCache& cache);

// The same, computing each token's cos and sin from the Rope (no cache, no position limit short
// of 2^63 - 1; the values are bit for bit those of a RopeCache). For a few tokens at any
// position (decoding far out); a cache is faster when many tokens or layers share positions.
void rope_forward(MatrixView<float> x,  // (B*T, H*D), written over (rotated in place)
                  std::size_t heads, std::size_t batch, std::size_t seq_len,
                  const PositionSource& positions, const Rope& rope);

// The backward of rope_forward: dx holds dL/d(rotated x) and is written over with dL/dx, the
// inverse rotation (pads: unchanged). Same arguments and errors as rope_forward.
void rope_backward(MatrixView<float> dx,  // (B*T, H*D), written over (in place)
                   std::size_t heads, std::size_t batch, std::size_t seq_len,
                   const PositionSource& positions, const RopeCache& cache);
void rope_backward(MatrixView<float> dx,  // (B*T, H*D), written over (in place)
                   std::size_t heads, std::size_t batch, std::size_t seq_len,
                   const PositionSource& positions, const Rope& rope);

}  // namespace posemb
