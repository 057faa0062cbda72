// The plain scalar reference of the rotary embedding, written from posemb/rope.hpp's
// description: theta_i = base^(-2i/R) formed in long double, the angle p * theta_i in double
// below 2^24 radians (its cos and sin by sincos_reference.hpp's scalar copy of posemb's kernel)
// and in long double from there, cos and sin rounded to double then float, then
// a' = a c - b s, b' = a s + b c (the inverse: a' = a c + b s, b' = b c - a s) on the pairs of
// the layout. The same formulas as the library, so the two agree bit for bit.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "posemb/matrix_view.hpp"
#include "posemb/rope.hpp"
#include "sincos_reference.hpp"

namespace posemb::reference {

struct RopeGeometry {
  std::size_t heads, head_dim, rotary_dim;
  RopeLayout layout;
  double base = 10000.0;
};

inline void rope_angles(std::size_t p, const RopeGeometry& g, std::vector<float>& c,
                        std::vector<float>& s) {
  const std::size_t pairs = g.rotary_dim / 2;
  c.assign(pairs, 0.0f);
  s.assign(pairs, 0.0f);
  for (std::size_t i = 0; i < pairs; ++i) {
    const long double theta =
        std::pow(static_cast<long double>(g.base),
                 -(static_cast<long double>(2 * i) / static_cast<long double>(g.rotary_dim)));
    double sd, cd;
    angle_sin_cos(p, theta, sd, cd);
    c[i] = static_cast<float>(cd);
    s[i] = static_cast<float>(sd);
  }
}

// Column of the first and second element of pair i of head h.
inline std::size_t rope_first(const RopeGeometry& g, std::size_t h, std::size_t i) {
  return h * g.head_dim + (g.layout == RopeLayout::interleaved ? 2 * i : i);
}
inline std::size_t rope_second(const RopeGeometry& g, std::size_t h, std::size_t i) {
  return rope_first(g, h, i) + (g.layout == RopeLayout::interleaved ? 1 : g.rotary_dim / 2);
}

// Rotates row n of x by position pos[n] (pos[n] < 0: untouched), in place.
inline void rope(MatrixView<float> x, const std::vector<std::int64_t>& pos, const RopeGeometry& g,
                 bool inverse) {
  std::vector<float> c, s;
  for (std::size_t n = 0; n < x.rows(); ++n) {
    if (pos[n] < 0) continue;
    rope_angles(static_cast<std::size_t>(pos[n]), g, c, s);
    for (std::size_t h = 0; h < g.heads; ++h) {
      for (std::size_t i = 0; i < g.rotary_dim / 2; ++i) {
        float& ra = x(n, rope_first(g, h, i));
        float& rb = x(n, rope_second(g, h, i));
        const float a = ra, b = rb;
        if (inverse) {
          ra = a * c[i] + b * s[i];
          rb = b * c[i] - a * s[i];
        } else {
          ra = a * c[i] - b * s[i];
          rb = a * s[i] + b * c[i];
        }
      }
    }
  }
}

}  // namespace posemb::reference
