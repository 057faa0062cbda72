// Helpers shared by the layer tests: seeded random data, byte snapshots, and the temp-file
// exchange with the PyTorch oracles (POSEMB_ORACLE_PYTHON, scripts in tests/oracles/).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/positions.hpp"
#include "temp_dir.hpp"

namespace posemb::testing {

inline Matrix<float> random_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed,
                                   float scale = 1.0f) {
  Matrix<float> m(rows, cols);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  for (float& v : m.flat()) v = u(rng);
  return m;
}

inline Matrix<TokenId> random_tokens(std::size_t B, std::size_t T, std::size_t V,
                                     std::uint64_t seed) {
  Matrix<TokenId> m(B, T);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<TokenId> u(0, static_cast<TokenId>(V - 1));
  for (TokenId& v : m.flat()) v = u(rng);
  return m;
}

// Calls call, which must throw std::invalid_argument whose message holds needle.
template <class F>
void expect_invalid(const std::string& needle, F&& call) {
  try {
    call();
    ADD_FAILURE() << needle << ": passed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// Every byte of a view, row after row.
template <class T>
std::vector<unsigned char> bytes_of(MatrixView<const T> v) {
  std::vector<unsigned char> out;
  for (std::size_t r = 0; r < v.rows(); ++r) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.row(r).data());
    out.insert(out.end(), p, p + v.cols() * sizeof(T));
  }
  return out;
}
template <class T>
std::vector<unsigned char> bytes_of(MatrixView<T> v) {
  return bytes_of(MatrixView<const T>(v));
}
template <class T>
std::vector<unsigned char> bytes_of(const Matrix<T>& m) {
  return bytes_of(m.cview());
}

using test::TempDir;  // a scratch directory removed on destruction

template <class T>
void write_raw(const std::string& path, const Matrix<T>& m) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(m.data()),
          static_cast<std::streamsize>(m.size() * sizeof(T)));
  if (!f) throw std::runtime_error("cannot write " + path);
}

template <class T>
Matrix<T> read_raw(const std::string& path, std::size_t rows, std::size_t cols) {
  Matrix<T> m(rows, cols);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(m.data()), static_cast<std::streamsize>(m.size() * sizeof(T)));
  if (!f || f.gcount() != static_cast<std::streamsize>(m.size() * sizeof(T))) {
    throw std::runtime_error("cannot read " + std::to_string(rows * cols) + " elements from " +
                             path);
  }
  return m;
}

// Runs `POSEMB_ORACLE_PYTHON tests/oracles/<script> args`; fails the test on a non-zero exit.
inline void run_oracle(const std::string& script, const std::string& args) {
  const std::string cmd = std::string(POSEMB_ORACLE_PYTHON) + " " + POSEMB_TESTS_DIR + "/oracles/" +
                          script + " " + args;
  const int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << "oracle failed: " << cmd;
}

}  // namespace posemb::testing
