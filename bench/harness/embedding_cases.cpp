// The embedding cases (embedding_cases.hpp).
//
// Traffic model, the bytes an operation must move at the least: the forward writes its output
// once and reads each distinct token row and each position row it uses once (2 bytes per
// element from 16-bit tables); the backward reads dout once and reads and writes each distinct
// gradient row it touches once. Cache reuse (a position row shared by the batch rows) is thereby
// already subtracted.
#include "harness/embedding_cases.hpp"

#include <memory>
#include <random>
#include <set>

#include "harness/relative_bias_cases.hpp"
#include "harness/rope_cases.hpp"
#include "peers/llmc_encoder.hpp"
#include "posemb/posemb.hpp"

namespace posemb::bench {

std::string Shape::describe() const {
  return "B=" + std::to_string(B) + " T=" + std::to_string(T) + " C=" + std::to_string(C) +
         " V=" + std::to_string(V);
}

const char* impl_name(Impl impl) {
  switch (impl) {
    case Impl::posemb:
      return "posemb";
    case Impl::llmc:
      return "llm.c";
    case Impl::llmc_omp:
      return "llm.c omp";
    case Impl::copy:
      return "copy";
    case Impl::loop:
      return "loop";
    case Impl::loop_omp:
      return "loop omp";
    case Impl::machine:
      return "machine";
  }
  return "?";
}

Variant Case::variant() const {
  return {name() + " " + impl_name(impl) + (simd.empty() ? "" : " " + simd) + " " +
              std::to_string(threads) + "t",
          threads, run, impl == Impl::llmc_omp || impl == Impl::loop_omp, simd};
}

std::vector<Case> for_targets(std::vector<Case> cases, const std::vector<std::string>& targets) {
  if (targets.empty()) return cases;
  std::vector<Case> out;
  for (Case& c : cases) {
    if (c.impl != Impl::posemb) {
      out.push_back(std::move(c));
      continue;
    }
    for (const std::string& t : targets) {
      out.push_back(c);
      out.back().simd = t;
    }
  }
  return out;
}

namespace {

// GPT-2 style N(0, 0.02) tables (and their bfloat16 / float16 roundings), uniformly random
// tokens, contiguous positions 0..T-1.
struct Problem {
  Shape s;
  Matrix<float> wte, wpe, out, dout, dwte, dwpe, x;  // x: activations the positions are added to
  Matrix<bfloat16> wte_bf, wpe_bf;
  Matrix<float16> wte_h, wpe_h;
  Matrix<TokenId> tokens;
  std::size_t distinct_tokens = 0;
  std::vector<const float*> token_rows;  // wte's row of every token, in the forward's (t, b) order

  explicit Problem(const Shape& sh)
      : s(sh),
        wte(sh.V, sh.C),
        wpe(sh.T, sh.C),
        out(sh.B * sh.T, sh.C),
        dout(sh.B * sh.T, sh.C),
        dwte(sh.V, sh.C),
        dwpe(sh.T, sh.C),
        x(sh.B * sh.T, sh.C),
        wte_bf(sh.V, sh.C),
        wpe_bf(sh.T, sh.C),
        wte_h(sh.V, sh.C),
        wpe_h(sh.T, sh.C),
        tokens(sh.B, sh.T) {
    initialize_table(wte.view(), {InitKind::normal, 0.02, 1});
    initialize_table(wpe.view(), {InitKind::normal, 0.01, 2});
    initialize_table(dout.view(), {InitKind::normal, 1.0, 3});
    initialize_table(x.view(), {InitKind::normal, 1.0, 5});
    for (std::size_t i = 0; i < wte.size(); ++i) {
      wte_bf.data()[i] = bfloat16(wte.data()[i]);
      wte_h.data()[i] = float16(wte.data()[i]);
    }
    for (std::size_t i = 0; i < wpe.size(); ++i) {
      wpe_bf.data()[i] = bfloat16(wpe.data()[i]);
      wpe_h.data()[i] = float16(wpe.data()[i]);
    }
    std::mt19937_64 rng(4);
    std::uniform_int_distribution<TokenId> u(0, static_cast<TokenId>(sh.V - 1));
    for (auto& t : tokens.flat()) t = u(rng);
    distinct_tokens = std::set<TokenId>(tokens.flat().begin(), tokens.flat().end()).size();
    for (std::size_t t = 0; t < sh.T; ++t) {
      for (std::size_t b = 0; b < sh.B; ++b) {
        token_rows.push_back(wte.data() + static_cast<std::size_t>(tokens(b, t)) * sh.C);
      }
    }
  }

  double rows(std::size_t n, std::size_t element_bytes) const {
    return static_cast<double>(n * s.C * element_bytes);
  }
  double forward_bytes(std::size_t table_element_bytes) const {
    return rows(s.B * s.T, 4) + rows(distinct_tokens + s.T, table_element_bytes);
  }
  double backward_bytes() const { return rows(s.B * s.T, 4) + 2 * rows(distinct_tokens + s.T, 4); }
  // The position-only add reads and writes x and reads the T position rows; its backward reads
  // dx and reads and writes the T gradient rows.
  double add_forward_bytes() const { return 2 * rows(s.B * s.T, 4) + rows(s.T, 4); }
  double add_backward_bytes() const { return rows(s.B * s.T, 4) + 2 * rows(s.T, 4); }

