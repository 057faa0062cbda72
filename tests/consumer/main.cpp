// Written only from the public contract: compiles and runs against the installed package.
#include <cstdio>
#include <posemb/posemb.hpp>
#include <stdexcept>

// The version macros are usable in the preprocessor (a regression: they once read
// "0 " with a space inside the number's token and failed here).
#if !defined(POSEMB_VERSION_MAJOR) || POSEMB_VERSION_MAJOR < 0 || POSEMB_VERSION_MINOR < 0 || \
    POSEMB_VERSION_PATCH < 0
#error "posemb version macros are missing or not numbers"
#endif

int main() {
  posemb::Matrix<float> table(1024, 16);  // (max_seq_len, embed_dim)
  table(5, 3) = 2.5f;
  posemb::MatrixView<const float> pe = posemb::learned_positional_embedding(10, table);
  if (pe.rows() != 10 || pe.cols() != 16 || pe.data() != table.data()) return 1;
  posemb::MatrixView<const float> next = posemb::learned_positional_embedding(1, table, 5);
  if (next(0, 3) != 2.5f) return 2;
  posemb::Matrix<double> dtable(8, 4);
  posemb::MatrixView<double> dv = dtable.view();
  if (posemb::learned_positional_embedding(8, dv).rows() != 8) return 3;
  try {
    (void)posemb::learned_positional_embedding(1030, table);
    return 4;
  } catch (const std::out_of_range& e) {
    const auto* s = dynamic_cast<const posemb::SequenceTooLong*>(&e);
    if (s == nullptr || s->seq_len() != 1030 || s->max_seq_len() != 1024 || s->start() != 0) {
      return 5;
    }
  }
  posemb::Matrix<float> sin = posemb::sinusoidal_positional_encoding(4, 8, 100);
  if (sin.rows() != 4 || sin.cols() != 8) return 6;
  posemb::Matrix<float> copy(pe);
  // A SIMD kernel (links Google Highway's runtime dispatch through the package's dependencies).
  posemb::Matrix<posemb::TokenId> tokens(1, 2);
  tokens(0, 1) = 3;
  posemb::Matrix<float> wte(4, 16), out(2, 16);
  wte(3, 3) = 1.0f;
  posemb::embed_forward(out, tokens, posemb::PositionSource::contiguous(5), wte, table);
  if (out(1, 3) != 1.0f || out(0, 3) != 2.5f) return 7;
  std::printf("consumer ok: posemb %s, copy %zux%zu, SIMD target %s\n", posemb::version(),
              copy.rows(), copy.cols(), posemb::simd_target().c_str());
  return 0;
}
