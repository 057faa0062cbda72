// A minimal posemb program: look up positions in a learned table, handle a sequence that does
// not fit, and compare with the sinusoidal encoding. Build: see README; run:
//   ./build/examples/posemb_example_lookup
#include <cstdio>

#include <posemb/posemb.hpp>

int main() {
  // A position table of 16 positions (max_seq_len) by 4 features (embed_dim). In a real model
  // it is a trained parameter; here row p holds p in every column so the lookup is easy to see.
  posemb::Matrix<float> table(16, 4);  // (max_seq_len, embed_dim)
  for (std::size_t p = 0; p < table.rows(); ++p) {
    for (float& v : table.row(p)) v = static_cast<float>(p);
  }

  // The core operation: the first 5 rows, as a read-only view into the table (no copy).
  posemb::MatrixView<const float> pe = posemb::learned_positional_embedding(5, table);
  std::printf("first 5 positions: shape (%zu, %zu), row 4 starts with %.1f\n", pe.rows(), pe.cols(),
              pe(4, 0));

  // Cached decoding: the next token is at position 5, so look up 1 row starting at 5.
  auto next = posemb::learned_positional_embedding(1, table, 5);
  std::printf("position 5: %.1f\n", next(0, 0));

  // A sequence longer than the table has no learned rows: a catchable error with the numbers.
  try {
    (void)posemb::learned_positional_embedding(20, table);
  } catch (const posemb::SequenceTooLong& e) {
    std::printf("seq_len %zu does not fit max_seq_len %zu:\n  %s\n", e.seq_len(), e.max_seq_len(),
                e.what());
  }

  // The sinusoidal encoding is a formula: it has a value at any position, 20 included.
  posemb::Matrix<float> sin = posemb::sinusoidal_positional_encoding(20, 4);  // (20, 4)
  std::printf("sinusoidal position 19: [%.4f, %.4f, %.4f, %.4f]\n", sin(19, 0), sin(19, 1),
              sin(19, 2), sin(19, 3));
  return 0;
}