  void read_token_rows() {
    volatile float sink = gather_rows(token_rows.data(), token_rows.size(), s.C);
    (void)sink;
  }
  void forward() { embed_forward(out.view(), tokens, PositionSource::contiguous(), wte, wpe); }
  void forward_bf16() {
    embed_forward(out.view(), tokens, PositionSource::contiguous(), wte_bf, wpe_bf);
  }
  void forward_f16() {
    embed_forward(out.view(), tokens, PositionSource::contiguous(), wte_h, wpe_h);
  }
  void backward() {
    embed_backward(dwte.view(), dwpe.view(), dout, tokens, PositionSource::contiguous());
  }
  void add_forward() {
    add_positions_forward(x.view(), s.B, s.T, PositionSource::contiguous(), wpe);
  }
  void add_backward() {
    add_positions_backward(dwpe.view(), dout, s.B, s.T, PositionSource::contiguous());
  }
  int i(std::size_t v) const { return static_cast<int>(v); }
  void llmc_forward() {
    posemb_llmc_encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), i(s.B), i(s.T),
                                i(s.C));
  }
  void llmc_forward_omp() {
    posemb_llmc_encoder_forward_omp(out.data(), tokens.data(), wte.data(), wpe.data(), i(s.B),
                                    i(s.T), i(s.C));
  }
  void llmc_backward() {
    posemb_llmc_encoder_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), i(s.B),
                                 i(s.T), i(s.C));
  }
  void llmc_add_forward() {
    posemb_llmc_add_positions_forward(x.data(), wpe.data(), i(s.B), i(s.T), i(s.C));
  }
  void llmc_add_forward_omp() {
    posemb_llmc_add_positions_forward_omp(x.data(), wpe.data(), i(s.B), i(s.T), i(s.C));
  }
  void llmc_add_backward() {
    posemb_llmc_add_positions_backward(dwpe.data(), dout.data(), i(s.B), i(s.T), i(s.C));
  }
};

}  // namespace

std::vector<Case> embedding_cases(const std::vector<int>& threads, bool with_llmc) {
  std::vector<Case> cases;
  for (int t : threads) {
    double bytes = 0;
    Variant v = copy_variant(t, bytes);
    cases.push_back({"copy", "", "2 x 256 MiB", Impl::copy, t, bytes, v.run, ""});
  }
  for (const Shape& s : {kGpt2Shape, kSmallShape}) {
    auto p = std::make_shared<Problem>(s);
    const double fwd = p->forward_bytes(4), bwd = p->backward_bytes();
    const double afwd = p->add_forward_bytes(), abwd = p->add_backward_bytes();
    auto add = [&](const char* op, Impl impl, int t, double bytes, std::function<void()> run) {
      cases.push_back({op, s.tag, s.describe(), impl, t, bytes, std::move(run), ""});
    };
    if (with_llmc) {
      add("embed_forward", Impl::llmc, 1, fwd, [p] { p->llmc_forward(); });
      add("embed_backward", Impl::llmc, 1, bwd, [p] { p->llmc_backward(); });
      add("embed_forward_backward", Impl::llmc, 1, fwd + bwd, [p] {
        p->llmc_forward();
        p->llmc_backward();
      });
      add("add_positions_forward", Impl::llmc, 1, afwd, [p] { p->llmc_add_forward(); });
      add("add_positions_backward", Impl::llmc, 1, abwd, [p] { p->llmc_add_backward(); });
    }
    for (int t : threads) {
      // The forward's token rows alone (the distinct rows' bytes), on a table larger than the
      // caches: what reading them costs this machine, beside the copy.
      if (s.V * s.C * sizeof(float) > (std::size_t{64} << 20)) {
        add("read_token_rows", Impl::machine, t, p->rows(p->distinct_tokens, 4),
            [p] { p->read_token_rows(); });
      }
      if (with_llmc) add("embed_forward", Impl::llmc_omp, t, fwd, [p] { p->llmc_forward_omp(); });
      add("embed_forward", Impl::posemb, t, fwd, [p] { p->forward(); });
      add("embed_backward", Impl::posemb, t, bwd, [p] { p->backward(); });
      add("embed_forward_backward", Impl::posemb, t, fwd + bwd, [p] {
        p->forward();
        p->backward();
      });
      add("embed_forward_bf16", Impl::posemb, t, p->forward_bytes(2), [p] { p->forward_bf16(); });
      add("embed_forward_f16", Impl::posemb, t, p->forward_bytes(2), [p] { p->forward_f16(); });
      if (with_llmc) {
        add("add_positions_forward", Impl::llmc_omp, t, afwd, [p] { p->llmc_add_forward_omp(); });
      }
      add("add_positions_forward", Impl::posemb, t, afwd, [p] { p->add_forward(); });
      add("add_positions_backward", Impl::posemb, t, abwd, [p] { p->add_backward(); });
    }
  }
  std::vector<Case> rope = rope_cases(threads, with_llmc);
  cases.insert(cases.end(), rope.begin(), rope.end());
  std::vector<Case> relative_bias = relative_bias_cases(threads, with_llmc);
  cases.insert(cases.end(), relative_bias.begin(), relative_bias.end());
  return cases;
}

}  // namespace posemb::bench
