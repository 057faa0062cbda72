// The rotary embedding's cases (rope_cases.hpp).
//
// Traffic model: the rotation reads and writes x in place once (2 * B*T*H*D floats); with a cache
// it also reads the T rows of cos and sin once (the batch rows share them).
#include "harness/rope_cases.hpp"

#include <memory>

#include "peers/rope_loop.hpp"
#include "posemb/posemb.hpp"

namespace posemb::bench {

std::string RopeShape::describe() const {
  return "B=" + std::to_string(B) + " T=" + std::to_string(T) + " H=" + std::to_string(H) +
         " D=" + std::to_string(D);
}

namespace {

// Queries N(0, 1), rotated over and over in place (a rotation keeps their size).
struct RopeProblem {
  RopeShape s;
  Rope rope;
  RopeCache cache;
  Matrix<float> x;

  explicit RopeProblem(const RopeShape& sh)
      : s(sh), rope(sh.D, RopeLayout::half), cache(rope, sh.T), x(sh.B * sh.T, sh.H * sh.D) {
    initialize_table(x.view(), {InitKind::normal, 1.0, 6});
  }
  double x_bytes() const { return 2.0 * static_cast<double>(x.size() * sizeof(float)); }
  double cache_bytes() const {
    return 2.0 * static_cast<double>(s.T * rope.pairs() * sizeof(float));
  }
  int i(std::size_t v) const { return static_cast<int>(v); }

  void forward() { rope_forward(x.view(), s.H, s.B, s.T, PositionSource::contiguous(), cache); }
  void backward() { rope_backward(x.view(), s.H, s.B, s.T, PositionSource::contiguous(), cache); }
  void forward_uncached() {
    rope_forward(x.view(), s.H, s.B, s.T, PositionSource::contiguous(), rope);
  }
  void backward_uncached() {
    rope_backward(x.view(), s.H, s.B, s.T, PositionSource::contiguous(), rope);
  }
  void loop_forward() {
    posemb_loop_rope_forward(x.data(), cache.cos().data(), cache.sin().data(), i(s.B), i(s.T),
                             i(s.H), i(s.D));
  }
  void loop_forward_omp() {
    posemb_loop_rope_forward_omp(x.data(), cache.cos().data(), cache.sin().data(), i(s.B), i(s.T),
                                 i(s.H), i(s.D));
  }
  void loop_backward() {
    posemb_loop_rope_backward(x.data(), cache.cos().data(), cache.sin().data(), i(s.B), i(s.T),
                              i(s.H), i(s.D));
  }
};

}  // namespace

std::vector<Case> rope_cases(const std::vector<int>& threads, bool with_loop) {
  std::vector<Case> cases;
  const RopeShape& s = kGpt2RopeShape;
  auto p = std::make_shared<RopeProblem>(s);
  const double cached = p->x_bytes() + p->cache_bytes(), direct = p->x_bytes();
  auto add = [&](const char* op, Impl impl, int t, double bytes, std::function<void()> run) {
    cases.push_back({op, s.tag, s.describe(), impl, t, bytes, std::move(run), ""});
  };
  if (with_loop) {
    add("rope_forward", Impl::loop, 1, cached, [p] { p->loop_forward(); });
    add("rope_backward", Impl::loop, 1, cached, [p] { p->loop_backward(); });
  }
  for (int t : threads) {
    if (with_loop) add("rope_forward", Impl::loop_omp, t, cached, [p] { p->loop_forward_omp(); });
    add("rope_forward", Impl::posemb, t, cached, [p] { p->forward(); });
    add("rope_backward", Impl::posemb, t, cached, [p] { p->backward(); });
    add("rope_forward_uncached", Impl::posemb, t, direct, [p] { p->forward_uncached(); });
    add("rope_backward_uncached", Impl::posemb, t, direct, [p] { p->backward_uncached(); });
  }
  return cases;
}

}  // namespace posemb::bench
