// A minimal rotary position embedding program: rotate the queries and keys of a fused qkv
// buffer, check that attention scores depend only on the distance between two tokens, and undo
// the rotation with the backward. Build: see README; run:
//   ./build/examples/posemb_example_rotary
#include <cmath>
#include <cstdio>

#include <posemb/posemb.hpp>

int main() {
  // One sequence of T = 8 tokens, H = 2 heads of D = 4 columns: C = 8. The attention input is
  // one fused buffer qkv (T, 3C) holding [q | k | v] per token, as most models compute it.
  const std::size_t B = 1, T = 8, H = 2, D = 4, C = H * D;
  posemb::Matrix<float> qkv(B * T, 3 * C);
  // Every token gets the same query and key, so that only the rotation tells them apart.
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t c = 0; c < 2 * C; ++c) qkv(t, c) = 0.25f * static_cast<float>(c % 5 + 1);
  }

  // The rotation: head dimension D, the pairing of the checkpoint (HF Llama: half), base 10000.
  // The cos/sin cache is computed once for the positions the model will see and shared by
  // every layer; it grows only when told to (cache.reserve).
  const posemb::Rope rope(D, posemb::RopeLayout::half);
  const posemb::RopeCache cache(rope, 64);

  // q and k are column blocks of qkv, rotated in place; v (the last block) is not touched.
  posemb::MatrixView<float> q = qkv.view().subcols(0, C);
  posemb::MatrixView<float> k = qkv.view().subcols(C, C);
  const auto positions = posemb::PositionSource::contiguous();  // token t is at position t
  posemb::rope_forward(q, H, B, T, positions, cache);
  posemb::rope_forward(k, H, B, T, positions, cache);

  // Head 0's score between query m and key n depends on m - n only: (3, 1) equals (7, 5).
  const auto score = [&](std::size_t m, std::size_t n) {
    double s = 0.0;
    for (std::size_t c = 0; c < D; ++c) s += double(q(m, c)) * k(n, c);
    return s;
  };
  std::printf("score(3, 1) = %.6f, score(7, 5) = %.6f, score(3, 0) = %.6f\n", score(3, 1),
              score(7, 5), score(3, 0));
  if (std::fabs(score(3, 1) - score(7, 5)) > 1e-5) return 1;

  // The backward is the inverse rotation: applied to q, it gives back the original values.
  posemb::rope_backward(q, H, B, T, positions, cache);
  std::printf("q(5, 1) after forward and backward: %.6f (was %.6f)\n", q(5, 1), 0.25 * 2);
  return std::fabs(q(5, 1) - 0.5f) < 1e-6f ? 0 : 1;
}
