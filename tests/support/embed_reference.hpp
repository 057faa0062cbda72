// The plain scalar reference for the embedding kernels: the obvious single-threaded triple
// loops, with auto-vectorization switched off (GCC) so that they are scalar. The tests compare
// the fast kernels with them bit for bit; the benchmarks use them as the baseline.
//
// Positions are given resolved, (B, T) row-major, -1 for "no position" (pads).
#pragma once

#include <cstddef>
#include <cstdint>

#include "posemb/matrix_view.hpp"
#include "posemb/positions.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#define POSEMB_REFERENCE_SCALAR __attribute__((noinline, optimize("no-tree-vectorize")))
#else
#define POSEMB_REFERENCE_SCALAR __attribute__((noinline))
#endif

namespace posemb::reference {

// out[b*T+t, c] = wte[tokens[b,t], c] + wpe[pos[b,t], c]   (pads: wte only). Written over.
POSEMB_REFERENCE_SCALAR inline void embed_forward(MatrixView<float> out,             // (B*T, C)
                                                  MatrixView<const TokenId> tokens,  // (B, T)
                                                  const std::int64_t* pos,           // (B, T)
                                                  MatrixView<const float> wte,       // (V, C)
                                                  MatrixView<const float> wpe) {     // (maxT, C)
  const std::size_t B = tokens.rows(), T = tokens.cols(), C = out.cols();
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      const std::int64_t p = pos[b * T + t];
      const float* e = &wte(static_cast<std::size_t>(tokens(b, t)), 0);
      float* o = &out(b * T + t, 0);
      for (std::size_t c = 0; c < C; ++c) {
        o[c] = p >= 0 ? e[c] + wpe(static_cast<std::size_t>(p), c) : e[c];
      }
    }
  }
}

// dwte[tokens[b,t], c] += dout[b*T+t, c]; dwpe[pos[b,t], c] += dout[b*T+t, c]: added into, in
// ascending (b, t) order (the order the fast backward reproduces).
POSEMB_REFERENCE_SCALAR inline void embed_backward(MatrixView<float> dwte,            // (V, C)
                                                   MatrixView<float> dwpe,            // (maxT, C)
                                                   MatrixView<const float> dout,      // (B*T, C)
                                                   MatrixView<const TokenId> tokens,  // (B, T)
                                                   const std::int64_t* pos) {         // (B, T)
  const std::size_t B = tokens.rows(), T = tokens.cols(), C = dout.cols();
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < T; ++t) {
      const std::int64_t p = pos[b * T + t];
      float* dw = &dwte(static_cast<std::size_t>(tokens(b, t)), 0);
      const float* d = &dout(b * T + t, 0);
      for (std::size_t c = 0; c < C; ++c) {
        dw[c] += d[c];
        if (p >= 0) dwpe(static_cast<std::size_t>(p), c) += d[c];
      }
    }
  }
}

// x[n, c] += wpe[pos[n], c] (position only; pads unchanged).
POSEMB_REFERENCE_SCALAR inline void add_positions_forward(MatrixView<float> x,      // (B*T, C)
                                                          const std::int64_t* pos,  // (B*T)
                                                          MatrixView<const float> wpe) {
  for (std::size_t n = 0; n < x.rows(); ++n) {
    if (pos[n] < 0) continue;
    for (std::size_t c = 0; c < x.cols(); ++c) x(n, c) += wpe(static_cast<std::size_t>(pos[n]), c);
  }
}

// dwpe[pos[n], c] += dx[n, c], ascending n.
POSEMB_REFERENCE_SCALAR inline void add_positions_backward(MatrixView<float> dwpe,  // (maxT, C)
                                                           MatrixView<const float> dx,
                                                           const std::int64_t* pos) {
  for (std::size_t n = 0; n < dx.rows(); ++n) {
    if (pos[n] < 0) continue;
    for (std::size_t c = 0; c < dx.cols(); ++c)
      dwpe(static_cast<std::size_t>(pos[n]), c) += dx(n, c);
  }
}

}  // namespace posemb::reference
