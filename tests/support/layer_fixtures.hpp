// A batch for each of the four position sources, with the data the source references.
#pragma once

#include <cstdint>
#include <memory>
#include <random>

#include "posemb/posemb.hpp"
#include "test_support.hpp"

namespace posemb::testing {

enum class SourceKind { contiguous, explicit_ids, left_padding, right_padding, packed };
inline constexpr SourceKind kAllSources[] = {SourceKind::contiguous, SourceKind::explicit_ids,
                                             SourceKind::left_padding, SourceKind::right_padding,
                                             SourceKind::packed};

inline const char* source_name(SourceKind k) {
  switch (k) {
    case SourceKind::contiguous:
      return "contiguous";
    case SourceKind::explicit_ids:
      return "explicit";
    case SourceKind::left_padding:
      return "left_padding";
    case SourceKind::right_padding:
      return "right_padding";
    case SourceKind::packed:
      return "packed";
  }
  return "?";
}

// tokens (B, T) in [0, V); positions fit a table of max_seq_len rows (contiguous uses start =
// max_seq_len - T, so T <= max_seq_len). Explicit ids repeat positions; padded rows have a
// random number of pads; packed uses token 0 as separator.
struct Batch {
  std::size_t B, T;
  SourceKind kind;
  Matrix<TokenId> tokens;
  Matrix<std::int64_t> ids;
  Matrix<std::uint8_t> mask;
  std::size_t start = 0;

  PositionSource source() const {
    switch (kind) {
      case SourceKind::contiguous:
        return PositionSource::contiguous(start);
      case SourceKind::explicit_ids:
        return PositionSource::explicit_ids(ids);
      case SourceKind::left_padding:
      case SourceKind::right_padding:
        return PositionSource::padding_mask(mask);
      case SourceKind::packed:
        return PositionSource::packed(tokens, 0);
    }
    return PositionSource::contiguous();
  }
};

inline Batch make_batch(SourceKind kind, std::size_t B, std::size_t T, std::size_t V,
                        std::size_t max_seq_len, std::uint64_t seed) {
  Batch b{B, T, kind, random_tokens(B, T, V, seed), {}, {}, 0};
  std::mt19937_64 rng(seed * 7 + 1);
  if (kind == SourceKind::contiguous) b.start = max_seq_len - T;
  if (kind == SourceKind::explicit_ids) {
    b.ids = Matrix<std::int64_t>(B, T);
    std::uniform_int_distribution<std::int64_t> u(0, static_cast<std::int64_t>(max_seq_len) - 1);
    for (auto& v : b.ids.flat()) v = u(rng);
  }
  if (kind == SourceKind::left_padding || kind == SourceKind::right_padding) {
    b.mask = Matrix<std::uint8_t>(B, T);
    std::uniform_int_distribution<std::size_t> u(0, T - 1);
    for (std::size_t r = 0; r < B; ++r) {
      const std::size_t pads = r == 0 ? 0 : u(rng);
      for (std::size_t t = 0; t < T; ++t) {
        const bool pad = kind == SourceKind::left_padding ? t < pads : t >= T - pads;
        b.mask(r, t) = pad ? 0 : 1;
      }
    }
  }
  if (kind == SourceKind::packed) {
    // about one separator in four
    std::uniform_int_distribution<int> u(0, 3);
    for (auto& v : b.tokens.flat()) {
      if (u(rng) == 0) v = 0;
    }
  }
  return b;
}

}  // namespace posemb::testing
