// T5's relative position bias cases (relative_bias_cases.hpp).
//
// Traffic model: the forward writes the (H, Tq, Tk) bias once, the backward reads the gradient
// of that size once; the (32, H) table and its gradient stay in L1.
#include "harness/relative_bias_cases.hpp"

#include <memory>

#include "peers/relative_bias_loop.hpp"
#include "posemb/posemb.hpp"

namespace posemb::bench {

std::string RelativeBiasShape::describe() const {
  return "H=" + std::to_string(H) + " Tq=" + std::to_string(Tq) + " Tk=" + std::to_string(Tk) +
         " buckets 32/128";
}

namespace {

struct RelativeBiasProblem {
  RelativeBiasShape s;
  RelativeBuckets buckets{};  // T5's: 32 buckets, max_distance 128, bidirectional
  Matrix<float> table, bias, dtable;
  Matrix<int> bucket;  // (Tq, Tk): the peer's precomputed bucket ids

  explicit RelativeBiasProblem(const RelativeBiasShape& sh)
      : s(sh), table(32, sh.H), bias(sh.H * sh.Tq, sh.Tk), dtable(32, sh.H), bucket(sh.Tq, sh.Tk) {
    initialize_table(table.view(), {InitKind::normal, 0.02, 7});
    initialize_table(bias.view(), {InitKind::normal, 1.0, 8});  // the backward's dbias
    for (std::size_t i = 0; i < sh.Tq; ++i) {
      for (std::size_t j = 0; j < sh.Tk; ++j) {
        const auto r = static_cast<std::int64_t>(j) - static_cast<std::int64_t>(sh.query_start + i);
        bucket(i, j) = static_cast<int>(t5_relative_bucket(r, buckets));
      }
    }
  }
  double bytes() const { return static_cast<double>(bias.size() * sizeof(float)); }
  int i(std::size_t v) const { return static_cast<int>(v); }
  RelativeBiasOptions options() const { return {.query_start = s.query_start}; }

  void forward() { relative_bias_forward(bias, table, buckets, s.Tq, options()); }
  void backward() { relative_bias_backward(dtable, bias, buckets, s.Tq, options()); }
  void loop_forward() {
    posemb_loop_relative_bias_forward(bias.data(), table.data(), bucket.data(), i(s.H), i(s.Tq),
                                      i(s.Tk));
  }
  void loop_forward_omp() {
    posemb_loop_relative_bias_forward_omp(bias.data(), table.data(), bucket.data(), i(s.H), i(s.Tq),
                                          i(s.Tk));
  }
  void loop_backward() {
    posemb_loop_relative_bias_backward(dtable.data(), bias.data(), bucket.data(), i(s.H), i(s.Tq),
                                       i(s.Tk));
  }
};

}  // namespace

std::vector<Case> relative_bias_cases(const std::vector<int>& threads, bool with_loop) {
  std::vector<Case> cases;
  for (const RelativeBiasShape& s : kRelativeBiasShapes) {
    auto p = std::make_shared<RelativeBiasProblem>(s);
    const double bytes = p->bytes();
    auto add = [&](const char* op, Impl impl, int t, std::function<void()> run) {
      cases.push_back({op, s.tag, s.describe(), impl, t, bytes, std::move(run), ""});
    };
    if (with_loop) {
      add("relative_bias_forward", Impl::loop, 1, [p] { p->loop_forward(); });
      add("relative_bias_backward", Impl::loop, 1, [p] { p->loop_backward(); });
    }
    for (int t : threads) {
      if (with_loop) {
        add("relative_bias_forward", Impl::loop_omp, t, [p] { p->loop_forward_omp(); });
      }
      add("relative_bias_forward", Impl::posemb, t, [p] { p->forward(); });
      add("relative_bias_backward", Impl::posemb, t, [p] { p->backward(); });
    }
  }
  return cases;
}

}  // namespace posemb::bench
