// tests/file_test_util.hpp: temporary directories, python oracle runs and bit comparisons for
// the file-format tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "posemb/tensor_file.hpp"
#include "temp_dir.hpp"

namespace posemb::test {

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What f throws as an E (its what()), or a text saying it threw none.
template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no exception of the expected type)";
}

// The names in dir that are posemb's temporaries (.posemb-*).
inline std::vector<std::string> temporaries(const TempDir& dir) {
  std::vector<std::string> v;
  for (const auto& e : dir.entries()) {
    if (e.rfind(".posemb-", 0) == 0) v.push_back(e);
  }
  return v;
}

inline void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Runs `script` with the oracle python (numpy, torch) in dir; returns its exit status.
inline int run_python(const TempDir& dir, const std::string& script) {
  const std::string py = dir.file("oracle.py");
  write_all(py, script);
  const std::string cmd = std::string(POSEMB_ORACLE_PYTHON) + " " + py + " " + dir.path().string();
  return std::system(cmd.c_str());
}

// Deterministic random values, including negative, tiny and large ones.
template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double scale = (i % 7 == 0) ? 1e-30 : (i % 11 == 0 ? 1e20 : 0.02);
    v[i] = static_cast<T>(normal(rng) * scale);
  }
  return v;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The elements of t as a vector of T (T's size must be the dtype's).
template <class T>
std::vector<T> values_of(const Tensor& t) {
  std::vector<T> v(t.bytes().size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), t.bytes().data(), v.size() * sizeof(T));
  return v;
}

// A tensor of dtype_of<T> holding random_values<T> (T float or double).
template <class T>
Tensor random_tensor(const std::string& name, std::vector<std::uint64_t> shape,
                     std::uint64_t seed) {
  std::uint64_t n = 1;
  for (auto d : shape) n *= d;
  const std::vector<T> v = random_values<T>(n, seed);
  return Tensor::from_bytes(name, dtype_of<T>, std::move(shape),
                            std::span<const std::byte>(reinterpret_cast<const std::byte*>(v.data()),
                                                       v.size() * sizeof(T)));
}

// A tensor of dtype_of<T> holding values (any TensorElement T).
template <class T>
Tensor tensor_of(const std::string& name, std::vector<std::uint64_t> shape,
                 const std::vector<T>& values) {
  static_assert(!std::is_same_v<T, bool>, "use std::uint8_t bytes and DType::BOOL");
  return Tensor::from_bytes(
      name, dtype_of<T>, std::move(shape),
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(values.data()),
                                 values.size() * sizeof(T)));
}

}  // namespace posemb::test
